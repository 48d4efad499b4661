//! The validated scenario: the domain types a run is made from (cluster, workload, faults,
//! their targets and schedules, sabotage, expectations), every value checked and every
//! default filled in.

use std::fmt;
use std::time::Duration;

use super::file::ScenarioFile;
use super::kinds::{Expected, Guard, Jvm, Pins, ReplyKind, ResendPolicy, RestartMode, Topology};

/// The Pulsar version a scenario runs when it names none (see `versions`).
pub const PULSAR_VERSION: &str = crate::versions::DEFAULT;

/// A validated scenario: every value checked, every default filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: Option<String>,
    pub seed: Option<u64>,
    pub cluster: ClusterSpec,
    pub workload: Workload,
    pub faults: Vec<FaultSpec>,
    pub sabotage: Sabotage,
    /// Pulsar version -> the outcomes expected on it (empty: no expectation).
    pub expect: std::collections::BTreeMap<String, Vec<Expected>>,
    /// The remedies to try, in order, when the read-back is held (empty: none).
    pub remedies: Vec<crate::stuck::Remedy>,
    /// The fault adapter file for a cluster the harness did not start (`adapter:`, relative
    /// to the scenario file; `run --adapter` overrides it).
    pub adapter: Option<String>,
    /// Destructive faults (restarts, pauses, packet loss) may touch a cluster the harness did
    /// not start (`allow_destructive: true`, or `run --allow-destructive`).
    pub allow_destructive: bool,
    /// The scenario as resolved (defaults filled in), in the file's own shape: written to the
    /// run directory as `scenario.yaml`.
    pub resolved: ScenarioFile,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ClusterSpec {
    /// Start a cluster in Docker.
    Docker(DockerCluster),
    /// Use a cluster that is already running. The counts are what the plan draws targets
    /// from (`any-broker` among `brokers`); a run checks that discovery finds at least that
    /// many.
    External {
        service_url: String,
        admin_url: String,
        brokers: u32,
        bookies: u32,
        coordinators: u32,
    },
}

impl ClusterSpec {
    /// How many brokers, bookies and transaction coordinators the plan draws from.
    pub fn counts(&self) -> (u32, u32, u32) {
        match self {
            ClusterSpec::Docker(d) => (d.brokers, d.bookies, d.coordinators),
            ClusterSpec::External {
                brokers,
                bookies,
                coordinators,
                ..
            } => (*brokers, *bookies, *coordinators),
        }
    }

