//! The read-back: every message of every partition of a topic, from the earliest position,
//! fed into the checker's [`Tally`]. A second, targeted read collects the message ids of
//! duplicated numbers. What the checker saw is also recorded (`readlog`) for the run directory.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use rangemap::RangeInclusiveSet;

use crate::admin::Admin;
use crate::backoff::Backoff;
use crate::checker::{parse_number, CheckerError, Findings, MsgId, Tally};
use crate::readlog::ReadLog;
use crate::txn::reader::{read_partition, ReadOptions};
use crate::txn::{Client, TxnError};

#[derive(Debug, thiserror::Error)]
pub enum ReadbackError {
    #[error("the read-back failed: {0}")]
    Pulsar(#[from] TxnError),
    #[error("{0}")]
    Checker(#[from] CheckerError),
}

/// How a read-back went.
#[derive(Debug, Clone)]
pub struct Readback {
    /// What the checker is given: anomalies listed up to `LIST_CAP` (all counted).
    pub findings: Findings,
    /// The same with every anomaly listed.
    pub all_findings: Findings,
    /// The numbers read, per partition, as runs in read order.
    pub log: ReadLog,
    /// Message ids of every copy of every duplicated number.
    pub all_duplicate_ids: BTreeMap<u64, Vec<MsgId>>,
    /// Why it stopped short of a partition's end (None: every partition read to its end).
    pub incomplete: Option<String>,
    pub partitions: u32,
    pub elapsed: Duration,
    /// Message ids of every copy of the first duplicated numbers (`LOCATE_DUPLICATES`): what
    /// the checker is given.
    pub duplicate_ids: HashMap<u64, Vec<MsgId>>,
}

/// How many duplicated numbers get their copies' message ids located.
pub const LOCATE_DUPLICATES: usize = 100;

fn msg_id(id: &pulsar::message::proto::MessageIdData, partition: i32) -> MsgId {
    MsgId {
        partition,
        ledger: id.ledger_id,
        entry: id.entry_id,
        batch: id.batch_index.unwrap_or(-1),
    }
}

/// The transaction a message's metadata names (`txnid_most_bits`, `txnid_least_bits`), if it
/// names one: what the broker's dispatch filters an aborted transaction's messages by.
pub fn metadata_txn(md: &pulsar::message::proto::MessageMetadata) -> Option<crate::history::TxnId> {
    match (md.txnid_most_bits, md.txnid_least_bits) {
        (Some(most), Some(least)) => Some(crate::history::TxnId { most, least }),
        _ => None,
    }
}

/// The partitions of a topic, each with the index a message id carries (-1: not partitioned).
pub async fn partitions_of(client: &Client, topic: &str) -> Result<Vec<(String, i32)>, TxnError> {
    let n = client.partitions(topic).await?;
    Ok(if n == 0 {
        vec![(topic.to_string(), -1)]
    } else {
        (0..n)
            .map(|i| (format!("{topic}-partition-{i}"), i as i32))
            .collect()
    })
}

/// What a partition's readers must be able to see before a read can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// No transaction open on the partition: everything written is readable.
    NothingOpen,
    /// The transaction buffer's max read position at or past this (ledger, entry): every
    /// message up to it is readable (the transaction that wrote it has ended on the partition).
    Past((u64, u64)),
}

/// What one look at a partition's transaction buffer said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    Buffer(crate::admin::BufferState),
    /// `transactionBufferStats` answered 404 and so did the topic's own stats: the partition
    /// does not exist, so nothing can be open on it.
    NoSuchTopic,
    /// Any other failure, 404 included while the topic exists (not loaded yet): unknown.
    Failed(String),
}

