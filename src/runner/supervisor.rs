//! The run's supervisor, on a cluster the harness started: what Kubernetes or systemd does in
//! production. Every second it looks for a node that exited while no fault of the harness
//! holds it down (a broker whose ZooKeeper session expired shuts itself down by design; a
//! restart fault's node is marked in `Holds` for its `down_for`), records Pulsar's own exit
//! with its last log lines (`node_exited`), starts it again at once and waits, by condition,
//! until it serves (`node_restarted`). While it is down it counts as an active fault (the
//! stall watch waits; the status line shows it). A node that exits [`MAX_EXITS`] times in a run
//! is left down, and the history says so.
//!
//! A Docker restart policy would not do: the nemesis kills a node with kill(2) on its main
//! process and holds it down for `down_for`; Docker counts that as the container's own exit
//! and would start it again at once, under the fault.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{watch, Mutex};

use crate::admin::Admin;
use crate::cluster::{Cluster, Exited, Holds, Node, Role};
use crate::history::{EventBody, History};

/// How often the nodes are looked at.
const POLL: Duration = Duration::from_secs(1);
/// Exits of one node in one run after which it is left down.
pub const MAX_EXITS: u32 = 5;
/// How long a restarted node may take to serve again.
const READY_WITHIN: Duration = Duration::from_secs(180);
/// Log lines kept with an exit.
pub const LOG_LINES: usize = 20;

/// The supervisor of one run; stopped when dropped.
pub(super) struct Supervisor {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

struct Shared {
    cluster: Arc<Cluster>,
    holds: Arc<Holds>,
    history: History,
    active: Arc<Mutex<Vec<String>>>,
    /// Exits per container id in this run.
    counts: std::sync::Mutex<BTreeMap<String, u32>>,
    /// Containers not looked at: being waited for, or given up (and said so).
    skip: std::sync::Mutex<BTreeSet<String>>,
    /// One pass at a time.
    pass: Mutex<()>,
    /// Readiness waits under way.
    waiting: watch::Sender<u32>,
    waits: std::sync::Mutex<tokio::task::JoinSet<()>>,
    exits: AtomicU64,
}

impl Supervisor {
    pub(super) fn start(
        cluster: Arc<Cluster>,
        holds: Arc<Holds>,
        history: History,
        active: Arc<Mutex<Vec<String>>>,
    ) -> Supervisor {
        let shared = Arc::new(Shared {
            cluster,
            holds,
            history,
            active,
            counts: Default::default(),
            skip: Default::default(),
            pass: Mutex::new(()),
            waiting: watch::channel(0).0,
            waits: Default::default(),
            exits: AtomicU64::new(0),
        });
        let task = {
            let shared = shared.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(POLL);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    if crate::lifecycle::is_stopping() {
                        return;
                    }
                    pass(&shared).await;
                }
            })
        };
        Supervisor { shared, task }
    }

    /// Own exits seen in this run.
    pub(super) fn exits(&self) -> u64 {
        self.shared.exits.load(Ordering::Relaxed)
    }

    /// Look now, and wait until every node started again serves (or its wait ended).
    pub(super) async fn settle(&self) {
        pass(&self.shared).await;
        let mut rx = self.shared.waiting.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.task.abort();
        if let Ok(mut w) = self.shared.waits.lock() {
            w.abort_all();
        }
    }
}

/// One look at every node: each own exit recorded, and the node started again (or left down).
async fn pass(sh: &Arc<Shared>) {
    let _one = sh.pass.lock().await;
    let skip = sh.skip.lock().expect("not poisoned").clone();
    let no_start: BTreeSet<String> = sh
        .counts
        .lock()
        .expect("not poisoned")
        .iter()
        .filter(|(_, n)| **n >= MAX_EXITS)
        .map(|(id, _)| id.clone())
        .collect();
    let found = sh
        .cluster
        .restart_exited(&sh.holds, &skip, &no_start, LOG_LINES)
        .await;
    for e in found {
        sh.exits.fetch_add(1, Ordering::Relaxed);
        let n = {
            let mut c = sh.counts.lock().expect("not poisoned");
            let n = c.entry(e.node.id.clone()).or_insert(0);
            *n += 1;
            *n
        };
        record_exit(sh, &e, n);
        let label = e.node.label();
        match e.started {
            None => {
                sh.history.record(EventBody::NodeRestarted {
                    node: label,
                    ok: false,
                    ready_ms: 0,
                    detail: format!(
                        "left down: it exited {} times in this run (the supervisor gives up after {MAX_EXITS})",
                        n - 1
                    ),
                });
                sh.skip
                    .lock()
                    .expect("not poisoned")
                    .insert(e.node.id.clone());
            }
            Some(Err(err)) => sh.history.record(EventBody::NodeRestarted {
                node: label,
                ok: false,
                ready_ms: 0,
                detail: format!("docker start {} failed: {err}", e.node.name),
            }),
            Some(Ok(())) => wait_ready_later(sh, e.node.clone()),
        }
    }
}

