//! Pulsar's admin REST API: readiness probes, topic owners, unloads, coordinator and
//! transaction state. Knows nothing of Docker.
//!
//! [`Admin`] is the client; `http` its plumbing (one request, its errors, an answer decoded);
//! the endpoints by area, each answer a serde type: `cluster` (probes, brokers, bookies),
//! `topics` (owners, partitions, the retention guard, unloads, deduplication, stats,
//! `internalStats`), `transactions` (coordinators, a transaction, a partition's buffer, the
//! slow transactions).

mod cluster;
mod http;
#[cfg(test)]
mod tests;
mod topics;
mod transactions;

pub use http::AdminError;
pub use topics::{topic_path, LedgerState, Lookup, RETAIN_SUBSCRIPTION};
pub use transactions::{
    decode_txn_log, txn_log_path, BufferState, CoordinatorStats, InBuffer, LogCursor, TxnLogView,
    TxnMetadata, TxnReport,
};

use std::time::Duration;

/// A client for one broker's admin API (any broker answers for the cluster; owner-only
/// calls are redirected, and followed).
#[derive(Clone)]
pub struct Admin {
    base: String,
    http: reqwest::Client,
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
}
