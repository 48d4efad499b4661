//! Scenario files: YAML -> serde types (unknown keys refused) -> a validated [`Scenario`].
//!
//! Every error names the file, line and column. Nothing here touches Docker or the network.

mod file;
pub mod locate;

use std::fmt;

use serde::{Deserialize, Serialize};
use std::time::Duration;

pub use file::*;
use locate::{path_to_string, Locations, Seg};

/// Errors of reading or validating a scenario. Each is one paragraph a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{file}: cannot read the scenario file: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}:{line}:{column}: {message}")]
    Invalid {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{file}: {message}")]
    InvalidUnlocated { file: String, message: String },
}

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
    /// The scenario as resolved (defaults filled in), in the file's own shape: written to the
    /// run directory as `scenario.yaml`.
    pub resolved: ScenarioFile,
}

impl Scenario {
    /// Run another Pulsar version than the file names (`--pulsar-version`): recorded in the
    /// resolved scenario too, so the run directory's copy reproduces it without flags.
    pub fn set_pulsar_version(&mut self, version: &str) -> Result<(), String> {
        crate::versions::validate(version)?;
        match &mut self.cluster {
            ClusterSpec::Docker(d) => d.pulsar_version = version.to_string(),
            ClusterSpec::External { .. } => return Err(
                "--pulsar-version applies to a cluster the harness starts, not to an external one"
                    .into(),
            ),
        }
        self.resolved.cluster = resolve_cluster_file(&self.cluster);
        Ok(())
    }
}

/// How a run can end, as a scenario's `expect:` names it: a verdict, or `stalled` (an
/// inconclusive run whose producer stopped making progress with no fault active).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expected {
    Pass,
    Violation,
    Inconclusive,
    Stalled,
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Expected::Pass => "pass",
            Expected::Violation => "violation",
            Expected::Inconclusive => "inconclusive",
            Expected::Stalled => "stalled",
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ClusterSpec {
    /// Start a cluster in Docker.
    Docker(DockerCluster),
    /// Use a cluster that is already running.
    External {
        service_url: String,
        admin_url: String,
    },
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    Standalone,
    Cluster,
    External,
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Topology::Standalone => "standalone",
            Topology::Cluster => "cluster",
            Topology::External => "external",
        })
    }
}

/// What the producer does after a commit whose outcome it could not learn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResendPolicy {
    /// Pulsar issue #19780's design: resend the numbers in a new transaction. Duplicates when
    /// the commit had in fact applied.
    Naive,
    /// Retry END_TXN COMMIT on the same transaction until the answer is definitive; resend only
    /// after a definitive abort. Numbers of a transaction that stays ambiguous are not resent.
    RetryCommit,
    /// As retry-commit, then read the partitions back to learn whether the transaction's
    /// messages became visible; resend only when they did not.
    Verify,
}

impl fmt::Display for ResendPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ResendPolicy::Naive => "naive",
            ResendPolicy::RetryCommit => "retry-commit",
            ResendPolicy::Verify => "verify",
        })
    }
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
    /// Transactions being sent at once; each may hand its commit to a task of its own and
    /// open the next, so up to twice as many are open.
    pub concurrency: u32,
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
    pub schedule: Schedule,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum RestartMode {
    /// SIGTERM, then SIGKILL after a timeout.
    #[default]
    Graceful,
    /// SIGKILL at once.
    Kill,
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
}

/// The broker reply a `reply_loss` fault drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyKind {
    /// END_TXN_RESPONSE: the answer to a commit or abort.
    EndTxn,
    /// SEND_RECEIPT: the answer to a SEND.
    SendReceipt,
    /// NEW_TXN_RESPONSE: the answer to opening a transaction.
    NewTxn,
    /// ADD_PARTITION_TO_TXN_RESPONSE.
    AddPartitionToTxn,
}

impl ReplyKind {
    /// The protocol's name of the reply command.
    pub fn command(&self) -> &'static str {
        match self {
            ReplyKind::EndTxn => "END_TXN_RESPONSE",
            ReplyKind::SendReceipt => "SEND_RECEIPT",
            ReplyKind::NewTxn => "NEW_TXN_RESPONSE",
            ReplyKind::AddPartitionToTxn => "ADD_PARTITION_TO_TXN_RESPONSE",
        }
    }
}