/// Whether a probe shows the partition readable as far as `until` asks, and if not, what holds
/// it, in words. Pure. Unknown is never taken as readable.
pub fn judge(until: Until, probe: &Probe) -> Result<(), String> {
    let b = match probe {
        Probe::Buffer(b) => b,
        Probe::NoSuchTopic => {
            return match until {
                Until::NothingOpen => Ok(()),
                Until::Past(_) => Err("the partition does not exist (404)".into()),
            }
        }
        Probe::Failed(e) => return Err(format!("unknown: {e}")),
    };
    let pos = |p: Option<(u64, i64)>| match p {
        Some((l, e)) => format!("{l}:{e}"),
        None => "not reported".to_string(),
    };
    let state = b.state.as_deref().unwrap_or("state not reported");
    // A buffer still recovering reports the transactions and the max read position its replay
    // has reached so far (before replay: the last entry and none open): neither is evidence
    // until it says it is Ready, or NoSnapshot (recovered, no transaction ever written there).
    if b.state.as_deref() == Some("FirstSnapshotting") {
        return Err(format!(
            "buffer FirstSnapshotting: its first snapshot is being written or failed to be (#24945 family); dispatch is held at the earliest position meanwhile (ongoingTxnSize {}, maxReadPosition {})",
            b.open.map_or("?".to_string(), |n| n.to_string()),
            pos(b.max_read)
        ));
    }
    if !buffer_recovered(b.state.as_deref()) {
        return Err(format!(
            "buffer {state}: not recovered yet, so its ongoingTxnSize {} and maxReadPosition {} are not evidence",
            b.open.map_or("?".to_string(), |n| n.to_string()),
            pos(b.max_read)
        ));
    }
    match until {
        Until::NothingOpen => match b.open {
            Some(0) => Ok(()),
            Some(n) => Err(format!(
                "{n} transaction(s) open, maxReadPosition {}, buffer {state}",
                pos(b.max_read)
            )),
            None => Err(format!(
                "unknown: transactionBufferStats gave no ongoingTxnSize (buffer {state})"
            )),
        },
        Until::Past(want) => match b.max_read {
            Some(have) if have >= (want.0, want.1 as i64) => Ok(()),
            Some(have) => Err(format!(
                "maxReadPosition {}:{} is before {}:{} ({} transaction(s) open, buffer {state})",
                have.0,
                have.1,
                want.0,
                want.1,
                b.open.map_or("? ".to_string(), |n| n.to_string())
            )),
            None => Err(format!(
                "unknown: transactionBufferStats gave no maxReadPosition (buffer {state})"
            )),
        },
    }
}

/// Whether a transaction buffer's `state` says it has recovered: `Ready`, or `NoSnapshot`
/// (4.0.x and 4.2.x: recovery found no snapshot, no transaction was written there; older
/// releases said `Unused`). `Initializing` (still replaying), `FirstSnapshotting` (4.2: held at
/// the earliest position until its first snapshot is written), `None`, `Close`,
/// `ClosedAndCleared`, an unknown word or no state at all are not (`TopicTransactionBufferState`).
pub fn buffer_recovered(state: Option<&str>) -> bool {
    matches!(state, Some("Ready" | "NoSnapshot" | "Unused"))
}

async fn probe(admin: &Admin, topic: &str) -> Probe {
    match admin.transaction_buffer(topic).await {
        Ok(b) => Probe::Buffer(b),
        Err(e) if e.status() == Some(404) => match admin.topic_stats(topic).await {
            Err(t) if t.status() == Some(404) => Probe::NoSuchTopic,
            _ => Probe::Failed(format!("transactionBufferStats answered 404: {e}")),
        },
        Err(e) => Probe::Failed(e.to_string()),
    }
}

/// The one wait for open transactions (the final read-back, `verify`, the `verify` resend
/// policy and `--resume` all use it): poll every partition's transaction buffer until each is
/// readable as far as asked, at most `cap` (zero: look once). On success, how long it took; when
/// the cap runs out, what still held each partition that was not readable, in words.
pub async fn wait_readable(
    admin: &Admin,
    targets: &[(String, Until)],
    cap: Duration,
) -> Result<Duration, String> {
    let started = Instant::now();
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
    loop {
        let held: Vec<String> = held_now(admin, targets)
            .await
            .into_iter()
            .map(|(t, why)| format!("{t}: {why}"))
            .collect();
        if held.is_empty() {
            return Ok(started.elapsed());
        }
        if started.elapsed() >= cap {
            return Err(format!(
                "after {}s the transaction buffers still hold the read back: {}",
                cap.as_secs(),
                held.join("; ")
            ));
        }
        tokio::time::sleep(
            backoff
                .next_delay()
                .min(cap.saturating_sub(started.elapsed())),
        )
        .await;
    }
}