    /// This cluster's shape at an existing cluster's URLs (`--service-url/--admin-url`): the
    /// plan keeps drawing from the same counts.
    pub fn at_urls(&self, service_url: &str, admin_url: &str) -> ClusterSpec {
        let (brokers, bookies, coordinators) = self.counts();
        ClusterSpec::External {
            service_url: service_url.to_string(),
            admin_url: admin_url.trim_end_matches('/').to_string(),
            brokers: brokers.max(1),
            bookies: bookies.max(1),
            coordinators: coordinators.max(1),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DockerCluster {
    pub topology: Topology,
    /// `None`: the official image of `pulsar_version`, else the locally built one.
    pub image: Option<String>,
    /// The Pulsar version (`cluster.pulsar_version`, `--pulsar-version`; default
    /// `versions::DEFAULT`). Ignored when `image` names an image.
    pub pulsar_version: String,
    pub brokers: u32,
    pub bookies: u32,
    pub coordinators: u32,
    /// Host ports of the standalone topology (also used inside the container).
    pub binary_port: u16,
    pub http_port: u16,
    pub ready_timeout: Duration,
    /// How the cluster's JVMs run (`cluster.jvm`, or `PULSAR_CHAOS_JVM`).
    pub jvm: Jvm,
    /// Broker settings (`cluster.broker_config`), key to value as the broker reads them,
    /// applied on top of the harness's own (which they may not override).
    pub broker_config: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// The topic as written in the scenario.
    pub topic: String,
    /// Append the run id to the topic so that every run starts from an empty topic.
    pub unique_topic: bool,
    pub partitions: u32,
    pub messages: u64,
    pub txn_size: u32,
    /// Messages per batched entry (1: every message its own entry).
    pub batch_size: u32,
    /// Workers, and transactions whose messages are unacknowledged at once. Each worker opens
    /// its next transaction ahead and hands an attempt's sends and commit to a task of its own,
    /// so more are open: see `workload::Producer`'s slots.
    pub concurrency: u32,
    /// Commits one worker may have under way at once, every send of each answered (the
    /// producer's; 1 with `transactions: false` and for a transform, which commit nothing this
    /// way). More overlap more commits on a connection: a lost connection then leaves each of
    /// them ambiguous.
    pub commits_in_flight: u32,
    pub txn_timeout: Duration,
    pub resend: ResendPolicy,
    pub message_size: usize,
    /// Messages per second at most; `None`: as fast as it goes.
    pub rate: Option<u32>,
    /// Abort the first attempt of every k-th transaction on purpose.
    pub abort_every: Option<u32>,
    /// False: plain sends without transactions (a benchmark baseline; not exactly-once).
    pub transactions: bool,
    /// How long one request (send, add-partition, commit) may go unanswered.
    pub op_timeout: Duration,
    /// How long the producer may take in all before the run is inconclusive.
    pub deadline: Duration,
    /// Stop the producer when no transaction has committed for this long while no fault was
    /// active (the cluster is not recovering); `None`: never (`stall_timeout: 0s`).
    pub stall_timeout: Option<Duration>,
    /// Turn the broker's message deduplication on for the topic (a topic policy) before the
    /// producer starts: a SEND whose sequence id is not above the last one persisted for its
    /// producer name is then dropped (its receipt names message id -1:-1).
    pub deduplication: bool,
    /// The client the workload runs through (`own`: the harness's protocol client).
    pub client: crate::clients::ClientKind,
    /// The Java client's version as written (`client: java` only; `None`: the broker's).
    pub client_version: Option<String>,
    /// How long the read-back waits for open transactions after every fault healed before the
    /// read is called held (stuck reads); default `txn_timeout` + 240 s.
    pub settle_timeout: Duration,
    /// `kind: transform`: consume-transform-produce instead of the producer (`None`).
    pub transform: Option<super::Transform>,
}

impl Workload {
    /// The partition that carries number `n`: `n mod partitions`.
    pub fn partition_of(&self, n: u64) -> u32 {
        (n % u64::from(self.partitions)) as u32
    }

    /// The topic the run actually uses.
    pub fn topic_for_run(&self, run_id: &str) -> String {
        if self.unique_topic {
            format!("{}-{}", self.topic, run_id)
        } else {
            self.topic.clone()
        }
    }
}

/// Deliberate damage, to prove end to end that the checker sees what it must.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sabotage {
    /// Numbers never sent.
    pub skip: Vec<u64>,
    /// Numbers sent twice (in two committed transactions).
    pub duplicate: Vec<u64>,
}

impl Sabotage {
    pub fn is_empty(&self) -> bool {
        self.skip.is_empty() && self.duplicate.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct FaultSpec {
    /// Position in the scenario's `faults` list.
    pub index: usize,
    /// `name` from the file, else `<kind>-<index>`.
    pub name: String,
    pub kind: FaultKind,
    pub target: Target,
    /// Choices written out that the plan would otherwise draw from the seed.
    pub pins: Pins,
    pub schedule: Schedule,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FaultKind {
    BrokerRestart {
        mode: RestartMode,
        #[serde(with = "humantime_serde_ms")]
        down_for: Duration,
    },
    TopicUnload {
        scope: UnloadScope,
    },
    PacketLoss {
        percent: u8,
        #[serde(with = "humantime_serde_ms")]
        duration: Duration,
    },
    Pause {
        #[serde(with = "humantime_serde_ms")]
        duration: Duration,
    },
    BookieRestart {
        mode: RestartMode,
        #[serde(with = "humantime_serde_ms")]
        down_for: Duration,
    },
    ZookeeperRestart {
        mode: RestartMode,
        #[serde(with = "humantime_serde_ms")]
        down_for: Duration,
    },
    /// Drop the broker's replies of one kind on the producer's connections (through the
    /// harness's proxy), then close the connection: `count` of them, or each with
    /// `probability`, while active. `duration`: how long it stays armed (`None`: until the
    /// count is used up or the producer finishes).
    ReplyLoss {
        reply: ReplyKind,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        count: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        probability: Option<f64>,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            with = "humantime_serde_ms_opt"
        )]
        duration: Option<Duration>,
    },
    /// `kind: transform` only: the harness closes one of the transform's consumers (every
    /// per-partition consumer of one worker) while it holds inputs acknowledged in an open
    /// transaction, and subscribes it again after `down_for` (the heal). The attempt goes on
    /// as the client learns (see `transform::restart`).
    ConsumerRestart {
        #[serde(with = "humantime_serde_ms")]
        down_for: Duration,
    },
}

impl FaultKind {
    /// How long the fault stays before its heal (0 for an unload, and for a reply loss
    /// without a duration, which lasts until its count is spent).
    pub fn hold(&self) -> Duration {
        match self {
            FaultKind::BrokerRestart { down_for, .. }
            | FaultKind::BookieRestart { down_for, .. }
            | FaultKind::ZookeeperRestart { down_for, .. }
            | FaultKind::ConsumerRestart { down_for } => *down_for,
            FaultKind::PacketLoss { duration, .. } | FaultKind::Pause { duration } => *duration,
            FaultKind::TopicUnload { .. } => Duration::ZERO,
            FaultKind::ReplyLoss { duration, .. } => duration.unwrap_or(Duration::ZERO),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::BrokerRestart { .. } => "broker_restart",
            FaultKind::TopicUnload { .. } => "topic_unload",
            FaultKind::PacketLoss { .. } => "packet_loss",
            FaultKind::Pause { .. } => "pause",
            FaultKind::BookieRestart { .. } => "bookie_restart",
            FaultKind::ZookeeperRestart { .. } => "zookeeper_restart",
            FaultKind::ReplyLoss { .. } => "reply_loss",
            FaultKind::ConsumerRestart { .. } => "consumer_restart",
        }
    }
}

/// Durations as whole milliseconds in machine output (plan.json, history.jsonl).
pub mod humantime_serde_ms {
    use std::time::Duration;
    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        <u64 as serde::Deserialize>::deserialize(d).map(Duration::from_millis)
    }
}

/// An optional duration as whole milliseconds in machine output.
pub mod humantime_serde_ms_opt {
    use std::time::Duration;
    pub fn serialize<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_millis() as u64)),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        <Option<u64> as serde::Deserialize>::deserialize(d).map(|o| o.map(Duration::from_millis))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnloadScope {
    /// The workload's topic (every partition of it).
    WorkloadTopic,
    Topic(String),
    Namespace(String),
}

/// Which container (or which broker's view) a fault is aimed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// A broker drawn from the seed when the plan is made.
    AnyBroker,
    /// Broker number i, 1-based.
    Broker(u32),
    /// The broker that owns the workload's topic (or a partition of it, drawn from the seed),
    /// looked up when the fault fires.
    OwnerOfTopic,
    /// The broker serving a transaction coordinator, looked up when the fault fires.
    CoordinatorOwner,
    AnyBookie,
    Bookie(u32),
    Zookeeper,
    /// The admin API of the cluster (topic unloads).
    Cluster,
    /// One of a transform's consumers, drawn from the seed when the plan is made.
    AnyConsumer,
    /// The transform's consumer number i, 1-based (worker i - 1).
    Consumer(u32),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::AnyBroker => f.write_str("any-broker"),
            Target::Broker(i) => write!(f, "broker-{i}"),
            Target::OwnerOfTopic => f.write_str("owner-of-topic"),
            Target::CoordinatorOwner => f.write_str("coordinator-owner"),
            Target::AnyBookie => f.write_str("any-bookie"),
            Target::Bookie(i) => write!(f, "bookie-{i}"),
            Target::Zookeeper => f.write_str("zookeeper"),
            Target::Cluster => f.write_str("cluster"),
            Target::AnyConsumer => f.write_str("any-consumer"),
            Target::Consumer(i) => write!(f, "consumer-{i}"),
        }
    }
}

