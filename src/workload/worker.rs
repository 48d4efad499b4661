//! The workers and the producer's run: `concurrency` workers take resends first, then fresh
//! numbers, until every number is final, the deadline passes or the producer stops; then the
//! sabotage duplicates and the producer's report.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::time::Instant;

use std::time::Duration;

use crate::backoff::Backoff;
use crate::drivers::{Answer, Driver};
use crate::history::{EventBody, Ranges, TxnId};
use crate::journal::{Entry, Record};
use crate::txn::TxnError;

use super::queue::{take_chunk, Chunk, End, Job, Spare};
use super::{Producer, Report, WorkloadError, NO_TXN};

impl Producer {
    /// Produce until every number is final, the deadline passes, or a fatal error.
    pub async fn run(self: &Arc<Self>) -> Report {
        let started = Instant::now();
        let deadline = started + self.cfg.deadline;
        let mut workers = Vec::new();
        for _ in 0..self.cfg.concurrency.max(1) {
            let me = self.clone();
            workers.push(tokio::spawn(async move { me.worker(deadline).await }));
        }
        for w in workers {
            if let Err(e) = w.await {
                self.fail(format!("a producer task panicked: {e}"));
            }
        }
        // Commits still under way in their own tasks end their jobs (each is bounded by the
        // deadline and the request timeouts).
        loop {
            let notified = self.changed.notified();
            if self.queue.lock().expect("lock").in_flight == 0 {
                break;
            }
            notified.await;
        }
        // Sabotage: send the numbers to duplicate once more, in a transaction of their own.
        let fatal = self.queue.lock().expect("lock").fatal.clone();
        if fatal.is_none() && !self.cfg.duplicate.is_empty() {
            let mut numbers: Ranges = Vec::new();
            for n in &self.cfg.duplicate {
                numbers.push((*n, n + 1));
            }
            self.history.record(EventBody::Note {
                message: format!("sabotage: sending {:?} a second time", self.cfg.duplicate),
            });
            let chunk = Chunk {
                numbers,
                previous: None,
                index: u64::MAX,
            };
            let mut next = Some(chunk);
            for _ in 0..5 {
                let Some(c) = next.take() else { break };
                match self.attempt(c, deadline, false, &mut None).await {
                    Ok(End::Done | End::Detached) => {}
                    Ok(End::Resend(c)) => next = Some(c),
                    Err(e) => self.fail(e.to_string()),
                }
            }
        }
        let q = self.queue.lock().expect("lock");
        let complete = q.fatal.is_none()
            && q.cursor >= self.cfg.messages
            && q.resend.is_empty()
            && q.in_flight == 0;
        let detail = match &q.fatal {
            Some(f) => format!("stopped: {f}"),
            None if complete => "every number reached a final state".to_string(),
            None => format!(
                "the deadline of {}s passed with numbers from {} unsent and {} resend(s) pending",
                self.cfg.deadline.as_secs(),
                q.cursor,
                q.resend.len()
            ),
        };
        drop(q);
        Report::finish(
            &self.history,
            &self.stats,
            complete,
            detail,
            started.elapsed(),
        )
    }

    async fn worker(self: Arc<Self>, deadline: Instant) {
        // The transaction this worker opened ahead for its next attempt.
        let mut spare: Option<Spare> = None;
        loop {
            if Instant::now() >= deadline {
                self.discard(spare.take()).await;
                return;
            }
            let notified = self.changed.notified();
            let job = self.next_job();
            let r = match job {
                Job::Exit => {
                    self.discard(spare.take()).await;
                    self.changed.notify_waiters();
                    return;
                }
                Job::Wait => {
                    tokio::select! {
                        _ = notified => {}
                        _ = tokio::time::sleep_until(deadline) => {
                            self.discard(spare.take()).await;
                            return;
                        }
                    }
                    continue;
                }
                Job::Resend(c) => self.attempt(c, deadline, true, &mut spare).await,
                Job::Fresh => self.fresh_attempt(deadline, &mut spare).await,
            };
            if !matches!(r, Ok(End::Detached)) {
                self.job_done(r);
            }
        }
    }

