//! The Stuck reads section of `report.html`: when the read-back was held after every fault
//! healed, one panel per held partition with Pulsar's own numbers (the transaction buffer's
//! state, the transactions it reports open, `maxReadPosition`, the ledger's
//! `lastConfirmedEntry`, the entries behind), the coordinators' transactions naming it, the
//! brokers' lines about it with their place in the saved logs, and what asking failed with;
//! then the known cause the evidence matches and a table of the remedies tried. A stall gets
//! its own section with the same panels, for every partition as Pulsar reported it once the
//! stall was detected. Every text from Pulsar goes through `esc`.

use std::fmt::Write as _;

use super::anomalies::log_lines_html;
use super::fmt::{esc, fmt_dur, fmt_n, fmt_t};
use crate::checker::Verdict;
use crate::stuck::{RemedyRecord, StuckPartition, StuckReads, StuckTxn};

/// `21:265`, or "not reported".
fn position(p: Option<(u64, i64)>) -> String {
    p.map_or_else(|| "not reported".to_string(), |(l, e)| format!("{l}:{e}"))
}

/// A partition's name without its tenant and namespace.
fn short(partition: &str) -> &str {
    partition.rsplit('/').next().unwrap_or(partition)
}

/// The section, when the verdict has a stuck read.
pub(super) fn stuck_section(h: &mut String, v: &Verdict) {
    let Some(s) = &v.stuck_reads else {
        return;
    };
    h.push_str("<h2 id=\"stuck\">Stuck reads</h2>\n");
    summary(h, s);
    for (i, p) in s.partitions.iter().enumerate() {
        partition_panel(h, "stuck", i, p);
    }
    if let Some(c) = &s.likely_cause {
        w!(
            h,
            "<p class=\"likely-cause\"><b>Likely cause:</b> {}</p>\n",
            esc(c)
        );
    }
    remedies_table(h, &s.remedies);
}

/// The section, when the run stalled: how long nothing committed, what the producer was told,
/// the brokers' repeated lines, the likely cause, and a panel per partition as Pulsar reported
/// it at the stall.
pub(super) fn stall_section(h: &mut String, v: &Verdict) {
    let Some(st) = &v.stall else {
        return;
    };
    h.push_str("<h2 id=\"stall\">Stall</h2>\n");
    w!(
        h,
        "<p>Nothing committed from {} to {} with no fault active; the harness stopped the producer. {} attempt(s) failed meanwhile.</p>\n",
        esc(&fmt_t(st.since_ms)),
        esc(&fmt_t(st.detected_ms)),
        fmt_n(st.failed_attempts)
    );
    if !st.failures.is_empty() {
        h.push_str("<ul class=\"stall-failures\">");
        for (n, d) in &st.failures {
            w!(h, "<li>{}x: {}</li>", fmt_n(*n), esc(d));
        }
        h.push_str("</ul>\n");
    }
    if !st.broker_log.is_empty() {
        h.push_str("<table><thead><tr><th>node</th><th>level</th><th class=\"num\">times</th><th>about</th><th>first</th><th>last</th><th>line</th></tr></thead><tbody>");
        for e in &st.broker_log {
            w!(
                h,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&e.node),
                esc(&e.level),
                fmt_n(e.count),
                esc(&e.topic),
                esc(&e.first),
                esc(&e.last),
                esc(&e.message)
            );
        }
        h.push_str("</tbody></table>\n");
    }
    if let Some(c) = &st.likely_cause {
        w!(
            h,
            "<p class=\"likely-cause\"><b>Likely cause:</b> {}</p>\n",
            esc(c)
        );
    }
    if !st.partitions.is_empty() {
        h.push_str(
            "<p>What Pulsar reported about each partition once the stall was detected:</p>\n",
        );
    }
    for (i, p) in st.partitions.iter().enumerate() {
        partition_panel(h, "stall", i, p);
    }
}

/// When the read was held, when the harness gave up, and what healed it.
fn summary(h: &mut String, s: &StuckReads) {
    w!(
        h,
        "<p>The read-back was held from {}; the harness gave up waiting at {}, {} s after every fault healed. ",
        esc(&fmt_t(s.since_ms)),
        esc(&fmt_t(s.detected_ms)),
        s.waited_s
    );
    match s.healed_by() {
        Some(r) => w!(
            h,
            "Remedy <code>{}</code> healed it in {}.",
            esc(r.remedy.name()),
            esc(&fmt_dur(r.elapsed_ms))
        ),
        None if s.remedies.is_empty() => h.push_str("No remedy was tried."),
        None => h.push_str("No remedy healed it."),
    }
    h.push_str("</p>\n");
    if !s.has_evidence() {
        h.push_str("<p class=\"note\">Pulsar's answers do not show a partition held (no buffer reports transactions open behind its ledger's end, no coordinator reports a transaction naming it still committing or aborting), so this is not graded as a liveness finding.</p>\n");
    }
}

