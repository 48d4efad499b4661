//! Stalls: when a run stops making progress with no fault to blame, and what the brokers said
//! meanwhile. Pure: the clock and the logs come in as arguments.
//!
//! A stall is a liveness finding, not a safety one: nothing is lost or duplicated, but the
//! cluster does not recover from a fault it was given time to heal. The run ends early
//! (inconclusive) instead of waiting out its deadline, and the verdict quotes the broker log
//! lines about the run's topic that repeated during the stall.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::history::TxnId;

/// Watches commits and active faults; says when nothing has committed for `timeout` with no
/// fault active. Fed by the runner once a second.
#[derive(Debug, Clone)]
pub struct StallWatch {
    timeout_ms: u64,
    /// Since when nothing has counted as progress (a commit, or a fault being active).
    idle_since_ms: u64,
    committed: u64,
}

impl StallWatch {
    pub fn new(timeout: Duration, now_ms: u64, committed: u64) -> StallWatch {
        StallWatch {
            timeout_ms: timeout.as_millis() as u64,
            idle_since_ms: now_ms,
            committed,
        }
    }

    /// Record what is seen at `now_ms`. `Some(since)`: stalled, idle since `since` (run ms).
    pub fn observe(&mut self, now_ms: u64, committed: u64, faults_active: bool) -> Option<u64> {
        if committed != self.committed || faults_active {
            self.committed = committed;
            self.idle_since_ms = now_ms;
            return None;
        }
        (now_ms.saturating_sub(self.idle_since_ms) >= self.timeout_ms).then_some(self.idle_since_ms)
    }
}

/// A broker log line about the run's topic that repeated (WARN or ERROR), grouped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEvidence {
    /// The container, e.g. `broker-1`.
    pub node: String,
    /// The topic or partition the line names.
    pub topic: String,
    pub level: String,
    /// The first line of the group, without its timestamp and thread.
    pub message: String,
    pub count: u64,
    /// Log timestamps of the first and last line of the group, as written.
    pub first: String,
    pub last: String,
}

/// Parse `2026-11-30T07:23:43,454` (UTC, as Pulsar's log4j pattern writes it) to Unix ms.
pub fn parse_log_time(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 23 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec, ms) = (num(11..13)?, num(14..16)?, num(17..19)?, num(20..23)?);
    // Days from the civil date (proleptic Gregorian), after Howard Hinnant's algorithm.
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let t = ((days * 24 + h) * 60 + mi) * 60 + sec;
    u64::try_from(t * 1000 + ms).ok()
}

/// The partition or topic a line names: the longest `<base>` or `<base>-partition-<n>` in it.
fn topic_in(line: &str, base: &str) -> Option<String> {
    let i = line.find(base)?;
    let rest = &line[i + base.len()..];
    let suffix: String = if let Some(p) = rest.strip_prefix("-partition-") {
        let digits: String = p.chars().take_while(|c| c.is_ascii_digit()).collect();
        if digits.is_empty() {
            String::new()
        } else {
            format!("-partition-{digits}")
        }
    } else {
        String::new()
    };
    Some(format!("{base}{suffix}"))
}

/// Digit runs replaced by `#`, so that texts differing only in ids group together.
pub fn shape(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut in_digits = false;
    for c in message.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('#');
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(c);
        }
    }
    out
}

/// The WARN and ERROR lines of one container's log that name `topic_base` (the topic's
/// local name, e.g. `cfaults-f715879d`) at or after `since_unix_ms`, grouped by topic and
/// message shape; groups of at least `min_count` lines, most frequent first.
pub fn scan_log(
    node: &str,
    log: &str,
    topic_base: &str,
    since_unix_ms: u64,
    min_count: u64,
) -> Vec<LogEvidence> {
    let mut groups: BTreeMap<(String, String), LogEvidence> = BTreeMap::new();
    for line in log.lines() {
        let level = if line.contains(" WARN ") {
            "WARN"
        } else if line.contains(" ERROR ") {
            "ERROR"
        } else {
            continue;
        };
        let Some(topic) = topic_in(line, topic_base) else {
            continue;
        };
        let stamp = line.get(..23).unwrap_or("");
        if let Some(t) = parse_log_time(stamp) {
            if t < since_unix_ms {
                continue;
            }
        }
        // `<stamp> [thread] LEVEL logger - message`: keep the logger's last name and the message.
        let after_level = line
            .split_once(&format!(" {level} "))
            .map(|(_, r)| r.trim())
            .unwrap_or(line);
        let (logger, message) = after_level.split_once(" - ").unwrap_or(("", after_level));
        let logger = logger.rsplit('.').next().unwrap_or(logger).trim();
        let text = if logger.is_empty() {
            message.to_string()
        } else {
            format!("{logger}: {message}")
        };
        let text: String = text.chars().take(400).collect();
        let key = (topic.clone(), shape(&text));
        let e = groups.entry(key).or_insert_with(|| LogEvidence {
            node: node.to_string(),
            topic,
            level: level.to_string(),
            message: text,
            count: 0,
            first: stamp.to_string(),
            last: stamp.to_string(),
        });
        e.count += 1;
        e.last = stamp.to_string();
    }
    let mut out: Vec<LogEvidence> = groups
        .into_values()
        .filter(|e| e.count >= min_count)
        .collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then(a.topic.cmp(&b.topic)));
    out
}

