use super::*;

/// Issue 33: `soak` takes a cluster the harness did not start from the command line, as
/// `run` does (--service-url/--admin-url, --adapter, --allow-destructive), and refuses
/// reply_loss there as `run` does, before anything starts.
#[test]
fn soak_takes_a_cluster_it_did_not_start_from_the_command_line() {
    use clap::Parser;
    let dir = crate::scratch::Scratch::new("pc-soak-external");
    let path = dir.join("s.yaml");
    std::fs::write(
        &path,
        "name: s\nworkload: { topic: persistent://public/default/s, messages: 10 }\n",
    )
    .unwrap();
    let file = path.to_str().unwrap();
    let parse = |extra: &[&str]| {
        let mut argv = vec!["pulsar-chaos", "soak", file, "--duration", "1m"];
        argv.extend_from_slice(extra);
        let crate::cli::Command::Soak(args) = crate::cli::Cli::parse_from(argv).command else {
            panic!("not soak")
        };
        args
    };
    let s = load_scenario(&parse(&[])).unwrap();
    assert!(matches!(s.cluster, ClusterSpec::Docker(_)));
    let args = parse(&[
        "--service-url",
        "pulsar://pulsar.example:6650",
        "--admin-url",
        "http://pulsar.example:8080",
        "--adapter",
        "a.yaml",
        "--allow-destructive",
    ]);
    let s = load_scenario(&args).unwrap();
    let ClusterSpec::External { service_url, .. } = &s.cluster else {
        panic!("{:?}", s.cluster)
    };
    assert_eq!(service_url, "pulsar://pulsar.example:6650");
    assert!(s.allow_destructive);
    assert!(s.adapter.as_deref().is_some_and(|a| a.ends_with("a.yaml")));
    std::fs::write(
        &path,
        "name: s\ncluster: { topology: standalone }\nworkload: { topic: persistent://public/default/s, messages: 10 }\nfaults:\n  - kind: reply_loss\n    reply: end_txn\n    count: 1\n    schedule: { at: [1s] }\n",
    )
    .unwrap();
    let e = load_scenario(&args).unwrap_err();
    assert_eq!(e.exit_code(), exit::BAD_INPUT);
    assert!(
        e.to_string()
            .contains("reply_loss faults need the harness's proxy"),
        "{e}"
    );
}

/// Issue 33: a passing iteration prints no reproduce command (neither when it starts nor
/// when it ends); a failing one, or one that could not run, ends with it.
#[test]
fn only_failing_iterations_print_their_reproduce_command() {
    use clap::Parser;
    let cli = crate::cli::Cli::parse_from(["pulsar-chaos", "soak", "s.yaml", "--duration", "1m"]);
    let crate::cli::Command::Soak(args) = cli.command else {
        panic!("not soak")
    };
    let s = crate::scenario::parse(
        "s.yaml",
        "name: s\nworkload: { topic: persistent://public/default/s, messages: 10 }\n",
    )
    .unwrap();
    let req = iteration_request(&args, &s, 1, Path::new("runs"), &None);
    assert!(
        !req.announce_reproduce,
        "runner::run would print it at every start"
    );
    let r = "pulsar-chaos run s.yaml --seed 9".to_string();
    let pass = iteration_end(3, "PASS: 10 numbers", None);
    assert_eq!(pass, "soak: iteration 3: PASS: 10 numbers\n");
    let fail = iteration_end(4, "VIOLATION: 1 missing", Some(&r));
    assert!(
        fail.ends_with("soak: iteration 4: reproduce with: pulsar-chaos run s.yaml --seed 9\n"),
        "{fail}"
    );
}

fn it(i: u64, status: &str, dir: Option<PathBuf>) -> Iteration {
    Iteration {
        iteration: i,
        seed: i,
        status: status.into(),
        summary: String::new(),
        seconds: 1.0,
        run_dir: dir,
        reproduce: format!("pulsar-chaos run s.yaml --seed {i}"),
        faults: BTreeMap::new(),
        faults_summary: None,
        error: String::new(),
        nodes_down: Vec::new(),
    }
}

#[test]
fn an_iteration_that_could_not_run_says_which_node_was_down_and_its_last_lines() {
    let mut s = Summary::empty("s".into(), 1, 0);
    let e = Error::Pulsar("the cluster did not become ready: broker-2 exited\n--- logs ---".into());
    let down = vec![NodeDown {
        node: "broker-2".into(),
        container: "pc-x-broker-2".into(),
        status: "exited".into(),
        exit_code: Some(1),
        log: (1..=12).map(|n| format!("line {n}")).collect(),
    }];
    record_error(&mut s, &e, (3, 7), "r".into(), Instant::now(), down);
    let r = &s.runs[0];
    assert_eq!(
        r.summary,
        "the cluster did not become ready: broker-2 exited; broker-2 (pc-x-broker-2) is exited with exit code 1"
    );
    let t = s.table();
    assert!(t.contains("could not run:\n  iteration 3: the cluster did not become ready: broker-2 exited\n    broker-2 (pc-x-broker-2) is exited with exit code 1; its last log lines:\n      line 3\n"), "{t}");
    assert!(
        t.contains("      line 12\n") && !t.contains("line 2\n"),
        "{t}"
    );
    let j = serde_json::to_value(&s).unwrap();
    assert_eq!(j["runs"][0]["nodes_down"][0]["exit_code"], 1);
    assert_eq!(j["runs"][0]["nodes_down"][0]["log"][11], "line 12");
    // An iteration that ran has neither key.
    assert!(serde_json::to_value(it(1, "pass", None))
        .unwrap()
        .get("nodes_down")
        .is_none());
}

