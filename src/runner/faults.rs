//! The planned faults of a run: the nemesis for a cluster of the harness, and one task per
//! fault that waits for its trigger (and guard), injects, holds and heals, recording each step
//! in the history. On a cluster the harness did not start, faults on nodes go through the exec
//! adapter (`nemesis::exec`) and unloads through the admin API; without an adapter only
//! unloads run.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Mutex};

use crate::admin::Admin;
use crate::cluster::image;
use crate::error::Result;
use crate::history::{EventBody, History};
use crate::nemesis::reply_loss::ReplyLossProxy;
use crate::nemesis::{Applied, Nemesis};
use crate::plan::{Plan, PlannedFault, Trigger};
use crate::rundir::RunInfo;
use crate::scenario::{ClusterSpec, Guard, GUARD_WAIT, NEXT_COMMIT_WAIT};
use crate::workload::Stats;

use super::driver::Driver;
use super::env::Env;
use super::Request;

/// The nemesis of a cluster of the harness (with the reply-loss proxy when a fault drops
/// replies), or of an external cluster with an exec adapter; none for an external cluster
/// without one (unloads only).
pub(super) async fn nemesis(
    req: &Request,
    env: &Env,
    admin: &Admin,
    info: &RunInfo,
    proxy: &Option<Arc<ReplyLossProxy>>,
    driver: &Driver,
    holds: &Arc<crate::cluster::Holds>,
) -> Result<Option<Arc<Nemesis>>> {
    let w = &req.scenario.workload;
    let restarts = match driver {
        Driver::Transform(t) => Some(t.restarts()),
        Driver::Produce(_) => None,
    };
    let with_restarts = |n: Nemesis| match &restarts {
        Some(r) => n.with_consumer_restarts(r.clone()),
        None => n,
    };
    let nemesis = match (&env.cluster, &env.exec) {
        (None, Some(x)) => Some(Arc::new(with_restarts(Nemesis::external(
            x.clone(),
            admin.clone(),
            &info.run_id,
            info.topic.clone(),
            w.partitions,
        )))),
        (Some(c), _) => {
            let version = match &req.scenario.cluster {
                ClusterSpec::Docker(d) => d.pulsar_version.clone(),
                ClusterSpec::External { .. } => crate::versions::DEFAULT.to_string(),
            };
            let tools = image::tools_image(c.engine(), &c.image, &version).await?;
            let n = Nemesis::new(
                c.clone(),
                admin.clone(),
                tools,
                info.topic.clone(),
                w.partitions,
            )
            .with_holds(holds.clone());
            Some(Arc::new(with_restarts(match proxy {
                Some(p) => n.with_reply_loss(p.clone()),
                None => n,
            })))
        }
        // Unloads and the transform's own consumers: no node is touched.
        (None, None) => restarts.as_ref().map(|_| {
            Arc::new(with_restarts(Nemesis::without_nodes(
                admin.clone(),
                &info.run_id,
                info.topic.clone(),
                w.partitions,
            )))
        }),
    };
    Ok(nemesis)
}

/// One task per planned fault: wait for its trigger, inject, hold, heal.
#[allow(clippy::too_many_arguments)]
pub(super) fn drive_faults(
    plan: &Plan,
    nemesis: Option<Arc<Nemesis>>,
    admin: Admin,
    topic: String,
    stats: Arc<Stats>,
    history: History,
    stop: watch::Receiver<bool>,
    active: Arc<Mutex<Vec<String>>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    // Offsets count from the run's start, the history's t_ms = 0.
    let start = tokio::time::Instant::from_std(history.start());
    // Faults on containers do not overlap: one waits for the other.
    let container_lock = Arc::new(Mutex::new(()));
    plan.faults
        .iter()
        .cloned()
        .map(|f| {
            let task = FaultTask {
                nemesis: nemesis.clone(),
                stats: stats.clone(),
                history: history.clone(),
                stop: stop.clone(),
                active: active.clone(),
                lock: container_lock.clone(),
                admin: admin.clone(),
                topic: topic.clone(),
                start,
            };
            tokio::spawn(task.run(f))
        })
        .collect()
}

