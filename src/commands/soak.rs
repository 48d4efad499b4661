//! `soak`: run a scenario again and again on one cluster (re-created if it breaks), each
//! iteration with a seed derived from the master seed and a topic of its own, until the time
//! is up. Passing run directories beyond the last K are pruned; failing ones are kept. At the
//! end its iterations are compared with the results store's earlier nights (core `regress`)
//! and the regressions named come first in the summary, in summary.json and in the JUnit
//! suite's properties.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::checker::{FaultsSummary, Status};
use crate::cli::SoakArgs;
use crate::cluster::{Cluster, NodeDown};
use crate::error::{Error, Result};
use crate::exit;
use crate::regress::{self, Comparison};
use crate::report::{self, Case, IndexRow};
use crate::results::Record;
use crate::runner::{self, KeptCluster, Request, Reuse};
use crate::scenario::{self, ClusterSpec};
use crate::store::{self, Source};

/// One iteration, as the summary keeps it.
#[derive(Debug, Clone, Serialize)]
pub struct Iteration {
    pub iteration: u64,
    pub seed: u64,
    pub status: String,
    pub summary: String,
    pub seconds: f64,
    /// None once pruned.
    pub run_dir: Option<PathBuf>,
    pub reproduce: String,
    /// Fault kind -> how many fired in this iteration.
    pub faults: BTreeMap<String, u64>,
    /// How many of the planned faults fired, and which did not (None: the iteration could not
    /// run).
    pub faults_summary: Option<FaultsSummary>,
    /// An iteration that could not run: the error in full.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
    /// An iteration that could not run: the nodes of the soak's cluster that were not running
    /// then, with Docker's status, exit code and their last log lines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes_down: Vec<NodeDown>,
}

impl Iteration {
    /// `2/3`: planned faults fired of planned, or `-` for an iteration that could not run.
    fn faults_cell(&self) -> String {
        self.faults_summary
            .as_ref()
            .map_or_else(|| "-".into(), FaultsSummary::cell)
    }
}

/// summary.json of a soak.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub scenario: String,
    pub master_seed: u64,
    pub started_ms: u64,
    pub elapsed_s: f64,
    pub iterations: u64,
    pub passes: u64,
    pub violations: u64,
    pub inconclusive: u64,
    /// Iterations with a liveness finding (the read-back held after every fault healed).
    pub stuck: u64,
    /// Iterations that could not run (infrastructure).
    pub errors: u64,
    pub cluster_restarts: u64,
    pub faults: BTreeMap<String, u64>,
    /// Planned fault firings over every iteration that ran, and how many of them fired.
    pub faults_planned: u64,
    pub faults_fired: u64,
    /// Iterations that planned faults and fired none (graded inconclusive: nothing was tested
    /// under faults).
    pub iterations_without_faults: u64,
    pub interrupted: bool,
    /// The regressions named against the results store (issue 35), most severe first.
    pub regressions: Comparison,
    pub runs: Vec<Iteration>,
}

impl Summary {
    /// The exit code with `--fail-on-regression` or without: a failing iteration's code, else
    /// with the flag `REGRESSION` when a regression is named, else pass.
    pub fn exit_code_with(&self, fail_on_regression: bool) -> i32 {
        match self.exit_code() {
            exit::PASS if fail_on_regression && !self.regressions.regressions.is_empty() => {
                exit::REGRESSION
            }
            code => code,
        }
    }

    /// The exit code of the iterations: the most severe outcome (`exit::of_runs`).
    pub fn exit_code(&self) -> i32 {
        let verdicts = [
            (exit::VIOLATION, self.violations),
            (exit::STUCK, self.stuck),
            (exit::INCONCLUSIVE, self.inconclusive),
            (exit::PASS, self.passes),
        ];
        exit::of_runs(
            verdicts.into_iter().filter(|(_, n)| *n > 0).map(|(c, _)| c),
            self.errors,
        )
    }

