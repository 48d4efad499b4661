//! The `exec` adapter: faults on a cluster the harness did not start, as shell commands from
//! the adapter file (`kubectl`, `ssh`, `docker` on containers it did not create). Targets are
//! resolved over the admin API ([`crate::discovery`]); every command's exit status, standard
//! output and standard error go into the history; every heal command is journaled before its
//! inject runs, so `clean --adapter FILE` can heal after a crash of the harness; a restarted
//! node is waited for by condition (the admin API, and the adapter's `ready` command).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::journal::Change;
use super::{Applied, Healed, Nemesis, NemesisError, Resolved};
use crate::adapter::{is_destructive, Adapter, NodeRole, Template};
use crate::admin::Admin;
use crate::discovery::{Found, Nodes};
use crate::plan::{PlannedFault, PlannedTarget};
use crate::scenario::FaultKind;

/// An exec adapter and the nodes discovered when the run started.
#[derive(Clone)]
pub struct ExecPlatform {
    pub adapter: Arc<Adapter>,
    /// The adapter file (absolute), journaled with each change for `clean --adapter`.
    pub adapter_path: String,
    pub nodes: Nodes,
}

/// One command that ran.
#[derive(Debug, Clone)]
pub struct Ran {
    pub command: String,
    /// None: it did not finish within the adapter's timeout, or could not start.
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

impl Ran {
    pub fn ok(&self) -> bool {
        self.status == Some(0)
    }

