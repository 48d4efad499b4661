//! What each error really meant: per class of error the client answered on a commit or a
//! send (`client_answer` events), how many of those transactions the evidence found
//! committed, aborted, or could not tell ([`ClientAnswers`]).
//!
//! A transaction's fate comes from evidence only, never from the error itself:
//! - the history's own word: a commit confirmed (a later try, `txn_resolved` committed), a
//!   definitive abort (`txn_outcome` aborted, e.g. a failed send aborts a transaction that
//!   never asked to commit) or a resolution to aborted;
//! - else the read-back, across the attempts that carried the same numbers (an attempt and its
//!   resends, `resend_of`): each transaction is atomic and writes its numbers once, so the
//!   copies of those numbers read back count the attempts that applied. With `m` of them
//!   committed on the history's word and `k` of unknown outcome, `c` copies read:
//!   `c = m` (and `m >= 1`: e.g. the naive resend committed and its numbers were not
//!   duplicated) means none of the unknown ones applied (the read-back is complete, so had one
//!   applied its copy would be there); `c = m + k` means every one of them applied (the
//!   duplicate a naive resend makes after an ambiguous commit that had applied). Anything in
//!   between (two unknown, one applied) names no transaction, and counts that do not add up
//!   (another writer, a Pulsar fault the verdict reports on its own) prove nothing: unknown.
//!
//! The read-back is evidence only when it is complete, its ranges are listed in full (not
//! capped) and no sabotage touched the numbers.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::findings::Findings;
pub use super::model::{AnswerRow, ClientAnswers};
use super::model::{Context, NO_TXN};
use crate::history::{EventBody, Outcome, Ranges};

/// What the history says of one attempt.
#[derive(Debug, Clone)]
struct Known {
    /// The first attempt of the numbers it carried (itself when it is not a resend).
    root: u64,
    no_txn: bool,
    committed: bool,
    resolved_aborted: bool,
    last_told: Option<Outcome>,
}

impl Known {
    /// The history's own word on the attempt (None: it does not say).
    fn fate(&self) -> Option<Outcome> {
        if self.committed {
            Some(Outcome::Committed)
        } else if self.resolved_aborted {
            Some(Outcome::Aborted)
        } else if self.last_told == Some(Outcome::Aborted) && !self.no_txn {
            // Without a transaction an "aborted" attempt's sent messages stay: no evidence.
            Some(Outcome::Aborted)
        } else {
            None
        }
    }
}

/// Gathers, in the checker's one pass over the history, the failed answers and what the
/// history says of every attempt.
#[derive(Debug, Default)]
pub(super) struct Collector {
    client: Option<String>,
    attempts: HashMap<u64, Known>,
    /// The numbers of each root attempt (its resends carry the same).
    numbers: HashMap<u64, Ranges>,
    /// (op, class) -> the attempts that got it.
    answered: BTreeMap<(String, String), BTreeSet<u64>>,
}

impl Collector {
    pub(super) fn event(&mut self, body: &EventBody) {
        match body {
            EventBody::TxnOpened {
                attempt,
                txn,
                numbers,
                resend_of,
            } => {
                let root = match resend_of {
                    Some(p) => self.attempts.get(p).map_or(*p, |k| k.root),
                    None => *attempt,
                };
                self.numbers.entry(root).or_insert_with(|| numbers.clone());
                self.attempts.insert(
                    *attempt,
                    Known {
                        root,
                        no_txn: txn.most == NO_TXN,
                        committed: false,
                        resolved_aborted: false,
                        last_told: None,
                    },
                );
            }
            EventBody::TxnOutcome {
                attempt, outcome, ..
            } => {
                if let Some(k) = self.attempts.get_mut(attempt) {
                    k.last_told = Some(*outcome);
                    k.committed |= *outcome == Outcome::Committed;
                }
            }
            EventBody::TxnResolved {
                attempt, resolved, ..
            } => {
                if let Some(k) = self.attempts.get_mut(attempt) {
                    k.committed |= *resolved == Outcome::Committed;
                    k.resolved_aborted |= *resolved == Outcome::Aborted;
                }
            }
            EventBody::ClientAnswer {
                attempt,
                op,
                client,
                class,
                ..
            } => {
                self.client.get_or_insert_with(|| client.clone());
                self.answered
                    .entry((op.clone(), class.clone()))
                    .or_default()
                    .insert(*attempt);
            }
            _ => {}
        }
    }

