//! Continuing an interrupted transform run (`run --resume`). Its progress is Pulsar's: an input
//! acknowledged in a committed transaction is never delivered again, and the inputs of any
//! other transaction come back to the subscription once it ends. What the interruption left is
//! the transactions it had in flight: the history names every attempt (`txn_opened` is in the file
//! before anything of it is sent) and the journal every attempt that may have asked to
//! commit (its entry is synced before that) and has no definitive outcome. Each such transaction is aborted now if it is still open
//! (which also hands its inputs back at once instead of at its timeout), and what the
//! coordinator answers is recorded: committed or aborted only on its own words, anything else
//! stays ambiguous and the subscription decides, as for an unknown commit.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::history::{self, Event, EventBody, HistoryError, Outcome, Ranges, TxnId};
use crate::journal::Entry;

use super::{TransformError, Transformer};

/// What the interrupted run's history says of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PastAttempt {
    txn: TxnId,
    /// Its inputs (`inputs_taken`; empty when the interruption lost that line).
    inputs: Ranges,
    /// Its last `txn_outcome`.
    outcome: Option<Outcome>,
    /// Its `txn_resolved`, if any.
    resolved: Option<Outcome>,
}

impl PastAttempt {
    fn definitive(&self) -> bool {
        self.resolved.is_some() || matches!(self.outcome, Some(o) if o != Outcome::Ambiguous)
    }

    fn committed(&self) -> bool {
        self.resolved == Some(Outcome::Committed) || self.outcome == Some(Outcome::Committed)
    }
}

/// A transaction the interruption left without a definitive outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Leftover {
    pub(super) attempt: u64,
    pub(super) txn: TxnId,
    /// Its commit was already recorded as ambiguous: an answer now resolves it.
    pub(super) ambiguous: bool,
}

/// The attempts of an interrupted run's history, by attempt number.
#[derive(Debug, Default)]
pub(super) struct Past {
    attempts: BTreeMap<u64, PastAttempt>,
}

impl Past {
    /// Read from the history's events (unreadable lines, such as a torn last one, skipped).
    pub(super) fn from_events(events: impl Iterator<Item = Result<Event, HistoryError>>) -> Past {
        let mut attempts: BTreeMap<u64, PastAttempt> = BTreeMap::new();
        for ev in events.flatten() {
            match ev.body {
                EventBody::TxnOpened { attempt, txn, .. } => {
                    attempts.insert(
                        attempt,
                        PastAttempt {
                            txn,
                            inputs: Vec::new(),
                            outcome: None,
                            resolved: None,
                        },
                    );
                }
                EventBody::InputsTaken {
                    attempt, inputs, ..
                } => {
                    if let Some(a) = attempts.get_mut(&attempt) {
                        a.inputs = inputs;
                    }
                }
                EventBody::TxnOutcome {
                    attempt, outcome, ..
                } => {
                    if let Some(a) = attempts.get_mut(&attempt) {
                        a.outcome = Some(outcome);
                    }
                }
                EventBody::TxnResolved {
                    attempt, resolved, ..
                } => {
                    if let Some(a) = attempts.get_mut(&attempt) {
                        a.resolved = Some(resolved);
                    }
                }
                _ => {}
            }
        }
        Past { attempts }
    }

    /// The inputs of every attempt the history records as committed.
    pub(super) fn committed_inputs(&self) -> BTreeSet<u64> {
        self.attempts
            .values()
            .filter(|a| a.committed())
            .flat_map(|a| a.inputs.iter().flat_map(|(from, to)| *from..*to))
            .collect()
    }

    /// The inputs of one attempt, as the history names them.
    fn inputs_of(&self, attempt: u64) -> Vec<u64> {
        self.attempts
            .get(&attempt)
            .map(|a| a.inputs.iter().flat_map(|(f, t)| *f..*t).collect())
            .unwrap_or_default()
    }

    /// The transactions to settle: every attempt of the history without a definitive outcome,
    /// and every journal entry the history does not record as definitive.
    pub(super) fn leftovers(&self, journal: &[Entry]) -> Vec<Leftover> {
        let mut out: BTreeMap<u64, Leftover> = BTreeMap::new();
        for (attempt, a) in &self.attempts {
            if !a.definitive() {
                out.insert(
                    *attempt,
                    Leftover {
                        attempt: *attempt,
                        txn: a.txn,
                        ambiguous: a.outcome == Some(Outcome::Ambiguous),
                    },
                );
            }
        }
        for e in journal {
            if !self
                .attempts
                .get(&e.attempt)
                .is_some_and(|a| a.definitive())
            {
                out.entry(e.attempt).or_insert(Leftover {
                    attempt: e.attempt,
                    txn: e.txn,
                    ambiguous: false,
                });
            }
        }
        out.into_values().collect()
    }
}

impl Transformer {
    /// Continue from an interrupted run: the inputs it saw committed count as confirmed, and
    /// each transaction it left in flight is settled on the coordinator's words.
    pub async fn resume(&self, history_path: &Path) -> Result<(), TransformError> {
        let loaded = self.journal.load_to_resume(&self.history)?;
        let past = Past::from_events(history::read(history_path)?);
        let committed = past.committed_inputs();
        let leftovers = past.leftovers(&loaded.entries);
        self.history.record(EventBody::Note {
            message: format!(
                "resuming the transform: {} of {} inputs confirmed committed before the interruption, {} transaction(s) left without a definitive outcome ({} in the journal)",
                committed.len(),
                self.cfg.messages,
                leftovers.len(),
                loaded.entries.len()
            ),
        });
        self.committed.lock().expect("lock").extend(committed);
        let patience = self.cfg.txn_timeout + Duration::from_secs(30);
        for l in &leftovers {
            let (outcome, detail) = self.tcs.abort_leftover(l.txn, patience).await?;
            self.settled(l, outcome, format!("after the interruption: {detail}"));
            if outcome == Some(Outcome::Committed) {
                self.committed
                    .lock()
                    .expect("lock")
                    .extend(past.inputs_of(l.attempt));
            }
            self.journal_final(l.attempt);
        }
        Ok(())
    }

    /// Record what the coordinator's answer made of a leftover: an outcome (ambiguous when the
    /// answer proves nothing), or, for one already ambiguous, its resolution (or a note).
    fn settled(&self, l: &Leftover, outcome: Option<Outcome>, detail: String) {
        let (attempt, txn) = (l.attempt, l.txn);
        match (l.ambiguous, outcome) {
            (true, Some(resolved)) => self.history.record(EventBody::TxnResolved {
                attempt,
                txn,
                resolved,
                how: detail,
            }),
            (true, None) => self.history.record(EventBody::Note {
                message: format!("attempt {attempt} {txn} stays ambiguous: {detail}"),
            }),
            (false, outcome) => {
                let counter = match outcome {
                    Some(Outcome::Committed) => &self.stats.committed,
                    Some(Outcome::Aborted) => &self.stats.aborted,
                    _ => &self.stats.ambiguous,
                };
                counter.fetch_add(1, Ordering::Relaxed);
                self.history.record(EventBody::TxnOutcome {
                    attempt,
                    txn,
                    outcome: outcome.unwrap_or(Outcome::Ambiguous),
                    detail,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests;
