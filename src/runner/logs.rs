//! The containers' logs of a run that did not go well: saved to `logs/` in the run
//! directory, scanned for the broker lines about the topic since a stall began, and the
//! brokers' lines about the anomalies' transactions quoted in the verdict.

use std::collections::BTreeMap;
use std::path::Path;

use crate::brokerlog::{BrokerLine, TxnLog};
use crate::checker::{self, Context, Verdict};
use crate::cluster::{Cluster, Role};
use crate::error::Result;
use crate::history::{self, History, TxnId};
use crate::rundir::{now_ms, RunDir, RunInfo};
use crate::stall::LogEvidence;
use crate::stuck::{self, StuckPartition};

use super::env::Env;

/// The logs of a stalled run and what they show about the stall.
pub(super) struct StallLogs {
    /// Every container's log (role, node, text), when saved.
    pub(super) logs: Option<Vec<(Role, String, String)>>,
    /// The broker lines about the topic since the stall began, most frequent first.
    pub(super) lines: Vec<LogEvidence>,
    /// A known cause those lines show.
    pub(super) cause: Option<String>,
    /// What Pulsar said about each partition at the stall, with the brokers' lines about it.
    pub(super) partitions: Vec<StuckPartition>,
}

/// For a stall in a cluster of the harness: save every container's log, scan the brokers' for
/// lines about the topic since the stall began, and quote under each of `partitions` (what
/// Pulsar said about it at the stall) the lines about it. Otherwise nothing but `partitions`.
pub(super) async fn stall_logs(
    dir: &RunDir,
    env: &Env,
    info: &RunInfo,
    history: &History,
    stalled_since: Option<u64>,
    mut partitions: Vec<StuckPartition>,
) -> StallLogs {
    let mut logs: Option<Vec<(Role, String, String)>> = None;
    let mut stall_log = Vec::new();
    let mut stall_cause = None;
    if let (Some(c), Some(since)) = (&env.cluster, stalled_since) {
        let all = save_logs(dir, env, c, info).await;
        let since_wall = now_ms()
            .saturating_sub(history.now_ms())
            .saturating_add(since);
        let (namespace, base) = match info.topic.rsplit_once('/') {
            Some((ns, base)) => (format!("{ns}/"), base.to_string()),
            None => (String::new(), info.topic.clone()),
        };
        for (role, name, log) in &all {
            if matches!(role, Role::Broker | Role::Standalone) {
                stall_log.extend(crate::stall::scan_log(name, log, &base, since_wall, 3));
            }
        }
        stall_log.sort_by_key(|e| std::cmp::Reverse(e.count));
        stall_log.truncate(10);
        stall_cause = crate::stall::known_cause(&stall_log, &namespace);
        quote_lines(&mut partitions, &all, info);
        logs = Some(all);
    }
    StallLogs {
        logs,
        lines: stall_log,
        cause: stall_cause,
        partitions,
    }
}

/// After a verdict that was not a pass: quote what the brokers logged (`all`, as `save_logs`
/// wrote it) about the anomalies' transactions. The context gets the lines and is stored
/// again in `readback.json` (so `recheck` reproduces what follows), and the checker judges
/// `findings` again with it. The lines are evidence only: the status cannot change. Returns
/// `verdict` as it is when no line names those transactions.
pub(super) fn quote_broker_log(
    dir: &RunDir,
    ctx: &mut Context,
    findings: checker::Findings,
    verdict: Verdict,
    all: &[(Role, String, String)],
    history_path: &Path,
    topic: &str,
) -> Result<Verdict> {
    let broker_log = broker_log_of(&verdict, all, history_path, topic);
    if broker_log.is_empty() {
        return Ok(verdict);
    }
    ctx.broker_log = broker_log;
    let mut stored: crate::readlog::StoredReadback = dir.read_json(crate::readlog::FILE)?;
    stored.context = ctx.clone();
    dir.write(
        crate::readlog::FILE,
        &(serde_json::to_string(&stored).expect("serializable") + "\n"),
    )?;
    drop(stored);
    let events = history::read(history_path)?;
    Ok(checker::verdict(findings, Some(events), ctx))
}

/// The brokers' log lines about the transactions of the attempts that carried the verdict's
/// anomalies (see `brokerlog`), read from `all` (as `save_logs` wrote them to the run
/// directory).
fn broker_log_of(
    verdict: &Verdict,
    all: &[(Role, String, String)],
    history_path: &Path,
    topic: &str,
) -> Vec<crate::brokerlog::TxnLog> {
    use crate::brokerlog::{self, WallClock};
    if verdict.attempts.is_empty() {
        return Vec::new();
    }
    let clock = match history::read(history_path) {
        Ok(events) => WallClock::from_history(events),
        Err(_) => WallClock::default(),
    };
    let txns = brokerlog::queries(verdict.attempts.iter().filter_map(|a| a.opened()), &clock);
    scan_brokers(all, &txns, topic)
}

