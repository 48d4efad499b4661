//! Attribution: whose doing each missing or duplicated range is ([`Cause`]), in one sentence,
//! with one line of evidence per attempt that carried it and the broker log lines about those
//! attempts' transactions.

use std::collections::BTreeSet;

use super::findings::{DupSpan, Span, LIST_CAP};
use super::history_view::{secs, HistoryView};
use super::model::{AttemptRecord, Attributed, Cause, Context, DuplicateEntry, Graded, NO_TXN};
use crate::history::{Outcome, TxnId};

/// The attempts of the history by the numbers they carried, for finding those behind a range
/// without a pass over every attempt per range.
pub(super) struct AttemptIndex<'a> {
    /// (first number, end, attempt) for every range of every attempt, by first number.
    ranges: Vec<(u64, u64, &'a AttemptRecord)>,
    /// The longest range: one that overlaps [s, e) starts at or after s - max_len.
    max_len: u64,
}

impl<'a> AttemptIndex<'a> {
    pub(super) fn new(view: Option<&'a HistoryView>) -> AttemptIndex<'a> {
        let mut ranges: Vec<(u64, u64, &AttemptRecord)> = view
            .into_iter()
            .flat_map(|v| v.attempts.values())
            .flat_map(|a| a.numbers.iter().map(move |(s, e)| (*s, *e, a)))
            .filter(|(s, e, _)| e > s)
            .collect();
        ranges.sort_by_key(|(s, e, a)| (*s, *e, a.attempt));
        let max_len = ranges.iter().map(|(s, e, _)| e - s).max().unwrap_or(0);
        AttemptIndex { ranges, max_len }
    }

    /// The ranges that overlap [s, e).
    fn overlapping(&self, s: u64, e: u64) -> impl Iterator<Item = &(u64, u64, &'a AttemptRecord)> {
        let from = self
            .ranges
            .partition_point(|(a0, _, _)| *a0 < s.saturating_sub(self.max_len));
        self.ranges[from..]
            .iter()
            .take_while(move |(a0, _, _)| *a0 < e)
            .filter(move |(_, a1, _)| *a1 > s)
    }

    /// The attempts that carried a number of [s, e), in attempt order.
    fn records(&self, s: u64, e: u64) -> Vec<&'a AttemptRecord> {
        let mut recs: Vec<&AttemptRecord> = self.overlapping(s, e).map(|(_, _, a)| *a).collect();
        recs.sort_by_key(|a| a.attempt);
        recs.dedup_by_key(|a| a.attempt);
        recs
    }

    /// [s, e) cut where an attempt's numbers begin or end inside it: each piece was carried by
    /// the same attempts throughout.
    fn pieces(&self, s: u64, e: u64) -> Vec<(u64, u64)> {
        let mut cuts: BTreeSet<u64> = BTreeSet::from([s, e]);
        for (a0, a1, _) in self.overlapping(s, e) {
            for c in [*a0, *a1] {
                if c > s && c < e {
                    cuts.insert(c);
                }
            }
        }
        let cuts: Vec<u64> = cuts.into_iter().collect();
        cuts.windows(2).map(|w| (w[0], w[1])).collect()
    }
}

/// Grade every missing range attempt by attempt (a range the read-back found is cut where the
/// attempts behind it change, each piece attributed on its own, and neighbours of the same
/// cause joined again), counting every one in `graded` and listing at most `LIST_CAP`.
pub(super) fn grade_missing(
    spans: &[Span],
    idx: &AttemptIndex,
    view: Option<&HistoryView>,
    ctx: &Context,
    graded: &mut Graded,
) -> Vec<Attributed<Span>> {
    let mut listed = Vec::new();
    for m in spans {
        let parts = join_alike(idx.pieces(m.start, m.end), |s, e| {
            attributed_missing(Span { start: s, end: e }, idx, view, ctx)
        });
        for a in parts {
            graded.count(a.cause, a.what.len(), true);
            if listed.len() < LIST_CAP {
                listed.push(a);
            }
        }
    }
    graded.unlisted_missing = graded.missing_ranges.saturating_sub(listed.len() as u64);
    listed
}

