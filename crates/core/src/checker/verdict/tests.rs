use super::*;
use crate::checker::test_support::*;
use crate::checker::{Tally, NO_TXN};
use crate::history::{Event, EventBody, Outcome, TxnId};

/// Failures before and after the last commit (at 10 ms), then the harness's stall event and
/// the producer stopped.
fn stall_history() -> Vec<Event> {
    let aborted = |t: u64, attempt: u64, detail: &str| {
        ev(
            t,
            EventBody::TxnOutcome {
                attempt,
                txn: TxnId {
                    most: 0,
                    least: attempt,
                },
                outcome: Outcome::Aborted,
                detail: detail.into(),
            },
        )
    };
    vec![
        // Before the last commit: not part of the stall.
        aborted(5, 1, "a SEND timed out"),
        ev(
            10,
            EventBody::TxnOutcome {
                attempt: 2,
                txn: T2,
                outcome: Outcome::Committed,
                detail: String::new(),
            },
        ),
        aborted(
            20,
            3,
            "the broker closed producer 1 (topic unloaded or moved)",
        ),
        aborted(
            30,
            4,
            "the broker closed producer 2 (topic unloaded or moved)",
        ),
        aborted(40, 5, "a SEND failed: PersistenceError"),
        ev(
            70_010,
            EventBody::Stalled {
                since_ms: 10,
                idle_ms: 70_000,
                detail: "nothing committed for 70s with no fault active".into(),
            },
        ),
        ev(
            70_020,
            EventBody::ProducerFinished {
                committed: 1,
                aborted: 4,
                ambiguous: 0,
                messages_committed: 1,
                complete: false,
                detail: "stopped: stalled".into(),
            },
        ),
    ]
}

/// The broker lines about the topic and the known bug they match, as the runner gathers them
/// after a stall.
fn stall_context() -> Context {
    Context {
        stall_log: vec![crate::stall::LogEvidence {
            node: "broker-1".into(),
            topic: "t-partition-1".into(),
            level: "WARN".into(),
            message: "PersistentTopic: Failed to persist msg in store".into(),
            count: 687,
            first: "2026-11-30T07:23:43,454".into(),
            last: "2026-11-30T07:30:12,000".into(),
        }],
        stall_cause: Some("the transaction buffer bug".into()),
        ..Context::default()
    }
}

#[test]
fn a_stall_is_inconclusive_with_the_failures_since_the_last_progress_and_the_broker_lines() {
    let h = stall_history();
    let ctx = stall_context();
    let v = verdict(tally_of(2, &[1]), Some(ok(h)), &ctx);
    assert_eq!(v.status, Status::Inconclusive, "{}", v.summary);
    let st = v.stall.as_ref().expect("a stall finding");
    assert_eq!((st.since_ms, st.detected_ms), (10, 70_010));
    assert_eq!(st.failed_attempts, 3);
    // Failures differing only in ids count as one kind.
    assert_eq!(
        st.failures[0],
        (
            2,
            "the broker closed producer 1 (topic unloaded or moved)".to_string()
        )
    );
    assert_eq!(st.broker_log.len(), 1);
    assert!(
        v.reasons
            .iter()
            .any(|r| r.contains("the run stalled: nothing committed for 70s")
                && r.contains(
                    "3 attempt(s) failed meanwhile, 2 with: the broker closed producer 1"
                )),
        "{:?}",
        v.reasons
    );
    assert!(
        v.notes
            .iter()
            .any(|n| n.contains("broker-1 logged WARN 687x about t-partition-1")),
        "{:?}",
        v.notes
    );
    assert!(
        v.notes
            .iter()
            .any(|n| n == "likely cause: the transaction buffer bug"),
        "{:?}",
        v.notes
    );
    assert!(v.summary.contains("the run stalled"), "{}", v.summary);
    // A run without a stall event has no stall finding, whatever the context holds.
    let v = verdict(tally_of(1, &[0]), Some(ok(Vec::new())), &ctx);
    assert!(v.stall.is_none());
}

