//! The search as a state machine the runner drives: [`Shrinker::next_candidate`] proposes a
//! candidate, [`Shrinker::report`] says whether it still failed (with the original's class); a
//! candidate that still fails becomes the best so far and the search goes on from it.

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::knob::{entry_name, knobs, Knob, Phase};
use super::lower::Lower;
use super::to_yaml;
use crate::scenario::{self, Scenario, ScenarioError, ScenarioFile, Timing};

/// How big a scenario is. A candidate is no larger than the best so far in any of these, and
/// smaller in at least one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Size {
    /// Fault entries.
    pub faults: usize,
    /// `down_for` and `duration` of every entry, summed (ms).
    pub hold_ms: u64,
    /// Every `at` offset, summed (ms).
    pub offsets_ms: u64,
    /// Every `after_commits` count, summed.
    pub commits: u64,
    pub messages: u64,
    pub concurrency: u32,
    /// Absent from records written before the knob existed.
    #[serde(default)]
    pub commits_in_flight: u32,
}

impl Size {
    pub fn of(s: &Scenario) -> Size {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let (mut offsets_ms, mut commits) = (0, 0);
        for f in &s.faults {
            match &f.schedule.timing {
                Timing::At(v) => offsets_ms += v.iter().map(|d| ms(*d)).sum::<u64>(),
                Timing::AfterCommits(v) => commits += v.iter().sum::<u64>(),
                Timing::Every { .. } | Timing::Random { .. } => {}
            }
        }
        Size {
            faults: s.faults.len(),
            hold_ms: s.faults.iter().map(|f| ms(f.kind.hold())).sum(),
            offsets_ms,
            commits,
            messages: s.workload.messages,
            concurrency: s.workload.concurrency,
            commits_in_flight: s.workload.commits_in_flight,
        }
    }

    /// No larger than `other` in any dimension.
    pub fn within(&self, other: &Size) -> bool {
        self.faults <= other.faults
            && self.hold_ms <= other.hold_ms
            && self.offsets_ms <= other.offsets_ms
            && self.commits <= other.commits
            && self.messages <= other.messages
            && self.concurrency <= other.concurrency
            && self.commits_in_flight <= other.commits_in_flight
    }
}

impl fmt::Display for Size {
    /// "3 faults, 12s held, 300000 messages, concurrency 6".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let held = humantime::format_duration(Duration::from_millis(self.hold_ms));
        write!(
            f,
            "{} fault(s), {held} held, {} messages, concurrency {}",
            self.faults, self.messages, self.concurrency
        )
    }
}

/// One scenario to try.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// 1, 2, ... in the order proposed (`shrink/NNN/`).
    pub id: u32,
    pub phase: Phase,
    /// What it changes, in one line: "drop faults 3-5 of 8 (a, b, c)".
    pub description: String,
    /// A valid scenario file with the shrink's seed.
    pub scenario: ScenarioFile,
    pub size: Size,
}

#[derive(Debug, thiserror::Error)]
pub enum ShrinkError {
    #[error("the scenario to shrink is not valid: {0}")]
    Invalid(#[source] ScenarioError),
    #[error("candidate {id} is not the one being tried ({})", pending.map_or("none is".to_string(), |p| format!("that is {p}")))]
    NotPending { id: u32, pending: Option<u32> },
}

/// Where the search is.
#[derive(Debug, Clone)]
enum Stage {
    /// Drop every fault at once (a failure that needs none ends the fault search at once).
    DropAll {
        proposed: bool,
    },
    /// Delta debugging: drop chunk `chunk` of `granularity` chunks of the list (0: done).
    Ddmin {
        granularity: usize,
        chunk: usize,
    },
    /// Lower each knob in turn.
    Tune {
        knobs: Vec<Knob>,
        at: usize,
        lower: Option<Lower>,
    },
    Done,
}

/// A proposal before it is checked (valid, smaller, not known to pass).
struct Proposal {
    phase: Phase,
    description: String,
    file: ScenarioFile,
}

/// The candidate out for a run, with what accepting it needs.
#[derive(Debug, Clone)]
struct Pending {
    candidate: Candidate,
    scenario: Scenario,
    yaml: String,
}

/// The shrink's state: the best scenario so far, the search's place, the candidates known to
/// pass. Same inputs and reports, same candidates.
#[derive(Debug, Clone)]
pub struct Shrinker {
    best: ScenarioFile,
    best_scenario: Scenario,
    best_size: Size,
    original_size: Size,
    stage: Stage,
    pending: Option<Pending>,
    proposed: u32,
    skipped_invalid: u32,
    /// Candidates that ran and did not fail (their YAML): never proposed again.
    passed: HashSet<String>,
}

impl Shrinker {
    /// Start from a (pinned) scenario that failed with `seed`; the seed is written into it and
    /// into every candidate, so each reproduces without flags.
    pub fn new(pinned: ScenarioFile, seed: u64) -> Result<Shrinker, ShrinkError> {
        let mut best = pinned;
        best.seed = Some(seed);
        let best_scenario =
            scenario::parse("shrink.yaml", &to_yaml(&best)).map_err(ShrinkError::Invalid)?;
        let size = Size::of(&best_scenario);
        Ok(Shrinker {
            best,
            best_scenario,
            best_size: size,
            original_size: size,
            stage: Stage::DropAll { proposed: false },
            pending: None,
            proposed: 0,
            skipped_invalid: 0,
            passed: HashSet::new(),
        })
    }

