//! The trends page's data: [`trends`](super::trends) with, per group, the lines a person
//! plots (pass rate, throughput, recovery time per fault kind, one point per night) and the
//! scales they are drawn on. Pure: the records in, the numbers out; the page is drawn by the
//! root crate's `report::trends`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{parse_date, trends, utc_date, Filter, Record, Trends};

/// Everything the page shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Page {
    pub trends: Trends,
    /// `lines[i]` belongs to `trends.groups[i]`.
    pub lines: Vec<Lines>,
}

/// One group's lines over time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lines {
    /// The x axis: the group's first and last night (Unix ms at 00:00 UTC).
    pub first_night_ms: u64,
    pub last_night_ms: u64,
    /// Pass rate per night, 0 to 1.
    pub pass_rate: Vec<Point>,
    /// The median producer throughput per night (msg/s), nights with no figure left out.
    pub throughput: Vec<Point>,
    /// Fault kind -> the median recovery time per night (ms).
    pub recovery_ms: BTreeMap<String, Vec<Point>>,
}

/// One night's value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// `YYYY-MM-DD` (UTC).
    pub date: String,
    /// Unix ms at 00:00 UTC of `date`.
    pub night_ms: u64,
    pub value: f64,
    /// How many figures the value is the median of (runs, or recoveries).
    pub n: u64,
}

impl Lines {
    /// Where a night falls on the x axis, 0 (first night) to 1 (last); a single night sits in
    /// the middle.
    pub fn x(&self, night_ms: u64) -> f64 {
        if self.last_night_ms <= self.first_night_ms {
            return 0.5;
        }
        let span = (self.last_night_ms - self.first_night_ms) as f64;
        (night_ms.saturating_sub(self.first_night_ms)) as f64 / span
    }
}

/// The lower median (a value that occurred) of unsorted figures.
fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[(v.len() - 1) / 2])
}

/// A round upper bound for an axis that starts at 0: the smallest 1, 2 or 5 times a power of
/// ten at or above `max` (1 when `max` is 0 or not a number).
pub fn nice_ceiling(max: f64) -> f64 {
    if !max.is_finite() || max <= 0.0 {
        return 1.0;
    }
    let mut p = 10f64.powf(max.log10().floor());
    // log10 of 1000 may land a hair under 3.
    if p * 10.0 <= max {
        p *= 10.0;
    }
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|c| *c >= max * (1.0 - 1e-12))
        .unwrap_or(10.0 * p)
}

/// The page's data: the trends the filter admits, and each group's lines.
pub fn page(records: &[Record], filter: &Filter) -> Page {
    let t = trends(records, filter);
    type Key = (String, String, String);
    // Per group, per night: throughputs, and recovery times per kind.
    #[derive(Default)]
    struct NightFigures {
        throughput: Vec<f64>,
        recovery: BTreeMap<String, Vec<f64>>,
    }
    let mut figures: BTreeMap<Key, BTreeMap<String, NightFigures>> = BTreeMap::new();
    for r in records.iter().filter(|r| filter.admits(r)) {
        let key = (
            r.scenario.clone(),
            r.pulsar_version.clone(),
            r.client.clone(),
        );
        let night = figures
            .entry(key)
            .or_default()
            .entry(utc_date(r.started_ms))
            .or_default();
        if let Some(tp) = r.throughput.filter(|x| x.is_finite()) {
            night.throughput.push(tp);
        }
        for (kind, ms) in &r.recovery_ms {
            let v = night.recovery.entry(kind.clone()).or_default();
            v.extend(ms.iter().map(|m| *m as f64));
        }
    }
    let night_ms = |d: &str| parse_date(d).expect("utc_date writes dates parse_date reads");
    let lines = t
        .groups
        .iter()
        .map(|g| {
            let key = (
                g.scenario.clone(),
                g.pulsar_version.clone(),
                g.client.clone(),
            );
            let nights = figures.remove(&key).unwrap_or_default();
            let pass_rate = g
                .nights
                .iter()
                .map(|n| Point {
                    date: n.date.clone(),
                    night_ms: night_ms(&n.date),
                    value: n.pass_rate,
                    n: n.runs,
                })
                .collect();
            let mut throughput = Vec::new();
            let mut recovery_ms: BTreeMap<String, Vec<Point>> = BTreeMap::new();
            for (date, f) in nights {
                let at = night_ms(&date);
                let n = f.throughput.len() as u64;
                if let Some(m) = median(f.throughput) {
                    throughput.push(Point {
                        date: date.clone(),
                        night_ms: at,
                        value: m,
                        n,
                    });
                }
                for (kind, v) in f.recovery {
                    let n = v.len() as u64;
                    if let Some(m) = median(v) {
                        recovery_ms.entry(kind).or_default().push(Point {
                            date: date.clone(),
                            night_ms: at,
                            value: m,
                            n,
                        });
                    }
                }
            }
            Lines {
                first_night_ms: g.nights.first().map(|n| night_ms(&n.date)).unwrap_or(0),
                last_night_ms: g.nights.last().map(|n| night_ms(&n.date)).unwrap_or(0),
                pass_rate,
                throughput,
                recovery_ms,
            }
        })
        .collect();
    Page { trends: t, lines }
}
