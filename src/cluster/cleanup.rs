//! Teardown and listing by label: everything of a run (or carrying given labels) removed,
//! containers unpaused first; the runs and networks the engine knows as ours.

use super::engine::{Engine, LABEL_KEPT, LABEL_MANAGED, LABEL_RUN};
use super::{Cluster, ClusterError};

impl Cluster {
    /// Remove everything of this run.
    pub async fn down(&self) -> Result<Removed, ClusterError> {
        remove_run(&self.engine, &self.run_id).await
    }
}

/// What a removal removed.
#[derive(Debug, Default, Clone)]
pub struct Removed {
    pub containers: Vec<String>,
    pub networks: Vec<String>,
    pub volumes: Vec<String>,
}

impl Removed {
    pub fn is_empty(&self) -> bool {
        self.containers.is_empty() && self.networks.is_empty() && self.volumes.is_empty()
    }
}

/// Remove every container, network and volume labelled with `run_id`.
pub async fn remove_run(engine: &Engine, run_id: &str) -> Result<Removed, ClusterError> {
    remove_labelled(engine, &[(LABEL_MANAGED, "true"), (LABEL_RUN, run_id)]).await
}

/// Remove every container, network and volume carrying all of `labels`.
pub async fn remove_labelled(
    engine: &Engine,
    labels: &[(&str, &str)],
) -> Result<Removed, ClusterError> {
    let mut removed = Removed::default();
    let containers = engine.list_containers(labels).await?;
    // Unpause first: a paused container cannot be killed cleanly on every engine.
    for c in &containers {
        if c.state == "paused" {
            let _ = engine.unpause(&c.id).await;
        }
    }
    let results = futures::future::join_all(containers.iter().map(|c| engine.remove(&c.id))).await;
    for (c, r) in containers.iter().zip(results) {
        r?;
        removed.containers.push(c.name.clone());
    }
    for (id, name, _) in engine.list_networks(labels).await? {
        engine.remove_network(&id).await?;
        removed.networks.push(name);
    }
    for v in engine.list_volumes(labels).await? {
        engine.remove_volume(&v).await?;
        removed.volumes.push(v);
    }
    Ok(removed)
}

/// A run known to Docker by its labels.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub run_id: String,
    pub kept: bool,
    pub containers: Vec<(String, String)>,
}

/// Every run with labelled containers.
pub async fn list_runs(engine: &Engine) -> Result<Vec<RunInfo>, ClusterError> {
    let listed = engine.list_containers(&[(LABEL_MANAGED, "true")]).await?;
    let mut runs: Vec<RunInfo> = Vec::new();
    for c in listed {
        let run = c.labels.get(LABEL_RUN).cloned().unwrap_or_default();
        let kept = c
            .labels
            .get(LABEL_KEPT)
            .map(|v| v == "true")
            .unwrap_or(false);
        match runs.iter_mut().find(|r| r.run_id == run) {
            Some(r) => {
                r.kept |= kept;
                r.containers.push((c.name, c.state));
            }
            None => runs.push(RunInfo {
                run_id: run,
                kept,
                containers: vec![(c.name, c.state)],
            }),
        }
    }
    for r in runs.iter_mut() {
        r.containers.sort();
    }
    runs.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    Ok(runs)
}

/// Networks labelled as ours whose run has no container left (leftovers).
pub async fn list_networks(engine: &Engine) -> Result<Vec<String>, ClusterError> {
    Ok(engine
        .list_networks(&[(LABEL_MANAGED, "true")])
        .await?
        .into_iter()
        .map(|(_, n, _)| n)
        .collect())
}
