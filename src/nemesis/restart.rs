//! broker_restart, bookie_restart, zookeeper_restart on a container of the harness's cluster:
//! stop (graceful) or kill (kill(2) on its main process, else `docker kill`), held down for
//! `down_for`, started again. The node is marked in the run's `Holds` from before the stop to
//! after the start, so the supervisor does not take the fault's stop for Pulsar's own exit.

use std::time::Duration;

use super::journal::Change;
use super::{Applied, Healed, Injector, Nemesis, NemesisError, Resolved};
use crate::cluster::STOP_TIMEOUT;
use crate::plan::PlannedFault;
use crate::scenario::RestartMode;

/// broker_restart, bookie_restart, zookeeper_restart.
pub struct Restart {
    pub mode: RestartMode,
}

impl Injector for Restart {
    fn intent(&self, f: &PlannedFault, target: &Resolved) -> String {
        let name = target
            .node
            .as_ref()
            .map(|n| n.name.clone())
            .unwrap_or_default();
        let stop = match self.mode {
            RestartMode::Kill => match target.pid {
                Some(pid) => format!("kill -KILL {pid} (the main process of {name})"),
                None => format!("docker kill --signal SIGKILL {name}"),
            },
            RestartMode::Graceful => {
                format!("docker stop --time {} {name}", STOP_TIMEOUT.as_secs())
            }
        };
        format!(
            "{stop}; after {}ms: docker start {name}",
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
        let target_pid = target.pid;
        let target = target.label.clone();
        let change = nem.journal(Change::Stopped {
            container: node.id.clone(),
        })?;
        let docker = nem.docker()?;
        // Held down until the heal has started it again: the supervisor leaves it alone.
        nem.holds.hold(&node).await;
        let stopped = match self.mode {
            RestartMode::Kill => docker
                .kill_now(&node, target_pid)
                .await
                .map(|how| match how {
                    "kill(2)" => format!(
                        "kill -KILL {} (the main process of {})",
                        target_pid.unwrap_or(0),
                        node.name
                    ),
                    _ => format!("docker kill --signal SIGKILL {}", node.name),
                }),
            RestartMode::Graceful => docker.stop(&node, STOP_TIMEOUT).await.map(|()| {
                format!(
                    "docker stop --time {} {}",
                    STOP_TIMEOUT.as_secs(),
                    node.name
                )
            }),
        };
        if stopped.is_err() {
            nem.holds.release(&node).await;
        }
        let action = stopped?;
        Ok(Applied {
            target,
            action,
            detail: format!("down for {}ms", f.hold().as_millis()),
            node: Some(node),
            found: None,
            changes: vec![change],
        })
    }

    async fn heal(&self, nem: &Nemesis, a: &Applied) -> Result<Healed, NemesisError> {
        let node = a.node.as_ref().expect("restarts have a node");
        // A kill by kill(2) is seen by Docker a moment later; starting before that is lost.
        nem.docker()?
            .wait_not_running(node, STOP_TIMEOUT + Duration::from_secs(15))
            .await?;
        nem.docker()?.start(node).await?;
        nem.holds.release(node).await;
        for (id, _) in &a.changes {
            nem.journal_healed(*id);
        }
        Ok(Healed {
            action: format!("docker start {}", node.name),
            detail: String::new(),
        })
    }
}