impl fmt::Display for ReplyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReplyKind::EndTxn => "end_txn",
            ReplyKind::SendReceipt => "send_receipt",
            ReplyKind::NewTxn => "new_txn",
            ReplyKind::AddPartitionToTxn => "add_partition_to_txn",
        })
    }
}

impl FaultKind {
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::BrokerRestart { .. } => "broker_restart",
            FaultKind::TopicUnload { .. } => "topic_unload",
            FaultKind::PacketLoss { .. } => "packet_loss",
            FaultKind::Pause { .. } => "pause",
            FaultKind::BookieRestart { .. } => "bookie_restart",
            FaultKind::ZookeeperRestart { .. } => "zookeeper_restart",
            FaultKind::ReplyLoss { .. } => "reply_loss",
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
        }
    }
}

impl Target {
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
            _ => {
                if let Some(i) = num("broker-") {
                    Target::Broker(i)
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

/// A condition the run waits for once a fault is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Guard {
    /// An END_TXN COMMIT is in flight.
    Committing,
}

/// How long a due fault waits for its guard before it fires anyway (recorded as such).
pub const GUARD_WAIT: Duration = Duration::from_secs(30);

/// Parse and validate scenario text; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    let raw: ScenarioFile = serde_yaml_ng::from_str(text).map_err(|e| match e.location() {
        Some(loc) => ScenarioError::Invalid {
            file: file.to_string(),
            line: loc.line(),
            column: loc.column(),
            message: strip_location(&e.to_string()),
        },
        None => ScenarioError::InvalidUnlocated {
            file: file.to_string(),
            message: e.to_string(),
        },
    })?;
    let locations = Locations::index(text);
    validate(raw).map_err(|(path, message)| match locations.find(&path) {
        Some((line, column)) => ScenarioError::Invalid {
            file: file.to_string(),
            line,
            column,
            message: format!("{}: {message}", path_to_string(&path)),
        },
        None => ScenarioError::InvalidUnlocated {
            file: file.to_string(),
            message: format!("{}: {message}", path_to_string(&path)),
        },
    })
}

/// serde_yaml_ng appends " at line L column C" to its messages; the error names it already.
fn strip_location(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

type Invalid = (Vec<Seg>, String);

fn key(s: &str) -> Seg {
    Seg::Key(s.to_string())
}

fn err<T>(path: &[&str], msg: impl Into<String>) -> Result<T, Invalid> {
    Err((path.iter().map(|s| key(s)).collect(), msg.into()))
}

/// Check every value and fill every default. Pure.
pub fn validate(raw: ScenarioFile) -> Result<Scenario, Invalid> {
    if raw.name.trim().is_empty() {
        return err(&["name"], "must not be empty");
    }
    if !raw
        .name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        return err(
            &["name"],
            "may use only letters, digits, '-', '_' and '.' (it names run directories)",
        );
    }
    let cluster = validate_cluster(&raw.cluster)?;
    let workload = validate_workload(&raw.workload)?;
    let topology = match &cluster {
        ClusterSpec::Docker(d) => d.topology,
        ClusterSpec::External { .. } => Topology::External,
    };
    let brokers = match &cluster {
        ClusterSpec::Docker(d) => d.brokers,
        ClusterSpec::External { .. } => 0,
    };
    let bookies = match &cluster {
        ClusterSpec::Docker(d) if d.topology == Topology::Cluster => d.bookies,
        _ => 0,
    };
    let mut faults = Vec::new();
    for (i, f) in raw.faults.iter().enumerate() {
        faults.push(
            validate_fault(i, f, topology, brokers, bookies, &workload).map_err(|(mut p, m)| {
                let mut full = vec![key("faults"), Seg::Index(i)];
                full.append(&mut p);
                (full, m)
            })?,
        );
    }
    let mut names = std::collections::BTreeSet::new();
    for f in &faults {
        if !names.insert(f.name.clone()) {
            return Err((
                vec![key("faults"), Seg::Index(f.index), key("name")],
                format!("the fault name '{}' is used twice", f.name),
            ));
        }
    }
    let sabotage = match &raw.sabotage {
        None => Sabotage::default(),
        Some(s) => {
            for (field, list) in [("skip", &s.skip), ("duplicate", &s.duplicate)] {
                if let Some(n) = list.iter().find(|n| **n >= workload.messages) {
                    return err(
                        &["sabotage", field],
                        format!(
                            "{n} is outside the workload's numbers [0, {})",
                            workload.messages
                        ),
                    );
                }
            }
            Sabotage {
                skip: s.skip.clone(),
                duplicate: s.duplicate.clone(),
            }
        }
    };
    for (version, outcomes) in &raw.expect {
        if let Err(m) = crate::versions::validate(version) {
            return Err((vec![key("expect"), key(version)], m));
        }
        if outcomes.is_empty() {
            return Err((
                vec![key("expect"), key(version)],
                "name at least one outcome: pass, violation, inconclusive or stalled".into(),
            ));
        }
    }
    let mut resolved = raw.clone();
    resolved.cluster = resolve_cluster_file(&cluster);
    resolved.workload = resolve_workload_file(&workload);
    Ok(Scenario {
        name: raw.name.clone(),
        description: raw.description.clone(),
        seed: raw.seed,
        cluster,
        workload,
        faults,
        sabotage,
        expect: raw.expect.clone(),
        resolved,
    })
}

