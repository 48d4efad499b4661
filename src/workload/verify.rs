//! The read-backs of the `verify` policy: whether an ambiguous commit's messages are in the
//! topic once the coordinator and the transaction buffers have let go of it, and after a
//! resume which leftover transactions have messages in the topic.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use pulsar::message::proto::MessageIdData;
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::history::TxnId;
use crate::journal::Entry;
use crate::policy::ReadEvidence;
use crate::readback::Until;
use crate::txn::reader::{read_partition, ReadOptions};

use super::Producer;

impl Producer {
    /// The `verify` policy's evidence: once the coordinator has let go of the transaction
    /// (its metadata answers 404 while its coordinator is Ready) and the partitions'
    /// transaction buffers have moved past its messages, read them back. Anything short of
    /// that is `Unknown`, with what held it.
    pub(super) async fn read_evidence(
        &self,
        txn: TxnId,
        receipts: &[(usize, MessageIdData)],
    ) -> ReadEvidence {
        let wait_until = Instant::now() + self.cfg.txn_timeout + Duration::from_secs(60);
        // 1. The coordinator no longer holds it (committed or aborted, and finished).
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
        loop {
            let held = match self.admin.transaction_metadata(txn.most, txn.least).await {
                Ok(Some(m)) => format!("the coordinator still holds it ({})", m.status),
                Ok(None) => match self.admin.coordinator_stats().await {
                    // A 404 means "ended" only from a coordinator that is loaded.
                    Ok(stats) => match stats.get(&(txn.most as u32)) {
                        Some(c) if c.state == "Ready" => break,
                        Some(c) => format!(
                            "its metadata answered 404 while coordinator {} is {} (not loaded: unknown)",
                            txn.most, c.state
                        ),
                        None => format!(
                            "its metadata answered 404 and coordinatorStats does not list coordinator {}",
                            txn.most
                        ),
                    },
                    Err(e) => format!("its metadata answered 404 and coordinatorStats failed ({e})"),
                },
                Err(e) => format!("the admin API did not answer ({e})"),
            };
            if Instant::now() >= wait_until {
                return ReadEvidence::Unknown(held);
            }
            backoff.wait().await;
        }
        // 2. Each partition's buffer past the transaction's last message, then read between
        //    its first and last message.
        let mut by_partition: BTreeMap<usize, (MessageIdData, MessageIdData)> = BTreeMap::new();
        for (p, id) in receipts {
            let e = by_partition.entry(*p).or_insert((id.clone(), id.clone()));
            if (id.ledger_id, id.entry_id) < (e.0.ledger_id, e.0.entry_id) {
                e.0 = id.clone();
            }
            if (id.ledger_id, id.entry_id) > (e.1.ledger_id, e.1.entry_id) {
                e.1 = id.clone();
            }
        }
        let targets: Vec<(String, Until)> = by_partition
            .iter()
            .map(|(p, (_, hi))| {
                (
                    self.partition_topics[*p].clone(),
                    Until::Past((hi.ledger_id, hi.entry_id)),
                )
            })
            .collect();
        let cap = wait_until.saturating_duration_since(Instant::now());
        if let Err(why) = crate::readback::wait_readable(&self.admin, &targets, cap).await {
            return ReadEvidence::Unknown(why);
        }
        let mut found = 0u64;
        for (p, (lo, hi)) in &by_partition {
            let topic = &self.partition_topics[*p];
            let opts = ReadOptions {
                start: Some(lo.clone()),
                stop: Some(hi.clone()),
                idle_timeout: Duration::from_secs(30),
                permits: 1000,
            };
            let r = read_partition(&self.client, topic, *p as i32, &opts, |_, md, _| {
                if md.txnid_most_bits == Some(txn.most) && md.txnid_least_bits == Some(txn.least) {
                    found += 1;
                }
                true
            })
            .await;
            match r {
                Ok(stats) if stats.incomplete.is_none() => {}
                Ok(stats) => {
                    return ReadEvidence::Unknown(format!(
                        "read-back incomplete: {}",
                        stats.incomplete.unwrap_or_default()
                    ))
                }
                Err(e) => return ReadEvidence::Unknown(format!("read-back failed: {e}")),
            }
        }
        ReadEvidence::Read {
            found,
            total: receipts.len() as u64,
        }
    }

    /// After a resume, which leftover transactions have messages in the topic (a full read,
    /// once no transaction is open on any partition). Err: why that could not be known.
    pub(super) async fn visible_in_topic(
        &self,
        entries: &[Entry],
    ) -> Result<BTreeMap<TxnId, u64>, String> {
        let wanted: BTreeSet<TxnId> = entries.iter().map(|e| e.txn).collect();
        let mut found: BTreeMap<TxnId, u64> = wanted.iter().map(|t| (*t, 0)).collect();
        let targets: Vec<(String, Until)> = self
            .partition_topics
            .iter()
            .map(|t| (t.clone(), Until::NothingOpen))
            .collect();
        let cap = self.cfg.txn_timeout + Duration::from_secs(60);
        crate::readback::wait_readable(&self.admin, &targets, cap).await?;
        for (p, topic) in self.partition_topics.iter().enumerate() {
            let opts = ReadOptions {
                idle_timeout: Duration::from_secs(30),
                ..ReadOptions::default()
            };
            let r = read_partition(&self.client, topic, p as i32, &opts, |_, md, _| {
                if let (Some(m), Some(l)) = (md.txnid_most_bits, md.txnid_least_bits) {
                    if let Some(c) = found.get_mut(&TxnId { most: m, least: l }) {
                        *c += 1;
                    }
                }
                true
            })
            .await;
            match r {
                Ok(s) if s.incomplete.is_none() => {}
                Ok(s) => {
                    return Err(format!(
                        "the read of {topic} stopped short: {}",
                        s.incomplete.unwrap_or_default()
                    ))
                }
                Err(e) => return Err(format!("the read of {topic} failed: {e}")),
            }
        }
        Ok(found)
    }
}