    /// The next candidate to run, or `None` when the search is over. Until it is reported,
    /// the same candidate is returned again.
    pub fn next_candidate(&mut self) -> Option<Candidate> {
        if let Some(p) = &self.pending {
            return Some(p.candidate.clone());
        }
        loop {
            let proposal = self.propose()?;
            match self.admit(proposal) {
                Some(p) => {
                    let c = p.candidate.clone();
                    self.pending = Some(p);
                    return Some(c);
                }
                None => self.feedback(false),
            }
        }
    }

    /// Whether candidate `id` still failed with the original's class. One that did becomes
    /// the best so far.
    pub fn report(&mut self, id: u32, still_fails: bool) -> Result<(), ShrinkError> {
        let pending = self.pending.as_ref().map(|p| p.candidate.id);
        if pending != Some(id) {
            return Err(ShrinkError::NotPending { id, pending });
        }
        let p = self.pending.take().expect("checked above");
        if still_fails {
            self.best = p.candidate.scenario;
            self.best_scenario = p.scenario;
            self.best_size = p.candidate.size;
        } else {
            self.passed.insert(p.yaml);
        }
        self.feedback(still_fails);
        Ok(())
    }

    /// The smallest scenario known to fail so far (the pinned one until a candidate failed).
    pub fn best(&self) -> &ScenarioFile {
        &self.best
    }

    pub fn best_size(&self) -> Size {
        self.best_size
    }

    pub fn original_size(&self) -> Size {
        self.original_size
    }

    /// Candidates proposed so far.
    pub fn proposed(&self) -> u32 {
        self.proposed
    }

    /// Proposals left out because the loader refused them (none is expected).
    pub fn skipped_invalid(&self) -> u32 {
        self.skipped_invalid
    }

    /// The search is over: the best so far is as small as this search makes it.
    pub fn is_done(&self) -> bool {
        matches!(self.stage, Stage::Done) && self.pending.is_none()
    }

    /// A proposal as a candidate: written and read back by the loader, smaller than the best,
    /// not one that passed already. `None`: left out.
    fn admit(&mut self, p: Proposal) -> Option<Pending> {
        let yaml = to_yaml(&p.file);
        if self.passed.contains(&yaml) {
            return None;
        }
        let Ok(scenario) = scenario::parse("candidate.yaml", &yaml) else {
            self.skipped_invalid += 1;
            return None;
        };
        let size = Size::of(&scenario);
        if !size.within(&self.best_size) || size == self.best_size {
            return None;
        }
        self.proposed += 1;
        Some(Pending {
            candidate: Candidate {
                id: self.proposed,
                phase: p.phase,
                description: p.description,
                scenario: p.file,
                size,
            },
            scenario,
            yaml,
        })
    }

