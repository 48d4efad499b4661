//! `matrix`: one scenario, the same seeds, on several Pulsar versions, K runs each, one
//! cluster at a time (a fresh one per run, so a version's broken state never leaks into the
//! next run). With `--clients`, each version runs through each client too. The runs alternate
//! between versions and clients (run 1 on every version and client, then run 2, ...) so that a
//! noisy stretch of the machine falls on all of them alike. Writes matrix.json,
//! matrix.txt and matrix.html (linking every run's report) after each run.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::cli::MatrixArgs;
use crate::error::{Error, Result};
use crate::matrix::{self, Matrix, RunAt, RunRecord};
use crate::runner::{self, Request};
use crate::scenario::{self, ClusterSpec};
use crate::store::{self, Source};

/// The versions of `--versions`: a comma-separated list, each checked, none twice.
pub fn parse_versions(list: &str) -> std::result::Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for v in list.split(',').map(str::trim).filter(|v| !v.is_empty()) {
        crate::versions::validate(v)?;
        if !out.iter().any(|o| o == v) {
            out.push(v.to_string());
        }
    }
    if out.is_empty() {
        return Err("--versions names no version (e.g. --versions 4.0.7,4.2.4)".into());
    }
    Ok(out)
}

/// The clients of `--clients`: a comma-separated list, none twice, each one that fits the
/// scenario (checked by `Scenario::set_client` on a copy, as `run --client` checks it).
pub fn parse_clients(
    list: &str,
    s: &scenario::Scenario,
) -> std::result::Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for c in list.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        s.clone()
            .set_client(Some(c), None)
            .map_err(|e| format!("--clients {list}: {e}"))?;
        if !out.iter().any(|o| o == c) {
            out.push(c.to_string());
        }
    }
    if out.is_empty() {
        return Err("--clients names no client (e.g. --clients own,java,go)".into());
    }
    Ok(out)
}

/// The command that reproduces one run of the matrix.
pub fn reproduce_command(
    scenario_file: &Path,
    seed: u64,
    version: &str,
    client: Option<&str>,
) -> String {
    let mut c = format!(
        "{} --pulsar-version {version}",
        runner::reproduce_command(scenario_file, seed)
    );
    if let Some(client) = client {
        c.push_str(&format!(" --client {client}"));
    }
    c
}

fn write_outputs(dir: &Path, m: &Matrix) -> Result<()> {
    let json = serde_json::to_string_pretty(m).expect("matrices serialize");
    std::fs::write(dir.join("matrix.json"), json + "\n").map_err(Error::io("write matrix.json"))?;
    std::fs::write(dir.join("matrix.txt"), m.table()).map_err(Error::io("write matrix.txt"))?;
    std::fs::write(dir.join("matrix.html"), crate::report::matrix::page(m))
        .map_err(Error::io("write matrix.html"))?;
    Ok(())
}

/// The matrix before any run.
fn empty_matrix(
    name: &str,
    args: &MatrixArgs,
    versions: &[String],
    clients: &[String],
    seeds: &[u64],
) -> Matrix {
    Matrix {
        scenario: name.to_string(),
        scenario_file: args.scenario.display().to_string(),
        versions: versions.to_vec(),
        clients: clients.to_vec(),
        times: args.times,
        seeds: seeds.to_vec(),
        started_ms: crate::rundir::now_ms(),
        elapsed_s: 0.0,
        interrupted: false,
        rows: Vec::new(),
        runs: Vec::new(),
    }
}

/// The request for one run of the matrix (a fresh cluster of its own).
fn request(args: &MatrixArgs, sv: scenario::Scenario, seed: u64, out: PathBuf) -> Request {
    Request {
        scenario: sv,
        scenario_path: Some(args.scenario.clone()),
        seed,
        out,
        keep_cluster: false,
        image: None,
        progress: args.progress.into(),
        json: false,
        reuse: None,
        announce_reproduce: true,
    }
}

/// The record of a run that completed, with its throughput and run directory relative to `dir`.
fn record_of(
    o: &runner::Outcome,
    dir: &Path,
    mut at: RunAt,
    expected: Option<&[scenario::Expected]>,
) -> RunRecord {
    let elapsed = o.producer.elapsed.as_secs_f64();
    let throughput = (elapsed > 0.0).then(|| o.producer.stats.messages_committed as f64 / elapsed);
    at.seconds = o.elapsed.as_secs_f64();
    at.run_dir = o
        .run_dir
        .strip_prefix(dir)
        .map(|p| p.display().to_string())
        .ok();
    RunRecord::from_verdict(at, &o.verdict, throughput, expected)
}

