use std::time::Duration;

use super::*;

const SMOKE: &str = "\
name: smoke
seed: 42
cluster: { topology: standalone }
workload:
  topic: persistent://public/default/eos-smoke
  partitions: 1
  messages: 100000
  txn_size: 100
  concurrency: 4
  txn_timeout: 30s
  resend: retry-commit
faults: []
";

fn error_of(text: &str) -> (usize, usize, String) {
    located_in("s.yaml", text)
}

/// The line, column and message of `text`'s error, parsed as file `file` (whose name the
/// error must carry). Shared by the scenario's test modules.
pub(super) fn located_in(file: &str, text: &str) -> (usize, usize, String) {
    match parse(file, text) {
        Err(ScenarioError::Invalid {
            line,
            column,
            message,
            file: named,
        }) => {
            assert_eq!(named, file);
            (line, column, message)
        }
        other => panic!("expected a located error, got {other:?}"),
    }
}

#[test]
fn smoke_parses_with_defaults() {
    let s = parse("smoke.yaml", SMOKE).unwrap();
    assert_eq!(s.name, "smoke");
    assert_eq!(s.seed, Some(42));
    assert_eq!(s.workload.messages, 100_000);
    assert_eq!(s.workload.resend, ResendPolicy::RetryCommit);
    assert_eq!(s.workload.op_timeout, Duration::from_secs(10));
    match &s.cluster {
        ClusterSpec::Docker(d) => {
            assert_eq!(d.topology, Topology::Standalone);
            assert_eq!((d.binary_port, d.http_port), (6650, 8080));
            assert_eq!(d.ready_timeout, Duration::from_secs(300));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn resolved_yaml_parses_back_to_the_same_scenario() {
    let s = parse("smoke.yaml", SMOKE).unwrap();
    let again = parse("resolved.yaml", &s.resolved_yaml()).unwrap();
    assert_eq!(s.workload, again.workload);
    assert_eq!(s.cluster, again.cluster);
}

#[test]
fn unknown_key_is_refused_with_its_location() {
    let text = SMOKE.replace("  concurrency: 4\n", "  concurrency: 4\n  txn_sise: 3\n");
    let (line, col, msg) = error_of(&text);
    assert_eq!((line, col), (10, 3), "{msg}");
    assert!(msg.contains("unknown field `txn_sise`"), "{msg}");
}

#[test]
fn wrong_type_is_located() {
    let text = SMOKE.replace("messages: 100000", "messages: lots");
    let (line, _, msg) = error_of(&text);
    assert_eq!(line, 7, "{msg}");
}

#[test]
fn negative_count_is_located() {
    let text = SMOKE.replace("messages: 100000", "messages: -5");
    let (line, _, msg) = error_of(&text);
    assert_eq!(line, 7, "{msg}");
}

#[test]
fn txn_size_zero_is_located() {
    let text = SMOKE.replace("txn_size: 100", "txn_size: 0");
    let (line, col, msg) = error_of(&text);
    assert_eq!((line, col), (8, 3));
    assert!(
        msg.contains("workload.txn_size: must be at least 1"),
        "{msg}"
    );
}

#[test]
fn malformed_yaml_is_located() {
    let text = "name: x\nworkload: [unclosed\n";
    let (line, _, _) = error_of(text);
    assert!(line >= 2);
}

#[test]
fn duration_without_unit_is_refused() {
    let text = SMOKE.replace("txn_timeout: 30s", "txn_timeout: 30");
    let (line, _, msg) = error_of(&text);
    assert_eq!(line, 10);
    assert!(msg.contains("needs a unit"), "{msg}");
}

/// Regression (issue 33): inside a fault serde reported every error at the list's start as
/// `faults:`; each now names the item and the key, where the key is to blame.
#[test]
fn an_error_inside_a_fault_names_its_item_and_key() {
    let faults = "\
faults:
  - kind: broker_restart
    schedule: { every: 5s }
  - kind: packet_loss
    duration: 5
    percent: 10
    schedule: { at: [1s] }
";
    let text = SMOKE.replace("faults: []\n", faults);
    let (line, column, msg) = error_of(&text);
    assert_eq!((line, column), (16, 5), "{msg}");
    assert!(
        msg.starts_with("faults[1].duration: a duration needs a unit: write 5s or 5ms"),
        "{msg}"
    );
    // A key the fault does not have.
    let text = SMOKE.replace(
        "faults: []\n",
        &faults
            .replace("    percent: 10\n", "    percent: 10\n    wat: 1\n")
            .replace("duration: 5\n", "duration: 5s\n"),
    );
    let (line, _, msg) = error_of(&text);
    assert_eq!(line, 18, "{msg}");
    assert!(
        msg.starts_with("faults[1].wat: unknown field `wat`"),
        "{msg}"
    );
    // A value that does not read, nested in a schedule.
    let text = SMOKE.replace(
        "faults: []\n",
        &faults
            .replace("duration: 5\n", "duration: 5s\n")
            .replace("{ every: 5s }", "{ every: soon }"),
    );
    let (line, _, msg) = error_of(&text);
    assert_eq!(line, 14, "{msg}");
    assert!(
        msg.starts_with("faults[0].schedule.every: invalid duration `soon`"),
        "{msg}"
    );
    // A missing key: the item is to blame.
    let text = SMOKE.replace(
        "faults: []\n",
        &faults
            .replace("duration: 5\n", "duration: 5s\n")
            .replace("    schedule: { at: [1s] }\n", ""),
    );
    let (line, _, msg) = error_of(&text);
    assert_eq!(line, 15, "{msg}");
    assert!(
        msg.starts_with("faults[1]: missing field `schedule`"),
        "{msg}"
    );
    // An unknown kind is an unknown value, in the file's words.
    let text = SMOKE.replace(
        "faults: []\n",
        "faults:\n  - kind: reboot\n    schedule: { at: [1s] }\n",
    );
    let (line, _, msg) = error_of(&text);
    assert_eq!(line, 13, "{msg}");
    assert!(
        msg.starts_with("faults[0].kind: unknown value `reboot`, expected one of"),
        "{msg}"
    );
}

#[test]
fn topic_must_be_persistent() {
    let text = SMOKE.replace(
        "persistent://public/default/eos-smoke",
        "non-persistent://a/b/c",
    );
    let (line, _, msg) = error_of(&text);
    assert_eq!(line, 5);
    assert!(msg.contains("persistent://"), "{msg}");
}

fn with_faults(faults: &str, cluster: &str) -> String {
    SMOKE
        .replace("faults: []\n", &format!("faults:\n{faults}"))
        .replace("cluster: { topology: standalone }", cluster)
}

#[test]
fn faults_parse_in_every_form() {
    let text = with_faults(
        "  - kind: broker_restart\n    mode: kill\n    down_for: 5s\n    target: broker-2\n    schedule: { at: [45s, 10s] }\n\
         \x20 - kind: topic_unload\n    schedule: { every: 20s, jitter: 5s, stop: 60s }\n\
         \x20 - kind: packet_loss\n    percent: 30\n    duration: 10s\n    target: owner-of-topic\n    schedule: { random: { count: 3, within: [5s, 60s] } }\n\
         \x20 - kind: pause\n    duration: 2s\n    target: coordinator-owner\n    schedule: { after_commits: 50, while: committing }\n\
         \x20 - kind: bookie_restart\n    schedule: { at: [1s], while: next-commit }\n\
         \x20 - kind: zookeeper_restart\n    name: zk\n    schedule: { after_commits: [10, 20] }\n",
        "cluster: { topology: cluster, brokers: 2, bookies: 1 }",
    );
    let s = parse("f.yaml", &text).unwrap();
    assert_eq!(s.faults.len(), 6);
    assert_eq!(
        s.faults[0].schedule.timing,
        Timing::At(vec![Duration::from_secs(10), Duration::from_secs(45)])
    );
    assert_eq!(s.faults[0].target, Target::Broker(2));
    assert_eq!(s.faults[1].target, Target::Cluster);
    assert_eq!(s.faults[3].schedule.guard, Some(Guard::Committing));
    assert_eq!(s.faults[4].target, Target::AnyBookie);
    assert_eq!(s.faults[4].schedule.guard, Some(Guard::NextCommit));
    assert_eq!(s.faults[5].name, "zk");
    assert_eq!(s.faults[1].name, "topic_unload-1");
}

#[test]
fn fault_key_of_another_kind_is_refused() {
    let text = with_faults(
        "  - kind: pause\n    duration: 2s\n    percent: 30\n    schedule: { at: [1s] }\n",
        "cluster: { topology: standalone }",
    );
    let (_, _, msg) = error_of(&text);
    assert!(msg.contains("unknown field `percent`"), "{msg}");
}

#[test]
fn unknown_fault_kind_is_refused() {
    let text = with_faults(
        "  - kind: meteor\n    schedule: { at: [1s] }\n",
        "cluster: { topology: standalone }",
    );
    let (line, _, msg) = error_of(&text);
    assert!(line >= 13, "{line}");
    assert!(msg.contains("meteor"), "{msg}");
}

#[test]
fn bad_fault_entries_name_their_place() {
    let cases = [
        // (fault text, cluster, expected message part, expected line)
        ("  - kind: packet_loss\n    percent: 0\n    duration: 5s\n    schedule: { at: [1s] }\n", "cluster: { topology: standalone }", "faults[0].percent: must be between 1 and 100", 14),
        ("  - kind: broker_restart\n    target: broker-3\n    schedule: { at: [1s] }\n", "cluster: { topology: cluster, brokers: 2 }", "broker-3 does not exist", 14),
        ("  - kind: bookie_restart\n    schedule: { at: [1s] }\n", "cluster: { topology: standalone }", "cluster topology only", 13),
        ("  - kind: pause\n    duration: 1s\n    target: nowhere\n    schedule: { at: [1s] }\n", "cluster: { topology: standalone }", "unknown target 'nowhere'", 15),
        ("  - kind: pause\n    duration: 1s\n    schedule: { at: [1s], every: 5s }\n", "cluster: { topology: standalone }", "exactly one of", 15),
        ("  - kind: pause\n    duration: 1s\n    schedule: { every: 5s, jitter: 6s }\n", "cluster: { topology: standalone }", "shorter than every", 15),
        ("  - kind: pause\n    duration: 1s\n    schedule: { random: { count: 2, within: [9s, 3s] } }\n", "cluster: { topology: standalone }", "from < to", 15),
        ("  - kind: pause\n    duration: 0s\n    schedule: { at: [1s] }\n", "cluster: { topology: standalone }", "longer than 0s", 14),
        ("  - kind: topic_unload\n    target: broker-1\n    schedule: { at: [1s] }\n", "cluster: { topology: standalone }", "admin API", 14),
    ];
    for (faults, cluster, part, line) in cases {
        let text = with_faults(faults, cluster);
        let (l, _, msg) = error_of(&text);
        assert!(msg.contains(part), "{part:?} not in {msg:?}");
        assert_eq!(l, line, "{msg}");
    }
}

#[test]
fn an_external_cluster_takes_node_faults_and_counts_but_no_reply_loss() {
    // Node faults parse (a run then needs an adapter and allow_destructive); the counts are
    // what the plan draws from.
    let ext = "cluster: { service_url: \"pulsar://127.0.0.1:6650\", admin_url: \"http://127.0.0.1:8080\", brokers: 3 }";
    let text = format!(
        "{}allow_destructive: true\nadapter: k8s.yaml\n",
        with_faults(
            "  - kind: pause\n    duration: 1s\n    target: broker-3\n    schedule: { at: [1s] }\n",
            ext,
        )
    );
    let s = parse("s.yaml", &text).unwrap();
    assert_eq!(s.cluster.counts(), (3, 1, 1));
    assert!(s.allow_destructive);
    assert_eq!(s.adapter.as_deref(), Some("k8s.yaml"));
    let text = with_faults(
        "  - kind: pause\n    duration: 1s\n    target: broker-4\n    schedule: { at: [1s] }\n",
        ext,
    );
    let (_, _, msg) = error_of(&text);
    assert!(msg.contains("the cluster has 3 broker(s)"), "{msg}");
    let text = with_faults(
        "  - kind: reply_loss\n    reply: end_txn\n    count: 1\n    schedule: { at: [1s] }\n",
        ext,
    );
    let (_, _, msg) = error_of(&text);
    assert!(
        msg.contains("reply_loss needs a cluster the harness started"),
        "{msg}"
    );
}

#[test]
fn sabotage_numbers_must_be_in_range() {
    let text = format!("{SMOKE}sabotage: {{ skip: [100000] }}\n");
    let (line, _, msg) = error_of(&text);
    assert_eq!(line, 13);
    assert!(msg.contains("outside"), "{msg}");
}

#[test]
// A test of the bundled files reads them; the crate's code never does (clippy.toml).
#[allow(clippy::disallowed_methods)]
fn bundled_scenarios_are_valid() {
    // The repository's scenarios/ and its subdirectories (known-bugs/, findings/).
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut dirs = vec![root];
    let mut n = 0;
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().and_then(|e| e.to_str()) == Some("yaml") {
                let text = std::fs::read_to_string(&path).unwrap();
                parse(&path.display().to_string(), &text).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
    }
    assert!(n >= 12, "{n} scenario files");
}

#[test]
fn stall_timeout_defaults_to_five_minutes_and_0s_turns_it_off() {
    let s = parse("smoke.yaml", SMOKE).unwrap();
    assert_eq!(s.workload.stall_timeout, Some(Duration::from_secs(300)));
    let off = SMOKE.replace(
        "  resend: retry-commit\n",
        "  resend: retry-commit\n  stall_timeout: 0s\n",
    );
    let s = parse("off.yaml", &off).unwrap();
    assert_eq!(s.workload.stall_timeout, None);
    // Off survives the round trip through the resolved scenario.
    let again = parse("resolved.yaml", &s.resolved_yaml()).unwrap();
    assert_eq!(again.workload.stall_timeout, None);
    let short = SMOKE.replace(
        "  resend: retry-commit\n",
        "  resend: retry-commit\n  stall_timeout: 2s\n",
    );
    let (line, _, message) = error_of(&short);
    assert_eq!(line, 12, "{message}");
    assert!(
        message.contains("stall_timeout") && message.contains("at least 5s"),
        "{message}"
    );
}

#[test]
fn reply_loss_parses_with_count_or_probability() {
    let text = with_faults(
        "  - kind: reply_loss\n    reply: end_txn\n    count: 2\n    schedule: { at: [5s] }\n\
         \x20 - kind: reply_loss\n    name: receipts\n    reply: send_receipt\n    probability: 0.3\n    duration: 20s\n    schedule: { every: 30s, jitter: 5s }\n",
        "cluster: { topology: standalone }",
    );
    let s = parse("r.yaml", &text).unwrap();
    assert_eq!(
        s.faults[0].kind,
        FaultKind::ReplyLoss {
            reply: ReplyKind::EndTxn,
            count: Some(2),
            probability: None,
            duration: None,
        }
    );
    assert_eq!(s.faults[0].name, "reply_loss-0");
    assert_eq!(s.faults[0].target, Target::Cluster);
    assert_eq!(
        s.faults[1].kind,
        FaultKind::ReplyLoss {
            reply: ReplyKind::SendReceipt,
            count: None,
            probability: Some(0.3),
            duration: Some(Duration::from_secs(20)),
        }
    );
    // The resolved scenario keeps the fault as written.
    let again = parse("resolved.yaml", &s.resolved_yaml()).unwrap();
    assert_eq!(again.faults, s.faults);
    for (reply, command) in [
        ("new_txn", "NEW_TXN_RESPONSE"),
        ("add_partition_to_txn", "ADD_PARTITION_TO_TXN_RESPONSE"),
    ] {
        let s = parse(
            "r.yaml",
            &with_faults(
                &format!("  - kind: reply_loss\n    reply: {reply}\n    count: 1\n    schedule: {{ at: [1s] }}\n"),
                "cluster: { topology: standalone }",
            ),
        )
        .unwrap();
        match &s.faults[0].kind {
            FaultKind::ReplyLoss { reply, .. } => assert_eq!(reply.command(), command),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn bad_reply_loss_entries_name_their_place() {
    let standalone = "cluster: { topology: standalone }";
    let fault = |body: &str| with_faults(&format!("  - kind: reply_loss\n{body}"), standalone);
    // Line 13 is `- kind: reply_loss`, 14 the key after it; serde's own errors name the key.
    for (body, line, needle) in [
        (
            "    reply: end_txn\n    count: 2\n    probability: 0.5\n    schedule: { at: [1s] }\n",
            16,
            "count or probability, not both",
        ),
        (
            "    reply: end_txn\n    schedule: { at: [1s] }\n",
            14,
            "needs count",
        ),
        (
            "    reply: end_txn\n    count: 0\n    schedule: { at: [1s] }\n",
            15,
            "between 1 and 10000",
        ),
        (
            "    reply: end_txn\n    probability: 1.5\n    schedule: { at: [1s] }\n",
            15,
            "in (0, 1]",
        ),
        (
            "    reply: end_txn\n    count: 1\n    target: broker-1\n    schedule: { at: [1s] }\n",
            16,
            "leave target out",
        ),
        (
            "    reply: end_txn\n    count: 1\n    duration: 0s\n    schedule: { at: [1s] }\n",
            16,
            "longer than 0s",
        ),
        (
            "    reply: commit\n    count: 1\n    schedule: { at: [1s] }\n",
            14,
            "unknown value `commit`",
        ),
        (
            "    reply: end_txn\n    count: 1\n    percent: 5\n    schedule: { at: [1s] }\n",
            16,
            "unknown field `percent`",
        ),
    ] {
        let (l, _, msg) = error_of(&fault(body));
        assert!(msg.contains(needle), "{body}: {msg}");
        assert_eq!(l, line, "{body}: {msg}");
    }
    let external = with_faults(
        "  - kind: reply_loss\n    reply: end_txn\n    count: 1\n    schedule: { at: [1s] }\n",
        "cluster: { service_url: pulsar://h:6650, admin_url: http://h:8080 }",
    );
    let (_, _, msg) = error_of(&external);
    assert!(
        msg.contains("reply_loss needs a cluster the harness started"),
        "{msg}"
    );
}

#[test]
fn deduplication_is_off_unless_asked_and_survives_the_resolved_yaml() {
    let s = parse("smoke.yaml", SMOKE).unwrap();
    assert!(!s.workload.deduplication);
    let text = SMOKE.replace(
        "  concurrency: 4\n",
        "  concurrency: 4\n  deduplication: true\n",
    );
    let s = parse("dedup.yaml", &text).unwrap();
    assert!(s.workload.deduplication);
    let again = parse("resolved.yaml", &s.resolved_yaml()).unwrap();
    assert!(again.workload.deduplication);
    // A misspelling is still refused.
    let text = SMOKE.replace("  concurrency: 4\n", "  concurrency: 4\n  dedup: true\n");
    let (_, _, msg) = error_of(&text);
    assert!(msg.contains("unknown field `dedup`"), "{msg}");
}

#[test]
fn expectations_per_version_parse_and_bad_ones_are_located() {
    let s = parse(
        "s.yaml",
        &format!("{SMOKE}expect:\n  \"4.0.7\": [stalled, inconclusive]\n  \"4.2.4\": [pass]\n"),
    )
    .unwrap();
    assert_eq!(
        s.expect.get("4.0.7").unwrap(),
        &vec![Expected::Stalled, Expected::Inconclusive]
    );
    assert_eq!(s.expect.get("4.2.4").unwrap(), &vec![Expected::Pass]);
    // It survives the resolved copy a run directory keeps.
    let again = parse("s.yaml", &serde_yaml_ng::to_string(&s.resolved).unwrap()).unwrap();
    assert_eq!(again.expect, s.expect);
    let (line, _, m) = error_of(&format!("{SMOKE}expect:\n  \"4.2\": [pass]\n"));
    assert_eq!(line, 14, "{m}");
    assert!(m.contains("not a Pulsar version"), "{m}");
    let (_, _, m) = error_of(&format!("{SMOKE}expect:\n  \"4.2.4\": [green]\n"));
    assert!(m.contains("unknown value"), "{m}");
    let (_, _, m) = error_of(&format!("{SMOKE}expect:\n  \"4.2.4\": []\n"));
    assert!(m.contains("at least one outcome"), "{m}");
}

#[test]
fn remedies_default_to_all_in_order_and_can_be_turned_off() {
    use crate::stuck::Remedy;
    let s = parse("smoke.yaml", SMOKE).unwrap();
    assert_eq!(s.remedies, Remedy::ALL.to_vec());
    // The resolved copy names them, so a rerun tries the same.
    assert!(
        s.resolved_yaml()
            .contains("remedies:\n- re-end\n- unload-coordinator\n- unload-topic\n"),
        "{}",
        s.resolved_yaml()
    );
    let off = parse("s.yaml", &format!("{SMOKE}remedies: []\n")).unwrap();
    assert!(off.remedies.is_empty());
    let again = parse("s.yaml", &off.resolved_yaml()).unwrap();
    assert!(again.remedies.is_empty(), "[] survives the resolved copy");
    let one = parse("s.yaml", &format!("{SMOKE}remedies: [unload-topic]\n")).unwrap();
    assert_eq!(one.remedies, vec![Remedy::UnloadTopic]);
    let (line, _, m) = error_of(&format!("{SMOKE}remedies: [reboot]\n"));
    assert_eq!(line, SMOKE.lines().count() + 1, "{m}");
    assert!(m.contains("unknown value `reboot`"), "{m}");
    let (_, _, m) = error_of(&format!("{SMOKE}remedies: [re-end, re-end]\n"));
    assert!(m.contains("named twice"), "{m}");
}

/// Regression: the read-back gave up after `txn_timeout + 30s` while the coordinator was
/// still ending transactions after restarts, which made healthy runs inconclusive.
#[test]
fn the_settle_timeout_leaves_the_coordinator_minutes_after_the_transaction_timeout() {
    let s = parse("smoke.yaml", SMOKE).unwrap();
    assert_eq!(
        s.workload.settle_timeout,
        s.workload.txn_timeout + Duration::from_secs(240)
    );
    let text = SMOKE.replace(
        "  concurrency: 4\n",
        "  concurrency: 4\n  settle_timeout: 15s\n",
    );
    let s = parse("s.yaml", &text).unwrap();
    assert_eq!(s.workload.settle_timeout, Duration::from_secs(15));
    let again = parse("s.yaml", &s.resolved_yaml()).unwrap();
    assert_eq!(again.workload.settle_timeout, Duration::from_secs(15));
    let (_, _, m) = error_of(&SMOKE.replace(
        "  concurrency: 4\n",
        "  concurrency: 4\n  settle_timeout: 0s\n",
    ));
    assert!(m.contains("at least 1s"), "{m}");
}

#[test]
fn pinned_choices_parse_and_survive_the_resolved_scenario() {
    let text = with_faults(
        "  - kind: pause\n    duration: 2s\n    target: owner-of-topic\n    partition: 3\n    schedule: { at: [5s] }\n\
         \x20 - kind: broker_restart\n    target: coordinator-owner\n    coordinator: 1\n    schedule: { at: [6s] }\n\
         \x20 - kind: reply_loss\n    reply: end_txn\n    probability: 0.5\n    draw_seed: 77\n    schedule: { at: [7s] }\n\
         \x20 - kind: packet_loss\n    percent: 10\n    duration: 1s\n    target: owner-of-topic\n    schedule: { at: [8s] }\n",
        "cluster: { topology: cluster, brokers: 2, bookies: 1, coordinators: 2 }",
    )
    .replace("partitions: 1", "partitions: 4");
    let s = parse("p.yaml", &text).unwrap();
    let pins: Vec<Pins> = s.faults.iter().map(|f| f.pins).collect();
    assert_eq!(
        pins,
        vec![
            Pins {
                partition: Some(3),
                ..Pins::default()
            },
            Pins {
                coordinator: Some(1),
                ..Pins::default()
            },
            Pins {
                draw_seed: Some(77),
                ..Pins::default()
            },
            Pins::default(),
        ]
    );
    let again = parse("resolved.yaml", &s.resolved_yaml()).unwrap();
    assert_eq!(again.faults, s.faults);
}

#[test]
fn bad_pinned_choices_name_their_place() {
    let cluster = "cluster: { topology: cluster, brokers: 2, bookies: 1, coordinators: 2 }";
    let fault = |body: &str, partitions: u32| {
        with_faults(body, cluster).replace("partitions: 1", &format!("partitions: {partitions}"))
    };
    // Line 13 is `- kind: ...`, 14 the key after it.
    for (body, partitions, line, needle) in [
        (
            "  - kind: pause\n    duration: 2s\n    target: broker-1\n    partition: 1\n    schedule: { at: [1s] }\n",
            4,
            16,
            "goes with target: owner-of-topic",
        ),
        (
            "  - kind: pause\n    duration: 2s\n    target: owner-of-topic\n    partition: 4\n    schedule: { at: [1s] }\n",
            4,
            16,
            "the topic has 4 partitions: 0 to 3",
        ),
        (
            "  - kind: pause\n    duration: 2s\n    target: owner-of-topic\n    partition: 0\n    schedule: { at: [1s] }\n",
            1,
            16,
            "leave partition out",
        ),
        (
            "  - kind: broker_restart\n    target: any-broker\n    coordinator: 0\n    schedule: { at: [1s] }\n",
            4,
            15,
            "goes with target: coordinator-owner",
        ),
        (
            "  - kind: broker_restart\n    target: coordinator-owner\n    coordinator: 2\n    schedule: { at: [1s] }\n",
            4,
            15,
            "2 coordinator(s): 0 to 1",
        ),
        (
            "  - kind: reply_loss\n    reply: end_txn\n    count: 2\n    draw_seed: 5\n    schedule: { at: [1s] }\n",
            4,
            16,
            "goes with probability",
        ),
        (
            "  - kind: bookie_restart\n    partition: 1\n    schedule: { at: [1s] }\n",
            4,
            14,
            "unknown field `partition`",
        ),
    ] {
        let (l, _, msg) = error_of(&fault(body, partitions));
        assert!(msg.contains(needle), "{body}: {msg}");
        assert_eq!(l, line, "{body}: {msg}");
    }
}

#[test]
fn commits_in_flight_defaults_for_the_producer_and_is_refused_where_nothing_commits() {
    let s = parse("smoke.yaml", SMOKE).unwrap();
    assert_eq!(s.workload.commits_in_flight, DEFAULT_COMMITS_IN_FLIGHT);
    let one = SMOKE.replace(
        "  concurrency: 4\n",
        "  concurrency: 4\n  commits_in_flight: 1\n",
    );
    let s = parse("s.yaml", &one).unwrap();
    assert_eq!(s.workload.commits_in_flight, 1);
    let again = parse("s.yaml", &s.resolved_yaml()).unwrap();
    assert_eq!(again.workload.commits_in_flight, 1);
    let (line, column, m) = error_of(&one.replace("commits_in_flight: 1", "commits_in_flight: 0"));
    assert_eq!((line, column), (10, 3));
    assert!(m.contains("between 1 and 64"), "{m}");
    let (_, _, m) = error_of(&one.replace("  resend: retry-commit\n", "  transactions: false\n"));
    assert!(m.contains("needs transactions"), "{m}");
    let (_, _, m) = error_of(&one.replace(
        "  resend: retry-commit\n",
        "  resend: retry-commit\n  kind: transform\n",
    ));
    assert!(m.contains("kind: transform"), "{m}");
    // Without the key, a baseline without transactions and a transform resolve to 1 and
    // their resolved scenario does not write it (it would be refused).
    let plain = SMOKE.replace("  resend: retry-commit\n", "  transactions: false\n");
    let s = parse("s.yaml", &plain).unwrap();
    assert_eq!(s.workload.commits_in_flight, 1);
    assert!(parse("s.yaml", &s.resolved_yaml()).is_ok());
}

/// `Target::FORMS` is every form `parse` accepts and `Display` writes: each form parses (with
/// `<i>` as a number) and prints back as written, and every variant prints as one of them (a
/// variant added without a form fails the exhaustive match below to compile).
#[test]
fn target_forms_are_what_parse_accepts() {
    for form in Target::FORMS {
        let written = form.replace("<i>", "3");
        let t = Target::parse(&written).unwrap_or_else(|| panic!("{form} does not parse"));
        assert_eq!(t.to_string(), written);
    }
    let form_of = |t: Target| -> String {
        match t {
            Target::Broker(_) | Target::Bookie(_) | Target::Consumer(_) => {
                t.to_string().replace(|c: char| c.is_ascii_digit(), "") + "<i>"
            }
            Target::AnyBroker
            | Target::OwnerOfTopic
            | Target::CoordinatorOwner
            | Target::AnyBookie
            | Target::Zookeeper
            | Target::Cluster
            | Target::AnyConsumer => t.to_string(),
        }
    };
    for t in [
        Target::AnyBroker,
        Target::Broker(2),
        Target::OwnerOfTopic,
        Target::CoordinatorOwner,
        Target::AnyBookie,
        Target::Bookie(1),
        Target::Zookeeper,
        Target::Cluster,
        Target::AnyConsumer,
        Target::Consumer(12),
    ] {
        assert!(Target::FORMS.contains(&form_of(t).as_str()), "{t}");
    }
    assert_eq!(Target::parse("broker-0"), None);
}

#[test]
fn the_jvm_setting_is_standard_unless_asked_and_survives_the_resolved_copy() {
    let standard = parse("s.yaml", SMOKE).unwrap();
    match &standard.cluster {
        ClusterSpec::Docker(d) => assert_eq!(d.jvm, Jvm::Standard),
        other => panic!("{other:?}"),
    }
    assert!(!standard.resolved_yaml().contains("jvm"));
    let text = SMOKE.replace(
        "cluster: { topology: standalone }",
        "cluster: { topology: standalone, jvm: quick }",
    );
    let quick = parse("s.yaml", &text).unwrap();
    let again = parse("resolved.yaml", &quick.resolved_yaml()).unwrap();
    for s in [&quick, &again] {
        match &s.cluster {
            ClusterSpec::Docker(d) => assert_eq!(d.jvm, Jvm::Quick),
            other => panic!("{other:?}"),
        }
    }
    // Set from the environment: the resolved copy keeps it.
    let mut set = parse("s.yaml", SMOKE).unwrap();
    set.set_jvm(Jvm::Quick);
    assert!(
        set.resolved_yaml().contains("jvm: quick"),
        "{}",
        set.resolved_yaml()
    );
    assert_eq!(Jvm::parse("quick"), Ok(Jvm::Quick));
    assert!(Jvm::parse("fast")
        .unwrap_err()
        .contains("standard or quick"));
    // A cluster the harness did not start runs its own JVMs.
    let (_, _, m) = error_of(&SMOKE.replace(
        "cluster: { topology: standalone }",
        "cluster: { service_url: pulsar://h:6650, admin_url: http://h:8080, jvm: quick }",
    ));
    assert!(
        m.contains("cluster.jvm: does not apply to an external cluster"),
        "{m}"
    );
    let (_, _, m) = error_of(&SMOKE.replace(
        "cluster: { topology: standalone }",
        "cluster: { topology: standalone, jvm: fast }",
    ));
    assert!(m.contains("unknown value `fast`"), "{m}");
}

#[test]
fn broker_settings_are_read_as_written_kept_in_the_resolved_copy_and_checked() {
    let text = SMOKE.replace(
        "cluster: { topology: standalone }",
        "cluster:\n  topology: standalone\n  broker_config:\n    acknowledgmentAtBatchIndexLevelEnabled: false\n    maxUnackedMessagesPerConsumer: 100\n    dispatcherMaxReadBatchSize: \"50\"",
    );
    let s = parse("s.yaml", &text).unwrap();
    let again = parse("resolved.yaml", &s.resolved_yaml()).unwrap();
    for s in [&s, &again] {
        match &s.cluster {
            ClusterSpec::Docker(d) => {
                let got: Vec<(&str, &str)> = d
                    .broker_config
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                assert_eq!(
                    got,
                    [
                        ("acknowledgmentAtBatchIndexLevelEnabled", "false"),
                        ("dispatcherMaxReadBatchSize", "50"),
                        ("maxUnackedMessagesPerConsumer", "100"),
                    ]
                );
            }
            other => panic!("{other:?}"),
        }
    }
    // None by default, and none written into the resolved copy.
    match &parse("s.yaml", SMOKE).unwrap().cluster {
        ClusterSpec::Docker(d) => assert!(d.broker_config.is_empty()),
        other => panic!("{other:?}"),
    }
    assert!(!parse("s.yaml", SMOKE)
        .unwrap()
        .resolved_yaml()
        .contains("broker_config"));
    // A setting the harness depends on is refused, at its key.
    let (line, _, m) = error_of(&SMOKE.replace(
        "cluster: { topology: standalone }",
        "cluster:\n  topology: standalone\n  broker_config:\n    brokerServicePort: 7000",
    ));
    assert!(m.contains("set by the harness"), "{m}");
    assert!(line >= 4, "{line}");
    let (_, _, m) = error_of(&SMOKE.replace(
        "cluster: { topology: standalone }",
        "cluster:\n  topology: standalone\n  broker_config:\n    \"bad key\": 1",
    ));
    assert!(m.contains("named as in broker.conf"), "{m}");
    assert!(check_broker_setting("a", "x\ny").is_err());
    assert!(check_broker_setting("acknowledgmentAtBatchIndexLevelEnabled", "true").is_ok());
    // A cluster the harness did not start keeps its own settings.
    let (_, _, m) = error_of(
        "name: e\ncluster:\n  service_url: pulsar://h:6650\n  admin_url: http://h:8080\n  broker_config: { a: 1 }\nworkload: { topic: t, messages: 10 }\n",
    );
    assert!(m.contains("does not apply to an external cluster"), "{m}");
}
