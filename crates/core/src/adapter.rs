//! Fault adapters for clusters the harness did not start (staging clusters, Kubernetes, bare
//! hosts): the adapter file's serde types (unknown keys refused), its validation into an
//! [`Adapter`], the command templates and how they are filled in, and the check of an adapter
//! against a scenario. Pure: the root crate reads the file, discovers the nodes over the admin
//! API and runs the commands.
//!
//! An `exec` adapter gives one shell command template per fault kind and node role, e.g.
//! `broker_restart.kill: "kubectl -n pulsar delete pod {node} --grace-period=0 --force"`, each
//! inject with its heal. Placeholders are filled from the plan and the discovered target:
//! `{node}`, `{address}`, `{host}`, `{role}`, `{index}`, `{fault}`, `{run}`, `{duration_ms}`,
//! `{duration_s}`, `{percent}` (packet loss) and the adapter's own `vars`. `{{` and `}}` are
//! literal braces. A value that holds anything but letters, digits and `._:/@%+=,-` is put in
//! single quotes, so a node name can never add a shell command.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::scenario::locate::{path_to_string, Locations, Seg};
use crate::scenario::{Dur, FaultKind, RestartMode, Scenario};

/// Errors of reading or validating an adapter file; each names the file (and line and column
/// where it can).
#[derive(Debug, thiserror::Error)]
pub enum AdapterError {
    #[error("{file}: cannot read the adapter file: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}:{line}:{column}: {message}")]
    Invalid {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{file}: {message}")]
    InvalidUnlocated { file: String, message: String },
}

/// The adapter file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterFile {
    /// Only `exec` today.
    pub kind: AdapterKind,
    #[serde(default)]
    pub name: Option<String>,
    /// The Pulsar cluster's name (`/admin/v2/clusters`); needed when the admin API lists more
    /// than one.
    #[serde(default)]
    pub cluster: Option<String>,
    /// The program and arguments each command is handed to (default `[sh, -c]`).
    #[serde(default)]
    pub shell: Option<Vec<String>>,
    /// How long one command may take (default 120s).
    #[serde(default)]
    pub timeout: Option<Dur>,
    /// How long a restarted node may take to serve again (default 300s).
    #[serde(default)]
    pub ready_timeout: Option<Dur>,
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
    /// A discovered address (`host:port` or `host`) -> the node's name in the commands.
    /// Without an entry the name is the host's first DNS label (an IP stays whole).
    #[serde(default)]
    pub nodes: BTreeMap<String, String>,
    /// ZooKeeper nodes by name (the admin API does not list them).
    #[serde(default)]
    pub zookeepers: Vec<String>,
    #[serde(default)]
    pub broker_restart: Option<RestartFile>,
    #[serde(default)]
    pub bookie_restart: Option<RestartFile>,
    #[serde(default)]
    pub zookeeper_restart: Option<RestartFile>,
    #[serde(default)]
    pub pause: Option<InjectHealFile>,
    #[serde(default)]
    pub packet_loss: Option<InjectHealFile>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdapterKind {
    Exec,
}

/// A restart: `kill` (mode kill) or `stop` (mode graceful), then `start` after the hold (may
/// be left out where the platform starts the node again on its own, as a StatefulSet does),
/// then `ready` polled until it exits 0, besides the admin API's own readiness checks.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestartFile {
    #[serde(default)]
    pub kill: Option<String>,
    #[serde(default)]
    pub stop: Option<String>,
    #[serde(default)]
    pub start: Option<String>,
    #[serde(default)]
    pub ready: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InjectHealFile {
    pub inject: String,
    pub heal: String,
}

/// The role of the node a command touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeRole {
    Broker,
    Bookie,
    Zookeeper,
}

impl std::fmt::Display for NodeRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NodeRole::Broker => "broker",
            NodeRole::Bookie => "bookie",
            NodeRole::Zookeeper => "zookeeper",
        })
    }
}

/// A command template whose placeholders were checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template(String);

/// A restart's commands.
#[derive(Debug, Clone, Default)]
pub struct RestartCommands {
    pub kill: Option<Template>,
    pub stop: Option<Template>,
    pub start: Option<Template>,
    pub ready: Option<Template>,
}

#[derive(Debug, Clone)]
pub struct InjectHeal {
    pub inject: Template,
    pub heal: Template,
}

