//! One cluster kept across several runs (the iterations of a soak, the tries of a shrink):
//! started on first use, checked healthy before each run and re-created when it is not, taken
//! down at the end unless it is to be kept. A node that exited on its own between runs is started
//! again before the check. Every cluster it starts is registered for the
//! cleanup on Ctrl-C (`lifecycle::RunGuard`).

use std::sync::Arc;
use std::time::Duration;

use crate::cluster::Cluster;
use crate::error::Result;
use crate::lifecycle::RunGuard;
use crate::scenario::DockerCluster;

/// How long a kept cluster may take to answer as ready before it counts as broken.
const HEALTHY_WITHIN: Duration = Duration::from_secs(120);

pub struct KeptCluster {
    spec: DockerCluster,
    image: Option<String>,
    /// The run id prefix; the n-th cluster started is `<id>c<n>`.
    id: String,
    keep: bool,
    started: u64,
    cluster: Option<Arc<Cluster>>,
    guards: Vec<RunGuard>,
    /// How many times a broken cluster was re-created.
    pub restarts: u64,
}

impl KeptCluster {
    /// Nothing is started until `ensure`.
    pub fn new(spec: &DockerCluster, image: Option<&str>, id: &str, keep: bool) -> KeptCluster {
        KeptCluster {
            spec: spec.clone(),
            image: image.map(str::to_string),
            id: id.to_string(),
            keep,
            started: 0,
            cluster: None,
            guards: Vec::new(),
            restarts: 0,
        }
    }

    /// A healthy cluster: the current one if it answers as ready, else a new one (the broken
    /// one taken down first).
    pub async fn ensure(&mut self) -> Result<Arc<Cluster>> {
        if let Some(c) = &self.cluster {
            // A node that exited on its own between runs is started again, as a supervisor
            // would (during a run the run's supervisor does it, and records it).
            let none = Default::default();
            let holds = crate::cluster::Holds::default();
            for e in c.restart_exited(&holds, &none, &none, 3).await {
                crate::errln!(
                    "{} had exited on its own between runs (exit code {}); started it again{}",
                    e.node.label(),
                    e.exit_code.map_or("unknown".into(), |c| c.to_string()),
                    match e.started {
                        Some(Err(err)) => format!(" - the start failed: {err}"),
                        _ => String::new(),
                    }
                );
            }
            if crate::ready::wait_ready(c, HEALTHY_WITHIN).await.is_ok() {
                return Ok(c.clone());
            }
            crate::errln!("the cluster is not healthy any more; re-creating it");
            let _ = c.down().await;
            self.cluster = None;
            self.restarts += 1;
        }
        self.started += 1;
        let run_id = format!("{}c{}", self.id, self.started);
        let image = self.image.as_deref().or(self.spec.image.as_deref());
        let (c, _) = super::start_cluster(&self.spec, image, &run_id, self.keep).await?;
        self.guards.push(RunGuard::with_keep(&run_id, self.keep));
        let c = Arc::new(c);
        self.cluster = Some(c.clone());
        Ok(c)
    }

    /// The cluster now, if one is up.
    pub fn current(&self) -> Option<Arc<Cluster>> {
        self.cluster.clone()
    }

    /// Take the cluster down, unless it is to be kept (then say how to remove it).
    pub async fn finish(&mut self) {
        if let Some(c) = self.cluster.take() {
            if self.keep {
                crate::errln!(
                    "cluster kept (run {}c{}); remove it with `pulsar-chaos cluster down`",
                    self.id,
                    self.started
                );
            } else {
                let _ = c.down().await;
            }
        }
    }
}
