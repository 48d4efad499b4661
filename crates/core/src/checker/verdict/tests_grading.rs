//! Grading every range, attempt by attempt (issue 29, points 5 and 8).

use crate::checker::test_support::*;
use crate::checker::{verdict, Cause, Context, Status, Tally, LIST_CAP};
use crate::history::{Event, Outcome, TxnId};

fn txn(n: u64) -> TxnId {
    TxnId { most: 0, least: n }
}

/// Regression (5): adjacent duplicated ranges of the same copy count coalesce in the tally; a
/// naive resend in one part must not label the whole span `ambiguity` and hide the Pulsar
/// duplicate beside it.
#[test]
fn a_duplicate_beside_an_ambiguous_resend_keeps_its_own_cause() {
    let h = vec![
        // [0, 10): ambiguous commit, resent naively, and the first commit had applied.
        opened(0, 1, txn(1), vec![(0, 10)], None),
        outcome(5, 1, txn(1), Outcome::Ambiguous, "connection lost"),
        resend_scheduled(5, 1, vec![(0, 10)]),
        opened(6, 2, txn(2), vec![(0, 10)], Some(1)),
        outcome(7, 2, txn(2), Outcome::Committed, "ok"),
        // [10, 20): one transaction, committed once, yet delivered twice.
        opened(8, 3, txn(3), vec![(10, 20)], None),
        outcome(9, 3, txn(3), Outcome::Committed, "ok"),
        finished(10, true),
    ];
    let read: Vec<u64> = (0..20).chain(0..20).collect();
    let f = tally_of(20, &read);
    assert_eq!(f.duplicates.len(), 1, "the tally coalesces [0, 20) x2");
    let v = verdict(f, Some(ok(h)), &Context::default());
    assert_eq!(v.status, Status::Violation);
    let parts: Vec<(u64, u64, Cause)> = v
        .duplicates
        .iter()
        .map(|d| (d.what.start, d.what.end, d.cause))
        .collect();
    assert_eq!(
        parts,
        vec![(0, 10, Cause::Ambiguity), (10, 20, Cause::Pulsar)],
        "{:#?}",
        v.duplicates
    );
    assert_eq!(v.duplicates[1].attempts, vec![3]);
    assert!(v.summary.contains("1 range(s) pulsar"), "{}", v.summary);
}

/// Regression (5): a missing range half confirmed committed, half withheld by the harness is
/// not blamed on Pulsar as a whole.
#[test]
fn a_missing_range_is_blamed_per_attempt() {
    let h = vec![
        opened(0, 1, txn(1), vec![(0, 10)], None),
        outcome(
            5,
            1,
            txn(1),
            Outcome::Committed,
            "END_TXN COMMIT answered success",
        ),
        opened(6, 2, txn(2), vec![(10, 20)], None),
        outcome(7, 2, txn(2), Outcome::Ambiguous, "connection lost"),
        withheld(7, 2, vec![(10, 20)]),
        finished(10, false),
    ];
    let v = verdict(tally_of(20, &[]), Some(ok(h)), &Context::default());
    let parts: Vec<(u64, u64, Cause)> = v
        .missing
        .iter()
        .map(|m| (m.what.start, m.what.end, m.cause))
        .collect();
    assert_eq!(
        parts,
        vec![(0, 10, Cause::Pulsar), (10, 20, Cause::Harness)],
        "{:#?}",
        v.missing
    );
    assert_eq!(v.graded.by_cause[&Cause::Harness].missing_numbers, 10);
    assert_eq!(v.graded.by_cause[&Cause::Pulsar].missing_numbers, 10);
}

/// Neighbouring pieces of one cause are joined again: one range per cause run, naming every
/// attempt behind it.
#[test]
fn pieces_of_one_cause_are_joined() {
    let h = vec![
        opened(0, 1, txn(1), vec![(0, 10)], None),
        outcome(1, 1, txn(1), Outcome::Committed, "ok"),
        opened(2, 2, txn(2), vec![(10, 20)], None),
        outcome(3, 2, txn(2), Outcome::Committed, "ok"),
        finished(4, true),
    ];
    let v = verdict(tally_of(20, &[]), Some(ok(h)), &Context::default());
    assert_eq!(v.missing.len(), 1, "{:#?}", v.missing);
    assert_eq!((v.missing[0].what.start, v.missing[0].what.end), (0, 20));
    assert_eq!(v.missing[0].attempts, vec![1, 2]);
    assert_eq!(v.missing[0].cause, Cause::Pulsar);
}