fn validate_cluster(c: &ClusterFile) -> Result<ClusterSpec, Invalid> {
    let external = c.service_url.is_some() || c.admin_url.is_some();
    let topology = match (c.topology, external) {
        (Some(Topology::External), _) | (None, true) => Topology::External,
        (Some(t), true) => {
            return err(
                &["cluster", "service_url"],
                format!("service_url/admin_url name an existing cluster; they do not go with topology '{t}'"),
            )
        }
        (Some(t), false) => t,
        (None, false) => Topology::Standalone,
    };
    if topology == Topology::External {
        let service_url = match &c.service_url {
            Some(u) if u.starts_with("pulsar://") => u.clone(),
            Some(_) => return err(&["cluster", "service_url"], "must start with pulsar://"),
            None => {
                return err(
                    &["cluster"],
                    "an external cluster needs service_url (pulsar://...)",
                )
            }
        };
        let admin_url = match &c.admin_url {
            Some(u) if u.starts_with("http://") || u.starts_with("https://") => {
                u.trim_end_matches('/').to_string()
            }
            Some(_) => {
                return err(
                    &["cluster", "admin_url"],
                    "must start with http:// or https://",
                )
            }
            None => {
                return err(
                    &["cluster"],
                    "an external cluster needs admin_url (http://...)",
                )
            }
        };
        for (field, set) in [
            ("image", c.image.is_some()),
            ("pulsar_version", c.pulsar_version.is_some()),
            ("brokers", c.brokers.is_some()),
            ("bookies", c.bookies.is_some()),
        ] {
            if set {
                return err(&["cluster", field], "does not apply to an external cluster");
            }
        }
        return Ok(ClusterSpec::External {
            service_url,
            admin_url,
        });
    }
    let brokers = c
        .brokers
        .unwrap_or(if topology == Topology::Cluster { 2 } else { 1 });
    let bookies = c.bookies.unwrap_or(1);
    if topology == Topology::Standalone {
        if brokers != 1 {
            return err(
                &["cluster", "brokers"],
                "standalone has exactly one broker; use topology: cluster for more",
            );
        }
        if c.bookies.is_some() {
            return err(
                &["cluster", "bookies"],
                "standalone has its own bookie; use topology: cluster to set bookies",
            );
        }
    } else {
        if !(1..=5).contains(&brokers) {
            return err(&["cluster", "brokers"], "must be between 1 and 5");
        }
        if !(1..=3).contains(&bookies) {
            return err(&["cluster", "bookies"], "must be between 1 and 3");
        }
    }
    let coordinators = c.coordinators.unwrap_or(1);
    if !(1..=16).contains(&coordinators) {
        return err(&["cluster", "coordinators"], "must be between 1 and 16");
    }
    if topology == Topology::Standalone && c.coordinators.is_some() && coordinators != 1 {
        return err(
            &["cluster", "coordinators"],
            "standalone creates its own coordinators; set this with topology: cluster",
        );
    }
    let binary_port = c.binary_port.unwrap_or(6650);
    let http_port = c.http_port.unwrap_or(8080);
    if binary_port == 0 || http_port == 0 || binary_port == http_port {
        return err(
            &["cluster", "binary_port"],
            "binary_port and http_port must be two different non-zero ports",
        );
    }
    if topology == Topology::Cluster && (c.binary_port.is_some() || c.http_port.is_some()) {
        return err(&["cluster", "binary_port"], "ports are published by the standalone topology only; cluster brokers are reached on their own addresses");
    }
    let ready_timeout = c
        .ready_timeout
        .map(|d| d.0)
        .unwrap_or(Duration::from_secs(300));
    if ready_timeout < Duration::from_secs(1) {
        return err(&["cluster", "ready_timeout"], "must be at least 1s");
    }
    if let Some(img) = &c.image {
        if img.trim().is_empty() || img.contains(char::is_whitespace) {
            return err(
                &["cluster", "image"],
                "must be an image reference such as apachepulsar/pulsar:4.0.7",
            );
        }
    }
    let pulsar_version = c
        .pulsar_version
        .clone()
        .unwrap_or_else(|| crate::versions::DEFAULT.to_string());
    if let Err(m) = crate::versions::validate(&pulsar_version) {
        return err(&["cluster", "pulsar_version"], &m);
    }
    Ok(ClusterSpec::Docker(DockerCluster {
        topology,
        image: c.image.clone(),
        pulsar_version,
        brokers,
        bookies,
        coordinators,
        binary_port,
        http_port,
        ready_timeout,
    }))
}