/// Announce one run's outcome on stderr.
fn print_record(index: u32, record: &RunRecord) {
    crate::errln!(
        "matrix: {} run {index}: {}{}: {}",
        record.label(),
        record.outcome,
        match record.as_expected {
            Some(true) => " (as expected)",
            Some(false) => " (not as expected)",
            None => "",
        },
        record.summary.chars().take(200).collect::<String>()
    );
}

pub async fn matrix(args: MatrixArgs) -> Result<i32> {
    if args.times == 0 {
        return Err(Error::Usage("--times must be at least 1".into()));
    }
    let versions = parse_versions(&args.versions).map_err(Error::Usage)?;
    let s = scenario::load(&args.scenario)?;
    if matches!(s.cluster, ClusterSpec::External { .. }) {
        return Err(Error::Usage(format!(
            "{}: matrix starts a cluster of each version itself; this scenario names an external cluster",
            args.scenario.display()
        )));
    }
    let clients = match &args.clients {
        Some(list) => parse_clients(list, &s).map_err(Error::Usage)?,
        None => Vec::new(),
    };
    let fixed = args.seed.or(s.seed);
    let master = fixed.unwrap_or_else(crate::seed::fresh);
    let seeds = matrix::seeds(fixed, master, args.times);
    let mut store = store::open_for(&args.store).await?;
    let mut store_failed = None;
    let id = crate::rundir::new_run_id();
    let dir = args.out.join(format!("matrix-{}-{id}", s.name));
    std::fs::create_dir_all(&dir).map_err(Error::io(format!("create {}", dir.display())))?;
    crate::errln!(
        "matrix of {} on {}{}: {} run(s) each, seeds {}; directory {}",
        s.name,
        versions.join(", "),
        if clients.is_empty() {
            String::new()
        } else {
            format!(" through {}", clients.join(", "))
        },
        args.times,
        if fixed.is_some() {
            format!("{master} (every run)")
        } else {
            format!("derived from master seed {master}")
        },
        dir.display()
    );
    let started = Instant::now();
    let mut m = empty_matrix(&s.name, &args, &versions, &clients, &seeds);
    let axis = m.client_axis();
    'runs: for (i, &seed) in seeds.iter().enumerate() {
        let index = i as u32 + 1;
        for (version, client) in versions
            .iter()
            .flat_map(|v| axis.iter().map(move |c| (v, c.as_deref())))
        {
            if crate::lifecycle::is_stopping() {
                m.interrupted = true;
                break 'runs;
            }
            let mut sv = s.clone();
            sv.set_pulsar_version(version).map_err(Error::Usage)?;
            if client.is_some() {
                sv.set_client(client, None).map_err(Error::Usage)?;
            }
            let expected = s.expect.get(version).map(|e| e.as_slice());
            let reproduce = reproduce_command(&args.scenario, seed, version, client);
            let label = matrix::label(version, client);
            crate::errln!("matrix: {label} run {index}/{}, seed {seed}", args.times);
            let out: PathBuf = match client {
                Some(c) => dir.join(version).join(c),
                None => dir.join(version),
            };
            let req = request(&args, sv, seed, out);
            let t = Instant::now();
            let at = RunAt {
                version: version.clone(),
                client: client.map(str::to_string),
                index,
                seed,
                seconds: 0.0,
                run_dir: None,
                reproduce,
            };
            let record = match runner::run(req).await {
                Ok(o) => {
                    store_failed = store::record_or_report(&mut store, &o.run_dir, Source::Matrix)
                        .await
                        .or(store_failed);
                    record_of(&o, &dir, at, expected)
                }
                Err(Error::Interrupted) => {
                    m.interrupted = true;
                    break 'runs;
                }
                Err(e) => RunRecord::error(
                    RunAt {
                        seconds: t.elapsed().as_secs_f64(),
                        ..at
                    },
                    e.to_string(),
                    expected,
                ),
            };
            print_record(index, &record);
            m.runs.push(record);
            m.elapsed_s = started.elapsed().as_secs_f64();
            m.summarize(&s.expect);
            write_outputs(&dir, &m)?;
        }
    }
    m.elapsed_s = started.elapsed().as_secs_f64();
    if crate::lifecycle::is_stopping() {
        m.interrupted = true;
    }
    m.summarize(&s.expect);
    write_outputs(&dir, &m)?;
    crate::outln!("{}", m.table());
    crate::outln!(
        "matrix directory: {} (matrix.html, matrix.json)",
        dir.display()
    );
    if m.interrupted {
        return Err(Error::Interrupted);
    }
    Ok(store::exit_with(m.exit_code(), store_failed))
}