/// Regression (8): every range is graded, not only the first `LIST_CAP`; the ones past the
/// list are counted with their causes, and a Pulsar loss among them makes the violation.
#[test]
fn ranges_past_the_list_are_graded_too() {
    let n = (LIST_CAP as u64 + 10) * 2;
    let mut h = Vec::new();
    // Every even number is its own attempt; the first LIST_CAP of them aborted and not sent
    // again (the harness's doing), the last 10 confirmed committed (Pulsar's, when missing).
    for k in 0..(LIST_CAP as u64 + 10) {
        let attempt = k + 1;
        h.push(opened(
            k,
            attempt,
            txn(attempt),
            vec![(2 * k, 2 * k + 1)],
            None,
        ));
        let o = if k < LIST_CAP as u64 {
            Outcome::Aborted
        } else {
            Outcome::Committed
        };
        h.push(outcome(k, attempt, txn(attempt), o, "answer"));
    }
    h.push(finished(n, false));
    let mut t = Tally::uncapped(n);
    for (i, v) in (0..n).filter(|v| v % 2 == 1).enumerate() {
        t.observe(v.to_string().as_bytes(), id(i as u64));
    }
    let f = t.finish().unwrap();
    assert_eq!(f.missing.len(), LIST_CAP + 10);
    let v = verdict(f, Some(ok(h)), &Context::default());
    assert_eq!(v.status, Status::Violation, "{}", v.summary);
    assert_eq!(v.missing.len(), LIST_CAP);
    assert!(v.missing.iter().all(|m| m.cause == Cause::Harness));
    assert_eq!(v.graded.missing_ranges, LIST_CAP as u64 + 10);
    assert_eq!(v.graded.unlisted_missing, 10);
    assert_eq!(v.graded.by_cause[&Cause::Pulsar].ranges, 10);
    assert!(v.summary.contains("10 range(s) pulsar"), "{}", v.summary);
}

fn resend_scheduled(t: u64, attempt: u64, numbers: Vec<(u64, u64)>) -> Event {
    ev(
        t,
        crate::history::EventBody::ResendScheduled {
            attempt,
            numbers,
            reason: "naive".into(),
        },
    )
}

fn withheld(t: u64, attempt: u64, numbers: Vec<(u64, u64)>) -> Event {
    ev(
        t,
        crate::history::EventBody::ResendWithheld {
            attempt,
            numbers,
            reason: "verify could not tell".into(),
        },
    )
}

/// Regression (6): a commit inferred from a read-back (here, after a resume) is not said to be
/// "confirmed committed by the coordinator": the explanation quotes what showed it.
#[test]
fn a_commit_found_by_a_read_says_so() {
    let h = vec![
        opened(0, 1, txn(1), vec![(0, 10)], None),
        outcome(5, 1, txn(1), Outcome::Ambiguous, "connection lost"),
        ev(
            6,
            crate::history::EventBody::TxnResolved {
                attempt: 1,
                txn: txn(1),
                resolved: Outcome::Committed,
                how: "read-back after resume found 3 of 10 messages".into(),
            },
        ),
        finished(10, true),
    ];
    let v = verdict(tally_of(10, &[0, 1, 2]), Some(ok(h)), &Context::default());
    assert_eq!(v.status, Status::Violation);
    let e = &v.missing[0].explanation;
    assert!(!e.contains("by the coordinator"), "{e}");
    assert!(
        e.contains("found committed") && e.contains("read-back after resume found 3 of 10"),
        "{e}"
    );
}

/// A duplicate of numbers no transaction of the history carried is not Pulsar's: this run did
/// not write them (another writer, or a history of another topic).
#[test]
fn a_duplicate_no_attempt_carried_is_not_blamed_on_pulsar() {
    let h = vec![
        opened(0, 1, txn(1), vec![(0, 5)], None),
        outcome(1, 1, txn(1), Outcome::Committed, "ok"),
        finished(2, true),
    ];
    let read: Vec<u64> = (0..10).chain([7]).collect();
    let v = verdict(tally_of(10, &read), Some(ok(h)), &Context::default());
    assert_eq!(v.duplicates[0].cause, Cause::Harness, "{:#?}", v.duplicates);
    assert_ne!(v.status, Status::Violation, "{}", v.summary);
}
