//! The cluster a run talks to: one it reuses (soak), an external one (checked to serve
//! transactions), one it starts in Docker, or the one an interrupted run left (reattached,
//! its faults healed and its stopped nodes started); and the teardown of a cluster the run
//! started.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::adapter::{is_destructive, Adapter};
use crate::admin::Admin;
use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::nemesis::exec::ExecPlatform;
use crate::rundir::RunInfo;
use crate::scenario::{ClusterSpec, Scenario, Topology};
use std::path::Path;

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
    /// The exec adapter and the nodes discovered, on a cluster the harness did not start.
    pub(super) exec: Option<ExecPlatform>,
}

/// The adapter a scenario on a cluster the harness did not start needs, checked before anything
/// is created: a destructive fault needs an adapter that has its commands, and
/// `allow_destructive` (scenario) or `--allow-destructive`. None for a cluster of the harness.
pub fn check_external(s: &Scenario) -> Result<Option<(Arc<Adapter>, String)>> {
    if !matches!(s.cluster, ClusterSpec::External { .. }) {
        return Ok(None);
    }
    let adapter = match &s.adapter {
        Some(p) => {
            let a = crate::adapter::load(Path::new(p))?;
            Some((Arc::new(a), crate::adapter::absolute(Path::new(p))))
        }
        None => None,
    };
    let destructive: Vec<String> = s
        .faults
        .iter()
        .filter(|f| is_destructive(&f.kind))
        .map(|f| format!("{} ({})", f.name, f.kind.name()))
        .collect();
    if destructive.is_empty() {
        return Ok(adapter);
    }
    let Some((a, path)) = &adapter else {
        return Err(Error::Usage(format!(
            "{} act(s) on nodes of a cluster the harness did not start: give an exec adapter file (`adapter:` in the scenario or --adapter FILE; see examples/kubernetes/)",
            destructive.join(", ")
        )));
    };
    if !s.allow_destructive {
        return Err(Error::Usage(format!(
            "refusing to run: {} would restart, pause or cut off nodes of a cluster the harness did not start (through {path}); set `allow_destructive: true` in the scenario or pass --allow-destructive. `run --dry-run` prints every command first",
            destructive.join(", ")
        )));
    }
    a.check(s)
        .map_err(|e| Error::Usage(format!("{path}: {e}")))?;
    Ok(adapter)
}

/// Wait until the cluster's health check passes through the admin URL (by condition).
pub async fn wait_healthy(admin: &Admin, within: Duration) -> Result<()> {
    let deadline = Instant::now() + within;
    let mut backoff =
        crate::backoff::Backoff::new(Duration::from_millis(200), Duration::from_secs(3));
    loop {
        match admin.health().await {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() >= deadline => {
                return Err(Error::Pulsar(format!(
                    "the cluster is not healthy after {}s: {e}",
                    within.as_secs()
                )))
            }
            Err(_) => tokio::time::sleep(backoff.next_delay()).await,
        }
    }
}

/// Discover the nodes of a cluster the harness did not start and check that it has at least
/// the nodes the plan draws from.
pub async fn external_platform(
    s: &Scenario,
    admin: &Admin,
    adapter: (Arc<Adapter>, String),
) -> Result<ExecPlatform> {
    let (adapter, adapter_path) = adapter;
    let nodes = crate::discovery::discover(admin, &adapter).await?;
    let (brokers, bookies, _) = s.cluster.counts();
    let needs_bookies = s.faults.iter().any(|f| {
        matches!(
            f.target,
            crate::scenario::Target::AnyBookie | crate::scenario::Target::Bookie(_)
        )
    });
    nodes
        .covers(brokers, bookies, needs_bookies)
        .map_err(Error::Usage)?;
    let (_, _, coordinators) = s.cluster.counts();
    if s.faults
        .iter()
        .any(|f| f.target == crate::scenario::Target::CoordinatorOwner)
    {
        let tc = crate::txn::coordinator::TC_ASSIGN_TOPIC;
        let have = admin.partitions(tc).await?;
        if have < coordinators {
            return Err(Error::Usage(format!(
                "the scenario draws from {coordinators} transaction coordinator(s); {tc} has {have} partition(s) on this cluster"
            )));
        }
    }
    Ok(ExecPlatform {
        adapter,
        adapter_path,
        nodes,
    })
}

/// The cluster of a run: the reused one, the external one (with `adapter`, what
/// [`check_external`] found for it), or one started now.
pub(super) async fn bring_up(
    req: &Request,
    run_id: &str,
    adapter: Option<(Arc<Adapter>, String)>,
) -> Result<Env> {
    if let Some(r) = &req.reuse {
        return Ok(Env {
            service_url: r.cluster.service_url.clone(),
            admin_url: r.cluster.admin_url.clone(),
            cluster: Some(r.cluster.clone()),
            owned: false,
            image: Some(r.cluster.image.clone()),
            topology: r.cluster.topology,
            exec: None,
        });
    }
    match &req.scenario.cluster {
        ClusterSpec::External {
            service_url,
            admin_url,
            ..
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
            let exec = match adapter {
                Some(a) => Some(external_platform(&req.scenario, &admin, a).await?),
                None => None,
            };
            if let Some(x) = &exec {
                crate::errln!("{}", describe_nodes(&x.nodes));
            }
            Ok(Env {
                service_url: service_url.clone(),
                admin_url: admin_url.clone(),
                cluster: None,
                owned: false,
                image: None,
                topology: Topology::External,
                exec,
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
                exec: None,
            })
        }
    }
}

/// "cluster `c`: broker-1 name (address), ...; bookie-1 ...; zookeeper-1 ...", one line.
pub fn describe_nodes(n: &crate::discovery::Nodes) -> String {
    let list =
        |v: &[crate::discovery::Found]| v.iter().map(|f| f.label()).collect::<Vec<_>>().join(", ");
    format!(
        "cluster `{}` (admin API): {}; {}; {}",
        n.cluster,
        list(&n.brokers),
        if n.bookies.is_empty() {
            "no bookies listed".into()
        } else {
            list(&n.bookies)
        },
        if n.zookeepers.is_empty() {
            "no zookeepers in the adapter".into()
        } else {
            list(&n.zookeepers)
        },
    )
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
    crate::errln!("starting {} (run {run_id})", describe_topology(spec));
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
            crate::nemesis::heal_run(Some(c.engine()), &info.run_id).await;
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
                        crate::errln!("resume: {first}; starting the stopped node(s) again");
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
                crate::errln!(
                    "warning: tearing the cluster down failed: {e}; run `pulsar-chaos clean`"
                );
            }
        }
    } else if env.owned {
        if let Some(c) = &env.cluster {
            crate::errln!(
                "the cluster is kept: remove it with `pulsar-chaos cluster down --run {}`",
                c.run_id
            );
        }
    }
    result
}