/// A stall whose sends were refused with an answer naming another, ended transaction (the
/// Java client on 4.0.7, #19629's recipe): the answers name the cause when the brokers logged
/// nothing; the brokers' lines, when they show one, take its place.
#[test]
fn a_stall_of_sends_refused_in_another_transactions_name_is_the_chain() {
    let refused =
        "Transaction [(0,263)] has been ended. Please use a new transaction to send message.";
    let mut h = vec![ev(
        0,
        EventBody::RunStarted {
            run_id: "r".into(),
            seed: 3,
            scenario: "s".into(),
            topic: "persistent://public/default/kb".into(),
            partitions: 2,
            messages: 2,
            resend: "naive".into(),
            wall_ms: 0,
        },
    )];
    h.extend(stall_history());
    // Inserted after the last commit (t=10), before the stall event.
    let answers: Vec<Event> = (0..12)
        .map(|i| {
            ev(
                50 + i,
                EventBody::ClientAnswer {
                    attempt: 10 + i,
                    txn: TxnId {
                        most: 0,
                        least: 299 + i,
                    },
                    op: "send".into(),
                    client: "java".into(),
                    class: "NotAllowedException".into(),
                    message: refused.into(),
                },
            )
        })
        .collect();
    let at = h
        .iter()
        .position(|e| matches!(e.body, EventBody::Stalled { .. }))
        .unwrap();
    h.splice(at..at, answers.clone());
    let v = verdict(tally_of(2, &[1]), Some(ok(h.clone())), &Context::default());
    assert_eq!(v.status, Status::Inconclusive, "{}", v.summary);
    let cause = v
        .stall
        .as_ref()
        .unwrap()
        .likely_cause
        .clone()
        .expect("a cause");
    assert!(
        cause.starts_with("the broker refused 12 send(s) of 12 transaction(s) (the first: attempt #10 in (0,299))"),
        "{cause}"
    );
    assert!(cause.contains("apache/pulsar#24945"), "{cause}");
    assert!(
        cause.contains("topics unload persistent://public/default/kb"),
        "{cause}"
    );
    assert_eq!(crate::matrix::cause_key(&cause), "apache/pulsar#24945");
    assert!(
        v.notes
            .iter()
            .any(|n| n == &format!("likely cause: {cause}")),
        "{:?}",
        v.notes
    );
    // The brokers' lines, when they name a cause, are quoted instead.
    let v = verdict(tally_of(2, &[1]), Some(ok(h.clone())), &stall_context());
    assert_eq!(
        v.stall.unwrap().likely_cause.as_deref(),
        Some("the transaction buffer bug")
    );
    // The same answers before the last commit explain no stall.
    let mut before = h.clone();
    before.retain(|e| !matches!(e.body, EventBody::ClientAnswer { .. }));
    let commit = before
        .iter()
        .position(|e| {
            matches!(
                e.body,
                EventBody::TxnOutcome {
                    outcome: Outcome::Committed,
                    ..
                }
            )
        })
        .unwrap();
    let early: Vec<Event> = answers
        .into_iter()
        .map(|mut e| {
            e.t_ms = 5;
            e
        })
        .collect();
    before.splice(commit..commit, early);
    let v = verdict(tally_of(2, &[1]), Some(ok(before)), &Context::default());
    assert_eq!(v.stall.unwrap().likely_cause, None);
}

#[test]
fn clean_read_with_finished_producer_passes() {
    let f = tally_of(10, &(0..10).collect::<Vec<_>>());
    let v = verdict(f, Some(ok(history_19629())), &Context::default());
    assert_eq!(v.status, Status::Pass);
    assert!(v.attempts.is_empty(), "only anomalous attempts are kept");
    assert_eq!(v.producer.as_ref().unwrap().committed, 1);
}

#[test]
fn missing_with_unfinished_producer_is_inconclusive() {
    let f = tally_of(20, &(0..10).collect::<Vec<_>>());
    let h: Vec<Event> = history_19629()
        .into_iter()
        .filter(|e| !matches!(e.body, EventBody::ProducerFinished { .. }))
        .collect();
    let v = verdict(f, Some(ok(h)), &Context::default());
    assert_eq!(v.status, Status::Inconclusive);
    assert!(v.reasons[0].contains("never finished"));
}

