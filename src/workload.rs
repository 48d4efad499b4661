//! The workload: the numbers 0..N in transactions of `txn_size`, up to `concurrency` open at
//! once, journaled before they are sent, and the resend policy that decides what happens to
//! the numbers of a transaction that aborted or whose commit is ambiguous.
//!
//! Number n goes to partition `n mod partitions`. Its payload is n in decimal ASCII, padded
//! with spaces to `message_size` bytes.
//!
//! The parts: `queue` (the numbers to send and the jobs of the workers), `worker` (the
//! workers and the producer's run), `send` (one attempt's sends), `commit` (its commit under
//! the resend policy), `resend` (numbers sent again or withheld), `verify` (the read-backs of
//! the `verify` policy) and `resume` (continuing an interrupted run's journal).

mod commit;
mod queue;
mod resend;
mod resume;
mod send;
mod verify;
mod worker;

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use crate::admin::Admin;
use crate::drivers::{ConnectArgs, Driver};
use crate::history::History;
use crate::journal::{Journal, JournalError};
use crate::scenario::ResendPolicy;
use crate::txn::coordinator::Coordinators;
use crate::txn::producer::PartitionProducer;
use crate::txn::{Client, ProducerMode, Producers, TxnError};

pub use queue::take_chunk;
pub use send::payload;

use queue::Queue;
use send::RateLimit;

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
    /// Commits one worker's attempts may have under way at once, their sends all answered (a
    /// commit does not hold back the next transaction's sends). With 1, `concurrency` is the
    /// number of commits under way, so with `concurrency: 1` commits are asked one at a time
    /// and a lost connection leaves at most one unknown (the reply-loss tests rely on it).
    pub commits_in_flight: u32,
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
    /// The official client the attempts go through (docs/drivers.md); `None`: the harness's
    /// own client.
    pub driver: Option<DriverHandle>,
    /// The service URL the driver's client is given: a `reply_loss` proxy's listener, which
    /// routes the brokers its lookups name; `None`: the cluster's own.
    pub driver_service_url: Option<String>,
}

/// A running driver in the producer's configuration.
#[derive(Clone)]
pub struct DriverHandle(pub Arc<Driver>);

impl std::fmt::Debug for DriverHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DriverHandle({})", self.0.kind)
    }
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
    /// END_TXN COMMIT requests sent so far (tries included): tells a commit sent after a
    /// moment from one still hanging since before it (`while: committing`).
    pub commits_requested: AtomicU64,
    /// Sum of commit round-trip times in microseconds, and how many.
    pub commit_latency_us: AtomicU64,
    pub commit_latency_n: AtomicU64,
}