    /// The summary table, for people: the regressions first.
    pub fn table(&self) -> String {
        let mut t = self.regressions.text();
        t.push_str(&format!(
            "soak of {} (master seed {}): {} iteration(s) in {:.0}s{}\n",
            self.scenario,
            self.master_seed,
            self.iterations,
            self.elapsed_s,
            if self.interrupted {
                " (interrupted)"
            } else {
                ""
            }
        ));
        t.push_str(&format!(
            "  pass {}   violation {}   stuck {}   inconclusive {}   could not run {}   cluster re-created {}\n",
            self.passes,
            self.violations,
            self.stuck,
            self.inconclusive,
            self.errors,
            self.cluster_restarts
        ));
        if self.faults_planned > 0 {
            t.push_str(&format!(
                "  planned faults fired: {} of {}{}\n",
                self.faults_fired,
                self.faults_planned,
                match self.iterations_without_faults {
                    0 => String::new(),
                    n => format!(
                        "; {n} iteration(s) fired none (not tested under faults: inconclusive)"
                    ),
                }
            ));
        }
        if !self.faults.is_empty() {
            let f: Vec<String> = self
                .faults
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            t.push_str(&format!("  faults fired: {}\n", f.join(", ")));
        }
        t.push_str(&format!(
            "  {:>4}  {:>13}  {:<12}  {:>7}  {:>6}  summary\n",
            "iter", "seed", "verdict", "seconds", "faults"
        ));
        for r in &self.runs {
            t.push_str(&format!(
                "  {:>4}  {:>13}  {:<12}  {:>7.1}  {:>6}  {}\n",
                r.iteration,
                r.seed,
                r.status,
                r.seconds,
                r.faults_cell(),
                r.summary.chars().take(100).collect::<String>()
            ));
        }
        could_not_run(&mut t, &self.runs);
        let failures: Vec<&Iteration> = self.runs.iter().filter(|r| r.status != "pass").collect();
        if !failures.is_empty() {
            t.push_str("reproduce the failures with:\n");
            for r in failures {
                t.push_str(&format!(
                    "  {}   # iteration {}: {}\n",
                    r.reproduce, r.iteration, r.status
                ));
            }
        }
        t
    }
}

/// Log lines of a node down shown in summary.txt (summary.json has them all).
const DOWN_LINES_SHOWN: usize = 10;

/// Why each iteration that could not run did not: the error's first line, and every node that
/// was not running then with its state and last log lines.
fn could_not_run(t: &mut String, runs: &[Iteration]) {
    let errors: Vec<&Iteration> = runs.iter().filter(|r| r.status == "error").collect();
    if errors.is_empty() {
        return;
    }
    t.push_str(
        "could not run:
",
    );
    for r in errors {
        t.push_str(&format!(
            "  iteration {}: {}
",
            r.iteration,
            r.error.lines().next().unwrap_or(&r.summary)
        ));
        if r.nodes_down.is_empty() {
            t.push_str(
                "    every node of the cluster was running
",
            );
        }
        for d in &r.nodes_down {
            t.push_str(&format!(
                "    {d}; its last log lines:
"
            ));
            let skip = d.log.len().saturating_sub(DOWN_LINES_SHOWN);
            for l in &d.log[skip..] {
                t.push_str(&format!(
                    "      {l}
"
                ));
            }
        }
    }
}

/// Remove the run directories of passing iterations beyond the last `keep`.
pub fn prune(runs: &mut [Iteration], keep: usize) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let passing: Vec<usize> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.status == "pass" && r.run_dir.is_some())
        .map(|(i, _)| i)
        .collect();
    let excess = passing.len().saturating_sub(keep);
    for &i in passing.iter().take(excess) {
        if let Some(d) = runs[i].run_dir.take() {
            let _ = std::fs::remove_dir_all(&d);
            removed.push(d);
        }
    }
    removed
}

