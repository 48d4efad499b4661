//! The results store's data, decided here and stored by the root crate's `store`: one
//! [`Record`] per finished run (what it ran, what it found), the findings and known bugs a
//! verdict names, and [`trends`]: the records grouped per scenario × Pulsar version × client
//! and per night (UTC date), with the night each finding was first and last seen; and
//! [`page`], the lines the trends page plots.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::checker::Verdict;

pub mod chart;

pub use chart::{page, Lines, Page, Point};

/// One run as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub run_id: String,
    /// Unix milliseconds at the run's start (`run.json`'s `started_ms`).
    pub started_ms: u64,
    /// Which command ran it: run, soak, matrix or replay.
    pub source: String,
    pub scenario: String,
    /// SHA-256 of the run's resolved `scenario.yaml`, hex (the first 16 digits).
    pub scenario_hash: String,
    pub seed: u64,
    /// `cluster.pulsar_version`; "external" for a cluster the harness did not start.
    pub pulsar_version: String,
    pub image: Option<String>,
    /// "own", or the official client and its library version (`java 4.2.4`).
    pub client: String,
    /// The pulsar-chaos version that recorded it.
    pub harness_version: String,
    /// The verdict's status (`pass`, `violation`, ...); `none` when the run left no verdict.
    pub status: String,
    /// The causes of the graded missing and duplicated ranges (`pulsar`, `ambiguity`, ...).
    pub causes: Vec<String>,
    pub expected: u64,
    pub received: u64,
    pub missing: u64,
    pub duplicate_values: u64,
    pub duplicate_copies: u64,
    pub unexpected: u64,
    pub ambiguous: u64,
    /// Messages committed per second by the producer (`producer.json`).
    pub throughput: Option<f64>,
    /// Fault kind -> recovery times (ms from the heal to the first commit after it).
    pub recovery_ms: BTreeMap<String, Vec<u64>>,
    /// The known bugs and findings the verdict names (see [`findings_of`]).
    pub findings: Vec<String>,
    /// The run directory, absolute (a soak prunes passing ones: it may be gone).
    pub run_dir: String,
}

impl Record {
    /// The verdict's part of a record: status, causes, counts, recovery times, findings.
    pub fn set_verdict(&mut self, v: &Verdict) {
        self.status = v.status.to_string();
        self.causes = v.graded.by_cause.keys().map(|c| c.to_string()).collect();
        self.expected = v.expected;
        self.received = v.received;
        self.missing = v.missing_total;
        self.duplicate_values = v.duplicate_values;
        self.duplicate_copies = v.duplicate_copies;
        self.unexpected = v.unexpected_total;
        self.ambiguous = v.producer.as_ref().map(|p| p.ambiguous).unwrap_or(0);
        self.recovery_ms.clear();
        for f in &v.faults {
            if let Some(r) = f.recovery_ms {
                self.recovery_ms.entry(f.kind.clone()).or_default().push(r);
            }
        }
        self.findings = findings_of(v);
    }
}

/// The known bugs and findings a verdict names, each by a short stable key: an upstream issue
/// (`apache/pulsar#24945`) when the cause cites one, else the cause's shape
/// (`matrix::cause_key`); the broker's low-water-mark abort of a confirmed commit as
/// `lwm-abort-of-confirmed-commit`. Sorted, each once.
pub fn findings_of(v: &Verdict) -> Vec<String> {
    let mut out = BTreeSet::new();
    let likely = [
        v.stall.as_ref().and_then(|s| s.likely_cause.as_deref()),
        v.stuck_reads
            .as_ref()
            .and_then(|s| s.likely_cause.as_deref()),
    ];
    for c in likely.into_iter().flatten() {
        out.insert(crate::matrix::cause_key(c));
    }
    let explanations = v
        .missing
        .iter()
        .map(|m| m.explanation.as_str())
        .chain(v.duplicates.iter().map(|d| d.explanation.as_str()));
    for e in explanations {
        if e.contains("low-water-mark rule") {
            out.insert(LWM_ABORT.to_string());
        }
    }
    out.into_iter().collect()
}

/// The key of `brokerlog::known_cause`'s pattern.
pub const LWM_ABORT: &str = "lwm-abort-of-confirmed-commit";

