//! The nemesis: one injector per fault kind, each with a heal. What an injector changes in a
//! container is journaled on disk before it is changed ([`journal`]), so a crash of the
//! harness leaves nothing `pulsar-chaos clean` cannot undo. Only labelled containers are
//! touched.

mod consumer;
pub mod exec;
mod heal;
pub mod journal;
pub mod reply_loss;
mod restart;

pub use heal::{heal_matching, heal_outstanding, heal_run};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use journal::Change;

use crate::admin::Admin;
use crate::cluster::{Cluster, ClusterError, Node, Role};
use crate::plan::{PlannedFault, PlannedTarget};
use crate::scenario::{FaultKind, RestartMode, UnloadScope};
use crate::txn::coordinator::TC_ASSIGN_TOPIC;

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

/// Which mechanism a packet-loss fault used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossMethod {
    Netem,
    Nftables,
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

/// broker_restart, bookie_restart, zookeeper_restart.
pub struct Restart {
    pub mode: RestartMode,
}
/// pause.
pub struct Pause;
/// packet_loss.
pub struct PacketLoss {
    pub percent: u8,
}
/// topic_unload.
pub struct Unload {
    pub scope: UnloadScope,
}

const NFT_TABLE: &str = "pulsar_chaos";

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

    /// Arm and disarm `reply_loss` faults on this proxy.
    pub fn with_reply_loss(mut self, proxy: Arc<reply_loss::ReplyLossProxy>) -> Nemesis {
        self.reply_loss = Some(proxy);
        self
    }

    /// Resolves when the fault has nothing more to do before its heal (a `reply_loss` count
    /// used up); never for other faults.
    pub async fn spent(&self, f: &PlannedFault) {
        let rx = match (&f.kind, &self.reply_loss) {
            (FaultKind::ReplyLoss { .. }, Some(p)) => p.spent(&f.name),
            _ => None,
        };
        match rx {
            Some(mut rx) => {
                if rx.wait_for(|s| *s).await.is_err() {
                    std::future::pending::<()>().await
                }
            }
            None => std::future::pending::<()>().await,
        }
    }

    fn proxy(&self) -> Result<&Arc<reply_loss::ReplyLossProxy>, NemesisError> {
        self.reply_loss
            .as_ref()
            .ok_or_else(|| NemesisError::Action {
                action: "arm the reply_loss proxy".into(),
                reason: "the producer does not go through a proxy in this run".into(),
            })
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

    /// The container a planned target names now (owners are looked up at this moment).
    pub async fn resolve(&self, target: &PlannedTarget) -> Result<(Node, String), NemesisError> {
        let err = |reason: String| NemesisError::Target {
            target: target.to_string(),
            reason,
        };
        let broker_owning = |topic: String, what: String| async move {
            let l = self
                .admin
                .lookup(&topic)
                .await
                .map_err(|e| err(e.to_string()))?;
            let b = self.docker()?.broker_by_url(&l.broker_url).ok_or_else(|| {
                err(format!(
                    "{} is served by {}, which is not a broker of this run",
                    topic, l.broker_url
                ))
            })?;
            Ok::<_, NemesisError>((b.node.clone(), format!("broker-{} ({what})", b.index)))
        };
        match target {
            PlannedTarget::Broker { index } => {
                let b = self
                    .docker()?
                    .broker(*index)
                    .ok_or_else(|| err(format!("no broker-{index}")))?;
                Ok((b.node, format!("broker-{index}")))
            }
            PlannedTarget::OwnerOfTopic { partition } => {
                let topic = match partition {
                    Some(p) if self.partitions > 1 => format!("{}-partition-{p}", self.topic),
                    _ => self.topic.clone(),
                };
                let what = match partition {
                    Some(p) => format!("owns partition {p} of the topic"),
                    None => "owns the topic".to_string(),
                };
                broker_owning(topic, what).await
            }
            PlannedTarget::CoordinatorOwner { coordinator } => {
                broker_owning(
                    format!("{TC_ASSIGN_TOPIC}-partition-{coordinator}"),
                    format!("serves transaction coordinator {coordinator}"),
                )
                .await
            }
            PlannedTarget::Bookie { index } => {
                let n = self
                    .docker()?
                    .node(Role::Bookie, *index)
                    .ok_or_else(|| err(format!("no bookie-{index}")))?;
                Ok((n.clone(), format!("bookie-{index}")))
            }
            PlannedTarget::Zookeeper => {
                let n = self
                    .docker()?
                    .node(Role::Zookeeper, 1)
                    .ok_or_else(|| err("no zookeeper in this topology".into()))?;
                Ok((n.clone(), "zookeeper".into()))
            }
            PlannedTarget::Cluster | PlannedTarget::Consumer { .. } => {
                Err(err(format!("{target} is not a container")))
            }
        }
    }

    /// Resolve a planned fault's target now (owners are looked up at this moment).
    pub async fn prepare(&self, f: &PlannedFault) -> Result<Resolved, NemesisError> {
        if let Some(ex) = self.exec_for(f) {
            return ex.prepare(self, f).await;
        }
        match (&f.kind, &f.target) {
            (FaultKind::ConsumerRestart { .. }, _) => consumer::resolve(f),
            (FaultKind::ReplyLoss { .. }, _) => Ok(Resolved {
                label: "the producer's connections (reply_loss proxy)".into(),
                node: None,
                pid: None,
                found: None,
            }),
            (FaultKind::TopicUnload { .. }, _) | (_, PlannedTarget::Cluster) => Ok(Resolved {
                label: "cluster (admin API)".into(),
                node: None,
                pid: None,
                found: None,
            }),
            (_, t) => {
                let (node, label) = self.resolve(t).await?;
                let pid = self.docker()?.host_pid(&node).await;
                Ok(Resolved {
                    label,
                    node: Some(node),
                    pid,
                    found: None,
                })
            }
        }
    }

    /// What injecting `f` on `target` will do.
    pub fn intent(&self, f: &PlannedFault, target: &Resolved) -> String {
        if let Some(ex) = self.exec_for(f) {
            return ex.intent(self, f, target);
        }
        match &f.kind {
            FaultKind::BrokerRestart { mode, .. }
            | FaultKind::BookieRestart { mode, .. }
            | FaultKind::ZookeeperRestart { mode, .. } => Restart { mode: *mode }.intent(f, target),
            FaultKind::Pause { .. } => Pause.intent(f, target),
            FaultKind::PacketLoss { percent, .. } => {
                PacketLoss { percent: *percent }.intent(f, target)
            }
            FaultKind::TopicUnload { scope } => Unload {
                scope: scope.clone(),
            }
            .intent_with(self),
            FaultKind::ConsumerRestart { .. } => consumer::intent(f),
            FaultKind::ReplyLoss {
                reply,
                count,
                probability,
                duration,
            } => {
                let pick = match (count, probability) {
                    (Some(n), _) => format!("the next {n}"),
                    (None, Some(p)) => format!(
                        "each with probability {p} (draws seeded {})",
                        f.draw_seed.unwrap_or(0)
                    ),
                    (None, None) => "none".into(),
                };
                let until = match duration {
                    Some(d) => format!("for {}ms", d.as_millis()),
                    None => "until spent or the producer finishes".into(),
                };
                format!(
                    "arm the proxy: drop {pick} {} replies to the producer and close each such connection, {until}",
                    reply.command()
                )
            }
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
        match &f.kind {
            FaultKind::BrokerRestart { mode, .. }
            | FaultKind::BookieRestart { mode, .. }
            | FaultKind::ZookeeperRestart { mode, .. } => {
                Restart { mode: *mode }.inject(self, f, target).await
            }
            FaultKind::Pause { .. } => Pause.inject(self, f, target).await,
            FaultKind::PacketLoss { percent, .. } => {
                PacketLoss { percent: *percent }
                    .inject(self, f, target)
                    .await
            }
            FaultKind::TopicUnload { scope } => {
                Unload {
                    scope: scope.clone(),
                }
                .inject(self, f, target)
                .await
            }
            FaultKind::ConsumerRestart { .. } => consumer::inject(self, f).await,
            FaultKind::ReplyLoss {
                reply,
                count,
                probability,
                ..
            } => {
                let pick =
                    match (count, probability, f.draw_seed) {
                        (Some(n), _, _) => reply_loss::Pick::Count(*n),
                        (None, Some(p), Some(seed)) => reply_loss::Pick::Probability {
                            p: *p,
                            rng: crate::seed::Rng::new(seed),
                        },
                        _ => return Err(NemesisError::Action {
                            action: "arm the reply_loss proxy".into(),
                            reason:
                                "the plan gives neither a count nor a probability with its draws"
                                    .into(),
                        }),
                    };
                self.proxy()?.arm(&f.name, *reply, pick);
                Ok(Applied {
                    target: target.label.clone(),
                    action: format!("armed the proxy for {} replies", reply.command()),
                    detail: self.intent(f, target),
                    node: None,
                    found: None,
                    changes: Vec::new(),
                })
            }
        }
    }

    /// Heal what an injection applied.
    pub async fn heal(&self, f: &PlannedFault, applied: &Applied) -> Result<Healed, NemesisError> {
        if let Some(ex) = self.exec_for(f) {
            return ex.heal(self, f, applied).await;
        }
        match &f.kind {
            FaultKind::BrokerRestart { mode, .. }
            | FaultKind::BookieRestart { mode, .. }
            | FaultKind::ZookeeperRestart { mode, .. } => {
                Restart { mode: *mode }.heal(self, applied).await
            }
            FaultKind::Pause { .. } => Pause.heal(self, applied).await,
            FaultKind::PacketLoss { percent, .. } => {
                PacketLoss { percent: *percent }.heal(self, applied).await
            }
            FaultKind::TopicUnload { scope } => {
                Unload {
                    scope: scope.clone(),
                }
                .heal(self, applied)
                .await
            }
            FaultKind::ConsumerRestart { .. } => consumer::heal(self, f),
            FaultKind::ReplyLoss { reply, .. } => {
                let d = self.proxy()?.disarm(&f.name);
                Ok(Healed {
                    action: "disarmed the proxy: every reply is forwarded again".into(),
                    detail: match d {
                        Some(d) => format!(
                            "dropped {} of {} {} replies seen while armed",
                            d.dropped,
                            d.matched,
                            reply.command()
                        ),
                        None => "was not armed".into(),
                    },
                })
            }
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

impl Injector for Pause {
    fn intent(&self, f: &PlannedFault, target: &Resolved) -> String {
        let name = target
            .node
            .as_ref()
            .map(|n| n.name.clone())
            .unwrap_or_default();
        format!(
            "docker pause {name}; after {}ms: docker unpause {name}",
            f.hold().as_millis()
        )
    }

    async fn inject(
        &self,
        nem: &Nemesis,
        f: &PlannedFault,
        target: &Resolved,
    ) -> Result<Applied, NemesisError> {
        let node = target.node()?;
        let target = target.label.clone();
        let change = nem.journal(Change::Paused {
            container: node.id.clone(),
        })?;
        nem.docker()?.pause(&node).await?;
        Ok(Applied {
            target,
            action: format!("docker pause {}", node.name),
            detail: format!("frozen for {}ms", f.hold().as_millis()),
            node: Some(node),
            found: None,
            changes: vec![change],
        })
    }

    async fn heal(&self, nem: &Nemesis, a: &Applied) -> Result<Healed, NemesisError> {
        let node = a.node.as_ref().expect("pauses have a node");
        nem.docker()?.unpause(node).await?;
        for (id, _) in &a.changes {
            nem.journal_healed(*id);
        }
        Ok(Healed {
            action: format!("docker unpause {}", node.name),
            detail: String::new(),
        })
    }
}

/// The nft script that drops `percent`% of the packets leaving eth0 (as netem does on egress).
pub fn nft_loss_script(percent: u8) -> String {
    format!(
        "nft add table inet {NFT_TABLE} && \
         nft add chain inet {NFT_TABLE} out '{{ type filter hook output priority -150; policy accept; }}' && \
         nft add rule inet {NFT_TABLE} out oifname eth0 numgen random mod 100 '<' {percent} drop"
    )
}

pub fn netem_loss_script(percent: u8) -> String {
    format!("tc qdisc add dev eth0 root netem loss {percent}%")
}

/// Whether tc's failure means "this kernel has no netem" (fall back to nftables).
pub fn netem_unavailable(output: &str) -> bool {
    let o = output.to_ascii_lowercase();
    o.contains("specified qdisc kind is unknown")
        || o.contains("unknown qdisc")
        || o.contains("not supported")
        || o.contains("no such file or directory")
        || o.contains("not found")
}

impl Injector for PacketLoss {
    fn intent(&self, f: &PlannedFault, target: &Resolved) -> String {
        let name = target
            .node
            .as_ref()
            .map(|n| n.name.clone())
            .unwrap_or_default();
        format!(
            "drop {}% of the packets leaving eth0 of {name} for {}ms (tc netem, else nftables)",
            self.percent,
            f.hold().as_millis()
        )
    }

    async fn inject(
        &self,
        nem: &Nemesis,
        _f: &PlannedFault,
        target: &Resolved,
    ) -> Result<Applied, NemesisError> {
        let node = target.node()?;
        let target = target.label.clone();
        if std::env::var("PULSAR_CHAOS_FORCE_NFT").is_err() {
            let change = nem.journal(Change::Netem {
                container: node.id.clone(),
                tools_image: nem.tools_image.clone(),
            })?;
            let script = netem_loss_script(self.percent);
            let (code, out) = nem
                .docker()?
                .exec_in_netns(&node, &nem.tools_image, &script)
                .await?;
            if code == 0 {
                return Ok(Applied {
                    target,
                    action: format!("{script}  (in the network namespace of {})", node.name),
                    detail: "method: tc netem".into(),
                    node: Some(node),
                    found: None,
                    changes: vec![change],
                });
            }
            nem.journal_healed(change.0);
            if !netem_unavailable(&out) {
                return Err(NemesisError::Action {
                    action: script,
                    reason: format!("exit {code}: {}", out.trim()),
                });
            }
            tracing::info!(
                "tc netem refused ({}); falling back to nftables",
                out.trim()
            );
            return self
                .inject_nft(
                    nem,
                    node,
                    target,
                    format!("method: nftables (tc netem refused: {})", out.trim()),
                )
                .await;
        }
        self.inject_nft(
            nem,
            node,
            target,
            "method: nftables (PULSAR_CHAOS_FORCE_NFT set)".into(),
        )
        .await
    }

    async fn heal(&self, nem: &Nemesis, a: &Applied) -> Result<Healed, NemesisError> {
        let node = a.node.as_ref().expect("packet loss has a node");
        let mut actions = Vec::new();
        for (id, change) in &a.changes {
            let script = match change {
                Change::Netem { .. } => "tc qdisc del dev eth0 root".to_string(),
                Change::Nft { .. } => format!("nft delete table inet {NFT_TABLE}"),
                _ => continue,
            };
            let (code, out) = nem
                .docker()?
                .exec_in_netns(node, &nem.tools_image, &script)
                .await?;
            if code != 0 {
                return Err(NemesisError::Action {
                    action: script,
                    reason: format!("exit {code}: {}", out.trim()),
                });
            }
            nem.journal_healed(*id);
            actions.push(script);
        }
        Ok(Healed {
            action: format!(
                "{}  (in the network namespace of {})",
                actions.join("; "),
                node.name
            ),
            detail: String::new(),
        })
    }
}

impl PacketLoss {
    async fn inject_nft(
        &self,
        nem: &Nemesis,
        node: Node,
        target: String,
        detail: String,
    ) -> Result<Applied, NemesisError> {
        let change = nem.journal(Change::Nft {
            container: node.id.clone(),
            tools_image: nem.tools_image.clone(),
        })?;
        let script = nft_loss_script(self.percent);
        let (code, out) = nem
            .docker()?
            .exec_in_netns(&node, &nem.tools_image, &script)
            .await?;
        if code != 0 {
            // Remove a half-made table; the journal entry stays for `clean` if that fails too.
            let _ = nem
                .docker()?
                .exec_in_netns(
                    &node,
                    &nem.tools_image,
                    &format!("nft delete table inet {NFT_TABLE}"),
                )
                .await;
            nem.journal_healed(change.0);
            return Err(NemesisError::Action {
                action: script,
                reason: format!("exit {code}: {}", out.trim()),
            });
        }
        Ok(Applied {
            target,
            action: format!("{script}  (in the network namespace of {})", node.name),
            detail,
            node: Some(node),
            found: None,
            changes: vec![change],
        })
    }
}

impl Unload {
    fn intent_with(&self, nem: &Nemesis) -> String {
        unload_call(nem.admin.base(), &self.scope, &nem.topic)
    }
}

/// The admin API call of an unload of `scope` (`topic`: the workload's), e.g.
/// "PUT http://h:8080/admin/v2/persistent/public/default/t/unload".
pub fn unload_call(admin_base: &str, scope: &UnloadScope, topic: &str) -> String {
    match scope {
        UnloadScope::WorkloadTopic => format!(
            "PUT {admin_base}/admin/v2/{}/unload",
            crate::admin::topic_path(topic)
        ),
        UnloadScope::Topic(t) => format!(
            "PUT {admin_base}/admin/v2/{}/unload",
            crate::admin::topic_path(t)
        ),
        UnloadScope::Namespace(ns) => format!("PUT {admin_base}/admin/v2/namespaces/{ns}/unload"),
    }
}

impl Injector for Unload {
    fn intent(&self, _f: &PlannedFault, _target: &Resolved) -> String {
        "an unload through the admin API".into()
    }

    async fn inject(
        &self,
        nem: &Nemesis,
        _f: &PlannedFault,
        _target: &Resolved,
    ) -> Result<Applied, NemesisError> {
        let (action, result) = match &self.scope {
            UnloadScope::WorkloadTopic => {
                let path = crate::admin::topic_path(&nem.topic);
                (
                    format!("PUT {}/admin/v2/{path}/unload", nem.admin.base()),
                    nem.admin.unload_topic(&nem.topic).await,
                )
            }
            UnloadScope::Topic(t) => {
                let path = crate::admin::topic_path(t);
                (
                    format!("PUT {}/admin/v2/{path}/unload", nem.admin.base()),
                    nem.admin.unload_topic(t).await,
                )
            }
            UnloadScope::Namespace(ns) => (
                format!("PUT {}/admin/v2/namespaces/{ns}/unload", nem.admin.base()),
                nem.admin.unload_namespace(ns).await,
            ),
        };
        result.map_err(|e| NemesisError::Action {
            action: action.clone(),
            reason: e.to_string(),
        })?;
        Ok(Applied {
            target: "cluster (admin API)".into(),
            action,
            detail: "the topic is loaded again on its next use".into(),
            node: None,
            found: None,
            changes: Vec::new(),
        })
    }

    async fn heal(&self, _nem: &Nemesis, _a: &Applied) -> Result<Healed, NemesisError> {
        Ok(Healed {
            action: "none (an unload needs no heal)".into(),
            detail: String::new(),
        })
    }
}

/// Wait for `d`, unless it is zero.
pub async fn hold(d: Duration) {
    if !d.is_zero() {
        tokio::time::sleep(d).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_scripts() {
        assert_eq!(
            netem_loss_script(30),
            "tc qdisc add dev eth0 root netem loss 30%"
        );
        let nft = nft_loss_script(60);
        assert!(nft.contains("numgen random mod 100 '<' 60 drop"), "{nft}");
        assert!(nft.contains("oifname eth0"), "{nft}");
    }

    #[test]
    fn netem_refusals_are_recognised() {
        assert!(netem_unavailable("Error: Specified qdisc kind is unknown."));
        assert!(!netem_unavailable("RTNETLINK answers: File exists"));
    }
}
