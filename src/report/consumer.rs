//! The consumer section of a transform run's page: its transactions and redeliveries, the
//! conflict probes, the input subscription's backlog per partition (the admin API's answer
//! quoted), and the consumer side's findings.

use std::fmt::Write as _;

use super::fmt::{esc, fmt_n, fmt_t};
use crate::checker::Verdict;
use crate::history::ProbeOutcome;

/// Nothing for a producer run.
pub(super) fn consumer_section(h: &mut String, v: &Verdict) {
    let Some(c) = &v.consumer else {
        return;
    };
    h.push_str("<h2 id=\"consumer\">Consumer side (consume-transform-produce)</h2>\n");
    w!(
        h,
        "<p>Input <code>{}</code>, subscription <code>{}</code>: {} transaction(s) took {} input(s), {} of them delivered again; {} attempt(s) handed {} input(s) back; {} ACK answer(s) not acknowledged. Conflict probes: {} ({} refused, {} accepted, {} unanswered).</p>\n",
        esc(&c.input_topic),
        esc(&c.subscription),
        fmt_n(c.transactions),
        fmt_n(c.inputs_taken),
        fmt_n(c.inputs_redelivered),
        fmt_n(c.redeliveries),
        fmt_n(c.inputs_handed_back),
        fmt_n(c.acks_failed),
        fmt_n(c.probes),
        fmt_n(c.probes_refused),
        fmt_n(c.probes_accepted),
        fmt_n(c.probes_unanswered)
    );
    if let Some(l) = &c.ack_latency {
        w!(
            h,
            "<p>ACK latency (an attempt's ACKs sent to every one answered, over the {} attempt(s) whose ACKs were all acknowledged): median {} ms, p99 {} ms, max {} ms.</p>\n",
            fmt_n(l.attempts),
            fmt_n(l.median_ms),
            fmt_n(l.p99_ms),
            fmt_n(l.max_ms)
        );
    }
    for f in &c.findings {
        w!(h, "<p class=\"bad\">{}</p>\n", esc(f));
    }
    h.push_str("<table><thead><tr><th>input partition</th><th class=\"num\">backlog</th><th>evidence</th></tr></thead><tbody>");
    for b in &c.backlog {
        w!(
            h,
            "<tr><td><code>{}</code></td><td class=\"num\">{}</td><td><code>{}</code></td></tr>",
            esc(&b.partition),
            b.backlog.map(fmt_n).unwrap_or_else(|| "?".into()),
            esc(&b.evidence)
        );
    }
    h.push_str("</tbody></table>\n");
    if c.probe_records.is_empty() {
        return;
    }
    h.push_str("<table><thead><tr><th class=\"num\">at</th><th class=\"num\">attempt</th><th>probe</th><th>held by</th><th>message</th><th>outcome</th><th>answer</th></tr></thead><tbody>");
    for p in &c.probe_records {
        let outcome = match p.outcome {
            ProbeOutcome::Refused => "refused",
            ProbeOutcome::Accepted => "accepted",
            ProbeOutcome::Unanswered => "unanswered",
            ProbeOutcome::Unknown => "unknown",
        };
        w!(
            h,
            "<tr><td class=\"num\">{}</td><td class=\"num\">#{}</td><td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td><td>{outcome}</td><td>{}</td></tr>",
            esc(&fmt_t(p.t_ms)),
            p.attempt,
            esc(&p.probe.to_string()),
            esc(&p.held_by.to_string()),
            esc(&p.message),
            esc(&p.answer)
        );
    }
    h.push_str("</tbody></table>\n");
}
