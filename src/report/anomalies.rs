//! The Anomalies section of `report.html`: one row per missing or duplicated range with the
//! attempts that carried it, the checker's cause and explanation, its evidence, and the
//! broker log lines about the transaction (quoted in full once per transaction, linked from
//! later rows); then the messages whose payload is no number the run expected.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::fmt::{esc, fmt_n};
use super::TABLE_CAP;
use crate::brokerlog::{BrokerLine, TxnLog};
use crate::checker::Verdict;
use crate::history::TxnId;

/// Quoted broker log lines, one a line with its place (`logs/standalone.log:599`), time and
/// level, escaped; also used by the stuck reads' panel.
pub(super) fn log_lines_html(lines: &[BrokerLine]) -> String {
    let mut c = String::from("<pre class=\"log\">");
    for line in lines {
        w!(c, "<span>{}</span>\n", esc(&line.to_string()));
    }
    c.push_str("</pre>");
    c
}

/// The broker log lines quoted under an anomaly: in full under the first anomaly of each
/// transaction, a link to them under the others (`shown` remembers which were quoted).
fn broker_log_html(logs: &[TxnLog], shown: &mut BTreeSet<TxnId>) -> String {
    let mut c = String::new();
    for l in logs {
        let anchor = format!("log-{}-{}", l.txn.most, l.txn.least);
        if !shown.insert(l.txn) {
            w!(
                c,
                "<div class=\"brokerlog note\">Broker log about {}: <a href=\"#{anchor}\">quoted above</a></div>",
                esc(&l.txn.to_string())
            );
            continue;
        }
        w!(c, "<div class=\"brokerlog\" id=\"{anchor}\">");
        if !l.named.is_empty() {
            w!(
                c,
                "<div class=\"label\">Broker log lines naming {}{}</div>",
                esc(&l.txn.to_string()),
                if l.named_more > 0 {
                    format!(
                        " (the first {}; {} more name it)",
                        l.named.len(),
                        l.named_more
                    )
                } else {
                    String::new()
                }
            );
            c.push_str(&log_lines_html(&l.named));
        }
        if !l.during.is_empty() {
            w!(
                c,
                "<div class=\"label\">WARN/ERROR lines about the topic logged while {} was open or committing (they name no transaction){}</div>",
                esc(&l.txn.to_string()),
                if l.during_more > 0 {
                    format!(" (the first {}; {} more)", l.during.len(), l.during_more)
                } else {
                    String::new()
                }
            );
            c.push_str(&log_lines_html(&l.during));
        }
        c.push_str("</div>");
    }
    c
}

/// The explanation cell of an anomaly: its cause, the sentence, the evidence and the broker
/// log lines (escaped).
fn cause_cell(
    cause: crate::checker::Cause,
    explanation: &str,
    evidence: &[String],
    broker_log: &[TxnLog],
    shown: &mut BTreeSet<TxnId>,
) -> String {
    let mut c = format!(
        "<span class=\"pill cause-{cause}\">cause: {cause}</span> {}",
        esc(explanation)
    );
    if !evidence.is_empty() {
        c.push_str("<ul class=\"evidence\">");
        for e in evidence.iter().take(6) {
            c.push_str(&format!("<li>{}</li>", esc(e)));
        }
        if evidence.len() > 6 {
            c.push_str(&format!(
                "<li>{} more in verdict.json</li>",
                evidence.len() - 6
            ));
        }
        c.push_str("</ul>");
    }
    c.push_str(&broker_log_html(broker_log, shown));
    c
}

/// Links to the first 12 attempts in the attempts table.
fn attempt_links(attempts: &[u64]) -> String {
    if attempts.is_empty() {
        return "-".to_string();
    }
    let mut out: Vec<String> = attempts
        .iter()
        .take(12)
        .map(|a| format!("<a href=\"#attempt-{a}\">#{a}</a>"))
        .collect();
    if attempts.len() > 12 {
        out.push(format!("and {} more", attempts.len() - 12));
    }
    out.join(", ")
}

