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
