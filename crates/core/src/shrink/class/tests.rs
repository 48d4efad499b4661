use super::*;
use crate::checker::{verdict, Context, MsgId, StallFinding, Tally};
use crate::history::Event;
use crate::stall::LogEvidence;
use crate::stuck::StuckReads;

/// The verdict, without a history, of reading `values` back for [0, `expected`).
fn read(expected: u64, values: &[u64]) -> Verdict {
    let mut t = Tally::new(expected);
    for (i, v) in values.iter().enumerate() {
        let id = MsgId {
            partition: -1,
            ledger: 1,
            entry: i as u64,
            batch: -1,
        };
        t.observe(v.to_string().as_bytes(), id);
    }
    verdict(
        t.finish().unwrap(),
        None::<Vec<Result<Event, String>>>,
        &Context::default(),
    )
}

fn anomaly(kind: AnomalyKind, cause: Cause) -> Anomaly {
    Anomaly {
        kind,
        cause: Some(cause),
    }
}

fn violation(list: &[Anomaly]) -> FailureClass {
    FailureClass::Violation {
        anomalies: list.iter().copied().collect(),
    }
}

/// A violation with one missing range and one duplicated one, given causes.
fn mixed(missing: Cause, duplicates: Cause) -> Verdict {
    let mut v = read(10, &[0, 1, 2, 3, 3, 4, 5, 6, 7]);
    assert_eq!((v.missing.len(), v.duplicates.len()), (1, 1));
    v.missing[0].cause = missing;
    v.duplicates[0].cause = duplicates;
    v
}

/// A stalled, inconclusive verdict with this likely cause.
fn stalled(cause: Option<String>) -> Verdict {
    let mut v = read(10, &[0, 1, 2]);
    v.status = Status::Inconclusive;
    v.missing.clear();
    v.stall = Some(StallFinding {
        since_ms: 1_000,
        detected_ms: 61_000,
        failed_attempts: 3,
        failures: Vec::new(),
        broker_log: Vec::new(),
        likely_cause: cause,
        partitions: Vec::new(),
    });
    v
}

fn stuck(cause: Option<&str>) -> Verdict {
    let mut v = read(3, &[0, 1, 2]);
    v.status = Status::Stuck;
    v.stuck_reads = Some(StuckReads {
        since_ms: 0,
        detected_ms: 1,
        waited_s: 260,
        partitions: Vec::new(),
        remedies: Vec::new(),
        likely_cause: cause.map(str::to_string),
    });
    v
}

/// The stall cause the brokers' lines give, as `stall::known_cause` words it for this
/// node and topic.
fn cause_24945(node: &str, topic: &str, count: u64) -> String {
    let e = LogEvidence {
        node: node.into(),
        topic: topic.into(),
        level: "WARN".into(),
        message: "PersistentTopic: [x] Failed to persist msg in store: Not enough non-faulty bookies available error code: -6".into(),
        count,
        first: String::new(),
        last: String::new(),
    };
    crate::stall::known_cause(&[e], "persistent://public/default/").unwrap()
}

#[test]
fn a_pass_or_a_plain_inconclusive_run_has_no_class() {
    assert_eq!(FailureClass::of(&read(5, &[0, 1, 2, 3, 4])), None);
    let mut v = read(5, &[0, 1, 2]);
    v.status = Status::Inconclusive;
    assert_eq!(FailureClass::of(&v), None);
}

#[test]
fn a_violation_is_classed_by_its_kinds_of_anomaly_and_their_causes() {
    let v = read(10, &[0, 1, 2, 3, 3, 4, 5, 6, 7]);
    let c = FailureClass::of(&v).unwrap();
    assert_eq!(
        c,
        violation(&[
            anomaly(AnomalyKind::Missing, Cause::Unknown),
            anomaly(AnomalyKind::Duplicates, Cause::Unknown)
        ])
    );
    assert_eq!(
        c.to_string(),
        "violation: missing (cause: unknown), duplicates (cause: unknown)"
    );
    let c = FailureClass::of(&mixed(Cause::Pulsar, Cause::Ambiguity)).unwrap();
    assert_eq!(
        c.to_string(),
        "violation: missing (cause: pulsar), duplicates (cause: ambiguity)"
    );
}

#[test]
fn anomalies_of_the_harness_own_making_are_not_part_of_the_class() {
    let c = FailureClass::of(&mixed(Cause::Harness, Cause::Ambiguity)).unwrap();
    assert_eq!(
        c,
        violation(&[anomaly(AnomalyKind::Duplicates, Cause::Ambiguity)])
    );
    assert_eq!(c.to_string(), "violation: duplicates (cause: ambiguity)");
}

