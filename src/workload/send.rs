//! One attempt's sends: the transaction opened in the history, its partitions registered,
//! every number sent in batches under the rate limit, and what a failed send, `abort_every`
//! or a run without transactions make of the attempt before its commit.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pulsar::message::proto::MessageIdData;
use tokio::time::Instant;

use crate::drivers::Answer;
use crate::history::{EventBody, Outcome, TxnId};
use crate::journal::Ticket;
use crate::txn::TxnError;

use super::queue::{count, Chunk, End};
use super::{Producer, WorkloadError};

/// Token bucket: at most `rate` messages per second across the producer.
pub(super) struct RateLimit {
    pub(super) every: Duration,
    pub(super) next: Mutex<std::time::Instant>,
}

impl RateLimit {
    async fn take(&self) {
        let wait = {
            let mut next = self.next.lock().expect("lock");
            let now = std::time::Instant::now();
            let slot = (*next).max(now);
            *next = slot + self.every;
            slot.saturating_duration_since(now)
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// A failed send: the error, and its class and message as the client gave them (recorded as
/// `EventBody::ClientAnswer`).
pub(super) struct SendFailure {
    error: TxnError,
    class: String,
    message: String,
}

impl SendFailure {
    fn own(e: TxnError) -> SendFailure {
        SendFailure {
            class: e.class(),
            message: e.message().to_string(),
            error: e,
        }
    }
}

/// The payload of number `n`.
pub fn payload(n: u64, size: usize) -> Vec<u8> {
    let mut p = n.to_string().into_bytes();
    if p.len() < size {
        p.resize(size, b' ');
    }
    p
}

impl Producer {
    /// Send the chunk in `txn` and commit it; decide what becomes of its numbers. `synced`: the
    /// journal records that name the chunk's numbers; their sync and the registration of the
    /// partitions go on together, and no message is sent before both are done. `detach`: then
    /// hand the sends and the commit to a task of their own and return `End::Detached`, so the
    /// worker opens its next transaction while these sends are under way (the task waits for
    /// every receipt before it commits). Without transactions this makes a sliding window: up
    /// to `UNACKED_CHUNKS` chunks per worker in flight.
    pub(super) async fn carry(
        self: &Arc<Self>,
        attempt: u64,
        txn: TxnId,
        chunk: Chunk,
        synced: Ticket,
        deadline: Instant,
        detach: bool,
    ) -> Result<End, WorkloadError> {
        self.stats.attempts.fetch_add(1, Ordering::Relaxed);
        self.history.record(EventBody::TxnOpened {
            attempt,
            txn,
            numbers: chunk.numbers.clone(),
            resend_of: chunk.previous,
        });
        let op_deadline = (Instant::now() + self.cfg.txn_timeout)
            .min(deadline.max(Instant::now() + self.cfg.op_timeout));
        let again = self.again(attempt, &chunk);

        // Partitions and the journal's sync first (ADD_PARTITION_TO_TXN sends no number, so it
        // need not wait for the sync), then the messages.
        let in_txn = if self.cfg.transactions {
            Some(txn)
        } else {
            None
        };
        let (synced, registered) = tokio::join!(
            synced.synced(),
            self.register_partitions(attempt, txn, &chunk, op_deadline)
        );
        synced?;
        if let Some(why) = registered? {
            return Ok(again(why));
        }
        if detach {
            drop(again);
            return Ok(self
                .send_and_commit_detached(attempt, txn, in_txn, chunk, deadline)
                .await);
        }
        let (receipts, failure) = self.send_all(&chunk, in_txn).await;
        self.after_sends(attempt, txn, &chunk, receipts, failure, deadline)
            .await
    }

    /// Once a send slot is free, send the chunk and commit it in a task of its own, which ends
    /// the job (see `End::Detached`). The send slot is given back once every send is answered
    /// (so at most `concurrency` transactions' messages are unacknowledged at once, as many as
    /// without hand-off); the commit then waits only for a commit slot.
    async fn send_and_commit_detached(
        self: &Arc<Self>,
        attempt: u64,
        txn: TxnId,
        in_txn: Option<TxnId>,
        chunk: Chunk,
        deadline: Instant,
    ) -> End {
        let slot = self
            .send_slots
            .clone()
            .acquire_owned()
            .await
            .expect("the send slots are never closed");
        let me = Arc::clone(self);
        tokio::spawn(async move {
            let (receipts, failure) = me.send_all(&chunk, in_txn).await;
            let committing = me
                .commit_slots
                .clone()
                .acquire_owned()
                .await
                .expect("the commit slots are never closed");
            drop(slot);
            let r = me
                .after_sends(attempt, txn, &chunk, receipts, failure, deadline)
                .await;
            drop(committing);
            me.job_done(r);
        });
        End::Detached
    }

    /// What the attempt's receipts (and its first failed send) make of it: aborted and sent
    /// again after a failure or under `abort_every`, final without transactions, else
    /// committed under the resend policy.
    async fn after_sends(
        &self,
        attempt: u64,
        txn: TxnId,
        chunk: &Chunk,
        receipts: Vec<(usize, MessageIdData)>,
        failure: Option<SendFailure>,
        deadline: Instant,
    ) -> Result<End, WorkloadError> {
        let again = self.again(attempt, chunk);
        self.stats
            .messages_sent
            .fetch_add(receipts.len() as u64, Ordering::Relaxed);
        if let Some(e) = failure {
            let why = self
                .send_failed(attempt, txn, chunk, receipts.len(), e)
                .await?;
            return Ok(again(why));
        }
        self.history.record(EventBody::SendsAcked {
            attempt,
            messages: receipts.len() as u64,
        });
        if let Some(k) = self.cfg.abort_every {
            if chunk.previous.is_none()
                && chunk.index != u64::MAX
                && chunk.index % u64::from(k) == 0
            {
                self.abort(attempt, txn, format!("deliberate: every {k}th transaction's first attempt is aborted (abort_every)")).await;
                return Ok(again("deliberately aborted (abort_every)".into()));
            }
        }
        if !self.cfg.transactions {
            return self
                .commit_without_txn(attempt, txn, receipts.len() as u64)
                .await;
        }
        self.commit(attempt, txn, chunk, &receipts, deadline, again)
            .await
    }

    /// Register the chunk's partitions with the transaction (not without transactions). On a
    /// failure short of fatal the attempt is aborted, and the reason to send its numbers again
    /// is returned.
    async fn register_partitions(
        &self,
        attempt: u64,
        txn: TxnId,
        chunk: &Chunk,
        op_deadline: Instant,
    ) -> Result<Option<String>, WorkloadError> {
        if !self.cfg.transactions {
            return Ok(None);
        }
        let parts: BTreeSet<u32> = chunk
            .numbers
            .iter()
            .flat_map(|(a, b)| (*a..*b).take(self.cfg.partitions as usize))
            .map(|n| (n % u64::from(self.cfg.partitions)) as u32)
            .collect();
        let failed = if let Some(d) = &self.driver {
            // An official client registers a partition itself at the transaction's first send
            // to it, and holds that send until the coordinator answers; asked ahead (when the
            // driver offers it) the registration overlaps the journal's sync instead.
            if !d.hello.register {
                return Ok(None);
            }
            let ps: Vec<u32> = parts.into_iter().collect();
            match d.register(txn, &ps, &[], op_deadline).await {
                Ok(()) => return Ok(None),
                Err(Answer::Gone(why)) => {
                    return Err(
                        TxnError::Fatal(format!("the {} driver ended: {why}", d.kind)).into(),
                    )
                }
                Err(a) => {
                    let (class, message) = super::commit::answer_class(&a);
                    self.record_answer(attempt, txn, "register", class, &message);
                    format!("{} client: registering the partitions failed: {a}", d.kind)
                }
            }
        } else {
            let names: Vec<String> = parts
                .iter()
                .map(|p| self.partition_topics[*p as usize].clone())
                .collect();
            match self.tcs.add_partitions(txn, &names, op_deadline).await {
                Ok(()) => return Ok(None),
                Err(TxnError::Fatal(m)) => return Err(TxnError::Fatal(m).into()),
                Err(e) => format!("ADD_PARTITION_TO_TXN failed: {e}"),
            }
        };
        self.abort(attempt, txn, failed.clone()).await;
        Ok(Some(failed))
    }

    /// Send the chunk's numbers (in `in_txn`), per partition in batches of `batch_size`, all at
    /// once under the rate limit. Returns the receipts, and the first failure if any.
    async fn send_all(
        &self,
        chunk: &Chunk,
        in_txn: Option<TxnId>,
    ) -> (Vec<(usize, MessageIdData)>, Option<SendFailure>) {
        // Per partition, in batches of `batch_size` (one entry each).
        let mut per_partition: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
        for n in chunk.numbers.iter().flat_map(|(a, b)| *a..*b) {
            per_partition
                .entry((n % u64::from(self.cfg.partitions)) as usize)
                .or_default()
                .push(n);
        }
        let batch = self.cfg.batch_size.max(1) as usize;
        let sends = per_partition.iter().flat_map(|(p, numbers)| {
            numbers.chunks(batch).map(move |group| {
                let producer = self.producers.get(*p).cloned();
                let driver = self.driver.clone();
                let size = self.cfg.message_size;
                let timeout = self.cfg.op_timeout;
                let count = group.len();
                async move {
                    if let Some(r) = &self.rate {
                        for _ in 0..count {
                            r.take().await;
                        }
                    }
                    let r = match (&driver, producer) {
                        (Some(d), _) => d
                            .send(in_txn, *p as u32, group, timeout + Duration::from_secs(10))
                            .await
                            .map_err(|a| {
                                let (class, message) = super::commit::answer_class(&a);
                                let error = match a {
                                    Answer::Gone(why) => TxnError::Fatal(format!(
                                        "the {} driver ended: {why}",
                                        d.kind
                                    )),
                                    a => TxnError::Client(format!("{} client: send: {a}", d.kind)),
                                };
                                SendFailure {
                                    error,
                                    class,
                                    message,
                                }
                            }),
                        (None, Some(producer)) => {
                            // The payloads only for the own client: a driver makes its own.
                            let data = group.iter().map(|n| payload(*n, size)).collect();
                            producer
                                .send_batch(in_txn, data, timeout)
                                .await
                                .map_err(SendFailure::own)
                        }
                        (None, None) => Err(SendFailure::own(TxnError::Fatal(format!(
                            "no producer for partition {p}"
                        )))),
                    };
                    (*p, count, r)
                }
            })
        });
        let results = futures::future::join_all(sends).await;
        let mut receipts: Vec<(usize, MessageIdData)> =
            Vec::with_capacity(count(&chunk.numbers) as usize);
        let mut failure = None;
        for (p, _, r) in results {
            match r {
                Ok(ids) => receipts.extend(ids.into_iter().map(|id| (p, id))),
                Err(e) => {
                    if failure.is_none() {
                        failure = Some(e);
                    }
                }
            }
        }
        (receipts, failure)
    }

    /// A send of the attempt failed with `e`: fatal ends the producer; otherwise the attempt is
    /// aborted (without transactions only recorded: what was sent stays), and the reason to
    /// send its numbers again is returned.
    async fn send_failed(
        &self,
        attempt: u64,
        txn: TxnId,
        chunk: &Chunk,
        receipts: usize,
        f: SendFailure,
    ) -> Result<String, WorkloadError> {
        self.record_answer(attempt, txn, "send", f.class, &f.message);
        let e = f.error;
        if let TxnError::Fatal(m) = e {
            return Err(TxnError::Fatal(m).into());
        }
        let why = format!(
            "a SEND failed ({e}); {} of {} receipts",
            receipts,
            count(&chunk.numbers)
        );
        if !self.cfg.transactions {
            // Without a transaction what was sent stays: the resend may duplicate.
            self.stats.aborted.fetch_add(1, Ordering::Relaxed);
            self.history.record(EventBody::TxnOutcome {
                attempt,
                txn,
                outcome: Outcome::Aborted,
                detail: format!("{why} (no transaction: the sent messages stay)"),
            });
            return Ok(why);
        }
        self.abort(attempt, txn, why.clone()).await;
        Ok(why)
    }

    /// Without transactions an attempt whose sends were all acknowledged is final: its
    /// journal entry is cleared and it counts as committed.
    async fn commit_without_txn(
        &self,
        attempt: u64,
        txn: TxnId,
        messages: u64,
    ) -> Result<End, WorkloadError> {
        self.journal.clear(attempt).await?;
        self.stats.committed.fetch_add(1, Ordering::Relaxed);
        self.stats
            .messages_committed
            .fetch_add(messages, Ordering::Relaxed);
        self.history.record(EventBody::TxnOutcome {
            attempt,
            txn,
            outcome: Outcome::Committed,
            detail: "no transaction: every send acknowledged".into(),
        });
        Ok(End::Done)
    }
}
