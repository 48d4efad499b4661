//! One run: bring the cluster up (or use the given one), produce under the planned faults,
//! heal every fault, wait until nothing is left open, read back, judge, write the run
//! directory, tear down. The runner ties the parts together and checks nothing itself.
//!
//! The parts: `env` (the cluster a run talks to, and its teardown), `phases` (the steps of a
//! run, in order), `faults` (the planned faults' tasks), `logs` (the containers' logs and the
//! broker lines quoted in a verdict) and `resume` (what a resumed run takes over from the
//! interrupted one).

mod driver;
mod dry_run;
mod ending;
mod env;
mod faults;
mod guard;
mod kept;
mod logs;
mod phases;
mod resume;
mod stuck;
mod supervisor;
mod txnlog;
mod unstarted;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::checker::Verdict;
use crate::cluster::Cluster;
use crate::drivers::{Built, Spec};
use crate::error::Result;
use crate::lifecycle::RunGuard;
use crate::plan;
use crate::rundir::{now_ms, RunDir, RunInfo};
use crate::scenario::{Scenario, Topology};
use crate::workload;

pub use dry_run::{dry_run, plan_commands, DryRun};
pub use env::{check_external, describe_topology, start_cluster};
pub use kept::KeptCluster;
pub use supervisor::LOG_LINES;

use env::{bring_up, finish, Env};
use phases::execute;

pub use crate::admin::RETAIN_SUBSCRIPTION;

/// What to run.
#[derive(Debug, Clone)]
pub struct Request {
    pub scenario: Scenario,
    /// Where the scenario came from (for messages).
    pub scenario_path: Option<PathBuf>,
    pub seed: u64,
    pub out: PathBuf,
    pub keep_cluster: bool,
    /// Overrides the scenario's image.
    pub image: Option<String>,
    pub progress: crate::progress::Mode,
    pub json: bool,
    /// A cluster to reuse instead of starting one (soak: one cluster for many runs).
    pub reuse: Option<Reuse>,
    /// Print the command that reproduces the run when it starts (so a run that dies on the
    /// way still named it). Off in a soak: it names only its failing iterations'.
    pub announce_reproduce: bool,
}

/// A cluster already running, shared by several runs.
#[derive(Clone)]
pub struct Reuse {
    pub cluster: Arc<Cluster>,
}

impl std::fmt::Debug for Reuse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Reuse({})", self.cluster.run_id)
    }
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub verdict: Verdict,
    pub run_dir: PathBuf,
    pub info: RunInfo,
    pub elapsed: Duration,
    pub producer: workload::Report,
}

impl Outcome {
    /// The run as one JUnit test case.
    pub fn junit_case(&self) -> crate::report::Case {
        let o = self;
        let failure = match o.verdict.status {
            crate::checker::Status::Pass => None,
            s => Some((
                s.to_string(),
                o.verdict.summary.clone(),
                format!(
                    "seed {}\nreproduce: {}\nrun directory: {}",
                    o.info.seed,
                    o.info.reproduce,
                    o.run_dir.display()
                ),
            )),
        };
        crate::report::Case {
            name: format!("{} seed {}", o.info.scenario, o.info.seed),
            seconds: o.elapsed.as_secs_f64(),
            failure,
            faults: o.verdict.faults_summary.clone(),
        }
    }
}

/// The command that reproduces a run.
pub fn reproduce_command(scenario_file: &Path, seed: u64) -> String {
    format!("pulsar-chaos run {} --seed {seed}", scenario_file.display())
}

