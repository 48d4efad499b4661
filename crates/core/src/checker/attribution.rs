//! Attribution: whose doing each missing or duplicated range is ([`Cause`]), in one sentence,
//! with one line of evidence per attempt that carried it and the broker log lines about those
//! attempts' transactions.

use std::collections::BTreeSet;

use super::findings::{DupSpan, Span};
use super::history_view::{secs, HistoryView};
use super::model::{AttemptRecord, Attributed, Cause, Context, DuplicateEntry, NO_TXN};
use crate::history::{Outcome, TxnId};

/// A missing range with the attempts that carried it, its cause, explanation and evidence.
pub(super) fn attributed_missing(
    m: Span,
    view: Option<&HistoryView>,
    ctx: &Context,
) -> Attributed<Span> {
    let recs = records_for(view, m.start, m.end);
    let evidence: Vec<String> = recs.iter().map(|a| evidence_line(a)).collect();
    let (cause, explanation) = if let Some(why) = &ctx.readback_incomplete {
        // Not read is not lost: say what held the read back, not what it would mean.
        (
            Cause::Harness,
            format!("not read: the read-back is incomplete ({why})"),
        )
    } else if view.is_none() {
        (
            Cause::Unknown,
            "no producer history given: the topic lacks these numbers, and nothing says why"
                .to_string(),
        )
    } else {
        attribute_missing(&recs, m, ctx)
    };
    Attributed {
        what: m,
        attempts: recs.iter().map(|a| a.attempt).collect(),
        cause,
        explanation,
        evidence,
        broker_log: broker_log_of(&recs, ctx),
    }
}

/// A duplicated range with the message ids of its copies (from the context), the attempts
/// that carried it, its cause, explanation and evidence.
pub(super) fn attributed_duplicate(
    d: &DupSpan,
    view: Option<&HistoryView>,
    ctx: &Context,
) -> Attributed<DuplicateEntry> {
    let recs = records_for(view, d.start, d.end);
    let message_ids = (d.start..d.end)
        .filter_map(|v| ctx.duplicate_ids.get(&v).map(|ids| (v, ids.clone())))
        .collect();
    let span = Span {
        start: d.start,
        end: d.end,
    };
    let (cause, explanation) = if view.is_some() {
        attribute_duplicate(&recs, span, ctx)
    } else {
        (
            Cause::Unknown,
            "no producer history given: the topic holds these numbers more than once, and nothing says why".to_string(),
        )
    };
    Attributed {
        what: DuplicateEntry {
            start: d.start,
            end: d.end,
            copies: d.copies,
            message_ids,
        },
        attempts: recs.iter().map(|a| a.attempt).collect(),
        cause,
        explanation,
        evidence: recs.iter().map(|a| evidence_line(a)).collect(),
        broker_log: broker_log_of(&recs, ctx),
    }
}

/// The attempts of the history that carried a number of `[s, e)` (none without a history).
fn records_for(view: Option<&HistoryView>, s: u64, e: u64) -> Vec<&AttemptRecord> {
    match view {
        None => Vec::new(),
        Some(v) => v
            .attempts
            .values()
            .filter(|a| a.numbers.iter().any(|(a0, a1)| *a0 < e && s < *a1))
            .collect(),
    }
}

/// One line of evidence per attempt: what Pulsar answered, and what the producer did then.
fn evidence_line(a: &AttemptRecord) -> String {
    let told = match a.outcome {
        Some(o) => format!("{o}"),
        None => "no outcome (the producer stopped first)".to_string(),
    };
    let mut line = format!(
        "#{} {} opened t={}, {} commit request(s): {told}",
        a.attempt,
        a.txn,
        secs(a.opened_ms),
        a.commit_tries
    );
    if let Some(t) = a.outcome_ms {
        line.push_str(&format!(" at t={}", secs(t)));
    }
    if !a.detail.is_empty() {
        line.push_str(&format!(" ({})", a.detail));
    }
    for d in &a.replies_dropped {
        line.push_str(&format!("; the harness's reply loss: {d}"));
    }
    if let Some(r) = &a.resend_reason {
        line.push_str(&format!("; resent: {r}"));
    }
    if let Some(r) = &a.withheld_reason {
        line.push_str(&format!("; resend withheld: {r}"));
    }
    if !a.faults.is_empty() {
        line.push_str(&format!("; faults active: {}", a.faults.join(", ")));
    }
    line
}

/// The broker log lines the context holds about these attempts' transactions.
fn broker_log_of(records: &[&AttemptRecord], ctx: &Context) -> Vec<crate::brokerlog::TxnLog> {
    if ctx.broker_log.is_empty() {
        return Vec::new();
    }
    let txns: BTreeSet<TxnId> = records.iter().map(|a| a.txn).collect();
    ctx.broker_log
        .iter()
        .filter(|l| txns.contains(&l.txn))
        .cloned()
        .collect()
}

/// Pulsar said so itself: confirmed committed (first answer or a later resolution).
fn confirmed_committed(a: &AttemptRecord) -> bool {
    a.outcome == Some(Outcome::Committed) || a.resolved == Some(Outcome::Committed)
}