    /// "exit 0 after 0.31s; stdout: ...; stderr: ..." (each stream cut to 400 characters).
    pub fn describe(&self) -> String {
        let cut = |s: &str| {
            let s = s.trim();
            let mut c: String = s.chars().take(400).collect();
            if c.len() < s.len() {
                c.push_str(" ...");
            }
            c
        };
        let mut d = match self.status {
            Some(code) => format!("exit {code} after {:.2}s", self.took.as_secs_f64()),
            None => format!("no exit status after {:.2}s", self.took.as_secs_f64()),
        };
        if !self.stdout.trim().is_empty() {
            d.push_str(&format!("; stdout: {}", cut(&self.stdout)));
        }
        if !self.stderr.trim().is_empty() {
            d.push_str(&format!("; stderr: {}", cut(&self.stderr)));
        }
        d
    }
}

/// Run one command through the adapter's shell, within its timeout. The command runs in a
/// process group of its own; at the timeout the whole group is killed (the shell's children
/// too: a `kubectl` or `ssh` left running could still apply the fault after its heal).
/// How many times a pause's command is run before its fault fails (see `inject`).
const PAUSE_TRIES: u32 = 3;

pub async fn run_command(shell: &[String], timeout: Duration, command: &str) -> Ran {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new(&shell[0]);
    cmd.args(&shell[1..])
        .arg(command)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let (status, stdout, stderr) = match cmd.spawn() {
        Err(e) => (
            None,
            String::new(),
            format!("cannot start {}: {e}", shell[0]),
        ),
        Ok(child) => {
            let group = child
                .id()
                .and_then(|id| rustix::process::Pid::from_raw(id as i32));
            match tokio::time::timeout(timeout, child.wait_with_output()).await {
                Ok(Ok(o)) => (
                    o.status.code(),
                    String::from_utf8_lossy(&o.stdout).into_owned(),
                    String::from_utf8_lossy(&o.stderr).into_owned(),
                ),
                Ok(Err(e)) => (None, String::new(), format!("waiting for it failed: {e}")),
                Err(_) => {
                    if let Some(g) = group {
                        let _ =
                            rustix::process::kill_process_group(g, rustix::process::Signal::KILL);
                    }
                    (
                        None,
                        String::new(),
                        format!(
                            "timed out after {}s (its process group was killed)",
                            timeout.as_secs()
                        ),
                    )
                }
            }
        }
    };
    Ran {
        command: command.to_string(),
        status,
        stdout,
        stderr,
        took: started.elapsed(),
    }
}

/// A firing's commands filled in for its node.
struct Filled {
    role: NodeRole,
    found: Found,
    inject: String,
    heal: Option<String>,
    ready: Option<String>,
}

/// The role of the node a planned target names.
pub fn role_of(target: &PlannedTarget) -> Option<NodeRole> {
    match target {
        PlannedTarget::Broker { .. }
        | PlannedTarget::OwnerOfTopic { .. }
        | PlannedTarget::CoordinatorOwner { .. } => Some(NodeRole::Broker),
        PlannedTarget::Bookie { .. } => Some(NodeRole::Bookie),
        PlannedTarget::Zookeeper => Some(NodeRole::Zookeeper),
        PlannedTarget::Cluster | PlannedTarget::Consumer { .. } => None,
    }
}

/// The values a firing's commands are filled with: the node's, the fault's, the adapter's
/// variables. `node` None leaves `{node}` and friends as `<node>` (what `plan` prints).
pub fn values(
    adapter: &Adapter,
    f: &PlannedFault,
    node: Option<&Found>,
    run_id: &str,
) -> BTreeMap<String, String> {
    let mut v = adapter.vars.clone();
    if let Some(n) = node {
        v.insert("node".into(), n.name.clone());
        v.insert("address".into(), n.address.clone());
        v.insert("host".into(), crate::adapter::host_of(&n.address).into());
        v.insert("role".into(), n.role.to_string());
        v.insert("index".into(), n.index.to_string());
    }
    v.insert("fault".into(), f.name.clone());
    v.insert("run".into(), run_id.into());
    v.insert("duration_ms".into(), f.hold().as_millis().to_string());
    // Whole seconds, rounded up (a hold of 1.5s is 2s).
    v.insert(
        "duration_s".into(),
        f.hold().as_millis().div_ceil(1000).max(1).to_string(),
    );
    if let FaultKind::PacketLoss { percent, .. } = &f.kind {
        v.insert("percent".into(), percent.to_string());
    }
    v
}

/// The commands of one firing, filled in: (inject, heal, ready).
pub fn rendered(
    adapter: &Adapter,
    f: &PlannedFault,
    role: NodeRole,
    values: &BTreeMap<String, String>,
) -> Result<(String, Option<String>, Option<String>), String> {
    let c = adapter.commands(&f.kind, role)?;
    let r = |t: &Template| t.render(values);
    Ok((r(c.inject), c.heal.map(r), c.ready.map(r)))
}

/// What a restart waits for after its heal, in words.
fn readiness_text(role: NodeRole, node: &Found, admin: &Admin, ready: Option<&str>) -> String {
    let mut conds = Vec::new();
    if role == NodeRole::Broker && node.index > 0 {
        conds.push(format!(
            "GET http://{}/admin/v2/brokers/health",
            node.address
        ));
    }
    conds.push(format!("GET {}/admin/v2/brokers/health", admin.base()));
    if let Some(r) = ready {
        conds.push(format!("`{r}` exits 0"));
    }
    conds.join(" and ")
}

impl ExecPlatform {
    /// Resolve a planned fault's target now.
    pub async fn prepare(&self, nem: &Nemesis, f: &PlannedFault) -> Result<Resolved, NemesisError> {
        let (found, why) = self
            .nodes
            .resolve(
                &nem.admin,
                &self.adapter,
                &f.target,
                &nem.topic,
                nem.partitions,
            )
            .await
            .map_err(|e| NemesisError::Target {
                target: f.target.to_string(),
                reason: e.to_string(),
            })?;
        let label = if why.is_empty() {
            found.label()
        } else {
            format!("{} ({why})", found.label())
        };
        Ok(Resolved {
            label,
            node: None,
            pid: None,
            found: Some(found),
        })
    }