fn write_outputs(dir: &Path, summary: &Summary, junit: Option<&Path>) -> Result<()> {
    let text = serde_json::to_string_pretty(summary).expect("summaries serialize");
    std::fs::write(dir.join("summary.json"), text + "\n")
        .map_err(Error::io("write summary.json"))?;
    std::fs::write(dir.join("summary.txt"), summary.table())
        .map_err(Error::io("write summary.txt"))?;
    let rows: Vec<IndexRow> = summary
        .runs
        .iter()
        .map(|r| IndexRow {
            iteration: r.iteration,
            seed: r.seed,
            status: r.status.clone(),
            summary: r.summary.clone(),
            seconds: r.seconds,
            run_dir: r
                .run_dir
                .as_ref()
                .and_then(|d| d.file_name())
                .map(|n| format!("{}/report.html", n.to_string_lossy())),
            reproduce: r.reproduce.clone(),
        })
        .collect();
    report::write_index(
        dir,
        &format!(
            "soak of {} (master seed {})",
            summary.scenario, summary.master_seed
        ),
        &rows,
    )?;
    if let Some(j) = junit {
        let cases: Vec<Case> = summary
            .runs
            .iter()
            .map(|r| Case {
                name: format!("iteration {} seed {}", r.iteration, r.seed),
                seconds: r.seconds,
                faults: r.faults_summary.clone(),
                failure: (r.status != "pass").then(|| {
                    (
                        r.status.clone(),
                        r.summary.clone(),
                        format!(
                            "seed {}\nreproduce: {}\nrun directory: {}",
                            r.seed,
                            r.reproduce,
                            r.run_dir
                                .as_ref()
                                .map(|d| d.display().to_string())
                                .unwrap_or_else(|| "(pruned)".into())
                        ),
                    )
                }),
            })
            .collect();
        report::write_junit_with(
            j,
            &summary.scenario,
            &cases,
            &junit_properties(&summary.regressions),
        )?;
    }
    Ok(())
}

/// The JUnit suite's properties: `regressions` (how many, or why none were compared) and one
/// `regression.N` per regression, most severe first.
fn junit_properties(c: &Comparison) -> Vec<(String, String)> {
    let head = if c.compared {
        c.regressions.len().to_string()
    } else {
        format!("not compared: {}", c.notes.join("; "))
    };
    let mut p = vec![("regressions".to_string(), head)];
    for (i, r) in c.regressions.iter().enumerate() {
        let kind = serde_json::to_value(r.kind)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        p.push((
            format!("regression.{}", i + 1),
            format!("{kind}: {}", r.message),
        ));
    }
    p
}

/// The comparison settings of the command line.
fn regression_settings(args: &SoakArgs) -> Result<regress::Settings> {
    if !(args.regression_spread.is_finite() && args.regression_spread > 0.0) {
        return Err(Error::Usage(format!(
            "--regression-spread {}: give a positive number of spreads (e.g. 3)",
            args.regression_spread
        )));
    }
    Ok(regress::Settings {
        nights: args.regression_nights as usize,
        spread_k: args.regression_spread,
        ..regress::Settings::default()
    })
}

/// What summary.json says until the soak ends and compares.
const NOT_YET: &str = "compared when the soak ends";

/// What there is to say without a store.
const NO_STORE: &str = "--no-store: there is no results store to compare with";

/// The soak's records compared with the store's; a store that cannot be read is said on
/// stderr and gives its exit code.
async fn compare_with_store(
    store: &mut Option<store::Store>,
    current: &[Record],
    started_ms: u64,
    settings: regress::Settings,
) -> (Comparison, Option<i32>) {
    let Some(s) = store.as_mut() else {
        return (Comparison::not_compared(settings, NO_STORE), None);
    };
    match s.records().await {
        Ok(all) => (regress::compare(current, &all, started_ms, &settings), None),
        Err(e) => {
            crate::errln!("error: {e} (no regressions compared; the soak's files are complete)");
            let why = format!("the results store could not be read: {e}");
            (
                Comparison::not_compared(settings, &why),
                Some(e.exit_code()),
            )
        }
    }
}

