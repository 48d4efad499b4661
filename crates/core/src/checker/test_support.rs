//! Test fixtures shared by the checker's tests: message ids, a tally of plain numbers, history
//! events (among them an ambiguous commit resent, `history_19629`), and grading a read-back
//! against a history.

use super::{verdict, Context, Findings, MsgId, Tally, Verdict};
use crate::history::{Event, EventBody, Outcome, TxnId};

/// A message id: ledger 1, entry `e`, no partition, no batch.
pub(super) fn id(e: u64) -> MsgId {
    MsgId {
        partition: -1,
        ledger: 1,
        entry: e,
        batch: -1,
    }
}

/// The findings of a read-back of `values`, each as its payload, for [0, `expected`).
pub(super) fn tally_of(expected: u64, values: &[u64]) -> Findings {
    let mut t = Tally::new(expected);
    for (i, v) in values.iter().enumerate() {
        t.observe(v.to_string().as_bytes(), id(i as u64));
    }
    t.finish().unwrap()
}

pub(super) fn ok(v: Vec<Event>) -> Vec<Result<Event, String>> {
    v.into_iter().map(Ok).collect()
}

pub(super) fn ev(t: u64, body: EventBody) -> Event {
    Event { t_ms: t, body }
}

pub(super) const T1: TxnId = TxnId { most: 0, least: 1 };
pub(super) const T2: TxnId = TxnId { most: 0, least: 2 };

pub(super) fn history_19629() -> Vec<Event> {
    // Attempt 1 carries [0, 10); its commit is ambiguous while a broker restarts; the naive
    // policy resends [0, 10) as attempt 2, which commits. Both are visible.
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
            5,
            EventBody::FaultStarted {
                fault: "restart".into(),
                kind: "broker_restart".into(),
                target: "broker-1".into(),
                planned_ms: Some(5),
                action: "docker kill".into(),
                detail: String::new(),
            },
        ),
        ev(
            6,
            EventBody::CommitRequested {
                attempt: 1,
                txn: T1,
                try_no: 1,
            },
        ),
        ev(
            16,
            EventBody::TxnOutcome {
                attempt: 1,
                txn: T1,
                outcome: Outcome::Ambiguous,
                detail: "connection lost".into(),
            },
        ),
        ev(
            16,
            EventBody::ResendScheduled {
                attempt: 1,
                numbers: vec![(0, 10)],
                reason: "naive".into(),
            },
        ),
        ev(
            20,
            EventBody::FaultHealed {
                fault: "restart".into(),
                action: "docker start".into(),
                ok: true,
                detail: String::new(),
            },
        ),
        ev(
            30,
            EventBody::TxnOpened {
                attempt: 2,
                txn: T2,
                numbers: vec![(0, 10)],
                resend_of: Some(1),
            },
        ),
        ev(
            40,
            EventBody::TxnOutcome {
                attempt: 2,
                txn: T2,
                outcome: Outcome::Committed,
                detail: String::new(),
            },
        ),
        ev(
            41,
            EventBody::ProducerFinished {
                committed: 1,
                aborted: 0,
                ambiguous: 1,
                messages_committed: 10,
                complete: true,
                detail: String::new(),
            },
        ),
    ]
}

/// Attempt 1 opens at 0 with [0, 10) and is confirmed committed at `t`.
pub(super) fn committed_0_to_10(t: u64) -> Vec<Event> {
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
            t,
            EventBody::TxnOutcome {
                attempt: 1,
                txn: T1,
                outcome: Outcome::Committed,
                detail: String::new(),
            },
        ),
    ]
}

// Events and grading, as the grading table's tests (verdict/tests.rs) write them.

pub(super) fn opened(
    t: u64,
    attempt: u64,
    txn: TxnId,
    numbers: Vec<(u64, u64)>,
    resend_of: Option<u64>,
) -> Event {
    ev(
        t,
        EventBody::TxnOpened {
            attempt,
            txn,
            numbers,
            resend_of,
        },
    )
}

pub(super) fn outcome(t: u64, attempt: u64, txn: TxnId, o: Outcome, detail: &str) -> Event {
    ev(
        t,
        EventBody::TxnOutcome {
            attempt,
            txn,
            outcome: o,
            detail: detail.into(),
        },
    )
}

pub(super) fn finished(t: u64, complete: bool) -> Event {
    ev(
        t,
        EventBody::ProducerFinished {
            committed: 1,
            aborted: 0,
            ambiguous: 0,
            messages_committed: 10,
            complete,
            detail: String::new(),
        },
    )
}

pub(super) fn grade(read: &[u64], h: Vec<Event>, ctx: &Context) -> Verdict {
    verdict(tally_of(10, read), Some(ok(h)), ctx)
}

pub(super) fn twice() -> Vec<u64> {
    (0..10).chain(0..10).collect()
}
