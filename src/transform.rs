//! Consume-transform-produce (`kind: transform`, issue #13): `consumers` workers, each with a
//! consumer per partition of the input topic on one subscription, take up to `txn_size`
//! inputs, open a transaction, register the subscription and the output partitions, publish
//! `f(n)` for each input to the checked topic, acknowledge the inputs in the same transaction
//! and commit.
//!
//! The commit is the only step a worker does not wait for: once every SEND has its receipt and
//! every ACK its answer, it hands the attempt to a task of its own (END_TXN, the outcome's
//! bookkeeping, the hand-back of the inputs) and gathers the next batch, with up to
//! `COMMITS_IN_FLIGHT` (4) commits under way per worker, as the producer does. The commit task
//! hands inputs back through the consumer that held them (a handle, `ConsumerHandle`); when
//! that consumer is gone meanwhile it asks nothing, since the broker took back what it held.
//! A worker leaves only after its commit tasks have ended, before it closes its consumers.
//!
//! What becomes of an attempt that does not commit: a failed NEW_TXN, registration, SEND or
//! ACK (or `abort_every`) aborts it (END_TXN ABORT, awaited) and hands its inputs back to the
//! subscription (REDELIVER_UNACKNOWLEDGED_MESSAGES), so they are processed again. A commit
//! whose answer is lost is asked again (the `retry-commit` policy of core `policy`); if it
//! stays unknown, nothing is resent: the inputs are handed back, and the broker's subscription
//! decides (committed: they are acknowledged and never come again; aborted: they come again).
//! That is what the checker verifies: the output holds `f([0, N))` exactly once and the
//! subscription's backlog is 0.
//!
//! The run is complete when every input's commit was confirmed, or, after an unknown outcome,
//! when no batch is in hand (gathered, in its transaction, or in its commit task) and the
//! subscription's backlog is 0 on every partition (asked over the admin API). The parts:
//! `fill` (the input topic), `worker` (a worker's loop, one transaction up to its commit, the
//! hand-off), `end` (abort, hand-back, the commit task), `probe` (the conflict probe and the
//! backlog).

mod end;
mod fill;
mod gather;
mod probe;
pub mod restart;
mod resume;
mod source;
mod worker;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::admin::Admin;
use crate::history::{EventBody, History};
use crate::journal::Journal;
use crate::scenario::{ConflictProbe, SubscriptionType, TransformFunction};
use crate::txn::coordinator::Coordinators;
use crate::txn::producer::PartitionProducer;
use crate::txn::{partition_names, Client, Producers, TxnError};
use crate::workload::{Report, Stats};

pub use fill::{fill_input, fill_or_resume, INPUT_FILLED};
pub use probe::{entry_numbers, held_entries, subscription_backlog, wait_backlog_zero};

