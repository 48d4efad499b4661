use std::collections::BTreeMap;

use super::*;
use crate::results::{self, Filter, Record};

fn rec(scenario: &str, client: &str, at: &str, status: &str) -> Record {
    Record {
        run_id: format!("{scenario}-{at}-{status}"),
        started_ms: results::parse_date(at).unwrap() + 3_600_000,
        source: "soak".into(),
        scenario: scenario.into(),
        scenario_hash: "abc".into(),
        seed: 1,
        pulsar_version: "4.2.4".into(),
        image: None,
        client: client.into(),
        harness_version: "0.1.0".into(),
        status: status.into(),
        causes: vec![],
        expected: 10,
        received: 10,
        missing: 0,
        duplicate_values: 0,
        duplicate_copies: 0,
        unexpected: 0,
        ambiguous: 0,
        throughput: Some(1234.0),
        recovery_ms: BTreeMap::from([("broker_restart".to_string(), vec![1500])]),
        findings: vec![],
        run_dir: "/runs/x".into(),
    }
}

#[test]
fn the_page_has_a_section_per_group_with_its_charts_and_the_findings() {
    let mut bad = rec("<smoke>", "own", "2026-12-02", "violation");
    bad.findings = vec!["apache/pulsar#24945".into()];
    let records = [
        rec("<smoke>", "own", "2026-12-01", "pass"),
        bad,
        rec("<smoke>", "java 4.2.4", "2026-12-01", "pass"),
    ];
    let p = results::page(&records, &Filter::default());
    let h = page(&p, "since 2026-12-01");
    assert!(h.starts_with("<!DOCTYPE html>"));
    assert_eq!(h.matches("<section class=\"group\"").count(), 2);
    assert!(
        h.contains("data-scenario=\"&lt;smoke&gt;\" data-version=\"4.2.4\" data-client=\"own\"")
    );
    assert!(!h.contains("<smoke>"), "a scenario name was not escaped");
    // Three charts per group; a pass-rate point per night.
    assert_eq!(h.matches("<svg class=\"trend ").count(), 6);
    assert!(h.contains("<circle class=\"pt\" data-date=\"2026-12-02\" data-value=\"0\""));
    assert!(h.contains("1,234 msg/s"));
    assert!(h.contains("data-series=\"broker_restart\""));
    assert!(h.contains(
        "<td class=\"first-seen\">2026-12-02</td><td class=\"last-seen\">2026-12-02</td>"
    ));
    assert!(h.contains("(since 2026-12-01)"));
    // Self-contained: no script, nothing fetched.
    assert!(!h.contains("<script") && !h.contains("http://") && !h.contains("https://"));
}

#[test]
fn an_empty_store_says_so() {
    let p = results::page(&[], &Filter::default());
    let h = page(&p, "");
    assert!(h.contains("No runs recorded"), "{h}");
    assert!(h.contains("None named in these runs."));
    assert!(h.ends_with("</html>\n"));
}