/// What one fault's task works with (each task has its own clones).
struct FaultTask {
    nemesis: Option<Arc<Nemesis>>,
    stats: Arc<Stats>,
    history: History,
    stop: watch::Receiver<bool>,
    active: Arc<Mutex<Vec<String>>>,
    /// Held while a fault on containers is under way.
    lock: Arc<Mutex<()>>,
    admin: Admin,
    topic: String,
    start: tokio::time::Instant,
}

impl FaultTask {
    /// Wait for the fault's trigger, inject, hold, heal.
    async fn run(self, f: PlannedFault) {
        let FaultTask {
            nemesis,
            stats,
            history,
            mut stop,
            active,
            lock,
            admin,
            topic,
            start,
        } = self;
        let fired = wait_trigger(&f, start, &stats, &mut stop).await;
        if !fired {
            history.record(EventBody::FaultSkipped {
                fault: f.name.clone(),
                reason: "the producer finished before the fault was due".into(),
            });
            return;
        }
        let needs_container = !matches!(
            f.kind,
            crate::scenario::FaultKind::TopicUnload { .. }
                | crate::scenario::FaultKind::ReplyLoss { .. }
                | crate::scenario::FaultKind::ConsumerRestart { .. }
        );
        let _held = if needs_container {
            Some(lock.lock().await)
        } else {
            None
        };
        if *stop.borrow() {
            history.record(EventBody::FaultSkipped {
                fault: f.name.clone(),
                reason: "the producer finished while the fault waited for another to end".into(),
            });
            return;
        }
        let planned_ms = match f.trigger {
            Trigger::AtMs(t) => Some(t),
            Trigger::AfterCommits(_) => None,
        };
        let nem = match &nemesis {
            Some(n) => n.clone(),
            None => {
                // External cluster: unloads only, straight through the admin API.
                run_unload_external(&f, &admin, &topic, &history, planned_ms).await;
                return;
            }
        };
        let Some(applied) =
            inject(&nem, &f, &stats, &mut stop, &active, &history, planned_ms).await
        else {
            return;
        };
        hold_and_heal(&nem, &f, &applied, &mut stop, &active, &history).await;
    }
}

/// Prepare the fault's target, wait for its guard, then inject and note it active. None when
/// it failed or the run was stopping (recorded).
async fn inject(
    nem: &Nemesis,
    f: &PlannedFault,
    stats: &Stats,
    stop: &mut watch::Receiver<bool>,
    active: &Mutex<Vec<String>>,
    history: &History,
    planned_ms: Option<u64>,
) -> Option<Applied> {
    // `next-commit` waits before the target is resolved: it is meant to outlast an outage
    // whose end moves the target (a coordinator's new owner), and fires as soon as it holds.
    let early_note = match f.guard {
        Some(Guard::NextCommit) => Some(wait_next_commit(stats, stop).await),
        _ => None,
    };
    let target = match nem.prepare(f).await {
        Ok(t) => t,
        Err(e) => {
            history.record(EventBody::FaultFailed {
                fault: f.name.clone(),
                error: e.to_string(),
            });
            return None;
        }
    };
    // The guard is waited for last, right before the action.
    let guard_note = match f.guard {
        Some(Guard::Committing) => wait_committing(stats, stop).await,
        Some(Guard::NextCommit) | None => early_note.unwrap_or_default(),
    };
    if *stop.borrow() {
        history.record(EventBody::FaultSkipped {
            fault: f.name.clone(),
            reason: "the run was stopping".into(),
        });
        return None;
    }
    // Written just before the action, so its time is when the fault began.
    history.record(EventBody::FaultStarted {
        fault: f.name.clone(),
        kind: f.kind.name().to_string(),
        target: target.label.clone(),
        planned_ms,
        action: nem.intent(f, &target),
        detail: guard_note.trim_start_matches("; ").to_string(),
    });
    let applied = match nem.inject(f, &target).await {
        Ok(a) => a,
        Err(e) => {
            history.record(EventBody::FaultFailed {
                fault: f.name.clone(),
                error: e.to_string(),
            });
            return None;
        }
    };
    history.record(EventBody::FaultApplied {
        fault: f.name.clone(),
        action: applied.action.clone(),
        detail: applied.detail.clone(),
    });
    active
        .lock()
        .await
        .push(format!("{} on {}", f.name, applied.target));
    Some(applied)
}

