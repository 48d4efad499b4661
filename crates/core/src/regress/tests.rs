use super::*;
use crate::results::parse_date;

const DAY: u64 = 86_400_000;

/// A record of scenario `s` on 4.2.4 with the own client, `night` days after 2026-12-01 at
/// 01:00 UTC plus `i` minutes.
fn rec(night: u64, i: u64, status: &str) -> Record {
    Record {
        run_id: format!("r{night}-{i}"),
        started_ms: parse_date("2026-12-01").unwrap() + night * DAY + 3_600_000 + i * 60_000,
        source: "soak".into(),
        scenario: "s".into(),
        scenario_hash: "h1".into(),
        seed: i,
        pulsar_version: "4.2.4".into(),
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
        throughput: None,
        recovery_ms: BTreeMap::new(),
        findings: vec![],
        run_dir: format!("/runs/{night}/{i}"),
    }
}

/// Nights 0..n, each with `per` passing records.
fn passing_nights(n: u64, per: u64) -> Vec<Record> {
    (0..n)
        .flat_map(|night| (0..per).map(move |i| rec(night, i, "pass")))
        .collect()
}

/// The soak of night `night`: its records and its start.
fn soak(night: u64, statuses: &[&str]) -> (Vec<Record>, u64) {
    let cur: Vec<Record> = statuses
        .iter()
        .enumerate()
        .map(|(i, s)| rec(night, 100 + i as u64, s))
        .collect();
    let start = cur[0].started_ms;
    (cur, start)
}

fn kinds(c: &Comparison) -> Vec<Kind> {
    c.regressions.iter().map(|r| r.kind).collect()
}

#[test]
fn a_scenario_that_passed_the_previous_nights_and_fails_now_is_named() {
    let store = passing_nights(3, 2);
    let (cur, start) = soak(3, &["pass", "violation", "stuck"]);
    let c = compare(&cur, &store, start, &Settings::default());
    assert!(c.compared);
    assert_eq!(kinds(&c), vec![Kind::NewlyFailing]);
    let r = &c.regressions[0];
    assert_eq!(r.subject, "stuck,violation");
    assert_eq!(r.run_dirs, vec!["/runs/3/101", "/runs/3/102"]);
    assert!(
        r.message.contains("passed on each of the previous 3 night(s) (2026-12-01, 2026-12-02, 2026-12-03) and now 2 of 3 iteration(s) did not pass (stuck 1, violation 1)"),
        "{}",
        r.message
    );
    assert_eq!(c.previous_records, 6);
    assert!(c.has_verdict_regression());
    // Passing now: nothing.
    let (cur, start) = soak(3, &["pass", "pass"]);
    assert!(compare(&cur, &store, start, &Settings::default())
        .regressions
        .is_empty());
}

#[test]
fn fewer_nights_than_asked_or_a_failing_night_among_them_is_no_regression() {
    let (cur, start) = soak(3, &["violation"]);
    // Two nights only: a note, no regression; with --regression-nights 2 it is one.
    let store: Vec<Record> = passing_nights(3, 1).into_iter().skip(1).collect();
    let c = compare(&cur, &store, start, &Settings::default());
    assert!(c.regressions.is_empty(), "{c:?}");
    assert!(
        c.notes[0].contains("2 earlier night(s) in the results store, fewer than the 3"),
        "{:?}",
        c.notes
    );
    let two = Settings {
        nights: 2,
        ..Settings::default()
    };
    assert_eq!(
        kinds(&compare(&cur, &store, start, &two)),
        vec![Kind::NewlyFailing]
    );
    // One of the last three nights had a failure: it was failing before.
    let mut store = passing_nights(4, 2);
    store[5].status = "violation".into(); // night 2
    assert!(compare(&cur, &store, start, &Settings::default())
        .regressions
        .is_empty());
    // A failure four nights ago does not count: the last three passed.
    let mut store = passing_nights(4, 2);
    store[0].status = "violation".into();
    let (cur4, start4) = soak(4, &["violation"]);
    let c = compare(&cur4, &store, start4, &Settings::default());
    assert_eq!(kinds(&c), vec![Kind::NewlyFailing]);
    // No record was a failing night's: inconclusive counts as not passed.
    let mut store = passing_nights(3, 1);
    store[2].status = "inconclusive".into();
    assert!(compare(&cur, &store, start, &Settings::default())
        .regressions
        .is_empty());
}