impl Stats {
    /// A commit answered `committed` after `elapsed` from its first request. Not counted when
    /// an ambiguity came first (the answer is then a resolution, not a round trip).
    pub fn commit_answered(&self, elapsed: Duration, after_ambiguity: bool) {
        if !after_ambiguity {
            self.commit_latency_us
                .fetch_add(elapsed.as_micros() as u64, Ordering::Relaxed);
            self.commit_latency_n.fetch_add(1, Ordering::Relaxed);
        }
    }

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
    /// The official client's driver cannot go on (it ended, or its client cannot connect).
    #[error("{0}")]
    Driver(String),
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

impl Report {
    /// The end of a run's workload (the producer's or the transform's): `producer_finished`
    /// recorded with the counts of `stats` and the history flushed, then the report.
    pub fn finish(
        history: &History,
        stats: &Stats,
        complete: bool,
        detail: String,
        elapsed: Duration,
    ) -> Report {
        let snapshot = stats.snapshot();
        history.record(crate::history::EventBody::ProducerFinished {
            committed: snapshot.committed,
            aborted: snapshot.aborted,
            ambiguous: snapshot.ambiguous,
            messages_committed: snapshot.messages_committed,
            complete,
            detail: detail.clone(),
        });
        history.flush();
        Report {
            stats: snapshot,
            complete,
            detail,
            elapsed,
        }
    }
}

/// Without transactions: how many chunks a worker may have sent and not yet seen acknowledged
/// (the sliding window that replaces stop-and-wait per chunk).
pub const UNACKED_CHUNKS: usize = 4;

/// The transactional producer of a run.
pub struct Producer {
    cfg: Config,
    /// The official client the attempts go through; `None`: the own client (`tcs`,
    /// `producers`). With a driver `client` and `tcs` serve only the harness's own reads and a
    /// resume's aborts of journaled transactions.
    driver: Option<Arc<Driver>>,
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
    /// Attempts whose messages are sent and not all answered yet, in detached tasks: with
    /// transactions at most `concurrency`; without, `UNACKED_CHUNKS` per worker (a sliding
    /// window).
    send_slots: Arc<tokio::sync::Semaphore>,
    /// Attempts whose every send is answered and whose commit is under way: at most
    /// `commits_in_flight` x `concurrency`. With transactions, at most `concurrency` (being
    /// registered) + as many spares + `send_slots` + `commit_slots` transactions are open
    /// (3 + `commits_in_flight` per worker).
    commit_slots: Arc<tokio::sync::Semaphore>,
    /// When each open transaction's NEW_TXN was first asked for (an upper bound on its age at
    /// the coordinator), taken by its commit or abort: `policy::not_found_with_age`.
    opened: Mutex<std::collections::HashMap<crate::history::TxnId, std::time::Instant>>,
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
        let Producers {
            client,
            tcs,
            topics: partition_topics,
            producers,
        } = Producers::connect(
            service_url,
            cfg.op_timeout,
            cfg.dial.as_ref().map(|d| d.0.clone()),
            &cfg.topic,
            cfg.partitions,
            &cfg.name,
            match (&cfg.driver, cfg.transactions) {
                (Some(_), _) => ProducerMode::None,
                (None, true) => ProducerMode::Transactional,
                (None, false) => ProducerMode::Plain,
            },
        )
        .await?;
        let driver = cfg.driver.as_ref().map(|d| d.0.clone());
        if let Some(d) = &driver {
            d.connect(
                &ConnectArgs {
                    service_url: cfg.driver_service_url.as_deref().unwrap_or(service_url),
                    topic: &cfg.topic,
                    partitions: cfg.partitions,
                    op_timeout: cfg.op_timeout,
                    batch_size: cfg.batch_size,
                    message_size: cfg.message_size,
                    transactions: cfg.transactions,
                    producer_name: &cfg.name,
                },
                cfg.op_timeout * 3 + Duration::from_secs(30),
            )
            .await
            .map_err(|a| {
                WorkloadError::Driver(format!("{} client: connect failed: {a}", d.kind))
            })?;
        }
        let rate = cfg.rate.map(|r| RateLimit {
            every: Duration::from_secs_f64(1.0 / f64::from(r)),
            next: Mutex::new(std::time::Instant::now()),
        });
        Ok(Producer {
            driver,
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
            send_slots: Arc::new(tokio::sync::Semaphore::new(
                cfg.concurrency.max(1) as usize * if cfg.transactions { 1 } else { UNACKED_CHUNKS },
            )),
            commit_slots: Arc::new(tokio::sync::Semaphore::new(
                cfg.concurrency.max(1) as usize * cfg.commits_in_flight.max(1) as usize,
            )),
            opened: Mutex::new(std::collections::HashMap::new()),
            cfg,
        })
    }

    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// The journal writer's syncs and records so far (group commit: records per sync).
    pub fn journal_counters(&self) -> crate::journal::Counters {
        self.journal.counters()
    }

    /// Close connections.
    pub async fn close(&self) {
        if let Some(d) = &self.driver {
            d.close(Duration::from_secs(10)).await;
        }
        self.client.close_all().await;
    }
}

#[cfg(test)]
mod tests;
