//! `consumer_restart` on the transform's own consumers (no node of the cluster is touched):
//! the target named, the close asked of the worker (which acts while it holds inputs
//! acknowledged in an open transaction; see `transform::restart`), and the heal that lets it
//! subscribe again.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::admin::Admin;
use crate::plan::{PlannedFault, PlannedTarget};
use crate::scenario::GUARD_WAIT;
use crate::transform::restart::Restarts;

use super::{Applied, Healed, Nemesis, NemesisError, Resolved};

impl Nemesis {
    /// Close and reopen the transform's consumers for `consumer_restart` faults.
    pub fn with_consumer_restarts(mut self, restarts: Arc<Restarts>) -> Nemesis {
        self.consumer_restarts = Some(restarts);
        self
    }

    /// The nemesis of a cluster the harness did not start and has no adapter for: unloads
    /// through the admin API and the harness's own consumers only.
    pub fn without_nodes(admin: Admin, run_id: &str, topic: String, partitions: u32) -> Nemesis {
        Nemesis {
            cluster: None,
            exec: None,
            run_id: run_id.to_string(),
            admin,
            tools_image: String::new(),
            topic,
            partitions,
            next_change: AtomicU64::new(1),
            reply_loss: None,
            consumer_restarts: None,
            holds: std::sync::Arc::default(),
        }
    }
}

/// The worker (0-based) a planned consumer target names.
fn worker(f: &PlannedFault) -> Result<u32, NemesisError> {
    match f.target {
        PlannedTarget::Consumer { index } if index >= 1 => Ok(index - 1),
        ref t => Err(NemesisError::Target {
            target: t.to_string(),
            reason: "consumer_restart aims at one of the transform's consumers".into(),
        }),
    }
}

pub(super) fn resolve(f: &PlannedFault) -> Result<Resolved, NemesisError> {
    let w = worker(f)?;
    Ok(Resolved {
        label: format!("{} (the transform's worker {w})", f.target),
        node: None,
        pid: None,
        found: None,
    })
}

pub(super) fn intent(f: &PlannedFault) -> String {
    format!(
        "at {}'s next attempt whose inputs are acknowledged in its open transaction (waiting at most {}s): CLOSE_CONSUMER on each input partition; the attempt goes on as the client learns; after {}ms: subscribe again",
        f.target,
        GUARD_WAIT.as_secs(),
        f.hold().as_millis()
    )
}

pub(super) async fn inject(nem: &Nemesis, f: &PlannedFault) -> Result<Applied, NemesisError> {
    let action = "close the consumer (CLOSE_CONSUMER on each input partition)".to_string();
    let restarts = nem
        .consumer_restarts
        .as_ref()
        .ok_or_else(|| NemesisError::Action {
            action: action.clone(),
            reason: "this run has no transform".into(),
        })?;
    let c = restarts
        .close(worker(f)?, &f.name, GUARD_WAIT)
        .await
        .map_err(|reason| NemesisError::Action {
            action: action.clone(),
            reason,
        })?;
    Ok(Applied {
        target: format!("{} (the transform's worker {})", f.target, c.consumer),
        action,
        detail: format!(
            "attempt {} held {} input(s) acknowledged in its open transaction {}; {}",
            c.attempt, c.inputs, c.txn, c.answer
        ),
        node: None,
        found: None,
        changes: Vec::new(),
    })
}

pub(super) fn heal(nem: &Nemesis, f: &PlannedFault) -> Result<Healed, NemesisError> {
    let was = nem
        .consumer_restarts
        .as_ref()
        .is_some_and(|r| r.reopen(worker(f).unwrap_or(u32::MAX)));
    Ok(Healed {
        action: format!(
            "{} may subscribe again (it does so before it takes inputs)",
            f.target
        ),
        detail: if was {
            String::new()
        } else {
            "it was not closed".into()
        },
    })
}
