//! Transactions over the admin API (`/admin/v3/transactions`): the coordinators' state, one
//! transaction's metadata, a partition's transaction buffer, the slow transactions.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::{Admin, AdminError};

/// One coordinator's state from `coordinatorStats`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CoordinatorStats {
    pub state: String,
    #[serde(default)]
    pub ongoing_txn_size: u64,
}

/// A transaction's metadata while the coordinator still holds it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TxnMetadata {
    pub status: String,
}

/// A partition's transaction buffer (`transactionBufferStats`): what holds its readers back.
/// A field Pulsar left out stays `None`: unknown, never "nothing open".
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct BufferState {
    /// `state` (Ready, Initializing, ...).
    #[serde(default)]
    pub state: Option<String>,
    /// `maxReadPosition` as (ledger, entry): readers see nothing after it. The entry is -1
    /// before the ledger's first entry (`7:-1`).
    #[serde(default, rename = "maxReadPosition", deserialize_with = "position")]
    pub max_read: Option<(u64, i64)>,
    /// `ongoingTxnSize`: transactions open on the partition.
    #[serde(default, rename = "ongoingTxnSize")]
    pub open: Option<u64>,
}

/// A position written `ledger:entry`; None when absent or not of that form.
fn position<'de, D: Deserializer<'de>>(d: D) -> Result<Option<(u64, i64)>, D::Error> {
    Ok(Option::<String>::deserialize(d)?
        .as_deref()
        .and_then(pulsar_chaos_core::stuck::parse_position))
}

/// One transaction as `slowTransactions` reports it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TxnReport {
    /// `(0,1067)`
    pub txn_id: String,
    pub status: String,
    #[serde(default)]
    pub open_timestamp: Option<u64>,
    /// The transaction's timeout in ms (a duration, despite the name).
    #[serde(default)]
    pub timeout_at: Option<u64>,
    /// Partition -> its buffer's view of the transaction.
    #[serde(default)]
    pub produced_partitions: BTreeMap<String, InBuffer>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InBuffer {
    #[serde(default)]
    pub start_position: Option<String>,
    #[serde(default)]
    pub aborted: Option<bool>,
}

impl Admin {
    /// Every loaded coordinator and its state, keyed by coordinator id.
    pub async fn coordinator_stats(&self) -> Result<BTreeMap<u32, CoordinatorStats>, AdminError> {
        let raw: BTreeMap<String, CoordinatorStats> =
            self.get("/admin/v3/transactions/coordinatorStats").await?;
        Ok(raw
            .into_iter()
            .filter_map(|(k, v)| k.parse().ok().map(|k| (k, v)))
            .collect())
    }

    /// A transaction's metadata, or None once the coordinator no longer holds it (ended).
    pub async fn transaction_metadata(
        &self,
        most: u64,
        least: u64,
    ) -> Result<Option<TxnMetadata>, AdminError> {
        let path = format!("/admin/v3/transactions/transactionMetadata/{most}/{least}");
        match self.call("GET", &path, None).await {
            Ok(text) => Ok(Some(self.decode(&path, &text)?)),
            Err(e) if e.status() == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The transaction buffer of a partition, as `transactionBufferStats` reports it.
    pub async fn transaction_buffer(
        &self,
        partition_topic: &str,
    ) -> Result<BufferState, AdminError> {
        let rest = partition_topic
            .strip_prefix("persistent://")
            .unwrap_or(partition_topic);
        self.get(&format!(
            "/admin/v3/transactions/transactionBufferStats/{rest}"
        ))
        .await
    }

    /// `slowTransactions/{ms}`: every transaction the coordinators hold that has been open at
    /// least `min_age` (all coordinators: any broker gathers them).
    pub async fn slow_transactions(&self, min_age: Duration) -> Result<Vec<TxnReport>, AdminError> {
        let raw: BTreeMap<String, TxnReport> = self
            .get(&format!(
                "/admin/v3/transactions/slowTransactions/{}",
                min_age.as_millis()
            ))
            .await?;
        Ok(raw.into_values().collect())
    }
}