    /// The transaction for the worker's next attempt: the spare opened ahead if there is one
    /// (and it is young: a spare older than half the transaction timeout is aborted and a
    /// fresh one opened), else one opened now. With transactions, a spare for the attempt after
    /// this one is then asked for in a task of its own, so its NEW_TXN round trip overlaps
    /// this attempt's journal sync and partition registration rather than following them.
    async fn take_txn(
        self: &Arc<Self>,
        attempt: u64,
        deadline: Instant,
        spare: &mut Option<Spare>,
    ) -> Result<Option<TxnId>, WorkloadError> {
        if !self.cfg.transactions {
            return self.open_txn(attempt, deadline).await;
        }
        let txn = match spare.take() {
            Some(s) if s.asked.elapsed() < self.cfg.txn_timeout / 2 => match s.handle.await {
                Ok(r) => r?,
                Err(e) => {
                    self.fail(format!("a producer task panicked: {e}"));
                    None
                }
            },
            old => {
                self.discard(old).await;
                self.open_txn(attempt, deadline).await?
            }
        };
        if txn.is_some() && self.more_to_send() {
            let me = Arc::clone(self);
            *spare = Some(Spare {
                handle: tokio::spawn(async move { me.open_txn(0, deadline).await }),
                asked: Instant::now(),
            });
        }
        Ok(txn)
    }

    /// Whether another attempt is likely: numbers not yet taken or resends queued, no stop.
    fn more_to_send(&self) -> bool {
        let q = self.queue.lock().expect("lock");
        q.fatal.is_none() && (q.cursor < self.cfg.messages || !q.resend.is_empty())
    }

    /// End a spare that no attempt will use: ABORT it (it holds nothing: no partition was
    /// registered, no message sent). After a stop the NEW_TXN still under way is cancelled
    /// and the ABORT not waited for (the cluster may be gone; an unanswered spare ends by the
    /// coordinator's timeout, holding no partition).
    async fn discard(&self, spare: Option<Spare>) {
        let Some(s) = spare else { return };
        let stopped = self.is_stopped();
        if stopped && !s.handle.is_finished() {
            s.handle.abort();
            return;
        }
        if let Ok(Ok(Some(txn))) = s.handle.await {
            let abort = self.abort_request(txn);
            if stopped {
                tokio::spawn(abort);
            } else {
                let _ = abort.await;
            }
        }
    }

    /// A new transaction (or, without transactions, a placeholder id naming the attempt).
    async fn open_txn(
        &self,
        attempt: u64,
        deadline: Instant,
    ) -> Result<Option<TxnId>, WorkloadError> {
        if !self.cfg.transactions {
            return Ok(Some(TxnId {
                most: NO_TXN,
                least: attempt,
            }));
        }
        let asked = std::time::Instant::now();
        let opened = if let Some(d) = &self.driver {
            self.open_txn_with(d.clone(), deadline).await
        } else {
            self.open_own_txn(deadline).await
        };
        if let Ok(Some(t)) = &opened {
            self.opened.lock().expect("lock").insert(*t, asked);
        }
        opened
    }

    /// A new transaction through the own client's coordinators.
    async fn open_own_txn(&self, deadline: Instant) -> Result<Option<TxnId>, WorkloadError> {
        // NEW_TXN is retried until the run's deadline; a stop (a stall, a signal) must not wait
        // for that (seen: a stall declared at 378 s, the producer ending at 1,816 s while every
        // worker retried NEW_TXN on a cluster whose broker had exited). No number is taken yet,
        // so giving up here leaves nothing to undo (a NEW_TXN that did reach the coordinator
        // opens a transaction with nothing in it, which its timeout ends).
        tokio::select! {
            r = self.tcs.new_txn(self.cfg.txn_timeout, deadline) => match r {
                Ok(t) => Ok(Some(t)),
                Err(TxnError::Fatal(m)) => Err(TxnError::Fatal(m).into()),
                Err(e) => {
                    tracing::warn!("NEW_TXN failed until the deadline: {e}");
                    Ok(None)
                }
            },
            _ = self.until_stopped() => Ok(None),
        }
    }

