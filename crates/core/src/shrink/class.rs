//! The verdict class a shrink preserves: what kind of failure a run showed, in terms that stay
//! the same from run to run (no numbers, no topic names): a violation's kinds of anomaly and
//! their causes, or a stall's or stuck read's likely cause.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::checker::{Cause, Status, Verdict};

/// What a violation's anomaly was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnomalyKind {
    Missing,
    Duplicates,
    /// Payloads that are not numbers of [0, N).
    Unexpected,
}

impl fmt::Display for AnomalyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AnomalyKind::Missing => "missing",
            AnomalyKind::Duplicates => "duplicates",
            AnomalyKind::Unexpected => "unexpected payloads",
        })
    }
}

/// One kind of anomaly with the cause the checker gave it (`None` for unexpected payloads,
/// which carry no cause).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Anomaly {
    pub kind: AnomalyKind,
    pub cause: Option<Cause>,
}

impl fmt::Display for Anomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cause {
            Some(c) => write!(f, "{} (cause: {c})", self.kind),
            None => write!(f, "{}", self.kind),
        }
    }
}

/// The class of a failed run. A pass, or an inconclusive run without a stall, has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "class", rename_all = "snake_case")]
pub enum FailureClass {
    /// Every kind of anomaly, with its cause, that made the run a violation (anomalies of the
    /// harness's own making do not: they never make a violation).
    Violation { anomalies: BTreeSet<Anomaly> },
    /// The run stalled; `cause`: the key of the known bug the brokers' lines matched.
    Stall { cause: Option<String> },
    /// Pulsar held the read-back after every fault healed; `cause`: the key of the known
    /// pattern.
    Stuck { cause: Option<String> },
}

impl FailureClass {
    /// The class of a verdict; `None` for a pass, or an inconclusive run that did not stall.
    pub fn of(v: &Verdict) -> Option<FailureClass> {
        match v.status {
            Status::Pass => None,
            Status::Violation | Status::Mismatch => Some(FailureClass::Violation {
                anomalies: anomalies(v),
            }),
            Status::Stuck => Some(FailureClass::Stuck {
                cause: v
                    .stuck_reads
                    .as_ref()
                    .and_then(|s| s.likely_cause.as_deref())
                    .map(cause_key),
            }),
            Status::Inconclusive => v.stall.as_ref().map(|s| FailureClass::Stall {
                cause: s.likely_cause.as_deref().map(cause_key),
            }),
        }
    }

    /// Whether a candidate's class `other` still shows this failure: a violation with every
    /// kind of anomaly and cause this one has (more is fine), or a stall (a stuck read) with
    /// the same likely cause, known or not.
    pub fn matches(&self, other: &FailureClass) -> bool {
        match (self, other) {
            (
                FailureClass::Violation { anomalies: want },
                FailureClass::Violation { anomalies: got },
            ) => want.is_subset(got),
            (FailureClass::Stall { cause: a }, FailureClass::Stall { cause: b })
            | (FailureClass::Stuck { cause: a }, FailureClass::Stuck { cause: b }) => a == b,
            _ => false,
        }
    }
}

/// The violation's anomalies: each missing or duplicated range's kind and cause, and
/// unexpected payloads.
fn anomalies(v: &Verdict) -> BTreeSet<Anomaly> {
    let of = |kind: AnomalyKind, cause: Cause| {
        cause.is_violation().then_some(Anomaly {
            kind,
            cause: Some(cause),
        })
    };
    let mut out: BTreeSet<Anomaly> = v
        .missing
        .iter()
        .filter_map(|m| of(AnomalyKind::Missing, m.cause))
        .chain(
            v.duplicates
                .iter()
                .filter_map(|d| of(AnomalyKind::Duplicates, d.cause)),
        )
        .collect();
    if v.unexpected_total > 0 || !v.unexpected.is_empty() {
        out.insert(Anomaly {
            kind: AnomalyKind::Unexpected,
            cause: None,
        });
    }
    out
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cause = |c: &Option<String>| match c {
            Some(c) => format!("likely cause: {c}"),
            None => "no known cause".to_string(),
        };
        match self {
            FailureClass::Violation { anomalies } if anomalies.is_empty() => {
                f.write_str("violation")
            }
            FailureClass::Violation { anomalies } => {
                let list: Vec<String> = anomalies.iter().map(Anomaly::to_string).collect();
                write!(f, "violation: {}", list.join(", "))
            }
            FailureClass::Stall { cause: c } => write!(f, "stall, {}", cause(c)),
            FailureClass::Stuck { cause: c } => write!(f, "stuck read, {}", cause(c)),
        }
    }
}

/// The words `stuck::known_cause` begins with.
const COORDINATOR_GAVE_UP: &str = "the coordinator gave up ending";

/// What a stall's or stuck read's likely cause is compared by: the upstream issue it names
/// (`apache/pulsar#24945`, as `matrix` counts them), the known stuck-read pattern ("the
/// coordinator gave up ending a transaction"), else the text with digits folded.
pub fn cause_key(cause: &str) -> String {
    if cause.starts_with(COORDINATOR_GAVE_UP) {
        return format!("{COORDINATOR_GAVE_UP} a transaction");
    }
    crate::matrix::cause_key(cause)
}

#[cfg(test)]
mod tests;
