//! The pure parts of the transform: ranges of numbers, what a probe's answer proves, which
//! input a probe takes.

use pulsar::message::proto::{MessageIdData, ServerError};

use super::gather::{batch_ready, receiver_queue, round_wait};
use super::probe::probe_outcome;
use super::source::Input;
use super::worker::{probe_target, ranges, Registered};
use crate::history::ProbeOutcome;
use crate::txn::consumer::{classify_ack, Received};
use crate::txn::TxnError;

fn input(partition: usize, entry: u64, batch: Option<(i32, i32)>, n: u64) -> Input {
    Input {
        partition,
        n,
        msg: Received {
            id: MessageIdData {
                ledger_id: 7,
                entry_id: entry,
                batch_index: batch.map(|b| b.0),
                batch_size: batch.map(|b| b.1),
                ..Default::default()
            },
            payload: n.to_string().into_bytes(),
            redelivery_count: 0,
        },
    }
}

#[test]
fn numbers_become_sorted_half_open_ranges() {
    assert_eq!(
        ranges(&[5, 1, 2, 3, 9, 10, 2]),
        vec![(1, 4), (5, 6), (9, 11)]
    );
    assert!(ranges(&[]).is_empty());
}

#[test]
fn only_transaction_conflict_is_a_refusal() {
    let outcome = |r: Result<(), TxnError>| probe_outcome(&r, &classify_ack(&r));
    assert_eq!(outcome(Ok(())), ProbeOutcome::Accepted);
    let conflict = TxnError::Server {
        code: ServerError::TransactionConflict,
        message: "in pending ack status".into(),
    };
    assert_eq!(outcome(Err(conflict)), ProbeOutcome::Refused);
    let not_allowed = TxnError::Server {
        code: ServerError::NotAllowedError,
        message: "x".into(),
    };
    assert_eq!(outcome(Err(not_allowed)), ProbeOutcome::Unknown);
    assert_eq!(
        outcome(Err(TxnError::Timeout("no ACK_RESPONSE".into()))),
        ProbeOutcome::Unanswered
    );
    assert_eq!(
        outcome(Err(TxnError::ConnectionLost("gone".into()))),
        ProbeOutcome::Unknown
    );
}

#[test]
fn a_probe_prefers_a_batch_member_whose_entry_is_held_in_part() {
    // Entry 1 whole (2 of 2), entry 2 in part (1 of 3), a plain entry 3.
    let batch = vec![
        input(0, 1, Some((0, 2)), 10),
        input(0, 1, Some((1, 2)), 11),
        input(0, 2, Some((0, 3)), 12),
        input(0, 3, None, 13),
    ];
    let id =
        |b: &[Input], whole_first: bool| probe_target(b, whole_first).map(|k| b[k].msg.id.clone());
    let first = id(&batch, false).unwrap();
    assert_eq!((first.entry_id, first.batch_index), (2, Some(0)));
    // No partial entry: a plain one.
    let whole_and_plain = [
        batch[0].clone_input(),
        batch[1].clone_input(),
        batch[3].clone_input(),
    ];
    assert_eq!(id(&whole_and_plain, false).unwrap().entry_id, 3);
    // Only whole entries: the first.
    assert_eq!(id(&whole_and_plain[..2], false).unwrap().entry_id, 1);
    assert!(probe_target(&[], false).is_none());
}

#[test]
fn a_committing_probe_prefers_a_member_of_an_entry_held_whole() {
    // Entry 2 in part (1 of 3), entry 1 whole (2 of 2), a plain entry 3.
    let batch = vec![
        input(0, 2, Some((0, 3)), 12),
        input(0, 1, Some((0, 2)), 10),
        input(0, 1, Some((1, 2)), 11),
        input(0, 3, None, 13),
    ];
    assert_eq!(probe_target(&batch, true), Some(1));
    assert_eq!(
        probe_target(&batch, false),
        Some(0),
        "abort: the partial entry first"
    );
    // No entry held whole: as with abort.
    assert_eq!(probe_target(&batch[..1], true), Some(0));
    assert_eq!(probe_target(&batch[3..], true), Some(0));
    // An entry of one message is no batch.
    let single = vec![input(0, 4, Some((0, 1)), 14)];
    assert_eq!(probe_target(&single, true), Some(0));
    assert!(probe_target(&[], true).is_none());
}

trait CloneInput {
    fn clone_input(&self) -> Input;
}

