//! `report.html`, the page of one run, and the sections that are not a concern of their own:
//! the verdict with the run's facts and the command that reproduces it, the timeline with its
//! legend, the counts, and the attempts that carried anomalous numbers. The anomalies, the
//! client's answers, the faults and the stuck reads sections are in `anomalies`, `answers`,
//! `faults` and `stuck`, the SVG in `timeline`.

use std::fmt::Write as _;

use super::anomalies::anomalies_section;
use super::faults::faults_section;
use super::fmt::{esc, fmt_dur, fmt_n, fmt_outcome, fmt_t, fmt_utc, ranges_html};
use super::page::{card, page_start, status_class};
use super::scan::{scan_history, Scan};
use super::stuck::{stall_section, stuck_section};
use super::timeline::{fault_colour, timeline_svg, MAX_MARKERS};
use super::TABLE_CAP;
use crate::checker::Verdict;
use crate::error::Result;
use crate::history::Outcome;
use crate::plan::Plan;
use crate::rundir::{RunDir, RunInfo};

/// The verdict, the run's facts and the command that reproduces the run.
fn header(h: &mut String, info: &RunInfo, plan: &Plan, v: &Verdict) {
    let status = v.status.to_string();
    w!(
        h,
        "<section class=\"verdict {}\"><div class=\"status\">{}</div><p class=\"summary\">{}</p>",
        status_class(&status),
        esc(&status.to_uppercase()),
        esc(&v.summary)
    );
    if !v.reasons.is_empty() {
        h.push_str("<ul>");
        for r in &v.reasons {
            w!(h, "<li>{}</li>", esc(r));
        }
        h.push_str("</ul>");
    }
    if !v.notes.is_empty() {
        h.push_str("<p>Notes:</p><ul class=\"notes\">");
        for n in &v.notes {
            w!(h, "<li>{}</li>", esc(n));
        }
        h.push_str("</ul>");
    }
    h.push_str("</section>\n<dl class=\"meta\">");
    let image = info.image.clone().unwrap_or_else(|| "-".to_string());
    let facts: [(&str, String); 12] = [
        ("scenario", info.scenario.clone()),
        ("run id", info.run_id.clone()),
        ("topic", info.topic.clone()),
        ("seed", info.seed.to_string()),
        ("partitions", info.partitions.to_string()),
        ("messages", fmt_n(info.messages)),
        ("topology", info.topology.clone()),
        ("image", image),
        ("started", fmt_utc(info.started_ms)),
        ("faults planned", plan.faults.len().to_string()),
        ("service URL", info.service_url.clone()),
        ("admin URL", info.admin_url.clone()),
    ];
    for (k, val) in facts {
        w!(h, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&val));
    }
    h.push_str("</dl>\n");
    if info.kept_cluster {
        h.push_str(
            "<p class=\"note\">The cluster was left running (<code>--keep-cluster</code>).</p>",
        );
    }
    w!(
        h,
        "<div class=\"reproduce\"><div class=\"label\">Reproduce this run (same scenario, same seed):</div><pre class=\"cmd\"><code>{}</code></pre></div>\n",
        esc(&info.reproduce)
    );
}

/// The timeline, a note if the history could not be read in full, and the legend.
fn timeline_section(h: &mut String, scan: &Scan, v: &Verdict) {
    h.push_str("<h2 id=\"timeline\">Timeline</h2>\n");
    if let Some(p) = &scan.problem {
        w!(
            h,
            "<p class=\"note\">The history could not be read in full ({} line(s) skipped): {}</p>",
            scan.unreadable,
            esc(p)
        );
    }
    h.push_str("<div class=\"chart\">");
    h.push_str(&timeline_svg(scan, v));
    h.push_str("</div>\n<p class=\"legend\">");
    let mut kinds: Vec<&str> = scan.faults.iter().map(|f| f.kind.as_str()).collect();
    kinds.sort();
    kinds.dedup();
    for (colour, label) in [
        ("#3a6fb0", "committed"),
        ("#a7c1e6", "ambiguous, found committed later"),
        ("#6e7781", "aborted attempts"),
        ("#f9ab00", "ambiguous commits"),
        ("#d93025", "attempt with missing numbers"),
        ("#a142f4", "attempt with duplicated numbers"),
    ] {
        w!(
            h,
            "<span class=\"swatch\" style=\"background:{colour}\"></span>{}",
            esc(label)
        );
    }
    h.push_str("<span class=\"swatch line\"></span>commit latency p99<span class=\"swatch ring\"></span>commit latency max");
    for k in kinds {
        w!(
            h,
            "<span class=\"swatch\" style=\"background:{};opacity:.45\"></span>fault: {}",
            fault_colour(k),
            esc(k)
        );
    }
    if !scan.stuck.is_empty() {
        h.push_str(
            "<span class=\"swatch stuck\"></span>read-back stuck (to the remedy that healed it)",
        );
    }
    if !scan.remedies.is_empty() {
        h.push_str("<span class=\"swatch remedy\"></span>remedy tried (green: healed)");
    }
    h.push_str("</p>\n");
}

