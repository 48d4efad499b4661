//! One run: bring the cluster up (or use the given one), produce under the planned faults,
//! heal every fault, wait until nothing is left open, read back, judge, write the run
//! directory, tear down. The runner ties the parts together and checks nothing itself.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{watch, Mutex};

use crate::admin::Admin;
use crate::checker::{self, Context, Verdict};
use crate::cluster::{image, Cluster, Role};
use crate::error::{Error, Result};
use crate::history::{self, EventBody, History};
use crate::journal::Journal;
use crate::lifecycle::RunGuard;
use crate::nemesis::reply_loss::ReplyLossProxy;
use crate::nemesis::Nemesis;
use crate::plan::{self, Plan, PlannedFault, Trigger};
use crate::progress::Progress;
use crate::rundir::{now_ms, RunDir, RunInfo};
use crate::scenario::{ClusterSpec, Guard, Scenario, Topology, GUARD_WAIT};
use crate::stall::StallWatch;
use crate::workload::{self, Producer, Stats};

/// The durable subscription that holds the workload topic's messages until the read-back.
pub const RETAIN_SUBSCRIPTION: &str = "pulsar-chaos-retain";

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
        }
    }
}

/// The command that reproduces a run.
pub fn reproduce_command(scenario_file: &Path, seed: u64) -> String {
    format!("pulsar-chaos run {} --seed {seed}", scenario_file.display())
}

/// The cluster a run talks to.
struct Env {
    service_url: String,
    admin_url: String,
    cluster: Option<Arc<Cluster>>,
    /// Created by this run (so torn down by it).
    owned: bool,
    image: Option<String>,
    topology: Topology,
}