/// `soak --dry-run`: what the soak would do, having checked the scenario, the options and the
/// store's location; nothing is started, created or opened.
fn dry_run(
    args: &SoakArgs,
    s: &scenario::Scenario,
    master: u64,
    settings: &regress::Settings,
) -> Result<String> {
    let mut t = format!(
        "dry run of soak {} for {}{}: master seed {master}; nothing is started, created or recorded
",
        s.name,
        humantime::format_duration(args.duration),
        args.max_iterations
            .map(|m| format!(" or {m} iteration(s)"))
            .unwrap_or_default()
    );
    let cluster = match &s.cluster {
        ClusterSpec::Docker(d) => format!(
            "Pulsar {}, topology {}, one cluster for every iteration (re-created if it breaks)",
            d.pulsar_version,
            format!("{:?}", d.topology).to_lowercase()
        ),
        ClusterSpec::External { service_url, .. } => {
            format!("the running cluster at {service_url}")
        }
    };
    t.push_str(&format!(
        "cluster: {cluster}
"
    ));
    t.push_str(&format!(
        "directory: {}/soak-{}-<id> (keeps the last {} passing iteration(s) and every failing one){}
",
        args.out.display(),
        s.name,
        args.keep_passing,
        args.junit
            .as_ref()
            .map(|j| format!("; JUnit to {}", j.display()))
            .unwrap_or_default()
    ));
    match store::location(&args.store)? {
        Some(loc) => t.push_str(&format!(
            "results store: {} (each iteration recorded; regressions: a failure after {} passing night(s), a new finding or cause, a recovery time or throughput beyond median ± {} spreads; {})
",
            loc.display(),
            settings.nights,
            settings.spread_k,
            if args.fail_on_regression {
                "--fail-on-regression: exit 9 on a regression when every iteration passed"
            } else {
                "a regression alone does not change the exit code"
            }
        )),
        None => t.push_str(&format!("results store: none ({NO_STORE})
")),
    }
    let first = crate::seed::iteration_seed(master, 1);
    t.push_str(&format!(
        "iteration 1, seed {first}:
"
    ));
    let plan = runner::plan_commands(s, first, None)?;
    for l in plan.lines() {
        t.push_str(&format!(
            "  {l}
"
        ));
    }
    Ok(t)
}

/// The scenario of the soak, at `--pulsar-version` if given, on `--service-url` if given, with
/// a topic per iteration.
fn load_scenario(args: &SoakArgs) -> Result<scenario::Scenario> {
    let mut s = scenario::load(&args.scenario)?;
    crate::commands::run::apply_overrides(&args.overrides, &mut s)?;
    crate::commands::run::apply_external(&args.external, &mut s)?;
    // Every iteration gets a topic of its own.
    s.workload.unique_topic = true;
    Ok(s)
}

/// True when the time is up or `--max-iterations` iterations have run.
fn budget_spent(args: &SoakArgs, started: Instant, iterations: u64) -> bool {
    if started.elapsed() >= args.duration {
        return true;
    }
    if let Some(max) = args.max_iterations {
        if iterations >= max {
            return true;
        }
    }
    false
}

/// Announce an iteration on stderr, with the time elapsed and left.
fn announce_iteration(i: u64, seed: u64, started: Instant, duration: Duration) {
    crate::errln!(
        "soak: iteration {i}, seed {seed}; {} elapsed, {} left",
        humantime::format_duration(Duration::from_secs(started.elapsed().as_secs())),
        humantime::format_duration(Duration::from_secs(
            duration.saturating_sub(started.elapsed()).as_secs()
        ))
    );
}

/// The request for one iteration, on the soak's cluster if there is one.
fn iteration_request(
    args: &SoakArgs,
    s: &scenario::Scenario,
    seed: u64,
    dir: &Path,
    cluster: &Option<Arc<Cluster>>,
) -> Request {
    Request {
        scenario: s.clone(),
        scenario_path: Some(args.scenario.clone()),
        seed,
        out: dir.to_path_buf(),
        keep_cluster: false,
        image: args.image.clone(),
        progress: args.progress.into(),
        json: args.json,
        reuse: cluster.clone().map(|c| Reuse { cluster: c }),
        // A passing iteration's command is noise; a failing one's is printed at its end.
        announce_reproduce: false,
    }
}

impl Summary {
    /// A summary with nothing counted yet.
    #[cfg(test)]
    fn empty(scenario: String, master_seed: u64, started_ms: u64) -> Summary {
        Summary::empty_with(
            scenario,
            master_seed,
            started_ms,
            regress::Settings::default(),
        )
    }

    fn empty_with(
        scenario: String,
        master_seed: u64,
        started_ms: u64,
        settings: regress::Settings,
    ) -> Summary {
        Summary {
            scenario,
            master_seed,
            started_ms,
            elapsed_s: 0.0,
            iterations: 0,
            passes: 0,
            violations: 0,
            inconclusive: 0,
            stuck: 0,
            errors: 0,
            cluster_restarts: 0,
            faults: BTreeMap::new(),
            faults_planned: 0,
            faults_fired: 0,
            iterations_without_faults: 0,
            interrupted: false,
            regressions: Comparison::not_compared(settings, NOT_YET),
            runs: Vec::new(),
        }
    }
}

/// What a soak prints when an iteration ends: its summary, and the command that reproduces
/// it when it failed (a passing iteration's would be noise; `runner::run` prints none in a
/// soak).
fn iteration_end(i: u64, summary: &str, failed_reproduce: Option<&String>) -> String {
    let mut t = format!("soak: iteration {i}: {summary}\n");
    if let Some(r) = failed_reproduce {
        t.push_str(&format!("soak: iteration {i}: reproduce with: {r}\n"));
    }
    t
}

/// Count and record an iteration that ran (deleting its topic if it passed); true if it failed.
async fn record_outcome(
    summary: &mut Summary,
    o: &runner::Outcome,
    i: u64,
    seed: u64,
    reproduce: String,
    keep_passing: usize,
) -> bool {
    let mut faults = BTreeMap::new();
    // Fired: started and applied (a failed injection is not a fault that happened).
    for f in o.verdict.faults.iter().filter(|f| f.applied) {
        *faults.entry(f.kind.clone()).or_insert(0) += 1;
        *summary.faults.entry(f.kind.clone()).or_insert(0) += 1;
    }
    if let Some(fs) = &o.verdict.faults_summary {
        summary.faults_planned += fs.planned;
        summary.faults_fired += fs.fired;
        if fs.planned > 0 && fs.fired == 0 {
            summary.iterations_without_faults += 1;
        }
    }
    match o.verdict.status {
        Status::Pass => summary.passes += 1,
        Status::Violation => summary.violations += 1,
        Status::Inconclusive => summary.inconclusive += 1,
        Status::Stuck => summary.stuck += 1,
        // Only `verify` without a history gives a mismatch.
        Status::Mismatch => summary.violations += 1,
    }
    let failed = o.verdict.status != Status::Pass;
    crate::err!(
        "{}",
        iteration_end(i, &o.verdict.summary, failed.then_some(&reproduce))
    );
    // A passing iteration's topic goes, so the cluster's disk stays bounded.
    if o.verdict.status == Status::Pass {
        let admin = crate::admin::Admin::new(&o.info.admin_url);
        if let Err(e) = admin
            .delete_topic(&o.info.topic, o.info.partitions > 1)
            .await
        {
            tracing::warn!("could not delete {}: {e}", o.info.topic);
        }
    }
    summary.runs.push(Iteration {
        iteration: i,
        seed,
        status: o.verdict.status.to_string(),
        summary: o.verdict.summary.clone(),
        seconds: o.elapsed.as_secs_f64(),
        run_dir: Some(o.run_dir.clone()),
        reproduce,
        faults,
        faults_summary: o.verdict.faults_summary.clone(),
        error: String::new(),
        nodes_down: Vec::new(),
    });
    prune(&mut summary.runs, keep_passing);
    failed
}

/// Count and record an iteration that could not run, with the nodes that were down then.
fn record_error(
    summary: &mut Summary,
    e: &Error,
    (i, seed): (u64, u64),
    reproduce: String,
    t: Instant,
    nodes_down: Vec<NodeDown>,
) {
    crate::err!(
        "{}",
        iteration_end(i, &format!("could not run: {e}"), Some(&reproduce))
    );
    let error = e.to_string();
    let mut why = error.lines().next().unwrap_or_default().to_string();
    for d in &nodes_down {
        why.push_str(&format!("; {d}"));
    }
    summary.errors += 1;
    summary.runs.push(Iteration {
        iteration: i,
        seed,
        status: "error".into(),
        summary: why,
        seconds: t.elapsed().as_secs_f64(),
        run_dir: None,
        reproduce,
        faults: BTreeMap::new(),
        faults_summary: None,
        error,
        nodes_down,
    });
}

/// The soak cluster's nodes that are not running now, with their last log lines.
async fn nodes_down(kept: &Option<KeptCluster>) -> Vec<NodeDown> {
    match kept.as_ref().and_then(|k| k.current()) {
        Some(c) => c.nodes_down(crate::runner::LOG_LINES).await,
        None => Vec::new(),
    }
}

pub async fn soak(args: SoakArgs) -> Result<i32> {
    let s = load_scenario(&args)?;
    // A cluster the harness did not start: refused once, here, not in every iteration.
    crate::runner::check_external(&s)?;
    let settings = regression_settings(&args)?;
    let master = crate::seed::given_or_drawn(args.seed.or(s.seed));
    if args.dry_run {
        crate::out!("{}", dry_run(&args, &s, master, &settings)?);
        return Ok(exit::PASS);
    }
    let mut store = store::open_for(&args.store).await?;
    let mut store_failed = None;
    let mut records: Vec<Record> = Vec::new();
    let soak_id = crate::rundir::new_run_id();
    let dir = args.out.join(format!("soak-{}-{}", s.name, soak_id));
    std::fs::create_dir_all(&dir).map_err(Error::io(format!("create {}", dir.display())))?;
    crate::errln!(
        "soak of {} for {}: master seed {master}, directory {}",
        s.name,
        humantime::format_duration(args.duration),
        dir.display()
    );
    let started = Instant::now();
    let started_ms = crate::rundir::now_ms();
    let mut summary = Summary::empty_with(s.name.clone(), master, started_ms, settings.clone());
    // One cluster for every iteration.
    let mut kept = match &s.cluster {
        ClusterSpec::Docker(spec) => Some(KeptCluster::new(
            spec,
            args.image.as_deref(),
            &soak_id,
            false,
        )),
        ClusterSpec::External { .. } => None,
    };
    let result: Result<()> = async {
        loop {
            if crate::lifecycle::is_stopping() {
                summary.interrupted = true;
                break;
            }
            if budget_spent(&args, started, summary.iterations) {
                break;
            }
            let cluster = match &mut kept {
                Some(k) => {
                    let c = k.ensure().await?;
                    summary.cluster_restarts = k.restarts;
                    Some(c)
                }
                None => None,
            };
            summary.iterations += 1;
            let i = summary.iterations;
            let seed = crate::seed::iteration_seed(master, i);
            announce_iteration(i, seed, started, args.duration);
            let req = iteration_request(&args, &s, seed, &dir, &cluster);
            let reproduce = runner::reproduce_command(&args.scenario, seed);
            let t = Instant::now();
            match runner::run(req).await {
                Ok(o) => {
                    // Before `record_outcome`, which may prune this directory.
                    match store::try_record(&mut store, &o.run_dir, Source::Soak).await {
                        Ok(r) => records.extend(r),
                        Err(code) => store_failed = store_failed.or(Some(code)),
                    }
                    let failed =
                        record_outcome(&mut summary, &o, i, seed, reproduce, args.keep_passing)
                            .await;
                    if failed && args.stop_on_failure {
                        crate::errln!("soak: stopping at the first failure (--stop-on-failure)");
                        break;
                    }
                }
                Err(Error::Interrupted) => {
                    summary.iterations -= 1;
                    summary.interrupted = true;
                    break;
                }
                Err(e) => {
                    let down = nodes_down(&kept).await;
                    record_error(&mut summary, &e, (i, seed), reproduce, t, down);
                    if args.stop_on_failure {
                        break;
                    }
                    // The next iteration checks the cluster and re-creates it if needed.
                }
            }
            summary.elapsed_s = started.elapsed().as_secs_f64();
            write_outputs(&dir, &summary, args.junit.as_deref())?;
        }
        Ok(())
    }
    .await;
    if let Some(k) = &mut kept {
        k.finish().await;
    }
    summary.elapsed_s = started.elapsed().as_secs_f64();
    if crate::lifecycle::is_stopping() {
        summary.interrupted = true;
    }
    let (comparison, read_failed) =
        compare_with_store(&mut store, &records, started_ms, settings).await;
    summary.regressions = comparison;
    store_failed = store_failed.or(read_failed);
    write_outputs(&dir, &summary, args.junit.as_deref())?;
    crate::outln!("{}", summary.table());
    crate::outln!(
        "soak directory: {} (index.html, summary.json)",
        dir.display()
    );
    result?;
    if summary.interrupted {
        return Err(Error::Interrupted);
    }
    Ok(store::exit_with(
        summary.exit_code_with(args.fail_on_regression),
        store_failed,
    ))
}

#[cfg(test)]
mod tests;