fn validate_workload(w: &WorkloadFile) -> Result<Workload, Invalid> {
    let topic = w.topic.clone();
    let parts: Vec<&str> = topic
        .strip_prefix("persistent://")
        .map(|r| r.split('/').collect())
        .unwrap_or_default();
    if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
        return err(
            &["workload", "topic"],
            "must be persistent://<tenant>/<namespace>/<name> (transactions need a persistent topic)",
        );
    }
    if parts[2].contains("-partition-") {
        return err(
            &["workload", "topic"],
            "names a partition; name the topic and set partitions instead",
        );
    }
    let partitions = w.partitions.unwrap_or(1);
    if !(1..=64).contains(&partitions) {
        return err(&["workload", "partitions"], "must be between 1 and 64");
    }
    let messages = w.messages;
    if messages == 0 {
        return err(&["workload", "messages"], "must be at least 1");
    }
    let txn_size = w.txn_size.unwrap_or(100);
    if txn_size == 0 {
        return err(&["workload", "txn_size"], "must be at least 1");
    }
    if txn_size > 100_000 {
        return err(&["workload", "txn_size"], "must be at most 100000");
    }
    let batch_size = w.batch_size.unwrap_or(100);
    if !(1..=1000).contains(&batch_size) {
        return err(&["workload", "batch_size"], "must be between 1 and 1000");
    }
    let concurrency = w.concurrency.unwrap_or(4);
    if !(1..=1024).contains(&concurrency) {
        return err(&["workload", "concurrency"], "must be between 1 and 1024");
    }
    let txn_timeout = w
        .txn_timeout
        .map(|d| d.0)
        .unwrap_or(Duration::from_secs(30));
    if txn_timeout < Duration::from_secs(1) {
        return err(&["workload", "txn_timeout"], "must be at least 1s");
    }
    let message_size = w.message_size.unwrap_or(0);
    if message_size > 1024 * 1024 {
        return err(&["workload", "message_size"], "must be at most 1 MiB");
    }
    if let Some(0) = w.rate {
        return err(
            &["workload", "rate"],
            "must be at least 1 (leave it out for no limit)",
        );
    }
    if let Some(k) = w.abort_every {
        if k < 1 {
            return err(&["workload", "abort_every"], "must be at least 1");
        }
    }
    if w.transactions == Some(false) && w.abort_every.is_some() {
        return err(
            &["workload", "abort_every"],
            "needs transactions (transactions: false sends plainly)",
        );
    }
    let op_timeout = w.op_timeout.map(|d| d.0).unwrap_or(Duration::from_secs(10));
    if op_timeout < Duration::from_millis(100) {
        return err(&["workload", "op_timeout"], "must be at least 100ms");
    }
    let deadline = w.deadline.map(|d| d.0).unwrap_or(Duration::from_secs(1800));
    if deadline < Duration::from_secs(1) {
        return err(&["workload", "deadline"], "must be at least 1s");
    }
    let stall_timeout = match w.stall_timeout.map(|d| d.0) {
        None => Some(Duration::from_secs(300)),
        Some(d) if d.is_zero() => None,
        Some(d) if d < Duration::from_secs(5) => {
            return err(
                &["workload", "stall_timeout"],
                "must be at least 5s (or 0s: never stop on a stall)",
            )
        }
        Some(d) => Some(d),
    };
    Ok(Workload {
        topic,
        unique_topic: w.unique_topic.unwrap_or(true),
        partitions,
        messages,
        txn_size,
        batch_size,
        concurrency,
        txn_timeout,
        resend: w.resend.unwrap_or(ResendPolicy::Verify),
        message_size,
        rate: w.rate,
        abort_every: w.abort_every,
        transactions: w.transactions.unwrap_or(true),
        op_timeout,
        deadline,
        stall_timeout,
        deduplication: w.deduplication.unwrap_or(false),
    })
}

