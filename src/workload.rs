//! The workload: the numbers 0..N in transactions of `txn_size`, up to `concurrency` open at
//! once, journaled before they are sent, and the resend policy that decides what happens to
//! the numbers of a transaction that aborted or whose commit is ambiguous.
//!
//! Number n goes to partition `n mod partitions`. Its payload is n in decimal ASCII, padded
//! with spaces to `message_size` bytes.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pulsar::message::proto::{MessageIdData, TxnAction};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::admin::Admin;
use crate::history::{EventBody, History, Outcome, Ranges, TxnId};
use crate::journal::{Entry, Journal, JournalError};
use crate::policy::{self, CommitState, ReadEvidence, Step};
use crate::readback::Until;
use crate::scenario::ResendPolicy;
use crate::txn::coordinator::{classify_commit, Coordinators};
use crate::txn::producer::PartitionProducer;
use crate::txn::reader::{read_partition, ReadOptions};
use crate::txn::{partition_names, Client, TxnError};

/// The coordinator id of the placeholder transaction ids of a run without transactions.
pub const NO_TXN: u64 = crate::checker::NO_TXN;

/// What the producer is to do.
#[derive(Debug, Clone)]
pub struct Config {
    /// The topic the run uses (with the run id appended when unique).
    pub topic: String,
    pub partitions: u32,
    pub messages: u64,
    pub txn_size: u32,
    pub batch_size: u32,
    pub concurrency: u32,
    pub txn_timeout: Duration,
    pub resend: ResendPolicy,
    pub message_size: usize,
    pub rate: Option<u32>,
    pub abort_every: Option<u32>,
    /// False: plain sends without transactions (a baseline for benchmarks; not exactly-once).
    pub transactions: bool,
    pub op_timeout: Duration,
    pub deadline: Duration,
    /// Sabotage: numbers never sent, numbers sent twice.
    pub skip: BTreeSet<u64>,
    pub duplicate: Vec<u64>,
    /// Prefix of producer names.
    pub name: String,
    /// Where the producer's connections go (a `reply_loss` fault's proxy); `None`: straight
    /// to the brokers.
    pub dial: Option<Dialer>,
}

/// A [`crate::txn::Dial`] in the producer's configuration.
#[derive(Clone)]
pub struct Dialer(pub Arc<dyn crate::txn::Dial>);

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Dialer")
    }
}

/// Live counters, read by the runner (progress, fault triggers).
#[derive(Debug, Default)]
pub struct Stats {
    pub attempts: AtomicU64,
    pub committed: AtomicU64,
    pub aborted: AtomicU64,
    pub ambiguous: AtomicU64,
    pub withheld: AtomicU64,
    pub messages_sent: AtomicU64,
    pub messages_committed: AtomicU64,
    /// END_TXN COMMIT requests awaiting an answer now.
    pub commits_in_flight: AtomicI64,
    /// Sum of commit round-trip times in microseconds, and how many.
    pub commit_latency_us: AtomicU64,
    pub commit_latency_n: AtomicU64,
}

impl Stats {
    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            attempts: self.attempts.load(Ordering::Relaxed),
            committed: self.committed.load(Ordering::Relaxed),
            aborted: self.aborted.load(Ordering::Relaxed),
            ambiguous: self.ambiguous.load(Ordering::Relaxed),
            withheld: self.withheld.load(Ordering::Relaxed),
            messages_sent: self.messages_sent.load(Ordering::Relaxed),
            messages_committed: self.messages_committed.load(Ordering::Relaxed),
            commits_in_flight: self.commits_in_flight.load(Ordering::Relaxed),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    pub attempts: u64,
    pub committed: u64,
    pub aborted: u64,
    pub ambiguous: u64,
    pub withheld: u64,
    pub messages_sent: u64,
    pub messages_committed: u64,
    pub commits_in_flight: i64,
}