/// Its numbers were sent again although nobody knew whether it had committed.
fn resent_after_unknown(a: &AttemptRecord) -> bool {
    a.resent
        && (a.txn.most == NO_TXN && a.outcome == Some(Outcome::Aborted)
            || a.outcome == Some(Outcome::Ambiguous) && a.resolved != Some(Outcome::Aborted)
            || a.outcome.is_none())
}

/// The attempts as explanations name them: `#1 (0,1), #2 (0,2)`.
fn ids(v: &[&AttemptRecord]) -> String {
    v.iter()
        .map(|a| format!("#{} {}", a.attempt, a.txn))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Cause, explanation and evidence of numbers missing from a complete read. Pure.
fn attribute_missing(records: &[&AttemptRecord], span: Span, ctx: &Context) -> (Cause, String) {
    if (span.start..span.end).all(|n| ctx.sabotage_skip.contains(&n)) {
        return (
            Cause::Sabotage,
            "the scenario's sabotage never sent these numbers".into(),
        );
    }
    let committed: Vec<&AttemptRecord> = records
        .iter()
        .copied()
        .filter(|a| confirmed_committed(a))
        .collect();
    if !committed.is_empty() {
        let mut why = format!(
            "transaction {} was confirmed committed by the coordinator, yet its numbers are not readable: Pulsar lost committed data",
            ids(&committed)
        );
        // What the brokers' own lines say happened to it (quoted, never a cause by itself).
        for known in committed.iter().filter_map(|a| {
            let log = ctx.broker_log.iter().find(|l| l.txn == a.txn)?;
            crate::brokerlog::known_cause(log)
        }) {
            why.push_str("; ");
            why.push_str(&known);
        }
        return (Cause::Pulsar, why);
    }
    if let Some(a) = records.iter().find(|a| a.withheld) {
        return (
            Cause::Harness,
            format!(
                "the outcome of transaction #{} {} stayed unknown and the harness withheld a resend ({}); whether Pulsar applied it is not known",
                a.attempt,
                a.txn,
                a.withheld_reason.clone().unwrap_or_default()
            ),
        );
    }
    let unknown: Vec<&AttemptRecord> = records
        .iter()
        .copied()
        .filter(|a| a.outcome.is_none())
        .collect();
    if !unknown.is_empty() {
        return (
            Cause::Harness,
            format!(
                "transaction {} never learned an outcome (the producer stopped first)",
                ids(&unknown)
            ),
        );
    }
    if records.is_empty() {
        return (
            Cause::Harness,
            "no transaction in the history carried these numbers: the harness never sent them"
                .into(),
        );
    }
    (
        Cause::Harness,
        "every transaction carrying these numbers ended without a commit and the producer did not send them again to completion".into(),
    )
}

/// Cause and explanation of numbers that arrived more than once. Pure.
fn attribute_duplicate(records: &[&AttemptRecord], span: Span, ctx: &Context) -> (Cause, String) {
    if (span.start..span.end).all(|n| ctx.sabotage_duplicate.contains(&n)) {
        return (
            Cause::Sabotage,
            "the scenario's sabotage sent these numbers twice".into(),
        );
    }
    let unknown: Vec<&AttemptRecord> = records
        .iter()
        .copied()
        .filter(|a| resent_after_unknown(a))
        .collect();
    if !unknown.is_empty() {
        let others: Vec<&AttemptRecord> = records
            .iter()
            .copied()
            .filter(|a| !resent_after_unknown(a))
            .collect();
        return (
            Cause::Ambiguity,
            format!(
                "the outcome of transaction {} could not be learned, its numbers were sent again{}, and the first commit had applied: resending after an ambiguous commit is not exactly-once",
                ids(&unknown),
                if others.is_empty() { String::new() } else { format!(" in {}", ids(&others)) }
            ),
        );
    }
    let committed: Vec<&AttemptRecord> = records
        .iter()
        .copied()
        .filter(|a| confirmed_committed(a))
        .collect();
    let aborted: Vec<&AttemptRecord> = records
        .iter()
        .copied()
        .filter(|a| {
            !confirmed_committed(a) && matches!(a.outcome, Some(Outcome::Aborted))
                || a.resolved == Some(Outcome::Aborted)
        })
        .collect();
    if !aborted.is_empty() {
        return (
            Cause::Pulsar,
            format!(
                "transaction {} ended aborted on Pulsar's word (or was never asked to commit), yet its messages are readable",
                ids(&aborted)
            ),
        );
    }
    if committed.len() >= 2 {
        return (
            Cause::Pulsar,
            format!(
                "the numbers were committed by more than one transaction ({}) with no resend of the harness's behind them",
                ids(&committed)
            ),
        );
    }
    if records.len() <= 1 {
        return (
            Cause::Pulsar,
            format!(
                "one transaction ({}) carried these numbers, yet they arrived more than once: Pulsar delivered a message twice",
                ids(records)
            ),
        );
    }
    (
        Cause::Pulsar,
        format!("the numbers arrived more than once; no resend after an unknown outcome explains it ({})", ids(records)),
    )
}

#[cfg(test)]
mod tests;
