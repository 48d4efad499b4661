//! The applied-fault journal: every change the nemesis makes to a container is written here
//! (and synced) before it is made, and marked healed after its heal. After a crash of the
//! harness, `pulsar-chaos clean` reads what is still applied and undoes it.

use std::io::Write;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A change that needs undoing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    /// The container was paused.
    Paused { container: String },
    /// The container was stopped or killed and must be started again.
    Stopped { container: String },
    /// A netem qdisc on eth0 of the container's network namespace.
    Netem {
        container: String,
        tools_image: String,
    },
    /// An nftables table `inet pulsar_chaos` in the container's network namespace.
    Nft {
        container: String,
        tools_image: String,
    },
    /// A command of an exec adapter ran on `node`; `heal` (filled in, run with `shell`)
    /// undoes it ("" when the platform heals it on its own). `adapter` is the adapter file's
    /// absolute path, which `clean --adapter` matches.
    Exec {
        adapter: String,
        node: String,
        heal: String,
        shell: Vec<String>,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Line {
    Applied {
        id: u64,
        #[serde(flatten)]
        change: Change,
    },
    Healed {
        id: u64,
    },
}

/// Where journals live: $PULSAR_CHAOS_STATE, else ~/.local/state/pulsar-chaos.
pub fn state_dir() -> PathBuf {
    if let Ok(d) = std::env::var("PULSAR_CHAOS_STATE") {
        return PathBuf::from(d);
    }
    let base = std::env::var("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|_| std::env::var("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|_| PathBuf::from("/var/lib"));
    base.join("pulsar-chaos")
}

pub fn journal_path(run_id: &str) -> PathBuf {
    state_dir().join("nemesis").join(format!("{run_id}.jsonl"))
}

fn append(run_id: &str, line: &Line) -> std::io::Result<()> {
    let path = journal_path(run_id);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)?;
    writeln!(
        f,
        "{}",
        serde_json::to_string(line).expect("journal lines serialize")
    )?;
    f.sync_data()
}

/// Record a change before making it.
pub fn applied(run_id: &str, id: u64, change: &Change) -> std::io::Result<()> {
    append(
        run_id,
        &Line::Applied {
            id,
            change: change.clone(),
        },
    )
}

/// Record that change `id` was undone.
pub fn healed(run_id: &str, id: u64) -> std::io::Result<()> {
    append(run_id, &Line::Healed { id })
}

/// Changes of a run that were applied and not healed, in the order they were applied.
pub fn outstanding(run_id: &str) -> Vec<(u64, Change)> {
    let Ok(text) = std::fs::read_to_string(journal_path(run_id)) else {
        return Vec::new();
    };
    let mut open: Vec<(u64, Change)> = Vec::new();
    for line in text.lines() {
        match serde_json::from_str::<Line>(line) {
            Ok(Line::Applied { id, change }) => open.push((id, change)),
            Ok(Line::Healed { id }) => open.retain(|(i, _)| *i != id),
            Err(_) => {}
        }
    }
    open
}

/// Runs that have a journal.
pub fn runs_with_journals() -> Vec<String> {
    let dir = state_dir().join("nemesis");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_suffix(".jsonl").map(|s| s.to_string())
        })
        .collect()
}

pub fn remove(run_id: &str) {
    let _ = std::fs::remove_file(journal_path(run_id));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outstanding_changes_are_those_not_healed() {
        let dir = std::env::temp_dir().join(format!("pc-journal-{}", std::process::id()));
        std::env::set_var("PULSAR_CHAOS_STATE", &dir);
        let run = "jtest";
        remove(run);
        applied(
            run,
            1,
            &Change::Paused {
                container: "a".into(),
            },
        )
        .unwrap();
        applied(
            run,
            2,
            &Change::Nft {
                container: "b".into(),
                tools_image: "img".into(),
            },
        )
        .unwrap();
        healed(run, 1).unwrap();
        assert_eq!(
            outstanding(run),
            vec![(
                2,
                Change::Nft {
                    container: "b".into(),
                    tools_image: "img".into()
                }
            )]
        );
        assert!(runs_with_journals().contains(&run.to_string()));
        remove(run);
        assert!(outstanding(run).is_empty());
        let _ = std::fs::remove_dir_all(dir);
    }
}
