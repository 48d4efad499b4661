//! `validate` and `plan`: scenario files, no Docker.

use std::path::Path;

use crate::error::Result;
use crate::{exit, plan, scenario};

pub fn validate(path: &Path) -> Result<i32> {
    let s = scenario::load(path)?;
    crate::outln!(
        "{}: valid: scenario '{}', {} numbers in transactions of {}, {} fault(s)",
        path.display(),
        s.name,
        s.workload.messages,
        s.workload.txn_size,
        s.faults.len()
    );
    warn_reach(path, &s);
    Ok(exit::PASS)
}

/// On standard error, where the schedule may come after the workload has finished (a fault
/// then is skipped; a run that fired none is inconclusive). The exit code does not change.
fn warn_reach(path: &Path, s: &scenario::Scenario) {
    for w in plan::reach_warnings(s) {
        crate::errln!("warning: {}: {w}", path.display());
    }
}

pub fn plan(path: &Path, seed: Option<u64>, commands: bool, adapter: Option<&Path>) -> Result<i32> {
    let s = scenario::load(path)?;
    warn_reach(path, &s);
    let given = seed.or(s.seed);
    let seed = crate::seed::given_or_drawn(given);
    if given.is_none() {
        crate::errln!(
            "(`run {} --seed {seed}` executes this plan)",
            path.display()
        );
    }
    if commands {
        crate::out!("{}", crate::runner::plan_commands(&s, seed, adapter)?);
    } else {
        crate::out!("{}", plan::make(&s, seed).to_json());
    }
    Ok(exit::PASS)
}