/// Run a scenario from the start.
pub async fn run(req: Request) -> Result<Outcome> {
    // A cluster the harness did not start takes destructive faults only when allowed. Checked
    // once: its adapter (loaded here) goes on to `bring_up`.
    let adapter = env::check_external(&req.scenario)?;
    // The official client's driver is built before anything starts: a build that cannot
    // happen stops the run here, with no cluster started for nothing.
    let client = build_client(&req.scenario).await?;
    let run_id = crate::rundir::new_run_id();
    let _guard = RunGuard::with_keep(&run_id, req.keep_cluster);
    let dir = RunDir::create(&req.out, &req.scenario.name, &run_id)?;
    dir.write("scenario.yaml", &req.scenario.resolved_yaml())?;
    let plan = plan::make(&req.scenario, req.seed);
    dir.write("plan.json", &plan.to_json())?;
    let reproduce = reproduce_command(&dir.file("scenario.yaml"), req.seed);
    crate::errln!("seed: {}   run directory: {}", req.seed, dir.path.display());
    if req.announce_reproduce {
        crate::errln!("reproduce with: {reproduce}");
    }
    let env = bring_up(&req, &run_id, adapter).await?;
    let topic = req.scenario.workload.topic_for_run(&run_id);
    let info = RunInfo {
        run_id: run_id.clone(),
        scenario: req.scenario.name.clone(),
        seed: req.seed,
        topic: topic.clone(),
        partitions: req.scenario.workload.partitions,
        messages: req.scenario.workload.messages,
        topology: env.topology.to_string(),
        service_url: env.service_url.clone(),
        admin_url: env.admin_url.clone(),
        image: env.image.clone(),
        started_ms: now_ms(),
        reproduce,
        kept_cluster: req.keep_cluster && env.owned,
        client: client.as_ref().map(|b| b.spec.to_string()),
    };
    dir.write_json("run.json", &info)?;
    let result = execute(&req, &dir, &info, &env, &plan, client.as_ref(), false).await;
    finish(&req, &env, result).await
}

/// The driver of the scenario's client, built (or found in the cache); `None` for the own
/// client. The Java client defaults to the broker's version.
pub async fn build_client(scenario: &crate::scenario::Scenario) -> Result<Option<Built>> {
    let w = &scenario.workload;
    let broker = match &scenario.cluster {
        crate::scenario::ClusterSpec::Docker(d) if d.image.is_none() => {
            Some(d.pulsar_version.as_str())
        }
        _ => None,
    };
    let Some(spec) = Spec::for_workload(w.client, w.client_version.as_deref(), broker) else {
        return Ok(None);
    };
    let built = crate::drivers::build(&spec).await?;
    if !built.took.is_zero() {
        crate::errln!(
            "built the {} driver in {:.1}s",
            built.spec,
            built.took.as_secs_f64()
        );
    }
    Ok(Some(built))
}

/// Continue an interrupted run from its directory.
pub async fn resume(
    run_dir: &Path,
    progress: crate::progress::Mode,
    json: bool,
) -> Result<Outcome> {
    let dir = RunDir::open(run_dir)?;
    let info: RunInfo = dir.read_json("run.json")?;
    let scenario = crate::scenario::load(&dir.file("scenario.yaml"))?;
    let client = build_client(&scenario).await?;
    let plan = plan::make(&scenario, info.seed);
    let cluster = env::reattach(&info).await?;
    let _guard = RunGuard::with_keep(&info.run_id, info.kept_cluster);
    crate::errln!(
        "resuming run {} (seed {}) in {}",
        info.run_id,
        info.seed,
        dir.path.display()
    );
    let req = Request {
        scenario,
        scenario_path: Some(dir.file("scenario.yaml")),
        seed: info.seed,
        out: dir
            .path
            .parent()
            .map(|p| p.to_path_buf())
            .unwrap_or_default(),
        keep_cluster: info.kept_cluster,
        image: None,
        progress,
        json,
        reuse: None,
        announce_reproduce: true,
    };
    // On a cluster the harness did not start, what the interrupted run left applied is healed
    // with the adapter's commands, and the nodes are discovered again.
    let exec = match env::check_external(&req.scenario)? {
        Some(a) if cluster.is_none() => {
            crate::nemesis::heal_run(None, &info.run_id).await;
            let admin = crate::admin::Admin::new(&info.admin_url);
            // Nodes the heal started again are listed once they serve.
            env::wait_healthy(&admin, a.0.ready_timeout).await?;
            Some(env::external_platform(&req.scenario, &admin, a).await?)
        }
        _ => None,
    };
    let env = Env {
        exec,
        service_url: info.service_url.clone(),
        admin_url: info.admin_url.clone(),
        owned: cluster.is_some(),
        image: info.image.clone(),
        topology: match info.topology.as_str() {
            "standalone" => Topology::Standalone,
            "cluster" => Topology::Cluster,
            _ => Topology::External,
        },
        cluster,
    };
    let result = execute(&req, &dir, &info, &env, &plan, client.as_ref(), true).await;
    finish(&req, &env, result).await
}

#[cfg(test)]
mod tests;