/// Hold the fault for its window (until it is spent, or the run stops: cut short), then
/// heal it, trying again up to three times, and record the heal.
async fn hold_and_heal(
    nem: &Nemesis,
    f: &PlannedFault,
    applied: &Applied,
    stop: &mut watch::Receiver<bool>,
    active: &Mutex<Vec<String>>,
    history: &History,
) {
    let window = f.hold_window();
    let cut_short = tokio::select! {
        _ = async {
            match window {
                Some(hold) => tokio::time::sleep(hold).await,
                None => std::future::pending::<()>().await,
            }
        } => false,
        _ = nem.spent(f) => false,
        _ = stop.wait_for(|s| *s) => true,
    };
    let mut result = nem.heal(f, applied).await;
    for _ in 0..3 {
        if result.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        result = nem.heal(f, applied).await;
    }
    active
        .lock()
        .await
        .retain(|a| !a.starts_with(&format!("{} ", f.name)));
    match result {
        Ok(h) => history.record(EventBody::FaultHealed {
            fault: f.name.clone(),
            action: h.action,
            ok: true,
            detail: if cut_short {
                "cut short: the producer finished".into()
            } else {
                h.detail
            },
        }),
        Err(e) => history.record(EventBody::FaultHealed {
            fault: f.name.clone(),
            action: "heal".into(),
            ok: false,
            detail: e.to_string(),
        }),
    }
}

async fn run_unload_external(
    f: &PlannedFault,
    admin: &Admin,
    topic: &str,
    history: &History,
    planned_ms: Option<u64>,
) {
    if let crate::scenario::FaultKind::TopicUnload { scope } = &f.kind {
        let (action, r) = match scope {
            crate::scenario::UnloadScope::WorkloadTopic => (
                format!("PUT /admin/v2/{}/unload", crate::admin::topic_path(topic)),
                admin.unload_topic(topic).await,
            ),
            crate::scenario::UnloadScope::Topic(t) => (
                format!("PUT /admin/v2/{}/unload", crate::admin::topic_path(t)),
                admin.unload_topic(t).await,
            ),
            crate::scenario::UnloadScope::Namespace(ns) => (
                format!("PUT /admin/v2/namespaces/{ns}/unload"),
                admin.unload_namespace(ns).await,
            ),
        };
        match r {
            Ok(()) => {
                history.record(EventBody::FaultStarted {
                    fault: f.name.clone(),
                    kind: f.kind.name().into(),
                    target: "cluster (admin API)".into(),
                    planned_ms,
                    action,
                    detail: String::new(),
                });
                history.record(EventBody::FaultHealed {
                    fault: f.name.clone(),
                    action: "none (an unload needs no heal)".into(),
                    ok: true,
                    detail: String::new(),
                });
            }
            Err(e) => history.record(EventBody::FaultFailed {
                fault: f.name.clone(),
                error: e.to_string(),
            }),
        }
    }
}

/// Wait for a fault's trigger; false when the run stopped first.
async fn wait_trigger(
    f: &PlannedFault,
    start: tokio::time::Instant,
    stats: &Stats,
    stop: &mut watch::Receiver<bool>,
) -> bool {
    match f.trigger {
        Trigger::AtMs(t) => {
            let due = tokio::select! {
                _ = tokio::time::sleep_until(start + Duration::from_millis(t)) => true,
                _ = stop.wait_for(|s| *s) => false,
            };
            due && !*stop.borrow()
        }
        Trigger::AfterCommits(n) => loop {
            if *stop.borrow() {
                return false;
            }
            if stats.committed.load(Ordering::Relaxed) >= n {
                return true;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                _ = stop.wait_for(|s| *s) => return false,
            }
        },
    }
}

/// Wait until one more commit is confirmed than when the fault came due (at most
/// NEXT_COMMIT_WAIT); a note for the history.
async fn wait_next_commit(stats: &Stats, stop: &watch::Receiver<bool>) -> String {
    let from = stats.committed.load(Ordering::SeqCst);
    wait_commit_after(stats, stop, from, NEXT_COMMIT_WAIT).await
}

