//! The scenario file's shape, as serde reads it. Unknown keys are refused everywhere.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::kinds::{Guard, Pins, ReplyKind, ResendPolicy, RestartMode, Topology};

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default)]
    pub cluster: ClusterFile,
    pub workload: WorkloadFile,
    #[serde(default)]
    pub faults: Vec<FaultFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sabotage: Option<SabotageFile>,
    /// Pulsar version -> the outcomes this scenario is expected to end with on it (the
    /// known-bug and findings scenarios say what a version that has the bug and one that fixed
    /// it should give; `matrix` compares).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub expect: std::collections::BTreeMap<String, Vec<super::kinds::Expected>>,
    /// What to try, in order, when the read-back is held after every fault healed (see
    /// `stuck`): `re-end`, `unload-coordinator`, `unload-topic`. Absent: all three; `[]`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedies: Option<Vec<crate::stuck::Remedy>>,
    /// The fault adapter file for a cluster the harness did not start (see `adapter`),
    /// relative to this file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
    /// Let destructive faults touch a cluster the harness did not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_destructive: Option<bool>,
}

/// A broker setting's value as written: YAML's `true`, `5` and `"text"` alike.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum ConfValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
}

impl std::fmt::Display for ConfValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfValue::Bool(b) => write!(f, "{b}"),
            ConfValue::Int(n) => write!(f, "{n}"),
            ConfValue::Float(x) => write!(f, "{x}"),
            ConfValue::Text(t) => f.write_str(t),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<Topology>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pulsar_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brokers: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bookies: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinators: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_port: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_port: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_timeout: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jvm: Option<super::kinds::Jvm>,
    /// Broker settings (`standalone.conf` / `broker.conf` keys) for a cluster the harness
    /// starts, applied as `PULSAR_PREFIX_<key>` at start.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub broker_config: std::collections::BTreeMap<String, ConfValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadFile {
    pub topic: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unique_topic: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<u32>,
    pub messages: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commits_in_flight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn_timeout: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resend: Option<ResendPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_size: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_every: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op_timeout: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_timeout: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_timeout: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deduplication: Option<bool>,
    /// The client the workload runs through: `own` (default), `java`, `go` (docs/drivers.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<crate::clients::ClientKind>,
    /// The Java client's version (default: the broker's, when served; `client: java` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    /// `produce` (default) or `transform` (consume-transform-produce, see `transform`); the
    /// four keys below go with `transform` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<super::WorkloadKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumers: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription_type: Option<super::SubscriptionType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<super::TransformFunction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_transactional: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_abort_every: Option<u32>,
    /// Messages per batched entry of the input's fill (default: `batch_size`, which then
    /// applies to the outputs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_batch_size: Option<u32>,
    /// `abort` (default) or `commit`: what the transform's conflict probe does after its ACK.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflict_probe: Option<super::ConflictProbe>,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SabotageFile {
    #[serde(default)]
    pub skip: Vec<u64>,
    #[serde(default)]
    pub duplicate: Vec<u64>,
}

/// One entry of `faults:`. The `kind` key selects the variant; each variant lists the keys it
/// takes, so a key of another kind is refused.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultFile {
    BrokerRestart {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<RestartMode>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        down_for: Option<Dur>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
        /// With `target: owner-of-topic`: the partition whose owner is hit (else drawn from
        /// the seed per firing).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<u32>,
        /// With `target: coordinator-owner`: the coordinator whose broker is hit (else drawn
        /// from the seed per firing).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        coordinator: Option<u32>,
        schedule: ScheduleFile,
    },
    TopicUnload {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        topic: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
        schedule: ScheduleFile,
    },
    PacketLoss {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        percent: u8,
        duration: Dur,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
        /// With `target: owner-of-topic`: the partition whose owner is hit (else drawn from
        /// the seed per firing).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<u32>,
        /// With `target: coordinator-owner`: the coordinator whose broker is hit (else drawn
        /// from the seed per firing).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        coordinator: Option<u32>,
        schedule: ScheduleFile,
    },
    Pause {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        duration: Dur,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
        /// With `target: owner-of-topic`: the partition whose owner is hit (else drawn from
        /// the seed per firing).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<u32>,
        /// With `target: coordinator-owner`: the coordinator whose broker is hit (else drawn
        /// from the seed per firing).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        coordinator: Option<u32>,
        schedule: ScheduleFile,
    },
    BookieRestart {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<RestartMode>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        down_for: Option<Dur>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
        schedule: ScheduleFile,
    },
    ZookeeperRestart {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<RestartMode>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        down_for: Option<Dur>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
        schedule: ScheduleFile,
    },
    /// The producer's connections go through the harness's proxy, which drops the broker's
    /// reply to `reply` (`count` of them, or each with `probability`) while the fault is
    /// active, and closes that connection.
    ReplyLoss {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        reply: ReplyKind,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        count: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        probability: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration: Option<Dur>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
        /// With `probability`: the seed of its draws (else derived from the plan's seed per
        /// firing).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        draw_seed: Option<u64>,
        schedule: ScheduleFile,
    },
    /// `kind: transform` only: close one of the transform's consumers while it holds inputs
    /// in an open transaction, subscribe it again after `down_for`.
    ConsumerRestart {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        down_for: Option<Dur>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
        schedule: ScheduleFile,
    },
}

