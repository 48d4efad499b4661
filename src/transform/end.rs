//! How an attempt of the transform ends: its abort when it never asked to commit (awaited, so
//! the acks are released before the inputs are asked again), the hand-back of its inputs to
//! the subscription, and the commit under the `retry-commit` policy (core `policy`), which
//! runs in a task of its own (`Ready`, handed off by the worker) together with what follows
//! it: the outcome's bookkeeping and the hand-back.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use pulsar::message::proto::{MessageIdData, TxnAction};
use tokio::time::Instant;

use crate::drivers::Answer;
use crate::history::{EventBody, Outcome, TxnId};
use crate::policy::CommitAnswer;
use crate::policy::{self, CommitState, Step};
use crate::scenario::ResendPolicy;
use crate::txn::coordinator::classify_commit;

use super::source::{key, Hand, Input};
use super::worker::{ranges, Ready};
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
        let r = match &self.driver {
            None => self
                .tcs
                .end_txn(txn, TxnAction::Abort)
                .await
                .map_err(|e| e.to_string()),
            Some(d) => d
                .end(txn, false, self.cfg.op_timeout + Duration::from_secs(10))
                .await
                .map_err(|a| self.driver_failed(attempt, txn, "abort", &a)),
        };
        self.history.abort_answered(attempt, txn, &r);
        if r.is_ok() {
            self.journal_final(attempt);
        }
        r.is_ok()
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
    /// those back itself), each through `hands[p]`, the consumer of input partition `p` that
    /// holds them. A consumer that is gone is not asked: what it held went back to the
    /// subscription when the broker saw it gone. Returns the partitions whose consumer could
    /// not be asked, and why (the worker drops those consumers and subscribes again).
    pub(super) fn redeliver(
        &self,
        hands: &[Option<Hand>],
        attempt: u64,
        batch: &[Input],
        skip: &[usize],
        reason: String,
    ) -> Vec<(usize, String)> {
        let mut by_input: BTreeMap<usize, Vec<MessageIdData>> = BTreeMap::new();
        for (_, i) in batch.iter().enumerate().filter(|(k, _)| !skip.contains(k)) {
            by_input
                .entry(i.partition)
                .or_default()
                .push(i.msg.id.clone());
        }
        let mut failed = Vec::new();
        for (p, ids) in by_input {
            if let Some(c) = hands.get(p).and_then(Option::as_ref) {
                if let Err(e) = c.redeliver_unacknowledged(&ids) {
                    failed.push((p, e.to_string()));
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
        failed
    }

    /// Commit a `Ready` attempt under the retry-commit policy (core `policy`): confirmed,
    /// definitively not committed (the inputs are handed back), or unknown (the inputs are
    /// handed back, and the subscription decides). Runs in the attempt's commit task.
    pub(super) async fn commit(&self, ready: &Ready, deadline: Instant) {
        let Ready { attempt, txn, .. } = *ready;
        let mut state = CommitState::default();
        let patience = self.cfg.txn_timeout + Duration::from_secs(30);
        let first = Instant::now();
        let mut backoff =
            crate::backoff::Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
        loop {
            let try_no = state.tries + 1;
            self.history.record(EventBody::CommitRequested {
                attempt,
                txn,
                try_no,
            });
            self.stats.commits_in_flight.fetch_add(1, Ordering::SeqCst);
            self.stats.commits_requested.fetch_add(1, Ordering::SeqCst);
            let (answer, for_good) = self.commit_once(attempt, txn).await;
            // A NotFound before the transaction's timeout could fire is no abort.
            let answer = policy::not_found_with_age(
                answer,
                Some(ready.asked.elapsed()),
                self.cfg.txn_timeout,
            );
            self.stats.commits_in_flight.fetch_sub(1, Ordering::SeqCst);
            let may_retry = first.elapsed() < patience
                && Instant::now() < deadline
                && !self.is_over()
                && !for_good;
            let was_ambiguous = state.ever_ambiguous;
            let step = policy::next(&mut state, ResendPolicy::RetryCommit, answer, may_retry);
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
            if let Step::RetryCommit = step {
                backoff.wait().await;
                continue;
            }
            self.settle(ready, step, try_no, first.elapsed());
            return;
        }
    }

    /// One commit request, and what its answer says: the own client's from the wire
    /// (`classify_commit`), an official client's from its table (`clients::classify_commit`),
    /// as the producer's. Also whether the client will refuse every later commit of it.
    async fn commit_once(&self, attempt: u64, txn: TxnId) -> (CommitAnswer, bool) {
        let Some(d) = &self.driver else {
            return (
                classify_commit(&self.tcs.end_txn(txn, TxnAction::Commit).await),
                false,
            );
        };
        // The client's own operation timeout should answer first.
        let r = d
            .end(txn, true, self.cfg.op_timeout + Duration::from_secs(10))
            .await;
        if let Err(a) = &r {
            self.driver_failed(attempt, txn, "commit", a);
        }
        match r {
            Ok(()) => (crate::clients::classify_commit(d.kind, &Ok(())), false),
            Err(Answer::Client(e)) => {
                let for_good = crate::clients::refuses_for_good(d.kind, &e);
                (crate::clients::classify_commit(d.kind, &Err(e)), for_good)
            }
            Err(a @ Answer::Timeout(_)) => (
                CommitAnswer::Ambiguous(format!("{} client: commit(): {a}", d.kind)),
                false,
            ),
            Err(Answer::Gone(_)) => (
                CommitAnswer::Ambiguous(format!(
                    "{} client: the driver ended while commit() was under way",
                    d.kind
                )),
                true,
            ),
        }
    }

    /// What a final step of the commit makes of the attempt: its inputs confirmed, or handed
    /// back (aborted: the broker hands back the acks itself; unknown: nothing is resent and
    /// the subscription decides), or the run stopped.
    fn settle(&self, ready: &Ready, step: Step, try_no: u32, took: Duration) {
        let Ready {
            attempt,
            txn,
            ref batch,
            ref hands,
            ..
        } = *ready;
        match step {
            Step::Committed {
                evidence,
                after_ambiguity,
            } => {
                self.stats.committed.fetch_add(1, Ordering::Relaxed);
                self.stats
                    .messages_committed
                    .fetch_add(batch.len() as u64, Ordering::Relaxed);
                self.stats.commit_answered(took, after_ambiguity);
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
                let all: Vec<usize> = (0..batch.len()).collect();
                let why = format!("the commit did not apply: {evidence}");
                self.redeliver_from_task(hands, attempt, batch, &all, why);
            }
            Step::Withhold { why } | Step::ResendAmbiguous { why } | Step::Verify { why } => {
                self.stats.withheld.fetch_add(1, Ordering::Relaxed);
                let outputs: Vec<u64> =
                    batch.iter().map(|i| self.cfg.function.apply(i.n)).collect();
                self.history.record(EventBody::ResendWithheld {
                    attempt,
                    numbers: ranges(&outputs),
                    reason: format!("{why}; the outputs are not resent: the inputs are handed back and the subscription decides (acknowledged if it committed, delivered again if not)"),
                });
                let why = "the commit's outcome is unknown".to_string();
                self.redeliver_from_task(hands, attempt, batch, &[], why);
            }
            Step::Fatal(m) => self.stop(&m),
            Step::RetryCommit => unreachable!("commit() asks again before it settles"),
        }
    }

    /// `redeliver` from a commit task, which does not own the consumers: one that could not be
    /// asked is gone or on a dead connection, and its worker finds that out at its next
    /// receive (and subscribes again), so it is only logged here.
    fn redeliver_from_task(
        &self,
        hands: &[Option<Hand>],
        attempt: u64,
        batch: &[Input],
        skip: &[usize],
        reason: String,
    ) {
        for (p, e) in self.redeliver(hands, attempt, batch, skip, reason) {
            tracing::debug!(
                "hand-back of attempt {attempt} on {}: {e}",
                self.input_partitions[p]
            );
        }
    }
}
