//! `trends.html`: the results store as one page (issue 35). Per scenario × Pulsar version ×
//! client, three small charts over the nights: pass rate, median producer throughput, and the
//! median recovery time after a heal per fault kind; then every finding and known bug with the
//! night it was first and last seen. Inline SVG drawn here, no script, nothing outside the
//! file. Pure: the page's data (core `results::page`) in, the HTML out.

use std::fmt::Write as _;

use super::fmt::{esc, fmt_dur, fmt_n};
use super::page::{card, page_start};
use super::timeline::{fault_colour, px};
use crate::results::chart::nice_ceiling;
use crate::results::{Lines, Page, Point};

/// One chart's size and plot area.
const W: f64 = 420.0;
const H: f64 = 190.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 26.0;
const BOTTOM: f64 = 34.0;

/// One line of a chart.
struct Series<'a> {
    name: &'a str,
    colour: &'a str,
    points: &'a [Point],
}

/// How a chart writes its values.
#[derive(Clone, Copy)]
enum Unit {
    Rate,
    PerSecond,
    Millis,
}

impl Unit {
    fn text(self, v: f64) -> String {
        match self {
            Unit::Rate => format!("{:.0}%", v * 100.0),
            Unit::PerSecond => format!("{} msg/s", fmt_n(v.round() as u64)),
            Unit::Millis => fmt_dur(v.round() as u64),
        }
    }

    /// The shorter form of an axis tick.
    fn tick(self, v: f64) -> String {
        match self {
            Unit::Rate => format!("{:.0}%", v * 100.0),
            Unit::PerSecond if v >= 10_000.0 => format!("{}k", px(v / 1000.0)),
            Unit::PerSecond => px(v),
            Unit::Millis => fmt_dur(v.round() as u64),
        }
    }
}

/// A chart of `series` on the group's night axis, `0..=y_max` up.
fn chart(h: &mut String, class: &str, title: &str, lines: &Lines, series: &[Series], unit: Unit) {
    let max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.value))
        .fold(0.0, f64::max);
    let y_max = match unit {
        Unit::Rate => 1.0,
        _ => nice_ceiling(max),
    };
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let x = |night_ms: u64| LEFT + lines.x(night_ms) * pw;
    let y = |v: f64| TOP + ph - (v / y_max).clamp(0.0, 1.0) * ph;
    w!(
        h,
        "<svg class=\"trend {class}\" viewBox=\"0 0 {} {}\" width=\"100%\" role=\"img\" aria-label=\"{}\">",
        px(W),
        px(H),
        esc(title)
    );
    w!(
        h,
        "<text class=\"chart-title\" x=\"{}\" y=\"16\">{}</text>",
        px(LEFT),
        esc(title)
    );
    w!(
        h,
        "<rect class=\"plot\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
        px(LEFT),
        px(TOP),
        px(pw),
        px(ph)
    );
    for i in 0..=4 {
        let v = y_max * f64::from(i) / 4.0;
        let yy = y(v);
        if i > 0 && i < 4 {
            w!(
                h,
                "<line class=\"hgrid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                px(LEFT),
                px(yy),
                px(LEFT + pw),
                px(yy)
            );
        }
        w!(
            h,
            "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            px(LEFT - 5.0),
            px(yy + 4.0),
            esc(&unit.tick(v))
        );
    }
    // The first and last night under the axis.
    let first = crate::results::utc_date(lines.first_night_ms);
    let last = crate::results::utc_date(lines.last_night_ms);
    let ty = px(TOP + ph + 15.0);
    if first == last {
        w!(
            h,
            "<text class=\"tick\" x=\"{}\" y=\"{ty}\" text-anchor=\"middle\">{first}</text>",
            px(x(lines.first_night_ms))
        );
    } else {
        w!(
            h,
            "<text class=\"tick\" x=\"{}\" y=\"{ty}\">{first}</text><text class=\"tick\" x=\"{}\" y=\"{ty}\" text-anchor=\"end\">{last}</text>",
            px(LEFT),
            px(LEFT + pw)
        );
    }
    let drawn = series.iter().any(|s| !s.points.is_empty());
    if !drawn {
        w!(
            h,
            "<text class=\"empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">no figures recorded</text>",
            px(LEFT + pw / 2.0),
            px(TOP + ph / 2.0)
        );
    }
    for s in series.iter().filter(|s| !s.points.is_empty()) {
        let mut d = String::new();
        for (i, p) in s.points.iter().enumerate() {
            w!(
                d,
                "{}{},{} ",
                if i == 0 { "M" } else { "L" },
                px(x(p.night_ms)),
                px(y(p.value))
            );
        }
        w!(
            h,
            "<g class=\"series\" data-series=\"{}\"><path class=\"trend-line\" stroke=\"{}\" d=\"{}\"/>",
            esc(s.name),
            s.colour,
            d.trim_end()
        );
        for p in s.points {
            let fill = match unit {
                Unit::Rate if p.value >= 1.0 => "#137333",
                Unit::Rate if p.value <= 0.0 => "#c5221f",
                Unit::Rate => "#b06000",
                _ => s.colour,
            };
            w!(
                h,
                "<circle class=\"pt\" data-date=\"{}\" data-value=\"{}\" cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{fill}\"><title>{}: {} {} ({} figure(s))</title></circle>",
                p.date,
                p.value,
                px(x(p.night_ms)),
                px(y(p.value)),
                p.date,
                esc(s.name),
                esc(&unit.text(p.value)),
                p.n
            );
        }
        h.push_str("</g>");
    }
    h.push_str("</svg>");
    if series.len() > 1 {
        h.push_str("<div class=\"legend\">");
        for s in series {
            w!(
                h,
                "<span class=\"swatch\" style=\"background:{}\"></span>{}",
                s.colour,
                esc(s.name)
            );
        }
        h.push_str("</div>");
    }
}

