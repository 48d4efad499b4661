//! The checker: a pure function from the read-back (and the producer's history) to a
//! [`Verdict`]. It never touches the network, Docker, tokio or the clock.
//!
//! The read-back is fed one message at a time into a [`Tally`], which keeps the numbers seen as
//! a set of ranges: memory grows with the number of gaps and duplicated stretches, not with N.
//! In-order input takes a fast path that only extends the current run.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use rangemap::{RangeInclusiveMap, RangeInclusiveSet};
use serde::{Deserialize, Serialize};

use crate::history::{Event, EventBody, Outcome, TxnId};

/// Where a message was read: partition (-1 for a non-partitioned topic), ledger, entry, and the
/// index inside a batch (-1 when not batched).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MsgId {
    pub partition: i32,
    pub ledger: u64,
    pub entry: u64,
    pub batch: i32,
}

impl fmt::Display for MsgId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.ledger, self.entry, self.partition)?;
        if self.batch >= 0 {
            write!(f, ":{}", self.batch)?;
        }
        Ok(())
    }
}

/// Parse a payload: the number in decimal ASCII at its start, optionally followed by a
/// non-digit (padding). `None` when it does not start with a number.
pub fn parse_number(payload: &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    let mut digits = 0;
    for &b in payload {
        if b.is_ascii_digit() {
            v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
            digits += 1;
            if digits > 19 {
                return None;
            }
        } else {
            break;
        }
    }
    if digits == 0 {
        return None;
    }
    // Leading zeros would make two payloads mean one number: refuse them.
    if digits > 1 && payload[0] == b'0' {
        return None;
    }
    Some(v)
}

/// Cap on the anomalies listed one by one in a verdict (all are counted).
pub const LIST_CAP: usize = 1000;

/// The streaming range check.
#[derive(Debug)]
pub struct Tally {
    expected: u64,
    seen: RangeInclusiveSet<u64>,
    /// The run being extended by the fast path, not yet in `seen`.
    run: Option<(u64, u64)>,
    /// Extra copies: value range -> number of copies beyond the first.
    extra: RangeInclusiveMap<u64, u32>,
    received: u64,
    unexpected: Vec<Unexpected>,
    unexpected_total: u64,
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

impl Tally {
    pub fn new(expected: u64) -> Tally {
        Tally {
            expected,
            seen: RangeInclusiveSet::new(),
            run: None,
            extra: RangeInclusiveMap::new(),
            received: 0,
            unexpected: Vec::new(),
            unexpected_total: 0,
        }
    }

    /// Count one message read back.
    #[inline]
    pub fn observe(&mut self, payload: &[u8], id: MsgId) {
        match parse_number(payload) {
            Some(v) if v < self.expected => self.observe_value(v),
            value => {
                self.received += 1;
                self.unexpected_total += 1;
                if self.unexpected.len() < LIST_CAP {
                    let n = payload.len().min(32);
                    self.unexpected.push(Unexpected {
                        value,
                        payload_prefix: String::from_utf8_lossy(&payload[..n]).into_owned(),
                        message_id: id,
                    });
                }
            }
        }
    }

    /// Count one number of [0, N).
    #[inline]
    pub fn observe_value(&mut self, v: u64) {
        self.received += 1;
        if let Some((s, e)) = &mut self.run {
            if v == *e + 1 {
                *e = v;
                return;
            }
            let (s, e) = (*s, *e);
            if v >= s && v <= e {
                // A copy of a number in the current run.
                self.add_extra(v, v);
                return;
            }
            self.flush_run(s, e);
        }
        self.run = Some((v, v));
    }

    fn flush_run(&mut self, s: u64, e: u64) {
        // Parts of [s, e] already seen are duplicates.
        let overlaps: Vec<(u64, u64)> = self
            .seen
            .overlapping(&(s..=e))
            .map(|r| ((*r.start()).max(s), (*r.end()).min(e)))
            .collect();
        for (a, b) in overlaps {
            self.add_extra(a, b);
        }
        self.seen.insert(s..=e);
        self.run = None;
    }

