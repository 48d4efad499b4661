//! The verdict: [`verdict`] attributes the findings with the history and the context, grades
//! them (docs/grading.md) and says the result in one paragraph.

use std::fmt;

use rangemap::RangeInclusiveSet;

use super::attribution::{grade_duplicates, grade_missing, AttemptIndex};
use super::findings::{Findings, Span, LIST_CAP};
use super::history_view::{scan_history, HistoryView};
use super::model::{Cause, Context, Graded, StallFinding, Status, Verdict};
use crate::history::Event;

/// Build the verdict from the findings, the history (if any) and the context. Pure.
///
/// Every range the findings list is graded (give it the uncapped findings: `verdict.json`
/// lists at most `LIST_CAP` of each kind and counts the rest in `graded`).
pub fn verdict<I, E>(mut findings: Findings, history: Option<I>, ctx: &Context) -> Verdict
where
    I: IntoIterator<Item = Result<Event, E>>,
    E: fmt::Display,
{
    let anomalies = anomalies(&findings);
    let mut view = history.map(|h| scan_history(h, &anomalies));
    let mut graded = Graded::default();
    let (missing, duplicates) = {
        let idx = AttemptIndex::new(view.as_ref());
        (
            grade_missing(&findings.missing, &idx, view.as_ref(), ctx, &mut graded),
            grade_duplicates(&findings.duplicates, &idx, view.as_ref(), ctx, &mut graded),
        )
    };

    let client_answers = view.as_ref().and_then(|v| v.answers.table(&findings, ctx));
    let mut reasons = Vec::new();
    let mut notes = Vec::new();
    notes.extend(unreadable_note(view.as_ref()));
    unfinished_reasons(view.as_ref(), ctx, &mut reasons);
    let stall = stall_finding(view.as_ref(), ctx, &mut reasons, &mut notes);
    let stuck_reads = stuck_finding(ctx, &mut notes);
    let consumer = consumer_section(view.as_mut(), ctx, &findings, &mut reasons, &mut notes);
    let mut status = status(&findings, &graded, ctx, &mut reasons);
    let consumer_findings = consumer.as_ref().map_or(&[][..], |c| &c.findings[..]);
    if !consumer_findings.is_empty() {
        status = Status::Violation;
    }
    // Without a history nothing says who wrote what: the range check alone is a mismatch,
    // not a finding about Pulsar.
    if status == Status::Violation && view.is_none() {
        status = Status::Mismatch;
    }
    if graded.unlisted_missing + graded.unlisted_duplicates > 0 {
        notes.push(format!(
            "verdict.json lists the first {LIST_CAP} ranges of each kind; {} more missing and {} more duplicated range(s) were graded the same way and are counted in `graded` ({})",
            graded.unlisted_missing,
            graded.unlisted_duplicates,
            cause_counts(&graded)
        ));
    }
    // Faults planned and none fired: nothing was tested under faults (`faults_fired`).
    let faults_summary = view.as_ref().and_then(|v| {
        let planned = ctx.planned_faults.as_deref()?;
        Some(super::faults_fired::FaultsSummary::of(planned, &v.fates))
    });
    let faults_sentence = faults_summary
        .as_ref()
        .map(|f| f.grade(&mut status, &mut reasons, &mut notes))
        .unwrap_or_default();
    let mut summary = summary(&findings, status, &reasons, &notes, &graded);
    for f in consumer_findings {
        summary.push_str(&format!(" Consumer: {f}."));
    }
    if let (Status::Stuck, Some(s)) = (status, &stuck_reads) {
        summary = stuck_summary(&findings, s, &reasons, &notes);
    }
    summary.push_str(&faults_sentence);
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
        graded,
        unexpected: {
            findings.unexpected.truncate(LIST_CAP);
            findings.unexpected
        },
        reasons,
        notes,
        producer,
        attempts,
        faults,
        stall,
        stuck_reads,
        consumer,
        faults_summary,
        client_answers,
    }
}

