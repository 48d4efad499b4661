//! A planned fault's target resolved when it fires: the container a planned target names now
//! (a topic's or a coordinator's owner is looked up at this moment), its main process, or the
//! label of a target that is no container (the cluster, a consumer, the producer's
//! connections).

use super::{consumer, Nemesis, NemesisError, Resolved};
use crate::cluster::{Node, Role};
use crate::plan::{PlannedFault, PlannedTarget};
use crate::scenario::FaultKind;
use crate::txn::coordinator::TC_ASSIGN_TOPIC;

impl Nemesis {
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
}