    /// The next proposal of the current stage, moving on through the stages; `None`: done.
    fn propose(&mut self) -> Option<Proposal> {
        loop {
            let n = self.best.faults.len();
            match &mut self.stage {
                Stage::DropAll { proposed } => {
                    if !*proposed && n > 0 {
                        *proposed = true;
                        return Some(drop_range(&self.best, 0, n));
                    }
                    self.stage = Stage::Ddmin {
                        granularity: n.min(2),
                        chunk: 0,
                    };
                }
                Stage::Ddmin { granularity, chunk } => {
                    if *granularity > 0 && n > 0 {
                        let (a, b) = chunk_bounds(n, *granularity, *chunk);
                        return Some(drop_range(&self.best, a, b));
                    }
                    self.stage = Stage::Tune {
                        knobs: knobs(&self.best),
                        at: 0,
                        lower: None,
                    };
                }
                Stage::Tune { knobs, at, lower } => {
                    let Some(knob) = knobs.get(*at).copied() else {
                        self.stage = Stage::Done;
                        continue;
                    };
                    match tune(knob, lower, &self.best, &self.best_scenario) {
                        Some(p) => return Some(p),
                        None => {
                            *at += 1;
                            *lower = None;
                        }
                    }
                }
                Stage::Done => return None,
            }
        }
    }

    /// The current stage learns whether its last proposal still failed (`accepted`: it is the
    /// best now).
    fn feedback(&mut self, accepted: bool) {
        let n = self.best.faults.len();
        match &mut self.stage {
            Stage::DropAll { .. } | Stage::Done => {}
            Stage::Ddmin { granularity, chunk } => {
                (*granularity, *chunk) = ddmin_next(*granularity, *chunk, n, accepted)
            }
            Stage::Tune { knobs, at, lower } => {
                if let Some(l) = lower {
                    if accepted {
                        let v = knobs[*at].get(&self.best, &self.best_scenario);
                        l.accepted(v.unwrap_or(0));
                    } else {
                        l.rejected();
                    }
                }
            }
        }
    }
}

/// The next proposal for `knob`, starting to lower it if it has not begun; `None`: this knob
/// is done.
fn tune(
    knob: Knob,
    lower: &mut Option<Lower>,
    best: &ScenarioFile,
    s: &Scenario,
) -> Option<Proposal> {
    let value = knob.get(best, s)?;
    if lower.is_none() {
        let (floor, step) = knob.floor_and_step(best, s);
        *lower = Some(Lower::start(value, floor, step, step)?);
    }
    let to = lower.as_ref()?.target(value)?;
    Some(Proposal {
        phase: knob.phase(),
        description: knob.describe(best, value, to),
        file: knob.set(best, to),
    })
}

/// Chunk `chunk` of `n` entries split into `granularity` nearly equal runs: [a, b).
fn chunk_bounds(n: usize, granularity: usize, chunk: usize) -> (usize, usize) {
    (chunk * n / granularity, (chunk + 1) * n / granularity)
}

/// Delta debugging's next (granularity, chunk), the list now `n` long. After a chunk that
/// could go: one chunk fewer (at least 2), from the first; after one that could not: the next
/// chunk, or twice as many chunks, or done (granularity 0) when each was a single entry.
fn ddmin_next(granularity: usize, chunk: usize, n: usize, accepted: bool) -> (usize, usize) {
    if n == 0 {
        return (0, 0);
    }
    if accepted {
        return (granularity.saturating_sub(1).max(2).min(n), 0);
    }
    if chunk + 1 < granularity {
        (granularity, chunk + 1)
    } else if granularity < n {
        ((granularity * 2).min(n), 0)
    } else {
        (0, 0)
    }
}

/// The best without entries [a, b): "drop faults 3-5 of 8 (a, b, c)".
fn drop_range(best: &ScenarioFile, a: usize, b: usize) -> Proposal {
    let n = best.faults.len();
    let mut names: Vec<String> = (a..b.min(a + 3)).map(|i| entry_name(best, i)).collect();
    if b - a > 3 {
        names.push(format!("and {} more", b - a - 3));
    }
    let what = match (a, b) {
        (0, b) if b == n && n > 1 => format!("drop all {n} faults"),
        (a, b) if b == a + 1 => format!("drop fault {} of {n}", a + 1),
        (a, b) => format!("drop faults {}-{b} of {n}", a + 1),
    };
    let mut file = best.clone();
    file.faults.drain(a..b);
    Proposal {
        phase: Phase::DropFaults,
        description: format!("{what} ({})", names.join(", ")),
        file,
    }
}

#[cfg(test)]
mod tests;