async fn bring_up(req: &Request, run_id: &str) -> Result<Env> {
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

/// How long the read-back waits for the transactions left open on the topic to end. The
/// coordinator aborts them once they time out, but after broker and ZooKeeper restarts it took
/// minutes to reach every partition (two soak iterations of `mixed` were inconclusive with
/// the earlier `txn_timeout + 30s`; the transactions had ended minutes later). Waiting is by
/// condition: a healthy run stops waiting as soon as nothing is open.
pub fn settle_cap(txn_timeout: Duration) -> Duration {
    txn_timeout + Duration::from_secs(240)
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

/// Run a scenario from the start.
pub async fn run(req: Request) -> Result<Outcome> {
    let run_id = crate::rundir::new_run_id();
    let _guard = RunGuard::with_keep(&run_id, req.keep_cluster);
    let dir = RunDir::create(&req.out, &req.scenario.name, &run_id)?;
    dir.write("scenario.yaml", &req.scenario.resolved_yaml())?;
    let plan = plan::make(&req.scenario, req.seed);
    dir.write("plan.json", &plan.to_json())?;
    let reproduce = reproduce_command(&dir.file("scenario.yaml"), req.seed);
    eprintln!("seed: {}   run directory: {}", req.seed, dir.path.display());
    eprintln!("reproduce with: {reproduce}");
    let env = bring_up(&req, &run_id).await?;
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
    };
    dir.write_json("run.json", &info)?;
    let result = execute(&req, &dir, &info, &env, &plan, false).await;
    finish(&req, &env, result).await
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
    let plan = plan::make(&scenario, info.seed);
    let cluster = match info.topology.as_str() {
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
    };
    let _guard = RunGuard::with_keep(&info.run_id, info.kept_cluster);
    eprintln!(
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
    };
    let env = Env {
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
    let result = execute(&req, &dir, &info, &env, &plan, true).await;
    finish(&req, &env, result).await
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

async fn finish(req: &Request, env: &Env, result: Result<Outcome>) -> Result<Outcome> {
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

/// Turn deduplication on for the workload topic and wait, by condition, until every partition
/// reports it enabled (the policy reaches the topic asynchronously).
async fn enable_deduplication(admin: &Admin, topic: &str, partitions: u32) -> Result<()> {
    if partitions <= 1 {
        admin.create_topic(topic).await?;
    }
    admin.set_deduplication(topic, true).await?;
    let names = crate::txn::partition_names(topic, partitions);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mut pending = Vec::new();
        for t in &names {
            match admin.deduplication_status(t).await {
                Ok(Some(s)) if s == "Enabled" => {}
                Ok(s) => pending.push(format!("{t}: {}", s.unwrap_or_else(|| "unknown".into()))),
                Err(e) => pending.push(format!("{t}: {e}")),
            }
        }
        if pending.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Error::Pulsar(format!(
                "deduplication was not enabled on {topic} within 120s: {}",
                pending.join(", ")
            )));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The first attempt number of a resumed run: above every attempt the history or the
/// journal names. The journal is synced before an attempt's first SEND and can be ahead of
/// the history after a kill; a reused number would overwrite the old attempt's `txn-N.json`,
/// or delete it when a resend of the reused number clears its predecessor.
fn next_attempt(history: &Path, journal: &Journal) -> Result<u64> {
    let journaled = journal
        .last_attempt()
        .map_err(|e| Error::Pulsar(e.to_string()))?;
    Ok(last_attempt(history).max(journaled) + 1)
}

/// The faults a history records as started.
fn faults_started(path: &Path) -> BTreeSet<String> {
    let Ok(events) = history::read(path) else {
        return BTreeSet::new();
    };
    events
        .filter_map(|e| e.ok())
        .filter_map(|e| match e.body {
            EventBody::FaultStarted { fault, .. } => Some(fault),
            _ => None,
        })
        .collect()
}

/// The highest attempt number in a history (to continue numbering after a resume).
fn last_attempt(path: &Path) -> u64 {
    let Ok(events) = history::read(path) else {
        return 0;
    };
    events
        .filter_map(|e| e.ok())
        .filter_map(|e| match e.body {
            EventBody::TxnOpened { attempt, .. } => Some(attempt),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

async fn execute(
    req: &Request,
    dir: &RunDir,
    info: &RunInfo,
    env: &Env,
    plan: &Plan,
    resuming: bool,
) -> Result<Outcome> {
    let started = Instant::now();
    let w = &req.scenario.workload;
    let admin = Admin::new(&env.admin_url);
    if w.partitions > 1 {
        admin
            .create_partitioned_topic(&info.topic, w.partitions)
            .await?;
    }
    if w.deduplication {
        enable_deduplication(&admin, &info.topic, w.partitions).await?;
    }
    let history_path = dir.file("history.jsonl");
    let journal = Journal::open(&dir.file("journal")).map_err(|e| Error::Pulsar(e.to_string()))?;
    let torn = if resuming {
        history::repair_tail(&history_path)?
    } else {
        0
    };
    let first_attempt = if resuming {
        next_attempt(&history_path, &journal)?
    } else {
        1
    };
    // t_ms = 0 is the start of the run; a resumed run continues the same clock.
    let start = if resuming {
        let last = history::last_t_ms(&history_path) + 1;
        Instant::now()
            .checked_sub(Duration::from_millis(last))
            .unwrap_or_else(Instant::now)
    } else {
        Instant::now()
    };
    let history = History::create(&history_path, start, resuming)?;
    if req.json {
        history.add_sink(Box::new(|ev| {
            if let Ok(line) = serde_json::to_string(ev) {
                println!("{line}");
            }
        }));
    }
    history.record(EventBody::RunStarted {
        run_id: info.run_id.clone(),
        seed: info.seed,
        scenario: req.scenario.name.clone(),
        topic: info.topic.clone(),
        partitions: w.partitions,
        messages: w.messages,
        resend: w.resend.to_string(),
        wall_ms: now_ms(),
    });
    if torn > 0 {
        history.record(EventBody::Note {
            message: format!(
                "resuming: cut a torn last line ({torn} bytes) the interruption left in the history"
            ),
        });
    }
    // The producer's connections go through a proxy when a fault drops its replies.
    let proxy = plan
        .faults
        .iter()
        .any(|f| matches!(f.kind, crate::scenario::FaultKind::ReplyLoss { .. }))
        .then(|| ReplyLossProxy::new(history.clone()));
    let cfg = workload::Config {
        topic: info.topic.clone(),
        partitions: w.partitions,
        messages: w.messages,
        txn_size: w.txn_size,
        batch_size: w.batch_size,
        concurrency: w.concurrency,
        txn_timeout: w.txn_timeout,
        resend: w.resend,
        message_size: w.message_size,
        rate: w.rate,
        abort_every: w.abort_every,
        transactions: w.transactions,
        op_timeout: w.op_timeout,
        deadline: w.deadline,
        skip: req
            .scenario
            .sabotage
            .skip
            .iter()
            .copied()
            .collect::<BTreeSet<u64>>(),
        duplicate: req.scenario.sabotage.duplicate.clone(),
        name: format!("pc-{}", info.run_id),
        dial: proxy
            .as_ref()
            .map(|p| workload::Dialer(Arc::new(p.clone()) as Arc<dyn crate::txn::Dial>)),
    };
    let producer = Producer::connect(
        cfg,
        &env.service_url,
        admin.clone(),
        journal,
        history.clone(),
        first_attempt,
    )
    .await
    .map_err(|e| Error::Pulsar(format!("cannot start the producer: {e}")))?;
    if resuming {
        producer
            .resume()
            .await
            .map_err(|e| Error::Pulsar(format!("cannot resume: {e}")))?;
    }
    let producer = Arc::new(producer);
    let stats = producer.stats();

    // Faults.
    let (stop_tx, stop_rx) = watch::channel(false);
    let active: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let nemesis = match &env.cluster {
        Some(c) => {
            let version = match &req.scenario.cluster {
                ClusterSpec::Docker(d) => d.pulsar_version.clone(),
                ClusterSpec::External { .. } => crate::versions::DEFAULT.to_string(),
            };
            let tools = image::tools_image(c.engine(), &c.image, &version).await?;
            let n = Nemesis::new(
                c.clone(),
                admin.clone(),
                tools,
                info.topic.clone(),
                w.partitions,
            );
            Some(Arc::new(match &proxy {
                Some(p) => n.with_reply_loss(p.clone()),
                None => n,
            }))
        }
        None => None,
    };
    // A resumed run continues the plan: a fault that started before the interruption is not
    // fired again (its time has passed, so it would fire at once, after every resume).
    let remaining;
    let fault_plan = if resuming {
        let fired = faults_started(&history_path);
        if !fired.is_empty() {
            history.record(EventBody::Note {
                message: format!(
                    "resuming: {} fault(s) started before the interruption and are not fired again: {}",
                    fired.len(),
                    fired.iter().cloned().collect::<Vec<_>>().join(", ")
                ),
            });
        }
        remaining = Plan {
            faults: plan
                .faults
                .iter()
                .filter(|f| !fired.contains(&f.name))
                .cloned()
                .collect(),
            ..plan.clone()
        };
        &remaining
    } else {
        plan
    };
    let fault_tasks = drive_faults(
        fault_plan,
        nemesis.clone(),
        admin.clone(),
        info.topic.clone(),
        stats.clone(),
        history.clone(),
        stop_rx,
        active.clone(),
    );
    let progress = Progress::start(
        req.progress,
        stats.clone(),
        active.clone(),
        w.messages,
        w.deadline,
        history.clone(),
    );

    // A signal stops the producer; the fault tasks then heal and the run ends without a read.
    let watcher = {
        let producer = producer.clone();
        let stop_tx = stop_tx.clone();
        let mut stopping = crate::lifecycle::stopping();
        tokio::spawn(async move {
            if stopping.wait_for(|s| *s).await.is_ok() {
                producer.stop("interrupted by a signal");
                let _ = stop_tx.send(true);
            }
        })
    };
    let stall_watch = w.stall_timeout.map(|timeout| {
        watch_stall(
            timeout,
            producer.clone(),
            stats.clone(),
            active.clone(),
            history.clone(),
        )
    });
    let report = producer.run().await;
    watcher.abort();
    let stalled_since = match stall_watch {
        Some(t) if t.is_finished() => t.await.ok().flatten(),
        Some(t) => {
            t.abort();
            None
        }
        None => None,
    };
    let _ = stop_tx.send(true);
    for t in fault_tasks {
        let _ = t.await;
    }
    progress.stop().await;
    // Everything healed before the final read.
    if let Some(n) = &nemesis {
        for line in n.heal_all().await {
            history.record(EventBody::Note {
                message: format!("final heal: {line}"),
            });
        }
    }
    producer.close().await;
    if let Some(p) = &proxy {
        p.shutdown();
    }
    let lat_n = stats.commit_latency_n.load(Ordering::Relaxed);
    dir.write_json(
        "producer.json",
        &serde_json::json!({
            "messages_committed": report.stats.messages_committed,
            "elapsed_s": report.elapsed.as_secs_f64(),
            "messages_per_s": report.stats.messages_committed as f64 / report.elapsed.as_secs_f64().max(1e-9),
            "transactions_committed": report.stats.committed,
            "aborted": report.stats.aborted,
            "ambiguous": report.stats.ambiguous,
            "commit_latency_avg_ms": if lat_n > 0 { stats.commit_latency_us.load(Ordering::Relaxed) as f64 / lat_n as f64 / 1000.0 } else { 0.0 },
            "complete": report.complete,
        }),
    )?;
    if crate::lifecycle::is_stopping() {
        history.record(EventBody::Note {
            message: "interrupted: faults healed, no read-back".into(),
        });
        history.flush();
        return Err(Error::Interrupted);
    }
    eprintln!(
        "producer: {} committed, {} aborted, {} ambiguous transaction(s); {} messages committed in {:.1}s ({})",
        report.stats.committed,
        report.stats.aborted,
        report.stats.ambiguous,
        report.stats.messages_committed,
        report.elapsed.as_secs_f64(),
        report.detail
    );
    if let Some(c) = &env.cluster {
        if !plan.faults.is_empty() {
            crate::ready::wait_ready(c, Duration::from_secs(300)).await?;
        }
    }

    // Wait out open transactions, then read back.
    let client = crate::txn::Client::new(&env.service_url, Duration::from_secs(10));
    let parts = crate::readback::partitions_of(&client, &info.topic)
        .await
        .map_err(|e| Error::Pulsar(e.to_string()))?;
    client.close_all().await;
    let settle = settle_cap(w.txn_timeout);
    let mut incomplete = None;
    match crate::readback::wait_settled(&admin, &parts, settle).await {
        Ok(d) => history.record(EventBody::Note {
            message: format!(
                "no transaction open on the topic after {}ms; reading back",
                d.as_millis()
            ),
        }),
        Err(e) => incomplete = Some(e),
    }
    eprintln!("reading back {} ...", info.topic);
    let rb = crate::readback::read_back(
        &env.service_url,
        &info.topic,
        w.messages,
        Duration::from_secs(60),
    )
    .await?;
    history.record(EventBody::Note {
        message: format!(
            "read back {} messages from {} partition(s) in {}ms",
            rb.findings.received,
            rb.partitions,
            rb.elapsed.as_millis()
        ),
    });
    history.flush();
    // Logs for a run that did not go well: every container's, and for a stall the broker
    // lines about the topic since it began.
    let mut logs: Option<Vec<(Role, String, String)>> = None;
    let mut stall_log = Vec::new();
    let mut stall_cause = None;
    if let (Some(c), Some(since)) = (&env.cluster, stalled_since) {
        let all = save_logs(dir, env, c, info).await;
        let since_wall = now_ms()
            .saturating_sub(history.now_ms())
            .saturating_add(since);
        let (namespace, base) = match info.topic.rsplit_once('/') {
            Some((ns, base)) => (format!("{ns}/"), base.to_string()),
            None => (String::new(), info.topic.clone()),
        };
        for (role, name, log) in &all {
            if matches!(role, Role::Broker | Role::Standalone) {
                stall_log.extend(crate::stall::scan_log(name, log, &base, since_wall, 3));
            }
        }
        stall_log.sort_by_key(|e| std::cmp::Reverse(e.count));
        stall_log.truncate(10);
        stall_cause = crate::stall::known_cause(&stall_log, &namespace);
        logs = Some(all);
    }
    let mut ctx = Context {
        seed: Some(info.seed),
        readback_incomplete: incomplete.or(rb.incomplete.clone()),
        duplicate_ids: rb.duplicate_ids.clone(),
        stall_log,
        stall_cause,
        sabotage_skip: req.scenario.sabotage.skip.iter().copied().collect(),
        sabotage_duplicate: req.scenario.sabotage.duplicate.iter().copied().collect(),
        broker_log: Vec::new(),
    };
    // What the checker sees is stored before it judges (`recheck` judges it again offline).
    let stored = crate::readlog::StoredReadback::new(
        w.messages,
        rb.log,
        rb.all_findings,
        rb.all_duplicate_ids,
        ctx.clone(),
    );
    dir.write(
        crate::readlog::FILE,
        &(serde_json::to_string(&stored).expect("serializable") + "\n"),
    )?;
    drop(stored);
    let events = history::read(&history_path)?;
    let mut verdict = checker::verdict(rb.findings.clone(), Some(events), &ctx);
    if let (Some(c), false) = (&env.cluster, verdict.status == checker::Status::Pass) {
        let all = match logs.take() {
            Some(all) => all,
            None => save_logs(dir, env, c, info).await,
        };
        verdict = quote_broker_log(
            dir,
            &mut ctx,
            rb.findings,
            verdict,
            &all,
            &history_path,
            &info.topic,
        )?;
    }
    dir.write_json("verdict.json", &verdict)?;
    crate::report::write_html(dir, info, plan, &verdict)?;
    Ok(Outcome {
        verdict,
        run_dir: dir.path.clone(),
        info: info.clone(),
        elapsed: started.elapsed(),
        producer: report,
    })
}

/// After a verdict that was not a pass: quote what the brokers logged (`all`, as `save_logs`
/// wrote it) about the anomalies' transactions. The context gets the lines and is stored
/// again in `readback.json` (so `recheck` reproduces what follows), and the checker judges
/// `findings` again with it. The lines are evidence only: the status cannot change. Returns
/// `verdict` as it is when no line names those transactions.
fn quote_broker_log(
    dir: &RunDir,
    ctx: &mut Context,
    findings: checker::Findings,
    verdict: Verdict,
    all: &[(Role, String, String)],
    history_path: &Path,
    topic: &str,
) -> Result<Verdict> {
    let broker_log = broker_log_of(&verdict, all, history_path, topic);
    if broker_log.is_empty() {
        return Ok(verdict);
    }
    ctx.broker_log = broker_log;
    let mut stored: crate::readlog::StoredReadback = dir.read_json(crate::readlog::FILE)?;
    stored.context = ctx.clone();
    dir.write(
        crate::readlog::FILE,
        &(serde_json::to_string(&stored).expect("serializable") + "\n"),
    )?;
    drop(stored);
    let events = history::read(history_path)?;
    Ok(checker::verdict(findings, Some(events), ctx))
}

/// The brokers' log lines about the transactions of the attempts that carried the verdict's
/// anomalies (see `brokerlog`), read from `all` (as `save_logs` wrote them to the run
/// directory).
fn broker_log_of(
    verdict: &Verdict,
    all: &[(Role, String, String)],
    history_path: &Path,
    topic: &str,
) -> Vec<crate::brokerlog::TxnLog> {
    use crate::brokerlog::{self, LogFile, WallClock};
    if verdict.attempts.is_empty() {
        return Vec::new();
    }
    let clock = match history::read(history_path) {
        Ok(events) => WallClock::from_history(events),
        Err(_) => WallClock::default(),
    };
    let txns = brokerlog::queries(verdict.attempts.iter().filter_map(|a| a.opened()), &clock);
    let files: Vec<(String, &str, &str)> = all
        .iter()
        .filter(|(role, _, _)| matches!(role, Role::Broker | Role::Standalone))
        .map(|(_, name, log)| (format!("logs/{name}.log"), name.as_str(), log.as_str()))
        .collect();
    let logs: Vec<LogFile<'_>> = files
        .iter()
        .map(|(file, node, text)| LogFile { node, file, text })
        .collect();
    let base = topic.rsplit('/').next().unwrap_or(topic);
    brokerlog::scan(&logs, &txns, base)
}

/// Write every container's log to `logs/<node>.log` in the run directory: all of it for a
/// cluster this run started, from the run's start on for one it was given (a soak's cluster
/// outlives its iterations). The logs, too.
async fn save_logs(
    dir: &RunDir,
    env: &Env,
    c: &Cluster,
    info: &RunInfo,
) -> Vec<(Role, String, String)> {
    let since = if env.owned {
        0
    } else {
        i32::try_from(info.started_ms / 1000).unwrap_or(0)
    };
    let all = c.logs_since(since).await;
    let logs_dir = dir.file("logs");
    if let Err(e) = std::fs::create_dir_all(&logs_dir) {
        tracing::warn!("cannot create {}: {e}", logs_dir.display());
        return all;
    }
    for (_, name, log) in &all {
        let path = logs_dir.join(format!("{name}.log"));
        if let Err(e) = std::fs::write(&path, log) {
            tracing::warn!("cannot write {}: {e}", path.display());
        }
    }
    all
}

/// Stop the producer when nothing has committed for `timeout` with no fault active. Ends with
/// the run time the stall began, or runs until aborted.
fn watch_stall(
    timeout: Duration,
    producer: Arc<Producer>,
    stats: Arc<Stats>,
    active: Arc<Mutex<Vec<String>>>,
    history: History,
) -> tokio::task::JoinHandle<Option<u64>> {
    tokio::spawn(async move {
        let committed = || stats.messages_committed.load(Ordering::Relaxed);
        let mut watch = StallWatch::new(timeout, history.now_ms(), committed());
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            let faults_active = !active.lock().await.is_empty();
            let now = history.now_ms();
            if let Some(since) = watch.observe(now, committed(), faults_active) {
                let detail = format!(
                    "nothing committed for {}s with no fault active",
                    (now - since) / 1000
                );
                history.record(EventBody::Stalled {
                    since_ms: since,
                    idle_ms: now - since,
                    detail: detail.clone(),
                });
                producer.stop(&format!("stalled: {detail}"));
                return Some(since);
            }
        }
    })
}

/// One task per planned fault: wait for its trigger, inject, hold, heal.
#[allow(clippy::too_many_arguments)]
fn drive_faults(
    plan: &Plan,
    nemesis: Option<Arc<Nemesis>>,
    admin: Admin,
    topic: String,
    stats: Arc<Stats>,
    history: History,
    stop: watch::Receiver<bool>,
    active: Arc<Mutex<Vec<String>>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    // Offsets count from the run's start, the history's t_ms = 0.
    let start = tokio::time::Instant::from_std(history.start());
    // Faults on containers do not overlap: one waits for the other.
    let container_lock = Arc::new(Mutex::new(()));
    plan.faults
        .iter()
        .cloned()
        .map(|f| {
            let nemesis = nemesis.clone();
            let stats = stats.clone();
            let history = history.clone();
            let mut stop = stop.clone();
            let active = active.clone();
            let lock = container_lock.clone();
            let admin = admin.clone();
            let topic = topic.clone();
            tokio::spawn(async move {
                let fired = wait_trigger(&f, start, &stats, &mut stop).await;
                if !fired {
                    history.record(EventBody::FaultSkipped {
                        fault: f.name.clone(),
                        reason: "the producer finished before the fault was due".into(),
                    });
                    return;
                }
                let needs_container = !matches!(
                    f.kind,
                    crate::scenario::FaultKind::TopicUnload { .. }
                        | crate::scenario::FaultKind::ReplyLoss { .. }
                );
                let _held = if needs_container {
                    Some(lock.lock().await)
                } else {
                    None
                };
                if *stop.borrow() {
                    history.record(EventBody::FaultSkipped {
                        fault: f.name.clone(),
                        reason: "the producer finished while the fault waited for another to end"
                            .into(),
                    });
                    return;
                }
                let planned_ms = match f.trigger {
                    Trigger::AtMs(t) => Some(t),
                    Trigger::AfterCommits(_) => None,
                };
                let nem = match &nemesis {
                    Some(n) => n.clone(),
                    None => {
                        // External cluster: unloads only, straight through the admin API.
                        run_unload_external(&f, &admin, &topic, &history, planned_ms).await;
                        return;
                    }
                };
                let target = match nem.prepare(&f).await {
                    Ok(t) => t,
                    Err(e) => {
                        history.record(EventBody::FaultFailed {
                            fault: f.name.clone(),
                            error: e.to_string(),
                        });
                        return;
                    }
                };
                // The guard is waited for last, right before the action.
                let guard_note = match f.guard {
                    Some(Guard::Committing) => wait_committing(&stats, &mut stop).await,
                    None => String::new(),
                };
                if *stop.borrow() {
                    history.record(EventBody::FaultSkipped {
                        fault: f.name.clone(),
                        reason: "the run was stopping".into(),
                    });
                    return;
                }
                // Written just before the action, so its time is when the fault began.
                history.record(EventBody::FaultStarted {
                    fault: f.name.clone(),
                    kind: f.kind.name().to_string(),
                    target: target.label.clone(),
                    planned_ms,
                    action: nem.intent(&f, &target),
                    detail: guard_note.trim_start_matches("; ").to_string(),
                });
                let applied = match nem.inject(&f, &target).await {
                    Ok(a) => a,
                    Err(e) => {
                        history.record(EventBody::FaultFailed {
                            fault: f.name.clone(),
                            error: e.to_string(),
                        });
                        return;
                    }
                };
                history.record(EventBody::FaultApplied {
                    fault: f.name.clone(),
                    action: applied.action.clone(),
                    detail: applied.detail.clone(),
                });
                active
                    .lock()
                    .await
                    .push(format!("{} on {}", f.name, applied.target));
                let window = f.hold_window();
                let cut_short = tokio::select! {
                    _ = async {
                        match window {
                            Some(hold) => tokio::time::sleep(hold).await,
                            None => std::future::pending::<()>().await,
                        }
                    } => false,
                    _ = nem.spent(&f) => false,
                    _ = stop.wait_for(|s| *s) => true,
                };
                let mut result = nem.heal(&f, &applied).await;
                for _ in 0..3 {
                    if result.is_ok() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    result = nem.heal(&f, &applied).await;
                }
                active
                    .lock()
                    .await
                    .retain(|a| !a.starts_with(&format!("{} ", f.name)));
                match result {
                    Ok(h) => history.record(EventBody::FaultHealed {
                        fault: f.name.clone(),
                        action: h.action,
                        ok: true,
                        detail: if cut_short {
                            "cut short: the producer finished".into()
                        } else {
                            h.detail
                        },
                    }),
                    Err(e) => history.record(EventBody::FaultHealed {
                        fault: f.name.clone(),
                        action: "heal".into(),
                        ok: false,
                        detail: e.to_string(),
                    }),
                }
            })
        })
        .collect()
}

async fn run_unload_external(
    f: &PlannedFault,
    admin: &Admin,
    topic: &str,
    history: &History,
    planned_ms: Option<u64>,
) {
    if let crate::scenario::FaultKind::TopicUnload { scope } = &f.kind {
        let (action, r) = match scope {
            crate::scenario::UnloadScope::WorkloadTopic => (
                format!("PUT /admin/v2/{}/unload", crate::admin::topic_path(topic)),
                admin.unload_topic(topic).await,
            ),
            crate::scenario::UnloadScope::Topic(t) => (
                format!("PUT /admin/v2/{}/unload", crate::admin::topic_path(t)),
                admin.unload_topic(t).await,
            ),
            crate::scenario::UnloadScope::Namespace(ns) => (
                format!("PUT /admin/v2/namespaces/{ns}/unload"),
                admin.unload_namespace(ns).await,
            ),
        };
        match r {
            Ok(()) => {
                history.record(EventBody::FaultStarted {
                    fault: f.name.clone(),
                    kind: f.kind.name().into(),
                    target: "cluster (admin API)".into(),
                    planned_ms,
                    action,
                    detail: String::new(),
                });
                history.record(EventBody::FaultHealed {
                    fault: f.name.clone(),
                    action: "none (an unload needs no heal)".into(),
                    ok: true,
                    detail: String::new(),
                });
            }
            Err(e) => history.record(EventBody::FaultFailed {
                fault: f.name.clone(),
                error: e.to_string(),
            }),
        }
    }
}

/// Wait for a fault's trigger; false when the run stopped first.
async fn wait_trigger(
    f: &PlannedFault,
    start: tokio::time::Instant,
    stats: &Stats,
    stop: &mut watch::Receiver<bool>,
) -> bool {
    match f.trigger {
        Trigger::AtMs(t) => {
            let due = tokio::select! {
                _ = tokio::time::sleep_until(start + Duration::from_millis(t)) => true,
                _ = stop.wait_for(|s| *s) => false,
            };
            due && !*stop.borrow()
        }
        Trigger::AfterCommits(n) => loop {
            if *stop.borrow() {
                return false;
            }
            if stats.committed.load(Ordering::Relaxed) >= n {
                return true;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                _ = stop.wait_for(|s| *s) => return false,
            }
        },
    }
}

/// Wait until a commit is in flight (at most GUARD_WAIT); a note for the history.
async fn wait_committing(stats: &Stats, stop: &mut watch::Receiver<bool>) -> String {
    let until = tokio::time::Instant::now() + GUARD_WAIT;
    loop {
        if stats.commits_in_flight.load(Ordering::SeqCst) > 0 {
            return "; fired while a commit was in flight".into();
        }
        if tokio::time::Instant::now() >= until || *stop.borrow() {
            return format!(
                "; no commit was in flight within {}s, fired anyway",
                GUARD_WAIT.as_secs()
            );
        }
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
}

#[cfg(test)]
mod tests;
