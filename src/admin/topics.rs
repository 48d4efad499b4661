//! Topics over the admin API: their owners, partitions, subscriptions (the retention guard),
//! unloads, deduplication, stats and the managed ledger's `internalStats`.

use serde::Deserialize;

use super::{Admin, AdminError};

/// The durable subscription that holds a run's topics (the workload's, and a transform's
/// input) from before the first message until the topic is deleted: see
/// [`Admin::guard_topic`]. Nothing consumes from it.
pub const RETAIN_SUBSCRIPTION: &str = "pulsar-chaos-retain";

/// A reference to a topic in the admin paths: persistent/{tenant}/{ns}/{name}.
pub fn topic_path(topic: &str) -> String {
    let rest = topic.strip_prefix("persistent://").unwrap_or(topic);
    format!("persistent/{rest}")
}

/// Where a topic (or partition) is served.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Lookup {
    pub broker_url: String,
    #[serde(default)]
    pub http_url: String,
}

/// `GET .../partitions`.
#[derive(Deserialize)]
struct Partitions {
    partitions: u32,
}

/// The part of a topic's stats that `deduplication_status` reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DedupStats {
    #[serde(default)]
    pub(super) deduplication_status: Option<String>,
}

/// A partition's managed ledger, from `internalStats`. A field Pulsar left out stays unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(from = "InternalStats")]
pub struct LedgerState {
    /// `lastConfirmedEntry` as (ledger, entry); the entry is -1 in a ledger with none yet.
    pub last_confirmed: Option<(u64, i64)>,
    /// `ledgers`: (ledger id, entries); the open ledger reports 0.
    pub ledgers: Vec<(u64, u64)>,
    /// The open ledger and `currentLedgerEntries`.
    pub current: Option<(u64, u64)>,
}

/// `internalStats` as Pulsar writes it (the fields read).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InternalStats {
    #[serde(default)]
    last_confirmed_entry: Option<String>,
    #[serde(default)]
    ledgers: Vec<LedgerInfo>,
    #[serde(default)]
    current_ledger_entries: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LedgerInfo {
    ledger_id: u64,
    #[serde(default)]
    entries: Option<u64>,
}

impl LedgerState {
    /// The managed ledger's part of a raw `internalStats` answer (what Pulsar left out stays
    /// unknown).
    pub fn of(stats: &serde_json::Value) -> LedgerState {
        InternalStats::deserialize(stats)
            .map(LedgerState::from)
            .unwrap_or_default()
    }
}

impl From<InternalStats> for LedgerState {
    fn from(s: InternalStats) -> LedgerState {
        let ledgers: Vec<(u64, u64)> = s
            .ledgers
            .iter()
            .map(|l| (l.ledger_id, l.entries.unwrap_or(0)))
            .collect();
        let current = match (ledgers.last(), s.current_ledger_entries) {
            (Some((id, _)), Some(n)) => Some((*id, n)),
            _ => None,
        };
        LedgerState {
            last_confirmed: s
                .last_confirmed_entry
                .as_deref()
                .and_then(pulsar_chaos_core::stuck::parse_position),
            ledgers,
            current,
        }
    }
}

impl Admin {
    /// Partitions of a partitioned topic (0: not partitioned or absent).
    pub async fn partitions(&self, topic: &str) -> Result<u32, AdminError> {
        let path = format!("/admin/v2/{}/partitions", topic_path(topic));
        Ok(self.get::<Partitions>(&path).await?.partitions)
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
        self.get(&format!("/admin/v2/{}/subscriptions", topic_path(topic)))
            .await
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

    /// The broker that serves `topic` (a partition name for a partition).
    pub async fn lookup(&self, topic: &str) -> Result<Lookup, AdminError> {
        self.get(&format!("/lookup/v2/topic/{}", topic_path(topic)))
            .await
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
        let s: DedupStats = self
            .get(&format!("/admin/v2/{}/stats", topic_path(topic)))
            .await?;
        Ok(s.deduplication_status)
    }

    /// Raw JSON of a topic's stats (for reports and diagnostics).
    pub async fn topic_stats(&self, topic: &str) -> Result<serde_json::Value, AdminError> {
        self.get(&format!("/admin/v2/{}/stats", topic_path(topic)))
            .await
    }

    /// A topic's stats with `getPreciseBacklog=true`: `msgBacklog` counted entry by entry, not
    /// estimated from the cursor's counters (the default estimate can be off).
    pub async fn topic_stats_precise(&self, topic: &str) -> Result<serde_json::Value, AdminError> {
        self.get(&format!(
            "/admin/v2/{}/stats?getPreciseBacklog=true",
            topic_path(topic)
        ))
        .await
    }

    /// `internalStats` of a topic or partition: its managed ledger's end and ledgers.
    pub async fn ledger_state(&self, topic: &str) -> Result<LedgerState, AdminError> {
        self.get(&format!("/admin/v2/{}/internalStats", topic_path(topic)))
            .await
    }

    /// `internalStats` as Pulsar wrote it (cursors and all), for evidence; `LedgerState::of`
    /// reads the managed ledger's part of it.
    pub async fn internal_stats_raw(&self, topic: &str) -> Result<serde_json::Value, AdminError> {
        self.get(&format!("/admin/v2/{}/internalStats", topic_path(topic)))
            .await
    }

    /// One entry of a topic's managed ledger (`GET .../ledger/{l}/entry/{e}`): its metadata as
    /// `X-Pulsar-*` headers and its payload as stored.
    pub async fn entry(
        &self,
        topic: &str,
        ledger: u64,
        entry: i64,
    ) -> Result<(std::collections::BTreeMap<String, String>, Vec<u8>), AdminError> {
        self.get_raw(&format!(
            "/admin/v2/{}/ledger/{ledger}/entry/{entry}",
            topic_path(topic)
        ))
        .await
    }
}