impl Target {
    /// Every form `target:` takes in a scenario, as written (`<i>`: a number from 1). The list
    /// docs/scenarios.md must name (tests/docs.rs); a unit test keeps it in step with `parse`
    /// and `Display`.
    pub const FORMS: &'static [&'static str] = &[
        "any-broker",
        "broker-<i>",
        "owner-of-topic",
        "coordinator-owner",
        "any-bookie",
        "bookie-<i>",
        "zookeeper",
        "cluster",
        "any-consumer",
        "consumer-<i>",
    ];

    pub fn parse(s: &str) -> Option<Target> {
        let num = |prefix: &str| -> Option<u32> {
            s.strip_prefix(prefix)
                .and_then(|r| r.parse::<u32>().ok())
                .filter(|i| *i >= 1)
        };
        Some(match s {
            "any-broker" => Target::AnyBroker,
            "owner-of-topic" => Target::OwnerOfTopic,
            "coordinator-owner" => Target::CoordinatorOwner,
            "any-bookie" => Target::AnyBookie,
            "zookeeper" => Target::Zookeeper,
            "cluster" => Target::Cluster,
            "any-consumer" => Target::AnyConsumer,
            _ => {
                if let Some(i) = num("broker-") {
                    Target::Broker(i)
                } else if let Some(i) = num("consumer-") {
                    Target::Consumer(i)
                } else if let Some(i) = num("bookie-") {
                    Target::Bookie(i)
                } else {
                    return None;
                }
            }
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub timing: Timing,
    pub guard: Option<Guard>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Timing {
    At(Vec<Duration>),
    Every {
        period: Duration,
        jitter: Duration,
        start: Duration,
        /// `None`: until the workload's deadline.
        stop: Option<Duration>,
    },
    Random {
        count: u32,
        from: Duration,
        to: Duration,
    },
    /// Fire once when this many transactions have committed (one firing per entry).
    AfterCommits(Vec<u64>),
}

/// How long a due fault waits for its guard before it fires anyway (recorded as such).
pub const GUARD_WAIT: Duration = Duration::from_secs(30);

/// How long a due fault guarded by `next-commit` waits for a commit to be confirmed: longer
/// than `GUARD_WAIT`, since it is meant to outlast a coordinator's recovery.
pub const NEXT_COMMIT_WAIT: Duration = Duration::from_secs(60);
