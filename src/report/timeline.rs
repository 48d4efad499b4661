//! The timeline of `report.html`: one inline SVG, a shared time axis and, from top to bottom,
//! fault labels, commit throughput (stacked bars), aborted and ambiguous attempts per bucket,
//! commit latency (p99 line and max dots, log scale) and the anomalous attempts from open to
//! outcome, with a band across all charts for every fault and a line where the producer
//! finished; a hatched band where the read-back was held after every fault healed, up to the
//! remedy that healed it, and a mark per remedy tried. Bands, bars, latency points and
//! markers carry a `<title>` tooltip. Reads a
//! [`Scan`] and the verdict; the layout is computed once in [`Layout`], then each chart is
//! drawn by its own function.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::buckets::TimeBuckets;
use super::fmt::{esc, fmt_dur, fmt_n, fmt_outcome, fmt_ranges, fmt_t};
use super::scan::{RemedyMark, Scan, StuckSpan};
use crate::checker::{AttemptRecord, Verdict};

/// Anomalous attempts drawn on the timeline.
pub(super) const MAX_MARKERS: usize = 500;
/// Rows of fault labels above the charts.
const LABEL_ROWS: usize = 4;
/// Rows of anomalous attempts below the charts.
const MARK_ROWS: usize = 6;

/// The colour of a fault's band, by kind.
pub(super) fn fault_colour(kind: &str) -> &'static str {
    match kind {
        "broker_restart" => "#e8710a",
        "bookie_restart" => "#a0522d",
        "zookeeper_restart" => "#129eaf",
        "packet_loss" => "#9334e6",
        "pause" => "#1a73e8",
        "topic_unload" => "#5f6368",
        _ => "#e37400",
    }
}

