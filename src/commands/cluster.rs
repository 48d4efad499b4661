//! `cluster up|status|down`, `image build|show`, `clean`.

use crate::cli::{ClusterUpArgs, TopologyArg};
use crate::cluster::engine::Engine;
use crate::cluster::image::engine_and_image;
use crate::cluster::{self, image, Cluster};
use crate::error::{Error, Result};
use crate::exit;
use crate::lifecycle::RunGuard;
use crate::nemesis;
use crate::rundir::new_run_id;
use crate::scenario::{DockerCluster, Topology};

pub async fn up(args: ClusterUpArgs) -> Result<i32> {
    let spec = DockerCluster {
        topology: match args.topology {
            TopologyArg::Standalone => Topology::Standalone,
            TopologyArg::Cluster => Topology::Cluster,
        },
        image: args.image.clone(),
        pulsar_version: args.pulsar_version.clone(),
        brokers: if args.topology == TopologyArg::Standalone {
            1
        } else {
            args.brokers
        },
        bookies: args.bookies,
        coordinators: args.coordinators,
        binary_port: args.binary_port,
        http_port: args.http_port,
        ready_timeout: args.ready_timeout,
        jvm: args.jvm.into(),
        broker_config: args.broker_config.iter().cloned().collect(),
    };
    if spec.topology == Topology::Cluster && !(1..=5).contains(&spec.brokers) {
        return Err(Error::Usage("--brokers must be between 1 and 5".into()));
    }
    if spec.topology == Topology::Cluster && !(1..=3).contains(&spec.bookies) {
        return Err(Error::Usage("--bookies must be between 1 and 3".into()));
    }
    crate::versions::validate(&args.pulsar_version).map_err(Error::Usage)?;
    let (engine, img) = engine_and_image(args.image.as_deref(), &args.pulsar_version).await?;
    let run_id = new_run_id();
    let guard = RunGuard::new(&run_id);
    let started = std::time::Instant::now();
    crate::errln!(
        "starting {}, run id {run_id}",
        crate::runner::describe_topology(&spec)
    );
    let cluster = Cluster::up(engine, &spec, &run_id, &img, true).await?;
    let ready = match crate::ready::wait_ready(&cluster, spec.ready_timeout).await {
        Ok(r) => r,
        Err(e) => {
            let _ = cluster.down().await;
            return Err(e.into());
        }
    };
    drop(guard);
    let elapsed = started.elapsed();
    if args.json {
        let brokers: Vec<serde_json::Value> = cluster
            .brokers()
            .iter()
            .map(|b| serde_json::json!({"index": b.index, "container": b.node.name, "service_url": b.service_url, "admin_url": b.admin_url}))
            .collect();
        crate::outln!(
            "{}",
            serde_json::json!({
                "run_id": run_id,
                "topology": spec.topology.to_string(),
                "image": img,
                "service_url": cluster.service_url,
                "admin_url": cluster.admin_url,
                "brokers": brokers,
                "ready_ms": elapsed.as_millis() as u64,
            })
        );
    } else {
        crate::outln!(
            "cluster {run_id} is ready after {:.1}s",
            elapsed.as_secs_f64()
        );
        for (step, d) in &ready.steps {
            crate::outln!("  {step}: {:.1}s", d.as_secs_f64());
        }
        crate::outln!("service URL: {}", cluster.service_url);
        crate::outln!("admin URL:   {}", cluster.admin_url);
        for b in cluster.brokers() {
            crate::outln!(
                "broker-{}: {} ({}, {})",
                b.index,
                b.node.name,
                b.service_url,
                b.admin_url
            );
        }
        crate::outln!("remove it with: pulsar-chaos cluster down --run {run_id}");
    }
    Ok(exit::PASS)
}

pub async fn status() -> Result<i32> {
    let engine = Engine::connect().await?;
    let runs = cluster::list_runs(&engine).await?;
    if runs.is_empty() {
        crate::outln!("no clusters of pulsar-chaos are running");
    }
    for r in runs {
        crate::outln!("run {}{}", r.run_id, if r.kept { " (kept)" } else { "" });
        for (name, state) in r.containers {
            crate::outln!("  {name}: {state}");
        }
        if let Ok(c) = Cluster::attach(engine.clone(), &r.run_id).await {
            crate::outln!(
                "  service URL: {}  admin URL: {}",
                c.service_url,
                c.admin_url
            );
        }
    }
    Ok(exit::PASS)
}

