use super::*;

fn tempdir(tag: &str) -> crate::scratch::Scratch {
    crate::scratch::Scratch::new(&format!("pc-junit-{tag}"))
}

/// `write_junit` into a fresh directory; the file's text.
fn written(tag: &str, suite: &str, cases: &[Case]) -> String {
    let dir = tempdir(tag);
    let path = dir.join("junit.xml");
    write_junit(&path, suite, cases).unwrap();
    std::fs::read_to_string(&path).unwrap()
}

fn failed(name: &str, seconds: f64, status: &str, summary: &str, details: &str) -> Case {
    Case {
        name: name.into(),
        seconds,
        failure: Some((status.into(), summary.into(), details.into())),
        faults: None,
    }
}

fn passed(name: &str, seconds: f64) -> Case {
    Case {
        name: name.into(),
        seconds,
        failure: None,
        faults: None,
    }
}

/// Broker log lines quoted in a failure can carry characters XML 1.0 forbids (NUL, ESC of a
/// colour code, other C0 controls, U+FFFE/U+FFFF); the JUnit file must still parse. The
/// hand-written writer before quick-junit copied them into the file, which then did not.
#[test]
fn junit_with_forbidden_xml_characters_still_parses() {
    let cases = vec![
        passed("s seed 1", 1.5),
        failed(
            "s seed 2 \u{1b}[1mbold\u{1b}[0m",
            2.25,
            "violation",
            "VIOLATION: <3> missing \u{0}\u{7}\u{b}\u{c} & \"quoted\"",
            "broker: \u{1b}[31mERROR\u{1b}[0m txn (1,2)\u{0}\u{8}\u{e}\u{1f}\u{fffe}\u{ffff}\nline 2\tend",
        ),
    ];
    let text = written("controls", "s \u{1}suite", &cases);
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{e}: {text:?}"));
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(suite.attribute("tests"), Some("2"));
    assert_eq!(suite.attribute("failures"), Some("1"));
    let failure = doc
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .unwrap();
    assert_eq!(failure.attribute("type"), Some("violation"));
    let message = failure.attribute("message").unwrap();
    assert!(
        message.starts_with("VIOLATION: <3> missing "),
        "{message:?}"
    );
    assert!(message.ends_with(" & \"quoted\""), "{message:?}");
    let details = failure.text().unwrap();
    assert!(details.contains("ERROR txn (1,2)"), "{details:?}");
    assert!(details.contains("\nline 2"), "{details:?}");
}

/// What `tests/it/soak.rs` checks of a soak's file (suite counts agree with the cases), and
/// the names and attributes CI tools read: one suite, a case per iteration, a failure per
/// iteration that did not pass.
#[test]
fn junit_of_a_soak_has_a_case_per_iteration_and_a_failure_per_failed_one() {
    let soak = [
        passed("iteration 1 seed 11", 12.5),
        failed(
            "iteration 2 seed 12",
            14.0,
            "violation",
            "VIOLATION: 3 numbers missing",
            "seed 12\nreproduce: pulsar-chaos run s.yaml --seed 12\nrun directory: (pruned)",
        ),
        failed(
            "iteration 3 seed 13",
            1.0,
            "inconclusive",
            "INCONCLUSIVE",
            "seed 13",
        ),
    ];
    let text = written("soak", "s", &soak);
    assert!(
        text.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"),
        "{text}"
    );
    let doc = roxmltree::Document::parse(&text).unwrap();
    let root = doc.root_element();
    assert!(root.has_tag_name("testsuites"));
    assert_eq!(root.attribute("tests"), Some("3"));
    assert_eq!(root.attribute("failures"), Some("2"));
    assert_eq!(root.attribute("time"), Some("27.500"));
    let suites: Vec<_> = root.children().filter(|n| n.is_element()).collect();
    assert_eq!(suites.len(), 1);
    let suite = suites[0];
    assert!(suite.has_tag_name("testsuite"));
    for (k, want) in [
        ("name", "s"),
        ("tests", "3"),
        ("failures", "2"),
        ("errors", "0"),
        ("skipped", "0"),
        ("time", "27.500"),
    ] {
        assert_eq!(suite.attribute(k), Some(want), "{k}: {text}");
    }
    let cases: Vec<_> = suite
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 3);
    let names: Vec<_> = cases.iter().map(|c| c.attribute("name").unwrap()).collect();
    assert_eq!(
        names,
        [
            "iteration 1 seed 11",
            "iteration 2 seed 12",
            "iteration 3 seed 13"
        ]
    );
    for c in &cases {
        assert_eq!(c.attribute("classname"), Some("pulsar-chaos.s"));
    }
    assert_eq!(cases[0].attribute("time"), Some("12.500"));
    assert_eq!(cases[0].children().filter(|n| n.is_element()).count(), 0);
    let f = cases[1]
        .children()
        .find(|n| n.has_tag_name("failure"))
        .unwrap();
    assert_eq!(f.attribute("type"), Some("violation"));
    assert_eq!(f.attribute("message"), Some("VIOLATION: 3 numbers missing"));
    assert_eq!(
        f.text(),
        Some("seed 12\nreproduce: pulsar-chaos run s.yaml --seed 12\nrun directory: (pruned)")
    );
}

