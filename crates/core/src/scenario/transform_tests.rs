//! `kind: transform`: its keys parsed, defaulted, refused where they do not apply, and written
//! back in the resolved scenario.

use super::*;

const TRANSFORM: &str = "\
name: t
cluster: { topology: standalone }
workload:
  topic: persistent://public/default/t
  messages: 2000
  txn_size: 10
  concurrency: 3
  kind: transform
";

fn located(text: &str) -> (usize, usize, String) {
    super::tests::located_in("t.yaml", text)
}

#[test]
fn transform_defaults() {
    let s = parse("t.yaml", TRANSFORM).unwrap();
    let t = s.workload.transform.expect("a transform");
    assert_eq!(t.consumers, 3, "consumers default to concurrency");
    assert_eq!(t.subscription_type, SubscriptionType::Shared);
    assert_eq!(t.function, TransformFunction::Identity);
    assert!(!t.input_transactional);
    assert_eq!(s.workload.resend, ResendPolicy::RetryCommit);
}

#[test]
fn the_producer_workload_has_no_transform() {
    let text = TRANSFORM.replace("  kind: transform\n", "");
    let s = parse("t.yaml", &text).unwrap();
    assert_eq!(s.workload.transform, None);
    assert_eq!(s.workload.resend, ResendPolicy::Verify);
    let text = TRANSFORM.replace("kind: transform", "kind: produce");
    assert_eq!(parse("t.yaml", &text).unwrap().workload.transform, None);
}

#[test]
fn transform_keys_parse() {
    let text = format!(
        "{TRANSFORM}  consumers: 2\n  subscription_type: key_shared\n  function: identity\n  input_transactional: true\n"
    );
    let t = parse("t.yaml", &text).unwrap().workload.transform.unwrap();
    assert_eq!(t.consumers, 2);
    assert_eq!(t.subscription_type, SubscriptionType::KeyShared);
    assert!(t.input_transactional);
    let text = format!("{TRANSFORM}  subscription_type: failover\n");
    let t = parse("t.yaml", &text).unwrap().workload.transform.unwrap();
    assert_eq!(t.subscription_type, SubscriptionType::Failover);
}

#[test]
fn resolved_transform_parses_back_the_same() {
    let text = format!("{TRANSFORM}  consumers: 2\n  subscription_type: failover\n");
    let s = parse("t.yaml", &text).unwrap();
    let yaml = s.resolved_yaml();
    assert!(yaml.contains("kind: transform"), "{yaml}");
    let again = parse("resolved.yaml", &yaml).unwrap();
    assert_eq!(s.workload, again.workload);
}

#[test]
fn an_unknown_workload_key_is_located() {
    let text = format!("{TRANSFORM}  consumerz: 2\n");
    let (line, column, message) = located(&text);
    assert_eq!((line, column), (9, 3), "{message}");
    assert!(message.contains("unknown field `consumerz`"), "{message}");
}

#[test]
fn unknown_values_are_located() {
    let text = format!("{TRANSFORM}  subscription_type: exclusive\n");
    let (line, _, message) = located(&text);
    assert_eq!(line, 9, "{message}");
    assert!(message.contains("unknown value `exclusive`"), "{message}");
    let text = format!("{TRANSFORM}  function: square\n");
    let (line, _, message) = located(&text);
    assert_eq!(line, 9, "{message}");
    assert!(message.contains("unknown value `square`"), "{message}");
    let text = TRANSFORM.replace("kind: transform", "kind: mirror");
    let (line, _, message) = located(&text);
    assert_eq!(line, 8, "{message}");
}

#[test]
fn transform_keys_without_the_kind_are_refused() {
    let text = TRANSFORM.replace("  kind: transform\n", "  consumers: 2\n");
    let (line, column, message) = located(&text);
    assert_eq!((line, column), (8, 3), "{message}");
    assert!(message.contains("workload.consumers"), "{message}");
    assert!(message.contains("kind: transform"), "{message}");
}