/// A number that draws nicely as SVG coordinate text.
pub(super) fn px(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// A round step (1, 2 or 5 times a power of ten) giving about `target` steps up to `max`.
fn nice_step(max: f64, target: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let raw = max / target;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// The tick step of the time axis, in milliseconds: about 10 ticks, on round seconds.
fn time_step_ms(span_ms: u64) -> u64 {
    const STEPS: [u64; 20] = [
        100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 20_000, 30_000, 60_000, 120_000,
        300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 10_800_000, 21_600_000,
    ];
    let want = span_ms / 10;
    STEPS
        .iter()
        .copied()
        .find(|s| *s >= want)
        .unwrap_or(43_200_000)
}

fn fmt_tick(ms: u64, step: u64) -> String {
    if step < 1000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{}s", ms / 1000)
    }
}

/// Horizontal geometry of the timeline: time -> x.
struct Geo {
    width: f64,
    left: f64,
    right: f64,
    x_max: u64,
}

impl Geo {
    fn plot_w(&self) -> f64 {
        self.width - self.left - self.right
    }
    fn x(&self, t: u64) -> f64 {
        self.left + self.plot_w() * (t.min(self.x_max) as f64 / self.x_max as f64)
    }
    /// The right edge of the plots.
    fn r(&self) -> f64 {
        self.width - self.right
    }
}

/// Which anomaly an attempt carried, for the marker's colour and tooltip.
fn anomaly_kinds(v: &Verdict) -> (BTreeSet<u64>, BTreeSet<u64>) {
    let missing = v
        .missing
        .iter()
        .flat_map(|m| m.attempts.iter().copied())
        .collect();
    let duplicated = v
        .duplicates
        .iter()
        .flat_map(|d| d.attempts.iter().copied())
        .collect();
    (missing, duplicated)
}

fn attempt_title(
    a: &AttemptRecord,
    first_outcome: Option<u64>,
    missing: bool,
    duplicated: bool,
) -> String {
    let what = match (missing, duplicated) {
        (true, true) => "missing and duplicated numbers",
        (true, false) => "missing numbers",
        (false, true) => "duplicated numbers",
        (false, false) => "anomalous numbers",
    };
    let mut t = format!(
        "attempt #{} txn {}: {what} {}; outcome {}",
        a.attempt,
        a.txn,
        fmt_ranges(&a.numbers, 3),
        fmt_outcome(a.outcome)
    );
    if let Some(r) = a.resolved {
        w!(t, ", resolved {r}");
    }
    w!(t, "; opened at {}", fmt_t(a.opened_ms));
    match (first_outcome, a.ended_ms) {
        (Some(o), Some(e)) if e > o => {
            w!(t, ", outcome at {}, resolved at {}", fmt_t(o), fmt_t(e))
        }
        (_, Some(e)) => w!(t, ", outcome at {}", fmt_t(e)),
        (_, None) => t.push_str(", no outcome before the run ended"),
    }
    if !a.faults.is_empty() {
        w!(t, "; faults active: {}", a.faults.join(", "));
    }
    t
}

/// Pack intervals into at most `max_rows` rows without overlap (the last row takes the rest).
fn pack(rows: &mut Vec<f64>, x0: f64, x1: f64, max_rows: usize) -> Option<usize> {
    if let Some(r) = rows.iter().position(|end| *end <= x0) {
        rows[r] = x1;
        return Some(r);
    }
    if rows.len() < max_rows {
        rows.push(x1);
        return Some(rows.len() - 1);
    }
    None
}

/// Where everything goes: the time axis, the rows of fault labels and of anomalous attempts,
/// and the top and height of each chart, from top to bottom.
struct Layout<'a> {
    g: Geo,
    /// Buckets drawn.
    n: usize,
    /// (fault index, row, x) of each label shown, and how many did not fit.
    labels: Vec<(usize, usize, f64)>,
    hidden_labels: usize,
    /// Anomalous attempts and their rows.
    marks: Vec<(&'a AttemptRecord, usize)>,
    tp_top: f64,
    tp_h: f64,
    strip_top: f64,
    lat_top: f64,
    lat_h: f64,
    mark_top: f64,
    mark_h: f64,
    axis_y: f64,
    height: f64,
}

impl<'a> Layout<'a> {
    fn new(scan: &Scan, v: &'a Verdict) -> Layout<'a> {
        let mut x_max = scan.end_ms;
        for a in &v.attempts {
            x_max = x_max.max(a.ended_ms.unwrap_or(a.opened_ms));
        }
        if let Some(st) = &v.stuck_reads {
            x_max = x_max.max(st.detected_ms);
            for r in &st.remedies {
                x_max = x_max.max(r.at_ms + r.elapsed_ms);
            }
        }
        let g = Geo {
            width: 1200.0,
            left: 72.0,
            right: 20.0,
            x_max: x_max.max(1),
        };
        let (labels, hidden_labels, label_rows) = Self::pack_labels(&g, scan);
        let (marks, mark_rows) = Self::pack_marks(&g, v);
        let tp_top = 8.0 + 15.0 * label_rows.max(1) as f64 + 22.0;
        let tp_h = 170.0;
        let strip_top = tp_top + tp_h + 8.0;
        let lat_top = strip_top + 26.0 + 30.0;
        let lat_h = 140.0;
        let mark_top = lat_top + lat_h + 30.0;
        let mark_h = 14.0 * mark_rows.max(1) as f64;
        let axis_y = mark_top + mark_h + 6.0;
        Layout {
            n: scan.timeline.used(g.x_max),
            g,
            labels,
            hidden_labels,
            marks,
            tp_top,
            tp_h,
            strip_top,
            lat_top,
            lat_h,
            mark_top,
            mark_h,
            axis_y,
            height: axis_y + 26.0,
        }
    }

    /// Fault labels, packed into rows above the charts: (fault, row, x) of those shown, how
    /// many were not, and the rows used.
    fn pack_labels(g: &Geo, scan: &Scan) -> (Vec<(usize, usize, f64)>, usize, usize) {
        let mut rows: Vec<f64> = Vec::new();
        let mut labels = Vec::new();
        let mut hidden = 0;
        for (i, f) in scan.faults.iter().enumerate() {
            // At the start of the band, moved left when it would run off the chart.
            let label_w = 6.5 * f.name.chars().count() as f64 + 14.0;
            let x0 = g.x(f.started_ms).min(g.width - label_w).max(0.0);
            match pack(&mut rows, x0, x0 + label_w, LABEL_ROWS) {
                Some(r) => labels.push((i, r, x0)),
                None => hidden += 1,
            }
        }
        (labels, hidden, rows.len())
    }

    /// Anomalous attempts, packed into rows below the charts (a crowded attempt shares a row
    /// by its number), and the rows used.
    fn pack_marks(g: &Geo, v: &'a Verdict) -> (Vec<(&'a AttemptRecord, usize)>, usize) {
        let mut rows: Vec<f64> = Vec::new();
        let mut marks = Vec::new();
        for a in v.attempts.iter().take(MAX_MARKERS) {
            let x0 = g.x(a.opened_ms);
            let x1 = g.x(a.ended_ms.unwrap_or(g.x_max)).max(x0 + 4.0);
            let row = match pack(&mut rows, x0 - 1.0, x1 + 2.0, MARK_ROWS) {
                Some(r) => r,
                None => (a.attempt % MARK_ROWS as u64) as usize,
            };
            marks.push((a, row));
        }
        (marks, rows.len())
    }

    /// The times `[t0, t1)` of bucket `i`, cut at the end of the axis.
    fn bucket(&self, tl: &TimeBuckets, i: usize) -> (u64, u64) {
        let t0 = i as u64 * tl.width_ms;
        (t0, (t0 + tl.width_ms).min(self.g.x_max))
    }

    /// A horizontal grid line at `y` with its label left of the plot.
    fn hgrid(&self, s: &mut String, y: f64, label: &str) {
        w!(
            s,
            "<line class=\"hgrid\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            px(self.g.left),
            px(self.g.r()),
            px(self.g.left - 6.0),
            px(y + 4.0),
            label,
            y = px(y)
        );
    }

    /// A chart's title and subtitle, just above its top.
    fn title(&self, s: &mut String, top: f64, title: &str, sub: &str) {
        w!(
            s,
            "<text class=\"chart-title\" x=\"{}\" y=\"{}\">{title}{sub}</text>",
            px(self.g.left),
            px(top - 7.0),
            sub = if sub.is_empty() {
                String::new()
            } else {
                format!(" <tspan class=\"sub\">{sub}</tspan>")
            }
        );
    }

    /// Grey text in the middle of an empty chart.
    fn empty(&self, s: &mut String, y: f64, text: &str) {
        w!(
            s,
            "<text class=\"empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{text}</text>",
            px(self.g.left + self.g.plot_w() / 2.0),
            px(y)
        );
    }
}

/// The timeline of a run as inline SVG, followed by a note for what did not fit.
pub(super) fn timeline_svg(scan: &Scan, v: &Verdict) -> String {
    let lay = Layout::new(scan, v);
    let mut s = String::new();
    w!(
        s,
        "<svg class=\"timeline\" viewBox=\"0 0 {} {}\" width=\"100%\" role=\"img\" aria-label=\"Timeline of the run: commit throughput, commit latency, fault windows and anomalous transactions\">",
        px(lay.g.width),
        px(lay.height)
    );
    frame(&mut s, &lay);
    fault_bands(&mut s, &lay, scan);
    stuck_bands(&mut s, &lay, scan);
    throughput(&mut s, &lay, &scan.timeline);
    aborts_strip(&mut s, &lay, &scan.timeline);
    latency(&mut s, &lay, &scan.timeline);
    anomalies(&mut s, &lay, scan, v);
    finished(&mut s, &lay, scan);
    remedy_marks(&mut s, &lay, scan);
    s.push_str("</svg>");
    if lay.hidden_labels > 0 {
        w!(
            s,
            "<p class=\"note\">{} fault label(s) did not fit above the chart; hover a band to see its name.</p>",
            lay.hidden_labels
        );
    }
    if v.attempts.len() > MAX_MARKERS {
        w!(
            s,
            "<p class=\"note\">The first {MAX_MARKERS} of {} anomalous attempts are drawn.</p>",
            v.attempts.len()
        );
    }
    s
}

/// The plot backgrounds, the time grid and the time axis.
fn frame(s: &mut String, lay: &Layout) {
    let g = &lay.g;
    for (top, h) in [
        (lay.tp_top, lay.tp_h),
        (lay.strip_top, 26.0),
        (lay.lat_top, lay.lat_h),
        (lay.mark_top, lay.mark_h),
    ] {
        w!(
            s,
            "<rect class=\"plot\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
            px(g.left),
            px(top),
            px(g.plot_w()),
            px(h)
        );
    }
    let step = time_step_ms(g.x_max);
    let mut t = 0;
    while t <= g.x_max {
        w!(
            s,
            "<line class=\"grid\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/><text class=\"tick\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            px(lay.tp_top),
            px(lay.axis_y),
            px(lay.axis_y + 14.0),
            fmt_tick(t, step),
            x = px(g.x(t))
        );
        t += step;
    }
    w!(
        s,
        "<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"end\">time since the start of the run</text>",
        px(g.r()),
        px(lay.axis_y + 26.0)
    );
}

/// One band per fault across every chart, and the labels that fit above them.
fn fault_bands(s: &mut String, lay: &Layout, scan: &Scan) {
    let g = &lay.g;
    let band_h = lay.mark_top + lay.mark_h - lay.tp_top;
    for f in &scan.faults {
        let x0 = g.x(f.started_ms);
        let x1 = g.x(f.healed_ms.unwrap_or(g.x_max)).max(x0 + 2.0);
        let until = match f.healed_ms {
            Some(h) => format!("healed at {}", fmt_t(h)),
            None => "never healed".to_string(),
        };
        w!(
            s,
            "<rect class=\"fault-band\" data-fault=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>",
            esc(&f.name),
            px(x0),
            px(lay.tp_top),
            px(x1 - x0),
            px(band_h),
            fault_colour(&f.kind),
            esc(&format!(
                "fault {} ({} on {}): started at {}, {until}",
                f.name,
                f.kind,
                f.target,
                fmt_t(f.started_ms)
            ))
        );
    }
    for (i, row, x) in &lay.labels {
        let f = &scan.faults[*i];
        let y = 8.0 + 15.0 * *row as f64;
        w!(
            s,
            "<g class=\"fault-label\"><rect x=\"{}\" y=\"{}\" width=\"8\" height=\"8\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text></g>",
            px(*x),
            px(y + 2.0),
            fault_colour(&f.kind),
            px(x + 11.0),
            px(y + 10.0),
            esc(&f.name)
        );
    }
}

/// Commit throughput: stacked bars of messages committed per second, confirmed at the
/// bottom and ambiguous ones found committed later on top.
fn throughput(s: &mut String, lay: &Layout, tl: &TimeBuckets) {
    let (g, top, h) = (&lay.g, lay.tp_top, lay.tp_h);
    let width_s = tl.width_ms as f64 / 1000.0;
    let rate = |c: u64| c as f64 / width_s;
    let tp_max = tl.buckets[..lay.n]
        .iter()
        .map(|b| rate(b.committed + b.resolved))
        .fold(0.0, f64::max);
    lay.title(
        s,
        top,
        "Commit throughput",
        &format!(
            "messages committed per second, one bar per {} bucket",
            esc(&fmt_dur(tl.width_ms))
        ),
    );
    let step = nice_step(tp_max.max(1.0), 4.0);
    let top_val = (tp_max.max(1.0) / step).ceil() * step;
    let ty = |val: f64| top + h - h * val / top_val;
    let mut k = 0.0;
    while k <= top_val + step / 2.0 {
        lay.hgrid(s, ty(k), &fmt_n(k as u64));
        k += step;
    }
    for (i, b) in tl.buckets[..lay.n].iter().enumerate() {
        if b.committed + b.resolved == 0 {
            continue;
        }
        let (t0, t1) = lay.bucket(tl, i);
        let x0 = g.x(t0) + 0.3;
        let bw = (g.x(t1) - x0 - 0.3).max(0.8);
        let y_c = ty(rate(b.committed));
        let y_all = ty(rate(b.committed + b.resolved));
        let mut title = format!(
            "{} to {}: {} messages committed ({}/s)",
            fmt_t(t0),
            fmt_t(t1),
            fmt_n(b.committed),
            fmt_n(rate(b.committed).round() as u64)
        );
        if b.resolved > 0 {
            w!(
                title,
                "; {} messages of ambiguous commits found committed",
                fmt_n(b.resolved)
            );
        }
        w!(s, "<g><title>{}</title>", esc(&title));
        for (class, n, y, bar_h) in [
            ("bar-commit", b.committed, y_c, top + h - y_c),
            ("bar-resolved", b.resolved, y_all, y_c - y_all),
        ] {
            if n > 0 {
                w!(
                    s,
                    "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                    px(x0),
                    px(y),
                    px(bw),
                    px(bar_h)
                );
            }
        }
        s.push_str("</g>");
    }
}

/// Aborted and ambiguous attempts per bucket: two rows of ticks, darker for more.
fn aborts_strip(s: &mut String, lay: &Layout, tl: &TimeBuckets) {
    let (g, top) = (&lay.g, lay.strip_top);
    w!(
        s,
        "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">aborted</text><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">ambiguous</text>",
        px(g.left - 6.0),
        px(top + 10.5),
        px(g.left - 6.0),
        px(top + 23.5)
    );
    let most = tl.buckets[..lay.n]
        .iter()
        .map(|b| b.aborted.max(b.ambiguous))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    for (i, b) in tl.buckets[..lay.n].iter().enumerate() {
        if b.aborted + b.ambiguous == 0 {
            continue;
        }
        let (t0, t1) = lay.bucket(tl, i);
        let x0 = g.x(t0) + 0.3;
        let bw = (g.x(t1) - x0 - 0.3).max(1.5);
        w!(
            s,
            "<g><title>{}</title>",
            esc(&format!(
                "{} to {}: {} attempt(s) aborted, {} ambiguous",
                fmt_t(t0),
                fmt_t(t1),
                b.aborted,
                b.ambiguous
            ))
        );
        for (count, y, class) in [
            (b.aborted, top + 2.0, "tick-aborted"),
            (b.ambiguous, top + 15.0, "tick-ambiguous"),
        ] {
            if count > 0 {
                let op = 0.35 + 0.65 * count as f64 / most;
                w!(
                    s,
                    "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"10\" fill-opacity=\"{:.2}\"/>",
                    px(x0),
                    px(y),
                    px(bw),
                    op
                );
            }
        }
        s.push_str("</g>");
    }
}

/// Commit latency per bucket on a log scale of whole decades: the p99 as a line, the
/// maximum as rings, and a tooltip over each bucket.
fn latency(s: &mut String, lay: &Layout, tl: &TimeBuckets) {
    let (g, top, h) = (&lay.g, lay.lat_top, lay.lat_h);
    lay.title(
        s,
        top,
        "Commit latency",
        "from the first END_TXN COMMIT to the outcome, per bucket: p99 (line) and max (dots), log scale",
    );
    // (p99, max, count) of each bucket with a latency.
    let lat: Vec<Option<(u64, u64, u64)>> = (0..lay.n)
        .map(|i| {
            let b = &tl.buckets[i];
            tl.bucket_quantile(i, 0.99)
                .map(|p99| (p99, b.lat_max, b.lat_n))
        })
        .collect();
    let lo = lat.iter().flatten().map(|l| l.0).min().unwrap_or(1).max(1);
    let hi = lat
        .iter()
        .flatten()
        .map(|l| l.1)
        .max()
        .unwrap_or(1000)
        .max(1);
    let lo_dec = (lo as f64).log10().floor();
    let hi_dec = (hi as f64).log10().ceil().max(lo_dec + 1.0);
    let ly = |ms: u64| {
        let v = (ms.max(1) as f64).log10().clamp(lo_dec, hi_dec);
        top + h - h * (v - lo_dec) / (hi_dec - lo_dec)
    };
    let mut dec = lo_dec;
    while dec <= hi_dec {
        let ms = 10f64.powf(dec) as u64;
        let label = if ms < 1000 {
            format!("{ms} ms")
        } else {
            format!("{} s", ms / 1000)
        };
        lay.hgrid(s, ly(ms), &label);
        dec += 1.0;
    }
    if lat.iter().all(|x| x.is_none()) {
        lay.empty(s, top + h / 2.0, "no commit was requested and answered");
    }
    let mid = |i: usize| g.x((i as u64 * tl.width_ms + tl.width_ms / 2).min(g.x_max));
    let mut path = String::new();
    let mut pen_down = false;
    for (i, p) in lat.iter().enumerate() {
        let Some((p99, _, _)) = p else {
            pen_down = false;
            continue;
        };
        let pen = if pen_down { "L" } else { "M" };
        w!(path, "{pen}{} {} ", px(mid(i)), px(ly(*p99)));
        pen_down = true;
    }
    if !path.is_empty() {
        w!(s, "<path class=\"lat-p99\" d=\"{}\"/>", path.trim_end());
    }
    for (i, p) in lat.iter().enumerate() {
        let Some((p99, max, count)) = p else {
            continue;
        };
        let (t0, t1) = lay.bucket(tl, i);
        w!(
            s,
            "<g><title>{}</title><rect class=\"hover\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/><circle class=\"lat-p99-dot\" cx=\"{x}\" cy=\"{}\" r=\"1.8\"/><circle class=\"lat-max\" cx=\"{x}\" cy=\"{}\" r=\"2.2\"/></g>",
            esc(&format!(
                "{} to {}: {} commit outcome(s), p99 at most {}, max {}",
                fmt_t(t0),
                fmt_t(t1),
                fmt_n(*count),
                fmt_dur(*p99),
                fmt_dur(*max)
            )),
            px(g.x(t0)),
            px(top),
            px((g.x(t1) - g.x(t0)).max(1.0)),
            px(h),
            px(ly(*p99)),
            px(ly(*max)),
            x = px(mid(i))
        );
    }
}

/// The anomalous attempts where their transactions ran: solid from open to the first
/// outcome, a thin line on to a later resolution.
fn anomalies(s: &mut String, lay: &Layout, scan: &Scan, v: &Verdict) {
    let (g, top) = (&lay.g, lay.mark_top);
    lay.title(
        s,
        top,
        "Transactions that carried missing or duplicated numbers",
        "from open to outcome",
    );
    if lay.marks.is_empty() {
        lay.empty(s, top + 11.0, "none");
    }
    let (missing, duplicated) = anomaly_kinds(v);
    for (a, row) in &lay.marks {
        let is_missing = missing.contains(&a.attempt);
        let is_dup = duplicated.contains(&a.attempt);
        let first = scan.first_outcome.get(&a.attempt).copied().flatten();
        let x0 = g.x(a.opened_ms);
        let x_out = g.x(first.or(a.ended_ms).unwrap_or(g.x_max)).max(x0 + 4.0);
        let x_end = g.x(a.ended_ms.unwrap_or(g.x_max)).max(x_out);
        let y = top + 14.0 * *row as f64 + 3.0;
        let class = if is_missing && !is_dup {
            "anomaly missing"
        } else {
            "anomaly duplicated"
        };
        w!(
            s,
            "<g class=\"{class}\" data-attempt=\"{}\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"8\" rx=\"2\"/>",
            a.attempt,
            esc(&attempt_title(a, first, is_missing, is_dup)),
            px(x0),
            px(y),
            px(x_out - x0),
        );
        if x_end > x_out + 1.0 {
            w!(
                s,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"2\"/><rect x=\"{}\" y=\"{}\" width=\"2\" height=\"8\"/>",
                px(x_out),
                px(y + 3.0),
                px(x_end - x_out),
                px(x_end - 2.0),
                px(y)
            );
        }
        s.push_str("</g>");
    }
}

/// A dashed line across the charts where the producer finished.
fn finished(s: &mut String, lay: &Layout, scan: &Scan) {
    let Some(f) = scan.finished_ms else {
        return;
    };
    let xf = lay.g.x(f);
    // The label on the left of the line, unless the line is near the left edge.
    let (tx, anchor) = if xf - lay.g.left > 100.0 {
        (xf - 3.0, "end")
    } else {
        (xf + 3.0, "start")
    };
    w!(
        s,
        "<g class=\"finished\"><title>the producer finished at {}</title><line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\">producer finished</text></g>",
        fmt_t(f),
        px(lay.tp_top),
        px(lay.mark_top + lay.mark_h),
        px(tx),
        px(lay.tp_top + 12.0),
        x = px(xf)
    );
}

/// A partition's name without its tenant and namespace.
fn short(partition: &str) -> &str {
    partition.rsplit('/').next().unwrap_or(partition)
}

/// The tooltip of a stuck read's band.
fn stuck_title(st: &StuckSpan, remedies: &[RemedyMark]) -> String {
    let names: Vec<&str> = st.partitions.iter().map(|p| short(p)).collect();
    let mut t = format!(
        "read-back stuck on {} from {} (the harness gave up waiting at {})",
        if names.is_empty() {
            "the topic".to_string()
        } else {
            names.join(", ")
        },
        fmt_t(st.since_ms),
        fmt_t(st.detected_ms)
    );
    match &st.healed {
        Some((at, remedy)) => w!(t, "; healed by remedy {remedy} at {}", fmt_t(*at)),
        None => {
            let tried: Vec<&str> = remedies
                .iter()
                .filter(|r| r.t_ms >= st.detected_ms)
                .map(|r| r.remedy.as_str())
                .collect();
            if tried.is_empty() {
                t.push_str("; no remedy healed it");
            } else {
                w!(t, "; no remedy healed it (tried: {})", tried.join(", "));
            }
        }
    }
    t
}

/// Diagonal hatching of the box `[x0, x1] x [y0, y1]` as path data, a line every `step`.
fn hatch(x0: f64, x1: f64, y0: f64, y1: f64, step: f64) -> String {
    let mut d = String::new();
    // Lines x = c + (y - y0), for c from x0 - (y1 - y0) to x1, clipped to the box.
    let mut c = x0 - (y1 - y0) + step / 2.0;
    while c < x1 {
        let ya = y0.max(y0 + x0 - c);
        let yb = y1.min(y0 + x1 - c);
        if yb > ya {
            w!(
                d,
                "M{} {}L{} {}",
                px(c + ya - y0),
                px(ya),
                px(c + yb - y0),
                px(yb)
            );
        }
        c += step;
    }
    d
}

/// One hatched band per stuck read across every chart, from when the read was held to the end
/// of the remedy that healed it (to the end of the chart when none did), with a label.
fn stuck_bands(s: &mut String, lay: &Layout, scan: &Scan) {
    let g = &lay.g;
    let (y0, y1) = (lay.tp_top, lay.mark_top + lay.mark_h);
    for st in &scan.stuck {
        let x0 = g.x(st.since_ms);
        let end = st.healed.as_ref().map_or(g.x_max, |(t, _)| *t);
        let x1 = g.x(end).max(x0 + 2.0);
        let names: Vec<&str> = st.partitions.iter().map(|p| short(p)).collect();
        w!(
            s,
            "<g class=\"stuck\"><rect class=\"stuck-band\" data-partitions=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}</title></rect><path class=\"stuck-hatch\" d=\"{}\"/>",
            esc(&names.join(" ")),
            px(x0),
            px(y0),
            px(x1 - x0),
            px(y1 - y0),
            esc(&stuck_title(st, &scan.remedies)),
            hatch(x0, x1, y0, y1, 9.0)
        );
        let (tx, anchor) = if g.r() - x0 > 110.0 {
            (x0 + 4.0, "start")
        } else {
            (x0 - 4.0, "end")
        };
        w!(
            s,
            "<text class=\"stuck-label\" x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\">read-back stuck</text></g>",
            px(tx),
            px(y0 + 26.0)
        );
    }
}

/// A mark per remedy tried: a bar from its start to its end at the top of the charts and a
/// line where it ended, green when every partition was readable after it.
fn remedy_marks(s: &mut String, lay: &Layout, scan: &Scan) {
    let g = &lay.g;
    for r in &scan.remedies {
        let start = r.t_ms.saturating_sub(r.elapsed_ms);
        let (xs, xe) = (g.x(start), g.x(r.t_ms));
        let title = format!(
            "remedy {} from {} to {} ({}) on {}: {}",
            r.remedy,
            fmt_t(start),
            fmt_t(r.t_ms),
            fmt_dur(r.elapsed_ms),
            if r.targets.is_empty() {
                "-".to_string()
            } else {
                r.targets.join(", ")
            },
            if r.healed {
                "healed, every partition readable"
            } else {
                "still held"
            }
        );
        w!(
            s,
            "<g class=\"remedy {}\" data-remedy=\"{}\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"6\" rx=\"1\"/><line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/></g>",
            if r.healed { "healed" } else { "held" },
            esc(&r.remedy),
            esc(&title),
            px(xs.min(xe - 2.0)),
            px(lay.tp_top + 2.0),
            px((xe - xs).max(2.0)),
            px(lay.tp_top),
            px(lay.mark_top + lay.mark_h),
            x = px(xe)
        );
    }
}