/// A known Pulsar bug the evidence matches, in words a user can act on.
/// `namespace` is what precedes the local topic name, e.g. `persistent://public/default/`.
pub fn known_cause(evidence: &[LogEvidence], namespace: &str) -> Option<String> {
    // Pulsar 4.0.x (checked in 4.0.7): the transaction buffer chains every transactional
    // write on the previous one's future, so after one failed write (e.g. a bookie
    // restart) every later transactional send to the partition fails with that same error,
    // until the topic is loaded again. Upstream replaced the chain (apache/pulsar#24945).
    let stuck = evidence
        .iter()
        .find(|e| e.message.contains("Failed to persist msg in store") && e.count >= 10)?;
    Some(format!(
        "{} on {} kept failing transactional sends with the same stored error ({}x): this matches \
         the Pulsar transaction buffer keeping a failed write's error for every later \
         transactional send to that partition until the topic is reloaded (the chain apache/pulsar#24945 \
         replaced); `pulsar-admin topics unload {namespace}{}` recovers it",
        stuck.node, stuck.topic, stuck.count, stuck.topic
    ))
}

/// The transaction an answer `Transaction [(0,263)] has been ended. ...` names: what the
/// broker's transaction buffer says when it refuses a write of a transaction at or below the
/// coordinator's low-water mark (checked in 4.0.7's `TopicTransactionBuffer`).
pub fn ended_txn_named(message: &str) -> Option<TxnId> {
    let (_, rest) = message.split_once("Transaction [(")?;
    let (id, rest) = rest.split_once(")]")?;
    if !rest.trim_start().starts_with("has been ended") {
        return None;
    }
    let (most, least) = id.split_once(',')?;
    Some(TxnId {
        most: most.trim().parse().ok()?,
        least: least.trim().parse().ok()?,
    })
}

/// Sends refused with an answer naming an ended transaction other than the one they carried
/// (the client's `client_answer` events), since the last progress, by the transaction named.
///
/// Pulsar 4.0.x's transaction buffer chains every transactional write on the previous one's
/// future, so one refused write (e.g. a message of a timed-out transaction that a client sent
/// again after a reconnect, refused at the low-water mark) makes every later transactional
/// send to the partition fail with that same error, until the topic is loaded again. The
/// broker logs nothing then; its answers are the evidence: a send in `(0,299)` refused with
/// "Transaction [(0,263)] has been ended".
#[derive(Debug, Clone, Default)]
pub struct ForeignRefusals {
    by_named: BTreeMap<TxnId, Refused>,
}

#[derive(Debug, Clone)]
struct Refused {
    count: u64,
    txns: BTreeSet<TxnId>,
    /// The first such answer: attempt, its transaction, the answer's words.
    first: (u64, TxnId, String),
}

impl ForeignRefusals {
    /// A failed answer to a send of `attempt` in `txn`.
    pub fn answer(&mut self, attempt: u64, txn: TxnId, message: &str) {
        let Some(named) = ended_txn_named(message) else {
            return;
        };
        if named == txn {
            // A write of an ended transaction refused: the check doing its job.
            return;
        }
        if let Some(r) = self.by_named.get_mut(&named) {
            r.count += 1;
            r.txns.insert(txn);
        } else if self.by_named.len() < 64 {
            self.by_named.insert(
                named,
                Refused {
                    count: 1,
                    txns: BTreeSet::from([txn]),
                    first: (attempt, txn, message.to_string()),
                },
            );
        }
    }

    /// Progress (a commit, a fault's heal): what came before explains no stall.
    pub fn clear(&mut self) {
        self.by_named.clear();
    }