    /// One more copy of every value in [a, b].
    fn add_extra(&mut self, a: u64, b: u64) {
        let existing: Vec<(u64, u64, u32)> = self
            .extra
            .overlapping(&(a..=b))
            .map(|(r, c)| ((*r.start()).max(a), (*r.end()).min(b), *c))
            .collect();
        let mut cursor = a;
        for (s, e, c) in existing {
            if s > cursor {
                self.extra.insert(cursor..=s - 1, 1);
            }
            self.extra.insert(s..=e, c + 1);
            cursor = e.saturating_add(1);
            if e == u64::MAX {
                return;
            }
        }
        if cursor <= b {
            self.extra.insert(cursor..=b, 1);
        }
    }

    /// Messages counted so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// The anomalies found. Consumes the tally.
    pub fn finish(mut self) -> Findings {
        if let Some((s, e)) = self.run.take() {
            self.flush_run(s, e);
        }
        let mut missing = Vec::new();
        let mut missing_total = 0;
        if self.expected > 0 {
            for gap in self.seen.gaps(&(0..=self.expected - 1)) {
                let (s, e) = (*gap.start(), *gap.end());
                missing_total += e - s + 1;
                if missing.len() < LIST_CAP {
                    missing.push(Span {
                        start: s,
                        end: e + 1,
                    });
                }
            }
        }
        let mut duplicates = Vec::new();
        let mut duplicate_values = 0;
        let mut duplicate_copies = 0;
        for (r, c) in self.extra.iter() {
            let n = r.end() - r.start() + 1;
            duplicate_values += n;
            duplicate_copies += n * u64::from(*c);
            if duplicates.len() < LIST_CAP {
                duplicates.push(DupSpan {
                    start: *r.start(),
                    end: r.end() + 1,
                    copies: c + 1,
                });
            }
        }
        let distinct = self.seen.iter().map(|r| r.end() - r.start() + 1).sum();
        Findings {
            expected: self.expected,
            received: self.received,
            distinct,
            missing,
            missing_total,
            duplicates,
            duplicate_values,
            duplicate_copies,
            unexpected: self.unexpected,
            unexpected_total: self.unexpected_total,
        }
    }
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Violation,
    Inconclusive,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Pass => "pass",
            Status::Violation => "violation",
            Status::Inconclusive => "inconclusive",
        })
    }
}

/// One transaction attempt that carried an anomalous number, as the history tells it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub attempt: u64,
    pub txn: TxnId,
    pub numbers: Vec<(u64, u64)>,
    pub opened_ms: u64,
    /// When the last outcome (or resolution) was learned.
    pub ended_ms: Option<u64>,
    /// What the producer was told (None: the run ended before it learned anything).
    pub outcome: Option<Outcome>,
    pub detail: String,
    /// What a later check found, for an ambiguous attempt.
    pub resolved: Option<Outcome>,
    pub commit_tries: u32,
    pub resent: bool,
    pub withheld: bool,
    /// Faults active while the attempt was open or committing.
    pub faults: Vec<String>,
}

/// The anomalies with the attempts that carried them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attributed<T> {
    #[serde(flatten)]
    pub what: T,
    /// Attempt numbers; details in `Verdict::attempts`.
    pub attempts: Vec<u64>,
    /// One sentence: the most likely cause as the history shows it.
    pub explanation: String,
}

/// One fault as it happened, with how long commits took to flow again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultRecord {
    pub fault: String,
    pub kind: String,
    pub target: String,
    pub started_ms: u64,
    pub healed_ms: Option<u64>,
    pub action: String,
    /// From the heal to the first commit confirmed after it.
    pub recovery_ms: Option<u64>,
    /// From the last commit confirmed before the fault to the first one after its heal.
    pub commit_gap_ms: Option<u64>,
    pub heal_ok: bool,
}

/// The producer's side, summed from the history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProducerSummary {
    pub attempts: u64,
    pub committed: u64,
    pub aborted: u64,
    pub ambiguous: u64,
    pub resolved_committed: u64,
    pub resolved_aborted: u64,
    pub withheld: u64,
    pub finished: bool,
    pub complete: bool,
}

/// The verdict, as written to verdict.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub status: Status,
    /// One paragraph in plain words.
    pub summary: String,
    pub seed: Option<u64>,
    pub expected: u64,
    pub received: u64,
    pub distinct: u64,
    pub missing_total: u64,
    pub duplicate_values: u64,
    pub duplicate_copies: u64,
    pub unexpected_total: u64,
    pub missing: Vec<Attributed<Span>>,
    pub duplicates: Vec<Attributed<DuplicateEntry>>,
    pub unexpected: Vec<Unexpected>,
    /// Why the verdict is inconclusive (empty otherwise).
    pub reasons: Vec<String>,
    pub producer: Option<ProducerSummary>,
    pub attempts: Vec<AttemptRecord>,
    pub faults: Vec<FaultRecord>,
}

