//! Human-readable reports of a run directory. Computes no verdict: it renders the verdict
//! the checker gave, with the run's facts.
//!
//! `report.html` is one self-contained file: inline CSS and inline SVG, no script and no
//! reference to anything outside the file, so it opens offline and can be attached to a CI
//! job as it is. The history is streamed once and folded into at most [`BUCKETS`] time
//! buckets, so a run of a day costs the report no more memory than a run of a minute.
//!
//! `index.html` of a soak lists its iterations and links to their reports.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use crate::brokerlog::TxnLog;
use crate::checker::{AttemptRecord, Span, Verdict};
use crate::error::{Error, Result};
use crate::history::{EventBody, HistoryError, Outcome, TxnId};
use crate::plan::{Plan, Trigger};
use crate::rundir::{RunDir, RunInfo};

/// Append formatted text to a `String` (writing to a `String` cannot fail).
macro_rules! w {
    ($dst:expr, $($arg:tt)*) => {{
        let _ = write!($dst, $($arg)*);
    }};
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The most time buckets the timeline is cut into, whatever the length of the run.
pub const BUCKETS: usize = 200;
/// The width of a bucket at the start; it doubles whenever the run outgrows the buckets.
const FIRST_BUCKET_MS: u64 = 50;
/// Bins of the commit latency histograms: exact below 4 ms, then 4 per power of two.
const LAT_BINS: usize = 160;
/// Rows listed one by one in a table before "n more" (the rest is in verdict.json).
const TABLE_CAP: usize = 200;
/// Fault events kept for the report (a plan has far fewer).
const MAX_FAULTS: usize = 5000;
/// Anomalous attempts drawn on the timeline.
const MAX_MARKERS: usize = 500;

// ---------------------------------------------------------------------------------------------
// Formatting

/// 1234567 -> "1,234,567".
fn fmt_n(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration for people: "850 ms", "12.3 s", "4 min 05 s", "2 h 03 min".
fn fmt_dur(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else if ms < 3_600_000 {
        format!("{} min {:02} s", ms / 60_000, (ms / 1000) % 60)
    } else {
        format!("{} h {:02} min", ms / 3_600_000, (ms / 60_000) % 60)
    }
}

/// An offset since the start of the run, in seconds.
fn fmt_t(ms: u64) -> String {
    format!("{:.3} s", ms as f64 / 1000.0)
}

/// Unix milliseconds as "2026-11-30 00:53:20 UTC".
fn fmt_utc(unix_ms: u64) -> String {
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let unix_s = unix_ms / 1000;
    let z = (unix_s / 86_400) as i64 + 719_468;
    let secs = unix_s % 86_400;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

/// Number ranges `[a, b)` as text, the first `cap` of them.
fn fmt_ranges(r: &[(u64, u64)], cap: usize) -> String {
    let mut parts: Vec<String> = r
        .iter()
        .take(cap)
        .map(|(start, end)| {
            Span {
                start: *start,
                end: *end,
            }
            .to_string()
        })
        .collect();
    if r.len() > cap {
        parts.push(format!("and {} more", r.len() - cap));
    }
    parts.join(", ")
}

/// Number ranges as HTML, one unbreakable `<code>` each, the first `cap` of them.
fn ranges_html(r: &[(u64, u64)], cap: usize) -> String {
    let mut parts: Vec<String> = r
        .iter()
        .take(cap)
        .map(|(start, end)| {
            let span = Span {
                start: *start,
                end: *end,
            };
            format!("<code>{}</code>", esc(&span.to_string()))
        })
        .collect();
    if r.len() > cap {
        parts.push(format!("and {} more", r.len() - cap));
    }
    parts.join(", ")
}

fn fmt_outcome(o: Option<Outcome>) -> &'static str {
    match o {
        Some(Outcome::Committed) => "committed",
        Some(Outcome::Aborted) => "aborted",
        Some(Outcome::Ambiguous) => "ambiguous",
        None => "never learned",
    }
}

/// A number that draws nicely as SVG coordinate text.
fn px(v: f64) -> String {
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

/// The colour of a fault's band, by kind.
fn fault_colour(kind: &str) -> &'static str {
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

// ---------------------------------------------------------------------------------------------
// The history, folded into buckets while it streams

fn lat_bin(ms: u64) -> usize {
    if ms < 4 {
        return ms as usize;
    }
    let e = 63 - ms.leading_zeros() as usize; // >= 2
    let sub = ((ms >> (e - 2)) & 3) as usize;
    (4 + (e - 2) * 4 + sub).min(LAT_BINS - 1)
}

/// The largest latency that falls in bin `i`.
fn lat_bin_upper(i: usize) -> u64 {
    if i < 4 {
        return i as u64;
    }
    let e = (i - 4) / 4 + 2;
    let sub = ((i - 4) % 4) as u64;
    ((5 + sub) << (e - 2)) - 1
}

/// The `q` quantile of a latency histogram of `n` values (an upper bound, at most `max`).
fn quantile(hist: &[u64], n: u64, q: f64, max: u64) -> Option<u64> {
    if n == 0 {
        return None;
    }
    let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
    let mut seen = 0;
    for (i, c) in hist.iter().enumerate() {
        seen += c;
        if seen >= rank {
            return Some(lat_bin_upper(i).min(max));
        }
    }
    Some(max)
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Bucket {
    /// Messages of attempts confirmed committed.
    committed: u64,
    /// Messages of ambiguous attempts found committed later (counted when found).
    resolved: u64,
    /// Attempts that ended aborted.
    aborted: u64,
    /// Attempts whose commit was ambiguous.
    ambiguous: u64,
    /// Commit latencies measured (attempts with a commit request that got an outcome).
    lat_n: u64,
    lat_max: u64,
}

impl Bucket {
    fn add(&mut self, o: &Bucket) {
        self.committed += o.committed;
        self.resolved += o.resolved;
        self.aborted += o.aborted;
        self.ambiguous += o.ambiguous;
        self.lat_n += o.lat_n;
        self.lat_max = self.lat_max.max(o.lat_max);
    }
}

/// Commit throughput and latency in at most [`BUCKETS`] buckets of equal width. When an event
/// falls past the last bucket, neighbours merge and the width doubles: the memory is fixed and
/// the length of the run need not be known in advance.
#[derive(Debug)]
struct Timeline {
    width_ms: u64,
    buckets: Vec<Bucket>,
    /// `BUCKETS` latency histograms of `LAT_BINS` bins, one after the other.
    hist: Vec<u64>,
    /// The latency histogram of the whole run.
    total: Vec<u64>,
    total_n: u64,
    total_max: u64,
}

impl Default for Timeline {
    fn default() -> Timeline {
        Timeline {
            width_ms: FIRST_BUCKET_MS,
            buckets: vec![Bucket::default(); BUCKETS],
            hist: vec![0; BUCKETS * LAT_BINS],
            total: vec![0; LAT_BINS],
            total_n: 0,
            total_max: 0,
        }
    }
}

impl Timeline {
    /// The bucket of time `t`, coarsening first if `t` is past the last one.
    fn slot(&mut self, t: u64) -> usize {
        while t / self.width_ms >= BUCKETS as u64 {
            self.coarsen();
        }
        (t / self.width_ms) as usize
    }

    fn coarsen(&mut self) {
        // Bucket i takes 2i and 2i+1; both lie at or after i, so nothing is read after it
        // was overwritten.
        for i in 0..BUCKETS / 2 {
            let mut b = self.buckets[2 * i];
            b.add(&self.buckets[2 * i + 1]);
            self.buckets[i] = b;
            for k in 0..LAT_BINS {
                self.hist[i * LAT_BINS + k] =
                    self.hist[2 * i * LAT_BINS + k] + self.hist[(2 * i + 1) * LAT_BINS + k];
            }
        }
        for b in &mut self.buckets[BUCKETS / 2..] {
            *b = Bucket::default();
        }
        for c in &mut self.hist[BUCKETS / 2 * LAT_BINS..] {
            *c = 0;
        }
        self.width_ms *= 2;
    }

    fn latency(&mut self, t: u64, ms: u64) {
        let i = self.slot(t);
        let bin = lat_bin(ms);
        let b = &mut self.buckets[i];
        b.lat_n += 1;
        b.lat_max = b.lat_max.max(ms);
        self.hist[i * LAT_BINS + bin] += 1;
        self.total[bin] += 1;
        self.total_n += 1;
        self.total_max = self.total_max.max(ms);
    }

    /// The `q` quantile of the commit latency in bucket `i`.
    fn bucket_quantile(&self, i: usize, q: f64) -> Option<u64> {
        let b = &self.buckets[i];
        quantile(
            &self.hist[i * LAT_BINS..(i + 1) * LAT_BINS],
            b.lat_n,
            q,
            b.lat_max,
        )
    }

    fn total_quantile(&self, q: f64) -> Option<u64> {
        quantile(&self.total, self.total_n, q, self.total_max)
    }
}

/// One fault as the history tells it, from `fault_started` to `fault_healed`.
#[derive(Debug, Clone)]
struct FaultSpan {
    name: String,
    kind: String,
    target: String,
    planned_ms: Option<u64>,
    action: String,
    detail: String,
    started_ms: u64,
    healed_ms: Option<u64>,
    heal_ok: Option<bool>,
    heal_action: String,
    heal_detail: String,
    /// What a `reply_loss` fault dropped (the first MAX_DROPS_SHOWN), and how many in all.
    drops: Vec<String>,
    drops_n: u64,
}

/// Dropped replies listed per fault in the faults table.
const MAX_DROPS_SHOWN: usize = 20;

/// A fault that was skipped or whose injection failed.
#[derive(Debug, Clone)]
struct FaultNote {
    t_ms: u64,
    fault: String,
    why: String,
}

struct OpenAttempt {
    messages: u64,
    commit_ms: Option<u64>,
}

/// What one pass over the history gathers. Memory: the timeline (fixed), the attempts in
/// flight, the ambiguous attempts not yet resolved, and the fault events.
#[derive(Default)]
struct Scan {
    timeline: Timeline,
    open: HashMap<u64, OpenAttempt>,
    /// Ambiguous attempts not yet resolved -> their message count.
    ambiguous: HashMap<u64, u64>,
    faults: Vec<FaultSpan>,
    open_faults: HashMap<String, usize>,
    faults_dropped: u64,
    skipped: Vec<FaultNote>,
    failed: Vec<FaultNote>,
    end_ms: u64,
    events: u64,
    messages_committed: u64,
    messages_resolved: u64,
    /// Lines that could not be read, and the first such problem (or why there is no history).
    unreadable: u64,
    problem: Option<String>,
    /// The anomalous attempts of the verdict -> when the producer first learned an outcome
    /// (their records keep only the last time, which may be a much later resolution).
    first_outcome: HashMap<u64, Option<u64>>,
    /// When the producer finished.
    finished_ms: Option<u64>,
}

impl Scan {
    fn add(&mut self, t: u64, body: EventBody) {
        self.events += 1;
        self.end_ms = self.end_ms.max(t);
        match body {
            EventBody::TxnOpened {
                attempt, numbers, ..
            } => {
                let messages = numbers.iter().map(|(a, b)| b.saturating_sub(*a)).sum();
                self.open.insert(
                    attempt,
                    OpenAttempt {
                        messages,
                        commit_ms: None,
                    },
                );
            }
            EventBody::CommitRequested {
                attempt, try_no: 1, ..
            } => {
                if let Some(a) = self.open.get_mut(&attempt) {
                    a.commit_ms.get_or_insert(t);
                }
            }
            EventBody::TxnOutcome {
                attempt, outcome, ..
            } => {
                if let Some(first @ None) = self.first_outcome.get_mut(&attempt) {
                    *first = Some(t);
                }
                let open = self.open.remove(&attempt);
                let messages = open.as_ref().map_or(0, |o| o.messages);
                let i = self.timeline.slot(t);
                let b = &mut self.timeline.buckets[i];
                match outcome {
                    Outcome::Committed => {
                        b.committed += messages;
                        self.messages_committed += messages;
                    }
                    Outcome::Aborted => b.aborted += 1,
                    Outcome::Ambiguous => {
                        b.ambiguous += 1;
                        self.ambiguous.insert(attempt, messages);
                    }
                }
                if let Some(c) = open.and_then(|o| o.commit_ms) {
                    self.timeline.latency(t, t.saturating_sub(c));
                }
            }
            EventBody::TxnResolved {
                attempt, resolved, ..
            } => {
                let messages = self.ambiguous.remove(&attempt).unwrap_or(0);
                if resolved == Outcome::Committed {
                    let i = self.timeline.slot(t);
                    self.timeline.buckets[i].resolved += messages;
                    self.messages_resolved += messages;
                }
            }
            EventBody::FaultStarted {
                fault,
                kind,
                target,
                planned_ms,
                action,
                detail,
            } => {
                if self.faults.len() >= MAX_FAULTS {
                    self.faults_dropped += 1;
                    return;
                }
                self.open_faults.insert(fault.clone(), self.faults.len());
                self.faults.push(FaultSpan {
                    name: fault,
                    kind,
                    target,
                    planned_ms,
                    action,
                    detail,
                    started_ms: t,
                    healed_ms: None,
                    heal_ok: None,
                    heal_action: String::new(),
                    heal_detail: String::new(),
                    drops: Vec::new(),
                    drops_n: 0,
                });
            }
            EventBody::ReplyDropped {
                fault,
                command,
                request_id,
                txn,
            } => {
                if let Some(i) = self.open_faults.get(&fault) {
                    let f = &mut self.faults[*i];
                    f.drops_n += 1;
                    if f.drops.len() < MAX_DROPS_SHOWN {
                        f.drops.push(format!(
                            "{}: dropped {command} (request {request_id}{})",
                            fmt_t(t),
                            match txn {
                                Some(x) => format!(", txn {x}"),
                                None => String::new(),
                            }
                        ));
                    }
                }
            }
            EventBody::FaultHealed {
                fault,
                action,
                ok,
                detail,
            } => {
                if let Some(i) = self.open_faults.remove(&fault) {
                    let f = &mut self.faults[i];
                    f.healed_ms = Some(t);
                    f.heal_ok = Some(ok);
                    f.heal_action = action;
                    f.heal_detail = detail;
                }
            }
            EventBody::ProducerFinished { .. } => {
                self.finished_ms.get_or_insert(t);
            }
            EventBody::FaultSkipped { fault, reason } if self.skipped.len() < MAX_FAULTS => {
                self.skipped.push(FaultNote {
                    t_ms: t,
                    fault,
                    why: reason,
                });
            }
            EventBody::FaultFailed { fault, error } if self.failed.len() < MAX_FAULTS => {
                self.failed.push(FaultNote {
                    t_ms: t,
                    fault,
                    why: error,
                });
            }
            _ => {}
        }
    }
}

/// Stream a history file into a [`Scan`], noting when the attempts `watch` first learned an
/// outcome. A missing or damaged history does not stop the report: the page says what could
/// not be read.
fn scan_history(path: &Path, watch: &[u64]) -> Scan {
    let mut s = Scan {
        first_outcome: watch.iter().map(|a| (*a, None)).collect(),
        ..Scan::default()
    };
    let events = match crate::history::read(path) {
        Ok(events) => events,
        Err(e) => {
            s.problem = Some(e.to_string());
            return s;
        }
    };
    for ev in events {
        match ev {
            Ok(ev) => s.add(ev.t_ms, ev.body),
            Err(e) => {
                s.unreadable += 1;
                let stop = matches!(e, HistoryError::Read { .. });
                if s.problem.is_none() {
                    s.problem = Some(e.to_string());
                }
                if stop {
                    break;
                }
            }
        }
    }
    s
}

// ---------------------------------------------------------------------------------------------
// The timeline chart

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

fn timeline_svg(scan: &Scan, v: &Verdict) -> String {
    let tl = &scan.timeline;
    let mut x_max = scan.end_ms;
    for a in &v.attempts {
        x_max = x_max.max(a.ended_ms.unwrap_or(a.opened_ms));
    }
    let x_max = x_max.max(1);
    let g = Geo {
        width: 1200.0,
        left: 72.0,
        right: 20.0,
        x_max,
    };
    let n = ((x_max / tl.width_ms) as usize + 1).min(BUCKETS);
    let width_s = tl.width_ms as f64 / 1000.0;

    // Fault labels, packed into rows above the charts.
    const LABEL_ROWS: usize = 4;
    let mut label_rows: Vec<f64> = Vec::new();
    let mut labels: Vec<(usize, usize, f64)> = Vec::new(); // (fault index, row, x)
    let mut hidden_labels = 0;
    for (i, f) in scan.faults.iter().enumerate() {
        // At the start of the band, moved left when it would run off the chart.
        let label_w = 6.5 * f.name.chars().count() as f64 + 14.0;
        let x0 = g.x(f.started_ms).min(g.width - label_w).max(0.0);
        match pack(&mut label_rows, x0, x0 + label_w, LABEL_ROWS) {
            Some(r) => labels.push((i, r, x0)),
            None => hidden_labels += 1,
        }
    }
    // Anomalous attempts, packed into rows below the charts.
    const MARK_ROWS: usize = 6;
    let (missing, duplicated) = anomaly_kinds(v);
    let mut mark_rows: Vec<f64> = Vec::new();
    let mut marks: Vec<(&AttemptRecord, usize)> = Vec::new();
    for a in v.attempts.iter().take(MAX_MARKERS) {
        let x0 = g.x(a.opened_ms);
        let x1 = g.x(a.ended_ms.unwrap_or(x_max)).max(x0 + 4.0);
        let row = match pack(&mut mark_rows, x0 - 1.0, x1 + 2.0, MARK_ROWS) {
            Some(r) => r,
            None => (a.attempt % MARK_ROWS as u64) as usize,
        };
        marks.push((a, row));
    }

    // Vertical layout.
    let label_h = 15.0 * label_rows.len().max(1) as f64;
    let tp_top = 8.0 + label_h + 22.0;
    let tp_h = 170.0;
    let strip_top = tp_top + tp_h + 8.0;
    let strip_h = 26.0;
    let lat_top = strip_top + strip_h + 30.0;
    let lat_h = 140.0;
    let mark_top = lat_top + lat_h + 30.0;
    let mark_h = 14.0 * mark_rows.len().max(1) as f64;
    let axis_y = mark_top + mark_h + 6.0;
    let height = axis_y + 26.0;
    let (l, r) = (g.left, g.width - g.right);

    let mut s = String::new();
    w!(
        s,
        "<svg class=\"timeline\" viewBox=\"0 0 {} {}\" width=\"100%\" role=\"img\" aria-label=\"Timeline of the run: commit throughput, commit latency, fault windows and anomalous transactions\">",
        px(g.width),
        px(height)
    );
    // Plot backgrounds.
    for (top, h) in [
        (tp_top, tp_h),
        (strip_top, strip_h),
        (lat_top, lat_h),
        (mark_top, mark_h),
    ] {
        w!(
            s,
            "<rect class=\"plot\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
            px(l),
            px(top),
            px(g.plot_w()),
            px(h)
        );
    }
    // Time grid and axis.
    let step = time_step_ms(x_max);
    let mut t = 0;
    while t <= x_max {
        let x = g.x(t);
        w!(
            s,
            "<line class=\"grid\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/><text class=\"tick\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            px(tp_top),
            px(axis_y),
            px(axis_y + 14.0),
            fmt_tick(t, step),
            x = px(x)
        );
        t += step;
    }
    w!(
        s,
        "<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"end\">time since the start of the run</text>",
        px(r),
        px(axis_y + 26.0)
    );

    // Fault bands: one rect per fault, across every chart.
    let band_top = tp_top;
    let band_h = mark_top + mark_h - tp_top;
    for f in &scan.faults {
        let x0 = g.x(f.started_ms);
        let x1 = g.x(f.healed_ms.unwrap_or(x_max)).max(x0 + 2.0);
        let until = match f.healed_ms {
            Some(h) => format!("healed at {}", fmt_t(h)),
            None => "never healed".to_string(),
        };
        w!(
            s,
            "<rect class=\"fault-band\" data-fault=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>",
            esc(&f.name),
            px(x0),
            px(band_top),
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
    for (i, row, x) in &labels {
        let f = &scan.faults[*i];
        let x = *x;
        let y = 8.0 + 15.0 * *row as f64;
        w!(
            s,
            "<g class=\"fault-label\"><rect x=\"{}\" y=\"{}\" width=\"8\" height=\"8\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text></g>",
            px(x),
            px(y + 2.0),
            fault_colour(&f.kind),
            px(x + 11.0),
            px(y + 10.0),
            esc(&f.name)
        );
    }

    // Commit throughput: stacked bars, messages/s.
    let rate = |c: u64| c as f64 / width_s;
    let tp_max = (0..n)
        .map(|i| rate(tl.buckets[i].committed + tl.buckets[i].resolved))
        .fold(0.0, f64::max);
    w!(
        s,
        "<text class=\"chart-title\" x=\"{}\" y=\"{}\">Commit throughput <tspan class=\"sub\">messages committed per second, one bar per {} bucket</tspan></text>",
        px(l),
        px(tp_top - 7.0),
        esc(&fmt_dur(tl.width_ms))
    );
    let tp_step = nice_step(tp_max.max(1.0), 4.0);
    let tp_top_val = (tp_max.max(1.0) / tp_step).ceil() * tp_step;
    let ty = |val: f64| tp_top + tp_h - tp_h * val / tp_top_val;
    let mut k = 0.0;
    while k <= tp_top_val + tp_step / 2.0 {
        let y = ty(k);
        w!(
            s,
            "<line class=\"hgrid\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            px(l),
            px(r),
            px(l - 6.0),
            px(y + 4.0),
            fmt_n(k as u64),
            y = px(y)
        );
        k += tp_step;
    }
    for i in 0..n {
        let b = &tl.buckets[i];
        if b.committed + b.resolved == 0 {
            continue;
        }
        let t0 = i as u64 * tl.width_ms;
        let t1 = (t0 + tl.width_ms).min(x_max);
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
        if b.committed > 0 {
            w!(
                s,
                "<rect class=\"bar-commit\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                px(x0),
                px(y_c),
                px(bw),
                px(tp_top + tp_h - y_c)
            );
        }
        if b.resolved > 0 {
            w!(
                s,
                "<rect class=\"bar-resolved\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                px(x0),
                px(y_all),
                px(bw),
                px(y_c - y_all)
            );
        }
        s.push_str("</g>");
    }

    // Aborted and ambiguous attempts per bucket.
    w!(
        s,
        "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">aborted</text><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">ambiguous</text>",
        px(l - 6.0),
        px(strip_top + 10.5),
        px(l - 6.0),
        px(strip_top + 23.5)
    );
    let ab_max = (0..n)
        .map(|i| tl.buckets[i].aborted.max(tl.buckets[i].ambiguous))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    for i in 0..n {
        let b = &tl.buckets[i];
        if b.aborted + b.ambiguous == 0 {
            continue;
        }
        let t0 = i as u64 * tl.width_ms;
        let t1 = (t0 + tl.width_ms).min(x_max);
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
        for (count, top, class) in [
            (b.aborted, strip_top + 2.0, "tick-aborted"),
            (b.ambiguous, strip_top + 15.0, "tick-ambiguous"),
        ] {
            if count > 0 {
                let op = 0.35 + 0.65 * count as f64 / ab_max;
                w!(
                    s,
                    "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"10\" fill-opacity=\"{:.2}\"/>",
                    px(x0),
                    px(top),
                    px(bw),
                    op
                );
            }
        }
        s.push_str("</g>");
    }

    // Commit latency: p99 line and max points, log scale.
    w!(
        s,
        "<text class=\"chart-title\" x=\"{}\" y=\"{}\">Commit latency <tspan class=\"sub\">from the first END_TXN COMMIT to the outcome, per bucket: p99 (line) and max (dots), log scale</tspan></text>",
        px(l),
        px(lat_top - 7.0)
    );
    let lat: Vec<Option<(u64, u64, u64)>> = (0..n)
        .map(|i| {
            let b = &tl.buckets[i];
            tl.bucket_quantile(i, 0.99)
                .map(|p99| (p99, b.lat_max, b.lat_n))
        })
        .collect();
    let lo_val = lat
        .iter()
        .flatten()
        .map(|(p, _, _)| *p)
        .min()
        .unwrap_or(1)
        .max(1);
    let hi_val = lat
        .iter()
        .flatten()
        .map(|(_, m, _)| *m)
        .max()
        .unwrap_or(1000)
        .max(1);
    let lo_dec = (lo_val as f64).log10().floor();
    let hi_dec = (hi_val as f64).log10().ceil().max(lo_dec + 1.0);
    let ly = |ms: u64| {
        let v = (ms.max(1) as f64).log10().clamp(lo_dec, hi_dec);
        lat_top + lat_h - lat_h * (v - lo_dec) / (hi_dec - lo_dec)
    };
    let mut dec = lo_dec;
    while dec <= hi_dec {
        let ms = 10f64.powf(dec) as u64;
        let y = ly(ms);
        w!(
            s,
            "<line class=\"hgrid\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            px(l),
            px(r),
            px(l - 6.0),
            px(ly(ms) + 4.0),
            if ms < 1000 {
                format!("{ms} ms")
            } else {
                format!("{} s", ms / 1000)
            },
            y = px(y)
        );
        dec += 1.0;
    }
    if lat.iter().all(|x| x.is_none()) {
        w!(
            s,
            "<text class=\"empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">no commit was requested and answered</text>",
            px(l + g.plot_w() / 2.0),
            px(lat_top + lat_h / 2.0)
        );
    }
    let mut path = String::new();
    let mut pen_down = false;
    for (i, p) in lat.iter().enumerate() {
        let Some((p99, _, _)) = p else {
            pen_down = false;
            continue;
        };
        let t_mid = (i as u64 * tl.width_ms + tl.width_ms / 2).min(x_max);
        w!(
            path,
            "{}{} {} ",
            if pen_down { "L" } else { "M" },
            px(g.x(t_mid)),
            px(ly(*p99))
        );
        pen_down = true;
    }
    if !path.is_empty() {
        w!(s, "<path class=\"lat-p99\" d=\"{}\"/>", path.trim_end());
    }
    for (i, p) in lat.iter().enumerate() {
        let Some((p99, max, count)) = p else {
            continue;
        };
        let t0 = i as u64 * tl.width_ms;
        let t1 = (t0 + tl.width_ms).min(x_max);
        let x = g.x((t0 + tl.width_ms / 2).min(x_max));
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
            px(lat_top),
            px((g.x(t1) - g.x(t0)).max(1.0)),
            px(lat_h),
            px(ly(*p99)),
            px(ly(*max)),
            x = px(x)
        );
    }

    // Anomalous attempts, where their transactions ran.
    w!(
        s,
        "<text class=\"chart-title\" x=\"{}\" y=\"{}\">Transactions that carried missing or duplicated numbers <tspan class=\"sub\">from open to outcome</tspan></text>",
        px(l),
        px(mark_top - 7.0)
    );
    if marks.is_empty() {
        w!(
            s,
            "<text class=\"empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">none</text>",
            px(l + g.plot_w() / 2.0),
            px(mark_top + 11.0)
        );
    }
    for (a, row) in &marks {
        let is_missing = missing.contains(&a.attempt);
        let is_dup = duplicated.contains(&a.attempt);
        let first = scan.first_outcome.get(&a.attempt).copied().flatten();
        // Solid from open to the first outcome; a thin line on to a later resolution.
        let x0 = g.x(a.opened_ms);
        let x_out = g.x(first.or(a.ended_ms).unwrap_or(x_max)).max(x0 + 4.0);
        let x_end = g.x(a.ended_ms.unwrap_or(x_max)).max(x_out);
        let y = mark_top + 14.0 * *row as f64 + 3.0;
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
    if let Some(f) = scan.finished_ms {
        let xf = g.x(f);
        // The label on the left of the line, unless the line is near the left edge.
        let (tx, anchor) = if xf - l > 100.0 {
            (xf - 3.0, "end")
        } else {
            (xf + 3.0, "start")
        };
        w!(
            s,
            "<g class=\"finished\"><title>the producer finished at {}</title><line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\">producer finished</text></g>",
            fmt_t(f),
            px(tp_top),
            px(mark_top + mark_h),
            px(tx),
            px(tp_top + 12.0),
            x = px(xf)
        );
    }
    s.push_str("</svg>");
    if hidden_labels > 0 {
        w!(
            s,
            "<p class=\"note\">{hidden_labels} fault label(s) did not fit above the chart; hover a band to see its name.</p>"
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

// ---------------------------------------------------------------------------------------------
// The page

const CSS: &str = r#"
:root{--pass:#137333;--violation:#c5221f;--inconclusive:#b06000;--ink:#1f2328;--muted:#59636e;--line:#d8dee4;--soft:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","Liberation Sans",sans-serif;color:var(--ink);background:#fff}
main{max-width:1280px;margin:0 auto;padding:20px 28px 56px}
h1.title{font-size:20px;margin:4px 0 12px}
h2{font-size:18px;margin:34px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:20px 0 8px}
a{color:#0b57d0}
.verdict{border-left:12px solid;border-radius:8px;padding:14px 22px 16px;margin-bottom:14px}
.verdict.pass{border-color:var(--pass);background:#e6f4ea}
.verdict.violation{border-color:var(--violation);background:#fce8e6}
.verdict.inconclusive{border-color:#f9ab00;background:#fef7e0}
.verdict.other{border-color:var(--muted);background:var(--soft)}
.status{font-size:44px;font-weight:800;letter-spacing:.05em;line-height:1.1}
.pass .status{color:var(--pass)}.violation .status{color:var(--violation)}.inconclusive .status{color:var(--inconclusive)}
.summary{font-size:16px;margin:6px 0 0;max-width:110ch}
.verdict ul{margin:8px 0 0;padding-left:20px}
.meta{display:grid;grid-template-columns:max-content 1fr max-content 1fr;gap:3px 18px;margin:10px 0;font-size:13px}
.meta dt{color:var(--muted)}.meta dd{margin:0;overflow-wrap:anywhere}
.reproduce{margin:12px 0 0}
.reproduce .label{font-size:13px;color:var(--muted);margin-bottom:3px}
pre.cmd{margin:0;background:#0d1117;color:#e6edf3;padding:10px 14px;border-radius:6px;white-space:pre-wrap;overflow-wrap:anywhere;user-select:all;-webkit-user-select:all}
pre.cmd code{font-size:13px;color:inherit}
code{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono","Liberation Mono",monospace}
td code{white-space:nowrap}
td.wrap code{white-space:normal;overflow-wrap:anywhere}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:10px}
.card{border:1px solid var(--line);border-radius:8px;padding:8px 12px;background:#fff}
.card .n{font-size:22px;font-weight:700;font-variant-numeric:tabular-nums}
.card .l{color:var(--muted);font-size:12px}
.card.bad{border-color:var(--violation);background:#fce8e6}.card.bad .n{color:var(--violation)}
.card.warn{border-color:#f9ab00;background:#fef7e0}
.card.good .n{color:var(--pass)}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600;white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr:target{background:#fff8c5}
.pill{display:inline-block;padding:0 7px;border-radius:10px;font-size:12px;font-weight:600;white-space:nowrap}
.pill.ok,.pill.pass,.pill.committed{background:#e6f4ea;color:var(--pass)}
.pill.bad,.pill.violation,.pill.missing{background:#fce8e6;color:var(--violation)}
.pill.warn,.pill.inconclusive,.pill.ambiguous{background:#fef7e0;color:var(--inconclusive)}
.pill.aborted,.pill.other{background:#eef0f2;color:var(--muted)}
.pill.duplicated{background:#f6e6f0;color:#8e1b5f}
.note,.empty-note{color:var(--muted);font-size:13px;margin:6px 0}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;margin:0 4px 0 14px}
.legend{font-size:12px;color:var(--muted);margin:4px 0 0}
.swatch.line{height:2px;vertical-align:3px;background:#1f2d3d}
.swatch.ring{width:9px;height:9px;border:1.5px solid #e8710a;border-radius:50%}
.chart{border:1px solid var(--line);border-radius:8px;padding:8px 8px 4px}
svg.timeline{display:block}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Liberation Sans",Arial,sans-serif}
svg .plot{fill:#fbfcfd;stroke:#d0d7de}
svg .grid{stroke:#e3e7eb;stroke-width:1}
svg .hgrid{stroke:#eceff2;stroke-width:1}
svg .tick{font-size:11px;fill:#59636e}
svg .axis-title{font-size:11px;fill:#8c959f}
svg .chart-title{font-size:13px;font-weight:600;fill:#1f2328}
svg .chart-title .sub{font-weight:400;fill:#59636e;font-size:11px}
svg .empty{font-size:12px;fill:#8c959f}
svg .fault-band{fill-opacity:.17}
svg .fault-label text{font-size:11px;fill:#1f2328}
svg .bar-commit{fill:#3a6fb0}
svg .bar-resolved{fill:#a7c1e6}
svg .tick-aborted{fill:#6e7781}
svg .tick-ambiguous{fill:#f9ab00}
svg .lat-p99{fill:none;stroke:#1f2d3d;stroke-width:1.6;stroke-linejoin:round}
svg .lat-p99-dot{fill:#1f2d3d}
svg .lat-max{fill:none;stroke:#e8710a;stroke-width:1.2}
svg .hover{fill:transparent}
svg .anomaly.missing{fill:#d93025}
svg .anomaly.duplicated{fill:#a142f4}
svg .finished line{stroke:#59636e;stroke-width:1;stroke-dasharray:4 3}
svg .finished text{font-size:10px;fill:#59636e}
.brokerlog{margin:6px 0 0}
.brokerlog .label{font-size:12px;color:var(--muted);margin:4px 0 2px}
pre.log{margin:0;background:var(--soft);border:1px solid var(--line);border-radius:4px;padding:4px 8px;font:11.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono","Liberation Mono",monospace;white-space:pre-wrap;overflow-wrap:anywhere}
pre.log span{display:block;padding-left:2em;text-indent:-2em}
footer{margin-top:40px;color:var(--muted);font-size:12px}
.strip{display:flex;flex-wrap:wrap;gap:3px;margin:10px 0}
.strip a{display:block;width:14px;height:14px;border-radius:3px}
.strip .pass{background:#34a853}.strip .violation{background:#d93025}.strip .inconclusive{background:#f9ab00}.strip .other{background:#9aa0a6}
"#;

fn status_class(status: &str) -> &'static str {
    match status {
        "pass" => "pass",
        "violation" => "violation",
        "inconclusive" => "inconclusive",
        _ => "other",
    }
}

fn page_start(h: &mut String, title: &str) {
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    w!(h, "<title>{}</title>\n<style>{CSS}</style>\n", esc(title));
    h.push_str("</head>\n<body>\n<main>\n");
}

fn card(h: &mut String, n: &str, label: &str, class: &str) {
    w!(
        h,
        "<div class=\"card {class}\"><div class=\"n\">{}</div><div class=\"l\">{}</div></div>",
        esc(n),
        esc(label)
    );
}

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
    h.push_str("</p>\n");
}

fn counts_section(h: &mut String, scan: &Scan, v: &Verdict) {
    h.push_str("<h2 id=\"counts\">Counts</h2>\n<h3>Producer</h3><div class=\"cards\">");
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
    h.push_str("</div>\n<h3>Read-back</h3><div class=\"cards\">");
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
    h.push_str("</div>\n");
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
                "<div class=\"label\">Broker log lines naming {}{}</div><pre class=\"log\">",
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
            for line in &l.named {
                w!(c, "<span>{}</span>\n", esc(&line.to_string()));
            }
            c.push_str("</pre>");
        }
        if !l.during.is_empty() {
            w!(
                c,
                "<div class=\"label\">WARN/ERROR lines about the topic logged while {} was open or committing (they name no transaction){}</div><pre class=\"log\">",
                esc(&l.txn.to_string()),
                if l.during_more > 0 {
                    format!(" (the first {}; {} more)", l.during.len(), l.during_more)
                } else {
                    String::new()
                }
            );
            for line in &l.during {
                w!(c, "<span>{}</span>\n", esc(&line.to_string()));
            }
            c.push_str("</pre>");
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

fn anomalies_section(h: &mut String, v: &Verdict) {
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
            let span = Span {
                start: d.what.start,
                end: d.what.end,
            };
            let mut ids = String::new();
            for (value, list) in d.what.message_ids.iter().take(3) {
                let list: Vec<String> = list.iter().map(|i| i.to_string()).collect();
                w!(ids, "<br><code>{value} at {}</code>", esc(&list.join(", ")));
            }
            w!(
                h,
                "<tr><td><span class=\"pill duplicated\">duplicated</span></td><td class=\"wrap\"><code>{}</code>{ids}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
                esc(&span.to_string()),
                fmt_n(span.len()),
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
}

fn faults_section(h: &mut String, scan: &Scan, plan: &Plan, v: &Verdict) {
    h.push_str("<h2 id=\"faults\">Faults</h2>\n");
    let planned: HashMap<&str, Trigger> = plan
        .faults
        .iter()
        .map(|f| (f.name.as_str(), f.trigger))
        .collect();
    let recovery: HashMap<&str, (Option<u64>, Option<u64>)> = v
        .faults
        .iter()
        .map(|f| (f.fault.as_str(), (f.recovery_ms, f.commit_gap_ms)))
        .collect();
    let fired = scan.faults.len() + scan.faults_dropped as usize;
    w!(
        h,
        "<p class=\"note\">{} planned, {} fired, {} skipped, {} failed to inject.</p>",
        plan.faults.len(),
        fired,
        scan.skipped.len(),
        scan.failed.len()
    );
    if !scan.faults.is_empty() {
        h.push_str("<table><thead><tr><th>fault</th><th>kind</th><th>target</th><th>action</th><th class=\"num\">planned</th><th class=\"num\">started</th><th class=\"num\">duration</th><th class=\"num\">recovery</th><th class=\"num\">commit gap</th><th>heal</th></tr></thead><tbody>");
        for f in &scan.faults {
            let plan_text = match (f.planned_ms, planned.get(f.name.as_str())) {
                (Some(ms), _) => fmt_t(ms),
                (None, Some(Trigger::AtMs(ms))) => fmt_t(*ms),
                (None, Some(Trigger::AfterCommits(n))) => format!("after {} commits", fmt_n(*n)),
                (None, None) => "-".to_string(),
            };
            let duration = match f.healed_ms {
                Some(hl) => fmt_dur(hl.saturating_sub(f.started_ms)),
                None => "never healed".to_string(),
            };
            let (rec, gap) = recovery.get(f.name.as_str()).copied().unwrap_or_default();
            let heal = match f.heal_ok {
                Some(true) => "<span class=\"pill ok\">ok</span>".to_string(),
                Some(false) => "<span class=\"pill bad\">failed</span>".to_string(),
                None => "<span class=\"pill warn\">not healed</span>".to_string(),
            };
            let mut heal_text = String::new();
            if !f.heal_action.is_empty() {
                w!(heal_text, "<br><code>{}</code>", esc(&f.heal_action));
            }
            if !f.heal_detail.is_empty() {
                w!(heal_text, "<br>{}", esc(&f.heal_detail));
            }
            let mut detail = if f.detail.is_empty() {
                String::new()
            } else {
                format!("<br>{}", esc(&f.detail))
            };
            for d in &f.drops {
                w!(detail, "<br>{}", esc(d));
            }
            if f.drops_n > f.drops.len() as u64 {
                w!(
                    detail,
                    "<br>... and {} more dropped replies",
                    f.drops_n - f.drops.len() as u64
                );
            }
            w!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"wrap\"><code>{}</code>{detail}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"wrap\">{heal}{heal_text}</td></tr>",
                esc(&f.name),
                esc(&f.kind),
                esc(&f.target),
                esc(&f.action),
                esc(&plan_text),
                esc(&fmt_t(f.started_ms)),
                esc(&duration),
                rec.map(fmt_dur).unwrap_or_else(|| "-".into()),
                gap.map(fmt_dur).unwrap_or_else(|| "-".into()),
            );
        }
        h.push_str("</tbody></table>\n<p class=\"note\">planned: the plan's offset, counted from when fault scheduling began (as the producer starts); started: offset from the start of the run, as every time in this report; recovery: from the heal to the first commit confirmed after it; commit gap: from the last commit before the fault to the first after its heal.</p>\n");
    }
    if scan.faults_dropped > 0 {
        w!(
            h,
            "<p class=\"note\">{} more fault(s) fired and are not listed.</p>",
            fmt_n(scan.faults_dropped)
        );
    }
    if !scan.skipped.is_empty() || !scan.failed.is_empty() {
        h.push_str("<h3>Skipped and failed faults</h3><table><thead><tr><th>fault</th><th></th><th class=\"num\">at</th><th>reason</th></tr></thead><tbody>");
        for (notes, pill) in [
            (&scan.skipped, "<span class=\"pill aborted\">skipped</span>"),
            (&scan.failed, "<span class=\"pill bad\">failed</span>"),
        ] {
            for n in notes.iter().take(TABLE_CAP) {
                w!(
                    h,
                    "<tr><td>{}</td><td>{pill}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                    esc(&n.fault),
                    esc(&fmt_t(n.t_ms)),
                    esc(&n.why)
                );
            }
        }
        h.push_str("</tbody></table>\n");
    }
    // Planned faults the history never mentions: the run ended (or stopped) first.
    let mut seen: BTreeSet<&str> = scan.faults.iter().map(|f| f.name.as_str()).collect();
    seen.extend(scan.skipped.iter().map(|n| n.fault.as_str()));
    seen.extend(scan.failed.iter().map(|n| n.fault.as_str()));
    let unseen: Vec<&str> = plan
        .faults
        .iter()
        .map(|f| f.name.as_str())
        .filter(|n| !seen.contains(n))
        .collect();
    if !unseen.is_empty() && scan.faults_dropped == 0 {
        let shown: Vec<String> = unseen.iter().take(50).map(|n| esc(n)).collect();
        w!(
            h,
            "<p class=\"note\">Planned but not in the history ({}): {}{}</p>",
            unseen.len(),
            shown.join(", "),
            if unseen.len() > 50 { ", ..." } else { "" }
        );
    }
}

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
    counts_section(&mut h, scan, v);
    anomalies_section(&mut h, v);
    faults_section(&mut h, scan, plan, v);
    attempts_section(&mut h, v);
    w!(
        h,
        "<footer>pulsar-chaos {} &middot; {} history events &middot; the timeline has {} buckets of {}</footer>\n",
        env!("CARGO_PKG_VERSION"),
        fmt_n(scan.events),
        ((scan.end_ms.max(1) / scan.timeline.width_ms) as usize + 1).min(BUCKETS),
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
    dir.write("report.html", &render_html(info, plan, v, &scan))
}

/// One iteration of a soak, as a row of `index.html`.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexRow {
    pub iteration: u64,
    pub seed: u64,
    /// "pass", "violation", "inconclusive" (anything else is shown as it is).
    pub status: String,
    pub summary: String,
    pub seconds: f64,
    /// Relative link to the iteration's report.html; None when its run directory was pruned.
    pub run_dir: Option<String>,
    pub reproduce: String,
}

/// Write `index.html` into `dir`: totals at the top, then one row per soak iteration with a
/// link to its report. Self-contained like `report.html`.
pub fn write_index(dir: &Path, title: &str, rows: &[IndexRow]) -> Result<()> {
    let mut h = String::with_capacity(16 * 1024 + rows.len() * 512);
    page_start(&mut h, title);
    let count = |s: &str| rows.iter().filter(|r| status_class(&r.status) == s).count();
    let (pass, violation, inconclusive) =
        (count("pass"), count("violation"), count("inconclusive"));
    let other = rows.len() - pass - violation - inconclusive;
    let overall = if violation > 0 {
        "violation"
    } else if inconclusive > 0 || other > 0 {
        "inconclusive"
    } else if rows.is_empty() {
        "other"
    } else {
        "pass"
    };
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
            if rows.len() - pass > failing.len() {
                ", ..."
            } else {
                ""
            }
        )
    };
    w!(
        h,
        "<h1 class=\"title\">{}</h1>\n<section class=\"verdict {overall}\"><div class=\"status\">{}</div><p class=\"summary\">{} iteration(s): {pass} passed, {violation} violation(s), {inconclusive} inconclusive{}; {} in all.</p>{failing}</section>\n",
        esc(title),
        if rows.is_empty() {
            "NO ITERATIONS".to_string()
        } else {
            overall.to_uppercase()
        },
        rows.len(),
        if other > 0 {
            format!(", {other} other")
        } else {
            String::new()
        },
        esc(&fmt_dur((total_s * 1000.0).max(0.0) as u64))
    );
    h.push_str("<div class=\"cards\">");
    card(&mut h, &fmt_n(rows.len() as u64), "iterations", "");
    card(&mut h, &fmt_n(pass as u64), "passed", "good");
    card(
        &mut h,
        &fmt_n(violation as u64),
        "violations",
        if violation > 0 { "bad" } else { "" },
    );
    card(
        &mut h,
        &fmt_n(inconclusive as u64),
        "inconclusive",
        if inconclusive > 0 { "warn" } else { "" },
    );
    h.push_str("</div>\n<div class=\"strip\">");
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
    h.push_str("</div>\n<h2>Iterations</h2>\n<table><thead><tr><th class=\"num\">iteration</th><th class=\"num\">seed</th><th>status</th><th class=\"num\">time</th><th>summary</th><th>report</th><th>reproduce</th></tr></thead><tbody>");
    for r in rows {
        // Only relative links: the index must not point off the machine.
        let link = match &r.run_dir {
            Some(d) if !d.contains(':') && !d.starts_with("//") => {
                format!("<a href=\"{}\">report</a>", esc(d))
            }
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
    h.push_str("</tbody></table>\n</main>\n</body>\n</html>\n");
    let path = dir.join("index.html");
    std::fs::write(&path, h).map_err(Error::io(format!("write {}", path.display())))
}

/// One JUnit test case: a run or a soak iteration.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub seconds: f64,
    /// None: passed. Some((kind, message, details)): failed.
    pub failure: Option<(String, String, String)>,
}

/// Write a JUnit XML file with one test suite.
pub fn write_junit(path: &std::path::Path, suite: &str, cases: &[Case]) -> Result<()> {
    let failures = cases.iter().filter(|c| c.failure.is_some()).count();
    let total: f64 = cases.iter().map(|c| c.seconds).sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(&format!(
        "<testsuites tests=\"{}\" failures=\"{failures}\" time=\"{total:.3}\">\n  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{total:.3}\">\n",
        cases.len(),
        esc(suite),
        cases.len()
    ));
    for c in cases {
        x.push_str(&format!(
            "    <testcase classname=\"pulsar-chaos.{}\" name=\"{}\" time=\"{:.3}\"",
            esc(suite),
            esc(&c.name),
            c.seconds
        ));
        match &c.failure {
            None => x.push_str("/>\n"),
            Some((kind, msg, details)) => x.push_str(&format!(
                ">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n",
                esc(kind),
                esc(msg),
                esc(details)
            )),
        }
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    std::fs::write(path, x).map_err(crate::error::Error::io(format!("write {}", path.display())))
}

pub mod matrix;

#[cfg(test)]
mod tests;
