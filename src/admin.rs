//! Pulsar's admin REST API: readiness probes, topic owners, unloads, coordinator and
//! transaction state. Knows nothing of Docker.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// Errors of an admin call.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{method} {url}: {message}")]
    Http {
        method: &'static str,
        url: String,
        message: String,
    },
    #[error("{method} {url}: HTTP {status}: {body}")]
    Status {
        method: &'static str,
        url: String,
        status: u16,
        body: String,
    },
    #[error("{url}: unexpected answer: {message}")]
    Decode { url: String, message: String },
}

impl AdminError {
    pub fn status(&self) -> Option<u16> {
        match self {
            AdminError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// The durable subscription that holds a run's topics (the workload's, and a transform's
/// input) from before the first message until the topic is deleted: see
/// [`Admin::guard_topic`]. Nothing consumes from it.
pub const RETAIN_SUBSCRIPTION: &str = "pulsar-chaos-retain";

/// A client for one broker's admin API (any broker answers for the cluster; owner-only
/// calls are redirected, and followed).
#[derive(Clone)]
pub struct Admin {
    base: String,
    http: reqwest::Client,
}

/// Where a topic (or partition) is served.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Lookup {
    pub broker_url: String,
    #[serde(default)]
    pub http_url: String,
}

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

/// A reference to a topic in the admin paths: persistent/{tenant}/{ns}/{name}.
/// A partition's transaction buffer: what holds its readers back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BufferState {
    /// `state` (Ready, Initializing, ...).
    pub state: Option<String>,
    /// `maxReadPosition` as (ledger, entry): readers see nothing after it. The entry is -1
    /// before the ledger's first entry (`7:-1`).
    pub max_read: Option<(u64, i64)>,
    /// `ongoingTxnSize`: transactions open on the partition.
    pub open: Option<u64>,
}

impl BufferState {
    pub fn from_json(v: &serde_json::Value) -> BufferState {
        BufferState {
            state: v.get("state").and_then(|s| s.as_str()).map(str::to_string),
            max_read: v
                .get("maxReadPosition")
                .and_then(|p| p.as_str())
                .and_then(pulsar_chaos_core::stuck::parse_position),
            open: v.get("ongoingTxnSize").and_then(|n| n.as_u64()),
        }
    }
}

pub fn topic_path(topic: &str) -> String {
    let rest = topic.strip_prefix("persistent://").unwrap_or(topic);
    format!("persistent/{rest}")
}

impl Admin {
    pub fn new(base: &str) -> Admin {
        Admin::with_timeout(base, Duration::from_secs(10))
    }

    pub fn with_timeout(base: &str, timeout: Duration) -> Admin {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(Duration::from_secs(3))
            .redirect(reqwest::redirect::Policy::limited(5))
            .build()
            .expect("an HTTP client without TLS builds");
        Admin {
            base: base.trim_end_matches('/').to_string(),
            http,
        }
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    async fn call(
        &self,
        method: &'static str,
        path: &str,
        body: Option<String>,
    ) -> Result<String, AdminError> {
        let url = format!("{}{}", self.base, path);
        let req = match method {
            "GET" => self.http.get(&url),
            "PUT" => self.http.put(&url),
            "POST" => self.http.post(&url),
            "DELETE" => self.http.delete(&url),
            _ => unreachable!("admin method {method}"),
        };
        let req = match body {
            Some(b) => req.header("Content-Type", "application/json").body(b),
            None => req,
        };
        let resp = req.send().await.map_err(|e| AdminError::Http {
            method,
            url: url.clone(),
            message: error_chain(&e),
        })?;
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        if !(200..300).contains(&status) {
            let reason = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| {
                    v.get("reason")
                        .and_then(|r| r.as_str())
                        .map(|s| s.to_string())
                })
                .unwrap_or(text);
            let reason: String = reason
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(300)
                .collect();
            return Err(AdminError::Status {
                method,
                url,
                status,
                body: reason,
            });
        }
        Ok(text)
    }

    fn decode<T: for<'de> Deserialize<'de>>(
        &self,
        path: &str,
        text: &str,
    ) -> Result<T, AdminError> {
        serde_json::from_str(text).map_err(|e| AdminError::Decode {
            url: format!("{}{}", self.base, path),
            message: format!("{e}: {}", text.chars().take(200).collect::<String>()),
        })
    }

    /// `GET /admin/v2/brokers/ready`: the broker serves.
    pub async fn broker_ready(&self) -> Result<(), AdminError> {
        self.call("GET", "/admin/v2/brokers/ready", None)
            .await
            .map(|_| ())
    }