/// Why a transform run could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum TransformError {
    #[error("the transaction client failed: {0}")]
    Txn(#[from] TxnError),
    #[error("filling the input topic {topic}: {detail}")]
    Fill { topic: String, detail: String },
    #[error("the admin API failed: {0}")]
    Admin(#[from] crate::admin::AdminError),
    #[error("the journal failed: {0}")]
    Journal(#[from] crate::journal::JournalError),
    #[error("the history failed: {0}")]
    History(#[from] crate::history::HistoryError),
    #[error("{0}")]
    Driver(String),
}

/// What the transform is to do.
#[derive(Debug, Clone)]
pub struct Config {
    /// The output topic (the one the checker reads).
    pub topic: String,
    /// The input topic (`<topic>-in`).
    pub input: String,
    pub partitions: u32,
    pub messages: u64,
    pub txn_size: u32,
    pub batch_size: u32,
    pub consumers: u32,
    pub sub_type: SubscriptionType,
    pub function: TransformFunction,
    /// What the conflict probe's transaction does after its ACK (`workload.conflict_probe`).
    pub conflict_probe: ConflictProbe,
    pub message_size: usize,
    pub abort_every: Option<u32>,
    pub txn_timeout: Duration,
    pub op_timeout: Duration,
    pub deadline: Duration,
    /// Prefix of producer and consumer names.
    pub name: String,
    /// Where the connections go (a `reply_loss` fault's proxy); `None`: straight to the
    /// brokers.
    pub dial: Option<crate::workload::Dialer>,
    /// The official client the transform goes through (docs/drivers.md): its consumers,
    /// acknowledgements, sends and transactions; `None`: the harness's own client.
    pub driver: Option<crate::workload::DriverHandle>,
    /// The service URL the driver's client is given instead of the cluster's (a `reply_loss`
    /// fault's proxy, which routes the brokers its lookups name); `None`: the cluster's.
    pub driver_service_url: Option<String>,
}

/// The consumer side's counters (the transaction counts are `Stats`'s).
#[derive(Debug, Default)]
pub struct Counts {
    /// REDELIVER_UNACKNOWLEDGED_MESSAGES asked after an attempt that did not commit, and the
    /// inputs handed back so.
    pub redeliveries: AtomicU64,
    pub redelivered_inputs: AtomicU64,
    /// Inputs received that had been delivered before (redelivery count above 0).
    pub received_again: AtomicU64,
    /// Copies of inputs this worker had already seen committed, dropped before processing.
    pub stale_copies: AtomicU64,
    pub probes: AtomicU64,
    pub probes_refused: AtomicU64,
    pub probes_accepted: AtomicU64,
    pub probes_unanswered: AtomicU64,
    pub reconnects: AtomicU64,
    /// An official client's output partitions registered with a transaction ahead of its
    /// sends (the driver's `register`, answered).
    pub registered_ahead: AtomicU64,
    /// An official client's input subscription registered with a transaction ahead of its
    /// ACKs (the driver's `register` with `subscriptions`, answered).
    pub inputs_registered_ahead: AtomicU64,
    /// `ack` requests that carried all of an attempt's inputs of one partition, each id
    /// answered on its own (a driver offering `ack_each`).
    pub ack_requests_grouped: AtomicU64,
}

/// How often the conflict probe runs: on attempt 1 and every `PROBE_EVERY`th, at most
/// `PROBE_MAX` times per run.
pub const PROBE_EVERY: u64 = 50;
pub const PROBE_MAX: u32 = 10;

/// How a transform run was seen to be complete; only the second asked the subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Completion {
    /// Every input's commit confirmed by the client.
    AllCommitted,
    /// No worker holds an input and the admin API gave a backlog of 0 on every partition.
    IdleBacklogZero,
}

impl Completion {
    fn seen(self) -> &'static str {
        match self {
            Completion::AllCommitted => "every input's commit confirmed",
            Completion::IdleBacklogZero => {
                "no worker holds an input and the subscription's backlog is 0 on every partition"
            }
        }
    }
}

/// The transform of a run.
pub struct Transformer {
    cfg: Config,
    /// The official client's driver; with one, `client` and `tcs` serve only a resume's
    /// aborts of journaled transactions, and `producers` is empty.
    driver: Option<Arc<crate::drivers::Driver>>,
    client: Arc<Client>,
    tcs: Arc<Coordinators>,
    producers: Vec<Arc<PartitionProducer>>,
    output_partitions: Vec<String>,
    input_partitions: Vec<String>,
    history: History,
    admin: Admin,
    pub stats: Arc<Stats>,
    pub counts: Arc<Counts>,
    next_attempt: AtomicU64,
    /// Why the run stops early (a stall, a signal, a fatal error); `None` while it goes on.
    stopped: Mutex<Option<String>>,
    /// The run is over (complete or stopped): workers leave.
    over: std::sync::atomic::AtomicBool,
    changed: Notify,
    /// Inputs whose commit was confirmed (distinct).
    committed: Mutex<BTreeSet<u64>>,
    /// The messages of those inputs: a copy that comes again (a redelivery asked while it was
    /// on its way) is dropped, not processed again.
    done: Mutex<std::collections::HashSet<source::Key>>,
    /// In-flight transactions (#19780), as the producer's: an attempt is journaled (synced
    /// beside its SENDs and ACKs, before its commit) and cleared once its outcome is definitive; `run --resume` settles the rest.
    journal: Journal,
    /// Batches in hand, from a batch's first input received to the end of its transaction
    /// (for one handed off, the end of its commit task, hand-back included).
    busy: AtomicU64,
    /// Bumped on every input received: the idle check's generation.
    activity: AtomicU64,
    /// Bumped to make every worker hand back all it holds unacknowledged.
    nudge: AtomicU64,
    probes_left: AtomicU32,
    /// `consumer_restart` faults: the nemesis's requests and the workers' closed consumers.
    restarts: Arc<restart::Restarts>,
}

impl Transformer {
    /// Connect the coordinators and one producer per output partition.
    pub async fn connect(
        cfg: Config,
        service_url: &str,
        admin: Admin,
        history: History,
        journal: Journal,
        first_attempt: u64,
    ) -> Result<Transformer, TransformError> {
        let Producers {
            client,
            tcs,
            topics: output_partitions,
            producers,
        } = Producers::connect(
            service_url,
            cfg.op_timeout,
            cfg.dial.as_ref().map(|d| d.0.clone()),
            &cfg.topic,
            cfg.partitions,
            &format!("{}-out", cfg.name),
            if cfg.driver.is_some() {
                crate::txn::ProducerMode::None
            } else {
                crate::txn::ProducerMode::Transactional
            },
        )
        .await?;
        let driver = cfg.driver.as_ref().map(|d| d.0.clone());
        if let Some(d) = &driver {
            d.connect(
                &crate::drivers::ConnectArgs {
                    service_url: cfg.driver_service_url.as_deref().unwrap_or(service_url),
                    topic: &cfg.topic,
                    partitions: cfg.partitions,
                    op_timeout: cfg.op_timeout,
                    batch_size: cfg.batch_size,
                    message_size: cfg.message_size,
                    transactions: true,
                    producer_name: &format!("{}-out", cfg.name),
                },
                cfg.op_timeout * 3 + Duration::from_secs(30),
            )
            .await
            .map_err(|a| {
                TransformError::Driver(format!("{} client: connect failed: {a}", d.kind))
            })?;
            history.record(EventBody::Note {
                message: format!("transform through the {} client: the conflict probe is the own client's only (it registers the subscription with ADD_SUBSCRIPTION_TO_TXN before its ACK) and is not run", d.kind),
            });
        }
        Ok(Transformer {
            driver,
            input_partitions: partition_names(&cfg.input, cfg.partitions),
            client,
            tcs: Arc::new(tcs),
            producers,
            output_partitions,
            history,
            admin,
            stats: Arc::new(Stats::default()),
            counts: Arc::new(Counts::default()),
            next_attempt: AtomicU64::new(first_attempt),
            stopped: Mutex::new(None),
            over: std::sync::atomic::AtomicBool::new(false),
            changed: Notify::new(),
            committed: Mutex::new(BTreeSet::new()),
            done: Mutex::new(std::collections::HashSet::new()),
            journal,
            busy: AtomicU64::new(0),
            activity: AtomicU64::new(0),
            nudge: AtomicU64::new(0),
            probes_left: AtomicU32::new(PROBE_MAX),
            restarts: Arc::new(restart::Restarts::new(cfg.consumers)),
            cfg,
        })
    }

    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// The journal's syncs, records and compactions so far.
    pub fn journal_counters(&self) -> crate::journal::Counters {
        self.journal.counters()
    }

    /// Where `consumer_restart` faults ask for a consumer to close.
    pub fn restarts(&self) -> Arc<restart::Restarts> {
        self.restarts.clone()
    }

    /// Stop early (a stall, a signal): workers finish the transaction in hand, wait for their
    /// commit tasks and leave.
    pub fn stop(&self, reason: &str) {
        let mut s = self.stopped.lock().expect("lock");
        if s.is_none() {
            *s = Some(reason.to_string());
        }
        drop(s);
        self.over.store(true, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    fn is_over(&self) -> bool {
        self.over.load(Ordering::SeqCst)
    }

    /// Close connections.
    pub async fn close(&self) {
        if let Some(d) = &self.driver {
            d.close(Duration::from_secs(10)).await;
        }
        self.client.close_all().await;
    }

    /// Transform until every input is final, the deadline passes, or a stop.
    pub async fn run(self: &Arc<Self>) -> Report {
        let started = Instant::now();
        let deadline = started + self.cfg.deadline;
        let mut workers = Vec::new();
        for id in 0..self.cfg.consumers.max(1) {
            let me = self.clone();
            workers.push(tokio::spawn(async move { me.worker(id, deadline).await }));
        }
        let how = self.watch(deadline).await;
        let complete = how.is_some();
        self.over.store(true, Ordering::SeqCst);
        self.restarts.shut();
        self.changed.notify_waiters();
        for w in workers {
            if let Err(e) = w.await {
                self.stop(&format!("a transform task panicked: {e}"));
            }
        }
        let stopped = self.stopped.lock().expect("lock").clone();
        let complete = complete && stopped.is_none();
        let detail = match (&stopped, how) {
            (Some(s), _) => format!("stopped: {s}"),
            (None, Some(how)) => format!("every input reached a final state: {}", how.seen()),
            (None, None) => format!(
                "the deadline of {}s passed with {} of {} inputs confirmed committed",
                self.cfg.deadline.as_secs(),
                self.committed.lock().expect("lock").len(),
                self.cfg.messages
            ),
        };
        Report::finish(
            &self.history,
            &self.stats,
            complete,
            detail,
            started.elapsed(),
        )
    }

    /// Until the run is complete (how it was seen to be) or over otherwise (None): every input
    /// confirmed committed, or no batch in hand (none gathered, none in a commit task) and the
    /// backlog 0 on every partition. Only the second asks the subscription: the backlog after
    /// a complete run is the checker's to judge (`wait_backlog_zero` after the read-back).
    async fn watch(&self, deadline: Instant) -> Option<Completion> {
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        let mut idle_since: Option<(Instant, u64)> = None;
        let mut nonzero_checks = 0u32;
        loop {
            tick.tick().await;
            if self.is_over() || Instant::now() >= deadline {
                return None;
            }
            if self.committed.lock().expect("lock").len() as u64 >= self.cfg.messages {
                return Some(Completion::AllCommitted);
            }
            let gen = self.activity.load(Ordering::SeqCst);
            if self.busy.load(Ordering::SeqCst) > 0 {
                idle_since = None;
                continue;
            }
            match idle_since {
                Some((since, g)) if g == gen => {
                    if since.elapsed() < Duration::from_secs(2) {
                        continue;
                    }
                }
                _ => {
                    idle_since = Some((Instant::now(), gen));
                    continue;
                }
            }
            // Idle for 2 s: ask the subscription.
            let backlog = subscription_backlog(&self.admin, &self.input_partitions).await;
            let zero = backlog.iter().all(|b| b.backlog == Some(0));
            if zero
                && self.busy.load(Ordering::SeqCst) == 0
                && self.activity.load(Ordering::SeqCst) == gen
            {
                self.history.record(EventBody::Note {
                    message: format!(
                        "transform: no worker holds an input and the subscription's backlog is 0 on every partition ({} of {} inputs confirmed committed)",
                        self.committed.lock().expect("lock").len(),
                        self.cfg.messages
                    ),
                });
                return Some(Completion::IdleBacklogZero);
            }
            // Inputs left with a worker that holds none (an abort the broker did not follow
            // with a redelivery): every worker hands back what it holds, every 5 checks.
            nonzero_checks += 1;
            if nonzero_checks % 5 == 0 {
                self.history.record(EventBody::Note {
                    message: format!(
                        "transform: idle with a backlog ({}); every consumer asks for its unacknowledged messages again",
                        backlog
                            .iter()
                            .map(|b| format!("{}: {:?}", b.partition, b.backlog))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
                self.nudge.fetch_add(1, Ordering::SeqCst);
            }
            idle_since = None;
        }
    }
}

#[cfg(test)]
mod tests;