/// As `grade_missing`, for the duplicated ranges (each piece keeps its range's copy count).
pub(super) fn grade_duplicates(
    spans: &[DupSpan],
    idx: &AttemptIndex,
    view: Option<&HistoryView>,
    ctx: &Context,
    graded: &mut Graded,
) -> Vec<Attributed<DuplicateEntry>> {
    let mut listed = Vec::new();
    let mut list = |a: Attributed<DuplicateEntry>, graded: &mut Graded| {
        graded.count(a.cause, a.what.numbers(), false);
        if listed.len() < LIST_CAP {
            listed.push(a);
        }
    };
    // The entry being built: ranges of the same transactions, cause, explanation and copies
    // are one entry even when they are not contiguous (`joins_stride`).
    let mut open: Option<Attributed<DuplicateEntry>> = None;
    for d in spans {
        let parts = join_alike(idx.pieces(d.start, d.end), |s, e| {
            let piece = DupSpan {
                start: s,
                end: e,
                copies: d.copies,
            };
            attributed_duplicate(&piece, idx, view, ctx)
        });
        for a in parts {
            match &mut open {
                Some(o) if joins_stride(o, &a, ctx) => o.what.join(a.what),
                _ => {
                    if let Some(o) = open.replace(a) {
                        list(o, graded);
                    }
                }
            }
        }
    }
    if let Some(o) = open {
        list(o, graded);
    }
    graded.unlisted_duplicates = graded.duplicate_ranges.saturating_sub(listed.len() as u64);
    listed
}

/// Whether `next` (the duplicate range after `entry`, not touching it) is one finding with
/// `entry`: in a run through an official client, the one transaction that carried both, with
/// the same cause, explanation and copy count (`client_resend`'s domain: the client library's
/// own resend, Pulsar's with deduplication on, or unknown). Numbers go to partitions by
/// `number % partitions`, so one partition's share of a transaction is every
/// `partitions`-th number; the client's resend of that partition's pending batch reads back as
/// a range per number, which is one finding, listed once. The own client's and the
/// sabotage's ranges are listed as before.
fn joins_stride(
    entry: &Attributed<DuplicateEntry>,
    next: &Attributed<DuplicateEntry>,
    ctx: &Context,
) -> bool {
    ctx.client.is_some()
        && entry.cause != Cause::Sabotage
        && entry.attempts.len() == 1
        && entry.attempts == next.attempts
        && entry.cause == next.cause
        && entry.explanation == next.explanation
        && entry.what.copies == next.what.copies
}

/// Attribute each piece, then join neighbours of the same cause when the joined range,
/// attributed as one, keeps that cause (its explanation then names every attempt behind it).
fn join_alike<T>(
    pieces: Vec<(u64, u64)>,
    attribute: impl Fn(u64, u64) -> Attributed<T>,
) -> Vec<Attributed<T>> {
    let mut out: Vec<((u64, u64), Attributed<T>)> = Vec::new();
    for (s, e) in pieces {
        let a = attribute(s, e);
        if let Some(((s0, _), last)) = out.last() {
            if last.cause == a.cause {
                let joined = attribute(*s0, e);
                if joined.cause == a.cause {
                    let s0 = *s0;
                    out.pop();
                    out.push(((s0, e), joined));
                    continue;
                }
            }
        }
        out.push(((s, e), a));
    }
    out.into_iter().map(|(_, a)| a).collect()
}

