use super::super::test_support::{ev, finished, grade, opened, outcome, twice, T1, T2};
use super::*;
use crate::history::{Event, TxnId};

const T3: TxnId = TxnId { most: 0, least: 3 };

fn answer(t: u64, attempt: u64, txn: TxnId, op: &str, class: &str) -> Event {
    ev(
        t,
        EventBody::ClientAnswer {
            attempt,
            txn,
            op: op.into(),
            client: "java".into(),
            class: class.into(),
            message: "the message".into(),
        },
    )
}

fn resend(t: u64, attempt: u64) -> Event {
    ev(
        t,
        EventBody::ResendScheduled {
            attempt,
            numbers: vec![(0, 10)],
            reason: "naive".into(),
        },
    )
}

/// Attempt 1 carries [0, 10); its commit gets a TimeoutException (ambiguous); the naive policy
/// resends the numbers as attempt 2, which commits.
fn naive_after_timeout() -> Vec<Event> {
    vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        answer(5, 1, T1, "commit", "TimeoutException"),
        outcome(
            5,
            1,
            T1,
            Outcome::Ambiguous,
            "java client: TimeoutException",
        ),
        resend(5, 1),
        opened(6, 2, T2, vec![(0, 10)], Some(1)),
        outcome(9, 2, T2, Outcome::Committed, ""),
        finished(10, true),
    ]
}

fn row(op: &str, class: &str, n: u64, c: u64, a: u64, u: u64) -> AnswerRow {
    AnswerRow {
        op: op.into(),
        class: class.into(),
        transactions: n,
        committed: c,
        aborted: a,
        unknown: u,
    }
}

#[test]
fn an_ambiguous_commit_whose_numbers_arrived_twice_after_the_naive_resend_had_applied() {
    let v = grade(&twice(), naive_after_timeout(), &Context::default());
    let t = v.client_answers.expect("a table");
    assert_eq!(t.client, "java");
    assert_eq!(t.rows, vec![row("commit", "TimeoutException", 1, 1, 0, 0)]);
}

#[test]
fn an_ambiguous_commit_whose_numbers_arrived_once_after_the_resend_committed_did_not_apply() {
    let once: Vec<u64> = (0..10).collect();
    let v = grade(&once, naive_after_timeout(), &Context::default());
    assert_eq!(
        v.client_answers.unwrap().rows,
        vec![row("commit", "TimeoutException", 1, 0, 1, 0)]
    );
}

#[test]
fn an_incomplete_read_back_or_a_capped_list_tells_nothing() {
    let ctx = Context {
        readback_incomplete: Some("stopped".into()),
        ..Context::default()
    };
    let v = grade(&twice(), naive_after_timeout(), &ctx);
    assert_eq!(
        v.client_answers.unwrap().rows,
        vec![row("commit", "TimeoutException", 1, 0, 0, 1)]
    );
    // The duplicates counted but not listed: the copies of [0, 10) are not known.
    let mut f = super::super::test_support::tally_of(10, &twice());
    f.duplicates.clear();
    let v = super::super::verdict(
        f,
        Some(super::super::test_support::ok(naive_after_timeout())),
        &Context::default(),
    );
    assert_eq!(v.client_answers.unwrap().rows[0].unknown, 1);
}

#[test]
fn two_unknown_attempts_and_one_extra_copy_name_neither() {
    // 1 and 2 both ambiguous, 3 commits; two copies: one of 1 and 2 applied, not which.
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        answer(1, 1, T1, "commit", "TimeoutException"),
        outcome(1, 1, T1, Outcome::Ambiguous, ""),
        resend(1, 1),
        opened(2, 2, T2, vec![(0, 10)], Some(1)),
        answer(3, 2, T2, "commit", "TimeoutException"),
        outcome(3, 2, T2, Outcome::Ambiguous, ""),
        resend(3, 2),
        opened(4, 3, T3, vec![(0, 10)], Some(2)),
        outcome(5, 3, T3, Outcome::Committed, ""),
        finished(6, true),
    ];
    let v = grade(&twice(), h.clone(), &Context::default());
    assert_eq!(
        v.client_answers.unwrap().rows,
        vec![row("commit", "TimeoutException", 2, 0, 0, 2)]
    );
    // Three copies: both applied.
    let thrice: Vec<u64> = (0..10).chain(0..10).chain(0..10).collect();
    let v = grade(&thrice, h.clone(), &Context::default());
    assert_eq!(v.client_answers.unwrap().rows[0].committed, 2);
    // One copy: neither did.
    let once: Vec<u64> = (0..10).collect();
    let v = grade(&once, h, &Context::default());
    assert_eq!(v.client_answers.unwrap().rows[0].aborted, 2);
}

#[test]
fn the_historys_word_decides_and_rows_go_by_count() {
    // 1: a failed send, aborted (never asked to commit); 2: a commit refused, then a later try
    // committed; 3: a failed send, aborted.
    let h = vec![
        opened(0, 1, T1, vec![(0, 5)], None),
        answer(1, 1, T1, "send", "ProducerQueueIsFullError"),
        outcome(1, 1, T1, Outcome::Aborted, "no commit was sent"),
        opened(2, 2, T2, vec![(5, 10)], None),
        answer(3, 2, T2, "commit", "TransactionCoordinatorNotFound"),
        outcome(3, 2, T2, Outcome::Ambiguous, ""),
        ev(
            4,
            EventBody::TxnResolved {
                attempt: 2,
                txn: T2,
                resolved: Outcome::Committed,
                how: "commit try 2".into(),
            },
        ),
        opened(5, 3, T3, vec![(0, 5)], Some(1)),
        answer(5, 3, T3, "send", "ProducerQueueIsFullError"),
        outcome(5, 3, T3, Outcome::Aborted, "no commit was sent"),
        finished(6, false),
    ];
    let read: Vec<u64> = (5..10).collect();
    let v = grade(&read, h, &Context::default());
    assert_eq!(
        v.client_answers.unwrap().rows,
        vec![
            row("send", "ProducerQueueIsFullError", 2, 0, 2, 0),
            row("commit", "TransactionCoordinatorNotFound", 1, 1, 0, 0),
        ]
    );
}

#[test]
fn no_failed_answer_no_table_and_old_verdicts_parse() {
    let v = grade(
        &(0..10).collect::<Vec<_>>(),
        super::super::test_support::committed_0_to_10(5),
        &Context::default(),
    );
    assert_eq!(v.client_answers, None);
    let text = serde_json::to_string(&v).unwrap();
    assert!(!text.contains("client_answers"), "{text}");
    let back: super::super::Verdict = serde_json::from_str(&text).unwrap();
    assert_eq!(back.client_answers, None);
    // With a table it round-trips.
    let v = grade(&twice(), naive_after_timeout(), &Context::default());
    let text = serde_json::to_string(&v).unwrap();
    let back: super::super::Verdict = serde_json::from_str(&text).unwrap();
    assert_eq!(back.client_answers, v.client_answers);
}