/// A duplicated stretch with the message ids of each copy (for the first values).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuplicateEntry {
    pub start: u64,
    pub end: u64,
    pub copies: u32,
    /// value -> message ids of every copy (located by a second read; may be empty).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub message_ids: BTreeMap<u64, Vec<MsgId>>,
}

/// What else the verdict needs to know besides the findings.
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub seed: Option<u64>,
    /// The read-back did not reach the end of every partition.
    pub readback_incomplete: Option<String>,
    /// Message ids of duplicated values (second read).
    pub duplicate_ids: HashMap<u64, Vec<MsgId>>,
}

/// What the history says, gathered in one pass. Only attempts that carried an anomalous
/// number are kept in full.
#[derive(Debug, Default)]
struct HistoryView {
    attempts: BTreeMap<u64, AttemptRecord>,
    faults: Vec<FaultRecord>,
    producer: ProducerSummary,
    saw_producer: bool,
    commits_ms: Vec<u64>,
}

fn intersects(numbers: &[(u64, u64)], anomalies: &RangeInclusiveSet<u64>) -> bool {
    numbers
        .iter()
        .any(|(s, e)| *e > *s && anomalies.overlaps(&(*s..=*e - 1)))
}

fn scan_history<I: IntoIterator<Item = Event>>(
    events: I,
    anomalies: &RangeInclusiveSet<u64>,
) -> HistoryView {
    let mut v = HistoryView::default();
    let mut open_faults: HashMap<String, usize> = HashMap::new();
    for ev in events {
        let t = ev.t_ms;
        match ev.body {
            EventBody::TxnOpened {
                attempt,
                txn,
                numbers,
                ..
            } => {
                v.producer.attempts += 1;
                if intersects(&numbers, anomalies) {
                    v.attempts.insert(
                        attempt,
                        AttemptRecord {
                            attempt,
                            txn,
                            numbers,
                            opened_ms: t,
                            ended_ms: None,
                            outcome: None,
                            detail: String::new(),
                            resolved: None,
                            commit_tries: 0,
                            resent: false,
                            withheld: false,
                            faults: Vec::new(),
                        },
                    );
                }
            }
            EventBody::CommitRequested {
                attempt, try_no, ..
            } => {
                if let Some(a) = v.attempts.get_mut(&attempt) {
                    a.commit_tries = a.commit_tries.max(try_no);
                }
            }
            EventBody::TxnOutcome {
                attempt,
                outcome,
                detail,
                ..
            } => {
                match outcome {
                    Outcome::Committed => {
                        v.producer.committed += 1;
                        v.commits_ms.push(t);
                    }
                    Outcome::Aborted => v.producer.aborted += 1,
                    Outcome::Ambiguous => v.producer.ambiguous += 1,
                }
                if let Some(a) = v.attempts.get_mut(&attempt) {
                    a.outcome = Some(outcome);
                    a.detail = detail;
                    a.ended_ms = Some(t);
                }
            }
            EventBody::TxnResolved {
                attempt,
                resolved,
                how,
                ..
            } => {
                match resolved {
                    Outcome::Committed => v.producer.resolved_committed += 1,
                    _ => v.producer.resolved_aborted += 1,
                }
                if let Some(a) = v.attempts.get_mut(&attempt) {
                    a.resolved = Some(resolved);
                    a.ended_ms = Some(t);
                    if !a.detail.is_empty() {
                        a.detail.push_str("; ");
                    }
                    a.detail.push_str(&format!("resolved {resolved} by {how}"));
                }
            }
            EventBody::ResendScheduled { attempt, .. } => {
                if let Some(a) = v.attempts.get_mut(&attempt) {
                    a.resent = true;
                }
            }
            EventBody::ResendWithheld { attempt, .. } => {
                v.producer.withheld += 1;
                if let Some(a) = v.attempts.get_mut(&attempt) {
                    a.withheld = true;
                }
            }
            EventBody::FaultStarted {
                fault,
                kind,
                target,
                action,
                ..
            } => {
                open_faults.insert(fault.clone(), v.faults.len());
                v.faults.push(FaultRecord {
                    fault,
                    kind,
                    target,
                    started_ms: t,
                    healed_ms: None,
                    action,
                    recovery_ms: None,
                    commit_gap_ms: None,
                    heal_ok: false,
                });
            }
            EventBody::FaultHealed { fault, ok, .. } => {
                if let Some(i) = open_faults.remove(&fault) {
                    v.faults[i].healed_ms = Some(t);
                    v.faults[i].heal_ok = ok;
                }
            }
            EventBody::ProducerFinished { complete, .. } => {
                v.saw_producer = true;
                v.producer.finished = true;
                v.producer.complete = complete;
            }
            _ => {}
        }
    }
    // Faults active during each attempt.
    for a in v.attempts.values_mut() {
        let end = a.ended_ms.unwrap_or(u64::MAX);
        for f in &v.faults {
            let f_end = f.healed_ms.unwrap_or(u64::MAX);
            if f.started_ms <= end && f_end >= a.opened_ms {
                a.faults.push(f.fault.clone());
            }
        }
    }
    // Recovery of each fault: commit times are in order.
    for f in v.faults.iter_mut() {
        let Some(healed) = f.healed_ms else { continue };
        let after = v.commits_ms.partition_point(|c| *c < healed);
        if let Some(first) = v.commits_ms.get(after) {
            f.recovery_ms = Some(first - healed);
            let before = v.commits_ms.partition_point(|c| *c < f.started_ms);
            if before > 0 {
                f.commit_gap_ms = Some(first - v.commits_ms[before - 1]);
            }
        }
    }
    v
}

