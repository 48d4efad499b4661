//! `shrink/report.html`: what a shrink preserved, the original and the minimal schedule side
//! by side (each run's fault timeline, drawn from its own history as `report.html` draws it,
//! and its fault list), and every candidate with its tries. Every text from a run goes
//! through `esc`.

use std::fmt::Write as _;
use std::path::Path;

use super::fmt::{esc, fmt_n};
use super::page::{card, page_start};
use super::scan::{scan_history, Scan};
use super::timeline::timeline_svg;
use crate::checker::Verdict;
use crate::error::{Error, Result};
use crate::rundir::RunInfo;
use pulsar_chaos_core::shrink::{LogLine, Summary};

/// One side of the comparison: a run directory's timeline and faults, when it can be read.
struct Side {
    title: String,
    run_dir: String,
    scan: Scan,
    verdict: Verdict,
}

fn side(title: &str, dir: &Path, link: String) -> Option<Side> {
    let verdict: Verdict =
        serde_json::from_str(&std::fs::read_to_string(dir.join("verdict.json")).ok()?).ok()?;
    Some(Side {
        title: title.to_string(),
        run_dir: link,
        scan: scan_history(&dir.join("history.jsonl"), &[]),
        verdict,
    })
}

/// Write `report.html` into the shrink directory `out` of the run at `original`.
pub fn write_shrink(
    out: &Path,
    original: &Path,
    info: &RunInfo,
    s: &Summary,
    log: &[LogLine],
) -> Result<()> {
    let mut sides = Vec::new();
    if let Some(o) = side("Original", original, "../report.html".into()) {
        sides.push(o);
    }
    if let Some(m) = s
        .minimal_run
        .as_ref()
        .and_then(|d| side("Minimal", &out.join(d), format!("{d}/report.html")))
    {
        sides.push(m);
    }
    let html = render(info, s, log, &sides);
    let path = out.join("report.html");
    std::fs::write(&path, html).map_err(Error::io(format!("write {}", path.display())))
}

fn render(info: &RunInfo, s: &Summary, log: &[LogLine], sides: &[Side]) -> String {
    let mut h = String::new();
    page_start(
        &mut h,
        &format!("shrink of {} (seed {})", info.run_id, s.seed),
    );
    w!(
        h,
        "<h1>Shrink of run {} <small>{}, seed {}</small></h1>\n",
        esc(&info.run_id),
        esc(&info.scenario),
        s.seed
    );
    w!(h, "<p>Preserving: <b>{}</b>.</p>\n", esc(&s.preserving));
    h.push_str("<div class=\"cards\">");
    card(
        &mut h,
        &s.original.faults.to_string(),
        "fault firings before",
        "",
    );
    card(
        &mut h,
        &s.minimal.faults.to_string(),
        "fault firings after",
        "",
    );
    card(
        &mut h,
        &fmt_n(u64::from(s.candidates)),
        "candidates tried",
        "",
    );
    let rate = match s.rate {
        Some((x, k)) => format!("{x} of {k}"),
        None => "not measured".to_string(),
    };
    card(&mut h, &rate, "reproduction rate of the minimal", "");
    card(&mut h, &format!("{:.0} s", s.elapsed_s), "wall time", "");
    h.push_str("</div>\n");
    if !s.reproduced {
        h.push_str("<p class=\"note\">The pinned original did not fail as the run did in any try, so nothing was shrunk.</p>\n");
    } else if !s.complete {
        h.push_str("<p class=\"note\">The search did not run to its end (the budget ran out or it was interrupted): the minimal schedule may not be minimal.</p>\n");
    }
    w!(
        h,
        "<p>Before: {}. After: {}.</p>\n<p>Reproduce the minimal case: <code>{}</code></p>\n",
        esc(&s.original.to_string()),
        esc(&s.minimal.to_string()),
        esc(&s.reproduce)
    );
    h.push_str("<h2 id=\"timelines\">Fault timelines</h2>\n<div class=\"side-by-side\">");
    for sd in sides {
        w!(
            h,
            "<div><h3>{} <small><a href=\"{}\">report</a>, {}</small></h3><div class=\"chart\">{}</div><ul class=\"fault-list\">",
            esc(&sd.title),
            esc(&sd.run_dir),
            esc(&sd.verdict.status.to_string()),
            timeline_svg(&sd.scan, &sd.verdict)
        );
        for f in &sd.verdict.faults {
            w!(
                h,
                "<li><code>{}</code> on {}: {}</li>",
                esc(&f.fault),
                esc(&f.target),
                esc(&f.action)
            );
        }
        h.push_str("</ul></div>");
    }
    h.push_str("</div>\n");
    candidates_table(&mut h, log);
    h.push_str("</main>\n</body>\n</html>\n");
    h
}

fn candidates_table(h: &mut String, log: &[LogLine]) {
    h.push_str("<h2 id=\"candidates\">Candidates</h2>\n<table><thead><tr><th class=\"num\">#</th><th>phase</th><th>candidate</th><th>size</th><th>tries</th><th>still fails</th></tr></thead><tbody>\n");
    for l in log {
        let tries: Vec<String> = l
            .tries
            .iter()
            .map(|t| match &t.run_dir {
                Some(d) => format!("<a href=\"{}/report.html\">{}</a>", esc(d), esc(&t.status)),
                None => esc(&t.status),
            })
            .collect();
        w!(
            h,
            "<tr><td class=\"num\">{:03}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            l.id,
            esc(&l.phase),
            esc(&l.description),
            esc(&l.size.to_string()),
            tries.join(", "),
            if l.still_fails { "yes" } else { "no" }
        );
    }
    h.push_str("</tbody></table>\n");
}