    /// `GET /admin/v2/brokers/health`: the broker can produce and consume on a health topic.
    pub async fn health(&self) -> Result<(), AdminError> {
        self.call("GET", "/admin/v2/brokers/health", None)
            .await
            .map(|_| ())
    }

    pub async fn namespace_exists(&self, ns: &str) -> Result<bool, AdminError> {
        match self
            .call("GET", &format!("/admin/v2/namespaces/{ns}"), None)
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if e.status() == Some(404) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Partitions of a partitioned topic (0: not partitioned or absent).
    pub async fn partitions(&self, topic: &str) -> Result<u32, AdminError> {
        let path = format!("/admin/v2/{}/partitions", topic_path(topic));
        let text = self.call("GET", &path, None).await?;
        #[derive(Deserialize)]
        struct P {
            partitions: u32,
        }
        Ok(self.decode::<P>(&path, &text)?.partitions)
    }

    pub async fn create_partitioned_topic(
        &self,
        topic: &str,
        partitions: u32,
    ) -> Result<(), AdminError> {
        let path = format!("/admin/v2/{}/partitions", topic_path(topic));
        match self.call("PUT", &path, Some(partitions.to_string())).await {
            Ok(_) => Ok(()),
            Err(e) if e.status() == Some(409) => Ok(()),
            Err(e) => Err(e),
        }
    }

    pub async fn create_topic(&self, topic: &str) -> Result<(), AdminError> {
        let path = format!("/admin/v2/{}", topic_path(topic));
        match self.call("PUT", &path, None).await {
            Ok(_) => Ok(()),
            Err(e) if e.status() == Some(409) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Create a durable subscription at the earliest message (it holds every message of the
    /// topic: without a subscription or a retention policy the broker may delete ledgers that
    /// nobody needs). On a partitioned topic it is created on every partition.
    pub async fn create_subscription(&self, topic: &str, name: &str) -> Result<(), AdminError> {
        let path = format!("/admin/v2/{}/subscription/{name}", topic_path(topic));
        let body = r#"{"ledgerId":-1,"entryId":-1,"partitionIndex":-1}"#.to_string();
        match self.call("PUT", &path, Some(body)).await {
            Ok(_) => Ok(()),
            Err(e) if e.status() == Some(409) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The retention guard: the durable subscription [`RETAIN_SUBSCRIPTION`] at the earliest
    /// position on `topic` (on every partition of a partitioned one), created before anything
    /// is produced, then checked on each partition. The topic is created first (a partitioned
    /// one must already exist; a plain one is created here). While the guard's cursor stays at
    /// the start, the broker deletes none of the topic's ledgers, whatever the namespace's
    /// retention (Pulsar's default, 0, deletes a ledger every subscription has passed, or any
    /// ledger of a topic without a subscription). An existing guard (a resumed run) is kept.
    pub async fn guard_topic(&self, topic: &str, partitions: u32) -> Result<(), AdminError> {
        if partitions <= 1 {
            self.create_topic(topic).await?;
        }
        self.create_subscription(topic, RETAIN_SUBSCRIPTION).await?;
        for t in crate::txn::partition_names(topic, partitions) {
            let subs = self.subscriptions(&t).await?;
            if !subs.iter().any(|s| s == RETAIN_SUBSCRIPTION) {
                return Err(AdminError::Decode {
                    url: format!("{}/admin/v2/{}/subscriptions", self.base, topic_path(&t)),
                    message: format!(
                        "{RETAIN_SUBSCRIPTION} was created but {t} lists only {subs:?}"
                    ),
                });
            }
        }
        Ok(())
    }

    /// The subscriptions of a topic.
    pub async fn subscriptions(&self, topic: &str) -> Result<Vec<String>, AdminError> {
        let path = format!("/admin/v2/{}/subscriptions", topic_path(topic));
        let text = self.call("GET", &path, None).await?;
        self.decode(&path, &text)
    }

    /// Delete a topic (with its subscriptions), or every partition of a partitioned one.
    pub async fn delete_topic(&self, topic: &str, partitioned: bool) -> Result<(), AdminError> {
        let path = if partitioned {
            format!("/admin/v2/{}/partitions?force=true", topic_path(topic))
        } else {
            format!("/admin/v2/{}?force=true", topic_path(topic))
        };
        match self.call("DELETE", &path, None).await {
            Ok(_) => Ok(()),
            Err(e) if e.status() == Some(404) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// `GET /admin/v2/clusters`: the clusters' names.
    pub async fn clusters(&self) -> Result<Vec<String>, AdminError> {
        let path = "/admin/v2/clusters";
        let text = self.call("GET", path, None).await?;
        self.decode(path, &text)
    }

    /// `GET /admin/v2/brokers/<cluster>`: the active brokers' web service addresses
    /// (`host:port`).
    pub async fn active_brokers(&self, cluster: &str) -> Result<Vec<String>, AdminError> {
        let path = format!("/admin/v2/brokers/{cluster}");
        let text = self.call("GET", &path, None).await?;
        self.decode(&path, &text)
    }

    /// `GET /admin/v2/bookies/all`: every bookie id (`host:port`) the cluster knows.
    pub async fn bookies(&self) -> Result<Vec<String>, AdminError> {
        #[derive(Deserialize)]
        struct All {
            #[serde(default)]
            bookies: Vec<One>,
        }
        #[derive(Deserialize)]
        struct One {
            #[serde(rename = "bookieId")]
            bookie_id: String,
        }
        let path = "/admin/v2/bookies/all";
        let text = self.call("GET", path, None).await?;
        let all: All = self.decode(path, &text)?;
        Ok(all.bookies.into_iter().map(|b| b.bookie_id).collect())
    }

    /// The broker that serves `topic` (a partition name for a partition).
    pub async fn lookup(&self, topic: &str) -> Result<Lookup, AdminError> {
        let path = format!("/lookup/v2/topic/{}", topic_path(topic));
        let text = self.call("GET", &path, None).await?;
        self.decode(&path, &text)
    }

    /// `PUT .../unload`: close the topic on its broker; it is loaded again on next use.
    pub async fn unload_topic(&self, topic: &str) -> Result<(), AdminError> {
        let path = format!("/admin/v2/{}/unload", topic_path(topic));
        self.call("PUT", &path, None).await.map(|_| ())
    }

    pub async fn unload_namespace(&self, ns: &str) -> Result<(), AdminError> {
        let path = format!("/admin/v2/namespaces/{ns}/unload");
        self.call("PUT", &path, None).await.map(|_| ())
    }

    /// Every loaded coordinator and its state, keyed by coordinator id.
    pub async fn coordinator_stats(&self) -> Result<BTreeMap<u32, CoordinatorStats>, AdminError> {
        let path = "/admin/v3/transactions/coordinatorStats";
        let text = self.call("GET", path, None).await?;
        let raw: BTreeMap<String, CoordinatorStats> = self.decode(path, &text)?;
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

    /// The transaction buffer of a partition, as `transactionBufferStats` reports it. A field
    /// Pulsar left out stays `None`: unknown, never "nothing open".
    pub async fn transaction_buffer(
        &self,
        partition_topic: &str,
    ) -> Result<BufferState, AdminError> {
        let rest = partition_topic
            .strip_prefix("persistent://")
            .unwrap_or(partition_topic);
        let path = format!("/admin/v3/transactions/transactionBufferStats/{rest}");
        let text = self.call("GET", &path, None).await?;
        let v: serde_json::Value = self.decode(&path, &text)?;
        Ok(BufferState::from_json(&v))
    }

    /// `POST .../deduplicationEnabled`: turn the broker's deduplication on or off for a topic
    /// (a topic policy; on a partitioned topic it covers every partition). The topic must exist.
    pub async fn set_deduplication(&self, topic: &str, enabled: bool) -> Result<(), AdminError> {
        let path = format!("/admin/v2/{}/deduplicationEnabled", topic_path(topic));
        self.call("POST", &path, Some(enabled.to_string()))
            .await
            .map(|_| ())
    }

    /// The deduplication state a loaded topic (or partition) reports in its stats
    /// (`deduplicationStatus`: "Enabled", "Disabled", "Recovering", ...); None when absent.
    pub async fn deduplication_status(&self, topic: &str) -> Result<Option<String>, AdminError> {
        let v = self.topic_stats(topic).await?;
        Ok(v.get("deduplicationStatus")
            .and_then(|s| s.as_str())
            .map(str::to_string))
    }

    /// Raw JSON of a topic's stats (for reports and diagnostics).
    pub async fn topic_stats(&self, topic: &str) -> Result<serde_json::Value, AdminError> {
        let path = format!("/admin/v2/{}/stats", topic_path(topic));
        let text = self.call("GET", &path, None).await?;
        self.decode(&path, &text)
    }

    /// A topic's stats with `getPreciseBacklog=true`: `msgBacklog` counted entry by entry, not
    /// estimated from the cursor's counters (the default estimate can be off).
    pub async fn topic_stats_precise(&self, topic: &str) -> Result<serde_json::Value, AdminError> {
        let path = format!(
            "/admin/v2/{}/stats?getPreciseBacklog=true",
            topic_path(topic)
        );
        let text = self.call("GET", &path, None).await?;
        self.decode(&path, &text)
    }

    /// `internalStats` of a topic or partition: its managed ledger's end and ledgers.
    pub async fn ledger_state(&self, topic: &str) -> Result<LedgerState, AdminError> {
        let path = format!("/admin/v2/{}/internalStats", topic_path(topic));
        let text = self.call("GET", &path, None).await?;
        let v: serde_json::Value = self.decode(&path, &text)?;
        Ok(LedgerState::from_json(&v))
    }

    /// `slowTransactions/{ms}`: every transaction the coordinators hold that has been open at
    /// least `min_age` (all coordinators: any broker gathers them).
    pub async fn slow_transactions(&self, min_age: Duration) -> Result<Vec<TxnReport>, AdminError> {
        let path = format!(
            "/admin/v3/transactions/slowTransactions/{}",
            min_age.as_millis()
        );
        let text = self.call("GET", &path, None).await?;
        let raw: BTreeMap<String, TxnReport> = self.decode(&path, &text)?;
        Ok(raw.into_values().collect())
    }
}

/// A partition's managed ledger, from `internalStats`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerState {
    /// `lastConfirmedEntry` as (ledger, entry); the entry is -1 in a ledger with none yet.
    pub last_confirmed: Option<(u64, i64)>,
    /// `ledgers`: (ledger id, entries); the open ledger reports 0.
    pub ledgers: Vec<(u64, u64)>,
    /// The open ledger and `currentLedgerEntries`.
    pub current: Option<(u64, u64)>,
}

impl LedgerState {
    pub fn from_json(v: &serde_json::Value) -> LedgerState {
        let last_confirmed = v
            .get("lastConfirmedEntry")
            .and_then(|s| s.as_str())
            .and_then(pulsar_chaos_core::stuck::parse_position);
        let ledgers: Vec<(u64, u64)> = v
            .get("ledgers")
            .and_then(|l| l.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|l| {
                        Some((
                            l.get("ledgerId")?.as_u64()?,
                            l.get("entries").and_then(|e| e.as_u64()).unwrap_or(0),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let current = match (
            ledgers.last(),
            v.get("currentLedgerEntries").and_then(|n| n.as_u64()),
        ) {
            (Some((id, _)), Some(n)) => Some((*id, n)),
            _ => None,
        };
        LedgerState {
            last_confirmed,
            ledgers,
            current,
        }
    }
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

/// A reqwest error with its causes, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ledger_state_reads_internal_stats() {
        let v: serde_json::Value = serde_json::from_str(
            r#"{"lastConfirmedEntry":"34:3961","currentLedgerEntries":3962,
                "ledgers":[{"ledgerId":21,"entries":300},{"ledgerId":34,"entries":0}]}"#,
        )
        .unwrap();
        let s = LedgerState::from_json(&v);
        assert_eq!(s.last_confirmed, Some((34, 3961)));
        assert_eq!(s.ledgers, vec![(21, 300), (34, 0)]);
        assert_eq!(s.current, Some((34, 3962)));
        // A field Pulsar left out stays unknown.
        assert_eq!(
            LedgerState::from_json(&serde_json::json!({})),
            LedgerState::default()
        );
    }

    #[test]
    fn slow_transactions_decode_as_pulsar_writes_them() {
        let text = r#"{"(0,1067)":{"txnId":"(0,1067)","status":"ABORTING","openTimestamp":1764520000000,
            "timeoutAt":20000,"producedPartitions":{"persistent://public/default/t-partition-0":
            {"startPosition":"21:266","aborted":false}},"ackedPartitions":{}}}"#;
        let raw: BTreeMap<String, TxnReport> = serde_json::from_str(text).unwrap();
        let t = &raw["(0,1067)"];
        assert_eq!(t.status, "ABORTING");
        let p = &t.produced_partitions["persistent://public/default/t-partition-0"];
        assert_eq!(p.aborted, Some(false));
        assert_eq!(p.start_position.as_deref(), Some("21:266"));
    }

    #[test]
    fn topic_paths() {
        assert_eq!(
            topic_path("persistent://public/default/t-partition-1"),
            "persistent/public/default/t-partition-1"
        );
    }
}
