//! The nemesis: one injector per fault kind, each with a heal. What an injector changes in a
//! container is journaled on disk before it is changed ([`journal`]), so a crash of the
//! harness leaves nothing `pulsar-chaos clean` cannot undo. Only labelled containers are
//! touched.
//!
//! This file holds the shared types and the dispatch from a fault's kind to its injector;
//! [`target`] resolves a fault's target when it fires; one file per injector: `restart`,
//! `pause`, `packet_loss`, `unload`, `consumer` (`consumer_restart`), `reply_loss` (and its
//! proxy); `exec` runs every destructive fault through an exec adapter instead; `heal` undoes
//! what the journal still holds.

mod consumer;
pub mod exec;
mod heal;
pub mod journal;
mod packet_loss;
mod pause;
pub mod reply_loss;
mod restart;
mod target;
mod unload;

pub use heal::{heal_matching, heal_outstanding, heal_run};
pub use packet_loss::{
    netem_loss_script, netem_unavailable, nft_loss_script, LossMethod, PacketLoss,
};
pub use pause::Pause;
pub use reply_loss::ReplyLoss;
pub use restart::Restart;
pub use unload::{unload_call, Unload};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use journal::Change;

use crate::admin::Admin;
use crate::cluster::{Cluster, ClusterError, Node};
use crate::plan::PlannedFault;
use crate::scenario::FaultKind;

/// Errors of injecting or healing a fault.
#[derive(Debug, thiserror::Error)]
pub enum NemesisError {
    #[error("{0}")]
    Cluster(#[from] ClusterError),
    #[error("cannot resolve the target {target}: {reason}")]
    Target { target: String, reason: String },
    #[error("{action} failed: {reason}")]
    Action { action: String, reason: String },
    #[error("cannot write the fault journal: {0}")]
    Journal(#[from] std::io::Error),
}

/// What an injection did, for the history and for its heal.
#[derive(Debug, Clone)]
pub struct Applied {
    /// The resolved target, e.g. "broker-2 (owns partition 1)".
    pub target: String,
    /// The exact command or API call.
    pub action: String,
    /// How: e.g. which packet-loss method was used and why.
    pub detail: String,
    node: Option<Node>,
    /// The node an exec adapter touched.
    found: Option<crate::discovery::Found>,
    changes: Vec<(u64, Change)>,
}

/// A fault's target, resolved when the fault fires.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// e.g. "broker-2 (owns partition 1 of the topic)".
    pub label: String,
    /// The container, for faults on a container.
    pub node: Option<Node>,
    /// Its main process on this host, looked up in advance so a kill lands at once.
    pub pid: Option<i64>,
    /// The node of a cluster the harness did not start (exec adapter).
    pub found: Option<crate::discovery::Found>,
}

impl Resolved {
    fn node(&self) -> Result<Node, NemesisError> {
        self.node.clone().ok_or_else(|| NemesisError::Target {
            target: self.label.clone(),
            reason: "this fault needs a container".into(),
        })
    }
}

/// What a heal did.
#[derive(Debug, Clone)]
pub struct Healed {
    pub action: String,
    pub detail: String,
}

/// Context every injector gets: the Docker cluster the harness started, or an exec adapter
/// on a cluster it did not start; the admin API for both.
pub struct Nemesis {
    cluster: Option<Arc<Cluster>>,
    exec: Option<exec::ExecPlatform>,
    run_id: String,
    pub admin: Admin,
    pub tools_image: String,
    /// The workload's topic, and its partition count.
    pub topic: String,
    pub partitions: u32,
    next_change: AtomicU64,
    /// The proxy the producer's connections go through when the plan has `reply_loss` faults.
    reply_loss: Option<Arc<reply_loss::ReplyLossProxy>>,
    /// The transform's consumers, for `consumer_restart` faults.
    consumer_restarts: Option<Arc<crate::transform::restart::Restarts>>,
    /// The nodes a restart fault holds down, shared with the run's supervisor (which starts
    /// every other node that exited).
    holds: Arc<crate::cluster::Holds>,
}

/// One fault kind: make it happen, and undo it.
#[allow(async_fn_in_trait)]
pub trait Injector {
    /// What `inject` is about to do, for the history (written before it is done).
    fn intent(&self, f: &PlannedFault, target: &Resolved) -> String;
    async fn inject(
        &self,
        nem: &Nemesis,
        f: &PlannedFault,
        target: &Resolved,
    ) -> Result<Applied, NemesisError>;
    async fn heal(&self, nem: &Nemesis, applied: &Applied) -> Result<Healed, NemesisError>;
}

impl Nemesis {
    pub fn new(
        cluster: Arc<Cluster>,
        admin: Admin,
        tools_image: String,
        topic: String,
        partitions: u32,
    ) -> Nemesis {
        Nemesis {
            run_id: cluster.run_id.clone(),
            cluster: Some(cluster),
            exec: None,
            admin,
            tools_image,
            topic,
            partitions,
            next_change: AtomicU64::new(1),
            reply_loss: None,
            consumer_restarts: None,
            holds: Arc::default(),
        }
    }

    /// Share the marks of the nodes a fault holds down with the run's supervisor.
    pub fn with_holds(mut self, holds: Arc<crate::cluster::Holds>) -> Nemesis {
        self.holds = holds;
        self
    }