fn validate_fault(
    index: usize,
    f: &FaultFile,
    topology: Topology,
    brokers: u32,
    bookies: u32,
    workload: &Workload,
) -> Result<FaultSpec, Invalid> {
    let common = f.common();
    let kind = f.kind_name();
    let default_target = match f {
        FaultFile::TopicUnload { .. } => "cluster",
        FaultFile::BookieRestart { .. } => "any-bookie",
        FaultFile::ZookeeperRestart { .. } => "zookeeper",
        FaultFile::ReplyLoss { .. } => "cluster",
        _ => "any-broker",
    };
    let target_text = common
        .target
        .clone()
        .unwrap_or_else(|| default_target.to_string());
    let target = Target::parse(&target_text).ok_or_else(|| {
        (
            vec![key("target")],
            format!("unknown target '{target_text}' (any-broker, broker-<i>, owner-of-topic, coordinator-owner, any-bookie, bookie-<i>, zookeeper)"),
        )
    })?;
    let is_broker_target = matches!(
        target,
        Target::AnyBroker | Target::Broker(_) | Target::OwnerOfTopic | Target::CoordinatorOwner
    );
    if topology == Topology::External && matches!(f, FaultFile::ReplyLoss { .. }) {
        return err(
            &["kind"],
            "reply_loss needs a cluster the harness started (topology standalone or cluster)",
        );
    }
    if topology == Topology::External && !matches!(f, FaultFile::TopicUnload { .. }) {
        return err(
            &["kind"],
            format!("{kind} needs a cluster the harness started (topology standalone or cluster); an external cluster allows topic_unload only"),
        );
    }
    let bad_target = |allowed: &str| -> Result<FaultSpec, Invalid> {
        err(
            &["target"],
            format!("{kind} cannot aim at '{target}': {allowed}"),
        )
    };
    let fault_kind = match f {
        FaultFile::BrokerRestart { mode, down_for, .. } => {
            if !is_broker_target {
                return bad_target("it takes a broker target");
            }
            FaultKind::BrokerRestart {
                mode: mode.unwrap_or_default(),
                down_for: down_for.map(|d| d.0).unwrap_or(Duration::ZERO),
            }
        }
        FaultFile::TopicUnload {
            topic, namespace, ..
        } => {
            if target != Target::Cluster {
                return bad_target("an unload goes through the admin API; leave target out");
            }
            let scope = match (topic, namespace) {
                (Some(_), Some(_)) => {
                    return err(&["namespace"], "give topic or namespace, not both")
                }
                (Some(t), None) => {
                    if !t.starts_with("persistent://") {
                        return err(
                            &["topic"],
                            "must be persistent://<tenant>/<namespace>/<name>",
                        );
                    }
                    UnloadScope::Topic(t.clone())
                }
                (None, Some(ns)) => {
                    if ns.split('/').count() != 2 || ns.contains("://") {
                        return err(&["namespace"], "must be <tenant>/<namespace>");
                    }
                    UnloadScope::Namespace(ns.clone())
                }
                (None, None) => UnloadScope::WorkloadTopic,
            };
            FaultKind::TopicUnload { scope }
        }
        FaultFile::PacketLoss {
            percent, duration, ..
        } => {
            if !is_broker_target
                && !matches!(
                    target,
                    Target::Bookie(_) | Target::AnyBookie | Target::Zookeeper
                )
            {
                return bad_target("it takes a container target");
            }
            if !(1..=100).contains(percent) {
                return err(&["percent"], "must be between 1 and 100");
            }
            FaultKind::PacketLoss {
                percent: *percent,
                duration: positive(duration.0, "duration")?,
            }
        }
        FaultFile::Pause { duration, .. } => {
            if target == Target::Cluster {
                return bad_target("it takes a container target");
            }
            FaultKind::Pause {
                duration: positive(duration.0, "duration")?,
            }
        }
        FaultFile::BookieRestart { mode, down_for, .. } => {
            if !matches!(target, Target::AnyBookie | Target::Bookie(_)) {
                return bad_target("it takes any-bookie or bookie-<i>");
            }
            FaultKind::BookieRestart {
                mode: mode.unwrap_or_default(),
                down_for: down_for.map(|d| d.0).unwrap_or(Duration::ZERO),
            }
        }
        FaultFile::ZookeeperRestart { mode, down_for, .. } => {
            if target != Target::Zookeeper {
                return bad_target("it takes zookeeper");
            }
            FaultKind::ZookeeperRestart {
                mode: mode.unwrap_or_default(),
                down_for: down_for.map(|d| d.0).unwrap_or(Duration::ZERO),
            }
        }
        FaultFile::ReplyLoss {
            reply,
            count,
            probability,
            duration,
            ..
        } => {
            if target != Target::Cluster {
                return bad_target(
                    "it acts on the producer's own connections (through the harness's proxy); leave target out",
                );
            }
            match (count, probability) {
                (Some(_), Some(_)) => {
                    return err(&["probability"], "give count or probability, not both")
                }
                (None, None) => {
                    return err(
                        &["reply"],
                        "needs count (replies to drop) or probability (of dropping each)",
                    )
                }
                (Some(c), None) if !(1..=10_000).contains(c) => {
                    return err(&["count"], "must be between 1 and 10000")
                }
                (None, Some(p)) if !(*p > 0.0 && *p <= 1.0) => {
                    return err(&["probability"], "must be in (0, 1]")
                }
                _ => {}
            }
            let duration = match duration {
                Some(d) => Some(positive(d.0, "duration")?),
                None => None,
            };
            FaultKind::ReplyLoss {
                reply: *reply,
                count: *count,
                probability: *probability,
                duration,
            }
        }
    };
    // Targets must exist in the topology.
    match target {
        Target::Broker(i) if i > brokers => {
            return err(&["target"], format!("broker-{i} does not exist: the cluster has {brokers} broker(s)"))
        }
        Target::Bookie(_) | Target::AnyBookie | Target::Zookeeper if topology != Topology::Cluster => {
            return err(&["target"], format!("'{target}' exists in the cluster topology only (standalone runs bookie and metadata store inside the broker)"))
        }
        Target::Bookie(i) if i > bookies => {
            return err(&["target"], format!("bookie-{i} does not exist: the cluster has {bookies} bookie(s)"))
        }
        _ => {}
    }
    let schedule = validate_schedule(common.schedule, workload)?;
    let name = match &common.name {
        Some(n) if !n.trim().is_empty() => n.clone(),
        Some(_) => return err(&["name"], "must not be empty"),
        None => format!("{kind}-{index}"),
    };
    Ok(FaultSpec {
        index,
        name,
        kind: fault_kind,
        target,
        schedule,
    })
}