#[test]
fn incomplete_readback_is_inconclusive() {
    let f = tally_of(20, &(0..10).collect::<Vec<_>>());
    let ctx = Context {
        readback_incomplete: Some("timed out".into()),
        ..Context::default()
    };
    let v = verdict(f, None::<Vec<Result<Event, String>>>, &ctx);
    assert_eq!(v.status, Status::Inconclusive);
}

fn resend(t: u64, attempt: u64, numbers: Vec<(u64, u64)>, reason: &str) -> Event {
    ev(
        t,
        EventBody::ResendScheduled {
            attempt,
            numbers,
            reason: reason.into(),
        },
    )
}

// ---- The grading table (docs/grading.md): one test per row. ----

#[test]
fn row_pass_every_number_once() {
    let v = grade(
        &(0..10).collect::<Vec<_>>(),
        committed_0_to_10(5)
            .into_iter()
            .chain([finished(6, true)])
            .collect(),
        &Context::default(),
    );
    assert_eq!(v.status, Status::Pass);
}

#[test]
fn row_confirmed_commit_missing_is_pulsar() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(
            5,
            1,
            T1,
            Outcome::Committed,
            "END_TXN COMMIT answered success",
        ),
        finished(6, true),
    ];
    let v = grade(&(5..10).collect::<Vec<_>>(), h, &Context::default());
    assert_eq!(v.status, Status::Violation);
    assert_eq!(v.missing[0].cause, Cause::Pulsar);
    assert!(
        v.missing[0].evidence[0].contains("END_TXN COMMIT answered success"),
        "{:?}",
        v.missing[0].evidence
    );
    // Even when the producer did not finish: Pulsar contradicted its own answer.
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(5, 1, T1, Outcome::Committed, "ok"),
        finished(6, false),
    ];
    assert_eq!(
        grade(&(5..10).collect::<Vec<_>>(), h, &Context::default()).status,
        Status::Violation
    );
}

#[test]
fn row_confirmed_abort_readable_is_pulsar() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(
            5,
            1,
            T1,
            Outcome::Aborted,
            "InvalidTxnStatus: ... it is in ABORTED status",
        ),
        resend(5, 1, vec![(0, 10)], "the commit did not apply"),
        opened(6, 2, T2, vec![(0, 10)], Some(1)),
        outcome(7, 2, T2, Outcome::Committed, "ok"),
        finished(8, true),
    ];
    let v = grade(&twice(), h, &Context::default());
    assert_eq!(v.status, Status::Violation);
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
    assert!(
        v.duplicates[0]
            .explanation
            .contains("aborted on Pulsar's word"),
        "{}",
        v.duplicates[0].explanation
    );
}

#[test]
fn row_one_transaction_delivered_twice_is_pulsar() {
    let v = grade(
        &twice(),
        committed_0_to_10(5)
            .into_iter()
            .chain([finished(6, true)])
            .collect(),
        &Context::default(),
    );
    assert_eq!(v.status, Status::Violation);
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
}

#[test]
fn row_committed_twice_without_a_resend_is_pulsar() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(1, 1, T1, Outcome::Committed, "ok"),
        opened(2, 2, T2, vec![(0, 10)], None),
        outcome(3, 2, T2, Outcome::Committed, "ok"),
        finished(4, true),
    ];
    let v = grade(&twice(), h, &Context::default());
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
    assert!(
        v.duplicates[0].explanation.contains("no resend"),
        "{}",
        v.duplicates[0].explanation
    );
}

#[test]
fn row_resend_after_an_ambiguous_commit_is_ambiguity() {
    let v = grade(&twice(), history_19629(), &Context::default());
    assert_eq!(v.status, Status::Violation);
    assert_eq!(v.duplicates[0].cause, Cause::Ambiguity);
    assert!(v.summary.contains("1 range(s) ambiguity"), "{}", v.summary);
}