#[test]
fn the_soaks_own_night_and_records_are_not_history() {
    // Two passing nights, and an earlier soak today: still only two previous nights.
    let mut store = passing_nights(2, 1);
    store.push(rec(2, 0, "pass"));
    let (cur, start) = soak(2, &["violation"]);
    // The store already holds the soak's own records, and one of a soak started later.
    store.extend(cur.iter().cloned());
    let mut later = rec(2, 500, "violation");
    later.findings = vec!["apache/pulsar#1".into()];
    store.push(later);
    let c = compare(&cur, &store, start, &Settings::default());
    assert!(c.regressions.is_empty(), "{c:?}");
    assert_eq!(c.previous_records, 3);
    assert!(c.notes[0].contains("2 earlier night(s)"), "{:?}", c.notes);
}

#[test]
fn groups_are_scenario_hash_version_and_client() {
    let mut store = passing_nights(3, 1);
    for r in &mut store {
        r.pulsar_version = "4.0.7".into();
    }
    let (cur, start) = soak(3, &["violation"]);
    let c = compare(&cur, &store, start, &Settings::default());
    assert!(c.regressions.is_empty());
    assert_eq!(c.previous_records, 0);
    assert!(
        c.notes[0].contains("s (h1) on Pulsar 4.2.4, client own: no earlier record"),
        "{:?}",
        c.notes
    );
    // An edited scenario (another hash) starts a group of its own.
    let mut store = passing_nights(3, 1);
    store[0].scenario_hash = "h0".into();
    let c = compare(&cur, &store, start, &Settings::default());
    assert!(c.regressions.is_empty());
    assert_eq!(c.previous_records, 2);
}

#[test]
fn a_finding_or_cause_never_seen_in_the_group_is_named() {
    let mut store = passing_nights(2, 1);
    store[0].status = "violation".into();
    store[0].findings = vec!["apache/pulsar#24945".into()];
    store[0].causes = vec!["ambiguity".into()];
    let (mut cur, start) = soak(2, &["violation", "violation"]);
    cur[0].findings = vec![
        "apache/pulsar#24945".into(),
        "lwm-abort-of-confirmed-commit".into(),
    ];
    cur[0].causes = vec!["ambiguity".into(), "pulsar".into()];
    cur[1].causes = vec!["pulsar".into()];
    let c = compare(&cur, &store, start, &Settings::default());
    assert_eq!(kinds(&c), vec![Kind::NewFinding, Kind::NewCause]);
    assert_eq!(c.regressions[0].subject, "lwm-abort-of-confirmed-commit");
    assert_eq!(c.regressions[0].run_dirs, vec!["/runs/2/100"]);
    assert_eq!(c.regressions[1].subject, "pulsar");
    assert_eq!(c.regressions[1].run_dirs.len(), 2);
    assert!(
        c.regressions[1]
            .message
            .contains("new cause: pulsar in 2 iteration(s) of s (h1) on Pulsar 4.2.4, client own, never named in its 2 earlier run(s)"),
        "{}",
        c.regressions[1].message
    );
    // A first night names nothing, whatever it found.
    let c = compare(&cur, &[], start, &Settings::default());
    assert!(c.regressions.is_empty() && c.compared);
}

fn with_recovery(mut r: Record, kind: &str, ms: &[u64]) -> Record {
    r.recovery_ms.insert(kind.into(), ms.to_vec());
    r
}

#[test]
fn a_recovery_time_above_the_usual_spread_is_named_and_a_faster_one_is_not() {
    // Ten earlier recoveries around 1000 ms.
    let store: Vec<Record> = (0..5)
        .map(|n| with_recovery(rec(n, 0, "pass"), "broker_kill", &[950 + n * 20, 1000]))
        .collect();
    let b = band(
        &store
            .iter()
            .flat_map(|r| r.recovery_ms["broker_kill"].iter().map(|v| *v as f64))
            .collect::<Vec<_>>(),
        &Settings::default(),
    );
    assert_eq!(b.median, 1000.0);
    // MAD 20 * 1.4826 < 5% of 1000: the floor (50) is the spread.
    assert_eq!((b.low, b.high), (850.0, 1150.0));
    let (cur, start) = soak(5, &["pass", "pass"]);
    let cur: Vec<Record> = vec![
        with_recovery(cur[0].clone(), "broker_kill", &[4000, 1000]),
        with_recovery(cur[1].clone(), "broker_kill", &[5000]),
    ];
    let c = compare(&cur, &store, start, &Settings::default());
    assert_eq!(kinds(&c), vec![Kind::SlowerRecovery]);
    let r = &c.regressions[0];
    assert_eq!(r.subject, "broker_kill");
    assert_eq!(r.now, Some(4000.0));
    assert_eq!(r.run_dirs, vec!["/runs/5/100", "/runs/5/101"]);
    assert!(
        r.message.starts_with("recovery after broker_kill of s (h1) on Pulsar 4.2.4, client own: median 4000 ms over 3 value(s) now, usual 1000 ms (850..1150 over 10 earlier value(s))"),
        "{}",
        r.message
    );
    assert!(!c.has_verdict_regression());
    // Faster is no regression.
    let fast = vec![with_recovery(cur[0].clone(), "broker_kill", &[10, 20])];
    assert!(compare(&fast, &store, start, &Settings::default())
        .regressions
        .is_empty());
    // A kind with too few earlier values: a note.
    let mut other = cur[0].clone();
    other.recovery_ms.clear();
    let other = vec![with_recovery(other, "bookie_kill", &[99_999])];
    let c = compare(&other, &store, start, &Settings::default());
    assert!(c.regressions.is_empty());
    assert!(
        c.notes.iter().any(|n| n
            .contains("recovery after bookie_kill not checked: 0 earlier value(s), fewer than 5")),
        "{:?}",
        c.notes
    );
}