fn positive(d: Duration, field: &str) -> Result<Duration, Invalid> {
    if d.is_zero() {
        return err(&[field], "must be longer than 0s");
    }
    Ok(d)
}

fn validate_schedule(s: &ScheduleFile, w: &Workload) -> Result<Schedule, Invalid> {
    let p = |f: &str| -> Vec<Seg> { vec![key("schedule"), key(f)] };
    let given = [
        s.at.is_some(),
        s.every.is_some(),
        s.random.is_some(),
        s.after_commits.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if given != 1 {
        return Err((
            vec![key("schedule")],
            "give exactly one of at, every, random, after_commits".to_string(),
        ));
    }
    if s.every.is_none() && (s.jitter.is_some() || s.start.is_some() || s.stop.is_some()) {
        return Err((
            p("jitter"),
            "jitter, start and stop go with every".to_string(),
        ));
    }
    let timing = if let Some(at) = &s.at {
        if at.is_empty() {
            return Err((p("at"), "must list at least one offset".to_string()));
        }
        let mut v: Vec<Duration> = at.iter().map(|d| d.0).collect();
        v.sort();
        Timing::At(v)
    } else if let Some(every) = s.every {
        if every.0 < Duration::from_millis(100) {
            return Err((p("every"), "must be at least 100ms".to_string()));
        }
        let jitter = s.jitter.map(|d| d.0).unwrap_or(Duration::ZERO);
        if jitter >= every.0 {
            return Err((p("jitter"), "must be shorter than every".to_string()));
        }
        let start = s.start.map(|d| d.0).unwrap_or(every.0);
        let stop = s.stop.map(|d| d.0);
        if let Some(stop) = stop {
            if stop <= start {
                return Err((p("stop"), "must come after start".to_string()));
            }
        }
        if (stop.unwrap_or(w.deadline).saturating_sub(start)).as_millis() / every.0.as_millis()
            > 10_000
        {
            return Err((
                p("every"),
                "gives more than 10000 firings; set stop or a longer period".to_string(),
            ));
        }
        Timing::Every {
            period: every.0,
            jitter,
            start,
            stop,
        }
    } else if let Some(r) = &s.random {
        if r.count == 0 || r.count > 10_000 {
            return Err((
                vec![key("schedule"), key("random"), key("count")],
                "must be between 1 and 10000".to_string(),
            ));
        }
        let (from, to) = (r.within[0].0, r.within[1].0);
        if to <= from {
            return Err((
                vec![key("schedule"), key("random"), key("within")],
                "must be [from, to] with from < to".to_string(),
            ));
        }
        Timing::Random {
            count: r.count,
            from,
            to,
        }
    } else {
        let list = s.after_commits.clone().unwrap_or_default().into_vec();
        if list.is_empty() || list.contains(&0) {
            return Err((
                p("after_commits"),
                "must be one or more counts >= 1".to_string(),
            ));
        }
        let mut list = list;
        list.sort();
        Timing::AfterCommits(list)
    };
    Ok(Schedule {
        timing,
        guard: s.while_,
    })
}

fn resolve_cluster_file(c: &ClusterSpec) -> ClusterFile {
    match c {
        ClusterSpec::External {
            service_url,
            admin_url,
        } => ClusterFile {
            topology: Some(Topology::External),
            service_url: Some(service_url.clone()),
            admin_url: Some(admin_url.clone()),
            ..ClusterFile::default()
        },
        ClusterSpec::Docker(d) => ClusterFile {
            topology: Some(d.topology),
            image: d.image.clone(),
            pulsar_version: Some(d.pulsar_version.clone()),
            brokers: (d.topology == Topology::Cluster).then_some(d.brokers),
            bookies: (d.topology == Topology::Cluster).then_some(d.bookies),
            coordinators: (d.topology == Topology::Cluster).then_some(d.coordinators),
            binary_port: (d.topology == Topology::Standalone).then_some(d.binary_port),
            http_port: (d.topology == Topology::Standalone).then_some(d.http_port),
            ready_timeout: Some(Dur(d.ready_timeout)),
            service_url: None,
            admin_url: None,
        },
    }
}

fn resolve_workload_file(w: &Workload) -> WorkloadFile {
    WorkloadFile {
        topic: w.topic.clone(),
        unique_topic: Some(w.unique_topic),
        partitions: Some(w.partitions),
        messages: w.messages,
        txn_size: Some(w.txn_size),
        batch_size: Some(w.batch_size),
        concurrency: Some(w.concurrency),
        txn_timeout: Some(Dur(w.txn_timeout)),
        resend: Some(w.resend),
        message_size: Some(w.message_size),
        rate: w.rate,
        abort_every: w.abort_every,
        transactions: Some(w.transactions),
        op_timeout: Some(Dur(w.op_timeout)),
        deadline: Some(Dur(w.deadline)),
        stall_timeout: Some(Dur(w.stall_timeout.unwrap_or(Duration::ZERO))),
        deduplication: Some(w.deduplication),
    }
}

impl Scenario {
    /// The resolved scenario as YAML (for the run directory).
    pub fn resolved_yaml(&self) -> String {
        serde_yaml_ng::to_string(&self.resolved).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