/// `brokerlog::scan` over the brokers' logs as `save_logs` returned them (each quoted by its
/// file in the run directory, `logs/<node>.log`).
pub(super) fn scan_brokers(
    all: &[(Role, String, String)],
    txns: &std::collections::BTreeMap<crate::history::TxnId, Vec<(u64, u64)>>,
    topic: &str,
) -> Vec<crate::brokerlog::TxnLog> {
    use crate::brokerlog::{self, LogFile};
    let files: Vec<(String, &str, &str)> = all
        .iter()
        .filter(|(role, _, _)| matches!(role, Role::Broker | Role::Standalone))
        .map(|(_, name, log)| (format!("logs/{name}.log"), name.as_str(), log.as_str()))
        .collect();
    let logs: Vec<LogFile<'_>> = files
        .iter()
        .map(|(file, node, text)| LogFile { node, file, text })
        .collect();
    let base = topic.rsplit('/').next().unwrap_or(topic);
    brokerlog::scan(&logs, txns, base)
}

/// Write every container's log to `logs/<node>.log` in the run directory: all of it for a
/// cluster this run started, from the run's start on for one it was given (a soak's cluster
/// outlives its iterations). The logs, too.
pub(super) async fn save_logs(
    dir: &RunDir,
    env: &Env,
    c: &Cluster,
    info: &RunInfo,
) -> Vec<(Role, String, String)> {
    let since = if env.owned {
        0
    } else {
        i32::try_from(info.started_ms / 1000).unwrap_or(0)
    };
    let all = c.logs_since(since).await;
    let logs_dir = dir.file("logs");
    if let Err(e) = std::fs::create_dir_all(&logs_dir) {
        tracing::warn!("cannot create {}: {e}", logs_dir.display());
        return all;
    }
    for (_, name, log) in &all {
        let path = logs_dir.join(format!("{name}.log"));
        if let Err(e) = std::fs::write(&path, log) {
            tracing::warn!("cannot write {}: {e}", path.display());
        }
    }
    all
}

/// Broker lines quoted per partition.
const LINES_PER_PARTITION: usize = 12;

/// The brokers' WARN/ERROR lines since the run began that name a transaction holding a
/// partition, or name the partition and no transaction: quoted under the partition.
pub(super) fn quote_lines(
    partitions: &mut [StuckPartition],
    all: &[(Role, String, String)],
    info: &RunInfo,
) {
    // Lines that name no transaction are gathered under a query no real transaction has,
    // over the whole run; the transactions' own queries gather the lines that name them.
    const ANY: TxnId = TxnId {
        most: u64::MAX,
        least: u64::MAX,
    };
    let mut queries: BTreeMap<TxnId, Vec<(u64, u64)>> = partitions
        .iter()
        .flat_map(|p| &p.txns)
        .filter_map(|t| stuck::parse_txn(&t.txn))
        .map(|t| (t, Vec::new()))
        .collect();
    queries.insert(ANY, vec![(info.started_ms, now_ms())]);
    let found: Vec<TxnLog> = scan_brokers(all, &queries, &info.topic);
    let severe = |l: &&BrokerLine| matches!(l.level.as_str(), "WARN" | "ERROR");
    for p in partitions.iter_mut() {
        let local = p
            .partition
            .rsplit('/')
            .next()
            .unwrap_or(&p.partition)
            .to_string();
        let mine: Vec<String> = p.txns.iter().map(|t| t.txn.clone()).collect();
        let mut lines: Vec<BrokerLine> = Vec::new();
        for log in &found {
            if log.txn == ANY {
                lines.extend(
                    log.during
                        .iter()
                        .filter(severe)
                        .filter(|l| names_partition(&l.message, &local))
                        .cloned(),
                );
            } else if mine.contains(&log.txn.to_string()) {
                lines.extend(log.named.iter().filter(severe).cloned());
            }
        }
        p.broker_lines = pick_lines(lines, &local);
    }
}

/// The lines to quote under a partition, at most `LINES_PER_PARTITION`: first the earliest
/// line of each step of the known pattern (`stuck::PATTERN`), then the lines naming the
/// partition, then the rest; shown in time order.
fn pick_lines(mut lines: Vec<BrokerLine>, local: &str) -> Vec<BrokerLine> {
    let by_time = |a: &BrokerLine, b: &BrokerLine| {
        (&a.time, &a.file, a.line).cmp(&(&b.time, &b.file, b.line))
    };
    lines.sort_by(by_time);
    lines.dedup_by(|a, b| a.file == b.file && a.line == b.line);
    let mut picked: Vec<BrokerLine> = Vec::new();
    let take = |l: &BrokerLine, picked: &mut Vec<BrokerLine>| {
        if picked.len() < LINES_PER_PARTITION
            && !picked.iter().any(|p| p.file == l.file && p.line == l.line)
        {
            picked.push(l.clone());
        }
    };
    // The coordinator's giving up names a transaction, not the partition.
    let gave_up = stuck::PATTERN[3];
    for key in stuck::PATTERN {
        if let Some(l) = lines.iter().find(|l| {
            l.message.contains(key) && (key == gave_up || names_partition(&l.message, local))
        }) {
            take(l, &mut picked);
        }
    }
    for naming in [true, false] {
        for l in lines
            .iter()
            .filter(|l| names_partition(&l.message, local) == naming)
        {
            take(l, &mut picked);
        }
    }
    picked.sort_by(by_time);
    picked
}

/// Whether a line names this partition (`t-partition-1`, not `t-partition-10`).
fn names_partition(message: &str, local: &str) -> bool {
    message.match_indices(local).any(|(i, _)| {
        !message[i + local.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

#[cfg(test)]
mod tests;
