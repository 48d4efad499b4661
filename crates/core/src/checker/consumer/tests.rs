//! The consumer section of a transform run: probes and backlog judged.

use super::super::test_support::{ev, finished, grade};
use super::super::{Context, Status};
use super::held::{FillOutcome, HeldEntry};
use super::*;
use crate::history::{Event, EventBody, Outcome, ProbeOutcome, TxnId};

const T1: TxnId = TxnId { most: 0, least: 1 };
const P: TxnId = TxnId { most: 0, least: 9 };

fn probe(outcome: ProbeOutcome, answer: &str) -> Event {
    ev(
        3,
        EventBody::ConflictProbe {
            attempt: 1,
            probe: P,
            held_by: T1,
            message: "in 7:0:2".into(),
            outcome,
            answer: answer.into(),
        },
    )
}

/// Attempt 1 takes inputs [0, 10), publishes them, commits; `extra` goes before the end.
fn transform_history(extra: Vec<Event>, complete: bool) -> Vec<Event> {
    let mut h = vec![
        ev(
            0,
            EventBody::TxnOpened {
                attempt: 1,
                txn: T1,
                numbers: vec![(0, 10)],
                resend_of: None,
            },
        ),
        ev(
            0,
            EventBody::InputsTaken {
                attempt: 1,
                consumer: 0,
                inputs: vec![(0, 10)],
                redelivered: 2,
            },
        ),
        ev(
            1,
            EventBody::InputsRedelivered {
                attempt: 1,
                inputs: vec![(0, 4)],
                reason: "x".into(),
            },
        ),
    ];
    h.extend(extra);
    h.push(ev(
        5,
        EventBody::TxnOutcome {
            attempt: 1,
            txn: T1,
            outcome: Outcome::Committed,
            detail: String::new(),
        },
    ));
    h.push(finished(6, complete));
    h
}

fn backlog(n: Option<u64>) -> Context {
    Context {
        consumer: Some(ConsumerEvidence {
            input_topic: "in".into(),
            subscription: "s".into(),
            backlog: vec![PartitionBacklog {
                partition: "in-partition-0".into(),
                backlog: n,
                evidence: format!("msgBacklog {n:?}"),
            }],
            held: None,
        }),
        ..Context::default()
    }
}

fn all() -> Vec<u64> {
    (0..10).collect()
}

#[test]
fn refused_probes_and_no_backlog_pass_with_the_counts() {
    let h = transform_history(
        vec![probe(ProbeOutcome::Refused, "refused: TransactionConflict")],
        true,
    );
    let v = grade(&all(), h, &backlog(Some(0)));
    assert_eq!(v.status, Status::Pass, "{}", v.summary);
    let c = v.consumer.expect("a consumer section");
    assert_eq!(
        (c.transactions, c.inputs_taken, c.inputs_redelivered),
        (1, 10, 2)
    );
    assert_eq!((c.redeliveries, c.inputs_handed_back), (1, 4));
    assert_eq!((c.probes, c.probes_refused, c.probes_accepted), (1, 1, 0));
    assert!(c.findings.is_empty());
    assert_eq!(c.backlog[0].backlog, Some(0));
}

#[test]
fn an_accepted_probe_is_a_violation_with_the_answer() {
    let h = transform_history(
        vec![probe(ProbeOutcome::Accepted, "acked: ACK_RESPONSE")],
        true,
    );
    let v = grade(&all(), h, &backlog(Some(0)));
    assert_eq!(v.status, Status::Violation, "{}", v.summary);
    let c = v.consumer.unwrap();
    assert_eq!(c.findings.len(), 1);
    assert!(
        c.findings[0].contains("acked: ACK_RESPONSE"),
        "{:?}",
        c.findings
    );
    assert!(
        v.summary.contains("Consumer: conflict probe"),
        "{}",
        v.summary
    );
}