/// A single run: one suite named after the scenario, one case, its failure.
#[test]
fn junit_of_a_single_run_has_its_case_and_failure() {
    let run = [failed(
        "report-test seed 4242",
        61.25,
        "violation",
        "VIOLATION: <missing> & \"dup\"",
        "seed 4242",
    )];
    let text = written("run", "report-test", &run);
    let doc = roxmltree::Document::parse(&text).unwrap();
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(suite.attribute("name"), Some("report-test"));
    assert_eq!(suite.attribute("tests"), Some("1"));
    assert_eq!(suite.attribute("failures"), Some("1"));
    let case = suite
        .children()
        .find(|n| n.has_tag_name("testcase"))
        .unwrap();
    assert_eq!(case.attribute("name"), Some("report-test seed 4242"));
    assert_eq!(
        case.attribute("classname"),
        Some("pulsar-chaos.report-test")
    );
    assert_eq!(case.attribute("time"), Some("61.250"));
    let f = case.children().find(|n| n.has_tag_name("failure")).unwrap();
    assert_eq!(
        f.attribute("message"),
        Some("VIOLATION: <missing> & \"dup\"")
    );
}

/// Tabs and carriage returns are kept as a space and a newline (quick-junit alone would
/// drop them); a negative or not-a-number time is zero, not a panic; no case, no failure.
#[test]
fn junit_keeps_tabs_and_line_breaks_and_odd_times() {
    let cases = [
        failed(
            "a\tb",
            f64::NAN,
            "violation",
            "x",
            "at\tFoo.bar\r\nnext\rlast",
        ),
        passed("c", -1.0),
    ];
    let text = written("tabs", "s", &cases);
    let doc = roxmltree::Document::parse(&text).unwrap();
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase"))
        .unwrap();
    assert_eq!(case.attribute("name"), Some("a b"));
    assert_eq!(case.attribute("time"), Some("0.000"));
    let f = case.children().find(|n| n.has_tag_name("failure")).unwrap();
    assert_eq!(f.text(), Some("at Foo.bar\nnext\nlast"));

    let empty = written("empty", "s", &[]);
    let doc = roxmltree::Document::parse(&empty).unwrap();
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(suite.attribute("tests"), Some("0"));
    assert_eq!(suite.attribute("failures"), Some("0"));
}

/// Each case says how many planned faults fired: properties for tools, a line for people.
/// The soak (every fault skipped) is then a failure that says why, not a pass.
#[test]
fn junit_cases_carry_the_faults_fired_of_planned() {
    let none = FaultsSummary {
        planned: 3,
        fired: 0,
        skipped: 3,
        failed: 0,
        not_fired: ["loss#1", "unload#1", "loss#2"]
            .iter()
            .map(|n| crate::checker::NotFired {
                fault: n.to_string(),
                fate: "skipped".into(),
                reason: "the producer finished before the fault was due".into(),
            })
            .collect(),
    };
    let all = FaultsSummary {
        planned: 2,
        fired: 2,
        ..FaultsSummary::default()
    };
    let mut skipped = failed(
        "iteration 1 seed 1",
        1.0,
        "inconclusive",
        "INCONCLUSIVE: none of the 3 planned faults fired",
        "seed 1",
    );
    skipped.faults = Some(none);
    let mut fired = passed("iteration 2 seed 2", 1.0);
    fired.faults = Some(all);
    let mut quiet = passed("iteration 3 seed 3", 1.0);
    quiet.faults = Some(FaultsSummary::default());
    let text = written("faults", "s", &[skipped, fired, quiet]);
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let props = |c: &roxmltree::Node| -> Vec<(String, String)> {
        c.descendants()
            .filter(|n| n.has_tag_name("property"))
            .map(|p| {
                (
                    p.attribute("name").unwrap().to_string(),
                    p.attribute("value").unwrap().to_string(),
                )
            })
            .collect()
    };
    let out = |c: &roxmltree::Node| {
        c.children()
            .find(|n| n.has_tag_name("system-out"))
            .and_then(|n| n.text().map(str::to_string))
    };
    let p = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        props(&cases[0]),
        [p("faults_planned", "3"), p("faults_fired", "0")]
    );
    assert!(
        cases[0].children().any(|n| n.has_tag_name("failure")),
        "{text}"
    );
    assert_eq!(
        out(&cases[0]).as_deref(),
        Some("faults: 0 of 3 planned faults fired; not fired: skipped (the producer finished before the fault was due): loss#1, unload#1, loss#2")
    );
    assert_eq!(
        props(&cases[1]),
        [p("faults_planned", "2"), p("faults_fired", "2")]
    );
    assert_eq!(
        out(&cases[1]).as_deref(),
        Some("faults: 2 of 2 planned faults fired")
    );
    assert_eq!(
        props(&cases[2]),
        [p("faults_planned", "0"), p("faults_fired", "0")]
    );
    assert_eq!(out(&cases[2]), None);
}