/// The section: the anomalies table, or a sentence that there is none.
pub(super) fn anomalies_section(h: &mut String, v: &Verdict) {
    h.push_str("<h2 id=\"anomalies\">Anomalies</h2>\n");
    let listed = v.missing.len() + v.duplicates.len();
    if listed == 0 && v.unexpected.is_empty() {
        h.push_str("<p class=\"empty-note\">None: no number was missing or duplicated.</p>\n");
        return;
    }
    if listed > 0 {
        h.push_str("<table><thead><tr><th>anomaly</th><th>numbers</th><th class=\"num\">count</th><th class=\"num\">copies</th><th>attempts</th><th>explanation</th></tr></thead><tbody>");
        let mut rows = 0;
        let mut shown = BTreeSet::new();
        for m in &v.missing {
            if rows >= TABLE_CAP {
                break;
            }
            rows += 1;
            w!(
                h,
                "<tr><td><span class=\"pill missing\">missing</span></td><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">0</td><td>{}</td><td>{}</td></tr>",
                esc(&m.what.to_string()),
                fmt_n(m.what.len()),
                attempt_links(&m.attempts),
                cause_cell(m.cause, &m.explanation, &m.evidence, &m.broker_log, &mut shown)
            );
        }
        for d in &v.duplicates {
            if rows >= TABLE_CAP {
                break;
            }
            rows += 1;
            let mut ids = String::new();
            for (value, list) in d.what.message_ids.iter().take(3) {
                let list: Vec<String> = list.iter().map(|i| i.to_string()).collect();
                w!(ids, "<br><code>{value} at {}</code>", esc(&list.join(", ")));
            }
            w!(
                h,
                "<tr><td><span class=\"pill duplicated\">duplicated</span></td><td class=\"wrap\"><code>{}</code>{ids}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
                esc(&d.what.to_string()),
                fmt_n(d.what.numbers()),
                d.what.copies,
                attempt_links(&d.attempts),
                cause_cell(d.cause, &d.explanation, &d.evidence, &d.broker_log, &mut shown)
            );
        }
        h.push_str("</tbody></table>\n");
        if listed > rows {
            w!(
                h,
                "<p class=\"note\">{} more range(s) not shown; verdict.json lists them.</p>",
                fmt_n((listed - rows) as u64)
            );
        }
        let unlisted_missing = v.missing_total
            - v.missing
                .iter()
                .map(|m| m.what.len())
                .sum::<u64>()
                .min(v.missing_total);
        if unlisted_missing > 0 {
            w!(
                h,
                "<p class=\"note\">{} more missing number(s) beyond the ranges the checker lists one by one.</p>",
                fmt_n(unlisted_missing)
            );
        }
    }
    if !v.unexpected.is_empty() {
        unexpected_table(h, v);
    }
}

/// Messages whose payload is no number below the expected count, the first [`TABLE_CAP`].
fn unexpected_table(h: &mut String, v: &Verdict) {
    h.push_str("<h3>Unexpected messages</h3><table><thead><tr><th>number</th><th>payload starts with</th><th>message id</th></tr></thead><tbody>");
    for u in v.unexpected.iter().take(TABLE_CAP) {
        w!(
            h,
            "<tr><td class=\"num\">{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>",
            u.value.map(|x| x.to_string()).unwrap_or_else(|| "-".into()),
            esc(&format!("{:?}", u.payload_prefix)),
            esc(&u.message_id.to_string())
        );
    }
    h.push_str("</tbody></table>\n");
    if v.unexpected_total > v.unexpected.len().min(TABLE_CAP) as u64 {
        w!(
            h,
            "<p class=\"note\">{} unexpected message(s) in all.</p>",
            fmt_n(v.unexpected_total)
        );
    }
}