/// The page. `filters` says in words what the filters admitted ("" when none were given).
pub fn page(p: &Page, filters: &str) -> String {
    let t = &p.trends;
    let mut h = String::with_capacity(16 * 1024 + t.groups.len() * 8 * 1024);
    let title = "pulsar-chaos trends";
    page_start(&mut h, title);
    w!(h, "<h1 class=\"title\">{title}</h1>\n");
    w!(
        h,
        "<p class=\"summary\">{} run(s) in {} group(s) of scenario × Pulsar version × client{}. Nights are UTC dates.</p>\n",
        t.runs,
        t.groups.len(),
        if filters.is_empty() {
            String::new()
        } else {
            format!(" ({})", esc(filters))
        }
    );
    h.push_str("<div class=\"cards\">");
    let passed: u64 = t.groups.iter().map(|g| g.passed).sum();
    card(&mut h, &fmt_n(t.runs), "runs", "");
    card(
        &mut h,
        &fmt_n(passed),
        "passed",
        if passed == t.runs { "good" } else { "" },
    );
    card(
        &mut h,
        &fmt_n(t.findings.len() as u64),
        "findings and known bugs",
        if t.findings.is_empty() { "" } else { "bad" },
    );
    h.push_str("</div>\n");
    if t.runs == 0 {
        h.push_str("<p class=\"empty-note\">No runs recorded (that the filters admit).</p>\n");
    }
    for (i, (g, lines)) in t.groups.iter().zip(&p.lines).enumerate() {
        let class = if g.passed == g.runs {
            "pass"
        } else {
            "violation"
        };
        w!(
            h,
            "<section class=\"group\" id=\"group-{i}\" data-scenario=\"{}\" data-version=\"{}\" data-client=\"{}\">\n",
            esc(&g.scenario),
            esc(&g.pulsar_version),
            esc(&g.client)
        );
        w!(
            h,
            "<h2><code>{}</code> on {} through {} <span class=\"pill {class}\">{}/{} passed</span></h2>\n<div class=\"side-by-side\">",
            esc(&g.scenario),
            esc(&g.pulsar_version),
            esc(&g.client),
            g.passed,
            g.runs
        );
        h.push_str("<div class=\"chart\">");
        chart(
            &mut h,
            "pass-rate",
            "pass rate per night",
            lines,
            &[Series {
                name: "pass rate",
                colour: "#5f6368",
                points: &lines.pass_rate,
            }],
            Unit::Rate,
        );
        h.push_str("</div><div class=\"chart\">");
        chart(
            &mut h,
            "throughput",
            "producer throughput (median per night)",
            lines,
            &[Series {
                name: "throughput",
                colour: "#3a6fb0",
                points: &lines.throughput,
            }],
            Unit::PerSecond,
        );
        h.push_str("</div><div class=\"chart\">");
        let recovery: Vec<Series> = lines
            .recovery_ms
            .iter()
            .map(|(kind, points)| Series {
                name: kind,
                colour: fault_colour(kind),
                points,
            })
            .collect();
        chart(
            &mut h,
            "recovery",
            "recovery after a heal (median per night)",
            lines,
            &recovery,
            Unit::Millis,
        );
        h.push_str("</div></div>\n");
        // The nights as a table too: what the pass-rate points say, in words.
        h.push_str("<table class=\"nights\"><thead><tr><th>night</th><th class=\"num\">runs</th><th class=\"num\">passed</th><th>statuses</th></tr></thead><tbody>");
        for n in &g.nights {
            let statuses: Vec<String> = n
                .statuses
                .iter()
                .map(|(s, c)| {
                    format!(
                        "<span class=\"pill {}\">{} {c}</span>",
                        super::page::status_class(s),
                        esc(s)
                    )
                })
                .collect();
            w!(
                h,
                "<tr data-night=\"{}\"><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                n.date,
                n.date,
                n.runs,
                n.passed,
                statuses.join(" ")
            );
        }
        h.push_str("</tbody></table>\n</section>\n");
    }
    h.push_str("<h2>Findings and known bugs</h2>\n");
    if t.findings.is_empty() {
        h.push_str("<p class=\"empty-note\">None named in these runs.</p>\n");
    } else {
        h.push_str("<table class=\"findings\"><thead><tr><th>finding or known bug</th><th>first seen</th><th>last seen</th><th class=\"num\">runs</th><th>scenarios</th><th>last run</th></tr></thead><tbody>\n");
        for f in &t.findings {
            w!(
                h,
                "<tr class=\"finding\" data-finding=\"{}\"><td><code>{}</code></td><td class=\"first-seen\">{}</td><td class=\"last-seen\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"wrap\"><code>{}</code></td></tr>\n",
                esc(&f.finding),
                esc(&f.finding),
                esc(&f.first_seen),
                esc(&f.last_seen),
                f.runs,
                esc(&f.scenarios.join(", ")),
                esc(&f.last_run_dir)
            );
        }
        h.push_str("</tbody></table>\n");
    }
    h.push_str("<footer>Written by pulsar-chaos trends from the results store.</footer>\n</main>\n</body>\n</html>\n");
    h
}

#[cfg(test)]
mod tests;
