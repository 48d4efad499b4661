//! Regressions named at the end of a soak (issue 35): the soak's own records compared with the
//! results store's earlier ones of the same group (scenario name and content hash × Pulsar
//! version × client). Pure: the caller reads the store and passes both lists.
//!
//! What counts as a regression, per group:
//!
//! 1. **Newly failing**: every earlier record of each of the previous N nights passed (N =
//!    [`Settings::nights`], `--regression-nights`, at least N such nights in the store) and at
//!    least one of the soak's iterations did not pass. A night is a UTC date; the soak's own
//!    date is not a previous night (an earlier soak the same day still counts for 2 and 3).
//! 2. **New finding / cause**: a known bug or finding (`results::findings_of`), or a cause of a
//!    graded range (`pulsar`, `ambiguity`, ...), that the soak names and no earlier record of
//!    the group named. A group with no earlier record has nothing to compare: its first night
//!    names no regression (a note says so).
//! 3. **Beyond the usual spread**: the median of the soak's recovery times per fault kind
//!    (above) or of its throughputs (below) outside `median ± k × spread` of the earlier
//!    records' values of the last [`Settings::window_nights`] nights, where `spread` is the
//!    scaled median absolute deviation (1.4826 × MAD, the standard deviation for normal data)
//!    but at least [`Settings::min_relative_spread`] of the median, so a history of identical
//!    values does not flag every wobble. Needs [`Settings::min_previous`] earlier values, else
//!    a note says it was not checked. Only the harmful direction counts: a faster recovery or
//!    a higher throughput is no regression.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::results::{utc_date, Record};

/// How the soak is compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Previous nights that must all have passed for a failure now to be a regression.
    pub nights: usize,
    /// `k`: how many spreads from the median a value may lie.
    pub spread_k: f64,
    /// Earlier values needed before a recovery time or a throughput is judged.
    pub min_previous: usize,
    /// The spread is taken over the earlier records of this many most recent nights.
    pub window_nights: usize,
    /// The spread's floor, as a fraction of the median.
    pub min_relative_spread: f64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            nights: 3,
            spread_k: 3.0,
            min_previous: 5,
            window_nights: 14,
            min_relative_spread: 0.05,
        }
    }
}

/// What kind of regression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Passed on each of the previous N nights, fails now.
    NewlyFailing,
    /// A known bug or finding never named before in the group.
    NewFinding,
    /// A cause of a graded range never seen before in the group.
    NewCause,
    /// A fault kind's recovery time above the usual spread.
    SlowerRecovery,
    /// Throughput below the usual spread.
    LowerThroughput,
}

impl Kind {
    /// A verdict changed (1, 2); else a measurement moved (3).
    pub fn is_verdict(self) -> bool {
        matches!(self, Kind::NewlyFailing | Kind::NewFinding | Kind::NewCause)
    }
}

/// The usual values a measurement was judged against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Band {
    pub median: f64,
    pub low: f64,
    pub high: f64,
    /// How many earlier values it rests on.
    pub previous: u64,
}

/// One regression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Regression {
    pub kind: Kind,
    pub scenario: String,
    pub scenario_hash: String,
    pub pulsar_version: String,
    pub client: String,
    /// What regressed: the failing statuses, the finding or cause, the fault kind, or
    /// `throughput`.
    pub subject: String,
    /// One line for people.
    pub message: String,
    /// The soak's runs that show it (their run directories).
    pub run_dirs: Vec<String>,
    /// The soak's value (a median), for a measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usual: Option<Band>,
}

/// The comparison's outcome, as `summary.json` keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// False when there was nothing to compare with (`--no-store`, or a store that could not
    /// be read); `notes` says why.
    pub compared: bool,
    pub settings: Settings,
    /// The earlier records of the soak's groups it was compared with.
    pub previous_records: u64,
    /// Most severe first: newly failing, new findings, new causes, recovery, throughput.
    pub regressions: Vec<Regression>,
    /// What could not be judged, and why.
    pub notes: Vec<String>,
}

