//! The entries an input subscription still holds after a transform run, explained: which
//! positions the cursor has not deleted (from `internalStats`), what each of them is (the
//! entry's own headers and numbers, from the admin API), and which of the harness's
//! transactions acknowledged its numbers (from the history). Pure: the runner gathers, this
//! judges.
//!
//! Kinds of held entry, and whose they are:
//! - every member acknowledged in one committed transaction, yet held: Pulsar's;
//! - its members acknowledged across two or more committed transactions (a batch split between
//!   transactions): the broker deletes such an entry only with batch-index acknowledgement on
//!   (`acknowledgmentAtBatchIndexLevelEnabled`): each commit hands the cursor its own partial
//!   ack set, which a cursor without batch-index deletion drops. Pulsar documents the setting
//!   as required to acknowledge batch messages in transactions, so with it off (Pulsar's
//!   runtime configuration says so) this is the configuration's documented behaviour; with it
//!   on, Pulsar's;
//! - a member no committed transaction acknowledged: the inputs were not all acknowledged;
//! - an entry of an aborted transaction, or a marker: the dispatcher acknowledges those itself
//!   when it reads them; held means no dispatcher read that far before the consumers closed,
//!   and nothing will be delivered from it: a note.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::history::{Outcome, TxnId};

/// A managed-ledger position (ledger, entry).
pub type Position = (u64, i64);

/// Held positions looked at, at most (the rest are counted).
pub const HELD_MAX: usize = 2000;

/// What became of the transaction that wrote a held entry, by the fill's own history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FillOutcome {
    Committed,
    Aborted,
    /// No transaction (a plain send), or none the fill's history names.
    Unknown,
}

/// One entry the subscription still held, as the admin API showed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldEntry {
    pub partition: String,
    pub position: Position,
    /// `X-Pulsar-marker-type`: a transaction marker, never delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker: Option<i64>,
    /// `X-Pulsar-txnid-most-bits` / `-least-bits`: the transaction that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn: Option<TxnId>,
    pub fill: FillOutcome,
    /// The numbers its messages carry; `None`: not readable (compressed, or the call failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numbers: Option<Vec<u64>>,
}

/// The held entries of the input subscription, and Pulsar's batch-index setting.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HeldEvidence {
    /// Held positions on every partition (all of them, also beyond [`HELD_MAX`]).
    pub total: u64,
    /// The first [`HELD_MAX`] of them, looked at.
    pub entries: Vec<HeldEntry>,
    /// Per partition: the cursor as `internalStats` gave it (mark-delete position, deleted
    /// ranges), quoted.
    pub cursors: Vec<String>,
    /// `acknowledgmentAtBatchIndexLevelEnabled` as the broker runs with it; `None`: not known.
    pub batch_index_ack: Option<bool>,
    /// The request that told it, and the answer.
    pub batch_index_ack_evidence: String,
}

/// The ranges `individuallyDeletedMessages` lists, `[(l:e..l:e],(...]]`: each deletes the
/// positions after its start up to and including its end.
pub fn parse_deleted_ranges(s: &str) -> Vec<(Position, Position)> {
    let mut out = Vec::new();
    for part in s.split('(').skip(1) {
        let Some((body, _)) = part.split_once(']') else {
            continue;
        };
        let Some((a, b)) = body.split_once("..") else {
            continue;
        };
        if let (Some(a), Some(b)) = (
            crate::stuck::parse_position(a),
            crate::stuck::parse_position(b),
        ) {
            out.push((a, b));
        }
    }
    out
}

/// The positions a cursor still holds: after `mark_delete`, up to `last_confirmed`, in the
/// ledgers listed (id, entries; the last confirmed entry bounds the open one), and not in a
/// deleted range; at most `cap` of them, with the count of all.
pub fn held_positions(
    mark_delete: Position,
    deleted: &[(Position, Position)],
    ledgers: &[(u64, u64)],
    last_confirmed: Position,
    cap: usize,
) -> (Vec<Position>, u64) {
    let mut ranges = deleted.to_vec();
    ranges.sort();
    let mut out = Vec::new();
    let mut total = 0u64;
    let mut r = 0usize;
    for &(ledger, entries) in ledgers {
        if ledger < mark_delete.0 || ledger > last_confirmed.0 {
            continue;
        }
        let last = if ledger == last_confirmed.0 {
            last_confirmed.1
        } else {
            entries as i64 - 1
        };
        let first = if ledger == mark_delete.0 {
            mark_delete.1 + 1
        } else {
            0
        };
        for e in first.max(0)..=last {
            let p = (ledger, e);
            while r < ranges.len() && ranges[r].1 < p {
                r += 1;
            }
            if r < ranges.len() && ranges[r].0 < p && p <= ranges[r].1 {
                continue;
            }
            total += 1;
            if out.len() < cap {
                out.push(p);
            }
        }
    }
    (out, total)
}