/// Regression (issue 29, 3): an accepted probe whose holder ended aborted (the coordinator may
/// have timed it out first, releasing its acks) is a note, not a violation; one whose holder
/// never learned an outcome likewise.
#[test]
fn an_accepted_probe_whose_holder_aborted_is_not_graded() {
    for (holder, words) in [
        (Some(Outcome::Aborted), "ended aborted"),
        (Some(Outcome::Ambiguous), "could not learn"),
        (None, "no recorded outcome"),
    ] {
        let mut h = vec![
            ev(
                0,
                EventBody::TxnOpened {
                    attempt: 1,
                    txn: T1,
                    numbers: vec![(0, 10)],
                    resend_of: None,
                },
            ),
            probe(ProbeOutcome::Accepted, "acked: ACK_RESPONSE"),
        ];
        if let Some(o) = holder {
            h.push(ev(
                5,
                EventBody::TxnOutcome {
                    attempt: 1,
                    txn: T1,
                    outcome: o,
                    detail: "transaction timed out".into(),
                },
            ));
        }
        // Its numbers were processed again by attempt 2, which committed.
        h.push(ev(
            6,
            EventBody::TxnOpened {
                attempt: 2,
                txn: TxnId { most: 0, least: 2 },
                numbers: vec![(0, 10)],
                resend_of: None,
            },
        ));
        h.push(ev(
            7,
            EventBody::TxnOutcome {
                attempt: 2,
                txn: TxnId { most: 0, least: 2 },
                outcome: Outcome::Committed,
                detail: String::new(),
            },
        ));
        h.push(finished(8, true));
        let v = grade(&all(), h, &backlog(Some(0)));
        assert_eq!(v.status, Status::Pass, "{holder:?}: {}", v.summary);
        let c = v.consumer.unwrap();
        assert!(c.findings.is_empty(), "{:?}", c.findings);
        assert!(
            v.notes
                .iter()
                .any(|n| n.contains("not graded") && n.contains(words)),
            "{holder:?}: {:?}",
            v.notes
        );
    }
}

#[test]
fn an_unanswered_probe_is_a_note_only() {
    let h = transform_history(vec![probe(ProbeOutcome::Unanswered, "no answer")], true);
    let v = grade(&all(), h, &backlog(Some(0)));
    assert_eq!(v.status, Status::Pass, "{}", v.summary);
    assert!(
        v.notes.iter().any(|n| n.contains("no answer at all")),
        "{:?}",
        v.notes
    );
    assert_eq!(v.consumer.unwrap().probes_unanswered, 1);
}

#[test]
fn a_backlog_after_a_finished_transform_is_a_violation() {
    let v = grade(&all(), transform_history(vec![], true), &backlog(Some(3)));
    assert_eq!(v.status, Status::Violation, "{}", v.summary);
    let c = v.consumer.unwrap();
    assert!(
        c.findings[0].contains("msgBacklog Some(3)"),
        "{:?}",
        c.findings
    );
}

#[test]
fn a_backlog_the_harness_left_is_inconclusive_never_a_violation() {
    let v = grade(&all(), transform_history(vec![], false), &backlog(Some(3)));
    assert_eq!(v.status, Status::Inconclusive, "{}", v.summary);
    assert!(v.consumer.unwrap().findings.is_empty());
    assert!(
        v.reasons
            .iter()
            .any(|r| r.contains("that is the harness's")),
        "{:?}",
        v.reasons
    );
}

#[test]
fn a_backlog_with_outputs_missing_is_not_the_consumer_s_finding() {
    let read: Vec<u64> = (0..9).collect();
    let v = grade(&read, transform_history(vec![], true), &backlog(Some(1)));
    assert!(v.consumer.unwrap().findings.is_empty());
}

#[test]
fn an_unreported_backlog_is_a_note() {
    let v = grade(&all(), transform_history(vec![], true), &backlog(None));
    assert_eq!(v.status, Status::Pass, "{}", v.summary);
    assert!(
        v.notes.iter().any(|n| n.contains("not reported")),
        "{:?}",
        v.notes
    );
}