/// `node_exited`, and a line on standard error.
fn record_exit(sh: &Shared, e: &Exited, n: u32) {
    let label = e.node.label();
    crate::errln!(
        "supervisor: {label} exited on its own (exit code {}{}){}",
        e.exit_code
            .map(|c| c.to_string())
            .unwrap_or_else(|| "unknown".into()),
        if e.oom_killed { ", OOM-killed" } else { "" },
        match &e.started {
            Some(Ok(())) => format!("; started it again (exit {n} of this node in this run)"),
            Some(Err(err)) => format!("; starting it again failed: {err}"),
            None => "; left down".to_string(),
        }
    );
    for l in e.log.iter().rev().take(3).rev() {
        crate::errln!("  {label}: {l}");
    }
    sh.history.record(EventBody::NodeExited {
        node: label,
        container: e.node.name.clone(),
        exit_code: e.exit_code,
        oom_killed: e.oom_killed,
        log: e.log.clone(),
    });
}

/// Wait (in a task of its own) until the restarted node serves; record `node_restarted`.
/// Meanwhile the node is an active fault and is not looked at.
fn wait_ready_later(sh: &Arc<Shared>, node: Node) {
    let what = format!("{} restarting (Pulsar's own exit)", node.label());
    sh.skip
        .lock()
        .expect("not poisoned")
        .insert(node.id.clone());
    sh.waiting.send_modify(|n| *n += 1);
    let sh2 = sh.clone();
    let task = async move {
        let sh = sh2;
        sh.active.lock().await.push(what.clone());
        let t = Instant::now();
        let r = wait_serving(&sh.cluster, &sh.holds, &node).await;
        let (ok, detail) = match r {
            Ok(true) => (
                true,
                format!("docker start {}; {}", node.name, serving(&node)),
            ),
            Ok(false) => (
                false,
                "a fault took it down again before it served; the fault's heal starts it".into(),
            ),
            Err(e) => (false, e),
        };
        sh.history.record(EventBody::NodeRestarted {
            node: node.label(),
            ok,
            ready_ms: t.elapsed().as_millis() as u64,
            detail,
        });
        sh.active.lock().await.retain(|a| a != &what);
        sh.skip.lock().expect("not poisoned").remove(&node.id);
        sh.waiting.send_modify(|n| *n = n.saturating_sub(1));
    };
    sh.waits.lock().expect("not poisoned").spawn(task);
}

/// What "serves" means for a node of this role.
fn serving(node: &Node) -> &'static str {
    match node.role {
        Role::Broker | Role::Standalone => "GET /admin/v2/brokers/ready answers 200",
        Role::Zookeeper => "ZooKeeper answers ruok",
        Role::Bookie => "the bookie accepts connections on 3181",
        Role::Init | Role::Sidecar => "running",
    }
}

/// Wait until `node` serves: Ok(true); Ok(false) when a fault holds it down meanwhile; Err
/// when it exited again or did not serve in time.
async fn wait_serving(cluster: &Cluster, holds: &Holds, node: &Node) -> Result<bool, String> {
    let admin = cluster
        .brokers()
        .into_iter()
        .find(|b| b.node.id == node.id)
        .map(|b| Admin::new(&b.admin_url));
    let ip = node.ip.clone().unwrap_or_default();
    let cond = || {
        let admin = admin.clone();
        let ip = ip.clone();
        async move {
            if holds.is_held(node).await {
                return true;
            }
            match node.role {
                Role::Broker | Role::Standalone => match admin {
                    Some(a) => a.broker_ready().await.is_ok(),
                    None => false,
                },
                Role::Zookeeper => crate::cluster::zk_ruok(&ip).await,
                Role::Bookie => crate::cluster::tcp_open(&ip, 3181).await,
                Role::Init | Role::Sidecar => true,
            }
        }
    };
    let deadline = Instant::now() + READY_WITHIN;
    match cluster
        .wait_until(deadline, node, serving(node), cond)
        .await
    {
        Ok(()) => Ok(!holds.is_held(node).await),
        Err(e) => Err(first_line(&e.to_string())),
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_string()
}