/// What one held entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeldKind {
    /// A marker, or an entry of an aborted transaction: never delivered.
    NeverDelivered,
    /// Its numbers are not known.
    Unreadable,
    /// A member no committed transaction of the transform acknowledged.
    NotAcknowledged(Vec<u64>),
    /// Every member acknowledged in this one committed transaction.
    Whole(TxnId),
    /// Its members acknowledged across these committed transactions.
    Split(Vec<TxnId>),
}

/// Which committed transactions of the transform took each number (an input is acknowledged
/// in the transaction that takes it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Acknowledgers {
    /// (first, end, attempt) of every `inputs_taken`.
    taken: Vec<(u64, u64, u64)>,
    /// attempt → its transaction and last definitive outcome.
    attempts: BTreeMap<u64, (TxnId, Outcome)>,
}

impl Acknowledgers {
    pub fn taken(&mut self, attempt: u64, inputs: &[(u64, u64)]) {
        self.taken
            .extend(inputs.iter().map(|&(a, b)| (a, b, attempt)));
    }

    pub fn ended(&mut self, attempt: u64, txn: TxnId, outcome: Outcome) {
        let e = self.attempts.entry(attempt).or_insert((txn, outcome));
        if outcome != Outcome::Ambiguous || e.1 == Outcome::Ambiguous {
            *e = (txn, outcome);
        }
    }

    /// For each of `numbers`: the committed transactions that took it.
    fn committed_takers(&self, numbers: &BTreeSet<u64>) -> BTreeMap<u64, BTreeSet<TxnId>> {
        let mut out: BTreeMap<u64, BTreeSet<TxnId>> = BTreeMap::new();
        for &(a, b, attempt) in &self.taken {
            let Some((txn, Outcome::Committed)) = self.attempts.get(&attempt) else {
                continue;
            };
            for &n in numbers.range(a..b) {
                out.entry(n).or_default().insert(*txn);
            }
        }
        out
    }

    /// The last transaction that took `n`, and how it ended (`None`: never taken, or its
    /// attempt has no outcome).
    fn last_taker(&self, n: u64) -> Option<(u64, TxnId, Outcome)> {
        self.taken
            .iter()
            .rev()
            .find(|&&(a, b, _)| (a..b).contains(&n))
            .and_then(|&(_, _, attempt)| {
                self.attempts
                    .get(&attempt)
                    .map(|&(txn, outcome)| (attempt, txn, outcome))
            })
    }

    /// For a transform that did not finish: what the held entries hold, in one note (how many
    /// hold inputs no committed transaction acknowledged, and for the first such entry the
    /// last transaction that took its inputs and how it ended). `None` without entries.
    pub fn unfinished_note(&self, held: &HeldEvidence) -> Option<String> {
        let kinds = self.classify(&held.entries);
        let open: Vec<(&HeldEntry, &Vec<u64>)> = held
            .entries
            .iter()
            .zip(&kinds)
            .filter_map(|(e, k)| match k {
                HeldKind::NotAcknowledged(n) => Some((e, n)),
                _ => None,
            })
            .collect();
        let (first, numbers) = open.first()?;
        let last = match self.last_taker(numbers[0]) {
            Some((attempt, txn, outcome)) => format!(
                "number {} was last taken by attempt {attempt} in transaction {txn}, which ended {}",
                numbers[0],
                match outcome {
                    Outcome::Committed => "committed",
                    Outcome::Aborted => "aborted",
                    Outcome::Ambiguous => "with an outcome the client could not learn",
                }
            ),
            None => format!("number {} was never taken by the transform", numbers[0]),
        };
        Some(format!(
            "{} of the {} held entr{} looked at ({} held in all) hold inputs no committed transaction acknowledged, e.g. {}: {last}; the subscription kept them and the transform's consumers did not take them again before it stopped",
            open.len(),
            held.entries.len(),
            if held.entries.len() == 1 { "y" } else { "ies" },
            held.total,
            entry_words(first)
        ))
    }

    /// What each held entry is.
    pub fn classify(&self, entries: &[HeldEntry]) -> Vec<HeldKind> {
        let wanted: BTreeSet<u64> = entries
            .iter()
            .filter_map(|e| e.numbers.as_ref())
            .flatten()
            .copied()
            .collect();
        let takers = self.committed_takers(&wanted);
        entries
            .iter()
            .map(|e| {
                if e.marker.is_some() || e.fill == FillOutcome::Aborted {
                    return HeldKind::NeverDelivered;
                }
                let Some(numbers) = e.numbers.as_ref().filter(|n| !n.is_empty()) else {
                    return HeldKind::Unreadable;
                };
                let missing: Vec<u64> = numbers
                    .iter()
                    .filter(|n| !takers.contains_key(n))
                    .copied()
                    .collect();
                if !missing.is_empty() {
                    return HeldKind::NotAcknowledged(missing);
                }
                // One transaction per member: the first that took it (a member taken again
                // after a redelivery is acknowledged by both; any one suffices).
                let txns: BTreeSet<TxnId> = numbers
                    .iter()
                    .filter_map(|n| takers.get(n).and_then(|t| t.iter().next()))
                    .copied()
                    .collect();
                let common = numbers.iter().fold(None::<BTreeSet<TxnId>>, |acc, n| {
                    let t = &takers[n];
                    Some(match acc {
                        None => t.clone(),
                        Some(a) => a.intersection(t).copied().collect(),
                    })
                });
                match common.and_then(|c| c.into_iter().next()) {
                    Some(t) => HeldKind::Whole(t),
                    None => HeldKind::Split(txns.into_iter().collect()),
                }
            })
            .collect()
    }
}

