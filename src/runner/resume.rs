//! What a resumed run takes over from the interrupted one: attempt numbers above every one
//! the history or the journal names, and the faults already started, which are not fired
//! again.

use std::collections::BTreeSet;
use std::path::Path;

use crate::error::{Error, Result};
use crate::history::{self, EventBody, History};
use crate::journal::Journal;
use crate::plan::Plan;

/// The first attempt number of a resumed run: above every attempt the history or the
/// journal names. The journal is synced before an attempt's first SEND and can be ahead of
/// the history after a kill; a reused number would replace the old attempt's open record in
/// the journal, or clear it when a resend of the reused number clears its predecessor.
pub(super) fn next_attempt(history: &Path, journal: &Journal) -> Result<u64> {
    let journaled = journal
        .last_attempt()
        .map_err(|e| Error::Pulsar(e.to_string()))?;
    Ok(last_attempt(history).max(journaled) + 1)
}

/// The faults a history records as started.
fn faults_started(path: &Path) -> BTreeSet<String> {
    let Ok(events) = history::read(path) else {
        return BTreeSet::new();
    };
    events
        .filter_map(|e| e.ok())
        .filter_map(|e| match e.body {
            EventBody::FaultStarted { fault, .. } => Some(fault),
            _ => None,
        })
        .collect()
}

/// The highest attempt number in a history (to continue numbering after a resume).
fn last_attempt(path: &Path) -> u64 {
    let Ok(events) = history::read(path) else {
        return 0;
    };
    events
        .filter_map(|e| e.ok())
        .filter_map(|e| match e.body {
            EventBody::TxnOpened { attempt, .. } => Some(attempt),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

/// The plan without the faults that started before the interruption (noted in the history).
pub(super) fn remaining_plan(plan: &Plan, history_path: &Path, history: &History) -> Plan {
    let fired = faults_started(history_path);
    if !fired.is_empty() {
        history.record(EventBody::Note {
            message: format!(
                "resuming: {} fault(s) started before the interruption and are not fired again: {}",
                fired.len(),
                fired.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
        });
    }
    Plan {
        faults: plan
            .faults
            .iter()
            .filter(|f| !fired.contains(&f.name))
            .cloned()
            .collect(),
        ..plan.clone()
    }
}

#[cfg(test)]
mod tests;
