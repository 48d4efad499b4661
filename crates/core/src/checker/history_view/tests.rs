use crate::checker::test_support::*;
use crate::checker::{verdict, Context, Status};
use crate::history::{EventBody, Outcome};

#[test]
fn unreadable_history_lines_are_noted() {
    let f = tally_of(10, &(0..10).collect::<Vec<_>>());
    let mut h = ok(history_19629());
    h.insert(2, Err("history.jsonl:3: not a history event".to_string()));
    let v = verdict(f, Some(h), &Context::default());
    assert_eq!(v.status, Status::Pass);
    assert_eq!(v.notes.len(), 1, "{:?}", v.notes);
    assert!(
        v.notes[0].contains("1 history line(s) could not be read"),
        "{:?}",
        v.notes
    );
    assert!(v.summary.contains("Note:"), "{}", v.summary);
}

#[test]
fn faults_after_the_outcome_are_not_blamed() {
    // Attempt 1's commit is ambiguous at 16 ms and resolved at 500 ms; a fault from 100 to
    // 200 ms came after the producer learned the outcome.
    let mut h = history_19629();
    h.insert(
        8,
        ev(
            100,
            EventBody::FaultStarted {
                fault: "late".into(),
                kind: "pause".into(),
                target: "broker-1".into(),
                planned_ms: None,
                action: "docker pause".into(),
                detail: String::new(),
            },
        ),
    );
    h.insert(
        9,
        ev(
            200,
            EventBody::FaultHealed {
                fault: "late".into(),
                action: "docker unpause".into(),
                ok: true,
                detail: String::new(),
            },
        ),
    );
    h.push(ev(
        500,
        EventBody::TxnResolved {
            attempt: 1,
            txn: T1,
            resolved: Outcome::Committed,
            how: "read-back".into(),
        },
    ));
    let mut values: Vec<u64> = (0..10).collect();
    values.extend(0..10);
    let v = verdict(tally_of(10, &values), Some(ok(h)), &Context::default());
    let a1 = v.attempts.iter().find(|a| a.attempt == 1).unwrap();
    assert_eq!(a1.faults, vec!["restart".to_string()]);
    assert_eq!(a1.outcome_ms, Some(16));
    assert_eq!(a1.ended_ms, Some(500));
}

#[test]
fn recovery_is_measured_from_the_heal_to_the_next_commit() {
    let h = vec![
        ev(
            10,
            EventBody::TxnOutcome {
                attempt: 1,
                txn: T1,
                outcome: Outcome::Committed,
                detail: String::new(),
            },
        ),
        ev(
            20,
            EventBody::FaultStarted {
                fault: "f".into(),
                kind: "pause".into(),
                target: "b".into(),
                planned_ms: None,
                action: "a".into(),
                detail: String::new(),
            },
        ),
        ev(
            25,
            EventBody::TxnOutcome {
                attempt: 2,
                txn: T2,
                outcome: Outcome::Committed,
                detail: String::new(),
            },
        ),
        ev(
            30,
            EventBody::FaultHealed {
                fault: "f".into(),
                action: "a".into(),
                ok: true,
                detail: String::new(),
            },
        ),
        ev(
            45,
            EventBody::TxnOutcome {
                attempt: 3,
                txn: T2,
                outcome: Outcome::Committed,
                detail: String::new(),
            },
        ),
    ];
    let v = verdict(tally_of(1, &[0]), Some(ok(h)), &Context::default());
    assert_eq!(v.faults[0].recovery_ms, Some(15));
    assert_eq!(v.faults[0].commit_gap_ms, Some(35));
}
