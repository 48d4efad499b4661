use std::time::Instant;

use super::*;
use crate::runner::tests::scratch;

fn opened(h: &History, attempt: u64) {
    h.record(EventBody::TxnOpened {
        attempt,
        txn: history::TxnId {
            most: 0,
            least: attempt,
        },
        numbers: vec![(attempt * 10, attempt * 10 + 10)],
        resend_of: None,
    });
}

fn entry(attempt: u64) -> crate::journal::Entry {
    crate::journal::Entry {
        attempt,
        txn: history::TxnId {
            most: 0,
            least: attempt,
        },
        numbers: vec![(attempt * 10, attempt * 10 + 10)],
        resend_of: None,
    }
}

/// Regression (issue 10, point 4): after a kill the journal had attempt 7 in flight while
/// the buffered history ended at 5; the resumed run numbered from 6 and its attempt 7
/// overwrote the old `txn-7.json` (the old layout; the write-ahead log keeps the rule).
#[tokio::test]
async fn a_resumed_run_numbers_above_a_journal_ahead_of_the_history() {
    let d = scratch("journal-ahead");
    let h = History::create(&d.join("history.jsonl"), Instant::now(), false).unwrap();
    (1..=5).for_each(|a| opened(&h, a));
    drop(h);
    let j = Journal::open(&d.join("journal")).unwrap();
    j.record(&entry(6)).await.unwrap();
    j.record(&entry(7)).await.unwrap();
    assert_eq!(next_attempt(&d.join("history.jsonl"), &j).unwrap(), 8);
}

#[tokio::test]
async fn a_resumed_run_numbers_above_a_history_ahead_of_the_journal() {
    let d = scratch("history-ahead");
    let h = History::create(&d.join("history.jsonl"), Instant::now(), false).unwrap();
    (1..=9).for_each(|a| opened(&h, a));
    drop(h);
    let j = Journal::open(&d.join("journal")).unwrap();
    j.record(&entry(4)).await.unwrap();
    assert_eq!(next_attempt(&d.join("history.jsonl"), &j).unwrap(), 10);
}

#[test]
fn a_resumed_run_with_nothing_recorded_starts_at_one() {
    let d = scratch("empty");
    let j = Journal::open(&d.join("journal")).unwrap();
    assert_eq!(next_attempt(&d.join("history.jsonl"), &j).unwrap(), 1);
    std::fs::write(d.join("history.jsonl"), "").unwrap();
    assert_eq!(next_attempt(&d.join("history.jsonl"), &j).unwrap(), 1);
}