/// Wait until more than `from` commits are confirmed, at most `wait`.
async fn wait_commit_after(
    stats: &Stats,
    stop: &watch::Receiver<bool>,
    from: u64,
    wait: Duration,
) -> String {
    match poll_until(stop, wait, || stats.committed.load(Ordering::SeqCst) > from).await {
        Some(after) => format!(
            "; fired at the first commit confirmed after it was due ({} ms later)",
            after.as_millis()
        ),
        None => format!(
            "; no commit was confirmed within {}s of it being due, fired anyway",
            wait.as_secs()
        ),
    }
}

/// Wait until a commit requested after this moment is in flight (at most GUARD_WAIT); a note
/// for the history. A commit that has hung since before the fault came due does not count:
/// under load one commit left hanging after an earlier fault (it ended in a timeout) held the
/// old guard open for 31 s, and eleven unloads 3 s apart all landed while the producer, whose
/// sends those unloads kept breaking, had nothing else in flight: the low-water-mark recipe
/// passed.
async fn wait_committing(stats: &Stats, stop: &watch::Receiver<bool>) -> String {
    let from = stats.commits_requested.load(Ordering::SeqCst);
    match poll_until(stop, GUARD_WAIT, || fresh_commit_in_flight(stats, from)).await {
        Some(_) => "; fired while a commit was in flight".into(),
        None => format!(
            "; no commit was requested within {}s, fired anyway",
            GUARD_WAIT.as_secs()
        ),
    }
}

/// A commit has been requested since `from` requests had been, and commits are in flight (the
/// check runs every half millisecond, well inside a commit's round trip).
fn fresh_commit_in_flight(stats: &Stats, from: u64) -> bool {
    stats.commits_requested.load(Ordering::SeqCst) > from
        && stats.commits_in_flight.load(Ordering::SeqCst) > 0
}

/// Check `holds` every half millisecond until it is true (how long that took) or `wait` has
/// passed or the run is stopping (None).
async fn poll_until(
    stop: &watch::Receiver<bool>,
    wait: Duration,
    holds: impl Fn() -> bool,
) -> Option<Duration> {
    let start = tokio::time::Instant::now();
    loop {
        if holds() {
            return Some(start.elapsed());
        }
        if start.elapsed() >= wait || *stop.borrow() {
            return None;
        }
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `while: next-commit` fires at a commit confirmed after the fault came due (counted from
    /// what was committed then), and says when none came within its wait.
    #[tokio::test]
    async fn next_commit_fires_at_a_commit_counted_from_when_it_was_due() {
        let stats = Stats::default();
        stats.committed.store(290, Ordering::SeqCst);
        let (_stop_tx, stop) = watch::channel(false);
        // 290 were committed before it came due: only a 291st fires it.
        let note = wait_commit_after(&stats, &stop, 290, Duration::from_millis(30)).await;
        assert_eq!(
            note,
            "; no commit was confirmed within 0s of it being due, fired anyway"
        );
        stats.committed.fetch_add(1, Ordering::SeqCst);
        let note = wait_commit_after(&stats, &stop, 290, Duration::from_secs(60)).await;
        assert!(
            note.starts_with("; fired at the first commit confirmed after it was due ("),
            "{note}"
        );
        // A stopping run does not wait.
        let (stop_tx, stop) = watch::channel(false);
        stop_tx.send(true).unwrap();
        let note = wait_commit_after(&stats, &stop, 291, Duration::from_secs(60)).await;
        assert!(note.contains("fired anyway"), "{note}");
    }

    /// `while: committing` is not held open by a commit hanging since before the fault came
    /// due (regression: the low-water-mark recipe passed under load, all its unloads fired
    /// during one hung commit); it fires at a commit requested after that, while in flight.
    #[test]
    fn a_commit_hanging_since_before_the_fault_was_due_does_not_hold_committing_open() {
        let stats = Stats::default();
        stats.commits_requested.store(40, Ordering::SeqCst);
        stats.commits_in_flight.store(1, Ordering::SeqCst);
        // Due now: the one in flight was requested before.
        assert!(!fresh_commit_in_flight(&stats, 40));
        // One requested since, in flight beside the hanging one: it fires.
        stats.commits_requested.fetch_add(1, Ordering::SeqCst);
        stats.commits_in_flight.fetch_add(1, Ordering::SeqCst);
        assert!(fresh_commit_in_flight(&stats, 40));
        // All answered: none in flight.
        stats.commits_in_flight.store(0, Ordering::SeqCst);
        assert!(!fresh_commit_in_flight(&stats, 40));
    }
}