/// A missing range with the attempts that carried it, its cause, explanation and evidence.
fn attributed_missing(
    m: Span,
    idx: &AttemptIndex,
    view: Option<&HistoryView>,
    ctx: &Context,
) -> Attributed<Span> {
    let recs = idx.records(m.start, m.end);
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
fn attributed_duplicate(
    d: &DupSpan,
    idx: &AttemptIndex,
    view: Option<&HistoryView>,
    ctx: &Context,
) -> Attributed<DuplicateEntry> {
    let recs = idx.records(d.start, d.end);
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
            ranges: Vec::new(),
        },
        attempts: recs.iter().map(|a| a.attempt).collect(),
        cause,
        explanation,
        evidence: recs.iter().map(|a| evidence_line(a)).collect(),
        broker_log: broker_log_of(&recs, ctx),
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

/// What the harness saw when a commit succeeded, for the run's client: the own client sees
/// the coordinator's END_TXN answer on the wire; through an official client's driver only the
/// client's own call is seen, returning normally (what it did on the wire is its own).
fn commit_success_seen(client: Option<&str>) -> String {
    match client.and_then(crate::clients::ClientKind::parse) {
        None | Some(crate::clients::ClientKind::Own) => {
            "confirmed committed by the coordinator (END_TXN COMMIT answered success)".into()
        }
        Some(crate::clients::ClientKind::Java) => {
            "confirmed committed by the java client (its commit() completed normally)".into()
        }
        Some(crate::clients::ClientKind::Go) => {
            "confirmed committed by the go client (its Commit() returned no error)".into()
        }
    }
}

/// What showed each committed attempt committed, in words: the commit's own answer as the
/// run's client gave it (`commit_success_seen`), or the later check that resolved it (a
/// retried commit's answer, a read-back that found its messages), as the history recorded it.
fn committed_evidence(committed: &[&AttemptRecord], ctx: &Context) -> String {
    let (answered, found): (Vec<&AttemptRecord>, Vec<&AttemptRecord>) = committed
        .iter()
        .copied()
        .partition(|a| a.outcome == Some(Outcome::Committed));
    let mut parts = Vec::new();
    if !answered.is_empty() {
        parts.push(format!(
            "transaction {} was {}",
            ids(&answered),
            commit_success_seen(ctx.client.as_ref().map(|c| c.client.as_str()))
        ));
    }
    for a in found {
        parts.push(format!(
            "transaction #{} {} was found committed after an outcome it could not learn ({})",
            a.attempt,
            a.txn,
            a.resolved_how.as_deref().unwrap_or("txn_resolved")
        ));
    }
    parts.join("; ")
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
            "{}, yet its numbers are not readable: Pulsar lost committed data",
            committed_evidence(&committed, ctx)
        );
        // What the brokers' own lines say happened to it (quoted, never a cause by itself).
        for known in committed.iter().filter_map(|a| {
            let log = ctx.broker_log.iter().find(|l| l.txn == a.txn)?;
            crate::brokerlog::known_cause(log)
        }) {
            why.push_str("; ");
            why.push_str(&known);
        }
        // A coordinator's log that went back after these commits (quoted, never a cause by
        // itself: the admin API does not say which transactions the entries held).
        if let Some(step) = cursor_back_after(&committed, ctx) {
            why.push_str("; after these commits, ");
            why.push_str(&step.to_string());
            why.push_str(" (see docs/findings/committed-then-aborted-after-coordinator-kills.md)");
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
    if let Some(why) = redelivery_lost(records, ctx) {
        return (Cause::Pulsar, why);
    }
    (
        Cause::Harness,
        "every transaction carrying these numbers ended without a commit and the producer did not send them again to completion".into(),
    )
}

/// The first transaction-log cursor seen going back after every one of these commits was
/// confirmed, with entries unacknowledged again.
fn cursor_back_after<'a>(
    committed: &[&AttemptRecord],
    ctx: &'a Context,
) -> Option<&'a crate::txnlog::CursorStepBack> {
    let last_commit = committed.iter().filter_map(|a| a.outcome_ms).max()?;
    ctx.txnlog_steps
        .iter()
        .find(|s| s.after_ms > last_commit && !s.reopened.is_empty())
}