/// One look at every target: those not readable as far as asked, each with what holds it.
pub async fn held_now(admin: &Admin, targets: &[(String, Until)]) -> Vec<(String, String)> {
    let mut held = Vec::new();
    for (t, until) in targets {
        if let Err(why) = judge(*until, &probe(admin, t).await) {
            held.push((t.clone(), why));
        }
    }
    held
}

/// Each partition, to be waited for until nothing is open on it.
pub fn nothing_open<'a>(partitions: impl IntoIterator<Item = &'a String>) -> Vec<(String, Until)> {
    partitions
        .into_iter()
        .map(|t| (t.clone(), Until::NothingOpen))
        .collect()
}

/// `wait_readable` for every partition of a topic, nothing open.
pub async fn wait_settled(
    admin: &Admin,
    partitions: &[(String, i32)],
    max: Duration,
) -> Result<Duration, String> {
    let targets = nothing_open(partitions.iter().map(|(t, _)| t));
    wait_readable(admin, &targets, max).await
}

/// What a read-back is checked against besides [0, count): the partitions the run wrote (from
/// the scenario or the history's `run_started`), and the admin API to cross-check a partition
/// the reader found empty. A read of another shape is reported incomplete, never judged.
#[derive(Clone, Copy, Default)]
pub struct Shape<'a> {
    pub partitions: Option<u32>,
    pub admin: Option<&'a Admin>,
}

/// Why the topic's partitions are not those the run wrote (`expected` as in a scenario: 0 or 1
/// means a plain topic). Pure.
pub fn shape_mismatch(expected: u32, parts: &[(String, i32)]) -> Option<String> {
    let plain = expected <= 1;
    let ok = if plain {
        parts.len() == 1 && parts[0].1 == -1
    } else {
        parts.len() == expected as usize
    };
    (!ok).then(|| {
        format!(
            "the topic has {} partition(s){}, but the run wrote {}: a read of another shape is not judged",
            parts.len(),
            if parts.len() == 1 && parts[0].1 == -1 { " (not partitioned)" } else { "" },
            if plain { "a topic that is not partitioned".to_string() } else { format!("{expected} partitions") }
        )
    })
}

/// Whether an empty GET_LAST_MESSAGE_ID answer on a partition is not evidence. `L:-1` is the
/// right answer for a partition whose entries are all aborted data and markers, so it stands
/// when the buffer has recovered, holds nothing open and has moved its max read position to the
/// last entry. `-1:-1` with entries written (4.2's FirstSnapshotting or a closing buffer
/// answers the earliest position), a buffer not recovered, transactions still open, or
/// `maxReadPosition` behind `lastConfirmedEntry` make it no evidence of a loss.
async fn empty_answer_contradicted(
    admin: &Admin,
    partition: &str,
    answer: (u64, u64),
) -> Option<String> {
    let l = match admin.ledger_state(partition).await {
        Ok(l) => l,
        Err(e) => {
            return Some(format!(
                "{partition}: GET_LAST_MESSAGE_ID answered an empty partition and internalStats could not confirm it ({e})"
            ))
        }
    };
    let entries: u64 = l.ledgers.iter().map(|(_, n)| n).sum::<u64>() + l.current.map_or(0, |c| c.1);
    if entries == 0 {
        return None;
    }
    let shown = |p: Option<(u64, i64)>| p.map_or("?".to_string(), |(a, b)| format!("{a}:{b}"));
    let why = if answer.0 == u64::MAX {
        Some("it answered -1:-1 (the earliest position)".to_string())
    } else {
        match admin.transaction_buffer(partition).await {
            Err(e) => Some(format!("transactionBufferStats failed ({e})")),
            Ok(b) => {
                let behind = match (b.max_read, l.last_confirmed) {
                    (Some(m), Some(c)) => m < c,
                    _ => true,
                };
                if !buffer_recovered(b.state.as_deref()) || b.open != Some(0) || behind {
                    Some(format!(
                        "its transaction buffer is {} with {} transaction(s) open and maxReadPosition {}",
                        b.state.as_deref().unwrap_or("state not reported"),
                        b.open.map_or("?".to_string(), |n| n.to_string()),
                        shown(b.max_read)
                    ))
                } else {
                    None
                }
            }
        }
    };
    why.map(|why| {
        format!(
            "{partition}: GET_LAST_MESSAGE_ID answered an empty partition, but internalStats shows {entries} entr(ies) (lastConfirmedEntry {}) and {why}; the read is not evidence of a loss",
            shown(l.last_confirmed)
        )
    })
}

