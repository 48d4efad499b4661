//! What the read-back showed, before attribution: the missing and duplicated ranges
//! ([`Span`], [`DupSpan`]), the unexpected messages, the totals ([`Findings`]), and the
//! conservation check that every message read is counted once ([`CheckerError`]).

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::message::MsgId;

/// Cap on the anomalies listed one by one in a verdict (all are counted).
pub const LIST_CAP: usize = 1000;

/// The checker caught itself: its counts do not add up. No verdict can be trusted then.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckerError {
    #[error(
        "the checker's counts do not add up: {received} message(s) read, but {distinct} distinct number(s) + {duplicate_copies} extra cop(ies) + {unexpected} unexpected message(s) = {sum}; no verdict is given (a bug in pulsar-chaos's checker, not a finding about Pulsar)"
    )]
    Conservation {
        received: u64,
        distinct: u64,
        duplicate_copies: u64,
        unexpected: u64,
        sum: u128,
    },
}

/// A message whose payload is not a number of [0, N).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unexpected {
    /// The number, when the payload starts with one (then it is >= N).
    pub value: Option<u64>,
    /// The first bytes of the payload, lossily as text.
    pub payload_prefix: String,
    pub message_id: MsgId,
}

/// A half-open range of numbers `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub start: u64,
    pub end: u64,
}

impl Span {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.len() == 1 {
            write!(f, "{}", self.start)
        } else {
            write!(f, "[{}, {})", self.start, self.end)
        }
    }
}

/// Numbers `[start, end)` that arrived `copies` times each (copies >= 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DupSpan {
    pub start: u64,
    pub end: u64,
    pub copies: u32,
}

/// What the read-back showed, before attribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Findings {
    pub expected: u64,
    pub received: u64,
    pub distinct: u64,
    /// Up to LIST_CAP missing ranges, in order.
    pub missing: Vec<Span>,
    pub missing_total: u64,
    /// Up to LIST_CAP duplicated ranges, in order.
    pub duplicates: Vec<DupSpan>,
    /// How many distinct numbers arrived more than once.
    pub duplicate_values: u64,
    /// How many extra copies arrived in all.
    pub duplicate_copies: u64,
    pub unexpected: Vec<Unexpected>,
    pub unexpected_total: u64,
}

impl Findings {
    /// Every message read is a distinct number, an extra copy or unexpected: checked wherever
    /// findings are made, in release builds too.
    pub fn conserved(&self) -> Result<(), CheckerError> {
        let sum = u128::from(self.distinct)
            + u128::from(self.duplicate_copies)
            + u128::from(self.unexpected_total);
        if u128::from(self.received) == sum {
            return Ok(());
        }
        Err(CheckerError::Conservation {
            received: self.received,
            distinct: self.distinct,
            duplicate_copies: self.duplicate_copies,
            unexpected: self.unexpected_total,
            sum,
        })
    }

    /// The findings as a `Tally::new` lists them: at most `LIST_CAP` of each kind, the first
    /// ones in order (the totals stay).
    pub fn capped(mut self) -> Findings {
        self.missing.truncate(LIST_CAP);
        self.duplicates.truncate(LIST_CAP);
        self.unexpected.truncate(LIST_CAP);
        self
    }

    pub fn is_clean(&self) -> bool {
        self.missing_total == 0 && self.duplicate_values == 0 && self.unexpected_total == 0
    }

    /// The duplicated values whose copies' message ids a second read collects (the first
    /// `limit` values).
    pub fn duplicate_values_to_locate(&self, limit: usize) -> BTreeSet<u64> {
        let mut out = BTreeSet::new();
        for d in &self.duplicates {
            for v in d.start..d.end {
                if out.len() >= limit {
                    return out;
                }
                out.insert(v);
            }
        }
        out
    }
}