/// A transform run's consumer section (None for the producer's workload): the history's
/// counts and probes, the context's backlog, judged (`ConsumerSummary::judge`).
fn consumer_section(
    view: Option<&mut HistoryView>,
    ctx: &Context,
    findings: &Findings,
    reasons: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Option<super::consumer::ConsumerSummary> {
    let (mut c, finished) = match view {
        Some(v) => (std::mem::take(&mut v.consumer), v.producer.complete),
        None => (Default::default(), false),
    };
    if ctx.consumer.is_none() && c.transactions == 0 && c.probes == 0 {
        return None;
    }
    c.judge(
        ctx.consumer.as_ref(),
        finished,
        findings.missing_total == 0,
        reasons,
        notes,
    );
    Some(c)
}

/// The context's stuck reads; a note when Pulsar's answers do not show what held the read
/// (then nothing is claimed about Pulsar: the run stays inconclusive).
fn stuck_finding(ctx: &Context, notes: &mut Vec<String>) -> Option<crate::stuck::StuckReads> {
    let s = ctx.stuck_reads.clone()?;
    let legit = s.open_within_timeout();
    if !s.has_evidence() && !legit.is_empty() {
        notes.push(format!(
            "the read-back was held by transaction(s) still open within their timeout ({}): another client's, or a settle_timeout shorter than the transactions' timeout; no liveness finding is made",
            legit.join(", ")
        ));
    } else if !s.has_evidence() {
        let errors: Vec<&str> = s
            .partitions
            .iter()
            .flat_map(|p| p.errors.iter().map(String::as_str))
            .take(3)
            .collect();
        notes.push(format!(
            "Pulsar's admin API did not show what held the read-back, so no liveness finding is made{}",
            if errors.is_empty() {
                String::new()
            } else {
                format!(" ({})", errors.join("; "))
            }
        ));
    }
    Some(s)
}

/// The paragraph of a stuck verdict: the liveness finding first, then the safety check, with
/// the numbers not read summarised per partition rather than listed.
fn stuck_summary(
    f: &Findings,
    s: &crate::stuck::StuckReads,
    reasons: &[String],
    notes: &[String],
) -> String {
    let mut out = format!("STUCK (liveness): {}.", s.describe());
    if let Some(c) = &s.likely_cause {
        out.push_str(&format!(" Likely cause: {c}."));
    }
    let complete = reasons.is_empty();
    if complete && f.missing_total == 0 && f.duplicate_values == 0 {
        out.push_str(&format!(
            " Safety: on the complete read, all {} numbers of [0, {}) arrived exactly once ({} messages read).",
            f.expected, f.expected, f.received
        ));
    } else {
        out.push_str(&format!(
            " Safety undecided: {} of {} numbers read",
            f.distinct, f.expected
        ));
        if f.missing_total > 0 {
            out.push_str(&format!(
                ", {} not read (behind the partitions above)",
                f.missing_total
            ));
        }
        out.push('.');
        for r in reasons
            .iter()
            .filter(|r| !r.starts_with("the read-back is incomplete"))
        {
            out.push_str(&format!(" {r}."));
        }
    }
    for n in notes {
        out.push_str(&format!(" Note: {n}."));
    }
    out
}

/// The numbers missing or duplicated: the history scan keeps in full the attempts that
/// carried one.
fn anomalies(findings: &Findings) -> RangeInclusiveSet<u64> {
    let mut anomalies = RangeInclusiveSet::new();
    for m in &findings.missing {
        anomalies.insert(m.start..=m.end - 1);
    }
    for d in &findings.duplicates {
        anomalies.insert(d.start..=d.end - 1);
    }
    anomalies
}

/// A note when history lines could not be read.
fn unreadable_note(view: Option<&HistoryView>) -> Option<String> {
    let v = view?;
    (v.unreadable > 0).then(|| {
        format!(
            "{} history line(s) could not be read (first: {}); attribution may be incomplete",
            v.unreadable,
            v.first_error.clone().unwrap_or_default()
        )
    })
}

/// The reasons the run did not finish its job: a read-back that stopped short, a producer
/// that never finished or stopped before every number was committed.
fn unfinished_reasons(view: Option<&HistoryView>, ctx: &Context, reasons: &mut Vec<String>) {
    if let Some(r) = &ctx.readback_incomplete {
        reasons.push(format!("the read-back is incomplete: {r}"));
    }
    if let Some(v) = view {
        if !v.producer.finished {
            reasons.push("the producer never finished (no producer_finished event)".to_string());
        } else if !v.producer.complete {
            reasons.push(match &v.producer.stopped_because {
                Some(why) => format!(
                    "the producer stopped before every number was confirmed committed ({why})"
                ),
                None => {
                    "the producer stopped before every number was confirmed committed".to_string()
                }
            });
        }
    }
}

/// The history's stall with the broker lines and known cause the context gathered: a reason
/// (what stalled, and the most frequent failure meanwhile) and notes (the first broker lines,
/// the likely cause).
fn stall_finding(
    view: Option<&HistoryView>,
    ctx: &Context,
    reasons: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Option<StallFinding> {
    let mut stall = view.and_then(|v| v.stall.clone());
    if let Some(st) = &mut stall {
        st.broker_log = ctx.stall_log.clone();
        if ctx.stall_cause.is_some() {
            st.likely_cause = ctx.stall_cause.clone();
        }
        let mut why = format!(
            "the run stalled: nothing committed for {:.0}s (from t={:.1}s) with no fault active, so the harness stopped the producer; {} attempt(s) failed meanwhile",
            (st.detected_ms.saturating_sub(st.since_ms)) as f64 / 1000.0,
            st.since_ms as f64 / 1000.0,
            st.failed_attempts
        );
        if let Some((n, d)) = st.failures.first() {
            why.push_str(&format!(", {n} with: {d}"));
        }
        reasons.push(why);
        for e in st.broker_log.iter().take(3) {
            notes.push(format!(
                "{} logged {} {}x about {} from {} to {}: {}",
                e.node, e.level, e.count, e.topic, e.first, e.last, e.message
            ));
        }
        if let Some(c) = &st.likely_cause {
            notes.push(format!("likely cause: {c}"));
        }
        st.partitions = ctx.stall_partitions.clone();
        for p in &st.partitions {
            notes.push(format!("at the stall, {}", p.describe()));
        }
    }
    stall
}

/// The status, given the attributed anomalies and the reasons found so far (to which numbers
/// missing by the harness's own doing add one).
fn status(
    findings: &Findings,
    graded: &Graded,
    ctx: &Context,
    reasons: &mut Vec<String>,
) -> Status {
    // Grading (docs/grading.md): a violation needs an anomaly that Pulsar's
    // own answers contradict, an ambiguous commit resent, a sabotage, or, with no history to
    // ask, the range check alone. Anomalies of the harness's own making only make it
    // inconclusive, and say so.
    let harness_missing: u64 = graded
        .by_cause
        .get(&Cause::Harness)
        .map_or(0, |c| c.missing_numbers);
    if harness_missing > 0 && ctx.readback_incomplete.is_none() {
        reasons.push(format!(
            "{harness_missing} number(s) are missing for reasons of the harness's own, not Pulsar's (see each range's explanation)"
        ));
    }
    // A duplicate no evidence assigns (another writer on the topic; an official client's copy
    // while the broker did not say whether deduplication was on) is not a pass either.
    let harness_duplicated: u64 = graded
        .by_cause
        .get(&Cause::Harness)
        .map_or(0, |c| c.numbers - c.missing_numbers);
    if harness_duplicated > 0 {
        reasons.push(format!(
            "{harness_duplicated} number(s) arrived more than once with no evidence of whose doing it is (see each range's explanation)"
        ));
    }
    // Every range the findings hold is graded; findings whose lists were capped before they
    // came here (an old caller) fall back to the range check for what was not listed.
    let violation = findings.unexpected_total > 0
        || graded.any_violation()
        || (findings.duplicate_values > 0 && graded.duplicate_ranges == 0)
        || (findings.missing_total > 0 && graded.missing_ranges == 0 && reasons.is_empty());
    let stuck = ctx
        .stuck_reads
        .as_ref()
        .is_some_and(crate::stuck::StuckReads::has_evidence);
    if violation {
        Status::Violation
    } else if stuck {
        Status::Stuck
    } else if !reasons.is_empty() {
        Status::Inconclusive
    } else {
        Status::Pass
    }
}

/// The verdict's paragraph: the findings and reasons, then the causes (unless it passed) and
/// the notes.
fn summary(
    findings: &Findings,
    status: Status,
    reasons: &[String],
    notes: &[String],
    graded: &Graded,
) -> String {
    let mut summary = summarize(findings, status, reasons);
    let causes = cause_counts(graded);
    if !causes.is_empty() && status != Status::Pass {
        summary.push_str(&format!(" Causes: {causes}."));
    }
    for n in notes {
        summary.push_str(&format!(" Note: {n}."));
    }
    summary
}

/// "2 range(s) pulsar, 1 range(s) ambiguity": how many graded anomalies have each cause.
fn cause_counts(graded: &Graded) -> String {
    graded
        .by_cause
        .iter()
        .map(|(c, k)| format!("{} range(s) {c}", k.ranges))
        .collect::<Vec<_>>()
        .join(", ")
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
        Status::Stuck => parts.push("STUCK:".to_string()),
        Status::Mismatch => parts.push(format!(
            "MISMATCH: the topic is not exactly [0, {}); with no producer history (verify --history) the cause cannot be known: it may be Pulsar's or the writing application's own (a resend, a skipped number).",
            f.expected
        )),
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
mod tests;
#[cfg(test)]
mod tests_grading;
