//! Issue 5: soak runs, their summaries and pruning, JUnit, and progress output.

use crate::common::*;

fn small_scenario(dir: &std::path::Path, name: &str, extra: &str) -> std::path::PathBuf {
    write(
        dir,
        &format!("{name}.yaml"),
        &format!(
            "name: {name}\n{}workload:\n  topic: persistent://public/default/{name}\n  messages: 3000\n  txn_size: 100\n  rate: 1500\nfaults:\n  - kind: topic_unload\n    schedule: {{ at: [1s] }}\n{extra}",
            standalone_cluster_yaml()
        ),
    )
}

fn soak_dir(stdout: &str) -> std::path::PathBuf {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("soak directory: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    std::path::PathBuf::from(
        line.trim_start_matches("soak directory: ")
            .split(" (")
            .next()
            .unwrap(),
    )
}

fn junit_counts(path: &std::path::Path) -> (usize, usize, usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("JUnit XML parses");
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .expect("a testsuite");
    let tests: usize = suite.attribute("tests").unwrap().parse().unwrap();
    let failures: usize = suite.attribute("failures").unwrap().parse().unwrap();
    let cases = suite
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .count();
    let failed_cases = suite
        .children()
        .filter(|n| n.has_tag_name("testcase") && n.children().any(|c| c.has_tag_name("failure")))
        .count();
    assert_eq!(failures, failed_cases, "{text}");
    (tests, cases, failures)
}

#[test]
fn a_short_soak_summarises_and_prunes_passing_runs() {
    let dir = tmpdir("soak-pass");
    let scenario = small_scenario(&dir, "soak-pass", "");
    let junit = dir.join("junit.xml");
    let o = run(&[
        "soak",
        scenario.to_str().unwrap(),
        "--duration",
        "20m",
        "--max-iterations",
        "3",
        "--keep-passing",
        "1",
        "--seed",
        "99",
        "--out",
        dir.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        "--progress",
        "none",
    ]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(out.contains("3 iteration(s)"), "{out}");
    assert!(out.contains("pass 3   violation 0"), "{out}");
    assert!(out.contains("faults fired: topic_unload 3"), "{out}");
    let sd = soak_dir(&out);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sd.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["iterations"], 3);
    assert_eq!(summary["master_seed"], 99);
    let seeds: Vec<u64> = summary["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(
        seeds,
        (1..=3)
            .map(|i| pulsar_chaos::seed::iteration_seed(99, i))
            .collect::<Vec<_>>()
    );
    let kept: Vec<_> = std::fs::read_dir(&sd)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    assert_eq!(
        kept.len(),
        1,
        "only the last passing run directory is kept: {kept:?}"
    );
    assert!(sd.join("index.html").is_file());
    assert_eq!(junit_counts(&junit), (3, 3, 0));
    // The soak's one cluster is gone.
    let soak_id = sd
        .file_name()
        .unwrap()
        .to_string_lossy()
        .rsplit('-')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(rt().block_on(leftovers(&format!("{soak_id}c1"))), (0, 0, 0));
}

