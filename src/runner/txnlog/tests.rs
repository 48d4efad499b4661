use super::*;
use crate::admin::LogCursor;

fn view(last: &str, mark_delete: &str, deleted: &str) -> TxnLogView {
    TxnLogView {
        ledger: Some("pulsar/system/persistent/__transaction_log_0".into()),
        last_confirmed: Some(last.into()),
        cursors: [(
            "transaction.subscription".to_string(),
            LogCursor {
                mark_delete_position: Some(mark_delete.into()),
                read_position: Some(last.into()),
                individually_deleted_messages: Some(deleted.into()),
                cursor_ledger: Some(4),
                cursor_ledger_last_entry: Some(1),
            },
        )]
        .into(),
    }
}

/// The admin API's answer, as Pulsar 4.2.4 writes it (fields trimmed), decodes into a view.
#[test]
fn the_admin_answer_decodes_into_a_view() {
    let text = r#"{"transactionLogStats":{"managedLedgerName":"pulsar/system/persistent/__transaction_log_0",
        "managedLedgerInternalStats":{"entriesAddedCounter":12,"lastConfirmedEntry":"3:494","state":"LedgerOpened",
        "cursors":{"transaction.subscription":{"markDeletePosition":"3:463","readPosition":"3:494",
        "individuallyDeletedMessages":"[(3:470..3:480]]","messagesConsumedCounter":7,"cursorLedger":4,"cursorLedgerLastEntry":1}}}}}"#;
    let decoded = crate::admin::decode_txn_log(text).unwrap();
    assert_eq!(decoded, view("3:494", "3:463", "[(3:470..3:480]]"));
}

#[test]
fn a_line_is_written_only_when_the_answer_changes() {
    let mut w = Watch::default();
    let a = view("3:10", "3:8", "[]");
    let s = w.observe(100, 0, Ok(a.clone()));
    assert_eq!(s.line.as_ref().unwrap().log.as_ref(), Some(&a));
    assert_eq!(s.note, None);
    assert_eq!(w.observe(350, 0, Ok(a.clone())), Step::default());
    let b = view("3:12", "3:10", "[]");
    let s = w.observe(600, 0, Ok(b.clone()));
    assert_eq!(s.line.unwrap().t_ms, 600);
    assert_eq!(s.note, None);
    // Another coordinator has its own last answer.
    assert!(w.observe(600, 1, Ok(a)).line.is_some());
}

/// A kill: the last view before the gap is noted when the log becomes unreadable, the first
/// after it when it is readable again, with a mark-delete position that went back named.
#[test]
fn a_gap_is_noted_with_the_views_on_both_sides_and_a_cursor_that_went_back() {
    let mut w = Watch::default();
    w.observe(0, 0, Ok(view("3:494", "3:494", "[]")));
    // The same view answered again: the last view is dated by this answer.
    w.observe(250, 0, Ok(view("3:494", "3:494", "[]")));
    let s = w.observe(3250, 0, Err("HTTP 503: service unavailable".into()));
    assert_eq!(
        s.line.as_ref().unwrap().error.as_deref(),
        Some("HTTP 503: service unavailable")
    );
    let note = s.note.unwrap();
    assert!(note.contains("became unreadable"), "{note}");
    assert!(
        note.contains("its last view, answered at t=250 ms"),
        "{note}"
    );
    assert!(note.contains("markDeletePosition 3:494"), "{note}");
    assert!(
        note.contains("coordinatorInternalStats/0?metadata=false"),
        "{note}"
    );
    // The same refusal again: nothing; another one: a line, no note.
    assert_eq!(
        w.observe(3500, 0, Err("HTTP 503: service unavailable".into())),
        Step::default()
    );
    let s = w.observe(3750, 0, Err("connection refused".into()));
    assert!(s.line.is_some() && s.note.is_none());
    let s = w.observe(4250, 0, Ok(view("3:500", "3:463", "[(3:470..3:480]]")));
    let note = s.note.unwrap();
    assert!(note.contains("readable again after 1000 ms"), "{note}");
    assert!(
        note.contains(
            "cursor transaction.subscription's markDeletePosition went back from 3:494 to 3:463"
        ),
        "{note}"
    );
    assert!(
        note.contains("individuallyDeletedMessages [(3:470..3:480]]"),
        "{note}"
    );
    // The entries acknowledged before and not after, named in the note and kept for the
    // checker, dated by the last view before the gap.
    assert!(
        note.contains("(21 entries acknowledged before the gap are not after it: (3:463..3:470], (3:480..3:494])"),
        "{note}"
    );
    assert_eq!(w.steps_back.len(), 1);
    assert_eq!(
        (w.steps_back[0].before_ms, w.steps_back[0].after_ms),
        (250, 4250)
    );
}

#[test]
fn a_cursor_that_moved_on_is_not_named() {
    let before = view("3:494", "3:494", "[]");
    assert!(steps_back(0, 1, &before, 2, &view("4:2", "4:0", "[]")).is_empty());
    assert!(steps_back(0, 1, &before, 2, &view("3:494", "3:494", "[]")).is_empty());
    let back = steps_back(0, 1, &before, 2, &view("3:494", "3:493", "[]"));
    assert_eq!(back.len(), 1);
    assert_eq!(
        (
            back[0].cursor.as_str(),
            back[0].before.as_str(),
            back[0].after.as_str()
        ),
        ("transaction.subscription", "3:494", "3:493")
    );
    assert_eq!(back[0].reopened, vec!["(3:493..3:494]"]);
    assert_eq!(back[0].log, "pulsar/system/persistent/__transaction_log_0");
}

#[test]
fn only_faults_on_a_coordinator_start_the_watch() {
    let scenario = |faults: &str| {
        crate::scenario::parse(
            "t.yaml",
            &format!(
                "name: t\ncluster: {{ topology: cluster, brokers: 2 }}\nworkload: {{ topic: persistent://public/default/t, messages: 100 }}\nfaults:\n{faults}"
            ),
        )
        .unwrap()
    };
    let on_owner = scenario(
        "  - kind: broker_restart\n    target: coordinator-owner\n    schedule: { at: [1s] }\n",
    );
    assert!(wanted(&crate::plan::make(&on_owner, 1)));
    let assign = scenario("  - kind: topic_unload\n    topic: persistent://pulsar/system/transaction_coordinator_assign-partition-0\n    schedule: { at: [1s] }\n");
    assert!(wanted(&crate::plan::make(&assign, 1)));
    let elsewhere = scenario("  - kind: broker_restart\n    target: broker-1\n    schedule: { at: [1s] }\n  - kind: topic_unload\n    schedule: { at: [1s] }\n");
    assert!(!wanted(&crate::plan::make(&elsewhere, 1)));
}