/// A transform's input lost by Pulsar: every transaction that acknowledged it ended aborted on
/// Pulsar's word (an aborted transaction's acknowledgements are released, so the subscription
/// must deliver the input again), no transaction committed it, and the admin API reported the
/// input subscription's backlog 0 on every partition: Pulsar treats the input as consumed, yet
/// its output was never committed. `None` for the producer's workload, or when any of that is
/// not shown.
fn redelivery_lost(records: &[&AttemptRecord], ctx: &Context) -> Option<String> {
    let evidence = ctx.consumer.as_ref()?;
    let aborted = |a: &&AttemptRecord| {
        a.resolved == Some(Outcome::Aborted)
            || (a.outcome == Some(Outcome::Aborted) && a.resolved.is_none())
    };
    if records.is_empty() || !records.iter().all(aborted) {
        return None;
    }
    let drained =
        !evidence.backlog.is_empty() && evidence.backlog.iter().all(|b| b.backlog == Some(0));
    if !drained {
        return None;
    }
    let quoted: Vec<&str> = evidence
        .backlog
        .iter()
        .take(4)
        .map(|b| b.evidence.as_str())
        .collect();
    Some(format!(
        "the inputs of these outputs were acknowledged only in transaction(s) {} that ended aborted on Pulsar's word, so subscription {} had to deliver them again; no transaction took them again, and the admin API reports its precise backlog 0 on every partition ({}): the cursor treats the inputs as acknowledged although only aborted transactions acknowledged them (unless the namespace expires messages by TTL or evicts backlog, which the harness's clusters never do)",
        ids(records),
        evidence.subscription,
        quoted.join("; ")
    ))
}

/// One transaction of an official client's run carried numbers that arrived twice: the
/// client library's own resend of a pending batch after a reconnect, kept twice by a broker
/// whose deduplication was off, or Pulsar's when it was on. Without the broker's word on
/// deduplication nothing is claimed (the harness's gap).
/// One transaction wrote every copy: the harness's record, or (`writer`) the copies' own
/// metadata when the harness sent the numbers in other transactions too.
fn client_resend(
    c: &super::model::ClientContext,
    records: &[&AttemptRecord],
    writer: Option<&Writer>,
) -> (Cause, String) {
    let (one, sent) = match writer {
        None => (
            format!("one transaction ({}) carried these numbers", ids(records)),
            " and the harness sent them once",
        ),
        Some(w) => (w.words(), ""),
    };
    match c.deduplication {
        Some(false) => (
            Cause::ClientResend,
            format!(
                "{one}{sent}, yet they arrived twice: the {} client's producer sends its pending messages again after a reconnect, and with deduplication off on the topic ({}) the broker keeps both copies; that is this configuration's documented behaviour, not a Pulsar bug (turn on `deduplication: true`)",
                c.client,
                c.evidence
            ),
        ),
        Some(true) => (
            Cause::Pulsar,
            format!(
                "{one}, yet they arrived more than once although deduplication was on for the topic ({}): Pulsar delivered a message twice",
                c.evidence
            ),
        ),
        None => (
            Cause::Harness,
            format!(
                "{one}, yet they arrived twice through the {} client, which may send pending messages again after a reconnect; the broker did not say whether deduplication was on ({}), so nothing is claimed about Pulsar",
                c.client,
                c.evidence
            ),
        ),
    }
}

/// The transactions that wrote a duplicated span's copies, by the copies' own metadata, when
/// that narrows what the history says: every copy read of every number names a transaction,
/// each named one is an attempt that carried the numbers, and some attempt that carried them
/// is named by none (its copies were not read: a resend's earlier attempt, aborted or not).
struct Writer<'a> {
    named: Vec<&'a AttemptRecord>,
    unnamed: Vec<&'a AttemptRecord>,
}

impl Writer<'_> {
    fn words(&self) -> String {
        format!(
            "every copy read of these numbers names transaction {} in its metadata (the harness also sent them in {}, none of whose copies was read)",
            ids(&self.named),
            ids(&self.unnamed)
        )
    }
}

fn writers<'a>(records: &[&'a AttemptRecord], span: Span, ctx: &Context) -> Option<Writer<'a>> {
    let md = ctx.metadata_txns.as_ref()?;
    let mut named_txns: BTreeSet<TxnId> = BTreeSet::new();
    for v in span.start..span.end {
        for t in md.get(&v)? {
            named_txns.insert((*t)?);
        }
    }
    let (named, unnamed): (Vec<&AttemptRecord>, Vec<&AttemptRecord>) =
        records.iter().partition(|a| named_txns.contains(&a.txn));
    let all_known = named_txns.iter().all(|t| named.iter().any(|a| a.txn == *t));
    (all_known && !named.is_empty() && !unnamed.is_empty()).then_some(Writer { named, unnamed })
}

