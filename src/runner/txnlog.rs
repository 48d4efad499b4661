//! The coordinators' transaction logs, watched while a run's faults hit a coordinator (a fault
//! on its owner, an unload of the topic that assigns it): the cursor of `__transaction_log_N`
//! before and after each kill, entry by entry (the coordinator-kill finding,
//! docs/findings/committed-then-aborted-after-coordinator-kills.md).
//!
//! Every distinct answer of the admin API's `coordinatorInternalStats` (or its refusal) goes
//! to the run directory's `txnlog.jsonl` with the history's time; the history notes the last
//! view before a coordinator's log became unreadable and the first after, and names a
//! mark-delete position that went back across the gap. [`Watch`] decides that and is pure.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;

use crate::admin::{txn_log_path, Admin, TxnLogView};
use crate::history::{EventBody, History};
use crate::plan::{Plan, PlannedTarget};
use crate::scenario::{FaultKind, UnloadScope};
use crate::txnlog::CursorStepBack;

/// The run directory's file.
pub const FILE: &str = "txnlog.jsonl";

/// `PULSAR_CHAOS_TXNLOG=off` turns the watch off: its requests (4 a second per coordinator)
/// are load on the brokers, and whether they change what a run finds is measured by runs with
/// and without them.
pub const OFF: &str = "PULSAR_CHAOS_TXNLOG";

/// How often each coordinator's log is asked for.
pub const EVERY: Duration = Duration::from_millis(250);

/// Whether the plan's faults hit a coordinator: a fault aimed at a coordinator's owner, or an
/// unload of the topic that assigns the coordinators.
pub fn wanted(plan: &Plan) -> bool {
    plan.faults.iter().any(|f| {
        matches!(f.target, PlannedTarget::CoordinatorOwner { .. })
            || matches!(&f.kind, FaultKind::TopicUnload { scope: UnloadScope::Topic(t) }
                if t.contains(crate::txn::coordinator::TC_ASSIGN_TOPIC))
    })
}

/// One line of `txnlog.jsonl`: what the admin API answered for one coordinator at `t_ms`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Line {
    pub t_ms: u64,
    pub coordinator: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<TxnLogView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What one answer adds: a line for the file when it differs from the last, and a history
/// note at a gap's start or end.
#[derive(Debug, Default, PartialEq)]
pub struct Step {
    pub line: Option<Line>,
    pub note: Option<String>,
}

#[derive(Debug)]
enum Seen {
    /// The last view, and when it was answered.
    View(u64, TxnLogView),
    Failed {
        since_ms: u64,
        error: String,
        /// The last view before the gap, and when it was answered.
        before: Option<(u64, TxnLogView)>,
    },
}

/// The last answer per coordinator, and every cursor seen going back across a gap.
#[derive(Debug, Default)]
pub struct Watch {
    last: BTreeMap<u32, Seen>,
    steps_back: Vec<CursorStepBack>,
}

impl Watch {
    pub fn observe(&mut self, t_ms: u64, id: u32, answer: Result<TxnLogView, String>) -> Step {
        let line = |log: Option<TxnLogView>, error: Option<String>| {
            Some(Line {
                t_ms,
                coordinator: id,
                log,
                error,
            })
        };
        match (self.last.remove(&id), answer) {
            (Some(Seen::View(_, a)), Ok(v)) if a == v => {
                self.last.insert(id, Seen::View(t_ms, a));
                Step::default()
            }
            (None | Some(Seen::View(..)), Ok(v)) => {
                self.last.insert(id, Seen::View(t_ms, v.clone()));
                Step {
                    line: line(Some(v), None),
                    note: None,
                }
            }
            (Some(Seen::View(at, a)), Err(e)) => {
                // A request to a broker that was just killed can take its whole timeout: the
                // last view is dated by its own answer, not by this failure.
                let note = format!(
                    "coordinator {id}'s transaction log became unreadable (GET {}: {e}); its last view, answered at t={at} ms: {}",
                    txn_log_path(id),
                    describe(&a)
                );
                self.last.insert(
                    id,
                    Seen::Failed {
                        since_ms: t_ms,
                        error: e.clone(),
                        before: Some((at, a)),
                    },
                );
                Step {
                    line: line(None, Some(e)),
                    note: Some(note),
                }
            }
            (None, Err(e)) => {
                self.last.insert(
                    id,
                    Seen::Failed {
                        since_ms: t_ms,
                        error: e.clone(),
                        before: None,
                    },
                );
                Step {
                    line: line(None, Some(e)),
                    note: None,
                }
            }
            (
                Some(Seen::Failed {
                    since_ms,
                    error,
                    before,
                }),
                Err(e),
            ) => {
                let changed = e != error;
                self.last.insert(
                    id,
                    Seen::Failed {
                        since_ms,
                        error: e.clone(),
                        before,
                    },
                );
                Step {
                    line: if changed { line(None, Some(e)) } else { None },
                    note: None,
                }
            }
            (
                Some(Seen::Failed {
                    since_ms, before, ..
                }),
                Ok(v),
            ) => {
                let mut note = format!(
                    "coordinator {id}'s transaction log readable again after {} ms: {}",
                    t_ms.saturating_sub(since_ms),
                    describe(&v)
                );
                if let Some((at, b)) = &before {
                    for step in steps_back(id, *at, b, t_ms, &v) {
                        note.push_str(&format!(
                            "; cursor {}'s markDeletePosition went back from {} to {} across the gap",
                            step.cursor, step.before, step.after
                        ));
                        if !step.reopened.is_empty() {
                            note.push_str(&format!(
                                " ({} acknowledged before the gap are not after it: {})",
                                step.reopened_count(),
                                step.reopened.join(", ")
                            ));
                        }
                        self.steps_back.push(step);
                    }
                }
                self.last.insert(id, Seen::View(t_ms, v.clone()));
                Step {
                    line: line(Some(v), None),
                    note: Some(note),
                }
            }
        }
    }
}