impl Comparison {
    /// No comparison made, for this reason.
    pub fn not_compared(settings: Settings, why: &str) -> Comparison {
        Comparison {
            compared: false,
            settings,
            previous_records: 0,
            regressions: Vec::new(),
            notes: vec![why.to_string()],
        }
    }

    /// A verdict regression (newly failing, new finding or cause) among them.
    pub fn has_verdict_regression(&self) -> bool {
        self.regressions.iter().any(|r| r.kind.is_verdict())
    }

    /// The lines a soak prints first in its summary.
    pub fn text(&self) -> String {
        let mut t = String::new();
        if !self.compared {
            t.push_str(&format!(
                "regressions: not compared ({})\n",
                self.notes.join("; ")
            ));
            return t;
        }
        if self.regressions.is_empty() {
            t.push_str(&format!(
                "regressions: none (compared with {} earlier record(s) in the results store)\n",
                self.previous_records
            ));
        } else {
            t.push_str(&format!(
                "REGRESSIONS: {} (compared with {} earlier record(s) in the results store)\n",
                self.regressions.len(),
                self.previous_records
            ));
            for r in &self.regressions {
                t.push_str(&format!("  {}\n", r.message));
            }
        }
        for n in &self.notes {
            t.push_str(&format!("  note: {n}\n"));
        }
        t
    }
}

type GroupKey = (String, String, String, String);

fn key(r: &Record) -> GroupKey {
    (
        r.scenario.clone(),
        r.scenario_hash.clone(),
        r.pulsar_version.clone(),
        r.client.clone(),
    )
}

/// Compare the soak's records (`current`) with the store's (`store`, which may hold the
/// soak's own: a record whose run id and directory are the soak's is not history, nor is one
/// started after `soak_started_ms`).
pub fn compare(
    current: &[Record],
    store: &[Record],
    soak_started_ms: u64,
    settings: &Settings,
) -> Comparison {
    let own: BTreeSet<(&str, &str)> = current
        .iter()
        .map(|r| (r.run_id.as_str(), r.run_dir.as_str()))
        .collect();
    let mut history: BTreeMap<GroupKey, Vec<&Record>> = BTreeMap::new();
    for r in store {
        if r.started_ms < soak_started_ms && !own.contains(&(r.run_id.as_str(), &r.run_dir)) {
            history.entry(key(r)).or_default().push(r);
        }
    }
    let mut now: BTreeMap<GroupKey, Vec<&Record>> = BTreeMap::new();
    for r in current {
        now.entry(key(r)).or_default().push(r);
    }
    let today = utc_date(soak_started_ms);
    let mut out = Comparison {
        compared: true,
        settings: settings.clone(),
        previous_records: 0,
        regressions: Vec::new(),
        notes: Vec::new(),
    };
    if current.is_empty() {
        out.notes
            .push("no iteration finished with a run directory: nothing to compare".into());
    }
    for (k, cur) in &now {
        let past = history.get(k).map(Vec::as_slice).unwrap_or(&[]);
        out.previous_records += past.len() as u64;
        let g = GroupView::new(k, cur);
        if past.is_empty() {
            out.notes.push(format!(
                "{}: no earlier record in the results store (a first night names no regression)",
                g.name
            ));
            continue;
        }
        newly_failing(&g, past, &today, settings, &mut out);
        never_seen(&g, past, &mut out);
        spread(&g, past, settings, &mut out);
    }
    out.regressions.sort_by_key(|r| r.kind);
    out
}

/// A group of the soak's records, and how messages name it.
struct GroupView<'a> {
    key: &'a GroupKey,
    cur: &'a [&'a Record],
    name: String,
}

