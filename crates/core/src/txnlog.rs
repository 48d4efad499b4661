//! A coordinator's transaction-log cursor across a fault, in the admin API's words: the
//! entries it had acknowledged before the fault and no longer has after it (the coordinator-kill
//! finding, docs/findings/committed-then-aborted-after-coordinator-kills.md).
//!
//! The admin API (`coordinatorInternalStats`) shows a cursor as a mark-delete position (every
//! entry up to it acknowledged) and `individuallyDeletedMessages`, the ranges `(a..b]`
//! acknowledged above it. Two views of the same cursor, one before a broker was killed and one
//! after the next coordinator recovered, tell which entries were acknowledged and are not any
//! more: the recovering coordinator replays those entries. Pure.

use std::fmt;

use rangemap::RangeSet;
use serde::{Deserialize, Serialize};

use crate::stuck::parse_position;

/// A position in a managed ledger: (ledger id, entry id).
pub type Pos = (u64, i64);

/// The ranges `(from..to]` of `individuallyDeletedMessages` (`[(3:12..3:14],(3:20..3:26]]`).
/// None when the text is not that shape.
pub fn parse_ranges(text: &str) -> Option<Vec<(Pos, Pos)>> {
    let inner = text.trim().strip_prefix('[')?.strip_suffix(']')?.trim();
    if inner.is_empty() {
        return Some(Vec::new());
    }
    let mut out = Vec::new();
    for part in inner.split("],") {
        let part = part.trim().trim_end_matches(']');
        let body = part.strip_prefix('(')?;
        let (a, b) = body.split_once("..")?;
        let (a, b) = (parse_position(a)?, parse_position(b)?);
        if a < b {
            out.push((a, b));
        }
    }
    Some(out)
}

/// One view of a cursor: its mark-delete position and the ranges acknowledged above it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorView {
    pub mark_delete: Pos,
    pub ranges: Vec<(Pos, Pos)>,
}

impl CursorView {
    /// From the admin API's two fields; None when either cannot be read.
    pub fn parse(mark_delete: &str, individually_deleted: &str) -> Option<CursorView> {
        Some(CursorView {
            mark_delete: parse_position(mark_delete)?,
            ranges: parse_ranges(individually_deleted)?,
        })
    }

    /// The acknowledged set: every entry up to the mark-delete position, and the ranges above
    /// it. Pulsar's `(a..b]` is kept as `a..b`: the same endpoints, and neither union nor
    /// difference of half-open ranges depends on which end is the open one.
    fn acked(&self) -> RangeSet<Pos> {
        let mut set = RangeSet::new();
        for (a, b) in
            std::iter::once(((0, i64::MIN), self.mark_delete)).chain(self.ranges.iter().copied())
        {
            if a < b {
                set.insert(a..b);
            }
        }
        set
    }
}

/// The entries `before` had acknowledged and `after` has not, as ranges `(a..b]` in order.
pub fn reopened(before: &CursorView, after: &CursorView) -> Vec<(Pos, Pos)> {
    let mut left = before.acked();
    for r in after.acked().iter() {
        left.remove(r.clone());
    }
    left.iter().map(|r| (r.start, r.end)).collect()
}

/// How many entries the ranges hold, when each lies within one ledger (entry ids are
/// consecutive there); None when a range crosses ledgers (their sizes are not in the view).
pub fn entries(ranges: &[(Pos, Pos)]) -> Option<u64> {
    ranges.iter().try_fold(0u64, |n, (a, b)| {
        (a.0 == b.0).then(|| n + (b.1 - a.1) as u64)
    })
}

/// A cursor of a coordinator's transaction log that went back across a gap in the admin API's
/// answers (a fault on the coordinator's broker): gathered by the runner from its watch of the
/// log, read by the checker to explain a loss.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CursorStepBack {
    pub coordinator: u32,
    /// The managed ledger (`pulsar/system/persistent/__transaction_log_0`).
    pub log: String,
    pub cursor: String,
    /// The last view before the gap: when it was answered, and its mark-delete position.
    pub before_ms: u64,
    pub before: String,
    /// The first view after it.
    pub after_ms: u64,
    pub after: String,
    /// Entries acknowledged before the gap and not after it, `(a..b]` in Pulsar's notation.
    pub reopened: Vec<String>,
    /// How many entries those are (None: a range crosses ledgers).
    pub reopened_entries: Option<u64>,
}

impl CursorStepBack {
    /// From two views of one cursor, each `(answered at ms, markDeletePosition,
    /// individuallyDeletedMessages)` as the admin API writes them; None when the mark-delete
    /// position did not go back or a view cannot be read.
    pub fn between(
        coordinator: u32,
        log: &str,
        cursor: &str,
        (before_ms, before_md, before_ranges): (u64, &str, &str),
        (after_ms, after_md, after_ranges): (u64, &str, &str),
    ) -> Option<CursorStepBack> {
        let b = CursorView::parse(before_md, before_ranges)?;
        let a = CursorView::parse(after_md, after_ranges)?;
        if a.mark_delete >= b.mark_delete {
            return None;
        }
        let r = reopened(&b, &a);
        Some(CursorStepBack {
            coordinator,
            log: log.to_string(),
            cursor: cursor.to_string(),
            before_ms,
            before: before_md.to_string(),
            after_ms,
            after: after_md.to_string(),
            reopened_entries: entries(&r),
            reopened: r.iter().map(|(x, y)| range_text(*x, *y)).collect(),
        })
    }

    /// "98 entries", or "entries" when a range crosses ledgers.
    pub fn reopened_count(&self) -> String {
        match self.reopened_entries {
            Some(n) => format!("{n} entries"),
            None => "entries".into(),
        }
    }
}

fn range_text(a: Pos, b: Pos) -> String {
    format!("({}:{}..{}:{}]", a.0, a.1, b.0, b.1)
}

/// At most this many reopened ranges are quoted in an explanation (all are counted).
const QUOTED: usize = 4;

impl fmt::Display for CursorStepBack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "coordinator {}'s transaction log {} (admin API coordinatorInternalStats): cursor {} had markDeletePosition {} at t={} ms and came back at {} at t={} ms",
            self.coordinator, self.log, self.cursor, self.before, self.before_ms, self.after, self.after_ms
        )?;
        if self.reopened.is_empty() {
            return Ok(());
        }
        let n = self.reopened_count();
        let shown: Vec<&str> = self
            .reopened
            .iter()
            .take(QUOTED)
            .map(String::as_str)
            .collect();
        let more = if self.reopened.len() > QUOTED {
            format!(" and {} more range(s)", self.reopened.len() - QUOTED)
        } else {
            String::new()
        };
        write!(
            f,
            "; {n} it had acknowledged were unacknowledged again ({}{more}), so the recovering coordinator replays them",
            shown.join(", ")
        )
    }
}

#[cfg(test)]
mod tests;
