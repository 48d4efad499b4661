//! The cluster a run talks to: one it reuses (soak), an external one (checked to serve
//! transactions), one it starts in Docker, or the one an interrupted run left (reattached,
//! its faults healed and its stopped nodes started); and the teardown of a cluster the run
//! started.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::admin::Admin;
use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::rundir::RunInfo;
use crate::scenario::{ClusterSpec, Topology};

use super::{Outcome, Request};

/// The cluster a run talks to.
pub(super) struct Env {
    pub(super) service_url: String,
    pub(super) admin_url: String,
    pub(super) cluster: Option<Arc<Cluster>>,
    /// Created by this run (so torn down by it).
    pub(super) owned: bool,
    pub(super) image: Option<String>,
    pub(super) topology: Topology,
}

pub(super) async fn bring_up(req: &Request, run_id: &str) -> Result<Env> {
    if let Some(r) = &req.reuse {
        return Ok(Env {
            service_url: r.cluster.service_url.clone(),
            admin_url: r.cluster.admin_url.clone(),
            cluster: Some(r.cluster.clone()),
            owned: false,
            image: Some(r.cluster.image.clone()),
            topology: r.cluster.topology,
        });
    }
    match &req.scenario.cluster {
        ClusterSpec::External {
            service_url,
            admin_url,
        } => {
            let admin = Admin::new(admin_url);
            let deadline = Instant::now() + Duration::from_secs(60);
            crate::ready::probe_transactions(service_url, &admin, deadline)
                .await
                .map_err(|e| {
                    Error::Pulsar(format!(
                        "the cluster at {service_url} does not serve transactions: {e}"
                    ))
                })?;
            Ok(Env {
                service_url: service_url.clone(),
                admin_url: admin_url.clone(),
                cluster: None,
                owned: false,
                image: None,
                topology: Topology::External,
            })
        }
        ClusterSpec::Docker(spec) => {
            let named = req.image.as_deref().or(spec.image.as_deref());
            let (cluster, img) = start_cluster(spec, named, run_id, req.keep_cluster).await?;
            Ok(Env {
                service_url: cluster.service_url.clone(),
                admin_url: cluster.admin_url.clone(),
                topology: cluster.topology,
                cluster: Some(Arc::new(cluster)),
                owned: true,
                image: Some(img),
            })
        }
    }
}

/// "a standalone Pulsar" or "a cluster of 2 brokers and 1 bookie", for messages.
pub fn describe_topology(spec: &crate::scenario::DockerCluster) -> String {
    let plural = |n: u32, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    match spec.topology {
        crate::scenario::Topology::Standalone => "a standalone Pulsar".to_string(),
        crate::scenario::Topology::External => "an existing cluster".to_string(),
        crate::scenario::Topology::Cluster => format!(
            "a cluster of {} and {}",
            plural(spec.brokers, "broker"),
            plural(spec.bookies, "bookie")
        ),
    }
}

/// Start a cluster in Docker and wait until it serves transactions; removed again on failure.
pub async fn start_cluster(
    spec: &crate::scenario::DockerCluster,
    image: Option<&str>,
    run_id: &str,
    keep: bool,
) -> Result<(Cluster, String)> {
    let (engine, img) =
        crate::cluster::image::engine_and_image(image, &spec.pulsar_version).await?;
    eprintln!("starting {} (run {run_id})", describe_topology(spec));
    let cluster = Cluster::up(engine, spec, run_id, &img, keep).await?;
    if let Err(e) = crate::ready::wait_ready(&cluster, spec.ready_timeout).await {
        let _ = cluster.down().await;
        return Err(e.into());
    }
    Ok((cluster, img))
}

/// Reattach the cluster of an interrupted run (none for an external one): heal what faults
/// it left applied, then start what is down until the cluster is ready again.
pub(super) async fn reattach(info: &RunInfo) -> Result<Option<Arc<Cluster>>> {
    Ok(match info.topology.as_str() {
        "external" => None,
        _ => {
            let engine = crate::cluster::engine::Engine::connect().await?;
            let c = Cluster::attach(engine, &info.run_id).await?;
            // Whatever faults the interrupted run left applied are healed first.
            crate::nemesis::heal_run(c.engine(), &info.run_id).await;
            // A node the interrupted run had just killed may still count as running for a
            // moment (Docker notices a kill(2) late), so the start above and here can be a
            // no-op and the node then exits: start what is down again, a few times, by
            // condition (the readiness wait fails as soon as a node has exited).
            let mut restarts = 0;
            loop {
                for n in &c.nodes {
                    if n.role != crate::cluster::Role::Init
                        && !c.is_running(n).await.unwrap_or(false)
                    {
                        let _ = c.start(n).await;
                    }
                }
                match crate::ready::wait_ready(&c, Duration::from_secs(300)).await {
                    Ok(_) => break,
                    Err(e) if restarts < 3 && any_down(&c).await => {
                        restarts += 1;
                        let first = e.to_string();
                        let first = first.lines().next().unwrap_or_default().to_string();
                        eprintln!("resume: {first}; starting the stopped node(s) again");
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Some(Arc::new(c))
        }
    })
}

/// Whether a node of the cluster (other than the one-shot init) is not running.
async fn any_down(c: &Cluster) -> bool {
    for n in &c.nodes {
        if n.role != crate::cluster::Role::Init && !c.is_running(n).await.unwrap_or(false) {
            return true;
        }
    }
    false
}

pub(super) async fn finish(req: &Request, env: &Env, result: Result<Outcome>) -> Result<Outcome> {
    if env.owned && !req.keep_cluster {
        if let Some(c) = &env.cluster {
            if let Err(e) = c.down().await {
                eprintln!(
                    "warning: tearing the cluster down failed: {e}; run `pulsar-chaos clean`"
                );
            }
        }
    } else if env.owned {
        if let Some(c) = &env.cluster {
            eprintln!(
                "the cluster is kept: remove it with `pulsar-chaos cluster down --run {}`",
                c.run_id
            );
        }
    }
    result
}
