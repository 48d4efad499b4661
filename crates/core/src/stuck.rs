//! Stuck reads: when the wait for open transactions runs out after every fault healed, what
//! holds each partition (Pulsar's own answers: the transaction buffer, the managed ledger, the
//! coordinators' transactions, the brokers' lines), which remedies were tried, and whether one
//! healed it. Pure: the runner (`src/stuck.rs`) asks Pulsar and fills these types in; this
//! module words them, decides whether they are evidence of a liveness anomaly, and names the
//! known cause the evidence matches.
//!
//! A stuck read is a *liveness* finding about Pulsar only when Pulsar itself says so: a
//! partition whose buffer reports transactions open and a `maxReadPosition` before its
//! `lastConfirmedEntry`, or a coordinator that reports a transaction naming the partition still
//! COMMITTING or ABORTING. When the admin API did not answer, nothing is claimed
//! ([`StuckReads::has_evidence`] is false) and the run stays inconclusive.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::brokerlog::BrokerLine;

/// The remedies, in the order they are tried (scenario key `remedies:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Remedy {
    /// END_TXN again, with the action the coordinator is already carrying out, for every
    /// transaction it reports COMMITTING or ABORTING; the coordinator then sends
    /// END_TXN_ON_PARTITION again to every partition.
    ReEnd,
    /// Unload the coordinator's topic (`transaction_coordinator_assign-partition-N`) and
    /// connect a transactional client to it; its reload re-drives every COMMITTING and
    /// ABORTING transaction.
    UnloadCoordinator,
    /// Unload the stuck partition; its transaction buffer recovers from its log.
    UnloadTopic,
}

impl Remedy {
    /// Every remedy, in the default order.
    pub const ALL: [Remedy; 3] = [
        Remedy::ReEnd,
        Remedy::UnloadCoordinator,
        Remedy::UnloadTopic,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Remedy::ReEnd => "re-end",
            Remedy::UnloadCoordinator => "unload-coordinator",
            Remedy::UnloadTopic => "unload-topic",
        }
    }

    pub fn parse(s: &str) -> Option<Remedy> {
        Remedy::ALL.into_iter().find(|r| r.name() == s)
    }
}

impl fmt::Display for Remedy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A transaction a coordinator reported (`slowTransactions`) that names a stuck partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StuckTxn {
    /// As Pulsar prints it: `(0,1067)`.
    pub txn: String,
    /// OPEN, COMMITTING, ABORTING, ...
    pub status: String,
    /// How long it had been open when the harness asked (ms), from the coordinator's
    /// `openTimestamp`.
    pub age_ms: Option<u64>,
    /// Its timeout (ms), as the coordinator reports it (`timeoutAt`, a duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Every partition it wrote to, with whether that partition's buffer ended it (`aborted`
    /// of `producedPartitions`; Pulsar reports only the aborted flag).
    pub partitions: Vec<TxnPartition>,
}

impl StuckTxn {
    /// Whether the coordinator is ending it (and so should have told every partition).
    pub fn ending(&self) -> bool {
        matches!(self.status.as_str(), "COMMITTING" | "ABORTING")
    }

