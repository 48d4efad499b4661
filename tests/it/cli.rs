//! The command line without Docker: bad input exits 2 with file:line:column, never a panic.

use crate::common::*;

fn assert_clean_failure(o: &std::process::Output, code: i32) -> String {
    let t = text(o);
    assert_eq!(o.status.code(), Some(code), "{t}");
    assert!(!t.contains("panicked"), "{t}");
    assert!(!t.contains("RUST_BACKTRACE"), "{t}");
    t
}

const GOOD: &str = "name: t\ncluster: { topology: standalone }\nworkload:\n  topic: persistent://public/default/t\n  messages: 100\n  txn_size: 10\n";

#[test]
fn bad_scenarios_exit_2_with_file_line_and_column() {
    let dir = tmpdir("bad-scenarios");
    let cases = [
        (
            "unknown-key.yaml",
            GOOD.replace("  txn_size: 10\n", "  txn_size: 10\n  colour: blue\n"),
            "unknown-key.yaml:7:3",
            "unknown field `colour`",
        ),
        (
            "wrong-type.yaml",
            GOOD.replace("messages: 100", "messages: many"),
            "wrong-type.yaml:5:",
            "invalid type",
        ),
        (
            "negative.yaml",
            GOOD.replace("messages: 100", "messages: -3"),
            "negative.yaml:5:",
            "integer `-3`, expected u64",
        ),
        (
            "txn-size-zero.yaml",
            GOOD.replace("txn_size: 10", "txn_size: 0"),
            "txn-size-zero.yaml:6:3",
            "txn_size: must be at least 1",
        ),
        (
            // Regression (issue 33): serde named only `faults` at the list's start.
            "fault-duration.yaml",
            format!(
                "{GOOD}faults:\n  - kind: pause\n    duration: 5\n    schedule: {{ at: [1s] }}\n"
            ),
            "fault-duration.yaml:9:5",
            "faults[0].duration: a duration needs a unit: write 5s or 5ms",
        ),
        (
            "malformed.yaml",
            "name: t\nworkload: [\n".to_string(),
            "malformed.yaml:",
            "",
        ),
    ];
    for (name, body, location, message) in cases {
        let p = write(&dir, name, &body);
        for cmd in ["validate", "run", "plan"] {
            let o = run(&[cmd, p.to_str().unwrap()]);
            let t = assert_clean_failure(&o, 2);
            assert!(
                t.contains(location),
                "{cmd} {name}: {location:?} not in {t}"
            );
            assert!(t.contains(message), "{cmd} {name}: {message:?} not in {t}");
        }
    }
    let good = write(&dir, "good.yaml", GOOD);
    let o = run(&["validate", good.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// Regression (issue 33): `run --dry-run` exited 0 when the run would have refused, and
/// against an admin URL that does not answer.
#[test]
fn a_dry_run_exits_as_the_run_would_before_starting_anything() {
    let dir = tmpdir("dry-run-exit");
    let urls = [
        "--service-url",
        "pulsar://127.0.0.1:1",
        "--admin-url",
        "http://127.0.0.1:1",
    ];
    let quiet = write(&dir, "quiet.yaml", GOOD);
    let mut args = vec!["run", quiet.to_str().unwrap(), "--seed", "1", "--dry-run"];
    args.extend(urls);
    let t = assert_clean_failure(&run(&args), 3);
    assert!(
        t.contains("the admin API at http://127.0.0.1:1 does not answer"),
        "{t}"
    );
    assert!(t.contains("the dry run exits 3"), "{t}");
    let destructive = write(
        &dir,
        "destructive.yaml",
        &format!("{GOOD}faults:\n  - kind: broker_restart\n    schedule: {{ at: [1s] }}\n"),
    );
    let mut args = vec![
        "run",
        destructive.to_str().unwrap(),
        "--seed",
        "1",
        "--dry-run",
    ];
    args.extend(urls);
    let t = assert_clean_failure(&run(&args), 2);
    assert!(t.contains("a run would refuse"), "{t}");
    assert!(t.contains("firing 0"), "the firings are still printed: {t}");
}

#[test]
fn a_missing_scenario_file_is_bad_input() {
    let o = run(&["validate", "/nonexistent/scenario.yaml"]);
    let t = assert_clean_failure(&o, 2);
    assert!(t.contains("/nonexistent/scenario.yaml: cannot read"), "{t}");
}

#[test]
fn unknown_topology_is_a_usage_error() {
    let o = run(&["cluster", "up", "--topology", "mesh"]);
    let t = assert_clean_failure(&o, 2);
    assert!(t.contains("invalid value 'mesh'"), "{t}");
    assert!(t.contains("standalone, cluster"), "{t}");
}

#[test]
fn docker_socket_missing_is_an_infrastructure_failure() {
    let o = bin()
        .args(["cluster", "up"])
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .unwrap();
    let t = assert_clean_failure(&o, 3);
    assert!(
        t.contains("cannot reach the Docker engine at unix:///nonexistent/docker.sock"),
        "{t}"
    );
    assert!(t.contains("Is dockerd running"), "{t}");
}

#[test]
fn plan_is_deterministic_from_the_command_line() {
    let dir = tmpdir("plan-cli");
    let p = write(
        &dir,
        "f.yaml",
        "name: f\ncluster: { topology: cluster, brokers: 2 }\nworkload: { topic: persistent://public/default/t, messages: 10 }\nfaults:\n  - kind: broker_restart\n    schedule: { random: { count: 5, within: [1s, 60s] } }\n",
    );
    let a = run(&["plan", p.to_str().unwrap(), "--seed", "5"]);
    let b = run(&["plan", p.to_str().unwrap(), "--seed", "5"]);
    let c = run(&["plan", p.to_str().unwrap(), "--seed", "6"]);
    assert_eq!(a.status.code(), Some(0), "{}", text(&a));
    assert_eq!(a.stdout, b.stdout);
    assert_ne!(a.stdout, c.stdout);
}

/// Issue 29: a schedule in seconds on a workload without `rate:` (it may be done in a second)
/// makes `validate` and `plan` warn on standard error; the exit code and `plan`'s JSON on
/// standard output are unchanged. A workload that outlasts its faults gets no warning.
#[test]
fn validate_and_plan_warn_when_the_faults_may_come_after_the_workload() {
    let dir = tmpdir("reach-cli");
    let faults =
        "faults:\n  - kind: topic_unload\n    name: unload\n    schedule: { at: [10s, 30s] }\n";
    let fast = write(
        &dir,
        "fast.yaml",
        &format!("name: fast\ncluster: {{ topology: standalone }}\nworkload:\n  topic: persistent://public/default/t\n  messages: 50000\n{faults}"),
    );
    let paced = write(
        &dir,
        "paced.yaml",
        &format!("name: paced\ncluster: {{ topology: standalone }}\nworkload:\n  topic: persistent://public/default/t\n  messages: 50000\n  rate: 1000\n{faults}"),
    );
    for cmd in ["validate", "plan"] {
        let o = run(&[cmd, fast.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(0), "{cmd}: {}", text(&o));
        assert!(
            err.contains(&format!(
                "warning: {}: the workload has no `rate:`",
                fast.display()
            )),
            "{cmd}: {err}"
        );
        assert!(
            err.contains("faults are due up to 30s (`unload`)"),
            "{cmd}: {err}"
        );
        assert!(
            !String::from_utf8_lossy(&o.stdout).contains("warning"),
            "{cmd}: the warning goes to standard error"
        );
        let o = run(&[cmd, paced.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{cmd}: {}", text(&o));
        assert!(
            !String::from_utf8_lossy(&o.stderr).contains("warning"),
            "{cmd}: {}",
            text(&o)
        );
    }
    let o = run(&["plan", fast.to_str().unwrap(), "--seed", "1"]);
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(plan["faults"].as_array().unwrap().len(), 2);
}

/// Issue 33: `plan` without a seed (none given, none in the scenario) draws one and prints it
/// as `run` does, so the plan shown is one `run --seed` executes; the plan names the seed.
#[test]
fn plan_without_a_seed_draws_and_prints_one_as_run_does() {
    let dir = tmpdir("plan-seed-cli");
    let p = write(
        &dir,
        "f.yaml",
        "name: f\ncluster: { topology: cluster, brokers: 2 }\nworkload: { topic: persistent://public/default/t, messages: 10 }\nfaults:\n  - kind: broker_restart\n    schedule: { random: { count: 5, within: [1s, 60s] } }\n",
    );
    let o = run(&["plan", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    let drawn: u64 = err
        .split("no seed given: drew ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no drawn seed on standard error: {err}"));
    assert!(
        err.contains(&format!("--seed {drawn}` executes this plan")),
        "{err}"
    );
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(plan["seed"], drawn);
    let again = run(&["plan", p.to_str().unwrap(), "--seed", &drawn.to_string()]);
    assert_eq!(again.stdout, o.stdout);
    // A seed given (or the scenario's) draws nothing.
    assert!(!String::from_utf8_lossy(&again.stderr).contains("drew"));
}

/// Issue 33: a damaged readback.json (not UTF-8, or not JSON) is a damaged run directory: exit
/// 2 naming the file and what to do, not exit 3 nor the parser's own words.
#[test]
fn recheck_of_a_damaged_readback_is_bad_input_naming_the_file() {
    let dir = tmpdir("damaged-cli");
    for (case, bytes, what) in [
        ("utf8", &b"{\"format\": \"\xff\"}"[..], "not UTF-8 text"),
        ("json", &b"{bad"[..], "not valid JSON (line 1, column 2)"),
    ] {
        let run_dir = dir.join(case);
        std::fs::create_dir_all(&run_dir).unwrap();
        for f in ["run.json", "verdict.json", "history.jsonl"] {
            write(&run_dir, f, "{}\n");
        }
        std::fs::write(run_dir.join("readback.json"), bytes).unwrap();
        let o = run(&["recheck", run_dir.to_str().unwrap()]);
        let t = assert_clean_failure(&o, 2);
        assert!(
            t.contains(&format!(
                "{}: {what}",
                run_dir.join("readback.json").display()
            )),
            "{case}: {t}"
        );
        assert!(t.contains("the run directory is damaged"), "{case}: {t}");
        assert!(!t.contains("expected ident"), "{case}: {t}");
    }
}

/// The tests run the release binary of another package, which `cargo test -p
/// pulsar-chaos-tests` does not rebuild: a binary older than any source of the harness is
/// refused (`bin::BIN`), and a newer one is taken.
#[test]
fn a_binary_older_than_the_harness_sources_is_found_out() {
    use std::time::{Duration, UNIX_EPOCH};
    let root = tmpdir("stale-binary");
    // Every file's time set, not taken from the clock: the check compares times.
    let put = |path: &str, secs: u64| {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let f = std::fs::File::create(&p).unwrap();
        f.set_modified(UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    };
    let at = |secs: u64| UNIX_EPOCH + Duration::from_secs(secs);
    put("src/main.rs", 1_000);
    put("crates/core/src/deep/plan.rs", 2_000);
    assert_eq!(
        crate::bin::newer_source(&root, at(1_999)),
        Some(root.join("crates/core/src/deep/plan.rs"))
    );
    assert_eq!(crate::bin::newer_source(&root, at(2_000)), None);
    // Only Rust sources: a manifest cargo need not rebuild for, or a file that is not code,
    // says nothing about the binary.
    put("Cargo.toml", 3_000);
    put("Cargo.lock", 3_000);
    put("src/notes.txt", 3_000);
    assert_eq!(crate::bin::newer_source(&root, at(2_000)), None);
    put("src/cli.rs", 3_000);
    assert_eq!(
        crate::bin::newer_source(&root, at(2_000)),
        Some(root.join("src/cli.rs"))
    );
    // This checkout's binary is what every other test runs: fresh, or they would all fail.
    assert!(BIN.exists());
}

/// This package is the repository's `tests/` directory, so `CARGO_MANIFEST_DIR` is not the
/// repository's root here: every test names a repository file through `repo()`
/// (support/bin.rs). A scenario path built from the manifest directory would point into
/// `tests/` and fail only when that test runs (found in a merged long test).
#[test]
fn the_tests_name_repository_files_through_repo() {
    fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, found);
            } else if p.extension().is_some_and(|x| x == "rs")
                && !p.ends_with("support/bin.rs")
                && std::fs::read_to_string(&p)
                    .unwrap()
                    .contains(concat!("env!(\"CARGO_MANIFEST", "_DIR\")"))
            {
                found.push(p.display().to_string());
            }
        }
    }
    let mut found = Vec::new();
    for d in ["it", "long", "support"] {
        walk(&repo("tests").join(d), &mut found);
    }
    for f in ["report_html.rs", "store_pg.rs"] {
        let p = repo("tests").join(f);
        if std::fs::read_to_string(&p)
            .unwrap()
            .contains(concat!("env!(\"CARGO_MANIFEST", "_DIR\")"))
        {
            found.push(p.display().to_string());
        }
    }
    assert!(found.is_empty(), "use repo(\"...\") in {found:?}");
}