/// Regression: a resend the policy withheld left numbers missing, graded VIOLATION.
#[test]
fn row_withheld_resend_is_harness_inconclusive() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(5, 1, T1, Outcome::Ambiguous, "timed out"),
        ev(
            9,
            EventBody::ResendWithheld {
                attempt: 1,
                numbers: vec![(0, 10)],
                reason: "retry-commit: the commit stayed ambiguous".into(),
            },
        ),
        finished(10, true),
    ];
    let v = grade(&[], h, &Context::default());
    assert_eq!(v.status, Status::Inconclusive);
    assert_eq!(v.missing[0].cause, Cause::Harness);
    assert!(
        v.reasons.iter().any(|r| r.contains("harness's own")),
        "{:?}",
        v.reasons
    );
}

#[test]
fn row_incomplete_read_is_harness_inconclusive() {
    let ctx = Context {
        readback_incomplete: Some("a partition still held".into()),
        ..Context::default()
    };
    let v = grade(
        &(0..5).collect::<Vec<_>>(),
        committed_0_to_10(5)
            .into_iter()
            .chain([finished(6, true)])
            .collect(),
        &ctx,
    );
    assert_eq!(v.status, Status::Inconclusive);
    assert_eq!(v.missing[0].cause, Cause::Harness);
}

#[test]
fn row_no_outcome_is_harness_inconclusive() {
    let h = vec![opened(0, 1, T1, vec![(0, 10)], None), finished(6, false)];
    let v = grade(&[], h, &Context::default());
    assert_eq!(v.status, Status::Inconclusive);
    assert_eq!(v.missing[0].cause, Cause::Harness);
}

#[test]
fn row_never_sent_is_harness_inconclusive() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 5)], None),
        outcome(1, 1, T1, Outcome::Committed, "ok"),
        finished(2, true),
    ];
    let v = grade(&(0..5).collect::<Vec<_>>(), h, &Context::default());
    assert_eq!(v.status, Status::Inconclusive);
    assert_eq!(v.missing[0].cause, Cause::Harness);
    assert!(
        v.missing[0].explanation.contains("never sent"),
        "{}",
        v.missing[0].explanation
    );
}

#[test]
fn row_sabotage_is_a_violation_by_design() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 7), (8, 10)], None),
        outcome(1, 1, T1, Outcome::Committed, "ok"),
        finished(2, true),
    ];
    let ctx = Context {
        sabotage_skip: [7].into_iter().collect(),
        ..Context::default()
    };
    let read: Vec<u64> = (0..10).filter(|n| *n != 7).collect();
    let v = grade(&read, h, &ctx);
    assert_eq!(v.status, Status::Violation);
    assert_eq!(v.missing[0].cause, Cause::Sabotage);
}

#[test]
fn row_no_history_is_the_range_check_alone() {
    let v = verdict(
        tally_of(10, &(0..9).collect::<Vec<_>>()),
        None::<Vec<Result<Event, String>>>,
        &Context::default(),
    );
    // Regression (issue 29, 7): without a history the cause cannot be known, so it is not
    // a violation (of Pulsar's) but a mismatch, with an exit code of its own.
    assert_eq!(v.status, Status::Mismatch);
    assert_eq!(crate::exit::of_status(v.status), crate::exit::MISMATCH);
    assert_eq!(v.missing[0].cause, Cause::Unknown);
    assert!(
        !v.missing[0].explanation.contains("Pulsar"),
        "{}",
        v.missing[0].explanation
    );
    assert!(
        v.summary
            .starts_with("MISMATCH: the topic is not exactly [0, 10)")
            && v.summary.contains("the cause cannot be known"),
        "{}",
        v.summary
    );
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["status"], "mismatch");
}

#[test]
fn row_unexpected_payloads_are_a_violation() {
    let mut t = Tally::new(10);
    for i in 0..10u64 {
        t.observe(i.to_string().as_bytes(), id(i));
    }
    t.observe(b"hello", id(99));
    let v = verdict(
        t.finish().unwrap(),
        Some(ok(committed_0_to_10(5)
            .into_iter()
            .chain([finished(6, true)])
            .collect())),
        &Context::default(),
    );
    assert_eq!(v.status, Status::Violation);
}