#[test]
fn pruning_keeps_the_last_passing_and_every_failure() {
    let base = std::env::temp_dir().join(format!("pc-prune-{}", std::process::id()));
    let mut runs = Vec::new();
    for (i, status) in ["pass", "violation", "pass", "pass", "inconclusive", "pass"]
        .iter()
        .enumerate()
    {
        let d = base.join(format!("r{i}"));
        std::fs::create_dir_all(&d).unwrap();
        runs.push(it(i as u64, status, Some(d)));
    }
    let removed = prune(&mut runs, 2);
    assert_eq!(removed.len(), 2);
    assert!(runs[0].run_dir.is_none() && runs[2].run_dir.is_none());
    assert!(
        runs[1].run_dir.is_some()
            && runs[3].run_dir.is_some()
            && runs[4].run_dir.is_some()
            && runs[5].run_dir.is_some()
    );
    assert!(!base.join("r0").exists() && base.join("r1").exists() && base.join("r5").exists());
    let _ = std::fs::remove_dir_all(base);
}

#[test]
fn the_exit_code_is_the_worst_outcome() {
    let mut s = Summary::empty("s".into(), 1, 0);
    s.iterations = 3;
    s.passes = 3;
    s.regressions = Comparison::not_compared(regress::Settings::default(), NO_STORE);
    s.runs = vec![it(1, "pass", None), it(2, "violation", None)];
    assert_eq!(s.exit_code(), exit::PASS);
    s.inconclusive = 1;
    assert_eq!(s.exit_code(), exit::INCONCLUSIVE);
    s.violations = 1;
    assert_eq!(s.exit_code(), exit::VIOLATION);
    let t = s.table();
    assert!(t.contains("reproduce the failures with:"), "{t}");
    assert!(
        t.contains("pulsar-chaos run s.yaml --seed 2   # iteration 2: violation"),
        "{t}"
    );
}

/// The issue's soak: every iteration's faults skipped. Each line says 0/3, the totals say
/// none fired, and summary.json carries the counts (it said `"faults": {}` and nothing
/// else).
#[test]
fn the_summary_says_how_many_planned_faults_fired_per_iteration_and_in_all() {
    let skipped = |names: &[&str]| FaultsSummary {
        planned: 3,
        fired: 3 - names.len() as u64,
        skipped: names.len() as u64,
        failed: 0,
        not_fired: names
            .iter()
            .map(|n| crate::checker::NotFired {
                fault: n.to_string(),
                fate: "skipped".into(),
                reason: "the producer finished before the fault was due".into(),
            })
            .collect(),
    };
    let mut s = Summary::empty("s".into(), 1, 0);
    let mut none = it(1, "inconclusive", None);
    none.faults_summary = Some(skipped(&["loss#1", "unload#1", "loss#2"]));
    let mut all = it(2, "pass", None);
    all.faults_summary = Some(skipped(&[]));
    let error = it(3, "error", None);
    s.runs = vec![none, all, error];
    s.iterations = 3;
    s.faults_planned = 6;
    s.faults_fired = 3;
    s.iterations_without_faults = 1;
    let t = s.table();
    assert!(
        t.contains("  planned faults fired: 3 of 6; 1 iteration(s) fired none (not tested under faults: inconclusive)\n"),
        "{t}"
    );
    assert!(t.contains("seconds  faults  summary"), "{t}");
    let lines: Vec<&str> = t.lines().collect();
    let row = |i: &str| {
        lines
            .iter()
            .find(|l| l.trim_start().starts_with(&format!("{i} ")))
            .unwrap_or_else(|| panic!("{t}"))
            .to_string()
    };
    assert!(row("1").contains("inconclusive      1.0     0/3"), "{t}");
    assert!(row("2").contains("pass              1.0     3/3"), "{t}");
    assert!(row("3").contains("error             1.0       -"), "{t}");
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["faults_planned"], 6);
    assert_eq!(json["faults_fired"], 3);
    assert_eq!(json["iterations_without_faults"], 1);
    assert_eq!(json["runs"][0]["faults_summary"]["fired"], 0);
    assert_eq!(
        json["runs"][0]["faults_summary"]["not_fired"][2]["fault"],
        "loss#2"
    );
    // No faults planned anywhere: no totals line.
    let mut quiet = Summary::empty("s".into(), 1, 0);
    quiet.runs = vec![it(1, "pass", None)];
    assert!(!quiet.table().contains("planned faults fired"));
}

