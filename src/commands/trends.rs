//! `trends`: the results store read back, grouped per scenario × Pulsar version × client and
//! per night (core `results::trends`): `trends.html` (or `--out`) and a summary as text, or
//! `--json`.

use std::time::Duration;

use crate::cli::{StoreArgs, TrendsArgs};
use crate::error::{Error, Result};
use crate::exit;
use crate::results::{self, Filter, Trends};
use crate::store::{self, Store};

/// `--since`: a UTC date, or a duration before `now_ms`.
pub fn parse_since(s: &str, now_ms: u64) -> std::result::Result<u64, String> {
    if let Some(ms) = results::parse_date(s) {
        return Ok(ms);
    }
    let d: Duration = humantime::parse_duration(s).map_err(|_| {
        format!("--since {s}: neither a date (2026-12-01) nor a duration (7d, 36h)")
    })?;
    Ok(now_ms.saturating_sub(d.as_millis() as u64))
}

/// The trends as text: one line per group and night, then the findings.
pub fn text(t: &Trends) -> String {
    let mut out = String::new();
    if t.runs == 0 {
        out.push_str("no runs recorded (that the filters admit)\n");
        return out;
    }
    for g in &t.groups {
        out.push_str(&format!(
            "{} on {} through {}: {}/{} passed\n",
            g.scenario, g.pulsar_version, g.client, g.passed, g.runs
        ));
        for n in &g.nights {
            out.push_str(&format!(
                "  {}  {:>4} run(s)  {:>5.1}% passed\n",
                n.date,
                n.runs,
                n.pass_rate * 100.0
            ));
        }
    }
    if !t.findings.is_empty() {
        out.push_str("findings and known bugs:\n");
        for f in &t.findings {
            out.push_str(&format!(
                "  {}: first seen {}, last seen {}, {} run(s) ({})\n",
                f.finding,
                f.first_seen,
                f.last_seen,
                f.runs,
                f.scenarios.join(", ")
            ));
        }
    }
    out
}

pub async fn trends(args: TrendsArgs) -> Result<i32> {
    let filter = Filter {
        scenario: args.scenario.clone(),
        version: args.version.clone(),
        since_ms: match &args.since {
            Some(s) => Some(parse_since(s, crate::rundir::now_ms()).map_err(Error::Usage)?),
            None => None,
        },
    };
    let loc = store::location(&StoreArgs {
        store: args.store.clone(),
        no_store: false,
    })?
    .expect("a store unless --no-store");
    let mut s = Store::open(&loc).await?;
    let records = s.records().await?;
    s.close().await;
    if args.json {
        let t = results::trends(&records, &filter);
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&t).expect("trends serialize")
        );
        return Ok(exit::PASS);
    }
    let p = results::page(&records, &filter);
    let html = crate::report::trends::page(&p, &filters_text(&args));
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from("trends.html"));
    std::fs::write(&out, html).map_err(Error::io(format!("write {}", out.display())))?;
    crate::out!("{}", text(&p.trends));
    crate::outln!("trends page: {}", out.display());
    Ok(exit::PASS)
}

/// The filters given, in words, for the page's summary ("" when none).
pub fn filters_text(args: &TrendsArgs) -> String {
    let mut parts = Vec::new();
    if let Some(s) = &args.scenario {
        parts.push(format!("scenario {s}"));
    }
    if let Some(v) = &args.version {
        parts.push(format!("Pulsar {v}"));
    }
    if let Some(s) = &args.since {
        parts.push(format!("since {s}"));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests;