/// One held partition: its numbers, the transactions naming it, the brokers' lines, errors.
fn partition_panel(h: &mut String, id: &str, i: usize, p: &StuckPartition) {
    let what = if p.index >= 0 {
        format!("Partition {}", p.index)
    } else {
        "Topic".to_string()
    };
    w!(
        h,
        "<div class=\"stuck-partition\" id=\"{id}-{i}\"><h3>{what} <code>{}</code></h3>",
        esc(&p.partition)
    );
    if !p.held.is_empty() {
        w!(h, "<p class=\"note\">{}</p>", esc(&p.held));
    }
    facts_table(h, p);
    txns_table(h, p);
    if !p.broker_lines.is_empty() {
        w!(
            h,
            "<div class=\"brokerlog\"><div class=\"label\">Broker WARN/ERROR lines about it ({})</div>{}</div>",
            p.broker_lines.len(),
            log_lines_html(&p.broker_lines)
        );
    }
    if !p.errors.is_empty() {
        h.push_str("<p class=\"note\">Asking Pulsar failed:</p><ul class=\"errors\">");
        for e in &p.errors {
            w!(h, "<li>{}</li>", esc(e));
        }
        h.push_str("</ul>");
    }
    h.push_str("</div>\n");
}

/// Pulsar's numbers about the partition, as `describe` words them.
fn facts_table(h: &mut String, p: &StuckPartition) {
    let not = || "not reported".to_string();
    let facts: [(&str, String); 5] = [
        ("buffer state", p.buffer_state.clone().unwrap_or_else(not)),
        ("transactions open", p.open.map_or_else(not, fmt_n)),
        ("maxReadPosition", position(p.max_read)),
        ("lastConfirmedEntry", position(p.last_confirmed)),
        ("entries behind", p.entries_behind.map_or_else(not, fmt_n)),
    ];
    h.push_str("<table class=\"facts\"><tbody>");
    for (k, val) in facts {
        w!(h, "<tr><th>{k}</th><td>{}</td></tr>", esc(&val));
    }
    h.push_str("</tbody></table>");
}

/// The coordinators' transactions that name the partition.
fn txns_table(h: &mut String, p: &StuckPartition) {
    if p.txns.is_empty() {
        h.push_str("<p class=\"empty-note\">No coordinator reports a transaction naming it.</p>");
        return;
    }
    h.push_str("<h4>Transactions the coordinators report naming it</h4><table><thead><tr><th>txn</th><th>status</th><th class=\"num\">age</th><th>partitions it wrote to (aborted: whether that partition's buffer ended it)</th></tr></thead><tbody>");
    for t in &p.txns {
        w!(
            h,
            "<tr><td><code>{}</code></td><td><span class=\"pill {}\">{}</span></td><td class=\"num\">{}</td><td class=\"wrap\">{}</td></tr>",
            esc(&t.txn),
            if t.ending() { "stuck" } else { "other" },
            esc(&t.status),
            t.age_ms.map_or_else(|| "-".to_string(), fmt_dur),
            txn_partitions(t, &p.partition)
        );
    }
    h.push_str("</tbody></table>");
}

/// `t-partition-0 aborted: false` per partition, the held one in bold.
fn txn_partitions(t: &StuckTxn, held: &str) -> String {
    let parts: Vec<String> = t
        .partitions
        .iter()
        .map(|tp| {
            let mut cell = format!("<code>{}</code>", esc(short(&tp.partition)));
            if let Some(a) = tp.aborted {
                w!(cell, " aborted: {a}");
            }
            if tp.partition == held {
                format!("<b>{cell}</b>")
            } else {
                cell
            }
        })
        .collect();
    if parts.is_empty() {
        "-".to_string()
    } else {
        parts.join("<br>")
    }
}

/// The remedies tried, in order, with Pulsar's answers and whether the read was healed.
fn remedies_table(h: &mut String, remedies: &[RemedyRecord]) {
    h.push_str("<h3>Remedies tried</h3>\n");
    if remedies.is_empty() {
        h.push_str("<p class=\"empty-note\">None.</p>\n");
        return;
    }
    h.push_str("<table class=\"remedies\"><thead><tr><th>remedy</th><th class=\"num\">at</th><th>targets</th><th>answers</th><th>result</th><th class=\"num\">elapsed</th></tr></thead><tbody>");
    for r in remedies {
        let list = |xs: &[String]| {
            if xs.is_empty() {
                "-".to_string()
            } else {
                xs.iter().map(|x| esc(x)).collect::<Vec<_>>().join("<br>")
            }
        };
        let result = if r.healed {
            "<span class=\"pill ok\">healed</span>".to_string()
        } else if r.still_held.is_empty() {
            "<span class=\"pill held\">still held</span>".to_string()
        } else {
            format!(
                "<span class=\"pill held\">still held</span><br>{}",
                esc(&r.still_held)
            )
        };
        w!(
            h,
            "<tr data-remedy=\"{}\"><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"wrap\">{}</td><td class=\"wrap\">{}</td><td>{result}</td><td class=\"num\">{}</td></tr>",
            esc(r.remedy.name()),
            esc(r.remedy.name()),
            esc(&fmt_t(r.at_ms)),
            list(&r.targets),
            list(&r.answers),
            esc(&fmt_dur(r.elapsed_ms))
        );
    }
    h.push_str("</tbody></table>\n");
}

/// The sample stuck read is shared with the page's tests (`report/tests.rs`).
#[cfg(test)]
pub(super) mod tests;