    /// The known bug the answers since the last progress match, if at least ten of them named
    /// one transaction (`topic`: the run's, for the remedy).
    pub fn cause(&self, topic: &str) -> Option<String> {
        let (named, r) = self
            .by_named
            .iter()
            .filter(|(_, r)| r.count >= 10)
            .max_by_key(|(_, r)| r.count)?;
        let (attempt, txn, message) = &r.first;
        Some(format!(
            "the broker refused {} send(s) of {} transaction(s) (the first: attempt #{attempt} in \
             {txn}) with \"{message}\", naming {named}, a transaction those sends did not carry: \
             this matches the Pulsar transaction buffer keeping one refused write's error for \
             every later transactional send to that partition until the topic is reloaded (the \
             chain apache/pulsar#24945 replaced); `pulsar-admin topics unload {topic}` recovers it",
            r.count,
            r.txns.len()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_or_an_active_fault_resets_the_watch() {
        let mut w = StallWatch::new(Duration::from_secs(60), 0, 0);
        assert_eq!(w.observe(59_999, 0, false), None);
        assert_eq!(w.observe(60_000, 0, false), Some(0));
        // A commit resets.
        assert_eq!(w.observe(61_000, 1, false), None);
        assert_eq!(w.observe(120_999, 1, false), None);
        assert_eq!(w.observe(121_000, 1, false), Some(61_000));
        // A fault being active resets: the cluster is not expected to commit then.
        assert_eq!(w.observe(130_000, 1, true), None);
        assert_eq!(w.observe(189_999, 1, false), None);
        assert_eq!(w.observe(190_000, 1, false), Some(130_000));
    }

    #[test]
    fn log_timestamps_are_utc_unix_milliseconds() {
        assert_eq!(parse_log_time("1970-01-01T00:00:00,000"), Some(0));
        // date -u -d 2026-11-30T07:23:43.454Z +%s%3N
        assert_eq!(
            parse_log_time("2026-11-30T07:23:43,454"),
            Some(1_796_023_423_454)
        );
        assert_eq!(
            parse_log_time("2024-02-29T23:59:59,999"),
            Some(1_709_251_199_999)
        );
        assert_eq!(parse_log_time("not a time at all, no"), None);
    }

    // Lines as Pulsar 4.0.7 wrote them in a run where a bookie restart left partition 1
    // refusing every transactional send.
    const LOG: &str = "\
2026-11-30T07:23:33,660 [broker-topic-workers-OrderedExecutor-0-0] INFO  org.apache.pulsar.broker.service.BrokerService - Created topic persistent://public/default/cfaults-f715879d-partition-1 - dedup is disabled
2026-11-30T07:23:36,250 [BookKeeperClientWorker-OrderedExecutor-0-0] ERROR org.apache.pulsar.broker.transaction.buffer.impl.TopicTransactionBuffer - Failed to append buffer to txn (0,12)
2026-11-30T07:23:36,260 [BookKeeperClientWorker-OrderedExecutor-0-0] WARN  org.apache.pulsar.broker.service.persistent.PersistentTopic - [persistent://public/default/cfaults-f715879d-partition-1] Failed to persist msg in store: Not enough non-faulty bookies available error code: -6
2026-11-30T07:23:43,454 [pulsar-io-7-1] WARN  org.apache.pulsar.broker.service.persistent.PersistentTopic - [persistent://public/default/cfaults-f715879d-partition-1] Failed to persist msg in store: Not enough non-faulty bookies available error code: -6
2026-11-30T07:23:43,636 [pulsar-io-7-1] WARN  org.apache.pulsar.broker.service.persistent.PersistentTopic - [persistent://public/default/cfaults-f715879d-partition-1] Failed to persist msg in store: Not enough non-faulty bookies available error code: -6
2026-11-30T07:23:44,001 [pulsar-io-7-1] WARN  org.apache.pulsar.broker.service.persistent.PersistentTopic - [persistent://public/default/cfaults-f715879d-partition-0] Failed to persist msg in store: Not enough non-faulty bookies available error code: -6
2026-11-30T07:23:45,000 [pulsar-io-7-1] WARN  org.apache.pulsar.broker.service.persistent.PersistentTopic - [persistent://public/default/other-topic-partition-1] Failed to persist msg in store: Not enough non-faulty bookies available error code: -6
";

    #[test]
    fn broker_lines_group_by_partition_and_shape_from_the_stall_on() {
        let since = parse_log_time("2026-11-30T07:23:40,000").unwrap();
        let ev = scan_log("broker-1", LOG, "cfaults-f715879d", since, 1);
        assert_eq!(ev.len(), 2, "{ev:#?}");
        assert_eq!(ev[0].topic, "cfaults-f715879d-partition-1");
        assert_eq!(ev[0].count, 2);
        assert_eq!(ev[0].level, "WARN");
        assert_eq!(ev[0].first, "2026-11-30T07:23:43,454");
        assert_eq!(ev[0].last, "2026-11-30T07:23:43,636");
        assert!(
            ev[0].message.starts_with("PersistentTopic: [persistent://public/default/cfaults-f715879d-partition-1] Failed to persist msg in store: Not enough non-faulty bookies"),
            "{}",
            ev[0].message
        );
        assert_eq!(ev[1].topic, "cfaults-f715879d-partition-0");
        // Lines before the stall and INFO lines do not count; another topic does not either.
        let all = scan_log("broker-1", LOG, "cfaults-f715879d", 0, 1);
        assert_eq!(all.iter().map(|e| e.count).sum::<u64>(), 4);
        assert!(scan_log("broker-1", LOG, "cfaults-f715879d", since, 3).is_empty());
    }

    #[test]
    fn a_repeated_persist_failure_is_named_as_the_known_transaction_buffer_bug() {
        let mut ev = scan_log("broker-1", LOG, "cfaults-f715879d", 0, 1);
        let ns = "persistent://public/default/";
        assert_eq!(known_cause(&ev, ns), None, "three lines are not a pattern");
        ev[0].count = 687;
        let cause = known_cause(&ev, ns).unwrap();
        assert!(
            cause.contains("broker-1 on cfaults-f715879d-partition-1"),
            "{cause}"
        );
        assert!(cause.contains("687x"), "{cause}");
        assert!(
            cause
                .contains("topics unload persistent://public/default/cfaults-f715879d-partition-1"),
            "{cause}"
        );
    }

    fn txn(least: u64) -> TxnId {
        TxnId { most: 0, least }
    }

    #[test]
    fn the_transaction_an_ended_answer_names_is_read() {
        let m =
            "Transaction [(0,263)] has been ended. Please use a new transaction to send message.";
        assert_eq!(ended_txn_named(m), Some(txn(263)));
        assert_eq!(
            ended_txn_named("Transaction [(3, 7)] has been ended."),
            Some(TxnId { most: 3, least: 7 })
        );
        assert_eq!(ended_txn_named("Transaction [(0,263)] is open"), None);
        assert_eq!(ended_txn_named("TransactionConflict"), None);
        assert_eq!(ended_txn_named("Transaction [(x,1)] has been ended"), None);
    }

    // What the Java client 4.0.7 was answered in a #19629 run on 4.0.7: after a reconnect it
    // sent again a message of the timed-out (0,263); from then on every send to that partition,
    // whatever its transaction, was refused with that same answer.
    #[test]
    fn sends_refused_with_another_transactions_error_name_the_chain() {
        let m =
            "Transaction [(0,263)] has been ended. Please use a new transaction to send message.";
        let mut r = ForeignRefusals::default();
        // Its own transaction's refusal is the low-water-mark check doing its job.
        for _ in 0..20 {
            r.answer(1, txn(263), m);
        }
        assert_eq!(r.cause("persistent://public/default/t"), None);
        for i in 0..9 {
            r.answer(278 + i, txn(299 + i), m);
        }
        assert_eq!(
            r.cause("persistent://public/default/t"),
            None,
            "nine are not a pattern"
        );
        r.answer(300, txn(400), m);
        r.answer(301, txn(400), m);
        let cause = r.cause("persistent://public/default/t").unwrap();
        assert!(
            cause.starts_with("the broker refused 11 send(s) of 10 transaction(s) (the first: attempt #278 in (0,299))"),
            "{cause}"
        );
        assert!(
            cause.contains("naming (0,263), a transaction those sends did not carry"),
            "{cause}"
        );
        assert!(cause.contains("apache/pulsar#24945"), "{cause}");
        assert!(
            cause.contains("topics unload persistent://public/default/t"),
            "{cause}"
        );
        // Progress since: no stall to explain.
        r.clear();
        assert_eq!(r.cause("persistent://public/default/t"), None);
        // Other answers are not read as one.
        for i in 0..20 {
            r.answer(i, txn(i), "TransactionConflict: something");
        }
        assert_eq!(r.cause("persistent://public/default/t"), None);
    }
}