#[test]
fn producer_keys_that_do_not_apply_are_refused() {
    for (extra, key) in [
        ("  transactions: false\n", "transactions"),
        ("  rate: 100\n", "rate"),
        ("  deduplication: true\n", "deduplication"),
        ("  resend: verify\n", "resend"),
        ("  resend: naive\n", "resend"),
        ("  consumers: 0\n", "consumers"),
    ] {
        let (line, column, message) = located(&format!("{TRANSFORM}{extra}"));
        assert_eq!((line, column), (9, 3), "{extra}: {message}");
        assert!(message.contains(&format!("workload.{key}")), "{message}");
    }
    let ok = format!("{TRANSFORM}  resend: retry-commit\n  abort_every: 5\n");
    assert!(parse("t.yaml", &ok).is_ok());
    let sabotage = format!("{TRANSFORM}sabotage: {{ skip: [1] }}\n");
    let (line, _, message) = located(&sabotage);
    assert_eq!(line, 9, "{message}");
}

/// Issue 31: an official client's producer numbers its sends, so a transform through it may
/// have the broker deduplicate its outputs (the Java producer's resend after a reconnect);
/// the own client's transform outputs carry no sequence ids, so there it stays refused, also
/// when `--client own` takes a file's official client away.
#[test]
fn deduplication_goes_with_a_transform_through_an_official_client_only() {
    for client in ["java", "go"] {
        let s = parse(
            "t.yaml",
            &format!("{TRANSFORM}  client: {client}\n  deduplication: true\n"),
        )
        .unwrap_or_else(|e| panic!("{client}: {e}"));
        assert!(s.workload.deduplication, "{client}");
        let mut own = s.clone();
        let why = own.set_client(Some("own"), None).unwrap_err();
        assert!(why.starts_with("--client own: deduplication"), "{why}");
        let mut other = s.clone();
        other.set_client(Some("go"), None).unwrap();
    }
    let (line, _, message) = located(&format!(
        "{TRANSFORM}  client: own\n  deduplication: true\n"
    ));
    assert_eq!(line, 10, "{message}");
    assert!(message.contains("own client"), "{message}");
}

#[test]
fn the_input_topic_and_f() {
    assert_eq!(
        transform::input_topic("persistent://public/default/t-r1"),
        "persistent://public/default/t-r1-in"
    );
    assert_eq!(TransformFunction::Identity.apply(41), 41);
}

#[test]
fn input_abort_every_goes_with_a_transactional_input() {
    let text = format!("{TRANSFORM}  input_transactional: true\n  input_abort_every: 3\n");
    let s = parse("t.yaml", &text).unwrap();
    assert_eq!(s.workload.transform.unwrap().input_abort_every, Some(3));
    let again = parse("resolved.yaml", &s.resolved_yaml()).unwrap();
    assert_eq!(s.workload, again.workload);
    for (extra, needle) in [
        ("  input_abort_every: 3\n", "input_transactional: true"),
        (
            "  input_transactional: true\n  input_abort_every: 1\n",
            "at least 2",
        ),
    ] {
        let (_, _, message) = located(&format!("{TRANSFORM}{extra}"));
        assert!(message.contains("workload.input_abort_every"), "{message}");
        assert!(message.contains(needle), "{message}");
    }
    let produce = TRANSFORM.replace("  kind: transform\n", "  input_abort_every: 3\n");
    let (_, _, message) = located(&produce);
    assert!(message.contains("kind: transform"), "{message}");
}

#[test]
fn input_batch_size_defaults_to_batch_size_and_is_written_back_when_set() {
    let s = parse("t.yaml", TRANSFORM).unwrap();
    assert_eq!(s.workload.transform.unwrap().input_batch_size, None);
    assert!(!s.resolved_yaml().contains("input_batch_size"));
    let text = format!("{TRANSFORM}  batch_size: 10\n  input_batch_size: 1\n");
    let s = parse("t.yaml", &text).unwrap();
    assert_eq!(s.workload.batch_size, 10);
    assert_eq!(s.workload.transform.unwrap().input_batch_size, Some(1));
    let again = parse("resolved.yaml", &s.resolved_yaml()).unwrap();
    assert_eq!(s.workload, again.workload);
    for bad in ["0", "1001"] {
        let (_, _, message) = located(&format!("{TRANSFORM}  input_batch_size: {bad}\n"));
        assert!(message.contains("workload.input_batch_size"), "{message}");
        assert!(message.contains("between 1 and 1000"), "{message}");
    }
    let produce = TRANSFORM.replace("  kind: transform\n", "  input_batch_size: 1\n");
    let (_, _, message) = located(&produce);
    assert!(message.contains("kind: transform"), "{message}");
}