/// Read the whole topic and check it holds exactly [0, count).
pub async fn read_back(
    service_url: &str,
    topic: &str,
    count: u64,
    idle_timeout: Duration,
    shape: Shape<'_>,
) -> Result<Readback, ReadbackError> {
    let started = Instant::now();
    let client = Client::new(service_url, Duration::from_secs(10));
    let parts = partitions_of(&client, topic).await?;
    let opts = ReadOptions {
        idle_timeout,
        ..ReadOptions::default()
    };
    let mut tally = Tally::uncapped(count);
    let mut log = ReadLog::new();
    let mut incomplete = Vec::new();
    if let Some(why) = shape.partitions.and_then(|n| shape_mismatch(n, &parts)) {
        incomplete.push(why);
    }
    for (t, p) in &parts {
        log.start_partition(*p);
        let stats = read_partition(&client, t, *p, &opts, |id, md, payload| {
            match parse_number(payload) {
                Some(v) if v < count => {
                    tally.observe_value(v);
                    log.number_in(v, metadata_txn(md));
                }
                _ => tally.observe(payload, msg_id(id, *p)),
            }
            true
        })
        .await?;
        if let Some(why) = stats.incomplete {
            incomplete.push(why);
        }
        if let (Some(answer), Some(admin)) = (stats.empty_answer, shape.admin) {
            if let Some(why) = empty_answer_contradicted(admin, t, answer).await {
                incomplete.push(why);
            }
        }
    }
    let all_findings = tally.finish()?;
    let findings = all_findings.clone().capped();
    let mut all_duplicate_ids: BTreeMap<u64, Vec<MsgId>> = BTreeMap::new();
    if findings.duplicate_values > 0 {
        let mut duplicated = RangeInclusiveSet::new();
        for d in &all_findings.duplicates {
            duplicated.insert(d.start..=d.end - 1);
        }
        for (t, p) in &parts {
            read_partition(&client, t, *p, &opts, |id, _, payload| {
                if let Some(v) = parse_number(payload) {
                    if duplicated.contains(&v) {
                        all_duplicate_ids.entry(v).or_default().push(msg_id(id, *p));
                    }
                }
                true
            })
            .await?;
        }
    }
    // What the checker is given: the copies of the first LOCATE_DUPLICATES duplicated numbers.
    let wanted: BTreeSet<u64> = findings.duplicate_values_to_locate(LOCATE_DUPLICATES);
    let duplicate_ids: HashMap<u64, Vec<MsgId>> = all_duplicate_ids
        .iter()
        .filter(|(v, _)| wanted.contains(v))
        .map(|(v, ids)| (*v, ids.clone()))
        .collect();
    client.close_all().await;
    Ok(Readback {
        findings,
        all_findings,
        log,
        all_duplicate_ids,
        incomplete: if incomplete.is_empty() {
            None
        } else {
            Some(incomplete.join("; "))
        },
        partitions: parts.len() as u32,
        elapsed: started.elapsed(),
        duplicate_ids,
    })
}

