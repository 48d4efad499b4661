//! An attempt's end: the commit, asked again as the resend policy says (`policy::next`; the
//! decision itself lives in the core crate), what it records for each step, and the abort of
//! an attempt that never asked to commit.

use std::sync::atomic::Ordering;
use std::time::Duration;

use pulsar::message::proto::{MessageIdData, TxnAction};
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::clients;
use crate::drivers::Answer;
use crate::history::{EventBody, Outcome, TxnId};
use crate::journal::JournalError;
use crate::policy::{self, CommitAnswer, CommitState, Step};
use crate::txn::coordinator::classify_commit;
use crate::txn::TxnError;

use super::queue::{Chunk, End};
use super::{Producer, WorkloadError};

impl Producer {
    /// Abort an attempt that never asked to commit: definitively not committed, whatever
    /// becomes of the ABORT itself (without a commit the coordinator's timeout ends it). The
    /// ABORT is sent in the background so a dead coordinator does not hold the worker up.
    pub(super) async fn abort(&self, attempt: u64, txn: TxnId, reason: String) {
        self.history.record(EventBody::AbortRequested {
            attempt,
            txn,
            reason: reason.clone(),
        });
        self.opened.lock().expect("lock").remove(&txn);
        self.stats.aborted.fetch_add(1, Ordering::Relaxed);
        self.history.record(EventBody::TxnOutcome {
            attempt,
            txn,
            outcome: Outcome::Aborted,
            detail: format!("{reason}; no commit was sent, so it cannot commit"),
        });
        let abort = self.abort_request(txn);
        let history = self.history.clone();
        tokio::spawn(async move { history.abort_answered(attempt, txn, &abort.await) });
    }

    /// Commit the attempt, asking again as the resend policy says (`policy::next`), and decide
    /// what becomes of its numbers.
    pub(super) async fn commit(
        &self,
        attempt: u64,
        txn: TxnId,
        chunk: &Chunk,
        receipts: &[(usize, MessageIdData)],
        deadline: Instant,
        again: impl Fn(String) -> End,
    ) -> Result<End, WorkloadError> {
        let n = receipts.len() as u64;
        let mut state = CommitState::default();
        let opened = self.opened.lock().expect("lock").remove(&txn);
        let patience = self.cfg.txn_timeout + Duration::from_secs(30);
        let first = Instant::now();
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
        loop {
            let try_no = state.tries + 1;
            self.history.record(EventBody::CommitRequested {
                attempt,
                txn,
                try_no,
            });
            self.stats.commits_in_flight.fetch_add(1, Ordering::SeqCst);
            self.stats.commits_requested.fetch_add(1, Ordering::SeqCst);
            let t = Instant::now();
            let (answer, for_good) = self.commit_once(attempt, txn).await;
            let answer = policy::not_found_with_age(
                answer,
                opened.map(|o| o.elapsed()),
                self.cfg.txn_timeout,
            );
            self.stats.commits_in_flight.fetch_sub(1, Ordering::SeqCst);
            // A stopped producer asks no more (a stall must end the run promptly), nor does one
            // whose client will refuse every later commit of this transaction.
            let may_retry = first.elapsed() < patience
                && Instant::now() < deadline
                && !self.is_stopped()
                && !for_good;
            let was_ambiguous = state.ever_ambiguous;
            let mut step = policy::next(&mut state, self.cfg.resend, answer, may_retry);
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
            if let Step::Verify { why } | Step::ResendAmbiguous { why } = &step {
                if self.is_stopped() {
                    return Ok(self.stopped_mid_commit(attempt, txn, try_no, &state, why));
                }
            }
            if let Step::Verify { why } = &step {
                tracing::debug!("attempt {attempt} {txn}: reading back ({why})");
                let evidence = self.read_evidence(txn, receipts).await;
                step = policy::after_read(evidence);
            }
            match step {
                Step::Committed {
                    evidence,
                    after_ambiguity,
                } => {
                    self.stats.commit_answered(t.elapsed(), after_ambiguity);
                    self.record_committed(attempt, txn, try_no, n, evidence, after_ambiguity)
                        .await?;
                    return Ok(End::Done);
                }
                Step::Resend {
                    evidence,
                    after_ambiguity,
                } => {
                    self.record_not_committed(attempt, txn, try_no, &evidence, after_ambiguity);
                    return Ok(again(format!("the commit did not apply: {evidence}")));
                }
                Step::ResendAmbiguous { why } => return Ok(again(why)),
                Step::RetryCommit => {
                    tokio::select! {
                        _ = backoff.wait() => {}
                        _ = self.until_stopped() => {
                            let why = state.first_ambiguity.clone().unwrap_or_default();
                            return Ok(self.stopped_mid_commit(attempt, txn, try_no, &state, &why));
                        }
                    }
                }
                Step::Withhold { why } => {
                    self.withhold(attempt, &chunk.numbers, &why).await?;
                    return Ok(End::Done);
                }
                Step::Fatal(m) => return Err(TxnError::Fatal(m).into()),
                Step::Verify { .. } => unreachable!("after_read never asks to verify again"),
            }
        }
    }