/// A validated exec adapter.
#[derive(Debug, Clone)]
pub struct Adapter {
    pub name: String,
    pub cluster: Option<String>,
    pub shell: Vec<String>,
    pub timeout: Duration,
    pub ready_timeout: Duration,
    pub vars: BTreeMap<String, String>,
    pub nodes: BTreeMap<String, String>,
    pub zookeepers: Vec<String>,
    pub restart: BTreeMap<NodeRole, RestartCommands>,
    pub pause: Option<InjectHeal>,
    pub packet_loss: Option<InjectHeal>,
}

/// What one firing will run: the inject, its heal (none for a restart the platform heals on
/// its own) and the readiness probe after it.
#[derive(Debug, Clone)]
pub struct FaultCommands<'a> {
    pub inject: &'a Template,
    pub heal: Option<&'a Template>,
    pub ready: Option<&'a Template>,
}

/// Placeholders every command may use.
const COMMON: &[&str] = &[
    "node",
    "address",
    "host",
    "role",
    "index",
    "fault",
    "run",
    "duration_ms",
    "duration_s",
];

type Invalid = (Vec<Seg>, String);

/// Parse and validate adapter text; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Adapter, AdapterError> {
    let raw: AdapterFile = serde_yaml_ng::from_str(text).map_err(|e| match e.location() {
        Some(loc) => AdapterError::Invalid {
            file: file.to_string(),
            line: loc.line(),
            column: loc.column(),
            message: crate::scenario::strip_location(&e.to_string()),
        },
        None => AdapterError::InvalidUnlocated {
            file: file.to_string(),
            message: e.to_string(),
        },
    })?;
    validate(raw, file).map_err(|(path, message)| {
        let message = format!("{}: {message}", path_to_string(&path));
        match Locations::index(text).find(&path) {
            Some((line, column)) => AdapterError::Invalid {
                file: file.to_string(),
                line,
                column,
                message,
            },
            None => AdapterError::InvalidUnlocated {
                file: file.to_string(),
                message,
            },
        }
    })
}

fn key(k: &str) -> Seg {
    Seg::Key(k.to_string())
}