/// The producer's and the read-back's numbers as cards.
fn counts_section(h: &mut String, scan: &Scan, v: &Verdict) {
    h.push_str("<h2 id=\"counts\">Counts</h2>\n<h3>Producer</h3><div class=\"cards\">");
    producer_cards(h, scan, v);
    h.push_str("</div>\n<h3>Read-back</h3><div class=\"cards\">");
    readback_cards(h, v);
    h.push_str("</div>\n");
}

/// What the producer did, and the commit latency the history shows.
fn producer_cards(h: &mut String, scan: &Scan, v: &Verdict) {
    match &v.producer {
        Some(p) => {
            card(h, &fmt_n(p.attempts), "transaction attempts", "");
            card(h, &fmt_n(p.committed), "committed", "good");
            card(h, &fmt_n(p.aborted), "aborted", "");
            card(
                h,
                &fmt_n(p.ambiguous),
                "ambiguous",
                if p.ambiguous > 0 { "warn" } else { "" },
            );
            card(
                h,
                &format!(
                    "{} / {}",
                    fmt_n(p.resolved_committed),
                    fmt_n(p.resolved_aborted)
                ),
                "ambiguous resolved committed / aborted",
                "",
            );
            card(h, &fmt_n(p.withheld), "resends withheld", "");
            card(
                h,
                if p.finished {
                    if p.complete {
                        "complete"
                    } else {
                        "stopped short"
                    }
                } else {
                    "never finished"
                },
                "producer",
                if p.finished && p.complete { "" } else { "warn" },
            );
        }
        None => card(h, "-", "no producer history", ""),
    }
    card(
        h,
        &fmt_n(scan.messages_committed),
        "messages confirmed committed",
        "",
    );
    if let (Some(p50), Some(p99)) = (
        scan.timeline.total_quantile(0.5),
        scan.timeline.total_quantile(0.99),
    ) {
        card(h, &fmt_dur(p50), "commit latency p50 (at most)", "");
        card(h, &fmt_dur(p99), "commit latency p99 (at most)", "");
        card(
            h,
            &fmt_dur(scan.timeline.total_max),
            "commit latency max",
            "",
        );
    }
}

/// What was read back: expected, received, distinct, missing, duplicated, unexpected.
fn readback_cards(h: &mut String, v: &Verdict) {
    card(h, &fmt_n(v.expected), "expected numbers", "");
    card(h, &fmt_n(v.received), "messages received", "");
    card(
        h,
        &fmt_n(v.distinct),
        "distinct numbers",
        if v.distinct == v.expected { "good" } else { "" },
    );
    let bad = |n: u64| if n > 0 { "bad" } else { "" };
    card(h, &fmt_n(v.missing_total), "missing", bad(v.missing_total));
    card(
        h,
        &fmt_n(v.duplicate_values),
        "duplicated numbers",
        bad(v.duplicate_values),
    );
    card(
        h,
        &fmt_n(v.duplicate_copies),
        "extra copies",
        bad(v.duplicate_copies),
    );
    card(
        h,
        &fmt_n(v.unexpected_total),
        "unexpected messages",
        bad(v.unexpected_total),
    );
}

