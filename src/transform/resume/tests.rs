use super::*;

fn txn(least: u64) -> TxnId {
    TxnId { most: 0, least }
}

fn ev(body: EventBody) -> Result<Event, HistoryError> {
    Ok(Event { t_ms: 0, body })
}

fn opened(attempt: u64) -> Result<Event, HistoryError> {
    ev(EventBody::TxnOpened {
        attempt,
        txn: txn(attempt),
        numbers: vec![(attempt * 10, attempt * 10 + 10)],
        resend_of: None,
    })
}

fn taken(attempt: u64) -> Result<Event, HistoryError> {
    ev(EventBody::InputsTaken {
        attempt,
        consumer: 0,
        inputs: vec![(attempt * 10, attempt * 10 + 10)],
        redelivered: 0,
    })
}

fn outcome(attempt: u64, outcome: Outcome) -> Result<Event, HistoryError> {
    ev(EventBody::TxnOutcome {
        attempt,
        txn: txn(attempt),
        outcome,
        detail: String::new(),
    })
}

fn entry(attempt: u64) -> Entry {
    Entry {
        attempt,
        txn: txn(attempt),
        numbers: vec![(attempt * 10, attempt * 10 + 10)],
        resend_of: None,
    }
}

/// Attempt 1 committed, 2 aborted, 3 ambiguous, 4 resolved committed after an ambiguity, 5
/// open at the interruption (no outcome), 6 in the journal only.
fn past() -> Past {
    let mut events = Vec::new();
    for a in 1..=5 {
        events.push(opened(a));
        events.push(taken(a));
    }
    events.push(outcome(1, Outcome::Committed));
    events.push(outcome(2, Outcome::Aborted));
    events.push(outcome(3, Outcome::Ambiguous));
    events.push(outcome(4, Outcome::Ambiguous));
    events.push(ev(EventBody::TxnResolved {
        attempt: 4,
        txn: txn(4),
        resolved: Outcome::Committed,
        how: String::new(),
    }));
    // A torn last line reads as an error and is skipped.
    events.push(Err(HistoryError::Parse {
        path: "h".into(),
        line: 99,
        message: "torn".into(),
    }));
    Past::from_events(events.into_iter())
}

#[test]
fn committed_inputs_are_those_of_committed_and_resolved_committed_attempts() {
    let got: Vec<u64> = past().committed_inputs().into_iter().collect();
    let want: Vec<u64> = (10..20).chain(40..50).collect();
    assert_eq!(got, want);
}

#[test]
fn leftovers_are_the_attempts_without_a_definitive_outcome_and_journal_entries_alike() {
    // The journal still holds 1 (its clear was lost), 3, 5 and 6.
    let journal = [entry(1), entry(3), entry(5), entry(6)];
    let got = past().leftovers(&journal);
    let want = vec![
        Leftover {
            attempt: 3,
            txn: txn(3),
            ambiguous: true,
        },
        Leftover {
            attempt: 5,
            txn: txn(5),
            ambiguous: false,
        },
        Leftover {
            attempt: 6,
            txn: txn(6),
            ambiguous: false,
        },
    ];
    assert_eq!(got, want);
}

#[test]
fn an_attempt_whose_inputs_line_was_lost_has_no_inputs_to_count() {
    let p = Past::from_events(vec![opened(7), outcome(7, Outcome::Committed)].into_iter());
    assert!(p.committed_inputs().is_empty());
    assert!(p.inputs_of(7).is_empty());
    assert!(p.leftovers(&[]).is_empty());
}
