//! The steps of one run, in order: the topic prepared, the history opened (or continued),
//! the producer connected, the faults started, production with the signal and stall
//! watchers, every fault healed; then the steps in `ending`: `producer.json`, the wait for
//! open transactions and the read-back, the verdict (with the broker lines for a run that did
//! not pass), and the verdict's files.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{watch, Mutex};

use crate::admin::Admin;
use crate::drivers::Built;
use crate::error::{Error, Result};
use crate::history::{self, EventBody, History};
use crate::journal::Journal;
use crate::nemesis::reply_loss::{Addressing, ReplyLossProxy};
use crate::nemesis::Nemesis;
use crate::plan::Plan;
use crate::progress::Progress;
use crate::rundir::{now_ms, RunDir, RunInfo};
use crate::scenario::Workload;
use crate::stall::StallWatch;
use crate::workload::{self, Producer, Stats};

use super::driver::{consumer_evidence, start_transform, Driver, TransformStart};
use super::ending::{
    judge, print_producer, settle_and_read, topic_partitions, write_producer_json, Read,
};
use super::env::Env;
use super::logs::stall_logs;
use super::resume::{next_attempt, remaining_plan};
use super::supervisor::Supervisor;
use super::{faults, Outcome, Request};

/// The run's steps, each a function of this module (the faults' tasks are in `faults`).
pub(super) async fn execute(
    req: &Request,
    dir: &RunDir,
    info: &RunInfo,
    env: &Env,
    plan: &Plan,
    client: Option<&Built>,
    resuming: bool,
) -> Result<Outcome> {
    let started = Instant::now();
    let w = &req.scenario.workload;
    let admin = Admin::new(&env.admin_url);
    let guarded = prepare_topic(&admin, &info.topic, w, env.cluster.is_none()).await?;
    let history_path = dir.file("history.jsonl");
    let journal = Journal::open(&dir.file("journal")).map_err(|e| Error::Pulsar(e.to_string()))?;
    let (history, first_attempt) = open_history(req, info, &history_path, &journal, resuming)?;
    for message in guarded {
        history.record(EventBody::Note { message });
    }
    // Faults active now (and nodes being started again after their own exit).
    let active: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    // The nodes a restart fault holds down; the supervisor starts every other node that exits.
    let holds = Arc::new(crate::cluster::Holds::default());
    let supervisor = env
        .cluster
        .as_ref()
        .map(|c| Supervisor::start(c.clone(), holds.clone(), history.clone(), active.clone()));
    // The producer's connections go through a proxy when a fault drops its replies.
    let proxy = plan
        .faults
        .iter()
        .any(|f| matches!(f.kind, crate::scenario::FaultKind::ReplyLoss { .. }))
        .then(|| {
            let addressing = match client {
                Some(_) => Addressing::Rewritten,
                None => Addressing::Dialed,
            };
            ReplyLossProxy::new(history.clone(), addressing)
        });
    let mut cfg = producer_config(req, info, &proxy);
    // A driver that cannot start or connect is the harness's gap: the run is judged without
    // a workload (INCONCLUSIVE), as one whose driver ends mid-run.
    let unstarted = || super::unstarted::Unstarted {
        req,
        dir,
        info,
        env,
        plan,
        history: &history,
        history_path: &history_path,
        proxy: &proxy,
        started,
    };
    if let Some(built) = client {
        let jit = crate::drivers::Jit::for_workload(w.transform.is_some());
        match start_driver(built, jit, dir, &history).await {
            Ok(d) => cfg.driver = Some(d),
            Err(Error::Driver(e)) => return unstarted().finish(e, None).await,
            Err(e) => return Err(e),
        }
        if let Some(p) = &proxy {
            // An official client cannot be asked to dial through the proxy: it is given the
            // service URL's listener, and the proxy routes the brokers its lookups name. The
            // harness's own client (verify's reads, a resume's aborts) goes straight.
            let url = p
                .service_url(&env.service_url)
                .await
                .map_err(|e| Error::Pulsar(format!("cannot start the reply_loss proxy: {e}")))?;
            cfg.driver_service_url = Some(url);
            cfg.dial = None;
        }
    }
    let handle = cfg.driver.clone();
    let producer = match &w.transform {
        None => {
            match connect_producer(cfg, env, &admin, journal, &history, first_attempt, resuming)
                .await
            {
                Ok(p) => Driver::Produce(p),
                Err(Error::Driver(e)) => return unstarted().finish(e, handle).await,
                Err(e) => return Err(e),
            }
        }
        Some(_) => {
            match start_transform(TransformStart {
                scenario: &req.scenario,
                dir: &dir.path,
                topic: &info.topic,
                run_id: &info.run_id,
                service_url: &env.service_url,
                admin: &admin,
                history: &history,
                history_path: &history_path,
                dial: cfg.dial.clone(),
                journal,
                first_attempt,
                resuming,
                driver: cfg.driver.clone(),
                driver_service_url: cfg.driver_service_url.clone(),
            })
            .await
            {
                Ok(t) => t,
                Err(Error::Driver(e)) => return unstarted().finish(e, handle).await,
                Err(e) => return Err(e),
            }
        }
    };
    let stats = producer.stats();

    // Faults.
    let (stop_tx, stop_rx) = watch::channel(false);
    let nemesis = faults::nemesis(req, env, &admin, info, &proxy, &producer, &holds).await?;
    // A resumed run continues the plan: a fault that started before the interruption is not
    // fired again (its time has passed, so it would fire at once, after every resume).
    let remaining;
    let fault_plan = if resuming {
        remaining = remaining_plan(plan, &history_path, &history);
        &remaining
    } else {
        plan
    };
    let fault_tasks = faults::drive_faults(
        fault_plan,
        nemesis.clone(),
        admin.clone(),
        info.topic.clone(),
        stats.clone(),
        history.clone(),
        stop_rx,
        active.clone(),
    );
    // The coordinators' transaction logs, while faults hit a coordinator.
    let txnlog = super::txnlog::Watcher::start(
        fault_plan,
        &admin,
        env.cluster.as_deref(),
        &history,
        dir.file(super::txnlog::FILE),
    );
    let (report, stalled_since) = produce(
        req,
        &producer,
        &stats,
        &active,
        &history,
        &stop_tx,
        fault_tasks,
    )
    .await;
    heal(&nemesis, &history, &producer, &proxy).await;
    let txnlog_steps = match txnlog {
        Some(w) => w.finish().await,
        None => Vec::new(),
    };
    write_producer_json(dir, &report, &stats, producer.journal_counters())?;
    if let Some(t) = producer.transform_json() {
        dir.write_json("transform.json", &t)?;
    }
    if crate::lifecycle::is_stopping() {
        history.record(EventBody::Note {
            message: "interrupted: faults healed, no read-back".into(),
        });
        history.flush();
        return Err(Error::Interrupted);
    }
    print_producer(&report);
    if let Some(c) = &env.cluster {
        let own_exits = supervisor.as_ref().is_some_and(|s| s.exits() > 0);
        if !plan.faults.is_empty() || own_exits {
            ready_again(c, supervisor.as_ref()).await?;
        }
    }

    let parts = topic_partitions(env, info).await?;
    // A stall: what Pulsar says about each partition now, before the read-back waits.
    let at_stall = match stalled_since {
        Some(_) => super::stuck::at_stall(&admin, &parts, &history).await,
        None => Vec::new(),
    };
    let (rb, incomplete, stuck_reads) =
        settle_and_read(dir, env, &admin, info, &parts, &req.scenario, &history).await?;
    let consumer = consumer_evidence(&admin, &req.scenario, &info.topic, &history, &dir.path).await;
    // Logs for a run that did not go well: every container's, and for a stall the broker
    // lines about the topic since it began.
    let stall = stall_logs(dir, env, info, &history, stalled_since, at_stall).await;
    let read = Read {
        rb,
        incomplete,
        stuck_reads,
        consumer,
        txnlog_steps,
    };
    let verdict = judge(req, dir, info, env, plan, read, stall, &history_path).await?;
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

/// Create the topic (and a transform's input) with its retention guard (`guard`), before
/// anything is produced, and turn deduplication on when the workload asks. On a cluster the
/// harness did not start (`external`), a topic or guard Pulsar refuses refuses the run
/// (exit 2). Returns the history's notes.
async fn prepare_topic(
    admin: &Admin,
    topic: &str,
    w: &Workload,
    external: bool,
) -> Result<Vec<String>> {
    let mut topics = vec![topic.to_string()];
    if w.transform.is_some() {
        topics.push(crate::scenario::transform::input_topic(topic));
    }
    let mut notes = Vec::new();
    for t in &topics {
        if w.partitions > 1 {
            admin
                .create_partitioned_topic(t, w.partitions)
                .await
                .map_err(|e| super::guard::refusal(t, &e, external))?;
        }
        notes.push(super::guard::guard(admin, t, w.partitions, external).await?);
    }
    if w.deduplication {
        enable_deduplication(admin, topic, w.partitions).await?;
    }
    Ok(notes)
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

/// Open the history: a new one, or for a resumed run the interrupted one with its torn last
/// line cut and its clock continued. Records the run's start. Returns the history and the
/// first attempt number.
fn open_history(
    req: &Request,
    info: &RunInfo,
    history_path: &Path,
    journal: &Journal,
    resuming: bool,
) -> Result<(History, u64)> {
    let w = &req.scenario.workload;
    let torn = if resuming {
        history::repair_tail(history_path)?
    } else {
        0
    };
    let first_attempt = if resuming {
        next_attempt(history_path, journal)?
    } else {
        1
    };
    // t_ms = 0 is the start of the run; a resumed run continues the same clock.
    let start = if resuming {
        let last = history::last_t_ms(history_path) + 1;
        Instant::now()
            .checked_sub(Duration::from_millis(last))
            .unwrap_or_else(Instant::now)
    } else {
        Instant::now()
    };
    let history = History::create(history_path, start, resuming)?;
    if req.json {
        history.add_sink(Box::new(|ev| {
            if let Ok(line) = serde_json::to_string(ev) {
                crate::outln!("{line}");
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
    Ok((history, first_attempt))
}

/// The producer's configuration from the scenario's workload and sabotage.
fn producer_config(
    req: &Request,
    info: &RunInfo,
    proxy: &Option<Arc<ReplyLossProxy>>,
) -> workload::Config {
    let w = &req.scenario.workload;
    workload::Config {
        topic: info.topic.clone(),
        partitions: w.partitions,
        messages: w.messages,
        txn_size: w.txn_size,
        batch_size: w.batch_size,
        concurrency: w.concurrency,
        commits_in_flight: w.commits_in_flight,
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
        driver: None,
        driver_service_url: None,
    }
}

/// Start the official client's driver, its log in the run directory (`driver.log`, appended
/// to by a resumed run's new driver), and record which client and library it is.
async fn start_driver(
    built: &Built,
    jit: crate::drivers::Jit,
    dir: &RunDir,
    history: &History,
) -> Result<workload::DriverHandle> {
    let d = crate::drivers::Driver::start(built, jit, &dir.file("driver.log")).await?;
    history.record(EventBody::Note {
        message: format!(
            "client: {} ({} {}){}{}, driver pid {}",
            built.spec.kind,
            d.hello.library,
            d.hello.version,
            if d.hello.register {
                ", partitions registered ahead"
            } else {
                ""
            },
            if built.spec.kind == crate::drivers::ClientKind::Java {
                match jit {
                    crate::drivers::Jit::Quick => ", JVM on the first JIT tier",
                    crate::drivers::Jit::Full => ", JVM on both JIT tiers",
                }
            } else {
                ""
            },
            d.pid().unwrap_or(0)
        ),
    });
    Ok(workload::DriverHandle(Arc::new(d)))
}

/// Connect the producer (and, for a resumed run, settle what the interrupted one left).
async fn connect_producer(
    cfg: workload::Config,
    env: &Env,
    admin: &Admin,
    journal: Journal,
    history: &History,
    first_attempt: u64,
    resuming: bool,
) -> Result<Arc<Producer>> {
    let producer = Producer::connect(
        cfg,
        &env.service_url,
        admin.clone(),
        journal,
        history.clone(),
        first_attempt,
    )
    .await
    .map_err(|e| match e {
        workload::WorkloadError::Driver(message) => {
            Error::Driver(crate::drivers::DriverError::Connect { message })
        }
        e => Error::Pulsar(format!("cannot start the producer: {e}")),
    })?;
    if resuming {
        producer
            .resume()
            .await
            .map_err(|e| Error::Pulsar(format!("cannot resume: {e}")))?;
    }
    Ok(Arc::new(producer))
}

/// Produce under the faults: progress, the signal watcher and the stall watch run while the
/// producer does; then the fault tasks are stopped and awaited. Returns the producer's report
/// and the run time a stall began.
async fn produce(
    req: &Request,
    producer: &Driver,
    stats: &Arc<Stats>,
    active: &Arc<Mutex<Vec<String>>>,
    history: &History,
    stop_tx: &watch::Sender<bool>,
    fault_tasks: Vec<tokio::task::JoinHandle<()>>,
) -> (workload::Report, Option<u64>) {
    let w = &req.scenario.workload;
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
    (report, stalled_since)
}

/// Everything healed before the final read; the producer's connections (and the proxy)
/// closed.
async fn heal(
    nemesis: &Option<Arc<Nemesis>>,
    history: &History,
    producer: &Driver,
    proxy: &Option<Arc<ReplyLossProxy>>,
) {
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
}

/// After the faults: wait until the cluster serves transactions again. A node that exits on
/// its own meanwhile is started again by the supervisor, and the wait starts over (three
/// times at most).
async fn ready_again(c: &crate::cluster::Cluster, sup: Option<&Supervisor>) -> Result<()> {
    let mut tries = 0;
    loop {
        if let Some(s) = sup {
            s.settle().await;
        }
        let before = sup.map_or(0, |s| s.exits());
        match crate::ready::wait_ready(c, Duration::from_secs(300)).await {
            Ok(_) => return Ok(()),
            Err(e) => {
                if let Some(s) = sup {
                    s.settle().await;
                }
                if tries < 3 && sup.map_or(0, |s| s.exits()) > before {
                    tries += 1;
                    continue;
                }
                return Err(e.into());
            }
        }
    }
}

/// Stop the producer when nothing has committed for `timeout` with no fault active. Ends with
/// the run time the stall began, or runs until aborted.
fn watch_stall(
    timeout: Duration,
    producer: Driver,
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