/// Why the producer stopped early.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("{0}")]
    Journal(#[from] JournalError),
    #[error("the transaction client failed: {0}")]
    Txn(#[from] TxnError),
}

/// How the producer ended.
#[derive(Debug, Clone)]
pub struct Report {
    pub stats: StatsSnapshot,
    /// Every number reached a final state (committed, or withheld by the policy).
    pub complete: bool,
    pub detail: String,
    pub elapsed: Duration,
}

/// A unit of work: numbers to carry in one transaction.
#[derive(Debug, Clone)]
struct Chunk {
    numbers: Ranges,
    /// The attempt that carried these numbers before (and whose journal entry names them).
    previous: Option<u64>,
    /// Sequence number of a fresh chunk (for `abort_every`).
    index: u64,
}

struct Queue {
    cursor: u64,
    fresh_index: u64,
    resend: VecDeque<Chunk>,
    in_flight: usize,
    fatal: Option<String>,
}

/// What a worker does next.
enum Job {
    Resend(Chunk),
    Fresh,
    Wait,
    Exit,
}

/// How one attempt ended.
enum End {
    Done,
    Resend(Chunk),
    /// Its sends are done and its commit goes on in a task of its own, which ends the job
    /// (see `job_done`); the worker moves on to the next transaction meanwhile.
    Detached,
}

/// Token bucket: at most `rate` messages per second across the producer.
struct RateLimit {
    every: Duration,
    next: Mutex<std::time::Instant>,
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

/// The payload of number `n`.
pub fn payload(n: u64, size: usize) -> Vec<u8> {
    let mut p = n.to_string().into_bytes();
    if p.len() < size {
        p.resize(size, b' ');
    }
    p
}

/// The next chunk of fresh numbers from `cursor`: up to `size` numbers below `limit`, leaving
/// out `skip`. Returns the ranges and the new cursor.
pub fn take_chunk(cursor: u64, limit: u64, size: u32, skip: &BTreeSet<u64>) -> (Ranges, u64) {
    let mut ranges: Ranges = Vec::new();
    let mut n = cursor;
    let mut taken = 0u32;
    while n < limit && taken < size {
        if skip.contains(&n) {
            n += 1;
            continue;
        }
        match ranges.last_mut() {
            Some((_, e)) if *e == n => *e = n + 1,
            _ => ranges.push((n, n + 1)),
        }
        taken += 1;
        n += 1;
    }
    // Skipped numbers right after the chunk belong to no chunk: move past them too.
    while n < limit && skip.contains(&n) {
        n += 1;
    }
    (ranges, n)
}

fn count(r: &Ranges) -> u64 {
    r.iter().map(|(a, b)| b - a).sum()
}

/// The transactional producer of a run.
pub struct Producer {
    cfg: Config,
    client: Arc<Client>,
    tcs: Arc<Coordinators>,
    producers: Vec<Arc<PartitionProducer>>,
    partition_topics: Vec<String>,
    journal: Journal,
    history: History,
    admin: Admin,
    pub stats: Arc<Stats>,
    queue: Mutex<Queue>,
    changed: Notify,
    next_attempt: AtomicU64,
    rate: Option<RateLimit>,
    /// Commits under way in detached tasks: at most `concurrency`, so at most
    /// 2 x `concurrency` transactions are open (as many sending, as many committing).
    commit_slots: Arc<tokio::sync::Semaphore>,
}

impl Producer {
    /// Connect: coordinators, and one producer per partition (created now, so the first
    /// transaction does not wait for transaction-buffer recovery).
    pub async fn connect(
        cfg: Config,
        service_url: &str,
        admin: Admin,
        journal: Journal,
        history: History,
        first_attempt: u64,
    ) -> Result<Producer, WorkloadError> {
        let client = Client::with_dial(
            service_url,
            cfg.op_timeout,
            cfg.dial.as_ref().map(|d| d.0.clone()),
        );
        let deadline = Instant::now() + cfg.op_timeout.max(Duration::from_secs(30)) * 2;
        let tcs =
            crate::txn::with_retry(deadline, || Coordinators::discover(client.clone())).await?;
        let partition_topics = partition_names(&cfg.topic, cfg.partitions);
        let mut producers = Vec::new();
        for (i, t) in partition_topics.iter().enumerate() {
            let p = Arc::new(PartitionProducer::new(
                client.clone(),
                t,
                &format!("{}-p{i}", cfg.name),
                cfg.transactions,
            ));
            crate::txn::with_retry(deadline, || p.ready()).await?;
            producers.push(p);
        }
        let rate = cfg.rate.map(|r| RateLimit {
            every: Duration::from_secs_f64(1.0 / f64::from(r)),
            next: Mutex::new(std::time::Instant::now()),
        });
        Ok(Producer {
            client,
            tcs: Arc::new(tcs),
            producers,
            partition_topics,
            journal,
            history,
            admin,
            stats: Arc::new(Stats::default()),
            queue: Mutex::new(Queue {
                cursor: 0,
                fresh_index: 0,
                resend: VecDeque::new(),
                in_flight: 0,
                fatal: None,
            }),
            changed: Notify::new(),
            next_attempt: AtomicU64::new(first_attempt.max(1)),
            rate,
            commit_slots: Arc::new(tokio::sync::Semaphore::new(cfg.concurrency.max(1) as usize)),
            cfg,
        })
    }

    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// Continue from a journal left by an interrupted run: settle what its in-flight attempts
    /// did, queue their numbers again where needed, and start fresh numbers at the cursor.
    pub async fn resume(&self) -> Result<(), WorkloadError> {
        let (cursor, entries) = self.journal.load()?;
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
                    self.journal.clear(e.attempt)?;
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
                        )?;
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
                                self.journal.clear(e.attempt)?;
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
                            None => self.withhold(
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
                            )?,
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

    fn requeue(&self, e: &Entry, reason: &str) {
        self.history.record(EventBody::ResendScheduled {
            attempt: e.attempt,
            numbers: e.numbers.clone(),
            reason: reason.to_string(),
        });
        self.queue.lock().expect("lock").resend.push_back(Chunk {
            numbers: e.numbers.clone(),
            previous: Some(e.attempt),
            index: u64::MAX,
        });
    }

    fn withhold(&self, attempt: u64, numbers: &Ranges, reason: &str) -> Result<(), JournalError> {
        self.stats.withheld.fetch_add(1, Ordering::Relaxed);
        self.history.record(EventBody::ResendWithheld {
            attempt,
            numbers: numbers.clone(),
            reason: reason.to_string(),
        });
        self.journal.clear(attempt)
    }

    /// What a transaction left by a crashed run became: abort it now if it is still open.
    /// Committed or aborted only on the coordinator's own words (`classify_leftover_abort`);
    /// anything else is unknown and left to the resend policy.
    async fn settle_leftover(&self, e: &Entry) -> Result<Option<Outcome>, WorkloadError> {
        let deadline = Instant::now() + self.cfg.txn_timeout + Duration::from_secs(30);
        loop {
            let r = self.tcs.end_txn(e.txn, TxnAction::Abort).await;
            if let Err(TxnError::Fatal(m)) = &r {
                return Err(TxnError::Fatal(m.clone()).into());
            }
            let retry = matches!(
                &r,
                Err(TxnError::NotSent(_))
                    | Err(TxnError::Timeout(_))
                    | Err(TxnError::ConnectionLost(_))
                    | Err(TxnError::Protocol(_))
            ) || matches!(&r, Err(e) if e.is_retryable());
            if retry && Instant::now() < deadline {
                tracing::info!(
                    "resume: abort of {} not answered ({:?}); retrying",
                    e.txn,
                    r
                );
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            let (outcome, detail) = crate::txn::coordinator::classify_leftover_abort(&r);
            self.history.record(EventBody::TxnOutcome {
                attempt: e.attempt,
                txn: e.txn,
                outcome: outcome.unwrap_or(Outcome::Ambiguous),
                detail: format!("after the interruption: {detail}"),
            });
            return Ok(outcome);
        }
    }

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
                match self.attempt(c, deadline, false).await {
                    Ok(End::Done | End::Detached) => {}
                    Ok(End::Resend(c)) => next = Some(c),
                    Err(e) => self.fail(e.to_string()),
                }
            }
        }
        let q = self.queue.lock().expect("lock");
        let snapshot = self.stats.snapshot();
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
        self.history.record(EventBody::ProducerFinished {
            committed: snapshot.committed,
            aborted: snapshot.aborted,
            ambiguous: snapshot.ambiguous,
            messages_committed: snapshot.messages_committed,
            complete,
            detail: detail.clone(),
        });
        self.history.flush();
        Report {
            stats: snapshot,
            complete,
            detail,
            elapsed: started.elapsed(),
        }
    }

    /// Stop: workers finish the step they are in and return.
    pub fn stop(&self, reason: &str) {
        self.fail(reason.to_string());
    }

    fn fail(&self, reason: String) {
        let mut q = self.queue.lock().expect("lock");
        if q.fatal.is_none() {
            q.fatal = Some(reason);
        }
        drop(q);
        self.changed.notify_waiters();
    }

    async fn worker(self: Arc<Self>, deadline: Instant) {
        loop {
            if Instant::now() >= deadline {
                return;
            }
            let notified = self.changed.notified();
            // Resends first, then fresh numbers.
            let job = {
                let mut q = self.queue.lock().expect("lock");
                if q.fatal.is_some() {
                    Job::Exit
                } else if let Some(c) = q.resend.pop_front() {
                    q.in_flight += 1;
                    Job::Resend(c)
                } else if q.cursor < self.cfg.messages {
                    q.in_flight += 1;
                    Job::Fresh
                } else if q.in_flight > 0 {
                    Job::Wait
                } else {
                    Job::Exit
                }
            };
            let r = match job {
                Job::Exit => {
                    self.changed.notify_waiters();
                    return;
                }
                Job::Wait => {
                    tokio::select! {
                        _ = notified => {}
                        _ = tokio::time::sleep_until(deadline) => return,
                    }
                    continue;
                }
                Job::Resend(c) => self.attempt(c, deadline, true).await,
                Job::Fresh => self.fresh_attempt(deadline).await,
            };
            if !matches!(r, Ok(End::Detached)) {
                self.job_done(r);
            }
        }
    }

    /// A job ended: its numbers are final, to be resent, or the producer must stop.
    fn job_done(&self, r: Result<End, WorkloadError>) {
        {
            let mut q = self.queue.lock().expect("lock");
            q.in_flight -= 1;
            match r {
                Ok(End::Done | End::Detached) => {}
                Ok(End::Resend(c)) => q.resend.push_back(c),
                Err(e) => {
                    if q.fatal.is_none() {
                        q.fatal = Some(e.to_string());
                    }
                }
            }
        }
        self.changed.notify_waiters();
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
        match self.tcs.new_txn(self.cfg.txn_timeout, deadline).await {
            Ok(t) => Ok(Some(t)),
            Err(TxnError::Fatal(m)) => Err(TxnError::Fatal(m).into()),
            Err(e) => {
                tracing::warn!("NEW_TXN failed until the deadline: {e}");
                Ok(None)
            }
        }
    }

    /// Open a transaction, then take fresh numbers for it.
    async fn fresh_attempt(self: &Arc<Self>, deadline: Instant) -> Result<End, WorkloadError> {
        let attempt = self.next_attempt.fetch_add(1, Ordering::Relaxed);
        let Some(txn) = self.open_txn(attempt, deadline).await? else {
            return Ok(End::Done);
        };
        // Take the numbers and journal them under one lock (see journal.rs).
        let chunk = {
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
                let entry = Entry {
                    attempt,
                    txn,
                    numbers: numbers.clone(),
                    resend_of: None,
                };
                self.journal.record(&entry)?;
                self.journal.set_cursor(next)?;
                q.cursor = next;
                q.fresh_index += 1;
                Some(Chunk {
                    numbers,
                    previous: None,
                    index: q.fresh_index,
                })
            }
        };
        let chunk = chunk.filter(|c| !c.numbers.is_empty());
        let Some(chunk) = chunk else {
            if self.cfg.transactions {
                let _ = self.tcs.end_txn(txn, TxnAction::Abort).await;
            }
            return Ok(End::Done);
        };
        self.carry(attempt, txn, chunk, deadline, true).await
    }

    /// Carry the numbers of an earlier attempt (or the sabotage duplicates) in a new one.
    /// `detach`: commit in a task of its own (see `End::Detached`).
    async fn attempt(
        self: &Arc<Self>,
        chunk: Chunk,
        deadline: Instant,
        detach: bool,
    ) -> Result<End, WorkloadError> {
        let attempt = self.next_attempt.fetch_add(1, Ordering::Relaxed);
        let Some(txn) = self.open_txn(attempt, deadline).await? else {
            return Ok(End::Resend(chunk));
        };
        self.journal.record(&Entry {
            attempt,
            txn,
            numbers: chunk.numbers.clone(),
            resend_of: chunk.previous,
        })?;
        if let Some(prev) = chunk.previous {
            self.journal.clear(prev)?;
        }
        self.carry(attempt, txn, chunk, deadline, detach).await
    }

    /// What `carry` returns to send an attempt's numbers again, recorded.
    fn again<'a>(&'a self, attempt: u64, chunk: &'a Chunk) -> impl Fn(String) -> End + 'a {
        move |reason: String| {
            self.history.record(EventBody::ResendScheduled {
                attempt,
                numbers: chunk.numbers.clone(),
                reason,
            });
            End::Resend(Chunk {
                numbers: chunk.numbers.clone(),
                previous: Some(attempt),
                index: u64::MAX,
            })
        }
    }

    /// Send the chunk in `txn` and commit it; decide what becomes of its numbers. `detach`:
    /// once every send has its receipt, commit in a task of its own and return
    /// `End::Detached`, so the worker can open its next transaction meanwhile.
    async fn carry(
        self: &Arc<Self>,
        attempt: u64,
        txn: TxnId,
        chunk: Chunk,
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

        // Partitions first, then the messages.
        let parts: BTreeSet<u32> = chunk
            .numbers
            .iter()
            .flat_map(|(a, b)| (*a..*b).take(self.cfg.partitions as usize))
            .map(|n| (n % u64::from(self.cfg.partitions)) as u32)
            .collect();
        let names: Vec<String> = parts
            .iter()
            .map(|p| self.partition_topics[*p as usize].clone())
            .collect();
        let in_txn = if self.cfg.transactions {
            Some(txn)
        } else {
            None
        };
        if !self.cfg.transactions {
            // Nothing to register.
        } else if let Err(e) = self.tcs.add_partitions(txn, &names, op_deadline).await {
            if let TxnError::Fatal(m) = e {
                return Err(TxnError::Fatal(m).into());
            }
            self.abort(attempt, txn, format!("ADD_PARTITION_TO_TXN failed: {e}"))
                .await;
            return Ok(again(format!("ADD_PARTITION_TO_TXN failed: {e}")));
        }
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
                let producer = self.producers[*p].clone();
                let data: Vec<Vec<u8>> = group
                    .iter()
                    .map(|n| payload(*n, self.cfg.message_size))
                    .collect();
                let timeout = self.cfg.op_timeout;
                let count = group.len();
                async move {
                    if let Some(r) = &self.rate {
                        for _ in 0..count {
                            r.take().await;
                        }
                    }
                    (*p, count, producer.send_batch(in_txn, data, timeout).await)
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
        self.stats
            .messages_sent
            .fetch_add(receipts.len() as u64, Ordering::Relaxed);
        if let Some(e) = failure {
            if let TxnError::Fatal(m) = e {
                return Err(TxnError::Fatal(m).into());
            }
            let why = format!(
                "a SEND failed ({e}); {} of {} receipts",
                receipts.len(),
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
                return Ok(again(why));
            }
            self.abort(attempt, txn, why.clone()).await;
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
            self.journal.clear(attempt)?;
            self.stats.committed.fetch_add(1, Ordering::Relaxed);
            self.stats
                .messages_committed
                .fetch_add(receipts.len() as u64, Ordering::Relaxed);
            self.history.record(EventBody::TxnOutcome {
                attempt,
                txn,
                outcome: Outcome::Committed,
                detail: "no transaction: every send acknowledged".into(),
            });
            return Ok(End::Done);
        }
        if !detach {
            return self
                .commit(attempt, txn, &chunk, &receipts, deadline, again)
                .await;
        }
        drop(again);
        let slot = self
            .commit_slots
            .clone()
            .acquire_owned()
            .await
            .expect("the commit slots are never closed");
        let me = Arc::clone(self);
        tokio::spawn(async move {
            let again = me.again(attempt, &chunk);
            let r = me
                .commit(attempt, txn, &chunk, &receipts, deadline, again)
                .await;
            drop(slot);
            me.job_done(r);
        });
        Ok(End::Detached)
    }

    /// Abort an attempt that never asked to commit: definitively not committed, whatever
    /// becomes of the ABORT itself (without a commit the coordinator's timeout ends it). The
    /// ABORT is sent in the background so a dead coordinator does not hold the worker up.
    async fn abort(&self, attempt: u64, txn: TxnId, reason: String) {
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
        let tcs = self.tcs.clone();
        let history = self.history.clone();
        tokio::spawn(async move {
            if let Err(e) = tcs.end_txn(txn, TxnAction::Abort).await {
                history.record(EventBody::Note {
                    message: format!("the abort of attempt {attempt} {txn} was not confirmed ({e}); the coordinator's timeout ends it"),
                });
            }
        });
    }

    /// Commit the attempt, asking again as the resend policy says (`policy::next`), and decide
    /// what becomes of its numbers.
    async fn commit(
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
        let patience = self.cfg.txn_timeout + Duration::from_secs(30);
        let first = Instant::now();
        let mut delay = Duration::from_millis(100);
        loop {
            let try_no = state.tries + 1;
            self.history.record(EventBody::CommitRequested {
                attempt,
                txn,
                try_no,
            });
            self.stats.commits_in_flight.fetch_add(1, Ordering::SeqCst);
            let t = Instant::now();
            let r = self.tcs.end_txn(txn, TxnAction::Commit).await;
            self.stats.commits_in_flight.fetch_sub(1, Ordering::SeqCst);
            let may_retry = first.elapsed() < patience && Instant::now() < deadline;
            let was_ambiguous = state.ever_ambiguous;
            let mut step =
                policy::next(&mut state, self.cfg.resend, classify_commit(&r), may_retry);
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
                    if !after_ambiguity {
                        self.stats
                            .commit_latency_us
                            .fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
                        self.stats.commit_latency_n.fetch_add(1, Ordering::Relaxed);
                    }
                    self.journal.clear(attempt)?;
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
                    return Ok(End::Done);
                }
                Step::Resend {
                    evidence,
                    after_ambiguity,
                } => {
                    if after_ambiguity {
                        self.history.record(EventBody::TxnResolved {
                            attempt,
                            txn,
                            resolved: Outcome::Aborted,
                            how: format!("commit try {try_no}: {evidence}"),
                        });
                    } else {
                        self.stats.aborted.fetch_add(1, Ordering::Relaxed);
                        self.history.record(EventBody::TxnOutcome {
                            attempt,
                            txn,
                            outcome: Outcome::Aborted,
                            detail: evidence.clone(),
                        });
                    }
                    return Ok(again(format!("the commit did not apply: {evidence}")));
                }
                Step::ResendAmbiguous { why } => return Ok(again(why)),
                Step::RetryCommit => {
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
                Step::Withhold { why } => {
                    self.withhold(attempt, &chunk.numbers, &why)?;
                    return Ok(End::Done);
                }
                Step::Fatal(m) => return Err(TxnError::Fatal(m).into()),
                Step::Verify { .. } => unreachable!("after_read never asks to verify again"),
            }
        }
    }

    /// The `verify` policy's evidence: once the coordinator has let go of the transaction
    /// (its metadata answers 404 while its coordinator is Ready) and the partitions'
    /// transaction buffers have moved past its messages, read them back. Anything short of
    /// that is `Unknown`, with what held it.
    async fn read_evidence(&self, txn: TxnId, receipts: &[(usize, MessageIdData)]) -> ReadEvidence {
        let wait_until = Instant::now() + self.cfg.txn_timeout + Duration::from_secs(60);
        // 1. The coordinator no longer holds it (committed or aborted, and finished).
        let mut delay = Duration::from_millis(100);
        loop {
            let held = match self.admin.transaction_metadata(txn.most, txn.least).await {
                Ok(Some(m)) => format!("the coordinator still holds it ({})", m.status),
                Ok(None) => match self.admin.coordinator_stats().await {
                    // A 404 means "ended" only from a coordinator that is loaded.
                    Ok(stats) => match stats.get(&(txn.most as u32)) {
                        Some(c) if c.state == "Ready" => break,
                        Some(c) => format!(
                            "its metadata answered 404 while coordinator {} is {} (not loaded: unknown)",
                            txn.most, c.state
                        ),
                        None => format!(
                            "its metadata answered 404 and coordinatorStats does not list coordinator {}",
                            txn.most
                        ),
                    },
                    Err(e) => format!("its metadata answered 404 and coordinatorStats failed ({e})"),
                },
                Err(e) => format!("the admin API did not answer ({e})"),
            };
            if Instant::now() >= wait_until {
                return ReadEvidence::Unknown(held);
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(1));
        }
        // 2. Each partition's buffer past the transaction's last message, then read between
        //    its first and last message.
        let mut by_partition: BTreeMap<usize, (MessageIdData, MessageIdData)> = BTreeMap::new();
        for (p, id) in receipts {
            let e = by_partition.entry(*p).or_insert((id.clone(), id.clone()));
            if (id.ledger_id, id.entry_id) < (e.0.ledger_id, e.0.entry_id) {
                e.0 = id.clone();
            }
            if (id.ledger_id, id.entry_id) > (e.1.ledger_id, e.1.entry_id) {
                e.1 = id.clone();
            }
        }
        let targets: Vec<(String, Until)> = by_partition
            .iter()
            .map(|(p, (_, hi))| {
                (
                    self.partition_topics[*p].clone(),
                    Until::Past((hi.ledger_id, hi.entry_id)),
                )
            })
            .collect();
        let cap = wait_until.saturating_duration_since(Instant::now());
        if let Err(why) = crate::readback::wait_readable(&self.admin, &targets, cap).await {
            return ReadEvidence::Unknown(why);
        }
        let mut found = 0u64;
        for (p, (lo, hi)) in &by_partition {
            let topic = &self.partition_topics[*p];
            let opts = ReadOptions {
                start: Some(lo.clone()),
                stop: Some(hi.clone()),
                idle_timeout: Duration::from_secs(30),
                permits: 1000,
            };
            let r = read_partition(&self.client, topic, *p as i32, &opts, |_, md, _| {
                if md.txnid_most_bits == Some(txn.most) && md.txnid_least_bits == Some(txn.least) {
                    found += 1;
                }
                true
            })
            .await;
            match r {
                Ok(stats) if stats.incomplete.is_none() => {}
                Ok(stats) => {
                    return ReadEvidence::Unknown(format!(
                        "read-back incomplete: {}",
                        stats.incomplete.unwrap_or_default()
                    ))
                }
                Err(e) => return ReadEvidence::Unknown(format!("read-back failed: {e}")),
            }
        }
        ReadEvidence::Read {
            found,
            total: receipts.len() as u64,
        }
    }

    /// After a resume, which leftover transactions have messages in the topic (a full read,
    /// once no transaction is open on any partition). Err: why that could not be known.
    async fn visible_in_topic(&self, entries: &[Entry]) -> Result<BTreeMap<TxnId, u64>, String> {
        let wanted: BTreeSet<TxnId> = entries.iter().map(|e| e.txn).collect();
        let mut found: BTreeMap<TxnId, u64> = wanted.iter().map(|t| (*t, 0)).collect();
        let targets: Vec<(String, Until)> = self
            .partition_topics
            .iter()
            .map(|t| (t.clone(), Until::NothingOpen))
            .collect();
        let cap = self.cfg.txn_timeout + Duration::from_secs(60);
        crate::readback::wait_readable(&self.admin, &targets, cap).await?;
        for (p, topic) in self.partition_topics.iter().enumerate() {
            let opts = ReadOptions {
                idle_timeout: Duration::from_secs(30),
                ..ReadOptions::default()
            };
            let r = read_partition(&self.client, topic, p as i32, &opts, |_, md, _| {
                if let (Some(m), Some(l)) = (md.txnid_most_bits, md.txnid_least_bits) {
                    if let Some(c) = found.get_mut(&TxnId { most: m, least: l }) {
                        *c += 1;
                    }
                }
                true
            })
            .await;
            match r {
                Ok(s) if s.incomplete.is_none() => {}
                Ok(s) => {
                    return Err(format!(
                        "the read of {topic} stopped short: {}",
                        s.incomplete.unwrap_or_default()
                    ))
                }
                Err(e) => return Err(format!("the read of {topic} failed: {e}")),
            }
        }
        Ok(found)
    }

    /// Close connections.
    pub async fn close(&self) {
        self.client.close_all().await;
    }
}

#[cfg(test)]
mod tests;
