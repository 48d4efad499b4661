use super::*;
use crate::checker::{self, Context, FaultRecord, MsgId, StallFinding, Tally};

fn verdict(read: &[u64]) -> Verdict {
    let mut t = Tally::new(10);
    for (i, v) in read.iter().enumerate() {
        t.observe(
            v.to_string().as_bytes(),
            MsgId {
                partition: -1,
                ledger: 1,
                entry: i as u64,
                batch: -1,
            },
        );
    }
    checker::verdict(
        t.finish().unwrap(),
        None::<Vec<Result<crate::history::Event, String>>>,
        &Context::default(),
    )
}

fn fault(kind: &str, recovery: Option<u64>) -> FaultRecord {
    FaultRecord {
        fault: format!("{kind}#1"),
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

fn stalled() -> Verdict {
    let mut v = verdict(&(0..5).collect::<Vec<_>>());
    v.status = Status::Inconclusive;
    v.stall = Some(StallFinding {
        since_ms: 1,
        detected_ms: 2,
        failed_attempts: 3,
        failures: vec![],
        broker_log: vec![],
        partitions: vec![],
        likely_cause: Some(format!(
            "broker-1 on kb-{}-partition-0 kept failing ({}x): the chain apache/pulsar#24945 replaced",
            rand_hex(),
            rand_hex().len() * 37
        )),
    });
    v
}

fn rand_hex() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    format!("{:x}", N.fetch_add(7919, Ordering::Relaxed) * 2654435761)
}

#[test]
fn causes_count_under_the_upstream_issue_they_name() {
    assert_eq!(
        cause_key("broker-1 on t-1 failed (175x): the chain apache/pulsar#24945 replaced"),
        "apache/pulsar#24945"
    );
    assert_eq!(cause_key("node 2 said 17 times"), "node # said # times");
}

fn record(version: &str, i: u32, v: &Verdict, expect: Option<&[Expected]>) -> RunRecord {
    RunRecord::from_verdict(at(version, i), v, Some(1000.0 * f64::from(i)), expect)
}

fn at(version: &str, i: u32) -> RunAt {
    RunAt {
        version: version.into(),
        client: None,
        index: i,
        seed: 7,
        seconds: 60.0,
        run_dir: Some(format!("{version}/run-{i}")),
        reproduce: format!("pulsar-chaos run s.yaml --seed 7 --pulsar-version {version}"),
    }
}

#[test]
fn a_stalled_inconclusive_is_counted_apart_from_other_inconclusives() {
    assert_eq!(Outcome::of(&stalled()), Outcome::Stalled);
    let mut v = verdict(&(0..10).collect::<Vec<_>>());
    assert_eq!(Outcome::of(&v), Outcome::Pass);
    v.status = Status::Inconclusive;
    assert_eq!(Outcome::of(&v), Outcome::Inconclusive);
    let missing = verdict(&(0..9).collect::<Vec<_>>());
    assert_eq!(Outcome::of(&missing), Outcome::Violation);
}

#[test]
fn expectations_are_met_only_by_the_outcomes_they_name() {
    assert!(Outcome::Stalled.meets(&[Expected::Stalled, Expected::Pass]));
    assert!(!Outcome::Inconclusive.meets(&[Expected::Stalled]));
    assert!(!Outcome::Stalled.meets(&[Expected::Inconclusive]));
    assert!(!Outcome::Error.meets(&[
        Expected::Pass,
        Expected::Violation,
        Expected::Inconclusive,
        Expected::Stalled
    ]));
}

#[test]
fn seeds_repeat_a_fixed_seed_and_derive_the_others() {
    assert_eq!(seeds(Some(4), 99, 3), vec![4, 4, 4]);
    let derived = seeds(None, 99, 3);
    assert_eq!(derived, seeds(None, 99, 3));
    assert_eq!(derived[0], crate::seed::iteration_seed(99, 1));
    assert_ne!(derived[0], derived[1]);
}

#[test]
fn rows_sum_each_version_and_compare_with_the_expectation() {
    let old_exp = [Expected::Stalled];
    let new_exp = [Expected::Pass];
    let mut pass = verdict(&(0..10).collect::<Vec<_>>());
    pass.faults = vec![
        fault("bookie_restart", Some(3000)),
        fault("bookie_restart", None),
    ];
    let mut pass2 = pass.clone();
    pass2.faults = vec![
        fault("bookie_restart", Some(1000)),
        fault("topic_unload", Some(500)),
    ];
    let mut m = Matrix {
        scenario: "s".into(),
        scenario_file: "s.yaml".into(),
        versions: vec!["4.0.7".into(), "4.2.4".into()],
        clients: vec![],
        times: 3,
        seeds: vec![7, 7, 7],
        started_ms: 0,
        elapsed_s: 1.0,
        interrupted: false,
        rows: vec![],
        runs: vec![
            record("4.0.7", 1, &stalled(), Some(&old_exp)),
            record("4.2.4", 1, &pass, Some(&new_exp)),
            record("4.0.7", 2, &pass, Some(&old_exp)),
            record("4.2.4", 2, &pass2, Some(&new_exp)),
            record("4.0.7", 3, &stalled(), Some(&old_exp)),
            RunRecord::error(at("4.2.4", 3), "no image".into(), Some(&new_exp)),
        ],
    };
    let mut expect = BTreeMap::new();
    expect.insert("4.0.7".to_string(), old_exp.to_vec());
    expect.insert("4.2.4".to_string(), new_exp.to_vec());
    m.summarize(&expect);
    let old = &m.rows[0];
    assert_eq!(old.version, "4.0.7");
    assert_eq!(
        (old.runs, old.pass, old.stalled, old.inconclusive),
        (3, 1, 2, 0)
    );
    assert_eq!(old.as_expected, Some(2));
    assert_eq!(old.likely_causes.get("apache/pulsar#24945"), Some(&2));
    assert_eq!(
        old.missing, 0,
        "a stalled run's unsent numbers are not a loss"
    );
    let new = &m.rows[1];
    assert_eq!((new.runs, new.pass, new.error), (3, 2, 1));
    assert_eq!(
        new.as_expected,
        Some(2),
        "an error never meets an expectation"
    );
    // Recovery per kind over every fault of that kind; a fault with no recovery is left out.
    let b = new.recovery["bookie_restart"];
    assert_eq!((b.n, b.median_ms, b.max_ms), (2, 1000, 3000));
    assert_eq!(new.recovery["topic_unload"].n, 1);
    // Throughput: the median of the runs that have one (1000 and 2000: the lower).
    assert_eq!(new.throughput_median, Some(1000.0));
    let t = m.table();
    assert!(t.contains("stalled: 2/3"), "{t}");
    assert!(t.contains("pass: 2/3"), "{t}");
    assert!(t.contains("(NOT as expected)"), "{t}");
    assert!(
        t.contains("pulsar-chaos run s.yaml --seed 7 --pulsar-version 4.0.7"),
        "{t}"
    );
    assert!(t.contains("bookie_restart"), "{t}");
    // (The page drawn from it, matrix.html, is tested beside it: report/tests.rs.)
    // JSON round trip.
    let back: Matrix = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
    assert_eq!(back, m);
}

#[test]
fn the_exit_code_is_the_worst_verdict() {
    let mut m = Matrix {
        scenario: "s".into(),
        scenario_file: "s.yaml".into(),
        versions: vec!["4.2.4".into()],
        clients: vec![],
        times: 1,
        seeds: vec![1],
        started_ms: 0,
        elapsed_s: 0.0,
        interrupted: false,
        rows: vec![],
        runs: vec![],
    };
    assert_eq!(m.exit_code(), exit::INFRASTRUCTURE, "nothing ran");
    m.runs
        .push(RunRecord::error(at("4.2.4", 1), "x".into(), None));
    assert_eq!(m.exit_code(), exit::INFRASTRUCTURE, "no run gave a verdict");
    let pass = verdict(&(0..10).collect::<Vec<_>>());
    m.runs.push(record("4.2.4", 2, &pass, None));
    assert_eq!(
        m.exit_code(),
        exit::INCONCLUSIVE,
        "a run that could not run is not a pass"
    );
    m.runs.remove(0);
    assert_eq!(m.exit_code(), exit::PASS);
    m.runs.push(record("4.2.4", 3, &stalled(), None));
    assert_eq!(m.exit_code(), exit::INCONCLUSIVE);
    let mut stuck = verdict(&(0..10).collect::<Vec<_>>());
    stuck.status = Status::Stuck;
    m.runs.push(record("4.2.4", 5, &stuck, None));
    assert_eq!(
        m.exit_code(),
        exit::STUCK,
        "a liveness finding outranks inconclusive"
    );
    m.summarize(&BTreeMap::new());
    assert_eq!(m.rows[0].stuck, 1);
    m.runs.push(record(
        "4.2.4",
        4,
        &verdict(&(0..9).collect::<Vec<_>>()),
        None,
    ));
    assert_eq!(m.exit_code(), exit::VIOLATION);
    m.summarize(&BTreeMap::new());
    assert_eq!(
        m.rows[0].missing, 1,
        "only the violation's missing number counts"
    );
}

#[test]
fn a_stuck_reads_known_cause_is_counted_like_a_stalls() {
    let mut v = verdict(&(0..10).collect::<Vec<_>>());
    v.status = Status::Stuck;
    v.stuck_reads = Some(crate::stuck::StuckReads {
        since_ms: 1,
        detected_ms: 2,
        waited_s: 260,
        partitions: Vec::new(),
        remedies: Vec::new(),
        likely_cause: Some("the coordinator gave up ending (0,7) ABORTING".into()),
    });
    let r = record("4.2.4", 1, &v, None);
    assert_eq!(r.outcome, Outcome::Stuck);
    assert_eq!(
        r.likely_cause.as_deref(),
        Some("the coordinator gave up ending (0,7) ABORTING")
    );
}

/// Each run keeps how many of its planned faults fired; each version's row sums them and the
/// table shows `fired/planned`, and a run that did not pass says its own count.
#[test]
fn rows_and_runs_say_how_many_planned_faults_fired() {
    let fs = |planned, fired| checker::FaultsSummary {
        planned,
        fired,
        skipped: planned - fired,
        ..checker::FaultsSummary::default()
    };
    let mut all = verdict(&(0..10).collect::<Vec<_>>());
    all.faults_summary = Some(fs(3, 3));
    let mut none = all.clone();
    none.status = Status::Inconclusive;
    none.faults_summary = Some(fs(3, 0));
    let mut quiet = verdict(&(0..10).collect::<Vec<_>>());
    quiet.faults_summary = Some(fs(0, 0));
    let mut m = Matrix {
        scenario: "s".into(),
        scenario_file: "s.yaml".into(),
        versions: vec!["4.0.7".into(), "4.2.4".into()],
        clients: vec![],
        times: 2,
        seeds: vec![7, 7],
        started_ms: 0,
        elapsed_s: 1.0,
        interrupted: false,
        rows: vec![],
        runs: vec![
            record("4.0.7", 1, &all, None),
            record("4.0.7", 2, &none, None),
            record("4.2.4", 1, &quiet, None),
            RunRecord::error(at("4.2.4", 2), "no image".into(), None),
        ],
    };
    m.summarize(&BTreeMap::new());
    assert_eq!((m.rows[0].faults_planned, m.rows[0].faults_fired), (6, 3));
    assert_eq!((m.rows[1].faults_planned, m.rows[1].faults_fired), (0, 0));
    assert_eq!(faults_text(&m.rows[0]), "3/6");
    assert_eq!(faults_text(&m.rows[1]), "-");
    let t = m.table();
    let header = t.lines().nth(1).unwrap();
    assert!(header.contains("msg/s    faults  expected"), "{t}");
    let row = t
        .lines()
        .find(|l| l.trim_start().starts_with("4.0.7"))
        .unwrap();
    assert!(row.ends_with("      3/6  -"), "{row:?}");
    assert!(
        t.contains("4.0.7 #2 seed 7: inconclusive (faults 0/3): "),
        "{t}"
    );
    let back: Matrix = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
    assert_eq!(back, m);
    // A matrix.json written before the counts existed still loads.
    let mut old = serde_json::to_value(&m).unwrap();
    for r in old["rows"].as_array_mut().unwrap() {
        let r = r.as_object_mut().unwrap();
        r.remove("faults_planned");
        r.remove("faults_fired");
    }
    let back: Matrix = serde_json::from_value(old).unwrap();
    assert_eq!(back.rows[0].faults_planned, 0);
}

fn client_record(
    version: &str,
    client: &str,
    i: u32,
    v: &Verdict,
    expect: Option<&[Expected]>,
) -> RunRecord {
    let mut a = at(version, i);
    a.client = Some(client.into());
    a.run_dir = Some(format!("{version}/{client}/run-{i}"));
    a.reproduce = format!("{} --client {client}", a.reproduce);
    RunRecord::from_verdict(a, v, Some(1000.0), expect)
}

/// `--clients`: one line per version and client, in the order given (a version's clients
/// together), the version's expectation applied to each of its clients; the table has a client
/// column only when the matrix compares clients.
#[test]
fn rows_are_per_version_and_client_with_the_versions_expectation() {
    let exp = [Expected::Pass];
    let pass = verdict(&(0..10).collect::<Vec<_>>());
    let mut m = Matrix {
        scenario: "s".into(),
        scenario_file: "s.yaml".into(),
        versions: vec!["4.0.7".into(), "4.2.4".into()],
        clients: vec!["own".into(), "java".into()],
        times: 2,
        seeds: vec![7, 7],
        started_ms: 0,
        elapsed_s: 1.0,
        interrupted: false,
        rows: vec![],
        runs: vec![],
    };
    for i in 1..=2 {
        for v in ["4.0.7", "4.2.4"] {
            m.runs.push(client_record(v, "own", i, &pass, None));
            let java = if v == "4.2.4" && i == 2 {
                stalled()
            } else {
                pass.clone()
            };
            let e = (v == "4.2.4").then_some(&exp[..]);
            m.runs.push(client_record(v, "java", i, &java, e));
        }
    }
    m.summarize(&BTreeMap::from([("4.2.4".to_string(), exp.to_vec())]));
    let cells: Vec<(String, Option<String>, u64)> = m
        .rows
        .iter()
        .map(|r| (r.version.clone(), r.client.clone(), r.runs))
        .collect();
    let cell = |v: &str, c: &str| (v.to_string(), Some(c.to_string()), 2);
    assert_eq!(
        cells,
        vec![
            cell("4.0.7", "own"),
            cell("4.0.7", "java"),
            cell("4.2.4", "own"),
            cell("4.2.4", "java")
        ]
    );
    // The version's expectation holds for each of its clients.
    assert_eq!(m.rows[0].as_expected, None);
    assert_eq!(m.rows[2].as_expected, Some(2));
    assert_eq!((m.rows[3].as_expected, m.rows[3].stalled), (Some(1), 1));
    let t = m.table();
    assert!(t.contains("per version and client (own, java)"), "{t}");
    let header = t.lines().nth(1).unwrap();
    assert!(header.starts_with("  version   client runs"), "{header:?}");
    assert!(
        t.lines()
            .any(|l| l.starts_with("  4.2.4     java      2     1")),
        "{t}"
    );
    assert!(
        t.contains("  4.2.4 java #2 seed 7: stalled (NOT as expected)"),
        "{t}"
    );
    assert!(t.contains("--pulsar-version 4.2.4 --client java"), "{t}");
    assert!(t.contains("4.2.4 java stalls or stuck reads"), "{t}");
    let back: Matrix = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
    assert_eq!(back, m);
    // One client chosen: no column, the header names it.
    let mut one = m.clone();
    one.clients = vec!["java".into()];
    one.runs.retain(|r| r.client.as_deref() == Some("java"));
    one.summarize(&BTreeMap::new());
    assert_eq!(one.rows.len(), 2);
    let t = one.table();
    assert!(t.contains("per version, client java"), "{t}");
    assert!(
        t.lines().nth(1).unwrap().starts_with("  version   runs"),
        "{t}"
    );
}

/// Without `--clients` nothing about clients is written, and a matrix.json written before
/// clients existed still loads.
#[test]
fn a_matrix_without_clients_writes_and_reads_as_before() {
    let pass = verdict(&(0..10).collect::<Vec<_>>());
    let mut m = Matrix {
        scenario: "s".into(),
        scenario_file: "s.yaml".into(),
        versions: vec!["4.2.4".into()],
        clients: vec![],
        times: 1,
        seeds: vec![7],
        started_ms: 0,
        elapsed_s: 1.0,
        interrupted: false,
        rows: vec![],
        runs: vec![record("4.2.4", 1, &pass, None)],
    };
    m.summarize(&BTreeMap::new());
    assert_eq!(m.rows.len(), 1);
    let json = serde_json::to_string(&m).unwrap();
    assert!(!json.contains("client"), "{json}");
    let t = m.table();
    assert!(!t.contains("client"), "{t}");
    assert!(
        t.lines().nth(1).unwrap().starts_with("  version   runs"),
        "{t}"
    );
    let back: Matrix = serde_json::from_str(&json).unwrap();
    assert_eq!(back, m);
}
