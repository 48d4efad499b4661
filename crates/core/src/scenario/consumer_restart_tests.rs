//! `consumer_restart`: parsed with its default target, aimed at a consumer the transform has,
//! planned from the seed, and refused (with its line and column) on the producer's workload,
//! at a node target, with a key of another kind.

use std::time::Duration;

use super::*;
use crate::plan::{self, PlannedTarget};

const TRANSFORM: &str = "\
name: t
cluster: { topology: standalone }
workload:
  topic: persistent://public/default/t
  messages: 2000
  txn_size: 10
  consumers: 3
  kind: transform
faults:
";

fn located(text: &str) -> (usize, usize, String) {
    super::tests::located_in("t.yaml", text)
}

#[test]
fn consumer_restart_parses_and_plans_a_consumer_from_the_seed() {
    let text = format!(
        "{TRANSFORM}  - kind: consumer_restart\n    down_for: 2s\n    schedule: {{ every: 3s, stop: 60s }}\n\
         \x20 - kind: consumer_restart\n    target: consumer-2\n    schedule: {{ at: [5s] }}\n"
    );
    let s = parse("t.yaml", &text).unwrap();
    assert_eq!(s.faults[0].target, Target::AnyConsumer);
    assert_eq!(
        s.faults[0].kind,
        FaultKind::ConsumerRestart {
            down_for: Duration::from_secs(2)
        }
    );
    assert_eq!(s.faults[0].name, "consumer_restart-0");
    assert_eq!(s.faults[1].target, Target::Consumer(2));
    assert_eq!(
        s.faults[1].kind,
        FaultKind::ConsumerRestart {
            down_for: Duration::ZERO
        }
    );
    // The resolved scenario parses back to the same one.
    let again = parse("r.yaml", &s.resolved_yaml()).unwrap();
    assert_eq!(again.faults, s.faults);

    let p = plan::make(&s, 11);
    assert_eq!(p.to_json(), plan::make(&s, 11).to_json());
    let drawn: Vec<u32> = p
        .faults
        .iter()
        .filter(|f| f.fault_index == 0)
        .map(|f| match f.target {
            PlannedTarget::Consumer { index } => index,
            ref other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(drawn.len(), 19);
    assert!(drawn.iter().all(|i| (1..=3).contains(i)), "{drawn:?}");
    assert!(
        drawn.iter().any(|i| *i != drawn[0]),
        "every firing on one consumer: {drawn:?}"
    );
    let pinned = p.faults.iter().find(|f| f.fault_index == 1).unwrap();
    assert_eq!(pinned.target, PlannedTarget::Consumer { index: 2 });
    assert!(p.to_json().contains("\"kind\": \"consumer_restart\""));
}

#[test]
fn consumer_restart_is_refused_without_a_transform() {
    let text = format!(
        "{}  - kind: consumer_restart\n    schedule: {{ at: [1s] }}\n",
        TRANSFORM.replace("  consumers: 3\n  kind: transform\n", "")
    );
    let (line, column, msg) = located(&text);
    assert!(msg.contains("goes with `kind: transform` only"), "{msg}");
    assert_eq!((line, column), (8, 5), "{msg}");
}

#[test]
fn bad_consumer_restart_entries_name_their_place() {
    // Line 10 is `- kind: ...`, 11 the key after it.
    for (body, line, needle) in [
        (
            "  - kind: consumer_restart\n    target: consumer-4\n    schedule: { at: [1s] }\n",
            11,
            "consumer-4 does not exist: the transform has 3 consumer(s)",
        ),
        (
            "  - kind: consumer_restart\n    target: broker-1\n    schedule: { at: [1s] }\n",
            11,
            "it takes any-consumer or consumer-<i>",
        ),
        (
            "  - kind: pause\n    duration: 1s\n    target: any-consumer\n    schedule: { at: [1s] }\n",
            12,
            "only consumer_restart aims at a consumer",
        ),
        (
            "  - kind: consumer_restart\n    target: consumer-0\n    schedule: { at: [1s] }\n",
            11,
            "unknown target 'consumer-0'",
        ),
        (
            "  - kind: consumer_restart\n    mode: kill\n    schedule: { at: [1s] }\n",
            11,
            "unknown field `mode`",
        ),
        (
            "  - kind: consumer_restart\n    schedule: { at: [1s], every: 2s }\n",
            11,
            "exactly one of at, every",
        ),
    ] {
        let (l, _, msg) = located(&format!("{TRANSFORM}{body}"));
        assert!(msg.contains(needle), "{body}: {msg}");
        assert_eq!(l, line, "{body}: {msg}");
    }
}