    /// The nemesis of a cluster the harness did not start: destructive faults through the
    /// exec adapter, unloads through the admin API.
    pub fn external(
        platform: exec::ExecPlatform,
        admin: Admin,
        run_id: &str,
        topic: String,
        partitions: u32,
    ) -> Nemesis {
        Nemesis {
            exec: Some(platform),
            ..Nemesis::without_nodes(admin, run_id, topic, partitions)
        }
    }

    /// The Docker cluster, for the faults that act on its containers.
    fn docker(&self) -> Result<&Arc<Cluster>, NemesisError> {
        self.cluster.as_ref().ok_or_else(|| NemesisError::Action {
            action: "act on a container".into(),
            reason: "this cluster was not started by the harness; faults on nodes go through its exec adapter".into(),
        })
    }

    /// The exec adapter, when the fault goes through it.
    fn exec_for(&self, f: &PlannedFault) -> Option<&exec::ExecPlatform> {
        self.exec
            .as_ref()
            .filter(|_| crate::adapter::is_destructive(&f.kind))
    }

    fn run_id(&self) -> &str {
        &self.run_id
    }

    fn journal(&self, change: Change) -> Result<(u64, Change), NemesisError> {
        let id = self.next_change.fetch_add(1, Ordering::Relaxed);
        journal::applied(self.run_id(), id, &change)?;
        Ok((id, change))
    }

    fn journal_healed(&self, id: u64) {
        if let Err(e) = journal::healed(self.run_id(), id) {
            tracing::warn!("fault journal: {e}");
        }
    }

    /// What injecting `f` on `target` will do.
    pub fn intent(&self, f: &PlannedFault, target: &Resolved) -> String {
        if let Some(ex) = self.exec_for(f) {
            return ex.intent(self, f, target);
        }
        match Kind::of(&f.kind) {
            Kind::Restart(r) => r.intent(f, target),
            Kind::Pause(p) => p.intent(f, target),
            Kind::PacketLoss(p) => p.intent(f, target),
            Kind::Unload(u) => u.intent_with(self),
            Kind::Consumer => consumer::intent(f),
            Kind::ReplyLoss(r) => r.intent(f),
        }
    }

    /// Inject a planned fault with the injector of its kind.
    pub async fn inject(
        &self,
        f: &PlannedFault,
        target: &Resolved,
    ) -> Result<Applied, NemesisError> {
        if let Some(ex) = self.exec_for(f) {
            return ex.inject(self, f, target).await;
        }
        match Kind::of(&f.kind) {
            Kind::Restart(r) => r.inject(self, f, target).await,
            Kind::Pause(p) => p.inject(self, f, target).await,
            Kind::PacketLoss(p) => p.inject(self, f, target).await,
            Kind::Unload(u) => u.inject(self, f, target).await,
            Kind::Consumer => consumer::inject(self, f).await,
            Kind::ReplyLoss(r) => r.inject(self, f, target),
        }
    }

    /// Heal what an injection applied.
    pub async fn heal(&self, f: &PlannedFault, applied: &Applied) -> Result<Healed, NemesisError> {
        if let Some(ex) = self.exec_for(f) {
            return ex.heal(self, f, applied).await;
        }
        match Kind::of(&f.kind) {
            Kind::Restart(r) => r.heal(self, applied).await,
            Kind::Pause(p) => p.heal(self, applied).await,
            Kind::PacketLoss(p) => p.heal(self, applied).await,
            Kind::Unload(u) => u.heal(self, applied).await,
            Kind::Consumer => consumer::heal(self, f),
            Kind::ReplyLoss(r) => r.heal(self, f),
        }
    }

    /// Undo everything still journaled for this run (before the final read, on error).
    pub async fn heal_all(&self) -> Vec<String> {
        let healed =
            heal_outstanding(self.cluster.as_ref().map(|c| c.engine()), self.run_id()).await;
        // Every node is up again: none is held down any more.
        self.holds.clear().await;
        healed
    }
}

/// A fault's injector, built once from its kind's fields (intent, inject and heal dispatch on
/// it).
enum Kind {
    Restart(Restart),
    Pause(Pause),
    PacketLoss(PacketLoss),
    Unload(Unload),
    Consumer,
    ReplyLoss(ReplyLoss),
}

impl Kind {
    fn of(kind: &FaultKind) -> Kind {
        match kind {
            FaultKind::BrokerRestart { mode, .. }
            | FaultKind::BookieRestart { mode, .. }
            | FaultKind::ZookeeperRestart { mode, .. } => Kind::Restart(Restart { mode: *mode }),
            FaultKind::Pause { .. } => Kind::Pause(Pause),
            FaultKind::PacketLoss { percent, .. } => {
                Kind::PacketLoss(PacketLoss { percent: *percent })
            }
            FaultKind::TopicUnload { scope } => Kind::Unload(Unload {
                scope: scope.clone(),
            }),
            FaultKind::ConsumerRestart { .. } => Kind::Consumer,
            FaultKind::ReplyLoss {
                reply,
                count,
                probability,
                duration,
            } => Kind::ReplyLoss(ReplyLoss {
                reply: *reply,
                count: *count,
                probability: *probability,
                duration: *duration,
            }),
        }
    }
}

/// Wait for `d`, unless it is zero.
pub async fn hold(d: Duration) {
    if !d.is_zero() {
        tokio::time::sleep(d).await;
    }
}