    fn filled(
        &self,
        nem: &Nemesis,
        f: &PlannedFault,
        target: &Resolved,
    ) -> Result<Filled, NemesisError> {
        let found = target.found.clone().ok_or_else(|| NemesisError::Target {
            target: target.label.clone(),
            reason: "no node was resolved".into(),
        })?;
        let role = role_of(&f.target).unwrap_or(found.role);
        let v = values(&self.adapter, f, Some(&found), nem.run_id());
        let (inject, heal, ready) =
            rendered(&self.adapter, f, role, &v).map_err(|reason| NemesisError::Action {
                action: format!("{} through the exec adapter", f.kind.name()),
                reason,
            })?;
        Ok(Filled {
            role,
            found,
            inject,
            heal,
            ready,
        })
    }

    pub fn intent(&self, nem: &Nemesis, f: &PlannedFault, target: &Resolved) -> String {
        match self.filled(nem, f, target) {
            Ok(Filled {
                role,
                found,
                inject,
                heal,
                ready,
            }) => {
                let mut s = format!("{inject}; after {}ms: ", f.hold().as_millis());
                match heal {
                    Some(h) => s.push_str(&h),
                    None => s.push_str("(no heal command: the platform starts it again)"),
                }
                if matches!(
                    role,
                    NodeRole::Broker | NodeRole::Bookie | NodeRole::Zookeeper
                ) && is_restart(&f.kind)
                {
                    s.push_str(&format!(
                        "; then wait until {}",
                        readiness_text(role, &found, &nem.admin, ready.as_deref())
                    ));
                }
                s
            }
            Err(e) => format!("(cannot fill the commands: {e})"),
        }
    }

    pub async fn inject(
        &self,
        nem: &Nemesis,
        f: &PlannedFault,
        target: &Resolved,
    ) -> Result<Applied, NemesisError> {
        debug_assert!(is_destructive(&f.kind));
        let Filled {
            found,
            inject,
            heal,
            ..
        } = self.filled(nem, f, target)?;
        // A pause is tried again when its command failed: freezing a node
        // is idempotent, and an engine may refuse it for a moment (runc's "unable to freeze"
        // while the kernel's freezer does not settle, seen once on a loaded machine).
        let tries = if matches!(f.kind, FaultKind::Pause { .. }) {
            PAUSE_TRIES
        } else {
            1
        };
        let mut earlier: Vec<String> = Vec::new();
        for attempt in 1..=tries {
            let change = nem.journal(Change::Exec {
                adapter: self.adapter_path.clone(),
                node: found.name.clone(),
                heal: heal.clone().unwrap_or_default(),
                shell: self.adapter.shell.clone(),
            })?;
            let ran = run_command(&self.adapter.shell, self.adapter.timeout, &inject).await;
            if ran.ok() {
                let mut detail = ran.describe();
                if !earlier.is_empty() {
                    detail.push_str(&format!(
                        " (applied on try {attempt}; before: {})",
                        earlier.join("; ")
                    ));
                }
                return Ok(Applied {
                    target: target.label.clone(),
                    action: inject,
                    detail,
                    node: None,
                    found: Some(found),
                    changes: vec![change],
                });
            }
            // Undo whatever half of it took. The journal keeps the heal if that fails too, or
            // if the inject never finished (it may still have acted).
            let mut reason = ran.describe();
            match &heal {
                Some(h) => {
                    let undo = run_command(&self.adapter.shell, self.adapter.timeout, h).await;
                    reason.push_str(&format!("; undo `{h}`: {}", undo.describe()));
                    if undo.ok() && ran.status.is_some() {
                        nem.journal_healed(change.0);
                    }
                }
                None if ran.status.is_some() => nem.journal_healed(change.0),
                None => {}
            }
            // Tried again once the command has ended, whether or not the undo did (a pause
            // that never took leaves nothing to unpause: Docker then says "is not paused";
            // what the journal still holds is healed at the end of the run all the same).
            if attempt < tries && ran.status.is_some() {
                // The next try's journal entry holds the same heal for the same node: one is
                // enough (a `clean --adapter` would otherwise run the unpause twice, and the
                // second would fail on a container no longer paused).
                nem.journal_healed(change.0);
                earlier.push(format!("try {attempt}: {reason}"));
                tokio::time::sleep(Duration::from_secs(u64::from(attempt))).await;
                continue;
            }
            if !earlier.is_empty() {
                reason.push_str(&format!(" (try {attempt}; before: {})", earlier.join("; ")));
            }
            return Err(NemesisError::Action {
                action: inject,
                reason,
            });
        }
        unreachable!("the loop returns on its last try")
    }

