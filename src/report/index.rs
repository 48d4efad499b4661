//! `index.html` of a soak: the overall status and totals at the top, a strip with one square
//! per iteration, then one row per iteration with its seed, status, time, summary, the
//! command that reproduces it and a link to its `report.html`. Self-contained like
//! `report.html`; it links only to relative paths, so it never points off the machine.

use std::fmt::Write as _;
use std::path::Path;

use super::fmt::{esc, fmt_dur, fmt_n};
use super::page::{card, page_start, status_class};
use crate::error::{Error, Result};

/// One iteration of a soak, as a row of `index.html`.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexRow {
    pub iteration: u64,
    pub seed: u64,
    /// "pass", "violation", "inconclusive", "stuck" (anything else is shown as it is).
    pub status: String,
    pub summary: String,
    pub seconds: f64,
    /// Relative link to the iteration's report.html; None when its run directory was pruned.
    pub run_dir: Option<String>,
    pub reproduce: String,
}

/// How many iterations had each status.
struct Totals {
    pass: usize,
    violation: usize,
    inconclusive: usize,
    stuck: usize,
    other: usize,
}

impl Totals {
    fn of(rows: &[IndexRow]) -> Totals {
        let count = |s: &str| rows.iter().filter(|r| status_class(&r.status) == s).count();
        let (pass, violation, inconclusive, stuck) = (
            count("pass"),
            count("violation"),
            count("inconclusive"),
            count("stuck"),
        );
        Totals {
            pass,
            violation,
            inconclusive,
            stuck,
            other: rows.len() - pass - violation - inconclusive - stuck,
        }
    }

    /// The status of the whole soak: the worst of its iterations (a violation, then a stuck
    /// read, as the exit codes rank them).
    fn overall(&self) -> &'static str {
        if self.violation > 0 {
            "violation"
        } else if self.stuck > 0 {
            "stuck"
        } else if self.inconclusive > 0 || self.other > 0 {
            "inconclusive"
        } else if self.pass == 0 {
            "other"
        } else {
            "pass"
        }
    }
}

/// Write `index.html` into `dir`: totals at the top, then one row per soak iteration with a
/// link to its report. Self-contained like `report.html`.
pub fn write_index(dir: &Path, title: &str, rows: &[IndexRow]) -> Result<()> {
    let mut h = String::with_capacity(16 * 1024 + rows.len() * 512);
    page_start(&mut h, title);
    let totals = Totals::of(rows);
    verdict(&mut h, title, rows, &totals);
    cards(&mut h, rows, &totals);
    h.push_str("<div class=\"strip\">");
    for r in rows.iter().take(5000) {
        w!(
            h,
            "<a class=\"{}\" href=\"#iteration-{}\" title=\"{}\"></a>",
            status_class(&r.status),
            r.iteration,
            esc(&format!(
                "iteration {}: {} (seed {})",
                r.iteration, r.status, r.seed
            ))
        );
    }
    h.push_str("</div>\n");
    iterations_table(&mut h, rows);
    h.push_str("</main>\n</body>\n</html>\n");
    let path = dir.join("index.html");
    std::fs::write(&path, h).map_err(Error::io(format!("write {}", path.display())))
}

/// The title, the overall status and the iterations that did not pass.
fn verdict(h: &mut String, title: &str, rows: &[IndexRow], t: &Totals) {
    let overall = t.overall();
    let total_s: f64 = rows.iter().map(|r| r.seconds).sum();
    let failing: Vec<String> = rows
        .iter()
        .filter(|r| status_class(&r.status) != "pass")
        .take(50)
        .map(|r| {
            format!(
                "<a href=\"#iteration-{}\">#{}</a> (seed {})",
                r.iteration, r.iteration, r.seed
            )
        })
        .collect();
    let failing = if failing.is_empty() {
        String::new()
    } else {
        format!(
            "<p class=\"summary\">Not passed: {}{}</p>",
            failing.join(", "),
            if rows.len() - t.pass > failing.len() {
                ", ..."
            } else {
                ""
            }
        )
    };
    w!(
        h,
        "<h1 class=\"title\">{}</h1>\n<section class=\"verdict {overall}\"><div class=\"status\">{}</div><p class=\"summary\">{} iteration(s): {} passed, {} violation(s), {} inconclusive{}{}; {} in all.</p>{failing}</section>\n",
        esc(title),
        if rows.is_empty() {
            "NO ITERATIONS".to_string()
        } else {
            overall.to_uppercase()
        },
        rows.len(),
        t.pass,
        t.violation,
        t.inconclusive,
        if t.stuck > 0 {
            format!(", {} stuck", t.stuck)
        } else {
            String::new()
        },
        if t.other > 0 {
            format!(", {} other", t.other)
        } else {
            String::new()
        },
        esc(&fmt_dur((total_s * 1000.0).max(0.0) as u64))
    );
}

/// The totals as cards.
fn cards(h: &mut String, rows: &[IndexRow], t: &Totals) {
    h.push_str("<div class=\"cards\">");
    card(h, &fmt_n(rows.len() as u64), "iterations", "");
    card(h, &fmt_n(t.pass as u64), "passed", "good");
    card(
        h,
        &fmt_n(t.violation as u64),
        "violations",
        if t.violation > 0 { "bad" } else { "" },
    );
    card(
        h,
        &fmt_n(t.inconclusive as u64),
        "inconclusive",
        if t.inconclusive > 0 { "warn" } else { "" },
    );
    if t.stuck > 0 {
        card(h, &fmt_n(t.stuck as u64), "stuck", "stuck");
    }
    h.push_str("</div>\n");
}

/// One row per iteration.
fn iterations_table(h: &mut String, rows: &[IndexRow]) {
    h.push_str("<h2>Iterations</h2>\n<table><thead><tr><th class=\"num\">iteration</th><th class=\"num\">seed</th><th>status</th><th class=\"num\">time</th><th>summary</th><th>report</th><th>reproduce</th></tr></thead><tbody>");
    for r in rows {
        let link = match &r.run_dir {
            Some(d) if is_relative_link(d) => format!("<a href=\"{}\">report</a>", esc(d)),
            Some(d) => format!("<code>{}</code>", esc(d)),
            None => "<span class=\"note\">pruned</span>".to_string(),
        };
        w!(
            h,
            "<tr id=\"iteration-{}\"><td class=\"num\">{}</td><td class=\"num\">{}</td><td><span class=\"pill {}\">{}</span></td><td class=\"num\">{}</td><td>{}</td><td>{link}</td><td class=\"wrap\"><code>{}</code></td></tr>",
            r.iteration,
            r.iteration,
            r.seed,
            status_class(&r.status),
            esc(&r.status),
            esc(&fmt_dur((r.seconds * 1000.0).max(0.0) as u64)),
            esc(&r.summary),
            esc(&r.reproduce)
        );
    }
    h.push_str("</tbody></table>\n");
}

/// Whether a browser resolves `href` to a path on this machine: no scheme, and not a
/// network-path reference (`//host/...`). A browser drops tabs and newlines anywhere in an
/// address and spaces and control characters around it, and reads a backslash as a slash,
/// so `\t//host` and `\\host` are network paths too.
fn is_relative_link(href: &str) -> bool {
    let seen: String = href
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .map(|c| if c == '\\' { '/' } else { c })
        .collect();
    !seen.contains(':') && !seen.starts_with("//")
}

#[cfg(test)]
mod tests;