    /// The table (None when the history holds no failed answer).
    pub(super) fn table(&self, findings: &Findings, ctx: &Context) -> Option<ClientAnswers> {
        if self.answered.is_empty() {
            return None;
        }
        let copies = Copies::new(findings, ctx);
        let mut families: HashMap<u64, Vec<&Known>> = HashMap::new();
        for k in self.attempts.values() {
            families.entry(k.root).or_default().push(k);
        }
        let mut memo: HashMap<u64, Option<Outcome>> = HashMap::new();
        let mut rows: Vec<AnswerRow> = self
            .answered
            .iter()
            .map(|((op, class), attempts)| {
                let mut row = AnswerRow {
                    op: op.clone(),
                    class: class.clone(),
                    transactions: attempts.len() as u64,
                    committed: 0,
                    aborted: 0,
                    unknown: 0,
                };
                for a in attempts {
                    let fate = *memo
                        .entry(*a)
                        .or_insert_with(|| self.fate(*a, &families, &copies));
                    match fate {
                        Some(Outcome::Committed) => row.committed += 1,
                        Some(Outcome::Aborted) => row.aborted += 1,
                        _ => row.unknown += 1,
                    }
                }
                row
            })
            .collect();
        rows.sort_by(|a, b| {
            b.transactions
                .cmp(&a.transactions)
                .then_with(|| a.op.cmp(&b.op))
                .then_with(|| a.class.cmp(&b.class))
        });
        Some(ClientAnswers {
            client: self.client.clone().unwrap_or_else(|| "own".into()),
            rows,
        })
    }

    /// What the evidence says became of `attempt` (module doc).
    fn fate(
        &self,
        attempt: u64,
        families: &HashMap<u64, Vec<&Known>>,
        copies: &Copies,
    ) -> Option<Outcome> {
        let k = self.attempts.get(&attempt)?;
        if let Some(f) = k.fate() {
            return Some(f);
        }
        let family = families.get(&k.root)?;
        let c = u64::from(copies.of(self.numbers.get(&k.root)?)?);
        let m = family
            .iter()
            .filter(|x| x.fate() == Some(Outcome::Committed))
            .count() as u64;
        let unknown = family.iter().filter(|x| x.fate().is_none()).count() as u64;
        if m >= 1 && c == m {
            Some(Outcome::Aborted)
        } else if unknown >= 1 && c >= m && c - m == unknown {
            Some(Outcome::Committed)
        } else {
            None
        }
    }
}

/// How many copies of a number the read-back found, when it is evidence at all.
struct Copies<'a> {
    findings: &'a Findings,
    ctx: &'a Context,
    usable: bool,
}

impl<'a> Copies<'a> {
    fn new(findings: &'a Findings, ctx: &'a Context) -> Copies<'a> {
        let missing_listed: u64 = findings.missing.iter().map(|s| s.len()).sum();
        let dup_listed: u64 = findings.duplicates.iter().map(|d| d.end - d.start).sum();
        Copies {
            findings,
            ctx,
            usable: ctx.readback_incomplete.is_none()
                && missing_listed == findings.missing_total
                && dup_listed == findings.duplicate_values,
        }
    }

    /// The copies read of every number of `ranges`, when they all arrived equally often
    /// (None: not the same for all, or the read-back is no evidence).
    fn of(&self, ranges: &Ranges) -> Option<u32> {
        if !self.usable {
            return None;
        }
        let mut all: Option<u32> = None;
        for &(s, e) in ranges.iter().filter(|(s, e)| e > s) {
            if e > self.findings.expected
                || self.ctx.sabotage_skip.range(s..e).next().is_some()
                || self.ctx.sabotage_duplicate.range(s..e).next().is_some()
            {
                return None;
            }
            let len = e - s;
            let overlap = |a: u64, b: u64| b.min(e).saturating_sub(a.max(s));
            let m = &self.findings.missing;
            let from = m.partition_point(|x| x.end <= s);
            let missing: u64 = m[from..]
                .iter()
                .take_while(|x| x.start < e)
                .map(|x| overlap(x.start, x.end))
                .sum();
            let d = &self.findings.duplicates;
            let from = d.partition_point(|x| x.end <= s);
            let dups: Vec<(u64, u32)> = d[from..]
                .iter()
                .take_while(|x| x.start < e)
                .map(|x| (overlap(x.start, x.end), x.copies))
                .collect();
            let duplicated: u64 = dups.iter().map(|(n, _)| n).sum();
            let here = if missing == len {
                0
            } else if missing == 0 && duplicated == 0 {
                1
            } else if duplicated == len && dups.iter().all(|(_, c)| *c == dups[0].1) {
                dups[0].1
            } else {
                return None;
            };
            if all.is_some_and(|a| a != here) {
                return None;
            }
            all = Some(here);
        }
        all
    }
}

#[cfg(test)]
mod tests;
