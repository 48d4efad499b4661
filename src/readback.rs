//! The read-back: every message of every partition of a topic, from the earliest position,
//! fed into the checker's [`Tally`]. A second, targeted read collects the message ids of
//! duplicated numbers.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use crate::admin::Admin;
use crate::checker::{parse_number, Findings, MsgId, Tally};
use crate::txn::reader::{read_partition, ReadOptions};
use crate::txn::{Client, TxnError};

/// How a read-back went.
#[derive(Debug, Clone)]
pub struct Readback {
    pub findings: Findings,
    /// Why it stopped short of a partition's end (None: every partition read to its end).
    pub incomplete: Option<String>,
    pub partitions: u32,
    pub elapsed: Duration,
    /// Message ids of every copy of the first duplicated numbers.
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
) -> Result<Readback, TxnError> {
    let started = Instant::now();
    let client = Client::new(service_url, Duration::from_secs(10));
    let parts = partitions_of(&client, topic).await?;
    let opts = ReadOptions {
        idle_timeout,
        ..ReadOptions::default()
    };
    let mut tally = Tally::new(count);
    let mut incomplete = Vec::new();
    for (t, p) in &parts {
        let stats = read_partition(&client, t, *p, &opts, |id, _, payload| {
            tally.observe(payload, msg_id(id, *p));
            true
        })
        .await?;
        if let Some(why) = stats.incomplete {
            incomplete.push(why);
        }
    }
    let findings = tally.finish();
    let mut duplicate_ids: HashMap<u64, Vec<MsgId>> = HashMap::new();
    if findings.duplicate_values > 0 {
        let wanted: BTreeSet<u64> = findings.duplicate_values_to_locate(LOCATE_DUPLICATES);
        for (t, p) in &parts {
            read_partition(&client, t, *p, &opts, |id, _, payload| {
                if let Some(v) = parse_number(payload) {
                    if wanted.contains(&v) {
                        duplicate_ids.entry(v).or_default().push(msg_id(id, *p));
                    }
                }
                true
            })
            .await?;
        }
    }
    client.close_all().await;
    Ok(Readback {
        findings,
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