    /// OPEN and not yet past its timeout: it holds the partition legitimately (another client's
    /// transaction, or a wait shorter than the transactions' timeout), so the hold is no
    /// evidence of anything wrong in Pulsar. Unknown age or timeout: not within.
    pub fn within_timeout(&self) -> bool {
        self.status == "OPEN"
            && matches!((self.age_ms, self.timeout_ms), (Some(a), Some(t)) if a < t)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnPartition {
    pub partition: String,
    pub start_position: Option<String>,
    pub aborted: Option<bool>,
}

/// One partition whose read could not complete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StuckPartition {
    /// The partition's full topic name.
    pub partition: String,
    /// Its index (-1: not partitioned).
    pub index: i32,
    /// What the wait said held it, in words.
    pub held: String,
    /// `transactionBufferStats`: `state`, `ongoingTxnSize`, `maxReadPosition`.
    pub buffer_state: Option<String>,
    pub open: Option<u64>,
    /// (ledger, entry); the entry is -1 before the ledger's first entry.
    pub max_read: Option<(u64, i64)>,
    /// `internalStats`: `lastConfirmedEntry`.
    pub last_confirmed: Option<(u64, i64)>,
    /// Entries written after `maxReadPosition`, counted from `internalStats`' ledgers.
    pub entries_behind: Option<u64>,
    /// The coordinators' transactions that name the partition.
    pub txns: Vec<StuckTxn>,
    /// The brokers' WARN/ERROR lines naming those transactions or the partition since the run
    /// began (the first few).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broker_lines: Vec<BrokerLine>,
    /// What asking Pulsar failed with, when it did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

impl StuckPartition {
    /// Pulsar's own answers say this partition is held: the buffer reports transactions open
    /// with its read position before the ledger's end, or a coordinator reports a transaction
    /// naming it still COMMITTING or ABORTING.
    ///
    /// A buffer held while a transaction naming the partition is OPEN within its timeout is
    /// not evidence: that transaction may legitimately hold it.
    pub fn has_evidence(&self) -> bool {
        let buffer_held = matches!(self.open, Some(n) if n > 0)
            && matches!((self.max_read, self.last_confirmed), (Some(m), Some(l)) if m < l);
        let legitimately = self.txns.iter().any(StuckTxn::within_timeout);
        (buffer_held && !legitimately) || self.txns.iter().any(StuckTxn::ending)
    }

    /// "partition 0: 64766 entries behind maxReadPosition 21:265 (lastConfirmedEntry 34:3961),
    /// 4 transaction(s) open, buffer Ready; held by (0,1067) ABORTING for 380s (not ended here)"
    pub fn describe(&self) -> String {
        let name = if self.index >= 0 {
            format!("partition {}", self.index)
        } else {
            self.partition.clone()
        };
        let pos = |p: (u64, i64)| format!("{}:{}", p.0, p.1);
        let mut s = name;
        match (self.max_read, self.entries_behind) {
            (Some(m), Some(n)) => {
                s.push_str(&format!(": {n} entries behind maxReadPosition {}", pos(m)))
            }
            (Some(m), None) => s.push_str(&format!(": maxReadPosition {}", pos(m))),
            (None, _) => s.push_str(": maxReadPosition not reported"),
        }
        if let Some(l) = self.last_confirmed {
            s.push_str(&format!(" (lastConfirmedEntry {})", pos(l)));
        }
        if let Some(n) = self.open {
            s.push_str(&format!(", {n} transaction(s) open"));
        }
        if let Some(st) = &self.buffer_state {
            s.push_str(&format!(", buffer {st}"));
        }
        let ending: Vec<String> = self
            .txns
            .iter()
            .map(|t| {
                let here = t
                    .partitions
                    .iter()
                    .find(|p| p.partition == self.partition)
                    .and_then(|p| p.aborted);
                let age = match (t.age_ms, t.within_timeout()) {
                    (Some(a), true) => format!(
                        " for {}s (within its {}s timeout)",
                        a / 1000,
                        t.timeout_ms.unwrap_or(0) / 1000
                    ),
                    (Some(a), false) => format!(" for {}s", a / 1000),
                    (None, _) => String::new(),
                };
                let here = match here {
                    Some(true) => " (ended here)",
                    Some(false) => " (not ended here)",
                    None => "",
                };
                format!("{} {}{age}{here}", t.txn, t.status)
            })
            .collect();
        if ending.is_empty() {
            s.push_str("; no coordinator reports a transaction naming it");
        } else if ending.len() > 5 {
            s.push_str(&format!(
                "; coordinator: {} and {} more",
                ending[..5].join(", "),
                ending.len() - 5
            ));
        } else {
            s.push_str(&format!("; coordinator: {}", ending.join(", ")));
        }
        s
    }
}

/// One remedy tried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemedyRecord {
    pub remedy: Remedy,
    /// What it was applied to (transactions, the coordinator topics, partitions).
    pub targets: Vec<String>,
    /// Run time (ms) it started.
    pub at_ms: u64,
    /// How long it and the wait after it took (ms).
    pub elapsed_ms: u64,
    /// What Pulsar answered, per target.
    pub answers: Vec<String>,
    /// Every partition readable after it.
    pub healed: bool,
    /// What still held the read after it (empty when healed).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub still_held: String,
}

/// Everything about the read that could not complete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StuckReads {
    /// Run time (ms) from which the read was held: the earliest end request (commit or abort)
    /// of a transaction that holds it, or the start of the wait when none is in the history.
    pub since_ms: u64,
    /// Run time (ms) the harness gave up waiting (every fault had healed before the wait).
    pub detected_ms: u64,
    /// How long the harness waited after every fault healed (s): the liveness threshold.
    pub waited_s: u64,
    pub partitions: Vec<StuckPartition>,
    pub remedies: Vec<RemedyRecord>,
    /// A known pattern the evidence matches, in plain words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub likely_cause: Option<String>,
}