/// Read the whole topic without checking anything (the baseline the checker's cost is
/// measured against). Returns the number of messages.
pub async fn consume_only(
    service_url: &str,
    topic: &str,
    idle_timeout: Duration,
) -> Result<u64, TxnError> {
    let client = Client::new(service_url, Duration::from_secs(10));
    let parts = partitions_of(&client, topic).await?;
    let opts = ReadOptions {
        idle_timeout,
        ..ReadOptions::default()
    };
    let mut n = 0u64;
    for (t, p) in &parts {
        let stats = read_partition(&client, t, *p, &opts, |_, _, payload| {
            std::hint::black_box(payload);
            true
        })
        .await?;
        n += stats.messages;
    }
    client.close_all().await;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::BufferState;

    fn buf(open: Option<u64>, max_read: Option<(u64, i64)>) -> Probe {
        Probe::Buffer(BufferState {
            state: Some("Ready".into()),
            max_read,
            open,
        })
    }

    #[test]
    fn nothing_open_needs_a_reported_zero() {
        assert_eq!(
            judge(Until::NothingOpen, &buf(Some(0), Some((1, 2)))),
            Ok(())
        );
        let e = judge(Until::NothingOpen, &buf(Some(4), Some((21, 265)))).unwrap_err();
        assert!(
            e.contains("4 transaction(s) open") && e.contains("21:265"),
            "{e}"
        );
        // A missing ongoingTxnSize is unknown, not "nothing open".
        let e = judge(Until::NothingOpen, &buf(None, Some((1, 2)))).unwrap_err();
        assert!(e.starts_with("unknown"), "{e}");
    }

    fn buf_in(state: Option<&str>, open: Option<u64>, max_read: Option<(u64, i64)>) -> Probe {
        Probe::Buffer(BufferState {
            state: state.map(str::to_string),
            max_read,
            open,
        })
    }

    /// Regression (issue 29, 1): a buffer still recovering after a load reports
    /// ongoingTxnSize 0 and maxReadPosition = the last entry before it has replayed the
    /// transactions still open; neither may count as readable.
    #[test]
    fn a_recovering_buffer_is_not_nothing_open() {
        for state in [
            Some("Initializing"),
            Some("None"),
            Some("Close"),
            Some("ClosedAndCleared"),
            None,
        ] {
            let p = buf_in(state, Some(0), Some((9, 40)));
            let e = judge(Until::NothingOpen, &p).unwrap_err();
            assert!(e.contains("not recovered yet"), "{state:?}: {e}");
            let e = judge(Until::Past((9, 10)), &p).unwrap_err();
            assert!(e.contains("not recovered yet"), "{state:?}: {e}");
        }
        for state in ["Ready", "NoSnapshot", "Unused"] {
            let p = buf_in(Some(state), Some(0), Some((9, 40)));
            assert_eq!(judge(Until::NothingOpen, &p), Ok(()), "{state}");
            assert_eq!(judge(Until::Past((9, 10)), &p), Ok(()), "{state}");
        }
        // 4.2's first snapshot: held at the earliest position, said in its own words.
        let p = buf_in(Some("FirstSnapshotting"), Some(0), Some((9, 40)));
        let e = judge(Until::NothingOpen, &p).unwrap_err();
        assert!(e.contains("first snapshot"), "{e}");
    }

    /// Regression (issue 29, 8): a topic of another partition count than the run wrote is
    /// refused, not judged.
    #[test]
    fn a_read_of_another_shape_is_refused() {
        let p = |n: i32| -> Vec<(String, i32)> {
            if n == 0 {
                vec![("t".into(), -1)]
            } else {
                (0..n).map(|i| (format!("t-partition-{i}"), i)).collect()
            }
        };
        assert_eq!(shape_mismatch(4, &p(4)), None);
        assert_eq!(shape_mismatch(1, &p(0)), None);
        assert_eq!(shape_mismatch(0, &p(0)), None);
        let e = shape_mismatch(4, &p(2)).unwrap();
        assert!(
            e.contains("has 2 partition(s)") && e.contains("wrote 4"),
            "{e}"
        );
        assert!(shape_mismatch(4, &p(0))
            .unwrap()
            .contains("not partitioned"));
        assert!(shape_mismatch(1, &p(1)).is_some());
    }

    #[test]
    fn a_404_is_unknown_unless_the_topic_does_not_exist() {
        let e = judge(
            Until::NothingOpen,
            &Probe::Failed("transactionBufferStats answered 404: x".into()),
        )
        .unwrap_err();
        assert!(e.starts_with("unknown"), "{e}");
        assert_eq!(judge(Until::NothingOpen, &Probe::NoSuchTopic), Ok(()));
        assert!(judge(Until::Past((1, 1)), &Probe::NoSuchTopic).is_err());
    }

    #[test]
    fn past_a_position_compares_ledger_then_entry() {
        assert_eq!(
            judge(Until::Past((5, 10)), &buf(Some(3), Some((5, 10)))),
            Ok(())
        );
        assert_eq!(
            judge(Until::Past((5, 10)), &buf(Some(3), Some((6, 0)))),
            Ok(())
        );
        let e = judge(Until::Past((5, 10)), &buf(Some(1), Some((5, 9)))).unwrap_err();
        assert!(e.contains("5:9 is before 5:10"), "{e}");
        assert!(judge(Until::Past((5, 10)), &buf(Some(0), None))
            .unwrap_err()
            .starts_with("unknown"));
    }
}