#[test]
fn a_producer_run_has_no_consumer_section() {
    let h = vec![finished(6, true)];
    let v = grade(&all(), h, &Context::default());
    assert!(v.consumer.is_none());
}

/// ACK latency: `sends_acked` to `inputs_acked`, only over attempts whose ACKs were all
/// acknowledged (a refused ACK is counted as failed, not timed).
#[test]
fn ack_latency_is_measured_from_the_sends_to_the_acks_answered() {
    let acked = |t: u64, attempt: u64, answer: &str| {
        ev(
            t,
            EventBody::InputsAcked {
                attempt,
                txn: T1,
                messages: 10,
                answer: answer.into(),
                detail: String::new(),
            },
        )
    };
    let sends = |t: u64, attempt: u64| {
        ev(
            t,
            EventBody::SendsAcked {
                attempt,
                messages: 10,
            },
        )
    };
    let h = transform_history(
        vec![
            sends(2, 1),
            acked(3, 1, "acked"),
            sends(2, 2),
            acked(4, 2, "refused"),
            sends(3, 3),
            acked(4, 3, "acked"),
        ],
        true,
    );
    let v = grade(&all(), h, &backlog(Some(0)));
    let c = v.consumer.expect("a consumer section");
    assert_eq!(c.acks_failed, 1);
    assert_eq!(
        c.ack_latency,
        Some(AckLatency {
            attempts: 2,
            median_ms: 1,
            p99_ms: 1,
            max_ms: 1
        })
    );
    assert_eq!(AckLatency::of(&mut []), None);
    let l = AckLatency::of(&mut (1..=100).rev().collect::<Vec<u64>>()).unwrap();
    assert_eq!(
        (l.attempts, l.median_ms, l.p99_ms, l.max_ms),
        (100, 50, 99, 100)
    );
}

/// Regression (issue 29, 4): an input whose only acknowledgement was in a transaction that
/// ended aborted, with the subscription's backlog 0 at the end, was lost by Pulsar (the
/// redelivery never came), not by the harness.
#[test]
fn an_input_acked_only_in_an_aborted_transaction_with_no_backlog_is_pulsars() {
    let aborted_history = || {
        vec![
            ev(
                0,
                EventBody::TxnOpened {
                    attempt: 1,
                    txn: T1,
                    numbers: vec![(0, 10)],
                    resend_of: None,
                },
            ),
            ev(
                0,
                EventBody::InputsTaken {
                    attempt: 1,
                    consumer: 0,
                    inputs: vec![(0, 10)],
                    redelivered: 0,
                },
            ),
            ev(
                4,
                EventBody::TxnOutcome {
                    attempt: 1,
                    txn: T1,
                    outcome: Outcome::Aborted,
                    detail: "a SEND failed; no commit was sent, so it cannot commit".into(),
                },
            ),
            finished(6, true),
        ]
    };
    let v = grade(&[], aborted_history(), &backlog(Some(0)));
    assert_eq!(v.status, Status::Violation, "{}", v.summary);
    assert_eq!(v.missing[0].cause, crate::checker::Cause::Pulsar);
    assert!(
        v.missing[0]
            .explanation
            .contains("only aborted transactions acknowledged them")
            && v.missing[0].explanation.contains("msgBacklog Some(0)"),
        "{}",
        v.missing[0].explanation
    );
    // With inputs still held by the subscription, it is not shown: the harness's, as before.
    let v = grade(&[], aborted_history(), &backlog(Some(10)));
    assert_ne!(v.missing[0].cause, crate::checker::Cause::Pulsar);
    // And with no backlog reported, nothing is claimed about Pulsar.
    let v = grade(&[], aborted_history(), &backlog(None));
    assert_eq!(v.missing[0].cause, crate::checker::Cause::Harness);
}