/// Issue 35: the regressions come first in the summary, their exit code is the failing
/// iteration's or, when every iteration passed, 9 only with --fail-on-regression, and the
/// JUnit suite carries them as properties.
#[test]
fn regressions_print_first_set_the_exit_code_and_become_junit_properties() {
    let reg = |kind| regress::Regression {
        kind,
        scenario: "s".into(),
        scenario_hash: "h".into(),
        pulsar_version: "4.2.4".into(),
        client: "own".into(),
        subject: "throughput".into(),
        message: "throughput of s: median 10 msg/s now".into(),
        run_dirs: vec![],
        now: Some(10.0),
        usual: None,
    };
    let mut s = Summary::empty("s".into(), 1, 0);
    s.iterations = 1;
    s.passes = 1;
    s.runs = vec![it(1, "pass", None)];
    s.regressions = Comparison {
        compared: true,
        settings: regress::Settings::default(),
        previous_records: 7,
        regressions: vec![reg(regress::Kind::LowerThroughput)],
        notes: vec![],
    };
    let t = s.table();
    assert!(
        t.starts_with("REGRESSIONS: 1 (compared with 7 earlier record(s) in the results store)\n  throughput of s: median 10 msg/s now\nsoak of s"),
        "{t}"
    );
    assert_eq!(s.exit_code_with(false), exit::PASS);
    assert_eq!(s.exit_code_with(true), exit::REGRESSION);
    s.violations = 1;
    assert_eq!(s.exit_code_with(true), exit::VIOLATION);
    assert_eq!(s.exit_code_with(false), exit::VIOLATION);
    let p = junit_properties(&s.regressions);
    assert_eq!(p[0], ("regressions".to_string(), "1".to_string()));
    assert_eq!(
        p[1],
        (
            "regression.1".to_string(),
            "lower_throughput: throughput of s: median 10 msg/s now".to_string()
        )
    );
    let j = serde_json::to_value(&s).unwrap();
    assert_eq!(
        j["regressions"]["regressions"][0]["kind"],
        "lower_throughput"
    );
    // Without a store: said first, and in the JUnit file.
    s.regressions = Comparison::not_compared(regress::Settings::default(), NO_STORE);
    assert!(s.table().starts_with(
        "regressions: not compared (--no-store: there is no results store to compare with)\nsoak of s"
    ));
    assert_eq!(
        junit_properties(&s.regressions),
        vec![(
            "regressions".to_string(),
            format!("not compared: {NO_STORE}")
        )]
    );
}

#[test]
fn the_dry_run_checks_the_options_and_prints_the_plan() {
    use clap::Parser;
    let dir = crate::scratch::Scratch::new("pc-soak-dry");
    let path = dir.join("s.yaml");
    std::fs::write(
        &path,
        "name: s\nworkload: { topic: persistent://public/default/s, messages: 10 }\nfaults:\n  - kind: topic_unload\n    schedule: { at: [1s] }\n",
    )
    .unwrap();
    let parse = |extra: &[&str]| {
        let mut argv = vec![
            "pulsar-chaos",
            "soak",
            path.to_str().unwrap(),
            "--duration",
            "1h",
        ];
        argv.extend_from_slice(extra);
        let crate::cli::Command::Soak(args) = crate::cli::Cli::parse_from(argv).command else {
            panic!("not soak")
        };
        args
    };
    let args = parse(&[
        "--store",
        "/x/r.db",
        "--max-iterations",
        "4",
        "--fail-on-regression",
    ]);
    let s = load_scenario(&args).unwrap();
    let t = dry_run(&args, &s, 7, &regression_settings(&args).unwrap()).unwrap();
    assert!(
        t.starts_with("dry run of soak s for 1h or 4 iteration(s): master seed 7"),
        "{t}"
    );
    assert!(t.contains("results store: /x/r.db (each iteration recorded; regressions: a failure after 3 passing night(s)"), "{t}");
    assert!(t.contains("--fail-on-regression: exit 9"), "{t}");
    assert!(
        t.contains(&format!(
            "iteration 1, seed {}:",
            crate::seed::iteration_seed(7, 1)
        )),
        "{t}"
    );
    assert!(t.contains("topic_unload"), "{t}");
    let t = dry_run(
        &parse(&["--no-store"]),
        &s,
        7,
        &regress::Settings::default(),
    )
    .unwrap();
    assert!(
        t.contains(&format!("results store: none ({NO_STORE})")),
        "{t}"
    );
    let bad = parse(&["--regression-spread", "0"]);
    assert_eq!(
        regression_settings(&bad).unwrap_err().exit_code(),
        exit::BAD_INPUT
    );
}
