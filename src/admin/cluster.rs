//! The cluster as the admin API shows it: readiness and health probes, its clusters, brokers
//! and bookies, whether a namespace exists.

use serde::Deserialize;

use super::{Admin, AdminError};

/// `GET /admin/v2/bookies/all`.
#[derive(Deserialize)]
struct Bookies {
    #[serde(default)]
    bookies: Vec<Bookie>,
}

#[derive(Deserialize)]
struct Bookie {
    #[serde(rename = "bookieId")]
    bookie_id: String,
}

impl Admin {
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

    /// `GET /admin/v2/clusters`: the clusters' names.
    pub async fn clusters(&self) -> Result<Vec<String>, AdminError> {
        self.get("/admin/v2/clusters").await
    }

    /// `GET /admin/v2/brokers/<cluster>`: the active brokers' web service addresses
    /// (`host:port`).
    pub async fn active_brokers(&self, cluster: &str) -> Result<Vec<String>, AdminError> {
        self.get(&format!("/admin/v2/brokers/{cluster}")).await
    }

    /// `GET /admin/v2/bookies/all`: every bookie id (`host:port`) the cluster knows.
    pub async fn bookies(&self) -> Result<Vec<String>, AdminError> {
        let all: Bookies = self.get("/admin/v2/bookies/all").await?;
        Ok(all.bookies.into_iter().map(|b| b.bookie_id).collect())
    }

    /// The broker's configuration as it runs (`GET /admin/v2/brokers/configuration/runtime`):
    /// every setting, defaults included, as text.
    pub async fn runtime_configuration(
        &self,
    ) -> Result<std::collections::BTreeMap<String, serde_json::Value>, AdminError> {
        self.get("/admin/v2/brokers/configuration/runtime").await
    }
}
