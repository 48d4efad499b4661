//! Issue 29, "a green verdict that tested nothing": a scenario whose faults are all due after
//! its producer has finished is not a pass. Every fault is skipped; the verdict is
//! INCONCLUSIVE (exit 4) and says, in its line, `verdict.json` and JUnit, that none of the
//! planned faults fired, and why.

use crate::common::*;

#[test]
fn faults_due_after_the_producer_finished_make_the_run_inconclusive_not_a_pass() {
    let started = std::time::Instant::now();
    let dir = tmpdir("faults-never-fired");
    // 2,000 numbers without `rate:`: done in about a second. The faults are due at 60 s and
    // later, so each is skipped ("the producer finished before the fault was due").
    let scenario = write(
        &dir,
        "never.yaml",
        &format!(
            "name: never-fired\n{}workload:\n  topic: persistent://public/default/never-fired\n  messages: 2000\n  txn_size: 100\n  concurrency: 2\n\
faults:\n  - kind: topic_unload\n    name: unload\n    schedule: {{ at: [60s, 120s] }}\n  - kind: pause\n    name: pause\n    duration: 2s\n    schedule: {{ at: [90s] }}\n",
            standalone_cluster_yaml()
        ),
    );
    let junit = dir.join("junit.xml");
    let o = run_scenario(&scenario, 29, &dir, &["--junit", junit.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(4), "{t}");
    let run_dir = run_dir_of(&t);
    let v = verdict(&run_dir);
    assert_eq!(v["status"], "inconclusive", "{v}");
    // Every number arrived once: only the faults make it inconclusive.
    assert_eq!(v["missing_total"], 0, "{v}");
    assert_eq!(v["duplicate_values"], 0, "{v}");
    let f = &v["faults_summary"];
    assert_eq!(
        (&f["planned"], &f["fired"], &f["skipped"], &f["failed"]),
        (&3.into(), &0.into(), &3.into(), &0.into()),
        "{v}"
    );
    let not_fired: Vec<&str> = f["not_fired"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["fault"].as_str().unwrap())
        .collect();
    assert_eq!(not_fired, ["unload#1", "pause#1", "unload#2"], "{v}");
    let reasons = v["reasons"].to_string();
    assert!(
        reasons.contains("none of the 3 planned faults fired"),
        "{reasons}"
    );
    assert!(
        reasons.contains("the producer finished before the fault was due"),
        "{reasons}"
    );
    // The verdict line says it.
    let line = String::from_utf8_lossy(&o.stdout);
    let first = line.lines().next().unwrap_or_default();
    assert!(first.starts_with("INCONCLUSIVE:"), "{t}");
    assert!(first.contains("Faults: 0 of 3 planned fired."), "{t}");
    // JUnit: a failure, with the counts.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<failure"), "{xml}");
    assert!(
        xml.contains("<property name=\"faults_planned\" value=\"3\"/>"),
        "{xml}"
    );
    assert!(
        xml.contains("<property name=\"faults_fired\" value=\"0\"/>"),
        "{xml}"
    );
    // recheck reproduces it from the stored read-back (which now holds the plan's faults).
    let r = run(&["recheck", run_dir.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(4), "{}", text(&r));
    eprintln!(
        "faults never fired: {:.0}s",
        started.elapsed().as_secs_f64()
    );
}