/// The attempts that carried anomalous numbers, the first [`TABLE_CAP`] of them.
fn attempts_section(h: &mut String, v: &Verdict) {
    h.push_str("<h2 id=\"attempts\">Attempts that carried anomalous numbers</h2>\n");
    if v.attempts.is_empty() {
        h.push_str("<p class=\"empty-note\">None.</p>\n");
        return;
    }
    h.push_str("<table><thead><tr><th class=\"num\">attempt</th><th>txn</th><th>numbers</th><th class=\"num\">opened</th><th class=\"num\">ended</th><th class=\"num\">commit tries</th><th>outcome</th><th>resolution</th><th>resend</th><th>faults active</th><th>detail</th></tr></thead><tbody>");
    for a in v.attempts.iter().take(TABLE_CAP) {
        let outcome = fmt_outcome(a.outcome);
        let outcome_class = match a.outcome {
            Some(Outcome::Committed) => "committed",
            Some(Outcome::Aborted) => "aborted",
            _ => "ambiguous",
        };
        let resolution = match a.resolved {
            Some(r) => format!("<span class=\"pill {r}\">{r}</span>"),
            None => "-".to_string(),
        };
        let resend = match (a.resent, a.withheld) {
            (true, _) => "resent",
            (false, true) => "withheld",
            _ => "-",
        };
        w!(
            h,
            "<tr id=\"attempt-{}\"><td class=\"num\">#{}</td><td><code>{}</code></td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td><span class=\"pill {outcome_class}\">{outcome}</span></td><td>{resolution}</td><td>{resend}</td><td>{}</td><td>{}</td></tr>",
            a.attempt,
            a.attempt,
            esc(&a.txn.to_string()),
            ranges_html(&a.numbers, 5),
            esc(&fmt_t(a.opened_ms)),
            a.ended_ms.map(fmt_t).unwrap_or_else(|| "-".into()),
            a.commit_tries,
            if a.faults.is_empty() {
                "-".to_string()
            } else {
                esc(&a.faults.join(", "))
            },
            esc(&a.detail)
        );
    }
    h.push_str("</tbody></table>\n");
    if v.attempts.len() > TABLE_CAP {
        w!(
            h,
            "<p class=\"note\">{} more attempt(s) not shown; verdict.json lists them.</p>",
            fmt_n((v.attempts.len() - TABLE_CAP) as u64)
        );
    }
}

/// The whole page of a run.
fn render_html(info: &RunInfo, plan: &Plan, v: &Verdict, scan: &Scan) -> String {
    let mut h = String::with_capacity(64 * 1024);
    page_start(
        &mut h,
        &format!(
            "{} {} - {}",
            info.scenario,
            info.run_id,
            v.status.to_string().to_uppercase()
        ),
    );
    header(&mut h, info, plan, v);
    timeline_section(&mut h, scan, v);
    stall_section(&mut h, v);
    stuck_section(&mut h, v);
    counts_section(&mut h, scan, v);
    super::consumer::consumer_section(&mut h, v);
    anomalies_section(&mut h, v);
    super::answers::answers_section(&mut h, v);
    faults_section(&mut h, scan, plan, v);
    super::exits::exits_section(&mut h, scan);
    attempts_section(&mut h, v);
    w!(
        h,
        "<footer>pulsar-chaos {} &middot; {} history events &middot; the timeline has {} buckets of {}</footer>\n",
        env!("CARGO_PKG_VERSION"),
        fmt_n(scan.events),
        scan.timeline.used(scan.end_ms),
        esc(&fmt_dur(scan.timeline.width_ms))
    );
    h.push_str("</main>\n</body>\n</html>\n");
    h
}

/// Write `report.html`: the verdict in plain words, a timeline of commits, commit latency,
/// fault windows and anomalous transactions, the counts, the anomalies, the faults, the seed
/// and the command that reproduces the run. Streams `history.jsonl` from the run directory;
/// a missing or damaged history is noted on the page, not an error.
pub fn write_html(dir: &RunDir, info: &RunInfo, plan: &Plan, v: &Verdict) -> Result<()> {
    let watch: Vec<u64> = v
        .attempts
        .iter()
        .take(MAX_MARKERS)
        .map(|a| a.attempt)
        .collect();
    let scan = scan_history(&dir.file("history.jsonl"), &watch);
    Ok(dir.write("report.html", &render_html(info, plan, v, &scan))?)
}