/// Numbers of transactions an official client aborted are readable, and the read-back's record
/// of the copies' metadata shows why: for every number of `span`, some copy names no
/// transaction and none names an aborted one. The broker filters an aborted transaction's
/// messages by the transaction their metadata names, so a message whose metadata names none is
/// delivered as non-transactional: the client did not put the transaction it sent them in
/// into the metadata. None (Pulsar's, as before) for the own client, without the record, or
/// when a copy names an aborted transaction (then the broker delivered an aborted message).
fn client_no_txn_metadata(aborted: &[&AttemptRecord], span: Span, ctx: &Context) -> Option<String> {
    use crate::clients::ClientKind;
    let c = ctx.client.as_ref()?;
    if !matches!(
        ClientKind::parse(&c.client),
        Some(ClientKind::Java | ClientKind::Go)
    ) {
        return None;
    }
    let md = ctx.metadata_txns.as_ref()?;
    let named: BTreeSet<TxnId> = aborted.iter().map(|a| a.txn).collect();
    let (mut copies, mut nameless) = (0usize, 0usize);
    for v in span.start..span.end {
        let seen = md.get(&v)?;
        if seen.iter().flatten().any(|t| named.contains(t)) || !seen.iter().any(Option::is_none) {
            return None;
        }
        copies += seen.len();
        nameless += seen.iter().filter(|t| t.is_none()).count();
    }
    let what = if nameless == copies {
        format!(
            "all {copies} copies read of these numbers carry no transaction id in their metadata"
        )
    } else {
        format!("{nameless} of the {copies} copies read of these numbers carry no transaction id in their metadata and none names the aborted transaction")
    };
    let issue = match ClientKind::parse(&c.client) {
        Some(ClientKind::Go) => " (apache/pulsar-client-go#1498)",
        _ => "",
    };
    Some(format!(
        "transaction {} ended aborted through the {} client (or was never asked to commit), yet its messages are readable: {what}, although the {} client sent them in transaction {}; the broker delivers a message whose metadata names no transaction as non-transactional{issue}: a failure of the client, not of Pulsar",
        ids(aborted),
        c.client,
        c.client,
        aborted
            .iter()
            .map(|a| a.txn.to_string())
            .collect::<Vec<_>>()
            .join(", "),
    ))
}

/// Cause and explanation of numbers that arrived more than once. Pure.
fn attribute_duplicate(records: &[&AttemptRecord], span: Span, ctx: &Context) -> (Cause, String) {
    if (span.start..span.end).all(|n| ctx.sabotage_duplicate.contains(&n)) {
        return (
            Cause::Sabotage,
            "the scenario's sabotage sent these numbers twice".into(),
        );
    }
    if records.is_empty() {
        // Nothing of this run's wrote them: another writer, or a history of another topic.
        return (
            Cause::Harness,
            "no transaction in the history carried these numbers, so this run did not write them: another writer on the topic, a history that is not this topic's, or a history that lost the records of the attempts that did; nothing is claimed about Pulsar".into(),
        );
    }
    // The copies' metadata name the transactions that wrote them: an attempt none of them
    // names (an aborted first attempt, an ambiguous one whose commit did not apply) wrote
    // nothing that was read, and explains nothing.
    let writer = writers(records, span, ctx);
    let records: &[&AttemptRecord] = match &writer {
        Some(w) => &w.named,
        None => records,
    };
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
        if let Some(why) = client_no_txn_metadata(&aborted, span, ctx) {
            return (Cause::ClientNoTxnMetadata, why);
        }
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
        if let Some(c) = &ctx.client {
            return client_resend(c, records, writer.as_ref());
        }
        let one = match &writer {
            Some(w) => w.words(),
            None => format!("one transaction ({}) carried these numbers", ids(records)),
        };
        return (
            Cause::Pulsar,
            format!("{one}, yet they arrived more than once: Pulsar delivered a message twice"),
        );
    }
    (
        Cause::Pulsar,
        format!("the numbers arrived more than once; no resend after an unknown outcome explains it ({})", ids(records)),
    )
}

#[cfg(test)]
mod tests;
