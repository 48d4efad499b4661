use super::*;

#[test]
fn since_is_a_utc_date_or_a_duration_before_now() {
    let now = results::parse_date("2026-12-03").unwrap() + 3_600_000;
    assert_eq!(
        parse_since("2026-12-01", now),
        Ok(results::parse_date("2026-12-01").unwrap())
    );
    assert_eq!(parse_since("1h", now), Ok(now - 3_600_000));
    assert_eq!(parse_since("7d", now), Ok(now - 7 * 86_400_000));
    let e = parse_since("yesterday", now).unwrap_err();
    assert!(e.contains("--since yesterday"), "{e}");
}

#[test]
fn the_text_has_a_line_per_group_and_night_and_each_finding() {
    let t = Trends {
        runs: 0,
        groups: vec![],
        findings: vec![],
    };
    assert_eq!(text(&t), "no runs recorded (that the filters admit)\n");
    let t = Trends {
        runs: 3,
        groups: vec![results::Group {
            scenario: "smoke".into(),
            pulsar_version: "4.2.4".into(),
            client: "own".into(),
            runs: 3,
            passed: 2,
            nights: vec![results::Night {
                date: "2026-12-01".into(),
                runs: 3,
                passed: 2,
                pass_rate: 2.0 / 3.0,
                statuses: Default::default(),
            }],
        }],
        findings: vec![results::FindingSeen {
            finding: "apache/pulsar#24945".into(),
            first_seen: "2026-11-28".into(),
            last_seen: "2026-12-01".into(),
            runs: 2,
            scenarios: vec!["smoke".into()],
            last_run_dir: "/r".into(),
        }],
    };
    assert_eq!(
        text(&t),
        "smoke on 4.2.4 through own: 2/3 passed\n  2026-12-01     3 run(s)   66.7% passed\nfindings and known bugs:\n  apache/pulsar#24945: first seen 2026-11-28, last seen 2026-12-01, 2 run(s) (smoke)\n"
    );
}
