//! The consume-transform-produce workload (`kind: transform`, issue #13): its keys' types, shared
//! by the file's serde types and the validated scenario.
//!
//! The harness fills an input topic (`<topic>-in`) with the numbers `[0, N)`, then `consumers`
//! consumers on one subscription each take up to `txn_size` inputs, publish `f(n)` for each to
//! the workload's topic and acknowledge the inputs, all in one transaction. The read-back of the
//! workload's topic is checked as for the producer: `f([0, N))` exactly once.

use serde::{Deserialize, Serialize};

/// Which workload a scenario runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// The transactional producer of `[0, N)` (the default).
    #[default]
    Produce,
    /// Consume `[0, N)` from `<topic>-in`, publish `f(n)` and acknowledge in one transaction.
    Transform,
}

/// The subscription type of the transform's consumers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubscriptionType {
    #[default]
    Shared,
    Failover,
    KeyShared,
}

impl SubscriptionType {
    /// The name the scenario file gives it, which the drivers' protocol uses too.
    pub fn as_str(self) -> &'static str {
        match self {
            SubscriptionType::Shared => "shared",
            SubscriptionType::Failover => "failover",
            SubscriptionType::KeyShared => "key_shared",
        }
    }
}

impl std::fmt::Display for SubscriptionType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `f`, what the transform publishes for input `n`. Only `identity` (f(n) = n) so far: the
/// checker's range check reads the output as `[0, N)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransformFunction {
    #[default]
    Identity,
}

impl TransformFunction {
    /// f(n).
    pub fn apply(self, n: u64) -> u64 {
        match self {
            TransformFunction::Identity => n,
        }
    }
}

/// What the conflict probe does once it has acknowledged an input another open transaction
/// holds (`workload.conflict_probe`; the own client's transform only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConflictProbe {
    /// Abort the probe's transaction whatever Pulsar answered (the default): an accepted
    /// probe is graded from the broker's answer alone, and nothing of it reaches the output.
    #[default]
    Abort,
    /// Process the input again as a transform would: when Pulsar accepts the probe's ACK, the
    /// probe's transaction also publishes `f(n)` for that input and commits, so an acceptance
    /// shows in the read-back as a duplicated output. The probe prefers a member of a batched
    /// entry whose every member the holding transaction acknowledged. A refused probe is
    /// aborted, as with `abort`.
    Commit,
}

impl std::fmt::Display for ConflictProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ConflictProbe::Abort => "abort",
            ConflictProbe::Commit => "commit",
        })
    }
}

/// The validated keys of `kind: transform`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transform {
    /// Consumers on the input subscription, each with its own transactions (default: the
    /// workload's `concurrency`).
    pub consumers: u32,
    pub subscription_type: SubscriptionType,
    pub function: TransformFunction,
    /// Fill the input topic in transactions (true) or with plain sends (false, the default).
    pub input_transactional: bool,
    /// With `input_transactional`: abort the first attempt of every k-th transaction of the
    /// fill on purpose (its numbers are sent again in a new one), so the input's log holds
    /// aborted messages that no consumer may receive (apache/pulsar#19814).
    pub input_abort_every: Option<u32>,
    /// Messages per batched entry of the input's fill; `None`: the workload's `batch_size`
    /// (which is always the outputs').
    pub input_batch_size: Option<u32>,
    /// What the conflict probe's transaction does after its ACK (`abort`, the default, or
    /// `commit`).
    pub conflict_probe: ConflictProbe,
}

/// The name of the transform's subscription on the input topic.
pub const SUBSCRIPTION: &str = "pulsar-chaos-transform";

/// The input topic of a transform run whose output (the checked topic) is `topic`.
pub fn input_topic(topic: &str) -> String {
    format!("{topic}-in")
}
