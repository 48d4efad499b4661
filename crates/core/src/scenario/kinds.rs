//! The small closed sets a scenario names, shared by the file's shape (`file`) and the
//! validated scenario (`model`): how a run may end, the JVM setting, the topology, the resend
//! policy, a fault's pinned draws, restart mode, the reply a `reply_loss` drops, a guard.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a run can end, as a scenario's `expect:` names it: a verdict, or `stalled` (an
/// inconclusive run whose producer stopped making progress with no fault active).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expected {
    Pass,
    Violation,
    Inconclusive,
    Stalled,
    /// A liveness finding: the read-back held after every fault healed (see `stuck`).
    Stuck,
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Expected::Pass => "pass",
            Expected::Violation => "violation",
            Expected::Inconclusive => "inconclusive",
            Expected::Stalled => "stalled",
            Expected::Stuck => "stuck",
        })
    }
}

/// How the JVMs of a cluster the harness starts run: `cluster.jvm` in a scenario, overridden
/// by the environment variable [`Jvm::ENV`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Jvm {
    /// The official image's settings: the G1 collector and the full JIT (C1, then C2).
    #[default]
    Standard,
    /// The first JIT tier only and the serial collector: a node starts on about half the CPU
    /// (12.5 s against 25.6 s for a standalone, measured), and runs its hot code slower. For
    /// small machines and test suites; a finding is reported with the setting it ran under.
    Quick,
}

impl Jvm {
    /// The environment variable that overrides `cluster.jvm` of every scenario the harness
    /// loads (and sets `cluster up`'s default): `standard` or `quick`.
    pub const ENV: &'static str = "PULSAR_CHAOS_JVM";

    pub fn parse(s: &str) -> Result<Jvm, String> {
        match s.trim() {
            "standard" => Ok(Jvm::Standard),
            "quick" => Ok(Jvm::Quick),
            other => Err(format!("{}={other}: expected standard or quick", Jvm::ENV)),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Jvm::Standard => "standard",
            Jvm::Quick => "quick",
        }
    }
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

/// The choices a plan draws from the seed, written out in the scenario (the `partition`,
/// `coordinator` and `draw_seed` keys of a fault entry): a pinned scenario (see `shrink`) plans
/// the same firings whatever its entries' positions. `None`: drawn as before.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pins {
    /// With `owner-of-topic`: the partition whose owner is hit.
    pub partition: Option<u32>,
    /// With `coordinator-owner`: the coordinator whose broker is hit.
    pub coordinator: Option<u32>,
    /// With a `reply_loss` probability: the seed of its draws.
    pub draw_seed: Option<u64>,
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

/// A condition the run waits for once a fault is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Guard {
    /// An END_TXN COMMIT is in flight.
    Committing,
    /// The next END_TXN COMMIT confirmed once the fault is due: the first commit after an
    /// outage (a coordinator that has just recovered), when the fault is due during it.
    NextCommit,
}