#[test]
fn throughput_below_the_usual_spread_is_named_within_it_is_not() {
    let store: Vec<Record> = (0..6)
        .map(|n| {
            let mut r = rec(n, 0, "pass");
            r.throughput = Some(1000.0);
            r
        })
        .collect();
    let (mut cur, start) = soak(6, &["pass"]);
    // Identical history: spread = 5% of 1000, band 850..1150.
    cur[0].throughput = Some(900.0);
    assert!(compare(&cur, &store, start, &Settings::default())
        .regressions
        .is_empty());
    cur[0].throughput = Some(1500.0);
    assert!(compare(&cur, &store, start, &Settings::default())
        .regressions
        .is_empty());
    cur[0].throughput = Some(800.0);
    let c = compare(&cur, &store, start, &Settings::default());
    assert_eq!(kinds(&c), vec![Kind::LowerThroughput]);
    assert_eq!(c.regressions[0].usual.as_ref().unwrap().low, 850.0);
    // k = 5 widens the band to 750..1250.
    let wide = Settings {
        spread_k: 5.0,
        ..Settings::default()
    };
    assert!(compare(&cur, &store, start, &wide).regressions.is_empty());
    // Only the last `window_nights` nights make the band: a slow past before them does not.
    let mut old: Vec<Record> = (0..6)
        .map(|n| {
            let mut r = rec(n, 0, "pass");
            r.throughput = Some(800.0);
            r.started_ms -= 100 * DAY;
            r
        })
        .collect();
    old.extend(store.iter().cloned());
    let six = Settings {
        window_nights: 6,
        ..Settings::default()
    };
    assert_eq!(
        kinds(&compare(&cur, &old, start, &six)),
        vec![Kind::LowerThroughput]
    );
    // Over all twelve nights the median is 900 and the band takes 800 in.
    let twelve = Settings {
        window_nights: 12,
        ..Settings::default()
    };
    assert!(compare(&cur, &old, start, &twelve).regressions.is_empty());
}

#[test]
fn regressions_come_most_severe_first_and_print_first() {
    let store: Vec<Record> = (0..5)
        .map(|n| {
            let mut r = rec(n, 0, "pass");
            r.throughput = Some(1000.0);
            r
        })
        .collect();
    let (mut cur, start) = soak(5, &["violation"]);
    cur[0].throughput = Some(10.0);
    cur[0].findings = vec!["apache/pulsar#19629".into()];
    let c = compare(&cur, &store, start, &Settings::default());
    assert_eq!(
        kinds(&c),
        vec![Kind::NewlyFailing, Kind::NewFinding, Kind::LowerThroughput]
    );
    let t = c.text();
    assert!(t.starts_with("REGRESSIONS: 3 (compared with 5 earlier record(s) in the results store)\n  newly failing: "), "{t}");
    let none = compare(&cur[..0], &store, start, &Settings::default());
    assert!(
        none.text()
            .starts_with("regressions: none (compared with 0 earlier record(s)"),
        "{}",
        none.text()
    );
    let off = Comparison::not_compared(
        Settings::default(),
        "--no-store: there is no results store to compare with",
    );
    assert_eq!(
        off.text(),
        "regressions: not compared (--no-store: there is no results store to compare with)\n"
    );
    let j = serde_json::to_value(&c).unwrap();
    assert_eq!(j["regressions"][0]["kind"], "newly_failing");
    assert_eq!(j["regressions"][2]["kind"], "lower_throughput");
    assert_eq!(j["settings"]["nights"], 3);
}