fn validate(raw: AdapterFile, file: &str) -> Result<Adapter, Invalid> {
    let AdapterKind::Exec = raw.kind;
    let shell = raw
        .shell
        .clone()
        .unwrap_or_else(|| vec!["sh".into(), "-c".into()]);
    if shell.is_empty() || shell[0].trim().is_empty() {
        return Err((vec![key("shell")], "name a program, e.g. [sh, -c]".into()));
    }
    for v in raw.vars.keys() {
        if COMMON.contains(&v.as_str()) || v == "percent" || !is_ident(v) {
            return Err((
                vec![key("vars"), key(v)],
                format!("`{v}` cannot be a variable: use letters, digits and '_', and none of the names the harness fills in ({}, percent)", COMMON.join(", ")),
            ));
        }
    }
    let vars: Vec<&str> = raw.vars.keys().map(String::as_str).collect();
    let tpl = |path: &[&str], text: &str, extra: &[&str]| -> Result<Template, Invalid> {
        Template::check(text, &vars, extra).map_err(|m| (path.iter().map(|k| key(k)).collect(), m))
    };
    let mut restart = BTreeMap::new();
    for (role, field, f) in [
        (NodeRole::Broker, "broker_restart", &raw.broker_restart),
        (NodeRole::Bookie, "bookie_restart", &raw.bookie_restart),
        (
            NodeRole::Zookeeper,
            "zookeeper_restart",
            &raw.zookeeper_restart,
        ),
    ] {
        let Some(f) = f else { continue };
        let one = |name: &str, t: &Option<String>| -> Result<Option<Template>, Invalid> {
            match t {
                Some(t) if !t.trim().is_empty() => tpl(&[field, name], t, &[]).map(Some),
                _ => Ok(None),
            }
        };
        let c = RestartCommands {
            kill: one("kill", &f.kill)?,
            stop: one("stop", &f.stop)?,
            start: one("start", &f.start)?,
            ready: one("ready", &f.ready)?,
        };
        if c.kill.is_none() && c.stop.is_none() {
            return Err((
                vec![key(field)],
                "give `kill` (mode kill), `stop` (mode graceful) or both".into(),
            ));
        }
        restart.insert(role, c);
    }
    let pair = |field: &str, f: &Option<InjectHealFile>, extra: &[&str]| match f {
        None => Ok(None),
        Some(f) => Ok::<_, Invalid>(Some(InjectHeal {
            inject: tpl(&[field, "inject"], &f.inject, extra)?,
            heal: tpl(&[field, "heal"], &f.heal, extra)?,
        })),
    };
    let pause = pair("pause", &raw.pause, &[])?;
    let packet_loss = pair("packet_loss", &raw.packet_loss, &["percent"])?;
    let dur = |field: &str, d: &Option<Dur>, default: u64| {
        let d = d.as_ref().map_or(Duration::from_secs(default), |d| d.0);
        if d < Duration::from_secs(1) {
            Err((vec![key(field)], "must be at least 1s".to_string()))
        } else {
            Ok(d)
        }
    };
    Ok(Adapter {
        name: raw.name.clone().unwrap_or_else(|| {
            std::path::Path::new(file)
                .file_stem()
                .map_or("adapter".into(), |s| s.to_string_lossy().into_owned())
        }),
        cluster: raw.cluster.clone(),
        shell,
        timeout: dur("timeout", &raw.timeout, 120)?,
        ready_timeout: dur("ready_timeout", &raw.ready_timeout, 300)?,
        vars: raw.vars.clone(),
        nodes: raw.nodes.clone(),
        zookeepers: raw.zookeepers.clone(),
        restart,
        pause,
        packet_loss,
    })
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Template {
    /// Check that every placeholder is known: a common one, one of `extra`, or a variable.
    pub fn check(text: &str, vars: &[&str], extra: &[&str]) -> Result<Template, String> {
        for name in placeholders(text)? {
            if !(COMMON.contains(&name.as_str())
                || extra.contains(&name.as_str())
                || vars.contains(&name.as_str()))
            {
                let mut known: Vec<&str> = COMMON.iter().chain(extra).copied().collect();
                known.extend(vars);
                return Err(format!(
                    "unknown placeholder {{{name}}}; known here: {}",
                    known
                        .iter()
                        .map(|k| format!("{{{k}}}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        Ok(Template(text.to_string()))
    }

    pub fn text(&self) -> &str {
        &self.0
    }

    /// The command with every placeholder filled in (unsafe values single-quoted); a
    /// placeholder without a value is left as `<name>` (what `plan` prints before discovery).
    pub fn render(&self, values: &BTreeMap<String, String>) -> String {
        let mut out = String::new();
        let mut rest = self.0.as_str();
        while let Some(i) = rest.find(['{', '}']) {
            out.push_str(&rest[..i]);
            let c = rest.as_bytes()[i];
            let after = &rest[i + 1..];
            if after.as_bytes().first() == Some(&c) {
                out.push(c as char);
                rest = &after[1..];
                continue;
            }
            if c == b'}' {
                out.push('}');
                rest = after;
                continue;
            }
            let end = after
                .find('}')
                .expect("checked templates close every brace");
            let name = &after[..end];
            match values.get(name) {
                Some(v) => out.push_str(&shell_quote(v)),
                None => out.push_str(&format!("<{name}>")),
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        out
    }
}

/// The placeholder names of a template; an error for an unclosed or empty one.
fn placeholders(text: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        let c = rest.as_bytes()[i];
        let after = &rest[i + 1..];
        if after.as_bytes().first() == Some(&c) {
            rest = &after[1..];
            continue;
        }
        if c == b'}' {
            return Err("a lone `}`: write `}}` for a literal brace".into());
        }
        let end = after
            .find('}')
            .ok_or("an unclosed `{`: write `{{` for a literal brace")?;
        let name = &after[..end];
        if !is_ident(name) {
            return Err(format!(
                "`{{{name}}}` is not a placeholder: write `{{{{` for a literal brace"
            ));
        }
        if text[..text.len() - rest.len() + i].ends_with('$') {
            return Err(format!(
                "`${{{name}}}` would be expanded by the shell as a variable: write {{{name}}}"
            ));
        }
        names.push(name.to_string());
        rest = &after[end + 1..];
    }
    Ok(names)
}

/// `v` as is when it holds only characters no shell treats specially, else single-quoted.
pub fn shell_quote(v: &str) -> String {
    let plain = !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:/@%+=,-".contains(c));
    if plain {
        v.to_string()
    } else {
        format!("'{}'", v.replace('\'', r"'\''"))
    }
}

/// Whether a fault kind changes a node of the cluster (restarts, pauses, packet loss) rather
/// than asking Pulsar to do something it does in normal operation (unloads) or acting on the
/// harness's own connections (reply loss) or consumers (consumer restart).
pub fn is_destructive(kind: &FaultKind) -> bool {
    !matches!(
        kind,
        FaultKind::TopicUnload { .. }
            | FaultKind::ReplyLoss { .. }
            | FaultKind::ConsumerRestart { .. }
    )
}

impl Adapter {
    /// The commands of one fault kind on a node of `role`; an error names what the adapter
    /// lacks.
    pub fn commands(&self, kind: &FaultKind, role: NodeRole) -> Result<FaultCommands<'_>, String> {
        let restart = |mode: &RestartMode, what: &str| {
            let c = self
                .restart
                .get(&role)
                .ok_or_else(|| format!("the adapter has no `{what}` commands"))?;
            let inject = match mode {
                RestartMode::Kill => c.kill.as_ref().ok_or("`kill` (mode: kill)"),
                RestartMode::Graceful => c.stop.as_ref().ok_or("`stop` (mode: graceful)"),
            }
            .map_err(|k| format!("the adapter's `{what}` has no {k}"))?;
            Ok(FaultCommands {
                inject,
                heal: c.start.as_ref(),
                ready: c.ready.as_ref(),
            })
        };
        fn pair<'a>(p: &'a Option<InjectHeal>, what: &str) -> Result<FaultCommands<'a>, String> {
            p.as_ref()
                .map(|p| FaultCommands {
                    inject: &p.inject,
                    heal: Some(&p.heal),
                    ready: None,
                })
                .ok_or_else(|| format!("the adapter has no `{what}` commands"))
        }
        match kind {
            FaultKind::BrokerRestart { mode, .. } => restart(mode, "broker_restart"),
            FaultKind::BookieRestart { mode, .. } => restart(mode, "bookie_restart"),
            FaultKind::ZookeeperRestart { mode, .. } => restart(mode, "zookeeper_restart"),
            FaultKind::Pause { .. } => pair(&self.pause, "pause"),
            FaultKind::PacketLoss { .. } => pair(&self.packet_loss, "packet_loss"),
            FaultKind::TopicUnload { .. }
            | FaultKind::ReplyLoss { .. }
            | FaultKind::ConsumerRestart { .. } => {
                Err(format!("{} does not go through an adapter", kind.name()))
            }
        }
    }

    /// Every destructive fault of the scenario has its commands here, and a ZooKeeper target
    /// a ZooKeeper node; the first lack, naming the fault.
    pub fn check(&self, scenario: &Scenario) -> Result<(), String> {
        for f in &scenario.faults {
            if !is_destructive(&f.kind) {
                continue;
            }
            let role = match f.target {
                crate::scenario::Target::AnyBookie | crate::scenario::Target::Bookie(_) => {
                    NodeRole::Bookie
                }
                crate::scenario::Target::Zookeeper => NodeRole::Zookeeper,
                _ => NodeRole::Broker,
            };
            if role == NodeRole::Zookeeper && self.zookeepers.is_empty() {
                return Err(format!(
                    "fault `{}` targets ZooKeeper, and the adapter lists no `zookeepers`",
                    f.name
                ));
            }
            self.commands(&f.kind, role)
                .map_err(|e| format!("fault `{}` ({}): {e}", f.name, f.kind.name()))?;
        }
        Ok(())
    }

    /// The node name of a discovered address: the `nodes` entry for `host:port` or `host`,
    /// else the host's first DNS label (an IP address stays whole).
    pub fn node_name(&self, address: &str) -> String {
        if let Some(n) = self.nodes.get(address) {
            return n.clone();
        }
        let host = host_of(address);
        if let Some(n) = self.nodes.get(host) {
            return n.clone();
        }
        if host.parse::<std::net::IpAddr>().is_ok() {
            host.to_string()
        } else {
            host.split('.').next().unwrap_or(host).to_string()
        }
    }
}

/// The host of `host:port`, `scheme://host:port/...` or `host`.
pub fn host_of(address: &str) -> &str {
    let a = address.split_once("://").map_or(address, |(_, r)| r);
    let a = a.split('/').next().unwrap_or(a);
    if let Some(rest) = a.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    a.rsplit_once(':').map_or(a, |(h, _)| h)
}

#[cfg(test)]
mod tests;
