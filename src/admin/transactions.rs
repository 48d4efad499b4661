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

/// A coordinator's transaction log (`coordinatorInternalStats/{id}?metadata=false`): its
/// managed ledger's last entry and each cursor's positions, in Pulsar's own words
/// (`ledger:entry`; the deleted ranges as Pulsar prints them). A field Pulsar left out is None.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct TxnLogView {
    /// `transactionLogStats.managedLedgerName`.
    pub ledger: Option<String>,
    /// `managedLedgerInternalStats.lastConfirmedEntry`.
    pub last_confirmed: Option<String>,
    /// Cursor name -> its positions.
    pub cursors: BTreeMap<String, LogCursor>,
}

/// One cursor of a transaction log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogCursor {
    #[serde(default)]
    pub mark_delete_position: Option<String>,
    #[serde(default)]
    pub read_position: Option<String>,
    #[serde(default)]
    pub individually_deleted_messages: Option<String>,
    /// The ledger the cursor persists its mark-delete position to, and its last entry (one
    /// entry per persisted position).
    #[serde(default)]
    pub cursor_ledger: Option<i64>,
    #[serde(default)]
    pub cursor_ledger_last_entry: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CoordinatorInternalStats {
    #[serde(default)]
    transaction_log_stats: Option<LogStats>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogStats {
    #[serde(default)]
    managed_ledger_name: Option<String>,
    #[serde(default)]
    managed_ledger_internal_stats: Option<LedgerStats>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LedgerStats {
    #[serde(default)]
    last_confirmed_entry: Option<String>,
    #[serde(default)]
    cursors: BTreeMap<String, LogCursor>,
}

impl From<CoordinatorInternalStats> for TxnLogView {
    fn from(s: CoordinatorInternalStats) -> TxnLogView {
        let log = s.transaction_log_stats;
        let (ledger, stats) = match log {
            Some(l) => (l.managed_ledger_name, l.managed_ledger_internal_stats),
            None => (None, None),
        };
        let (last_confirmed, cursors) = match stats {
            Some(s) => (s.last_confirmed_entry, s.cursors),
            None => (None, BTreeMap::new()),
        };
        TxnLogView {
            ledger,
            last_confirmed,
            cursors,
        }
    }
}

/// The admin API path of coordinator `id`'s transaction log (the topics API cannot load
/// `__transaction_log_N`: 409).
pub fn txn_log_path(id: u32) -> String {
    format!("/admin/v3/transactions/coordinatorInternalStats/{id}?metadata=false")
}

/// The answer of [`txn_log_path`] as a view.
pub fn decode_txn_log(text: &str) -> Result<TxnLogView, serde_json::Error> {
    serde_json::from_str::<CoordinatorInternalStats>(text).map(TxnLogView::from)
}

impl Admin {
    /// Coordinator `id`'s transaction log: its last entry and its cursors' positions.
    pub async fn txn_log(&self, id: u32) -> Result<TxnLogView, AdminError> {
        let raw: CoordinatorInternalStats = self.get(&txn_log_path(id)).await?;
        Ok(raw.into())
    }

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
