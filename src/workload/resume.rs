//! Continuing an interrupted run from its journal: each transaction it left in flight is
//! aborted if still open and settled on the coordinator's words; the unresolved ones go to the
//! resend policy; fresh numbers continue at the journal's cursor.

use std::time::Duration;

use crate::history::{EventBody, Outcome};
use crate::journal::Entry;
use crate::scenario::ResendPolicy;

use super::queue::count;
use super::{Producer, WorkloadError};

impl Producer {
    /// Continue from a journal left by an interrupted run: settle what its in-flight attempts
    /// did, queue their numbers again where needed, and start fresh numbers at the cursor.
    pub async fn resume(&self) -> Result<(), WorkloadError> {
        let loaded = self.journal.load_to_resume(&self.history)?;
        let (cursor, entries) = (loaded.cursor, loaded.entries);
        let next = crate::journal::next_number(cursor, &entries);
        self.history.record(EventBody::Note {
            message: format!(
                "resuming: journal cursor {cursor}, {} transaction(s) left in flight, fresh numbers from {next}",
                entries.len()
            ),
        });
        let mut unresolved = Vec::new();
        for e in &entries {
            match self.settle_leftover(e).await? {
                Some(Outcome::Committed) => {
                    self.journal.clear(e.attempt).await?;
                }
                Some(_) => self.requeue(e, "aborted before the interruption or by this resume"),
                None => unresolved.push(e.clone()),
            }
        }
        if !unresolved.is_empty() {
            match self.cfg.resend {
                ResendPolicy::Naive => {
                    for e in &unresolved {
                        self.requeue(e, "ambiguous after the interruption; naive policy resends");
                    }
                }
                ResendPolicy::RetryCommit => {
                    for e in &unresolved {
                        self.withhold(
                            e.attempt,
                            &e.numbers,
                            "ambiguous after the interruption; retry-commit withholds",
                        )
                        .await?;
                    }
                }
                ResendPolicy::Verify => {
                    let visible = self.visible_in_topic(&unresolved).await;
                    if let Err(why) = &visible {
                        self.history.record(EventBody::Note {
                            message: format!("resume: could not learn what the interrupted transactions became: {why}"),
                        });
                    }
                    for e in &unresolved {
                        match visible.as_ref().ok().and_then(|v| v.get(&e.txn)) {
                            Some(found) if *found > 0 => {
                                self.history.record(EventBody::TxnResolved {
                                    attempt: e.attempt,
                                    txn: e.txn,
                                    resolved: Outcome::Committed,
                                    how: format!(
                                        "read-back after resume found {found} of {} messages",
                                        count(&e.numbers)
                                    ),
                                });
                                self.journal.clear(e.attempt).await?;
                            }
                            Some(_) => {
                                self.history.record(EventBody::TxnResolved {
                                    attempt: e.attempt,
                                    txn: e.txn,
                                    resolved: Outcome::Aborted,
                                    how: "read-back after resume found none of its messages".into(),
                                });
                                self.requeue(e, "read-back found it aborted");
                            }
                            None => {
                                self.withhold(
                                    e.attempt,
                                    &e.numbers,
                                    &format!(
                                        "verify after resume: {}",
                                        visible
                                            .as_ref()
                                            .err()
                                            .map_or("its transaction was not in the read", |w| w
                                                .as_str())
                                    ),
                                )
                                .await?
                            }
                        }
                    }
                }
            }
        }
        let mut q = self.queue.lock().expect("lock");
        q.cursor = next;
        q.fresh_index = next / u64::from(self.cfg.txn_size.max(1));
        Ok(())
    }

    /// What a transaction left by a crashed run became: abort it now if it is still open.
    /// Committed or aborted only on the coordinator's own words (`Coordinators::abort_leftover`);
    /// anything else is unknown and left to the resend policy.
    async fn settle_leftover(&self, e: &Entry) -> Result<Option<Outcome>, WorkloadError> {
        let patience = self.cfg.txn_timeout + Duration::from_secs(30);
        let (outcome, detail) = self.tcs.abort_leftover(e.txn, patience).await?;
        self.history.record(EventBody::TxnOutcome {
            attempt: e.attempt,
            txn: e.txn,
            outcome: outcome.unwrap_or(Outcome::Ambiguous),
            detail: format!("after the interruption: {detail}"),
        });
        Ok(outcome)
    }
}