#[test]
fn unexpected_payloads_are_a_kind_of_their_own() {
    let mut t = Tally::new(2);
    for (i, p) in ["0", "1", "garbage"].iter().enumerate() {
        let id = MsgId {
            partition: -1,
            ledger: 1,
            entry: i as u64,
            batch: -1,
        };
        t.observe(p.as_bytes(), id);
    }
    let v = verdict(
        t.finish().unwrap(),
        None::<Vec<Result<Event, String>>>,
        &Context::default(),
    );
    let c = FailureClass::of(&v).unwrap();
    assert_eq!(
        c,
        violation(&[Anomaly {
            kind: AnomalyKind::Unexpected,
            cause: None
        }])
    );
    assert_eq!(c.to_string(), "violation: unexpected payloads");
}

#[test]
fn a_violation_matches_one_with_every_kind_and_cause_it_had() {
    let dup = violation(&[anomaly(AnomalyKind::Duplicates, Cause::Ambiguity)]);
    let both = FailureClass::of(&mixed(Cause::Pulsar, Cause::Ambiguity)).unwrap();
    assert!(dup.matches(&dup));
    assert!(dup.matches(&both), "more anomalies still show this one");
    assert!(!both.matches(&dup), "a missing range is lost");
    let other_cause = violation(&[anomaly(AnomalyKind::Duplicates, Cause::Pulsar)]);
    assert!(!dup.matches(&other_cause));
    let other_kind = violation(&[anomaly(AnomalyKind::Missing, Cause::Ambiguity)]);
    assert!(!dup.matches(&other_kind));
    assert!(!dup.matches(&FailureClass::Stall { cause: None }));
}

#[test]
fn a_stall_is_classed_by_its_likely_cause_whatever_node_topic_or_count() {
    let a = FailureClass::of(&stalled(Some(cause_24945(
        "broker-1",
        "kb-1-partition-1",
        687,
    ))))
    .unwrap();
    let b = FailureClass::of(&stalled(Some(cause_24945(
        "broker-2",
        "kb-2-partition-0",
        12,
    ))))
    .unwrap();
    assert_eq!(
        a,
        FailureClass::Stall {
            cause: Some("apache/pulsar#24945".into())
        }
    );
    assert_eq!(a.to_string(), "stall, likely cause: apache/pulsar#24945");
    assert!(a.matches(&b));
    let unknown = FailureClass::of(&stalled(None)).unwrap();
    assert_eq!(unknown.to_string(), "stall, no known cause");
    assert!(unknown.matches(&unknown));
    assert!(!a.matches(&unknown) && !unknown.matches(&a));
    // A stall that also lost data is a violation first.
    let mut v = stalled(None);
    v.status = Status::Violation;
    assert!(matches!(
        FailureClass::of(&v),
        Some(FailureClass::Violation { .. })
    ));
}

#[test]
fn a_stuck_read_is_classed_by_its_known_pattern() {
    let one = "the coordinator gave up ending (0,5) COMMITTING (logs/broker-1.log:10: End transaction fail!) after ...";
    let two = "the coordinator gave up ending (0,7) ABORTING, (1,9) COMMITTING and 4 more (logs/broker-2.log:99: ...)";
    let a = FailureClass::of(&stuck(Some(one))).unwrap();
    let b = FailureClass::of(&stuck(Some(two))).unwrap();
    assert_eq!(
        a.to_string(),
        "stuck read, likely cause: the coordinator gave up ending a transaction"
    );
    assert!(a.matches(&b));
    let plain = FailureClass::of(&stuck(None)).unwrap();
    assert_eq!(plain, FailureClass::Stuck { cause: None });
    assert!(!a.matches(&plain));
    assert!(!plain.matches(&FailureClass::Stall { cause: None }));
}

#[test]
fn cause_keys_fold_what_changes_from_run_to_run() {
    assert_eq!(
        cause_key(&cause_24945("broker-1", "x-partition-3", 50)),
        "apache/pulsar#24945"
    );
    assert_eq!(
        cause_key("stalled 12 times on t-9"),
        "stalled # times on t-#"
    );
}

#[test]
fn classes_round_trip_through_json() {
    for c in [
        FailureClass::of(&mixed(Cause::Pulsar, Cause::Ambiguity)).unwrap(),
        FailureClass::Stall {
            cause: Some("apache/pulsar#24945".into()),
        },
        FailureClass::Stuck { cause: None },
    ] {
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<FailureClass>(&json).unwrap(), c);
    }
    let json = serde_json::to_string(&FailureClass::Stall { cause: None }).unwrap();
    assert_eq!(json, r#"{"class":"stall","cause":null}"#);
}
