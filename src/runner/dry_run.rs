//! What a run's faults will do, without doing it: `plan --commands` (offline: nodes found only
//! at run time print as `<node>`) and `run --dry-run` (targets resolved on the cluster now;
//! nothing is created, sent or run: no topic, no producer, no command, no journal).

use std::path::Path;

use crate::adapter::{is_destructive, Adapter};
use crate::admin::Admin;
use crate::discovery::{Found, Nodes};
use crate::error::{Error, Result};
use crate::nemesis::exec::{rendered, role_of, values};
use crate::plan::{self, PlannedFault, Trigger};
use crate::scenario::{ClusterSpec, FaultKind, Scenario};

/// When a firing fires, in words.
fn when(f: &PlannedFault) -> String {
    match f.trigger {
        Trigger::AtMs(t) => format!("at {:.1}s", t as f64 / 1000.0),
        Trigger::AfterCommits(n) => format!("after {n} commits"),
    }
}

/// The lines of one firing: when, the node, the commands or the API call.
pub fn firing_lines(
    f: &PlannedFault,
    adapter: Option<&Adapter>,
    node: Option<(&Found, &str)>,
    admin_base: &str,
    topic: &str,
) -> Vec<String> {
    let mut out = vec![format!(
        "firing {} `{}` ({}) {}, held {}ms",
        f.id,
        f.name,
        f.kind.name(),
        when(f),
        f.hold().as_millis()
    )];
    match (&f.kind, adapter) {
        (FaultKind::TopicUnload { scope }, _) => out.push(format!(
            "  admin API: {}",
            crate::nemesis::unload_call(admin_base, scope, topic)
        )),
        (FaultKind::ConsumerRestart { .. }, _) => out.push(format!(
            "  the harness closes {}'s consumers while it holds inputs in an open transaction; subscribes them again at the heal",
            f.target
        )),
        (FaultKind::ReplyLoss { reply, .. }, _) => out.push(format!(
            "  the harness's proxy drops {} replies on the producer's connections",
            reply.command()
        )),
        (k, Some(a)) if is_destructive(k) => {
            let target = match node {
                Some((n, "")) => n.label(),
                Some((n, why)) => format!("{} ({why})", n.label()),
                None => format!("{} (resolved on the cluster when it fires)", f.target),
            };
            out.push(format!("  node: {target}"));
            let role = role_of(&f.target).unwrap_or(crate::adapter::NodeRole::Broker);
            let v = values(a, f, node.map(|(n, _)| n), "<run>");
            match rendered(a, f, role, &v) {
                Ok((inject, heal, ready)) => {
                    out.push(format!("  inject: {inject}"));
                    out.push(format!(
                        "  heal:   {}",
                        heal.unwrap_or_else(|| "(none: the platform starts it again)".into())
                    ));
                    if let Some(r) = ready {
                        out.push(format!("  ready:  {r}"));
                    }
                }
                Err(e) => out.push(format!("  cannot fill the commands: {e}")),
            }
        }
        (_, None) if admin_base != "<admin URL>" => out.push(format!(
            "  needs an exec adapter: {} on {} cannot reach a node of this cluster",
            f.kind.name(),
            f.target
        )),
        (_, _) => out.push(format!(
            "  Docker, on the harness's own cluster: {} on {}",
            f.kind.name(),
            f.target
        )),
    }
    out
}

/// `plan --commands`: every firing with the command or API call it will make.
pub fn plan_commands(s: &Scenario, seed: u64, adapter: Option<&Path>) -> Result<String> {
    let adapter = match adapter
        .map(|p| p.to_path_buf())
        .or(s.adapter.clone().map(Into::into))
    {
        Some(p) => Some(crate::adapter::load(&p)?),
        None => None,
    };
    let admin_base = match &s.cluster {
        ClusterSpec::External { admin_url, .. } => admin_url.clone(),
        ClusterSpec::Docker(_) => "<admin URL>".into(),
    };
    let topic = s.workload.topic_for_run("<run>");
    let plan = plan::make(s, seed);
    let mut out = format!(
        "scenario {}, seed {seed}: {} firing(s)\n",
        s.name,
        plan.faults.len()
    );
    for f in &plan.faults {
        for l in firing_lines(f, adapter.as_ref(), None, &admin_base, &topic) {
            out.push_str(&l);
            out.push('\n');
        }
    }
    Ok(out)
}

/// What `run --dry-run` prints, and the exit code the run itself would have ended with before
/// it started anything: a refusal is bad input, an admin API that does not answer an
/// infrastructure failure (issue 33: both used to exit 0).
#[derive(Debug)]
pub struct DryRun {
    pub text: String,
    pub exit: i32,
}

/// `run --dry-run`: discover the cluster, resolve every firing's target now and print its
/// commands. Needs a cluster the harness did not start; reads the admin API only.
pub async fn dry_run(s: &Scenario, seed: u64) -> Result<DryRun> {
    let ClusterSpec::External { admin_url, .. } = &s.cluster else {
        return Err(Error::Usage(
            "--dry-run resolves targets on a running cluster: give --service-url and --admin-url"
                .into(),
        ));
    };
    let refusal = super::env::check_external(s).err();
    let adapter = match &s.adapter {
        Some(p) => Some(crate::adapter::load(Path::new(p))?),
        None => None,
    };
    let admin = Admin::new(admin_url);
    let topic = s.workload.topic_for_run("<run>");
    let plan = plan::make(s, seed);
    let mut out = format!(
        "dry run of scenario {}, seed {seed}: nothing is created, produced or run. Owners are looked up now on the scenario's topic name (the run's own topic may sit in another bundle) and again when each fault fires\n",
        s.name
    );
    // One read of the admin API: a run would stop here if it does not answer.
    let unreachable = admin.clusters().await.err();
    if let Some(e) = &unreachable {
        out.push_str(&format!(
            "the admin API at {admin_url} does not answer ({e}): a run would stop here; the firings below are not resolved\n"
        ));
    }
    let nodes: Option<Nodes> = match &adapter {
        Some(a) if unreachable.is_none() => {
            let n = crate::discovery::discover(&admin, a).await?;
            out.push_str(&super::env::describe_nodes(&n));
            out.push('\n');
            Some(n)
        }
        _ => None,
    };
    let exit = match (&refusal, &unreachable) {
        (Some(e), _) => {
            out.push_str(&format!("a run would refuse: {e}\n"));
            e.exit_code()
        }
        (None, Some(_)) => crate::exit::INFRASTRUCTURE,
        (None, None) => crate::exit::PASS,
    };
    for f in &plan.faults {
        let resolved = match (&nodes, &adapter) {
            (Some(n), Some(a)) if is_destructive(&f.kind) => {
                match n
                    .resolve(
                        &admin,
                        a,
                        &f.target,
                        &s.workload.topic,
                        s.workload.partitions,
                    )
                    .await
                {
                    Ok(r) => Some(r),
                    Err(e) => {
                        out.push_str(&format!("firing {} `{}`: {e}\n", f.id, f.name));
                        continue;
                    }
                }
            }
            _ => None,
        };
        let node = resolved.as_ref().map(|(n, why)| (n, why.as_str()));
        for l in firing_lines(f, adapter.as_ref(), node, admin.base(), &topic) {
            out.push_str(&l);
            out.push('\n');
        }
    }
    if exit != crate::exit::PASS {
        out.push_str(&format!(
            "the dry run exits {exit}, as the run would have before starting anything\n"
        ));
    }
    Ok(DryRun { text: out, exit })
}