impl CloneInput for Input {
    fn clone_input(&self) -> Input {
        Input {
            partition: self.partition,
            n: self.n,
            msg: self.msg.clone(),
        }
    }
}

#[test]
fn an_attempt_registers_what_its_spare_lacks() {
    let set = |v: &[usize]| {
        v.iter()
            .copied()
            .collect::<std::collections::BTreeSet<usize>>()
    };
    let spare = Registered {
        inputs: set(&[0, 1]),
        outputs: set(&[2, 3]),
    };
    let needs = |inputs: &[usize], outputs: &[usize]| Registered {
        inputs: set(inputs),
        outputs: set(outputs),
    };
    // The same partitions as the attempt before: nothing left to register.
    assert_eq!(
        spare.missing(&needs(&[0, 1], &[2, 3])),
        Registered::default()
    );
    // A new input partition and a new output partition: only those.
    assert_eq!(
        spare.missing(&needs(&[1, 4], &[0, 3])),
        Registered {
            inputs: set(&[4]),
            outputs: set(&[0]),
        }
    );
    // A spare that registered nothing (a driver's, or a failed registration): everything.
    assert_eq!(
        Registered::default().missing(&needs(&[0], &[1, 2])),
        Registered {
            inputs: set(&[0]),
            outputs: set(&[1, 2]),
        }
    );
}

#[test]
fn a_consumer_holds_ten_transactions_worth_within_100_to_1000() {
    assert_eq!(receiver_queue(1), 100);
    assert_eq!(receiver_queue(10), 100);
    assert_eq!(receiver_queue(25), 250);
    assert_eq!(receiver_queue(100), 1000);
    assert_eq!(receiver_queue(5000), 1000);
}

/// Regression: a run complete because every commit was confirmed used to report "the
/// subscription's backlog is 0" without having asked; only the idle path asks.
#[test]
fn a_run_complete_by_its_commits_does_not_claim_a_backlog_it_never_asked() {
    use super::Completion;
    assert!(!Completion::AllCommitted.seen().contains("backlog"));
    assert!(Completion::IdleBacklogZero.seen().contains("backlog is 0"));
}

/// A held entry's numbers as the admin API returns its payload: a batch's members (as 4.0.7
/// stored entry 12:24, numbers 130..=139, each member's metadata 5 bytes), or one message.
#[test]
fn a_held_entry_s_numbers_are_read_from_its_payload() {
    let mut batch = Vec::new();
    for n in 130u32..140 {
        batch.extend_from_slice(&5u32.to_be_bytes());
        // payload_size = 3, sequence_id = 100 + n (two-byte varint).
        let seq = 100 + n;
        batch.extend_from_slice(&[0x18, 0x03, 0x40, (seq as u8) | 0x80, (seq >> 7) as u8]);
        batch.extend_from_slice(n.to_string().as_bytes());
    }
    assert_eq!(
        super::entry_numbers(&batch, Some(10)),
        Some((130..140).collect())
    );
    assert_eq!(super::entry_numbers(b"42", None), Some(vec![42]));
    assert_eq!(super::entry_numbers(&batch[..20], Some(10)), None);
}

/// A short batch waits for more inputs until the linger after its first has run out (it used
/// to be returned as soon as the consumers held nothing more: 30 inputs a transaction on
/// average at T=100), and a full one never waits.
#[test]
fn a_short_batch_lingers_for_more_inputs_and_a_full_one_does_not() {
    use std::time::Duration;
    use tokio::time::Instant;
    let now = Instant::now();
    let later = now + Duration::from_millis(20);
    // Nothing in hand: wait for a first input.
    assert_eq!(round_wait(None, false, now), Duration::from_millis(100));
    // Inputs in hand, the consumers just drained: take what they hold now, no wait.
    assert_eq!(round_wait(Some(later), false, now), Duration::ZERO);
    // The last round found them empty: wait for the linger's rest, and not past it.
    assert_eq!(
        round_wait(Some(later), true, now),
        Duration::from_millis(20)
    );
    assert_eq!(round_wait(Some(now), true, later), Duration::ZERO);
    // A short batch with nothing more come in: kept until the linger has run out.
    assert!(!batch_ready(30, 100, false, Some(later), now));
    assert!(batch_ready(30, 100, false, Some(later), later));
    // Something came in that round: drain on, whatever the time.
    assert!(!batch_ready(30, 100, true, Some(now), later));
    // Full: at once. Empty: never.
    assert!(batch_ready(100, 100, true, Some(later), now));
    assert!(!batch_ready(0, 100, false, None, later));
}