/// A transform history in which attempt 1 (T1) took [0, 7) and attempt 2 (T2) took [7, 10),
/// both committed; the input's entry 5:0 held [0, 10) in one batch.
fn split_history() -> Vec<Event> {
    let t2 = TxnId { most: 0, least: 2 };
    let mut h = Vec::new();
    for (attempt, txn, inputs) in [(1, T1, (0, 7)), (2, t2, (7, 10))] {
        h.push(ev(
            0,
            EventBody::InputsTaken {
                attempt,
                consumer: 0,
                inputs: vec![inputs],
                redelivered: 0,
            },
        ));
        h.push(ev(
            1,
            EventBody::TxnOutcome {
                attempt,
                txn,
                outcome: Outcome::Committed,
                detail: String::new(),
            },
        ));
    }
    h.push(finished(6, true));
    h
}

fn held_context(batch_index_ack: Option<bool>, fill: FillOutcome) -> Context {
    let mut c = backlog(Some(1));
    c.consumer.as_mut().unwrap().held = Some(HeldEvidence {
        total: 1,
        entries: vec![HeldEntry {
            partition: "in-partition-0".into(),
            position: (5, 0),
            marker: None,
            txn: Some(TxnId { most: 0, least: 9 }),
            fill,
            numbers: Some((0..10).collect()),
        }],
        cursors: vec!["in-partition-0: markDeletePosition 5:-1".into()],
        batch_index_ack,
        batch_index_ack_evidence: "GET /admin/v2/brokers/configuration/runtime".into(),
    });
    c
}

/// A batch split between two committed transactions on a broker without batch-index
/// acknowledgement is held by design: a violation whose words name the configuration, its
/// documentation and the knob, not Pulsar's bug.
#[test]
fn a_split_batch_held_with_batch_index_ack_off_names_the_configuration() {
    let v = grade(
        &all(),
        split_history(),
        &held_context(Some(false), FillOutcome::Committed),
    );
    assert_eq!(v.status, Status::Violation, "{}", v.summary);
    let f = &v.consumer.unwrap().findings;
    assert_eq!(f.len(), 1, "{f:?}");
    for words in [
        "5:0 (numbers 0..=9, written by transaction (0,9))",
        "committed transactions (0,1) and (0,2)",
        "acknowledgmentAtBatchIndexLevelEnabled=false",
        "not a Pulsar bug",
        "txn-advanced-features",
        "markDeletePosition 5:-1",
    ] {
        assert!(f[0].contains(words), "{words}: {}", f[0]);
    }
}

#[test]
fn a_split_batch_held_with_batch_index_ack_on_is_pulsar_s() {
    let v = grade(
        &all(),
        split_history(),
        &held_context(Some(true), FillOutcome::Committed),
    );
    assert_eq!(v.status, Status::Violation, "{}", v.summary);
    let f = &v.consumer.unwrap().findings;
    assert!(f[0].contains("batch-index acknowledgement is on"), "{f:?}");
    assert!(!f[0].contains("not a Pulsar bug"), "{f:?}");
}

/// Entries of an aborted transaction are never delivered: held ones are a note, not a
/// violation.
#[test]
fn a_held_entry_of_an_aborted_transaction_is_a_note() {
    let v = grade(
        &all(),
        split_history(),
        &held_context(Some(false), FillOutcome::Aborted),
    );
    assert_eq!(v.status, Status::Pass, "{}", v.summary);
    assert!(
        v.notes.iter().any(|n| n.contains("aborted transactions")),
        "{:?}",
        v.notes
    );
}

/// One committed transaction acknowledged the whole entry, yet it is held: Pulsar's.
#[test]
fn a_whole_batch_held_after_one_commit_is_pulsar_s() {
    let mut h = transform_history(vec![], true);
    h.retain(|e| !matches!(e.body, EventBody::InputsRedelivered { .. }));
    let v = grade(
        &all(),
        h,
        &held_context(Some(false), FillOutcome::Committed),
    );
    assert_eq!(v.status, Status::Violation, "{}", v.summary);
    let f = &v.consumer.unwrap().findings;
    assert!(f[0].contains("in one committed transaction"), "{f:?}");
}