    pub async fn heal(
        &self,
        nem: &Nemesis,
        f: &PlannedFault,
        a: &Applied,
    ) -> Result<Healed, NemesisError> {
        let found = a.found.clone().expect("exec faults have a node");
        let role = role_of(&f.target).unwrap_or(found.role);
        let v = values(&self.adapter, f, Some(&found), nem.run_id());
        let (_, heal, ready) =
            rendered(&self.adapter, f, role, &v).map_err(|reason| NemesisError::Action {
                action: "heal".into(),
                reason,
            })?;
        let mut detail = Vec::new();
        let action = match &heal {
            Some(h) => {
                let ran = run_command(&self.adapter.shell, self.adapter.timeout, h).await;
                if !ran.ok() {
                    return Err(NemesisError::Action {
                        action: h.clone(),
                        reason: ran.describe(),
                    });
                }
                detail.push(ran.describe());
                h.clone()
            }
            None => "none (no heal command: the platform starts the node again)".into(),
        };
        for (id, _) in &a.changes {
            nem.journal_healed(*id);
        }
        if is_restart(&f.kind) {
            let waited = self
                .wait_ready(&nem.admin, role, &found, ready.as_deref())
                .await?;
            detail.push(waited);
        }
        Ok(Healed {
            action,
            detail: detail.join("; "),
        })
    }

    /// Wait until a restarted node serves again, by condition: a broker answers its own health
    /// check, the cluster's health check passes through the admin URL, and the adapter's
    /// `ready` command exits 0 (when it has one).
    async fn wait_ready(
        &self,
        admin: &Admin,
        role: NodeRole,
        node: &Found,
        ready: Option<&str>,
    ) -> Result<String, NemesisError> {
        let started = Instant::now();
        let deadline = started + self.adapter.ready_timeout;
        let direct = (role == NodeRole::Broker && node.index > 0).then(|| {
            Admin::with_timeout(&format!("http://{}", node.address), Duration::from_secs(5))
        });
        let mut backoff =
            crate::backoff::Backoff::new(Duration::from_millis(200), Duration::from_secs(3));
        let mut last;
        loop {
            last = match &direct {
                Some(d) => d.health().await.err().map(|e| e.to_string()),
                None => None,
            };
            if last.is_none() {
                last = admin.health().await.err().map(|e| e.to_string());
            }
            if last.is_none() {
                if let Some(r) = ready {
                    let ran = run_command(&self.adapter.shell, self.adapter.timeout, r).await;
                    if !ran.ok() {
                        last = Some(format!("`{r}`: {}", ran.describe()));
                    }
                }
            }
            if last.is_none() {
                return Ok(format!(
                    "ready after {:.1}s: {}",
                    started.elapsed().as_secs_f64(),
                    readiness_text(role, node, admin, ready)
                ));
            }
            if Instant::now() >= deadline {
                return Err(NemesisError::Action {
                    action: format!("wait for {} to serve again", node.label()),
                    reason: format!(
                        "not ready after {}s: {}",
                        self.adapter.ready_timeout.as_secs(),
                        last.unwrap_or_default()
                    ),
                });
            }
            tokio::time::sleep(backoff.next_delay()).await;
        }
    }
}

fn is_restart(kind: &FaultKind) -> bool {
    matches!(
        kind,
        FaultKind::BrokerRestart { .. }
            | FaultKind::BookieRestart { .. }
            | FaultKind::ZookeeperRestart { .. }
    )
}