impl<'a> GroupView<'a> {
    fn new(key: &'a GroupKey, cur: &'a [&'a Record]) -> GroupView<'a> {
        let name = format!(
            "{} ({}) on Pulsar {}, client {}",
            key.0, key.1, key.2, key.3
        );
        GroupView { key, cur, name }
    }

    fn regression(&self, kind: Kind, subject: String, message: String) -> Regression {
        Regression {
            kind,
            scenario: self.key.0.clone(),
            scenario_hash: self.key.1.clone(),
            pulsar_version: self.key.2.clone(),
            client: self.key.3.clone(),
            subject,
            message,
            run_dirs: Vec::new(),
            now: None,
            usual: None,
        }
    }
}

/// Check 1: the previous N nights all passed and the soak did not.
fn newly_failing(g: &GroupView, past: &[&Record], today: &str, s: &Settings, out: &mut Comparison) {
    let failing: Vec<&&Record> = g.cur.iter().filter(|r| r.status != "pass").collect();
    if failing.is_empty() {
        return;
    }
    let mut nights: BTreeMap<String, bool> = BTreeMap::new();
    for r in past {
        let d = utc_date(r.started_ms);
        if d.as_str() < today {
            *nights.entry(d).or_insert(true) &= r.status == "pass";
        }
    }
    let n = s.nights.max(1);
    if nights.len() < n {
        out.notes.push(format!(
            "{}: {} earlier night(s) in the results store, fewer than the {n} a newly failing scenario needs",
            g.name,
            nights.len()
        ));
        return;
    }
    let last: Vec<(&String, &bool)> = nights.iter().rev().take(n).collect();
    if !last.iter().all(|(_, passed)| **passed) {
        return;
    }
    let mut statuses: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &failing {
        *statuses.entry(r.status.as_str()).or_insert(0) += 1;
    }
    let counted: Vec<String> = statuses.iter().map(|(s, n)| format!("{s} {n}")).collect();
    let mut dates: Vec<&str> = last.iter().map(|(d, _)| d.as_str()).collect();
    dates.reverse();
    let mut reg = g.regression(
        Kind::NewlyFailing,
        statuses.keys().copied().collect::<Vec<_>>().join(","),
        format!(
            "newly failing: {} passed on each of the previous {n} night(s) ({}) and now {} of {} iteration(s) did not pass ({})",
            g.name,
            dates.join(", "),
            failing.len(),
            g.cur.len(),
            counted.join(", ")
        ),
    );
    reg.run_dirs = failing.iter().map(|r| r.run_dir.clone()).collect();
    out.regressions.push(reg);
}

/// Check 2: findings and causes no earlier record of the group named.
fn never_seen(g: &GroupView, past: &[&Record], out: &mut Comparison) {
    let seen_findings: BTreeSet<&str> = past
        .iter()
        .flat_map(|r| r.findings.iter().map(String::as_str))
        .collect();
    let seen_causes: BTreeSet<&str> = past
        .iter()
        .flat_map(|r| r.causes.iter().map(String::as_str))
        .collect();
    let mut new: BTreeMap<(Kind, &str), Vec<String>> = BTreeMap::new();
    for r in g.cur {
        for f in r
            .findings
            .iter()
            .filter(|f| !seen_findings.contains(f.as_str()))
        {
            new.entry((Kind::NewFinding, f))
                .or_default()
                .push(r.run_dir.clone());
        }
        for c in r
            .causes
            .iter()
            .filter(|c| !seen_causes.contains(c.as_str()))
        {
            new.entry((Kind::NewCause, c))
                .or_default()
                .push(r.run_dir.clone());
        }
    }
    for ((kind, what), dirs) in new {
        let noun = match kind {
            Kind::NewFinding => "finding",
            _ => "cause",
        };
        let mut reg = g.regression(
            kind,
            what.to_string(),
            format!(
                "new {noun}: {what} in {} iteration(s) of {}, never named in its {} earlier run(s)",
                dirs.len(),
                g.name,
                past.len()
            ),
        );
        reg.run_dirs = dirs;
        out.regressions.push(reg);
    }
}

/// Check 3: recovery times per fault kind and throughput against the usual spread.
fn spread(g: &GroupView, past: &[&Record], s: &Settings, out: &mut Comparison) {
    // The earlier records of the last `window_nights` nights.
    let nights: BTreeSet<String> = past.iter().map(|r| utc_date(r.started_ms)).collect();
    let from = nights
        .iter()
        .nth_back(s.window_nights.max(1) - 1)
        .or_else(|| nights.first())
        .cloned()
        .unwrap_or_default();
    let window: Vec<&&Record> = past
        .iter()
        .filter(|r| utc_date(r.started_ms) >= from)
        .collect();
    let mut kinds: BTreeSet<&str> = BTreeSet::new();
    for r in g.cur {
        kinds.extend(r.recovery_ms.keys().map(String::as_str));
    }
    for kind in kinds {
        let before: Vec<f64> = window
            .iter()
            .flat_map(|r| r.recovery_ms.get(kind).into_iter().flatten())
            .map(|&v| v as f64)
            .collect();
        let cur: Vec<(f64, &str)> = g
            .cur
            .iter()
            .flat_map(|r| {
                r.recovery_ms
                    .get(kind)
                    .into_iter()
                    .flatten()
                    .map(|&v| (v as f64, r.run_dir.as_str()))
            })
            .collect();
        let what = format!("recovery after {kind}");
        if let Some(reg) = judge(g, &what, kind, &before, &cur, true, s, out) {
            out.regressions.push(reg);
        }
    }
    let before: Vec<f64> = window.iter().filter_map(|r| r.throughput).collect();
    let cur: Vec<(f64, &str)> = g
        .cur
        .iter()
        .filter_map(|r| r.throughput.map(|t| (t, r.run_dir.as_str())))
        .collect();
    if !cur.is_empty() {
        if let Some(reg) = judge(g, "throughput", "throughput", &before, &cur, false, s, out) {
            out.regressions.push(reg);
        }
    }
}

/// The soak's median against the band of `before`; `higher_is_worse` says which side counts.
#[allow(clippy::too_many_arguments)]
fn judge(
    g: &GroupView,
    what: &str,
    subject: &str,
    before: &[f64],
    cur: &[(f64, &str)],
    higher_is_worse: bool,
    s: &Settings,
    out: &mut Comparison,
) -> Option<Regression> {
    if before.len() < s.min_previous {
        out.notes.push(format!(
            "{}: {what} not checked: {} earlier value(s), fewer than {}",
            g.name,
            before.len(),
            s.min_previous
        ));
        return None;
    }
    let band = band(before, s);
    let values: Vec<f64> = cur.iter().map(|(v, _)| *v).collect();
    let m = median(&values);
    let worse = if higher_is_worse {
        m > band.high
    } else {
        m < band.low
    };
    if !worse {
        return None;
    }
    let (unit, kind) = if higher_is_worse {
        ("ms", Kind::SlowerRecovery)
    } else {
        ("msg/s", Kind::LowerThroughput)
    };
    let mut reg = g.regression(
        kind,
        subject.to_string(),
        format!(
            "{what} of {}: median {m:.0} {unit} over {} value(s) now, usual {:.0} {unit} ({:.0}..{:.0} over {} earlier value(s))",
            g.name,
            values.len(),
            band.median,
            band.low,
            band.high,
            band.previous
        ),
    );
    reg.run_dirs = cur
        .iter()
        .filter(|(v, _)| {
            if higher_is_worse {
                *v > band.high
            } else {
                *v < band.low
            }
        })
        .map(|(_, d)| d.to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    reg.now = Some(m);
    reg.usual = Some(band);
    Some(reg)
}

/// The median of values (not empty).
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return 0.0;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `median ± k × max(1.4826 × MAD, min_relative_spread × |median|)`.
fn band(values: &[f64], s: &Settings) -> Band {
    let m = median(values);
    let deviations: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
    let mad = median(&deviations);
    let spread = (1.4826 * mad).max(s.min_relative_spread * m.abs());
    Band {
        median: m,
        low: m - s.spread_k * spread,
        high: m + s.spread_k * spread,
        previous: values.len() as u64,
    }
}

#[cfg(test)]
mod tests;
