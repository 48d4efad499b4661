//! Whether the planned faults fired ([`FaultsSummary`]): the plan's firings (the context's
//! `planned_faults`) against what the history recorded of each (`fault_started`,
//! `fault_skipped`, `fault_failed`), and what that does to the grade (docs/grading.md): a run
//! that planned faults and fired none has not tested Pulsar under faults, so it cannot pass; a
//! pass that fired only some says which did not.

use std::collections::BTreeMap;

use super::model::Status;
pub use super::model::{FaultsSummary, NotFired};

/// What became of one planned firing, as the history last recorded it (a resumed run's
/// history holds the interrupted run's events too: a firing skipped when the run was
/// interrupted and fired after the resume counts as fired).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Fate {
    /// `fault_started`, and no `fault_failed` after it.
    Fired,
    /// `fault_skipped`, with its reason.
    Skipped(String),
    /// `fault_failed` (before or after its `fault_started`), with the error.
    Failed(String),
}

impl FaultsSummary {
    /// The plan's firings (`planned`, by name) against their fates in the history.
    pub(super) fn of(planned: &[String], fates: &BTreeMap<String, Fate>) -> FaultsSummary {
        let mut s = FaultsSummary {
            planned: planned.len() as u64,
            ..FaultsSummary::default()
        };
        for name in planned {
            let (fate, reason) = match fates.get(name) {
                Some(Fate::Fired) => {
                    s.fired += 1;
                    continue;
                }
                Some(Fate::Skipped(r)) => {
                    s.skipped += 1;
                    ("skipped", r.clone())
                }
                Some(Fate::Failed(e)) => {
                    s.failed += 1;
                    ("failed", e.clone())
                }
                None => ("unrecorded", "the history does not mention it".to_string()),
            };
            s.not_fired.push(NotFired {
                fault: name.clone(),
                fate: fate.into(),
                reason,
            });
        }
        s
    }

    /// `2/3`: fired of planned, for tables.
    pub fn cell(&self) -> String {
        format!("{}/{}", self.fired, self.planned)
    }

    /// `2 of 3 planned faults fired`.
    pub fn count_text(&self) -> String {
        format!("{} of {} planned faults fired", self.fired, self.planned)
    }

    /// The firings that did not fire, grouped by what became of them and why:
    /// `skipped (the producer finished before the fault was due): loss#1, unload#1`.
    pub fn not_fired_text(&self) -> String {
        let mut groups: Vec<((&str, &str), Vec<&str>)> = Vec::new();
        for n in &self.not_fired {
            let key = (n.fate.as_str(), n.reason.as_str());
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, names)) => names.push(&n.fault),
                None => groups.push((key, vec![&n.fault])),
            }
        }
        groups
            .iter()
            .map(|((fate, reason), names)| format!("{fate} ({reason}): {}", names.join(", ")))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The grade's part: with faults planned and none fired, a pass becomes inconclusive (and
    /// an inconclusive run gets the reason too); a violation or a stuck read keeps its status
    /// with a note. Some fired but not all: a note naming those that did not. Returns the
    /// sentence for the summary (`Faults: 2 of 3 planned fired.`; empty with none planned).
    pub(super) fn grade(
        &self,
        status: &mut Status,
        reasons: &mut Vec<String>,
        notes: &mut Vec<String>,
    ) -> String {
        if self.planned == 0 {
            return String::new();
        }
        if self.fired == 0 {
            let why = format!(
                "none of the {} planned faults fired, so the run did not test Pulsar under faults ({}); size the workload to outlast its faults (docs/scenarios.md, \"Sizing a workload for its faults\")",
                self.planned,
                self.not_fired_text()
            );
            match status {
                Status::Pass | Status::Inconclusive => {
                    *status = Status::Inconclusive;
                    reasons.push(why);
                }
                // A violation without faults is still one; a stuck read is a liveness finding;
                // a mismatch has no history (and so no faults_summary) in the first place.
                Status::Violation | Status::Stuck | Status::Mismatch => notes.push(why),
            }
        } else if self.fired < self.planned {
            notes.push(format!(
                "only {}; not fired: {}",
                self.count_text(),
                self.not_fired_text()
            ));
        }
        format!(" Faults: {} of {} planned fired.", self.fired, self.planned)
    }
}

#[cfg(test)]
mod tests;