pub async fn down(run: Option<String>) -> Result<i32> {
    let engine = Engine::connect().await?;
    let runs = cluster::list_runs(&engine).await?;
    let targets: Vec<String> = match run {
        Some(r) => {
            if !runs.iter().any(|x| x.run_id == r) {
                return Err(cluster::ClusterError::NoSuchRun { run_id: r }.into());
            }
            vec![r]
        }
        None => runs
            .iter()
            .filter(|r| r.kept)
            .map(|r| r.run_id.clone())
            .collect(),
    };
    if targets.is_empty() {
        crate::outln!("no kept clusters to remove");
    }
    for r in targets {
        nemesis::heal_run(Some(&engine), &r).await;
        let removed = cluster::remove_run(&engine, &r).await?;
        crate::outln!(
            "removed cluster {r}: {} container(s), {} network(s)",
            removed.containers.len(),
            removed.networks.len()
        );
    }
    Ok(exit::PASS)
}

pub async fn image_build(version: &str, force: bool) -> Result<i32> {
    crate::versions::validate(version).map_err(Error::Usage)?;
    let engine = Engine::connect().await?;
    crate::errln!(
        "building {} (Pulsar {version}: {})",
        image::local_image(version),
        crate::versions::profile(version).note
    );
    let r = image::build(&engine, version, force).await?;
    if r.skipped {
        crate::outln!(
            "{} is up to date (its inputs have not changed); nothing to do",
            r.tag
        );
    } else {
        for (step, d) in &r.steps {
            crate::outln!("  {step}: {:.1}s", d.as_secs_f64());
        }
        crate::outln!("built {} in {:.1}s", r.tag, r.total.as_secs_f64());
    }
    Ok(exit::PASS)
}

pub async fn image_show(version: &str) -> Result<i32> {
    crate::versions::validate(version).map_err(Error::Usage)?;
    let (_, img) = engine_and_image(None, version).await?;
    crate::outln!("{img}");
    Ok(exit::PASS)
}

/// Heal what one exec adapter's commands left applied (every run's fault journal), without
/// Docker: `clean --adapter FILE` after a crash of a run on a cluster the harness did not start.
pub async fn clean_adapter(path: &std::path::Path) -> Result<i32> {
    crate::adapter::load(path)?;
    let want = crate::adapter::absolute(path);
    let mut said = false;
    for run in nemesis::journal::runs_with_journals() {
        for line in nemesis::heal_matching(None, &run, Some(&want)).await {
            crate::outln!("run {run}: {line}");
            said = true;
        }
    }
    if !said {
        crate::outln!("nothing to heal: no fault of {want} is left applied");
    }
    Ok(exit::PASS)
}

/// Remove every labelled leftover (of one run with `only`): heal journaled faults, then
/// containers, networks, volumes.
pub async fn clean(only: Option<&str>) -> Result<i32> {
    let engine = Engine::connect().await?;
    let mut said = false;
    let runs: Vec<String> = cluster::list_runs(&engine)
        .await?
        .into_iter()
        .map(|r| r.run_id)
        .chain(nemesis::journal::runs_with_journals())
        .filter(|r| only.is_none_or(|o| o == r))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    for run in runs {
        if !seen.insert(run.clone()) {
            continue;
        }
        for line in nemesis::heal_outstanding(Some(&engine), &run).await {
            crate::outln!("run {run}: {line}");
            said = true;
        }
    }
    let mut labels = vec![(cluster::engine::LABEL_MANAGED, "true")];
    if let Some(run) = only {
        labels.push((cluster::engine::LABEL_RUN, run));
    }
    let removed = cluster::remove_labelled(&engine, &labels).await?;
    for c in &removed.containers {
        crate::outln!("removed container {c}");
        said = true;
    }
    for n in &removed.networks {
        crate::outln!("removed network {n}");
        said = true;
    }
    for v in &removed.volumes {
        crate::outln!("removed volume {v}");
        said = true;
    }
    for run in seen {
        nemesis::journal::remove(&run);
    }
    if !said {
        match only {
            Some(run) => crate::outln!(
                "nothing to clean: no container, network, volume or fault of run {run} is left"
            ),
            None => crate::outln!(
                "nothing to clean: no container, network, volume or fault of pulsar-chaos is left"
            ),
        }
    }
    Ok(exit::PASS)
}