fn explain(records: &[&AttemptRecord], missing: bool) -> String {
    if records.is_empty() {
        return if missing {
            "no transaction in the history carried these numbers (never sent)".to_string()
        } else {
            "no transaction in the history carried these numbers".to_string()
        };
    }
    let committed: Vec<_> = records
        .iter()
        .filter(|a| a.outcome == Some(Outcome::Committed))
        .collect();
    let ambiguous: Vec<_> = records
        .iter()
        .filter(|a| a.outcome == Some(Outcome::Ambiguous))
        .collect();
    let unknown: Vec<_> = records.iter().filter(|a| a.outcome.is_none()).collect();
    let faults: BTreeSet<&String> = records.iter().flat_map(|a| a.faults.iter()).collect();
    let fault_text = if faults.is_empty() {
        String::new()
    } else {
        format!(
            " (faults active: {})",
            faults.into_iter().cloned().collect::<Vec<_>>().join(", ")
        )
    };
    let ids = |v: &[&&AttemptRecord]| {
        v.iter()
            .map(|a| format!("#{} {}", a.attempt, a.txn))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if missing {
        if !committed.is_empty() {
            return format!(
                "transaction {} was confirmed committed, yet its numbers are not readable: the broker lost committed data{fault_text}",
                ids(&committed)
            );
        }
        if let Some(a) = ambiguous.iter().find(|a| a.withheld) {
            return format!(
                "the commit of transaction #{} {} was ambiguous and the resend policy withheld a resend; the commit had not applied{fault_text}",
                a.attempt, a.txn
            );
        }
        if !unknown.is_empty() {
            return format!(
                "transaction {} never learned an outcome (the producer stopped first){fault_text}",
                ids(&unknown)
            );
        }
        return format!(
            "every transaction carrying these numbers ended aborted and none was resent to completion{fault_text}"
        );
    }
    // Duplicates.
    if committed.len() + ambiguous.len() >= 2 && !ambiguous.is_empty() {
        return format!(
            "transaction {} had an ambiguous commit that in fact applied, and the numbers were sent again in {}{fault_text}",
            ids(&ambiguous),
            ids(&committed)
        );
    }
    if committed.len() >= 2 {
        return format!(
            "the numbers were committed by more than one transaction: {}{fault_text}",
            ids(&committed)
        );
    }
    let aborted: Vec<_> = records
        .iter()
        .filter(|a| a.outcome == Some(Outcome::Aborted))
        .collect();
    if !aborted.is_empty() {
        return format!(
            "transaction {} was reported aborted but its messages are readable: an abort that did not take effect, or a commit reported as failed{fault_text}",
            ids(&aborted)
        );
    }
    format!(
        "one transaction ({}) carried these numbers, yet they arrived more than once: the broker delivered a committed message twice{fault_text}",
        ids(&records.iter().collect::<Vec<_>>())
    )
}

/// Build the verdict from the findings, the history (if any) and the context. Pure.
pub fn verdict<I: IntoIterator<Item = Event>>(
    findings: Findings,
    history: Option<I>,
    ctx: &Context,
) -> Verdict {
    let mut anomalies = RangeInclusiveSet::new();
    for m in &findings.missing {
        anomalies.insert(m.start..=m.end - 1);
    }
    for d in &findings.duplicates {
        anomalies.insert(d.start..=d.end - 1);
    }
    let view = history.map(|h| scan_history(h, &anomalies));
    let records_for = |s: u64, e: u64| -> Vec<&AttemptRecord> {
        match &view {
            None => Vec::new(),
            Some(v) => v
                .attempts
                .values()
                .filter(|a| a.numbers.iter().any(|(a0, a1)| *a0 < e && s < *a1))
                .collect(),
        }
    };
    let missing: Vec<Attributed<Span>> = findings
        .missing
        .iter()
        .map(|m| {
            let recs = records_for(m.start, m.end);
            Attributed {
                what: *m,
                attempts: recs.iter().map(|a| a.attempt).collect(),
                explanation: if view.is_some() {
                    explain(&recs, true)
                } else {
                    "no producer history given".to_string()
                },
            }
        })
        .collect();
    let duplicates: Vec<Attributed<DuplicateEntry>> = findings
        .duplicates
        .iter()
        .map(|d| {
            let recs = records_for(d.start, d.end);
            let message_ids = (d.start..d.end)
                .filter_map(|v| ctx.duplicate_ids.get(&v).map(|ids| (v, ids.clone())))
                .collect();
            Attributed {
                what: DuplicateEntry {
                    start: d.start,
                    end: d.end,
                    copies: d.copies,
                    message_ids,
                },
                attempts: recs.iter().map(|a| a.attempt).collect(),
                explanation: if view.is_some() {
                    explain(&recs, false)
                } else {
                    "no producer history given".to_string()
                },
            }
        })
        .collect();

    let mut reasons = Vec::new();
    if let Some(r) = &ctx.readback_incomplete {
        reasons.push(format!("the read-back is incomplete: {r}"));
    }
    if let Some(v) = &view {
        if !v.producer.finished {
            reasons.push("the producer never finished (no producer_finished event)".to_string());
        } else if !v.producer.complete {
            reasons.push(
                "the producer stopped before every number was confirmed committed".to_string(),
            );
        }
    }
    let violation = findings.duplicate_values > 0
        || findings.unexpected_total > 0
        || (findings.missing_total > 0 && reasons.is_empty());
    let status = if violation {
        Status::Violation
    } else if !reasons.is_empty() {
        Status::Inconclusive
    } else {
        Status::Pass
    };
    let summary = summarize(&findings, status, &reasons);
    let (producer, attempts, faults) = match view {
        Some(v) => (
            Some(v.producer),
            v.attempts.into_values().collect(),
            v.faults,
        ),
        None => (None, Vec::new(), Vec::new()),
    };
    Verdict {
        status,
        summary,
        seed: ctx.seed,
        expected: findings.expected,
        received: findings.received,
        distinct: findings.distinct,
        missing_total: findings.missing_total,
        duplicate_values: findings.duplicate_values,
        duplicate_copies: findings.duplicate_copies,
        unexpected_total: findings.unexpected_total,
        missing,
        duplicates,
        unexpected: findings.unexpected,
        reasons,
        producer,
        attempts,
        faults,
    }
}

fn summarize(f: &Findings, status: Status, reasons: &[String]) -> String {
    let mut parts = Vec::new();
    match status {
        Status::Pass => {
            return format!(
                "PASS: all {} numbers of [0, {}) arrived exactly once ({} messages read).",
                f.expected, f.expected, f.received
            )
        }
        Status::Violation => parts.push("VIOLATION:".to_string()),
        Status::Inconclusive => parts.push("INCONCLUSIVE:".to_string()),
    }
    if f.missing_total > 0 {
        let first: Vec<String> = f.missing.iter().take(5).map(|s| s.to_string()).collect();
        parts.push(format!(
            "{} number(s) missing in {} range(s) (first: {}).",
            f.missing_total,
            f.missing.len(),
            first.join(", ")
        ));
    }
    if f.duplicate_values > 0 {
        let first: Vec<String> = f
            .duplicates
            .iter()
            .take(5)
            .map(|d| {
                let s = Span {
                    start: d.start,
                    end: d.end,
                };
                format!("{s} x{}", d.copies)
            })
            .collect();
        parts.push(format!(
            "{} number(s) duplicated, {} extra cop(ies) (first: {}).",
            f.duplicate_values,
            f.duplicate_copies,
            first.join(", ")
        ));
    }
    if f.unexpected_total > 0 {
        parts.push(format!(
            "{} unexpected message(s) (not a number of [0, {})).",
            f.unexpected_total, f.expected
        ));
    }
    for r in reasons {
        parts.push(format!("{r}."));
    }
    parts.push(format!(
        "{} of {} numbers arrived ({} messages read).",
        f.distinct, f.expected, f.received
    ));
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(e: u64) -> MsgId {
        MsgId {
            partition: -1,
            ledger: 1,
            entry: e,
            batch: -1,
        }
    }

    fn tally_of(expected: u64, values: &[u64]) -> Findings {
        let mut t = Tally::new(expected);
        for (i, v) in values.iter().enumerate() {
            t.observe(v.to_string().as_bytes(), id(i as u64));
        }
        t.finish()
    }

    #[test]
    fn parses_numbers_with_padding() {
        assert_eq!(parse_number(b"123"), Some(123));
        assert_eq!(parse_number(b"123 xxxxx"), Some(123));
        assert_eq!(parse_number(b"0"), Some(0));
        assert_eq!(parse_number(b"007"), None);
        assert_eq!(parse_number(b"x1"), None);
        assert_eq!(parse_number(b""), None);
        assert_eq!(parse_number(b"99999999999999999999"), None);
    }

    #[test]
    fn in_order_is_clean() {
        let v: Vec<u64> = (0..1000).collect();
        let f = tally_of(1000, &v);
        assert!(f.is_clean(), "{f:?}");
        assert_eq!(f.received, 1000);
        assert_eq!(f.distinct, 1000);
    }

    #[test]
    fn shuffled_is_clean() {
        let mut v: Vec<u64> = (0..1000).collect();
        let mut r = crate::seed::Rng::new(5);
        for i in (1..v.len()).rev() {
            let j = r.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
        let f = tally_of(1000, &v);
        assert!(f.is_clean(), "{f:?}");
    }

    #[test]
    fn gap_and_duplicate_are_named() {
        // 0..100 without 40..45, with 70 twice and 71..74 three times.
        let mut v: Vec<u64> = (0..100).filter(|n| !(40..45).contains(n)).collect();
        v.push(70);
        v.extend([71, 72, 73, 71, 72, 73]);
        let f = tally_of(100, &v);
        assert_eq!(f.missing, vec![Span { start: 40, end: 45 }]);
        assert_eq!(f.missing_total, 5);
        assert_eq!(
            f.duplicates,
            vec![
                DupSpan {
                    start: 70,
                    end: 71,
                    copies: 2
                },
                DupSpan {
                    start: 71,
                    end: 74,
                    copies: 3
                },
            ]
        );
        assert_eq!(f.duplicate_values, 4);
        assert_eq!(f.duplicate_copies, 1 + 3 * 2);
    }

    #[test]
    fn duplicate_inside_the_current_run() {
        let f = tally_of(10, &[0, 1, 2, 3, 2, 4, 5, 6, 7, 8, 9]);
        assert_eq!(
            f.duplicates,
            vec![DupSpan {
                start: 2,
                end: 3,
                copies: 2
            }]
        );
        assert_eq!(f.missing_total, 0);
    }

    #[test]
    fn missing_at_both_ends() {
        let f = tally_of(10, &[2, 3, 4, 5, 6, 7]);
        assert_eq!(
            f.missing,
            vec![Span { start: 0, end: 2 }, Span { start: 8, end: 10 }]
        );
    }

    #[test]
    fn nothing_read_is_all_missing() {
        let f = tally_of(5, &[]);
        assert_eq!(f.missing, vec![Span { start: 0, end: 5 }]);
    }

    #[test]
    fn unexpected_values_and_payloads() {
        let mut t = Tally::new(10);
        t.observe(b"3", id(0));
        t.observe(b"10", id(1));
        t.observe(b"hello", id(2));
        let f = t.finish();
        assert_eq!(f.unexpected_total, 2);
        assert_eq!(f.unexpected[0].value, Some(10));
        assert_eq!(f.unexpected[1].value, None);
        assert_eq!(f.unexpected[1].payload_prefix, "hello");
        assert_eq!(f.unexpected[1].message_id, id(2));
    }

    #[test]
    fn whole_range_duplicated_stays_one_entry() {
        let mut v: Vec<u64> = (0..10_000).collect();
        v.extend(0..10_000);
        let f = tally_of(10_000, &v);
        assert_eq!(
            f.duplicates,
            vec![DupSpan {
                start: 0,
                end: 10_000,
                copies: 2
            }]
        );
        assert_eq!(f.duplicate_copies, 10_000);
    }

    fn ev(t: u64, body: EventBody) -> Event {
        Event { t_ms: t, body }
    }

    const T1: TxnId = TxnId { most: 0, least: 1 };
    const T2: TxnId = TxnId { most: 0, least: 2 };

    fn history_19629() -> Vec<Event> {
        // Attempt 1 carries [0, 10); its commit is ambiguous while a broker restarts; the naive
        // policy resends [0, 10) as attempt 2, which commits. Both are visible.
        vec![
            ev(
                0,
                EventBody::TxnOpened {
                    attempt: 1,
                    txn: T1,
                    numbers: vec![(0, 10)],
                    resend_of: None,
                },
            ),
            ev(
                5,
                EventBody::FaultStarted {
                    fault: "restart".into(),
                    kind: "broker_restart".into(),
                    target: "broker-1".into(),
                    planned_ms: Some(5),
                    action: "docker kill".into(),
                    detail: String::new(),
                },
            ),
            ev(
                6,
                EventBody::CommitRequested {
                    attempt: 1,
                    txn: T1,
                    try_no: 1,
                },
            ),
            ev(
                16,
                EventBody::TxnOutcome {
                    attempt: 1,
                    txn: T1,
                    outcome: Outcome::Ambiguous,
                    detail: "connection lost".into(),
                },
            ),
            ev(
                16,
                EventBody::ResendScheduled {
                    attempt: 1,
                    numbers: vec![(0, 10)],
                    reason: "naive".into(),
                },
            ),
            ev(
                20,
                EventBody::FaultHealed {
                    fault: "restart".into(),
                    action: "docker start".into(),
                    ok: true,
                    detail: String::new(),
                },
            ),
            ev(
                30,
                EventBody::TxnOpened {
                    attempt: 2,
                    txn: T2,
                    numbers: vec![(0, 10)],
                    resend_of: Some(1),
                },
            ),
            ev(
                40,
                EventBody::TxnOutcome {
                    attempt: 2,
                    txn: T2,
                    outcome: Outcome::Committed,
                    detail: String::new(),
                },
            ),
            ev(
                41,
                EventBody::ProducerFinished {
                    committed: 1,
                    aborted: 0,
                    ambiguous: 1,
                    messages_committed: 10,
                    complete: true,
                    detail: String::new(),
                },
            ),
        ]
    }

    #[test]
    fn duplicates_are_attributed_to_the_ambiguous_commit_and_the_fault() {
        let mut v: Vec<u64> = (0..10).collect();
        v.extend(0..10);
        let f = tally_of(10, &v);
        let verdict = verdict(f, Some(history_19629()), &Context::default());
        assert_eq!(verdict.status, Status::Violation);
        assert_eq!(verdict.duplicates.len(), 1);
        let d = &verdict.duplicates[0];
        assert_eq!(d.attempts, vec![1, 2]);
        assert!(
            d.explanation
                .contains("ambiguous commit that in fact applied"),
            "{}",
            d.explanation
        );
        assert!(d.explanation.contains("restart"), "{}", d.explanation);
        let a1 = verdict.attempts.iter().find(|a| a.attempt == 1).unwrap();
        assert_eq!(a1.outcome, Some(Outcome::Ambiguous));
        assert!(a1.resent);
        assert_eq!(a1.faults, vec!["restart".to_string()]);
        assert_eq!(verdict.faults[0].recovery_ms, Some(20));
        assert!(
            verdict.summary.starts_with("VIOLATION"),
            "{}",
            verdict.summary
        );
    }

    #[test]
    fn clean_read_with_finished_producer_passes() {
        let f = tally_of(10, &(0..10).collect::<Vec<_>>());
        let v = verdict(f, Some(history_19629()), &Context::default());
        assert_eq!(v.status, Status::Pass);
        assert!(v.attempts.is_empty(), "only anomalous attempts are kept");
        assert_eq!(v.producer.as_ref().unwrap().committed, 1);
    }

    #[test]
    fn missing_with_unfinished_producer_is_inconclusive() {
        let f = tally_of(20, &(0..10).collect::<Vec<_>>());
        let h: Vec<Event> = history_19629()
            .into_iter()
            .filter(|e| !matches!(e.body, EventBody::ProducerFinished { .. }))
            .collect();
        let v = verdict(f, Some(h), &Context::default());
        assert_eq!(v.status, Status::Inconclusive);
        assert!(v.reasons[0].contains("never finished"));
    }

    #[test]
    fn incomplete_readback_is_inconclusive() {
        let f = tally_of(20, &(0..10).collect::<Vec<_>>());
        let ctx = Context {
            readback_incomplete: Some("timed out".into()),
            ..Context::default()
        };
        let v = verdict(f, None::<Vec<Event>>, &ctx);
        assert_eq!(v.status, Status::Inconclusive);
    }

    #[test]
    fn committed_but_missing_blames_the_broker() {
        let f = tally_of(10, &(5..10).collect::<Vec<_>>());
        let h = vec![
            ev(
                0,
                EventBody::TxnOpened {
                    attempt: 1,
                    txn: T1,
                    numbers: vec![(0, 10)],
                    resend_of: None,
                },
            ),
            ev(
                9,
                EventBody::TxnOutcome {
                    attempt: 1,
                    txn: T1,
                    outcome: Outcome::Committed,
                    detail: String::new(),
                },
            ),
            ev(
                10,
                EventBody::ProducerFinished {
                    committed: 1,
                    aborted: 0,
                    ambiguous: 0,
                    messages_committed: 10,
                    complete: true,
                    detail: String::new(),
                },
            ),
        ];
        let v = verdict(f, Some(h), &Context::default());
        assert_eq!(v.status, Status::Violation);
        assert_eq!(v.missing[0].what, Span { start: 0, end: 5 });
        assert!(
            v.missing[0].explanation.contains("lost committed data"),
            "{}",
            v.missing[0].explanation
        );
    }

    #[test]
    fn withheld_ambiguous_commit_explains_a_gap() {
        let f = tally_of(10, &(5..10).collect::<Vec<_>>());
        let h = vec![
            ev(
                0,
                EventBody::TxnOpened {
                    attempt: 1,
                    txn: T1,
                    numbers: vec![(0, 5)],
                    resend_of: None,
                },
            ),
            ev(
                9,
                EventBody::TxnOutcome {
                    attempt: 1,
                    txn: T1,
                    outcome: Outcome::Ambiguous,
                    detail: "timeout".into(),
                },
            ),
            ev(
                9,
                EventBody::ResendWithheld {
                    attempt: 1,
                    numbers: vec![(0, 5)],
                    reason: "retry-commit".into(),
                },
            ),
            ev(
                10,
                EventBody::ProducerFinished {
                    committed: 0,
                    aborted: 0,
                    ambiguous: 1,
                    messages_committed: 5,
                    complete: true,
                    detail: String::new(),
                },
            ),
        ];
        let v = verdict(f, Some(h), &Context::default());
        assert!(
            v.missing[0].explanation.contains("withheld"),
            "{}",
            v.missing[0].explanation
        );
        assert_eq!(v.producer.unwrap().withheld, 1);
    }

    #[test]
    fn message_ids_of_duplicates_are_carried() {
        let f = tally_of(3, &[0, 1, 1, 2]);
        let mut ctx = Context::default();
        ctx.duplicate_ids.insert(1, vec![id(1), id(2)]);
        let v = verdict(f, None::<Vec<Event>>, &ctx);
        assert_eq!(v.duplicates[0].what.message_ids[&1], vec![id(1), id(2)]);
        let json = serde_json::to_string(&v).unwrap();
        assert!(json.contains("\"status\":\"violation\""));
    }
}