#[test]
fn row_no_anomaly_but_the_producer_stopped_is_inconclusive() {
    let v = grade(
        &(0..10).collect::<Vec<_>>(),
        committed_0_to_10(5)
            .into_iter()
            .chain([finished(6, false)])
            .collect(),
        &Context::default(),
    );
    assert_eq!(v.status, Status::Inconclusive);
}

#[test]
fn row_read_proved_invisible_then_readable_is_pulsar() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(5, 1, T1, Outcome::Ambiguous, "timed out"),
        ev(
            6,
            EventBody::TxnResolved {
                attempt: 1,
                txn: T1,
                resolved: Outcome::Aborted,
                how: "read-back: none of its 10 messages is visible".into(),
            },
        ),
        resend(6, 1, vec![(0, 10)], "the commit did not apply"),
        opened(7, 2, T2, vec![(0, 10)], Some(1)),
        outcome(8, 2, T2, Outcome::Committed, "ok"),
        finished(9, true),
    ];
    let v = grade(&twice(), h, &Context::default());
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
}

#[test]
fn row_no_transaction_resend_after_a_failed_send_is_ambiguity() {
    let t = TxnId {
        most: NO_TXN,
        least: 1,
    };
    let h = vec![
        opened(0, 1, t, vec![(0, 10)], None),
        outcome(
            1,
            1,
            t,
            Outcome::Aborted,
            "a SEND failed (no transaction: the sent messages stay)",
        ),
        resend(1, 1, vec![(0, 10)], "a SEND failed"),
        opened(
            2,
            2,
            TxnId {
                most: NO_TXN,
                least: 2,
            },
            vec![(0, 10)],
            Some(1),
        ),
        outcome(
            3,
            2,
            TxnId {
                most: NO_TXN,
                least: 2,
            },
            Outcome::Committed,
            "no transaction",
        ),
        finished(4, true),
    ];
    assert_eq!(
        grade(&twice(), h, &Context::default()).duplicates[0].cause,
        Cause::Ambiguity
    );
}

/// Issue 17: a stall carries what Pulsar said about each partition once it was detected (the
/// buffer, the ledger's end, the coordinators' transactions), in the finding and in the notes.
#[test]
fn a_stall_carries_each_partitions_buffer_and_transactions_as_pulsar_reported_them() {
    use crate::stuck::{StuckPartition, StuckTxn};
    let mut ctx = stall_context();
    ctx.stall_partitions = vec![StuckPartition {
        partition: "persistent://public/default/t-partition-1".into(),
        index: 1,
        held: "1 transaction(s) open".into(),
        buffer_state: Some("Ready".into()),
        open: Some(1),
        max_read: Some((21, 265)),
        last_confirmed: Some((21, 300)),
        entries_behind: Some(35),
        txns: vec![StuckTxn {
            txn: "(0,12)".into(),
            status: "OPEN".into(),
            age_ms: Some(70_000),
            timeout_ms: Some(20_000),
            partitions: Vec::new(),
        }],
        broker_lines: Vec::new(),
        errors: Vec::new(),
    }];
    let v = verdict(tally_of(2, &[1]), Some(ok(stall_history())), &ctx);
    assert_eq!(v.status, Status::Inconclusive, "{}", v.summary);
    let st = v.stall.as_ref().expect("a stall finding");
    assert_eq!(st.partitions, ctx.stall_partitions);
    assert!(
        v.notes.iter().any(|n| n
            == "at the stall, partition 1: 35 entries behind maxReadPosition 21:265 (lastConfirmedEntry 21:300), 1 transaction(s) open, buffer Ready; coordinator: (0,12) OPEN for 70s"),
        "{:?}",
        v.notes
    );
    // Stored and read back (recheck) with the partitions; a file without them loads as none.
    let back: Verdict = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
    assert_eq!(back.stall, v.stall);
    let ctx_back: Context = serde_json::from_str(&serde_json::to_string(&ctx).unwrap()).unwrap();
    assert_eq!(ctx_back.stall_partitions, ctx.stall_partitions);
}

// ---- Stuck reads: a liveness finding needs Pulsar's evidence. ----

/// [0, 10) committed in 5 transactions, the producer finished.
fn finished_0_to_10() -> Vec<Event> {
    committed_0_to_10(5)
        .into_iter()
        .chain([finished(6, true)])
        .collect()
}