    /// One commit request, through the client the attempts use, and what its answer says: the
    /// own client's from the wire (`classify_commit`), an official client's from its table
    /// (`clients::classify_commit`). The driver's end stops the producer (the answer stays
    /// ambiguous: the request may have left).
    /// Also whether the client will refuse every later commit of it (`refuses_for_good`).
    async fn commit_once(&self, attempt: u64, txn: TxnId) -> (CommitAnswer, bool) {
        let Some(d) = &self.driver else {
            let r = self.tcs.end_txn(txn, TxnAction::Commit).await;
            if let Err(e) = &r {
                self.record_answer(attempt, txn, "commit", e.class(), e.message());
            }
            return (classify_commit(&r), false);
        };
        // The client's own operation timeout should answer first.
        let patience = self.cfg.op_timeout + Duration::from_secs(10);
        let r = d.end(txn, true, patience).await;
        if let Err(a) = &r {
            let (class, message) = answer_class(a);
            self.record_answer(attempt, txn, "commit", class, &message);
        }
        match r {
            Ok(()) => (clients::classify_commit(d.kind, &Ok(())), false),
            Err(Answer::Client(e)) => {
                let for_good = clients::refuses_for_good(d.kind, &e);
                (clients::classify_commit(d.kind, &Err(e)), for_good)
            }
            Err(a @ Answer::Timeout(_)) => (
                CommitAnswer::Ambiguous(format!("{} client: commit(): {a}", d.kind)),
                false,
            ),
            Err(Answer::Gone(why)) => {
                self.fail(format!("the {} driver ended: {why}", d.kind));
                let a = CommitAnswer::Ambiguous(format!(
                    "{} client: the driver ended while commit() was under way",
                    d.kind
                ));
                (a, true)
            }
        }
    }

    /// Record a failed answer of the client (`EventBody::ClientAnswer`).
    pub(super) fn record_answer(
        &self,
        attempt: u64,
        txn: TxnId,
        op: &str,
        class: String,
        message: &str,
    ) {
        self.history.record(EventBody::ClientAnswer {
            attempt,
            txn,
            op: op.into(),
            client: self.driver.as_ref().map_or("own", |d| d.kind.name()).into(),
            class,
            message: message.into(),
        });
    }

    /// The producer stopped before the commit's outcome was learned: it is neither asked
    /// again, read back nor sent again. An outcome made unknown by an earlier answer stays
    /// ambiguous (recorded at that answer); if no commit request ever left the client the
    /// attempt is not committed (the coordinator's timeout aborts it). Either way its journal
    /// entry stays, for `run --resume` to settle under the resend policy.
    fn stopped_mid_commit(
        &self,
        attempt: u64,
        txn: TxnId,
        try_no: u32,
        state: &CommitState,
        why: &str,
    ) -> End {
        if state.ever_ambiguous {
            self.history.record(EventBody::Note {
                message: format!(
                    "attempt {attempt} {txn}: the producer stopped before its commit's outcome was learned ({why}); it stays ambiguous, in the journal for `--resume`"
                ),
            });
        } else {
            self.record_not_committed(
                attempt,
                txn,
                try_no,
                "no commit request ever left the client and the producer stopped before asking again; the coordinator's timeout aborts the transaction",
                false,
            );
        }
        End::Done
    }

    /// A commit that applied: the journal entry cleared, the counters, and the history's
    /// outcome (or the resolution of an earlier ambiguity).
    async fn record_committed(
        &self,
        attempt: u64,
        txn: TxnId,
        try_no: u32,
        n: u64,
        evidence: String,
        after_ambiguity: bool,
    ) -> Result<(), JournalError> {
        self.journal.clear(attempt).await?;
        self.stats.committed.fetch_add(1, Ordering::Relaxed);
        self.stats
            .messages_committed
            .fetch_add(n, Ordering::Relaxed);
        self.history.record(if after_ambiguity {
            EventBody::TxnResolved {
                attempt,
                txn,
                resolved: Outcome::Committed,
                how: format!("commit try {try_no}: {evidence}"),
            }
        } else {
            EventBody::TxnOutcome {
                attempt,
                txn,
                outcome: Outcome::Committed,
                detail: if try_no > 1 {
                    format!("{evidence} (try {try_no})")
                } else {
                    evidence
                },
            }
        });
        Ok(())
    }

    /// A commit that did not apply: the history's outcome (or the resolution of an earlier
    /// ambiguity), counted as aborted unless it was ambiguous before.
    fn record_not_committed(
        &self,
        attempt: u64,
        txn: TxnId,
        try_no: u32,
        evidence: &str,
        after_ambiguity: bool,
    ) {
        if !after_ambiguity {
            self.stats.aborted.fetch_add(1, Ordering::Relaxed);
        }
        self.history.record(EventBody::commit_answer(
            attempt,
            txn,
            Outcome::Aborted,
            try_no,
            evidence.to_string(),
            after_ambiguity,
        ));
    }
}

/// A driver's failed answer as `EventBody::ClientAnswer` names it: the client's error class
/// (short name) and message; `NoAnswer` when the client did not answer in time, `DriverGone`
/// when the driver process ended first.
pub(super) fn answer_class(a: &Answer) -> (String, String) {
    match a {
        Answer::Client(e) => (e.short_class().to_string(), e.message.clone()),
        Answer::Timeout(_) => ("NoAnswer".into(), a.to_string()),
        Answer::Gone(why) => ("DriverGone".into(), why.clone()),
    }
}