/// "(12:24) numbers 130–139", the way an entry is named in a finding.
pub fn entry_words(e: &HeldEntry) -> String {
    let nums = match e.numbers.as_deref() {
        Some([one]) => format!("number {one}"),
        Some([first, .., last]) => format!("numbers {first}..={last}"),
        _ => "numbers unknown".into(),
    };
    let by = match e.txn {
        Some(t) => format!(", written by transaction {t}"),
        None => String::new(),
    };
    format!("{}:{} ({nums}{by})", e.position.0, e.position.1)
}

/// The held entries judged, in sentences: findings (violations) and notes (nothing when no
/// entry was looked at).
pub fn judge_held(
    held: &HeldEvidence,
    kinds: &[HeldKind],
    findings: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    if held.entries.is_empty() {
        return;
    }
    let of = |pick: fn(&HeldKind) -> bool| -> Vec<(&HeldEntry, &HeldKind)> {
        held.entries
            .iter()
            .zip(kinds)
            .filter(|(_, k)| pick(k))
            .collect()
    };
    let looked = format!(
        "{} held entr{} looked at{}",
        held.entries.len(),
        if held.entries.len() == 1 { "y" } else { "ies" },
        if held.total > held.entries.len() as u64 {
            format!(" (of {})", held.total)
        } else {
            String::new()
        }
    );
    let cursors = held.cursors.join("; ");
    let never = of(|k| matches!(k, HeldKind::NeverDelivered));
    if !never.is_empty() {
        notes.push(format!(
            "{} of the {looked} are markers or entries of aborted transactions ({}): the dispatcher acknowledges those itself when it reads them, none is delivered; held means no dispatcher read that far before the consumers closed",
            never.len(),
            entry_words(never[0].0)
        ));
    }
    let split = of(|k| matches!(k, HeldKind::Split(_)));
    if let Some((e, HeldKind::Split(txns))) = split.first() {
        let example = format!(
            "{}, acknowledged by committed transactions {}",
            entry_words(e),
            txns.iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(" and ")
        );
        let setting = &held.batch_index_ack_evidence;
        match held.batch_index_ack {
            Some(false) => findings.push(format!(
                "{} of the {looked} are batches whose members were acknowledged across two or more committed transactions, e.g. {example}; each commit hands the cursor its own partial ack set, which a broker without batch-index acknowledgement drops, so the entry is never deleted and its inputs come again to the next consumer. The broker runs with acknowledgmentAtBatchIndexLevelEnabled=false ({setting}), which Pulsar documents as required to acknowledge batch messages in transactions (https://pulsar.apache.org/docs/txn-advanced-features): this is that configuration's documented behaviour, not a Pulsar bug; `cluster.broker_config: {{ acknowledgmentAtBatchIndexLevelEnabled: true }}` runs with it on. Cursor: {cursors}",
                split.len()
            )),
            on => findings.push(format!(
                "{} of the {looked} are batches whose members were all acknowledged in committed transactions, split across two or more of them, e.g. {example}, and the cursor never deleted them although {} ({setting}). Cursor: {cursors}",
                split.len(),
                if on == Some(true) {
                    "batch-index acknowledgement is on (acknowledgmentAtBatchIndexLevelEnabled=true)"
                } else {
                    "the broker's acknowledgmentAtBatchIndexLevelEnabled is not known"
                }
            )),
        }
    }
    let whole = of(|k| matches!(k, HeldKind::Whole(_)));
    if let Some((e, HeldKind::Whole(t))) = whole.first() {
        findings.push(format!(
            "{} of the {looked} had every member acknowledged in one committed transaction and are held nonetheless, e.g. {} in transaction {t}. Cursor: {cursors}",
            whole.len(),
            entry_words(e)
        ));
    }
    let unacked = of(|k| matches!(k, HeldKind::NotAcknowledged(_)));
    if let Some((e, HeldKind::NotAcknowledged(n))) = unacked.first() {
        findings.push(format!(
            "{} of the {looked} hold inputs that no committed transaction of the transform acknowledged, e.g. {} ({} of its numbers, the first {}), yet the run counted every input's output committed. Cursor: {cursors}",
            unacked.len(),
            entry_words(e),
            n.len(),
            n[0]
        ));
    }
    let unreadable = of(|k| matches!(k, HeldKind::Unreadable));
    if !unreadable.is_empty() {
        notes.push(format!(
            "{} of the {looked} could not be read (compressed, or the admin API did not answer), e.g. {}",
            unreadable.len(),
            entry_words(unreadable[0].0)
        ));
    }
}

#[cfg(test)]
mod tests;
