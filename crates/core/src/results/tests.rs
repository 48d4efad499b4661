use super::*;

fn rec(scenario: &str, version: &str, at: &str, hour: u64, status: &str) -> Record {
    Record {
        run_id: format!("{scenario}-{at}-{hour}"),
        started_ms: parse_date(at).unwrap() + hour * 3_600_000,
        source: "soak".into(),
        scenario: scenario.into(),
        scenario_hash: "abc".into(),
        seed: 1,
        pulsar_version: version.into(),
        image: None,
        client: "own".into(),
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
        throughput: Some(100.0),
        recovery_ms: BTreeMap::new(),
        findings: vec![],
        run_dir: format!("/runs/{hour}"),
    }
}

#[test]
fn dates_are_utc_and_round_trip() {
    assert_eq!(utc_date(0), "1970-01-01");
    // date -u -d @1796279085 +%F
    assert_eq!(utc_date(1_796_279_085_765), "2026-12-03");
    assert_eq!(utc_date(951_782_400_000), "2000-02-29");
    assert_eq!(parse_date("2000-02-29"), Some(951_782_400_000));
    assert_eq!(parse_date("2026-12-03"), Some(1_796_256_000_000));
    for bad in [
        "2026-02-31",
        "2026-13-01",
        "26-12-03",
        "2026-12-3",
        "x",
        "2026-12-03-1",
    ] {
        assert_eq!(parse_date(bad), None, "{bad}");
    }
}

#[test]
fn trends_count_runs_and_pass_rate_per_group_and_night() {
    let records = vec![
        rec("smoke", "4.2.4", "2026-12-01", 1, "pass"),
        rec("smoke", "4.2.4", "2026-12-01", 23, "violation"),
        rec("smoke", "4.2.4", "2026-12-02", 0, "pass"),
        rec("smoke", "4.0.7", "2026-12-01", 2, "inconclusive"),
        rec("mixed", "4.2.4", "2026-12-02", 3, "pass"),
    ];
    let t = trends(&records, &Filter::default());
    assert_eq!(t.runs, 5);
    let keys: Vec<(&str, &str)> = t
        .groups
        .iter()
        .map(|g| (g.scenario.as_str(), g.pulsar_version.as_str()))
        .collect();
    assert_eq!(
        keys,
        [("mixed", "4.2.4"), ("smoke", "4.0.7"), ("smoke", "4.2.4")]
    );
    let g = &t.groups[2];
    assert_eq!((g.runs, g.passed), (3, 2));
    assert_eq!(g.nights.len(), 2);
    assert_eq!(g.nights[0].date, "2026-12-01");
    assert_eq!((g.nights[0].runs, g.nights[0].passed), (2, 1));
    assert_eq!(g.nights[0].pass_rate, 0.5);
    assert_eq!(g.nights[0].statuses.get("violation"), Some(&1));
    assert_eq!(g.nights[1].date, "2026-12-02");
    assert_eq!(g.nights[1].pass_rate, 1.0);
    assert_eq!(t.groups[1].nights[0].pass_rate, 0.0);
}

#[test]
fn filters_by_scenario_version_and_time() {
    let records = vec![
        rec("smoke", "4.2.4", "2026-12-01", 1, "pass"),
        rec("smoke", "4.0.7", "2026-12-02", 1, "pass"),
        rec("mixed", "4.2.4", "2026-12-03", 1, "pass"),
    ];
    let only = |f: Filter| -> Vec<String> {
        trends(&records, &f)
            .groups
            .iter()
            .map(|g| format!("{}/{}", g.scenario, g.pulsar_version))
            .collect()
    };
    let f = Filter {
        scenario: Some("smoke".into()),
        ..Filter::default()
    };
    assert_eq!(only(f), ["smoke/4.0.7", "smoke/4.2.4"]);
    let f = Filter {
        version: Some("4.2.4".into()),
        ..Filter::default()
    };
    assert_eq!(only(f), ["mixed/4.2.4", "smoke/4.2.4"]);
    let f = Filter {
        since_ms: parse_date("2026-12-02"),
        ..Filter::default()
    };
    assert_eq!(only(f), ["mixed/4.2.4", "smoke/4.0.7"]);
}

#[test]
fn each_finding_has_its_first_and_last_night() {
    let mut a = rec("stuck", "4.2.4", "2026-11-28", 5, "stuck");
    a.findings = vec!["apache/pulsar#24945".into()];
    let mut b = rec("stuck", "4.2.4", "2026-12-02", 5, "stuck");
    b.findings = vec!["apache/pulsar#24945".into(), LWM_ABORT.into()];
    let mut c = rec("mixed", "4.0.7", "2026-11-30", 5, "violation");
    c.findings = vec!["apache/pulsar#24945".into()];
    // Records come in any order.
    let t = trends(&[b, a, c], &Filter::default());
    assert_eq!(t.findings.len(), 2);
    let f = &t.findings[0];
    assert_eq!(f.finding, "apache/pulsar#24945");
    assert_eq!(
        (f.first_seen.as_str(), f.last_seen.as_str()),
        ("2026-11-28", "2026-12-02")
    );
    assert_eq!(f.runs, 3);
    assert_eq!(f.scenarios, ["mixed", "stuck"]);
    assert_eq!(f.last_run_dir, "/runs/5");
    assert_eq!(t.findings[1].finding, LWM_ABORT);
    assert_eq!(t.findings[1].first_seen, "2026-12-02");
}

