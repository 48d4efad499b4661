use super::*;

#[test]
fn ranges_parse_in_pulsars_notation() {
    assert_eq!(parse_ranges("[]"), Some(vec![]));
    assert_eq!(
        parse_ranges("[(3:12..3:14],(3:20..3:26],(16:-1..16:3]]"),
        Some(vec![
            ((3, 12), (3, 14)),
            ((3, 20), (3, 26)),
            ((16, -1), (16, 3))
        ])
    );
    assert_eq!(parse_ranges("(3:12..3:14]"), None);
    assert_eq!(parse_ranges("[(3:12-3:14]]"), None);
}

/// The shape of the coordinator-kill finding's run f15e07be (2026-12-06): the coordinator's
/// second life had acknowledged everything up to 3:1099; the third recovered the cursor at
/// 3:961 with acknowledgements above it that skip the NEW and ADD_PARTITION entries of the
/// transactions committed before the first kill.
#[test]
fn the_entries_acknowledged_before_and_not_after_are_named_and_counted() {
    let before = CursorView::parse("3:1099", "[(3:1100..3:1103],(16:-1..16:3]]").unwrap();
    let after = CursorView::parse(
        "3:961",
        "[(3:963..3:965],(3:1061..3:1099],(3:1100..3:1103]]",
    )
    .unwrap();
    let r = reopened(&before, &after);
    assert_eq!(
        r,
        vec![
            ((3, 961), (3, 963)),
            ((3, 965), (3, 1061)),
            ((16, -1), (16, 3))
        ]
    );
    assert_eq!(entries(&r), Some(2 + 96 + 4));
    // Nothing acknowledged before is lost when the cursor only moved on.
    assert!(reopened(&after, &before)
        .iter()
        .all(|(a, _)| *a >= (3, 961)));
    let moved_on = CursorView::parse("3:1110", "[]").unwrap();
    assert_eq!(reopened(&before, &moved_on), vec![((16, -1), (16, 3))]);
    // A range across ledgers cannot be counted from the view.
    assert_eq!(entries(&[((3, 1000), (4, 2))]), None);
}

#[test]
fn a_step_back_is_only_made_of_a_mark_delete_position_that_went_back() {
    let s = CursorStepBack::between(
        0,
        "pulsar/system/persistent/__transaction_log_0",
        "transaction.subscription",
        (21_623, "3:1099", "[(3:1100..3:1103]]"),
        (34_100, "3:961", "[(3:963..3:965],(3:1061..3:1103]]"),
    )
    .unwrap();
    assert_eq!(s.reopened, vec!["(3:961..3:963]", "(3:965..3:1061]"]);
    assert_eq!(s.reopened_entries, Some(98));
    assert_eq!(
        s.to_string(),
        "coordinator 0's transaction log pulsar/system/persistent/__transaction_log_0 (admin API coordinatorInternalStats): cursor transaction.subscription had markDeletePosition 3:1099 at t=21623 ms and came back at 3:961 at t=34100 ms; 98 entries it had acknowledged were unacknowledged again ((3:961..3:963], (3:965..3:1061]), so the recovering coordinator replays them"
    );
    let forward = CursorStepBack::between(0, "l", "c", (1, "3:10", "[]"), (2, "3:12", "[]"));
    assert_eq!(forward, None);
    let unreadable = CursorStepBack::between(0, "l", "c", (1, "3:10", "[]"), (2, "3:8", "?"));
    assert_eq!(unreadable, None);
}