/// The keys every fault kind shares.
pub struct FaultCommon<'a> {
    pub name: &'a Option<String>,
    pub target: &'a Option<String>,
    pub schedule: &'a ScheduleFile,
}

impl FaultFile {
    pub fn common(&self) -> FaultCommon<'_> {
        match self {
            FaultFile::BrokerRestart {
                name,
                target,
                schedule,
                ..
            }
            | FaultFile::TopicUnload {
                name,
                target,
                schedule,
                ..
            }
            | FaultFile::PacketLoss {
                name,
                target,
                schedule,
                ..
            }
            | FaultFile::Pause {
                name,
                target,
                schedule,
                ..
            }
            | FaultFile::BookieRestart {
                name,
                target,
                schedule,
                ..
            }
            | FaultFile::ZookeeperRestart {
                name,
                target,
                schedule,
                ..
            }
            | FaultFile::ReplyLoss {
                name,
                target,
                schedule,
                ..
            }
            | FaultFile::ConsumerRestart {
                name,
                target,
                schedule,
                ..
            } => FaultCommon {
                name,
                target,
                schedule,
            },
        }
    }

    /// The choices the plan would otherwise draw from the seed, as written.
    pub fn pins(&self) -> Pins {
        match self {
            FaultFile::BrokerRestart {
                partition,
                coordinator,
                ..
            }
            | FaultFile::PacketLoss {
                partition,
                coordinator,
                ..
            }
            | FaultFile::Pause {
                partition,
                coordinator,
                ..
            } => Pins {
                partition: *partition,
                coordinator: *coordinator,
                draw_seed: None,
            },
            FaultFile::ReplyLoss { draw_seed, .. } => Pins {
                draw_seed: *draw_seed,
                ..Pins::default()
            },
            _ => Pins::default(),
        }
    }

    /// The entry's schedule, to change it.
    pub fn schedule_mut(&mut self) -> &mut ScheduleFile {
        match self {
            FaultFile::BrokerRestart { schedule, .. }
            | FaultFile::TopicUnload { schedule, .. }
            | FaultFile::PacketLoss { schedule, .. }
            | FaultFile::Pause { schedule, .. }
            | FaultFile::BookieRestart { schedule, .. }
            | FaultFile::ZookeeperRestart { schedule, .. }
            | FaultFile::ReplyLoss { schedule, .. }
            | FaultFile::ConsumerRestart { schedule, .. } => schedule,
        }
    }

    pub fn kind_name(&self) -> &'static str {
        match self {
            FaultFile::BrokerRestart { .. } => "broker_restart",
            FaultFile::TopicUnload { .. } => "topic_unload",
            FaultFile::PacketLoss { .. } => "packet_loss",
            FaultFile::Pause { .. } => "pause",
            FaultFile::BookieRestart { .. } => "bookie_restart",
            FaultFile::ZookeeperRestart { .. } => "zookeeper_restart",
            FaultFile::ReplyLoss { .. } => "reply_loss",
            FaultFile::ConsumerRestart { .. } => "consumer_restart",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Vec<Dur>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random: Option<RandomFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_commits: Option<OneOrMany>,
    #[serde(default, rename = "while", skip_serializing_if = "Option::is_none")]
    pub while_: Option<Guard>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RandomFile {
    pub count: u32,
    pub within: [Dur; 2],
}

/// `5000` or `[5000, 10000]`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(u64),
    Many(Vec<u64>),
}

impl Default for OneOrMany {
    fn default() -> Self {
        OneOrMany::Many(Vec::new())
    }
}

impl OneOrMany {
    pub fn into_vec(self) -> Vec<u64> {
        match self {
            OneOrMany::One(v) => vec![v],
            OneOrMany::Many(v) => v,
        }
    }
}

/// A duration written like `30s`, `1m30s`, `500ms`, `2h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dur(pub Duration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Dur;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a duration such as 30s, 1m30s or 500ms")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Dur, E> {
                humantime::parse_duration(v.trim()).map(Dur).map_err(|e| {
                    E::custom(format!(
                        "invalid duration `{v}`: {e} (write e.g. 30s, 1m30s, 500ms)"
                    ))
                })
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Dur, E> {
                Err(E::custom(format!(
                    "a duration needs a unit: write {v}s or {v}ms, not `{v}`"
                )))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Dur, E> {
                Err(E::custom(format!(
                    "invalid duration `{v}`: durations are positive and need a unit, e.g. 30s"
                )))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Dur, E> {
                Err(E::custom(format!(
                    "a duration needs a unit: write {v}s, not `{v}`"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(self.0).to_string())
    }
}
