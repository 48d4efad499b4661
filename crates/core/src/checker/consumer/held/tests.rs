//! Held positions from a cursor, and held entries classified by who acknowledged them.

use super::*;

#[test]
fn deleted_ranges_are_read_as_internal_stats_writes_them() {
    assert_eq!(
        parse_deleted_ranges("[(12:25..12:26],(12:31..12:42],(12:878..13:2]]"),
        vec![
            ((12, 25), (12, 26)),
            ((12, 31), (12, 42)),
            ((12, 878), (13, 2))
        ]
    );
    assert!(parse_deleted_ranges("[]").is_empty());
}

/// As the 4.0.7 run showed it: mark-delete 12:23, entries 24 and 25 held, 26 deleted, 27..31
/// held, 32..42 deleted, up to the last confirmed 12:44 (43, 44 held).
#[test]
fn held_positions_are_those_after_mark_delete_outside_every_deleted_range() {
    let deleted = parse_deleted_ranges("[(12:25..12:26],(12:31..12:42]]");
    let (held, total) = held_positions((12, 23), &deleted, &[(12, 0)], (12, 44), 100);
    let entries: Vec<i64> = held.iter().map(|p| p.1).collect();
    assert_eq!(entries, vec![24, 25, 27, 28, 29, 30, 31, 43, 44]);
    assert_eq!(total, 9);
    // Capped, still counted.
    let (held, total) = held_positions((12, 23), &deleted, &[(12, 0)], (12, 44), 3);
    assert_eq!((held.len(), total), (3, 9));
    // Across ledgers: a closed ledger's entries, then the open one up to the last confirmed.
    let (held, _) = held_positions((11, 7), &[], &[(10, 5), (11, 9), (12, 0)], (12, 1), 100);
    assert_eq!(held, vec![(11, 8), (12, 0), (12, 1)]);
    // Nothing held.
    let (held, total) = held_positions((12, 44), &[], &[(12, 0)], (12, 44), 100);
    assert!(held.is_empty() && total == 0);
}

fn entry(numbers: Option<Vec<u64>>, fill: FillOutcome, marker: Option<i64>) -> HeldEntry {
    HeldEntry {
        partition: "p".into(),
        position: (1, 0),
        marker,
        txn: None,
        fill,
        numbers,
    }
}

#[test]
fn held_entries_are_classified_by_the_transactions_that_took_their_numbers() {
    let (a, b, c) = (
        TxnId { most: 0, least: 1 },
        TxnId { most: 0, least: 2 },
        TxnId { most: 0, least: 3 },
    );
    let mut k = Acknowledgers::default();
    k.taken(1, &[(0, 7)]);
    k.ended(1, a, Outcome::Committed);
    k.taken(2, &[(7, 20)]);
    k.ended(2, b, Outcome::Ambiguous);
    k.ended(2, b, Outcome::Committed);
    k.taken(3, &[(20, 30)]);
    k.ended(3, c, Outcome::Aborted);
    let kinds = k.classify(&[
        entry(Some((0..10).collect()), FillOutcome::Committed, None),
        entry(Some((10..20).collect()), FillOutcome::Committed, None),
        entry(Some((20..30).collect()), FillOutcome::Committed, None),
        entry(Some((0..10).collect()), FillOutcome::Aborted, None),
        entry(None, FillOutcome::Unknown, Some(20)),
        entry(None, FillOutcome::Committed, None),
    ]);
    assert_eq!(
        kinds,
        vec![
            HeldKind::Split(vec![a, b]),
            HeldKind::Whole(b),
            HeldKind::NotAcknowledged((20..30).collect()),
            HeldKind::NeverDelivered,
            HeldKind::NeverDelivered,
            HeldKind::Unreadable,
        ]
    );
}

#[test]
fn an_entry_is_named_by_position_numbers_and_writer() {
    let mut e = entry(Some((130..140).collect()), FillOutcome::Committed, None);
    e.position = (12, 24);
    e.txn = Some(TxnId { most: 0, least: 2 });
    assert_eq!(
        entry_words(&e),
        "12:24 (numbers 130..=139, written by transaction (0,2))"
    );
}

/// A transform that did not finish: the held entries are explained in a note, naming the
/// last transaction that took an unacknowledged input and how it ended.
#[test]
fn an_unfinished_transform_s_held_inputs_name_their_last_taker() {
    let (a, b) = (TxnId { most: 0, least: 1 }, TxnId { most: 0, least: 2 });
    let mut k = Acknowledgers::default();
    k.taken(1, &[(0, 7)]);
    k.ended(1, a, Outcome::Committed);
    k.taken(2, &[(7, 14)]);
    k.ended(2, b, Outcome::Aborted);
    let mut held = HeldEvidence {
        total: 3,
        entries: vec![
            entry(Some((7..14).collect()), FillOutcome::Committed, None),
            entry(Some((14..21).collect()), FillOutcome::Committed, None),
        ],
        ..HeldEvidence::default()
    };
    held.entries[0].position = (12, 1);
    let n = k.unfinished_note(&held).unwrap();
    assert!(
        n.starts_with("2 of the 2 held entries looked at (3 held in all) hold inputs no committed transaction acknowledged, e.g. 12:1 (numbers 7..=13): number 7 was last taken by attempt 2 in transaction (0,2), which ended aborted"),
        "{n}"
    );
    held.entries.remove(0);
    assert!(k
        .unfinished_note(&held)
        .unwrap()
        .contains("number 14 was never taken"));
    // Nothing to say when every held entry is acknowledged or never delivered.
    held.entries = vec![entry(Some((0..7).collect()), FillOutcome::Committed, None)];
    assert_eq!(k.unfinished_note(&held), None);
}
