//! Undoing what the nemesis journaled and did not heal: after a signal, a crash of the harness
//! (`clean`, `clean --adapter`, a resume), or before the final read. Docker changes need the
//! engine; an exec adapter's changes run their journaled heal command.

use std::time::Duration;

use super::exec;
use super::journal::{self, Change};
use super::packet_loss::NFT_TABLE;
use crate::cluster::engine::Engine;
use crate::cluster::{self, ClusterError};

/// Undo a run's journaled changes that were not healed. Returns what was done. Docker changes
/// need the engine (without one they stay journaled); exec changes run their heal command.
pub async fn heal_outstanding(engine: Option<&Engine>, run_id: &str) -> Vec<String> {
    heal_matching(engine, run_id, None).await
}

/// As [`heal_outstanding`], limited to the exec changes of one adapter file when `adapter` is
/// given (`clean --adapter`: no Docker needed).
pub async fn heal_matching(
    engine: Option<&Engine>,
    run_id: &str,
    adapter: Option<&str>,
) -> Vec<String> {
    let mut done = Vec::new();
    for (id, change) in journal::outstanding(run_id) {
        if let Change::Exec {
            adapter: a,
            node,
            heal,
            shell,
        } = &change
        {
            if adapter.is_some_and(|want| want != a) {
                continue;
            }
            if heal.is_empty() {
                let _ = journal::healed(run_id, id);
                done.push(format!("{node}: nothing to run (the platform heals it)"));
                continue;
            }
            let ran = exec::run_command(shell, Duration::from_secs(120), heal).await;
            if ran.ok() {
                let _ = journal::healed(run_id, id);
                done.push(format!("{node}: ran `{heal}` ({})", ran.describe()));
            } else {
                done.push(format!("{node}: `{heal}` failed: {}", ran.describe()));
            }
            continue;
        }
        let (Some(engine), None) = (engine, adapter) else {
            if adapter.is_none() {
                done.push(format!(
                    "could not undo {change:?}: Docker is not reachable"
                ));
            }
            continue;
        };
        let r: Result<String, ClusterError> = match &change {
            Change::Exec { .. } => continue,
            Change::Paused { container } => engine
                .unpause(container)
                .await
                .map(|_| format!("unpaused {container}")),
            Change::Stopped { container } => engine
                .start(container)
                .await
                .map(|_| format!("started {container}")),
            Change::Netem {
                container,
                tools_image,
            } => cluster::exec_in_netns(
                engine,
                run_id,
                container,
                "heal",
                tools_image,
                "tc qdisc del dev eth0 root || true",
            )
            .await
            .map(|_| format!("removed the netem qdisc of {container}")),
            Change::Nft {
                container,
                tools_image,
            } => cluster::exec_in_netns(
                engine,
                run_id,
                container,
                "heal",
                tools_image,
                &format!("nft delete table inet {NFT_TABLE} || true"),
            )
            .await
            .map(|_| format!("removed the nft table of {container}")),
        };
        match r {
            Ok(what) => {
                let _ = journal::healed(run_id, id);
                done.push(what);
            }
            Err(e) => {
                // A container that is gone took its changes with it.
                let gone = matches!(engine.state(change_container(&change)).await, Ok(None));
                if gone {
                    let _ = journal::healed(run_id, id);
                    done.push(format!(
                        "{} is gone (nothing to undo)",
                        change_container(&change)
                    ));
                } else {
                    done.push(format!("could not undo {change:?}: {e}"));
                }
            }
        }
    }
    if journal::outstanding(run_id).is_empty() {
        journal::remove(run_id);
    }
    done
}

fn change_container(c: &Change) -> &str {
    match c {
        Change::Paused { container }
        | Change::Stopped { container }
        | Change::Netem { container, .. }
        | Change::Nft { container, .. } => container,
        Change::Exec { node, .. } => node,
    }
}

/// Heal a run's leftovers after a signal or a crash (every journaled change the engine, when
/// there is one, or the exec adapter's commands can undo).
pub async fn heal_run(engine: Option<&Engine>, run_id: &str) {
    for line in heal_outstanding(engine, run_id).await {
        crate::term::say(&format!("heal: {line}"));
    }
}