/// `YYYY-MM-DD` (UTC) of a Unix time in milliseconds.
pub fn utc_date(unix_ms: u64) -> String {
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = (unix_ms / 86_400_000) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Unix milliseconds at 00:00 UTC of a `YYYY-MM-DD` date; `None` if it is not one.
pub fn parse_date(s: &str) -> Option<u64> {
    let mut it = s.split('-');
    let (y, m, d) = (it.next()?, it.next()?, it.next()?);
    if it.next().is_some() || y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (y, m, d): (i64, i64, i64) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || y < 1970 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let ms = (days as u64) * 86_400_000;
    // 2026-02-31 is not a date: it must come back as itself.
    (utc_date(ms) == s).then_some(ms)
}

/// Which records `trends` looks at.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub scenario: Option<String>,
    pub version: Option<String>,
    /// Only runs started at or after this Unix time (ms).
    pub since_ms: Option<u64>,
}

impl Filter {
    pub fn admits(&self, r: &Record) -> bool {
        self.scenario.as_ref().is_none_or(|s| *s == r.scenario)
            && self.version.as_ref().is_none_or(|v| *v == r.pulsar_version)
            && self.since_ms.is_none_or(|t| r.started_ms >= t)
    }
}

/// `trends --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trends {
    pub runs: u64,
    /// Per scenario × Pulsar version × client, sorted by them.
    pub groups: Vec<Group>,
    /// Every finding and known bug named, sorted by name.
    pub findings: Vec<FindingSeen>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub scenario: String,
    pub pulsar_version: String,
    pub client: String,
    pub runs: u64,
    pub passed: u64,
    /// Oldest night first.
    pub nights: Vec<Night>,
}

/// One UTC date's runs of a group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Night {
    pub date: String,
    pub runs: u64,
    pub passed: u64,
    /// `passed / runs`.
    pub pass_rate: f64,
    /// Runs per status (`pass`, `violation`, ...).
    pub statuses: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingSeen {
    pub finding: String,
    /// UTC dates.
    pub first_seen: String,
    pub last_seen: String,
    pub runs: u64,
    /// The scenarios it was seen in.
    pub scenarios: Vec<String>,
    /// The run directory of the last run that named it.
    pub last_run_dir: String,
}

/// The records the filter admits, grouped and counted per night.
pub fn trends(records: &[Record], filter: &Filter) -> Trends {
    type Key = (String, String, String);
    let mut groups: BTreeMap<Key, BTreeMap<String, Night>> = BTreeMap::new();
    let mut findings: BTreeMap<String, (u64, u64, u64, BTreeSet<String>, String)> = BTreeMap::new();
    let mut runs = 0;
    for r in records.iter().filter(|r| filter.admits(r)) {
        runs += 1;
        let date = utc_date(r.started_ms);
        let key = (
            r.scenario.clone(),
            r.pulsar_version.clone(),
            r.client.clone(),
        );
        let night = groups
            .entry(key)
            .or_default()
            .entry(date.clone())
            .or_insert_with(|| Night {
                date,
                runs: 0,
                passed: 0,
                pass_rate: 0.0,
                statuses: BTreeMap::new(),
            });
        night.runs += 1;
        night.passed += u64::from(r.status == "pass");
        *night.statuses.entry(r.status.clone()).or_insert(0) += 1;
        for f in &r.findings {
            let e = findings.entry(f.clone()).or_insert((
                u64::MAX,
                0,
                0,
                BTreeSet::new(),
                String::new(),
            ));
            e.0 = e.0.min(r.started_ms);
            if r.started_ms >= e.1 {
                e.1 = r.started_ms;
                e.4 = r.run_dir.clone();
            }
            e.2 += 1;
            e.3.insert(r.scenario.clone());
        }
    }
    let groups = groups
        .into_iter()
        .map(|((scenario, pulsar_version, client), nights)| {
            let mut nights: Vec<Night> = nights.into_values().collect();
            for n in &mut nights {
                n.pass_rate = n.passed as f64 / n.runs as f64;
            }
            Group {
                scenario,
                pulsar_version,
                client,
                runs: nights.iter().map(|n| n.runs).sum(),
                passed: nights.iter().map(|n| n.passed).sum(),
                nights,
            }
        })
        .collect();
    let findings = findings
        .into_iter()
        .map(|(finding, (first, last, n, scenarios, dir))| FindingSeen {
            finding,
            first_seen: utc_date(first),
            last_seen: utc_date(last),
            runs: n,
            scenarios: scenarios.into_iter().collect(),
            last_run_dir: dir,
        })
        .collect();
    Trends {
        runs,
        groups,
        findings,
    }
}

#[cfg(test)]
mod tests;
