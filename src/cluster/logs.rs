//! What the containers print and use: the last lines of every container's log (for error
//! messages), each Pulsar container's log since a time (for the run directory), and each
//! container's memory use (for reports).

use super::{Cluster, Role};

impl Cluster {
    /// The last `lines` lines of every container, for error messages.
    pub async fn logs_of_all(&self, lines: usize) -> String {
        let mut out = String::new();
        for n in &self.nodes {
            if n.role == Role::Init || n.role == Role::Sidecar {
                continue;
            }
            let logs = self.engine.logs_tail(&n.id, lines).await;
            out.push_str(&format!(
                "--- last {lines} lines of {} ---\n{logs}\n",
                n.name
            ));
        }
        out
    }

    /// The log of every Pulsar container (not the init or sidecar ones) from `since_unix_s`
    /// on: (role, name, log).
    pub async fn logs_since(&self, since_unix_s: i32) -> Vec<(Role, String, String)> {
        let mut out = Vec::new();
        for n in &self.nodes {
            if n.role == Role::Init || n.role == Role::Sidecar {
                continue;
            }
            let log = self.engine.logs_since(&n.id, since_unix_s).await;
            out.push((n.role, n.label(), log));
        }
        out
    }

    /// Memory used by each container now (bytes), for reports.
    pub async fn memory_usage(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for n in &self.nodes {
            if let Ok(Some(b)) = self.engine.memory_usage(&n.id).await {
                out.push((n.label(), b));
            }
        }
        out
    }
}
