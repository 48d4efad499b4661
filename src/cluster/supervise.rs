//! What a supervisor (Kubernetes, systemd) does for a cluster in production, on the containers
//! the harness started: a node that exited on its own is started again. A node a fault of the
//! harness holds down (stopped or killed for its `down_for`) is left alone: the nemesis marks it
//! in [`Holds`] before it stops the node and clears the mark after it started it again, and the
//! supervisor reads a node's state and starts it under the same lock, so the two never cross.

use std::collections::BTreeSet;

use super::{Cluster, Node, Role};

/// The containers a fault of the harness holds down now (by container id).
#[derive(Debug, Default)]
pub struct Holds {
    held: tokio::sync::Mutex<BTreeSet<String>>,
}

impl Holds {
    /// Mark `node` held down, before a fault stops it.
    pub async fn hold(&self, node: &Node) {
        self.held.lock().await.insert(node.id.clone());
    }

    /// Clear the mark, after the fault's heal started it again.
    pub async fn release(&self, node: &Node) {
        self.held.lock().await.remove(&node.id);
    }

    /// Clear every mark (the final heal started every node a fault left down).
    pub async fn clear(&self) {
        self.held.lock().await.clear();
    }

    /// Whether a fault holds `node` down now.
    pub async fn is_held(&self, node: &Node) -> bool {
        self.held.lock().await.contains(&node.id)
    }
}

/// A node found exited with no fault holding it, as Docker reports it.
#[derive(Debug, Clone)]
pub struct Exited {
    pub node: Node,
    pub exit_code: Option<i64>,
    pub oom_killed: bool,
    /// Docker's status ("exited", "dead").
    pub status: String,
    /// The last lines of its log, oldest first.
    pub log: Vec<String>,
    /// The start the supervisor asked: Ok, or Docker's error. None when it was not asked
    /// (the node is given up).
    pub started: Option<Result<(), String>>,
}

/// Whether a container in this state exited (as opposed to running, paused, being created
/// or restarted by Docker itself). Pure.
pub fn has_exited(running: bool, status: &str) -> bool {
    !running && matches!(status, "exited" | "dead")
}

/// The last `n` non-empty lines of a log, oldest first. Pure.
pub fn last_lines(log: &str, n: usize) -> Vec<String> {
    let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| l.to_string())
        .collect()
}

impl Cluster {
    /// The Pulsar nodes (not the one-shot init, not sidecars).
    fn supervised(&self) -> impl Iterator<Item = &Node> {
        self.nodes
            .iter()
            .filter(|n| !matches!(n.role, Role::Init | Role::Sidecar))
    }

    /// One pass of the supervisor: every node that exited while no fault holds it, with its
    /// exit and last `lines` log lines; each is started again at once (under the holds' lock),
    /// except those in `no_start` (container ids), which are only reported. Nodes in `skip` are
    /// not looked at.
    pub async fn restart_exited(
        &self,
        holds: &Holds,
        skip: &BTreeSet<String>,
        no_start: &BTreeSet<String>,
        lines: usize,
    ) -> Vec<Exited> {
        let held = holds.held.lock().await;
        let mut out = Vec::new();
        for n in self.supervised() {
            if held.contains(&n.id) || skip.contains(&n.id) {
                continue;
            }
            let Ok(Some(st)) = self.engine.state(&n.id).await else {
                continue;
            };
            if !has_exited(st.running, &st.status) {
                continue;
            }
            let log = last_lines(&self.engine.logs_tail(&n.id, lines + 5).await, lines);
            let started = if no_start.contains(&n.id) {
                None
            } else {
                Some(self.engine.start(&n.id).await.map_err(|e| e.to_string()))
            };
            out.push(Exited {
                node: n.clone(),
                exit_code: st.exit_code,
                oom_killed: st.oom_killed,
                status: st.status,
                log,
                started,
            });
        }
        out
    }

    /// Every Pulsar node that is not running now: its label, Docker's status and exit code,
    /// and its last `lines` log lines (for a run that could not go on).
    pub async fn nodes_down(&self, lines: usize) -> Vec<NodeDown> {
        let mut out = Vec::new();
        for n in self.supervised() {
            let state = self.engine.state(&n.id).await;
            let (status, exit_code) = match &state {
                Ok(Some(s)) if s.running && !s.paused => continue,
                Ok(Some(s)) if s.paused => ("paused".to_string(), None),
                Ok(Some(s)) => (s.status.clone(), s.exit_code),
                Ok(None) => ("removed".to_string(), None),
                Err(e) => (format!("unknown ({e})"), None),
            };
            let log = match state {
                Ok(Some(_)) => last_lines(&self.engine.logs_tail(&n.id, lines + 5).await, lines),
                _ => Vec::new(),
            };
            out.push(NodeDown {
                node: n.label(),
                container: n.name.clone(),
                status,
                exit_code,
                log,
            });
        }
        out
    }
}

/// A node that is not running, as `nodes_down` reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeDown {
    pub node: String,
    pub container: String,
    /// Docker's status: exited, dead, paused, created, removed, ...
    pub status: String,
    pub exit_code: Option<i64>,
    pub log: Vec<String>,
}

impl std::fmt::Display for NodeDown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}) is {}", self.node, self.container, self.status)?;
        if let Some(c) = self.exit_code {
            write!(f, " with exit code {c}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_exited_or_dead_container_counts_as_exited() {
        assert!(has_exited(false, "exited"));
        assert!(has_exited(false, "dead"));
        // Never started, being restarted by Docker, paused or running: not the supervisor's.
        assert!(!has_exited(false, "created"));
        assert!(!has_exited(false, "restarting"));
        assert!(!has_exited(true, "running"));
        assert!(!has_exited(true, "paused"));
    }

    #[test]
    fn the_last_lines_skip_blank_ones_and_keep_their_order() {
        let log = "a\n\nb\nc\n  \nd\n";
        assert_eq!(last_lines(log, 2), vec!["c", "d"]);
        assert_eq!(last_lines(log, 10), vec!["a", "b", "c", "d"]);
        assert!(last_lines("", 3).is_empty());
    }

    #[test]
    fn a_node_down_says_what_docker_says() {
        let d = NodeDown {
            node: "broker-2".into(),
            container: "pc-r-broker-2".into(),
            status: "exited".into(),
            exit_code: Some(1),
            log: vec![],
        };
        assert_eq!(
            d.to_string(),
            "broker-2 (pc-r-broker-2) is exited with exit code 1"
        );
    }
}
