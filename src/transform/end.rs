//! How an attempt of the transform ends when it does not simply commit: its abort (awaited,
//! so the acks are released before the inputs are asked again), the hand-back of its inputs to
//! the subscription, and the commit under the `retry-commit` policy (core `policy`).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use pulsar::message::proto::{MessageIdData, TxnAction};
use tokio::time::Instant;

use crate::history::{EventBody, Outcome, TxnId};
use crate::policy::{self, CommitState, Step};
use crate::scenario::ResendPolicy;
use crate::txn::coordinator::classify_commit;

use super::worker::{key, ranges, Input, Worker};
use super::Transformer;

impl Transformer {
    /// Abort an attempt that never asked to commit, waiting (up to `op_timeout`) for the
    /// coordinator's answer so the acks are released before the inputs are asked again.
    pub(super) async fn abort(&self, attempt: u64, txn: TxnId, reason: String) -> bool {
        self.history.record(EventBody::AbortRequested {
            attempt,
            txn,
            reason: reason.clone(),
        });
        self.stats.aborted.fetch_add(1, Ordering::Relaxed);
        self.history.record(EventBody::TxnOutcome {
            attempt,
            txn,
            outcome: Outcome::Aborted,
            detail: format!("{reason}; no commit was sent, so it cannot commit"),
        });
        match self.tcs.end_txn(txn, TxnAction::Abort).await {
            Ok(()) => {
                self.journal_final(attempt);
                true
            }
            Err(e) => {
                self.history.record(EventBody::Note {
                    message: format!("the abort of attempt {attempt} {txn} was not confirmed ({e}); the coordinator's timeout ends it"),
                });
                false
            }
        }
    }

    /// The attempt's outcome is definitive: its journal entry is cleared. Not awaited: a clear
    /// lost to a crash leaves an entry whose transaction a resume asks about again, and the
    /// history's definitive outcome for it is kept (`resume`).
    pub(super) fn journal_final(&self, attempt: u64) {
        drop(
            self.journal
                .submit(vec![crate::journal::Record::Final { attempt }]),
        );
    }

    /// Hand the batch's inputs back to the subscription: REDELIVER_UNACKNOWLEDGED_MESSAGES for
    /// all but `skip` (batch indexes whose acks an aborted transaction held: the broker hands
    /// those back itself).
    pub(super) fn redeliver(
        &self,
        w: &mut Worker,
        attempt: u64,
        batch: &[Input],
        skip: &[usize],
        reason: String,
    ) {
        let mut by_input: BTreeMap<usize, Vec<MessageIdData>> = BTreeMap::new();
        for (_, i) in batch.iter().enumerate().filter(|(k, _)| !skip.contains(k)) {
            by_input
                .entry(i.partition)
                .or_default()
                .push(i.msg.id.clone());
        }
        for (p, ids) in by_input {
            if let Some(c) = w.consumers[p].as_ref() {
                if let Err(e) = c.redeliver_unacknowledged(&ids) {
                    self.lost(w, p, &e.to_string());
                }
            }
        }
        self.counts.redeliveries.fetch_add(1, Ordering::Relaxed);
        self.counts
            .redelivered_inputs
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        let inputs: Vec<u64> = batch.iter().map(|i| i.n).collect();
        self.history.record(EventBody::InputsRedelivered {
            attempt,
            inputs: ranges(&inputs),
            reason,
        });
    }

    /// Commit under the retry-commit policy (core `policy`): confirmed, definitively not
    /// committed (the inputs are handed back), or unknown (the inputs are handed back, and
    /// the subscription decides).
    pub(super) async fn commit(
        &self,
        w: &mut Worker,
        attempt: u64,
        txn: TxnId,
        batch: &[Input],
        deadline: Instant,
    ) {
        let mut state = CommitState::default();
        let patience = self.cfg.txn_timeout + Duration::from_secs(30);
        let first = Instant::now();
        let mut backoff =
            crate::backoff::Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
        let outputs: Vec<u64> = batch.iter().map(|i| self.cfg.function.apply(i.n)).collect();
        loop {
            let try_no = state.tries + 1;
            self.history.record(EventBody::CommitRequested {
                attempt,
                txn,
                try_no,
            });
            self.stats.commits_in_flight.fetch_add(1, Ordering::SeqCst);
            let r = self.tcs.end_txn(txn, TxnAction::Commit).await;
            self.stats.commits_in_flight.fetch_sub(1, Ordering::SeqCst);
            let may_retry =
                first.elapsed() < patience && Instant::now() < deadline && !self.is_over();
            let was_ambiguous = state.ever_ambiguous;
            let step = policy::next(
                &mut state,
                ResendPolicy::RetryCommit,
                classify_commit(&r),
                may_retry,
            );
            if !was_ambiguous && state.ever_ambiguous {
                self.stats.ambiguous.fetch_add(1, Ordering::Relaxed);
                self.history.record(EventBody::TxnOutcome {
                    attempt,
                    txn,
                    outcome: Outcome::Ambiguous,
                    detail: format!(
                        "commit try {try_no}: {}",
                        state.first_ambiguity.clone().unwrap_or_default()
                    ),
                });
            }
            match step {
                Step::Committed {
                    evidence,
                    after_ambiguity,
                } => {
                    self.stats.committed.fetch_add(1, Ordering::Relaxed);
                    self.stats
                        .messages_committed
                        .fetch_add(batch.len() as u64, Ordering::Relaxed);
                    self.stats.commit_answered(first.elapsed(), after_ambiguity);
                    self.history.record(EventBody::commit_answer(
                        attempt,
                        txn,
                        Outcome::Committed,
                        try_no,
                        evidence,
                        after_ambiguity,
                    ));
                    self.journal_final(attempt);
                    let mut committed = self.committed.lock().expect("lock");
                    let mut done = self.done.lock().expect("lock");
                    for i in batch {
                        done.insert(key(i.partition, &i.msg.id));
                        committed.insert(i.n);
                    }
                    return;
                }
                Step::Resend {
                    evidence,
                    after_ambiguity,
                } => {
                    if !after_ambiguity {
                        self.stats.aborted.fetch_add(1, Ordering::Relaxed);
                    }
                    self.history.record(EventBody::commit_answer(
                        attempt,
                        txn,
                        Outcome::Aborted,
                        try_no,
                        evidence.clone(),
                        after_ambiguity,
                    ));
                    self.journal_final(attempt);
                    // Aborted by the coordinator: the broker hands back the acks itself.
                    let all: Vec<usize> = (0..batch.len()).collect();
                    self.redeliver(
                        w,
                        attempt,
                        batch,
                        &all,
                        format!("the commit did not apply: {evidence}"),
                    );
                    return;
                }
                Step::RetryCommit => backoff.wait().await,
                Step::Withhold { why } | Step::ResendAmbiguous { why } | Step::Verify { why } => {
                    // Nothing is resent: the subscription decides (committed: the inputs are
                    // acknowledged; aborted: they come again).
                    self.stats.withheld.fetch_add(1, Ordering::Relaxed);
                    self.history.record(EventBody::ResendWithheld {
                        attempt,
                        numbers: ranges(&outputs),
                        reason: format!("{why}; the outputs are not resent: the inputs are handed back and the subscription decides (acknowledged if it committed, delivered again if not)"),
                    });
                    self.redeliver(
                        w,
                        attempt,
                        batch,
                        &[],
                        "the commit's outcome is unknown".into(),
                    );
                    return;
                }
                Step::Fatal(m) => {
                    self.stop(&m);
                    return;
                }
            }
        }
    }
}
