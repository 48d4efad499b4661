//! Shrinking a failing run (issue 12): the pure part. A failing run's scenario and seed are
//! *pinned* into a scenario whose every planned firing is an entry of its own
//! ([`pin`]); a [`Shrinker`] then proposes smaller candidates, one at a time, which the runner
//! (root crate, `shrink` command) runs and reports back as still failing or not; a failure
//! counts only when its [`FailureClass`] matches the original's.
//!
//! The search, in this order, each step deterministic: drop whole fault entries (delta
//! debugging: the whole list, halves, quarters, ..., one at a time), move firings earlier,
//! shorten holds (`down_for`, `duration`), lower `messages`, lower `concurrency`. A candidate is
//! never larger than the best so far in any dimension of [`Size`], and always a scenario the
//! ordinary loader accepts ([`to_yaml`] then `scenario::parse`).
//!
//! `pin` turns the plan into entries, `search` is the state machine, `lower` the halving step
//! it uses for every number, `class` the verdict class a shrink preserves, `outcome` what a
//! shrink records (`log.jsonl`'s lines, `summary.json`).

mod class;
mod knob;
mod lower;
mod outcome;
mod pin;
mod search;
#[cfg(test)]
mod test_support;

pub use class::{cause_key, Anomaly, AnomalyKind, FailureClass};
pub use knob::{Phase, AT_FLOOR, HOLD_FLOOR, MESSAGES_FLOOR};
pub use outcome::{LogLine, Summary, Try};
pub use pin::pin;
pub use search::{Candidate, ShrinkError, Shrinker, Size};

use crate::scenario::ScenarioFile;

/// The scenario file as YAML the loader reads back (`scenario::parse`): durations as
/// `1m 5s 300ms`, keys in the file's order, absent options left out.
pub fn to_yaml(file: &ScenarioFile) -> String {
    serde_yaml_ng::to_string(file).expect("scenario files serialize to YAML")
}