fn fault(kind: &str, recovery: Option<u64>) -> crate::checker::FaultRecord {
    crate::checker::FaultRecord {
        fault: format!("{kind}-1"),
        kind: kind.into(),
        target: "broker-1".into(),
        started_ms: 1000,
        healed_ms: Some(2000),
        action: "restart".into(),
        recovery_ms: recovery,
        commit_gap_ms: None,
        heal_ok: true,
        applied: true,
    }
}

#[test]
fn a_verdict_names_its_known_bugs_and_findings() {
    let mut v: Verdict = serde_json::from_str(include_str!("pass_verdict.json")).unwrap();
    assert!(findings_of(&v).is_empty());
    v.status = crate::checker::Status::Inconclusive;
    v.stall = Some(crate::checker::StallFinding {
        since_ms: 1,
        detected_ms: 2,
        failed_attempts: 3,
        failures: vec![],
        broker_log: vec![],
        likely_cause: Some(
            "broker-1 on t-partition-0 kept failing ... (the chain apache/pulsar#24945 replaced); unload"
                .into(),
        ),
        partitions: vec![],
    });
    v.faults = vec![
        fault("broker_restart", Some(1200)),
        fault("broker_restart", Some(800)),
        fault("topic_unload", None),
    ];
    v.producer.as_mut().unwrap().ambiguous = 2;
    assert_eq!(findings_of(&v), ["apache/pulsar#24945"]);
    let mut r = rec("s", "4.0.7", "2026-12-01", 0, "pass");
    r.set_verdict(&v);
    assert_eq!(r.status, "inconclusive");
    assert_eq!(r.findings, ["apache/pulsar#24945"]);
    assert_eq!(r.recovery_ms.get("broker_restart"), Some(&vec![1200, 800]));
    assert_eq!(
        r.recovery_ms.len(),
        1,
        "a fault without recovery adds no entry"
    );
    assert_eq!((r.ambiguous, r.expected, r.received), (2, 3000, 3000));
}

#[test]
fn the_page_has_a_line_per_group_with_a_point_per_night() {
    let mut a = rec("smoke", "4.2.4", "2026-12-01", 1, "pass");
    a.throughput = Some(300.0);
    a.recovery_ms
        .insert("broker_restart".into(), vec![1200, 800, 5000]);
    let mut b = rec("smoke", "4.2.4", "2026-12-01", 2, "violation");
    b.throughput = Some(100.0);
    b.recovery_ms.insert("broker_restart".into(), vec![900]);
    let mut c = rec("smoke", "4.2.4", "2026-12-04", 2, "pass");
    c.throughput = None;
    c.recovery_ms.insert("topic_unload".into(), vec![40]);
    let d = rec("smoke", "4.0.7", "2026-12-02", 0, "pass");
    let p = page(&[c, a, b, d], &Filter::default());
    assert_eq!(p.lines.len(), p.trends.groups.len());
    assert_eq!(p.trends.groups[1].pulsar_version, "4.2.4");
    let l = &p.lines[1];
    assert_eq!(l.first_night_ms, parse_date("2026-12-01").unwrap());
    assert_eq!(l.last_night_ms, parse_date("2026-12-04").unwrap());
    let rates: Vec<(&str, f64, u64)> = l
        .pass_rate
        .iter()
        .map(|p| (p.date.as_str(), p.value, p.n))
        .collect();
    assert_eq!(rates, [("2026-12-01", 0.5, 2), ("2026-12-04", 1.0, 1)]);
    // The lower median of the night's runs; a night without a figure has no point.
    let tp: Vec<(&str, f64, u64)> = l
        .throughput
        .iter()
        .map(|p| (p.date.as_str(), p.value, p.n))
        .collect();
    assert_eq!(tp, [("2026-12-01", 100.0, 2)]);
    let br = &l.recovery_ms["broker_restart"];
    assert_eq!((br.len(), br[0].value, br[0].n), (1, 900.0, 4));
    assert_eq!(l.recovery_ms["topic_unload"][0].date, "2026-12-04");
    // Calendar spacing: the 4th is the end, the 2nd a third of the way.
    assert_eq!(l.x(parse_date("2026-12-04").unwrap()), 1.0);
    assert!((l.x(parse_date("2026-12-02").unwrap()) - 1.0 / 3.0).abs() < 1e-9);
    // A group of one night sits in the middle.
    assert_eq!(p.lines[0].x(p.lines[0].first_night_ms), 0.5);
    // The filter applies to the lines as to the groups.
    let f = Filter {
        version: Some("4.0.7".into()),
        ..Filter::default()
    };
    let p = page(&[rec("smoke", "4.2.4", "2026-12-01", 1, "pass")], &f);
    assert!(p.lines.is_empty() && p.trends.groups.is_empty());
}

#[test]
fn axes_end_on_a_round_number() {
    use super::chart::nice_ceiling;
    for (max, want) in [
        (0.0, 1.0),
        (f64::NAN, 1.0),
        (1.0, 1.0),
        (0.9, 1.0),
        (1.2, 2.0),
        (356.5, 500.0),
        (1000.0, 1000.0),
        (1001.0, 2000.0),
        (4999.0, 5000.0),
        (0.03, 0.05),
    ] {
        assert_eq!(nice_ceiling(max), want, "{max}");
    }
}