    /// A new transaction through the official client's driver, asked again (with a backoff)
    /// until the deadline or a stop; the driver's end stops the producer.
    async fn open_txn_with(
        &self,
        d: Arc<Driver>,
        deadline: Instant,
    ) -> Result<Option<TxnId>, WorkloadError> {
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
        loop {
            let asked = d.new_txn(
                self.cfg.txn_timeout,
                self.cfg.op_timeout + Duration::from_secs(10),
            );
            let r = tokio::select! {
                r = asked => r,
                _ = self.until_stopped() => return Ok(None),
            };
            match r {
                Ok(t) => return Ok(Some(t)),
                Err(Answer::Gone(why)) => {
                    return Err(WorkloadError::Driver(format!(
                        "the {} driver ended: {why}",
                        d.kind
                    )))
                }
                Err(e) if Instant::now() + backoff.peek() >= deadline => {
                    tracing::warn!(
                        "{} client: newTransaction failed until the deadline: {e}",
                        d.kind
                    );
                    return Ok(None);
                }
                Err(e) => {
                    tracing::debug!("{} client: newTransaction failed: {e}", d.kind);
                    tokio::select! {
                        _ = backoff.wait() => {}
                        _ = self.until_stopped() => return Ok(None),
                    }
                }
            }
        }
    }

    /// An END_TXN ABORT of `txn` through the client the attempts use, its answer ignored by
    /// the callers (a spare or an empty transaction holds nothing).
    pub(super) fn abort_request(
        &self,
        txn: TxnId,
    ) -> impl std::future::Future<Output = Result<(), String>> + Send + 'static {
        crate::drivers::abort_through(
            self.driver.clone(),
            self.tcs.clone(),
            txn,
            self.cfg.op_timeout + Duration::from_secs(10),
        )
    }

    /// Open a transaction, then take fresh numbers for it.
    async fn fresh_attempt(
        self: &Arc<Self>,
        deadline: Instant,
        spare: &mut Option<Spare>,
    ) -> Result<End, WorkloadError> {
        let attempt = self.next_attempt.fetch_add(1, Ordering::Relaxed);
        let Some(txn) = self.take_txn(attempt, deadline, spare).await? else {
            return Ok(End::Done);
        };
        // Take the numbers and queue their journal records under one lock (see journal.rs);
        // none is sent before the sync that covers them (`carry` waits for it).
        let taken = {
            let mut q = self.queue.lock().expect("lock");
            if q.cursor >= self.cfg.messages {
                None
            } else {
                let (numbers, next) = take_chunk(
                    q.cursor,
                    self.cfg.messages,
                    self.cfg.txn_size,
                    &self.cfg.skip,
                );
                let synced = self.journal.submit(vec![
                    Record::Opened(Entry {
                        attempt,
                        txn,
                        numbers: numbers.clone(),
                        resend_of: None,
                    }),
                    Record::Cursor { next },
                ]);
                q.cursor = next;
                q.fresh_index += 1;
                Some((
                    Chunk {
                        numbers,
                        previous: None,
                        index: q.fresh_index,
                    },
                    synced,
                ))
            }
        };
        let Some((chunk, synced)) = taken.filter(|(c, _)| !c.numbers.is_empty()) else {
            if self.cfg.transactions {
                let _ = self.abort_request(txn).await;
            }
            return Ok(End::Done);
        };
        self.carry(attempt, txn, chunk, synced, deadline, true)
            .await
    }

    /// Carry the numbers of an earlier attempt (or the sabotage duplicates) in a new one.
    /// `detach`: commit in a task of its own (see `End::Detached`).
    async fn attempt(
        self: &Arc<Self>,
        chunk: Chunk,
        deadline: Instant,
        detach: bool,
        spare: &mut Option<Spare>,
    ) -> Result<End, WorkloadError> {
        let attempt = self.next_attempt.fetch_add(1, Ordering::Relaxed);
        let Some(txn) = self.take_txn(attempt, deadline, spare).await? else {
            return Ok(End::Resend(chunk));
        };
        // The new attempt first, then its predecessor final (a crash between them leaves both,
        // and `load` takes the new one for the numbers), synced together before any send.
        let mut records = vec![Record::Opened(Entry {
            attempt,
            txn,
            numbers: chunk.numbers.clone(),
            resend_of: chunk.previous,
        })];
        if let Some(prev) = chunk.previous {
            records.push(Record::Final { attempt: prev });
        }
        let synced = self.journal.submit(records);
        self.carry(attempt, txn, chunk, synced, deadline, detach)
            .await
    }
}