/// `conflict_probe: commit` runs through the own client only: the file's `client: java` is
/// refused at the key, and so is `--client java|go` (run, replay, soak, matrix --clients) on a
/// file that asks for it; `--client own` keeps it.
#[test]
fn conflict_probe_commit_refuses_an_official_client_from_the_file_or_the_flag() {
    let text = format!("{TRANSFORM}  conflict_probe: commit\n");
    let s = parse("t.yaml", &text).unwrap();
    for client in ["java", "go"] {
        let why = s.clone().set_client(Some(client), None).unwrap_err();
        assert!(
            why.starts_with(&format!(
                "--client {client}: `conflict_probe: commit` goes with the own client only"
            )),
            "{why}"
        );
        let (line, _, message) = located(&format!("{text}  client: {client}\n"));
        assert_eq!(line, 9, "{message}");
        assert!(message.contains("workload.conflict_probe"), "{message}");
    }
    s.clone().set_client(Some("own"), None).unwrap();
    let plain = parse("t.yaml", TRANSFORM).unwrap();
    plain.clone().set_client(Some("java"), None).unwrap();
}

#[test]
fn conflict_probe_defaults_to_abort_and_takes_commit() {
    let s = parse("t.yaml", TRANSFORM).unwrap();
    assert_eq!(
        s.workload.transform.unwrap().conflict_probe,
        ConflictProbe::Abort
    );
    assert!(
        !s.resolved_yaml().contains("conflict_probe"),
        "the default is not written back (the resolved text of older scenarios is unchanged)"
    );
    for (value, expected) in [
        ("abort", ConflictProbe::Abort),
        ("commit", ConflictProbe::Commit),
    ] {
        let text = format!("{TRANSFORM}  conflict_probe: {value}\n");
        let s = parse("t.yaml", &text).unwrap();
        assert_eq!(s.workload.transform.unwrap().conflict_probe, expected);
        let again = parse("resolved.yaml", &s.resolved_yaml()).unwrap();
        assert_eq!(
            s.workload, again.workload,
            "{value} survives the resolved scenario"
        );
    }
}

#[test]
fn conflict_probe_refuses_unknown_values_the_producer_and_official_clients() {
    let (line, _, message) = located(&format!("{TRANSFORM}  conflict_probe: keep\n"));
    assert_eq!(line, 9, "the line of the key: {message}");
    assert!(message.contains("keep"), "{message}");
    assert!(
        message.contains("abort") && message.contains("commit"),
        "{message}"
    );
    let produce = TRANSFORM.replace("  kind: transform\n", "  conflict_probe: commit\n");
    let (_, _, message) = located(&produce);
    assert!(message.contains("workload.conflict_probe"), "{message}");
    assert!(message.contains("kind: transform"), "{message}");
    let java = format!("{TRANSFORM}  client: java\n  conflict_probe: commit\n");
    let (_, _, message) = located(&java);
    assert!(message.contains("workload.conflict_probe"), "{message}");
    assert!(message.contains("own client"), "{message}");
    let java_abort = format!("{TRANSFORM}  client: java\n  conflict_probe: abort\n");
    assert!(
        parse("t.yaml", &java_abort).is_ok(),
        "abort (the default) goes with any client"
    );
}

#[test]
fn subscription_type_names_are_the_scenario_keys() {
    // The drivers' protocol sends `as_str`; a scenario file spells the same names.
    for t in [
        SubscriptionType::Shared,
        SubscriptionType::Failover,
        SubscriptionType::KeyShared,
    ] {
        assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
        assert_eq!(t.to_string(), t.as_str());
    }
}