/// A view in one line: the last entry and each cursor's positions, in Pulsar's words.
pub fn describe(v: &TxnLogView) -> String {
    let mut s = format!(
        "lastConfirmedEntry {}",
        v.last_confirmed.as_deref().unwrap_or("(absent)")
    );
    for (name, c) in &v.cursors {
        s.push_str(&format!(
            "; cursor {name}: markDeletePosition {}, readPosition {}, individuallyDeletedMessages {}, cursorLedger {}:{}",
            c.mark_delete_position.as_deref().unwrap_or("(absent)"),
            c.read_position.as_deref().unwrap_or("(absent)"),
            c.individually_deleted_messages.as_deref().unwrap_or("(absent)"),
            c.cursor_ledger.map_or("(absent)".into(), |l| l.to_string()),
            c.cursor_ledger_last_entry.map_or("(absent)".into(), |e| e.to_string()),
        ));
    }
    s
}

/// The cursors whose mark-delete position is lower in `now` than in `before`, with the entries
/// acknowledged in `before` and not in `now`.
pub fn steps_back(
    id: u32,
    before_ms: u64,
    before: &TxnLogView,
    now_ms: u64,
    now: &TxnLogView,
) -> Vec<CursorStepBack> {
    fn ranges(c: &crate::admin::LogCursor) -> &str {
        c.individually_deleted_messages.as_deref().unwrap_or("[]")
    }
    let log = now
        .ledger
        .clone()
        .unwrap_or_else(|| format!("__transaction_log_{id}"));
    now.cursors
        .iter()
        .filter_map(|(name, c)| {
            let b = before.cursors.get(name)?;
            CursorStepBack::between(
                id,
                &log,
                name,
                (before_ms, b.mark_delete_position.as_deref()?, ranges(b)),
                (now_ms, c.mark_delete_position.as_deref()?, ranges(c)),
            )
        })
        .collect()
}

/// Coordinator `id`'s log from the first admin API that answers; else every refusal, in order.
async fn ask(admins: &[Admin], id: u32) -> Result<TxnLogView, String> {
    let mut errors = Vec::new();
    for a in admins {
        match a.txn_log(id).await {
            Ok(v) => return Ok(v),
            Err(e) => errors.push(e.to_string()),
        }
    }
    Err(errors.join("; "))
}

/// The watch of a run: its task, and how to end it.
pub(super) struct Watcher {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<Vec<CursorStepBack>>,
}

impl Watcher {
    /// The watch of a run whose plan hits a coordinator ([`wanted`]), else None. It asks
    /// `admin`, then every other broker of the harness's cluster.
    pub(super) fn start(
        plan: &Plan,
        admin: &Admin,
        cluster: Option<&crate::cluster::Cluster>,
        history: &History,
        path: PathBuf,
    ) -> Option<Watcher> {
        if !wanted(plan) {
            return None;
        }
        if std::env::var(OFF).as_deref() == Ok("off") {
            history.record(EventBody::Note {
                message: format!("the coordinators' transaction logs are not watched ({OFF}=off)"),
            });
            return None;
        }
        let mut admins = vec![admin.clone()];
        if let Some(c) = cluster {
            admins.extend(
                c.brokers()
                    .iter()
                    .filter(|b| b.admin_url != admin.base())
                    .map(|b| Admin::new(&b.admin_url)),
            );
        }
        Some(Watcher::spawn(admins, history.clone(), path))
    }

    /// Start watching every loaded coordinator's log (coordinator 0 when the admin API cannot
    /// list them), writing to `path`. `admins`: the run's admin API first, then every other
    /// broker's: a request the first cannot answer (its broker was just killed) is asked of the
    /// next, which redirects to the coordinator's new owner.
    pub(super) fn spawn(admins: Vec<Admin>, history: History, path: PathBuf) -> Watcher {
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut file = match std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
            {
                Ok(f) => f,
                Err(e) => {
                    history.record(EventBody::Note {
                        message: format!(
                            "the coordinators' transaction logs are not watched: {}: {e}",
                            path.display()
                        ),
                    });
                    return Vec::new();
                }
            };
            let ids: Vec<u32> = match admins[0].coordinator_stats().await {
                Ok(m) if !m.is_empty() => m.into_keys().collect(),
                _ => vec![0],
            };
            history.record(EventBody::Note {
                message: format!(
                    "watching the transaction log of coordinator(s) {ids:?} every {} ms (GET {}, {} in the run directory)",
                    EVERY.as_millis(),
                    txn_log_path(ids[0]),
                    FILE
                ),
            });
            let mut w = Watch::default();
            let mut tick = tokio::time::interval(EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let last = tokio::select! {
                    _ = tick.tick() => false,
                    _ = stopped.changed() => true,
                };
                for &id in &ids {
                    let answer = ask(&admins, id).await;
                    let step = w.observe(history.now_ms(), id, answer);
                    if let Some(l) = step.line {
                        let mut text = serde_json::to_string(&l).expect("lines serialize");
                        text.push('\n');
                        if let Err(e) = file.write_all(text.as_bytes()) {
                            tracing::warn!("{}: {e}", path.display());
                        }
                    }
                    if let Some(message) = step.note {
                        history.record(EventBody::Note { message });
                    }
                }
                if last {
                    return w.steps_back;
                }
            }
        });
        Watcher { stop, task }
    }

    /// One last look at every log, then stop: the cursors seen going back across a gap.
    pub(super) async fn finish(self) -> Vec<CursorStepBack> {
        let _ = self.stop.send(true);
        self.task.await.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