#[test]
fn a_planted_failure_is_kept_with_its_reproduce_command() {
    let dir = tmpdir("soak-fail");
    let scenario = small_scenario(&dir, "soak-fail", "sabotage: { skip: [7] }\n");
    let junit = dir.join("junit.xml");
    let o = run(&[
        "soak",
        scenario.to_str().unwrap(),
        "--duration",
        "20m",
        "--max-iterations",
        "2",
        "--keep-passing",
        "0",
        "--seed",
        "5",
        "--out",
        dir.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        "--progress",
        "none",
    ]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(out.contains("violation 2"), "{out}");
    assert!(out.contains("reproduce the failures with:"), "{out}");
    for i in 1..=2 {
        let seed = pulsar_chaos::seed::iteration_seed(5, i);
        assert!(
            out.contains(&format!(
                "pulsar-chaos run {} --seed {seed}",
                scenario.display()
            )),
            "{out}"
        );
    }
    let sd = soak_dir(&out);
    let kept: Vec<_> = std::fs::read_dir(&sd)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    assert_eq!(kept.len(), 2, "failing run directories are kept: {kept:?}");
    for k in kept {
        let v = verdict(&k.path());
        assert_eq!(v["missing"][0]["start"], 7, "{v}");
    }
    assert_eq!(junit_counts(&junit), (2, 2, 2));
}

#[test]
fn progress_without_a_terminal_is_plain_lines_and_json_streams_events() {
    let dir = tmpdir("progress");
    let scenario = write(
        &dir,
        "progress.yaml",
        &format!("name: progress\n{}workload:\n  topic: persistent://public/default/progress\n  messages: 9000\n  rate: 1000\n", standalone_cluster_yaml()),
    );
    let o = run(&[
        "run",
        scenario.to_str().unwrap(),
        "--seed",
        "1",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let progress: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("progress: "))
        .collect();
    assert!(!progress.is_empty(), "no progress lines in:\n{err}");
    assert!(
        progress[0].contains("committed") && progress[0].contains("fault: none"),
        "{}",
        progress[0]
    );
    assert!(
        !err.contains('\u{1b}') && !err.contains('\r'),
        "control codes in:\n{err:?}"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let events: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(events[0]["event"], "run_started");
    assert!(events.iter().any(|e| e["event"] == "txn_outcome"));
    assert!(events.iter().any(|e| e["event"] == "producer_finished"));
}

/// Issue 35: a soak compares its iterations with the results store's earlier nights. Three
/// fabricated passing nights of the same scenario, version and client, each much faster than
/// this machine, then one planted failure: "newly failing" is the summary's first line, the
/// new cause (`sabotage`) and the slower throughput follow, summary.json and the JUnit suite
/// carry them, and the exit code is the violation's (1) even with --fail-on-regression.
#[test]
fn a_soak_names_its_regressions_against_the_stores_earlier_nights_first() {
    use pulsar_chaos::results::Record;
    use pulsar_chaos::store::{scenario_hash, Location, Store};
    let dir = tmpdir("soak-regress");
    let scenario = small_scenario(&dir, "soak-regress", "sabotage: { skip: [7] }\n");
    let store_path = dir.join("results.db");
    // As the soak will load it: with the JVM setting the tests give their clusters (a
    // different setting is a different scenario hash, so another group).
    let mut s = pulsar_chaos::scenario::load(&scenario).unwrap();
    s.set_jvm(it_jvm());
    let pulsar_chaos::scenario::ClusterSpec::Docker(d) = &s.cluster else {
        panic!("a standalone")
    };
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let earlier = |night: u64, i: u64| Record {
        run_id: format!("earlier-{night}-{i}"),
        started_ms: now_ms - night * 86_400_000,
        source: "soak".into(),
        scenario: "soak-regress".into(),
        scenario_hash: scenario_hash(s.resolved_yaml().as_bytes()),
        seed: i,
        pulsar_version: d.pulsar_version.clone(),
        image: None,
        client: "own".into(),
        harness_version: "0.1.0".into(),
        status: "pass".into(),
        causes: vec![],
        expected: 3000,
        received: 3000,
        missing: 0,
        duplicate_values: 0,
        duplicate_copies: 0,
        unexpected: 0,
        ambiguous: 0,
        throughput: Some(1_000_000.0),
        recovery_ms: Default::default(),
        findings: vec![],
        run_dir: format!("/nowhere/{night}/{i}"),
    };
    rt().block_on(async {
        let mut store = Store::open(&Location::Sqlite(store_path.clone()))
            .await
            .unwrap();
        for night in 1..=3 {
            for i in 0..2 {
                store.insert(&earlier(night, i), now_ms).await.unwrap();
            }
        }
        store.close().await;
    });
    let junit = dir.join("junit.xml");
    let o = run(&[
        "soak",
        scenario.to_str().unwrap(),
        "--duration",
        "20m",
        "--max-iterations",
        "1",
        "--seed",
        "5",
        "--out",
        dir.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        "--progress",
        "none",
        "--store",
        store_path.to_str().unwrap(),
        "--fail-on-regression",
    ]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some("REGRESSIONS: 3 (compared with 6 earlier record(s) in the results store)"),
        "{out}"
    );
    let first = lines.next().unwrap();
    assert!(
        first.starts_with("  newly failing: soak-regress (")
            && first.contains("passed on each of the previous 3 night(s)")
            && first.ends_with("now 1 of 1 iteration(s) did not pass (violation 1)"),
        "{out}"
    );
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("  new cause: sabotage in 1 iteration(s) of soak-regress"),
        "{out}"
    );
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("  throughput of soak-regress"),
        "{out}"
    );
    let sd = soak_dir(&out);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sd.join("summary.json")).unwrap()).unwrap();
    let r = &summary["regressions"];
    assert_eq!(r["compared"], true, "{r}");
    assert_eq!(r["regressions"][0]["kind"], "newly_failing", "{r}");
    assert_eq!(r["regressions"][1]["kind"], "new_cause", "{r}");
    assert_eq!(r["regressions"][2]["kind"], "lower_throughput", "{r}");
    let failing_dir = r["regressions"][0]["run_dirs"][0].as_str().unwrap();
    assert!(
        std::path::Path::new(failing_dir)
            .join("verdict.json")
            .is_file(),
        "{r}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let prop = |name: &str| {
        doc.descendants()
            .find(|n| n.has_tag_name("property") && n.attribute("name") == Some(name))
            .and_then(|n| n.attribute("value"))
            .map(String::from)
    };
    assert_eq!(prop("regressions").as_deref(), Some("3"), "{xml}");
    assert!(
        prop("regression.1")
            .unwrap()
            .starts_with("newly_failing: newly failing: soak-regress"),
        "{xml}"
    );
    // The soak's own iteration is in the store now: 7 records.
    let n = rt().block_on(async {
        let mut store = Store::open(&Location::Sqlite(store_path.clone()))
            .await
            .unwrap();
        store.records().await.unwrap().len()
    });
    assert_eq!(n, 7);
}