fn stuck_reads(evidence: bool, healed: bool) -> crate::stuck::StuckReads {
    use crate::stuck::*;
    StuckReads {
        since_ms: 3,
        detected_ms: 9,
        waited_s: 260,
        partitions: vec![StuckPartition {
            partition: "persistent://public/default/t-partition-0".into(),
            index: 0,
            held: "2 transaction(s) open".into(),
            buffer_state: Some("Ready".into()),
            open: evidence.then_some(2),
            max_read: evidence.then_some((21, 265)),
            last_confirmed: evidence.then_some((34, 3961)),
            entries_behind: evidence.then_some(64766),
            txns: Vec::new(),
            broker_lines: Vec::new(),
            errors: if evidence {
                Vec::new()
            } else {
                vec!["transactionBufferStats: HTTP 500".into()]
            },
        }],
        remedies: vec![RemedyRecord {
            remedy: Remedy::ReEnd,
            targets: vec!["(0,7)".into()],
            at_ms: 9,
            elapsed_ms: 1500,
            answers: vec!["(0,7): ok".into()],
            healed,
            still_held: String::new(),
        }],
        likely_cause: None,
    }
}

#[test]
fn row_stuck_then_healed_gives_the_safety_verdict_on_the_complete_read() {
    let ctx = Context {
        stuck_reads: Some(stuck_reads(true, true)),
        ..Context::default()
    };
    let h = finished_0_to_10();
    let v = grade(&(0..10).collect::<Vec<_>>(), h, &ctx);
    assert_eq!(v.status, Status::Stuck);
    assert!(
        v.summary
            .starts_with("STUCK (liveness): Pulsar left the read-back held 260s"),
        "{}",
        v.summary
    );
    assert!(
        v.summary.contains("remedy `re-end` healed it in 1.5s"),
        "{}",
        v.summary
    );
    assert!(
        v.summary
            .contains("Safety: on the complete read, all 10 numbers"),
        "{}",
        v.summary
    );
    assert!(v.stuck_reads.is_some());
}

#[test]
fn row_stuck_and_not_healed_names_the_partition_and_leaves_safety_undecided() {
    let ctx = Context {
        readback_incomplete: Some(
            "after 260s the transaction buffers still hold the read back".into(),
        ),
        stuck_reads: Some(stuck_reads(true, false)),
        ..Context::default()
    };
    let h = finished_0_to_10();
    let v = grade(&(0..5).collect::<Vec<_>>(), h, &ctx);
    assert_eq!(v.status, Status::Stuck);
    assert!(
        v.summary
            .contains("partition 0: 64766 entries behind maxReadPosition 21:265"),
        "{}",
        v.summary
    );
    assert!(
        v.summary
            .contains("Safety undecided: 5 of 10 numbers read, 5 not read"),
        "{}",
        v.summary
    );
    // Numbers are summarised, not listed one by one.
    assert!(!v.summary.contains("first:"), "{}", v.summary);
}

#[test]
fn row_stuck_without_pulsars_evidence_stays_inconclusive() {
    let ctx = Context {
        readback_incomplete: Some("after 260s ...".into()),
        stuck_reads: Some(stuck_reads(false, false)),
        ..Context::default()
    };
    let h = finished_0_to_10();
    let v = grade(&(0..5).collect::<Vec<_>>(), h, &ctx);
    assert_eq!(v.status, Status::Inconclusive);
    assert!(
        v.notes
            .iter()
            .any(|n| n.contains("no liveness finding is made")),
        "{:?}",
        v.notes
    );
}

#[test]
fn row_a_violation_beats_a_stuck_read() {
    let ctx = Context {
        stuck_reads: Some(stuck_reads(true, true)),
        ..Context::default()
    };
    let h = finished_0_to_10();
    let v = grade(&(0..10).chain([3]).collect::<Vec<_>>(), h, &ctx);
    assert_eq!(v.status, Status::Violation);
    assert!(
        v.stuck_reads.is_some(),
        "the liveness evidence is kept beside the violation"
    );
}