impl StuckReads {
    /// Transactions OPEN within their timeout that name a held partition (`(0,1) OPEN, 5s of
    /// 600s`).
    pub fn open_within_timeout(&self) -> Vec<String> {
        self.partitions
            .iter()
            .flat_map(|p| &p.txns)
            .filter(|t| t.within_timeout())
            .map(|t| {
                format!(
                    "{} OPEN, {}s of {}s",
                    t.txn,
                    t.age_ms.unwrap_or(0) / 1000,
                    t.timeout_ms.unwrap_or(0) / 1000
                )
            })
            .collect()
    }

    /// Pulsar's answers say at least one partition is held (see `StuckPartition::has_evidence`).
    pub fn has_evidence(&self) -> bool {
        self.partitions.iter().any(StuckPartition::has_evidence)
    }

    /// The remedy after which every partition was readable.
    pub fn healed_by(&self) -> Option<&RemedyRecord> {
        self.remedies.iter().find(|r| r.healed)
    }

    /// The liveness finding in one sentence.
    pub fn describe(&self) -> String {
        let held: Vec<String> = self
            .partitions
            .iter()
            .map(StuckPartition::describe)
            .collect();
        let mut s = format!(
            "Pulsar left the read-back held {}s after every fault healed: {}",
            self.waited_s,
            held.join("; ")
        );
        match self.healed_by() {
            Some(r) => s.push_str(&format!(
                "; remedy `{}` healed it in {:.1}s",
                r.remedy,
                r.elapsed_ms as f64 / 1000.0
            )),
            None if self.remedies.is_empty() => s.push_str("; no remedy was tried"),
            None => s.push_str(&format!(
                "; remedies tried without healing it: {}",
                self.remedies
                    .iter()
                    .map(|r| r.remedy.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
        s
    }
}

/// When the read was first held: the earliest commit or abort request the history records for
/// one of `txns` (as Pulsar prints them, `(0,1067)`), else `default`.
pub fn held_since<I, E>(events: I, txns: &[String], default: u64) -> u64
where
    I: IntoIterator<Item = Result<crate::history::Event, E>>,
{
    use crate::history::EventBody;
    let ids: std::collections::BTreeSet<String> = txns.iter().cloned().collect();
    events
        .into_iter()
        .filter_map(Result::ok)
        .filter_map(|e| match &e.body {
            EventBody::CommitRequested { txn, .. } | EventBody::AbortRequested { txn, .. }
                if ids.contains(&txn.to_string()) =>
            {
                Some(e.t_ms)
            }
            _ => None,
        })
        .min()
        .unwrap_or(default)
}

/// Entries written after `max_read`, from `internalStats`' `ledgers` (ledger id, entries;
/// the open ledger reports 0 entries, so `current` gives its count) and `lastConfirmedEntry`.
/// None when `max_read`'s ledger is not among them.
pub fn entries_behind(
    ledgers: &[(u64, u64)],
    current: Option<(u64, u64)>,
    max_read: (u64, i64),
    last_confirmed: (u64, i64),
) -> Option<u64> {
    if max_read >= last_confirmed {
        return Some(0);
    }
    let count = |id: u64, n: u64| -> u64 {
        match current {
            Some((cid, cn)) if cid == id && n == 0 => cn,
            _ => n,
        }
    };
    let mut seen = false;
    let mut total = 0u64;
    for &(id, n) in ledgers {
        let n = count(id, n);
        // Entries up to and including entry e of a ledger: e + 1 (none for -1).
        let upto = |e: i64| u64::try_from(e + 1).unwrap_or(0);
        if id == max_read.0 {
            seen = true;
            let end = if id == last_confirmed.0 {
                n.min(upto(last_confirmed.1))
            } else {
                n
            };
            total += end.saturating_sub(upto(max_read.1));
        } else if id > max_read.0 && id <= last_confirmed.0 {
            total += if id == last_confirmed.0 {
                n.min(upto(last_confirmed.1))
            } else {
                n
            };
        }
    }
    seen.then_some(total)
}

/// Parse `21:265` (a managed-ledger position; `21:-1` is before the ledger's first entry).
pub fn parse_position(s: &str) -> Option<(u64, i64)> {
    let (l, e) = s.split_once(':')?;
    Some((l.trim().parse().ok()?, e.trim().parse().ok()?))
}

/// The key phrases of the known pattern, in the order the broker logs them: the partition's
/// buffer failing its recovery, the partition failing END_TXN_ON_PARTITION, the coordinator
/// reading the answer as `UnknownError`, the coordinator giving up.
pub const PATTERN: [&str; 4] = [
    "while recovering the transaction buffer",
    "handleEndTxnOnPartition fail",
    "error UnknownError",
    "End transaction fail",
];

/// The known pattern the evidence matches, in plain words: the coordinator gave up ending a
/// transaction (`TransactionMetadataStoreService`: "End transaction fail!") after a partition
/// failed END_TXN_ON_PARTITION (`ServerCnx`: "handleEndTxnOnPartition fail!"), typically because
/// its transaction buffer failed to recover (a managed ledger closed by an unload, a snapshot
/// read that timed out), and the transaction stays COMMITTING or ABORTING with that partition
/// not ended.
pub fn known_cause(partitions: &[StuckPartition]) -> Option<String> {
    let lines: Vec<&BrokerLine> = partitions.iter().flat_map(|p| &p.broker_lines).collect();
    let first = |key: &str| lines.iter().find(|l| l.message.contains(key)).copied();
    let gave_up = first(PATTERN[3])?;
    let ending: Vec<&StuckTxn> = partitions
        .iter()
        .flat_map(|p| &p.txns)
        .filter(|t| t.ending())
        .collect();
    if ending.is_empty() {
        return None;
    }
    let named: Vec<String> = ending
        .iter()
        .take(5)
        .map(|t| format!("{} {}", t.txn, t.status))
        .collect();
    let more = if ending.len() > 5 {
        format!(" and {} more", ending.len() - 5)
    } else {
        String::new()
    };
    let quote = |l: &BrokerLine| format!("{}: {}", l.place(), cut(&l.message, 200));
    let mut s = format!(
        "the coordinator gave up ending {}{more} ({})",
        named.join(", "),
        quote(gave_up)
    );
    if let Some(f) = first(PATTERN[1]) {
        s.push_str(&format!(
            " after a partition failed END_TXN_ON_PARTITION ({})",
            quote(f)
        ));
    }
    if let Some(r) = first(PATTERN[0]) {
        // The exception the recovery failed with is what tells one case from another.
        let why = r.message.split(" | ").nth(1).unwrap_or(&r.message);
        s.push_str(&format!(
            "; that partition's transaction buffer had failed to recover ({}: {})",
            r.place(),
            cut(why, 200)
        ));
    }
    if let Some(u) = first(PATTERN[2]) {
        s.push_str(&format!(
            "; the coordinator got UnknownError ({}), which it does not retry",
            u.place()
        ));
    }
    s.push_str(
        "; the partition's buffer has no timeout of its own, so it waits for the coordinator for ever. No upstream issue describing this was found (related upstream: 19200, 23550, 26379)",
    );
    Some(s)
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}...", s.chars().take(n).collect::<String>())
    }
}

#[cfg(test)]
mod tests;
