//! The read-back: every message of every partition of a topic, from the earliest position,
//! fed into the checker's [`Tally`]. A second, targeted read collects the message ids of
//! duplicated numbers. What the checker saw is also recorded (`readlog`) for the run directory.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use rangemap::RangeInclusiveSet;

use crate::admin::Admin;
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

/// Wait until no transaction is open on any partition of the topic (so nothing the reader
/// could see later is still held back), at most `max`. Returns what it saw.
pub async fn wait_settled(
    admin: &Admin,
    partitions: &[(String, i32)],
    max: Duration,
) -> Result<Duration, String> {
    let started = Instant::now();
    let mut last = String::new();
    loop {
        let mut open = 0;
        for (t, _) in partitions {
            match admin.transaction_buffer(t).await {
                Ok((_, n)) => open += n,
                // A topic never written has no buffer yet.
                Err(e) if e.status() == Some(404) => {}
                Err(e) => {
                    last = e.to_string();
                    open += 1;
                }
            }
        }
        if open == 0 {
            return Ok(started.elapsed());
        }
        if started.elapsed() >= max {
            return Err(format!(
                "{open} transaction(s) still open on the topic after {}s{}",
                max.as_secs(),
                if last.is_empty() {
                    String::new()
                } else {
                    format!(" ({last})")
                }
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Read the whole topic and check it holds exactly [0, count).
pub async fn read_back(
    service_url: &str,
    topic: &str,
    count: u64,
    idle_timeout: Duration,
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
    for (t, p) in &parts {
        log.start_partition(*p);
        let stats = read_partition(&client, t, *p, &opts, |id, _, payload| {
            match parse_number(payload) {
                Some(v) if v < count => {
                    tally.observe_value(v);
                    log.number(v);
                }
                _ => tally.observe(payload, msg_id(id, *p)),
            }
            true
        })
        .await?;
        if let Some(why) = stats.incomplete {
            incomplete.push(why);
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
