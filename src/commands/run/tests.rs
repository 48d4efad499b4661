use super::*;
use crate::brokerlog::BrokerLine;

fn log(least: u64) -> TxnLog {
    TxnLog {
        txn: TxnId { most: 0, least },
        named: vec![BrokerLine {
            node: "standalone".into(),
            file: "logs/standalone.log".into(),
            line: 599,
            level: "WARN".into(),
            time: "2026-11-30T16:37:09,076".into(),
            message: "TopicTransactionBuffer: Successes to abort low water mark for txn [(0,223)]"
                .into(),
        }],
        named_more: 3,
        during: Vec::new(),
        during_more: 0,
    }
}

/// Issue 18: the CLI prints the broker lines under the first anomaly of a transaction, with
/// file and line, and refers back to them under the others.
#[test]
fn broker_lines_are_printed_once_per_transaction() {
    let mut shown = BTreeSet::new();
    assert_eq!(
        broker_log_text(&[log(223)], &mut shown),
        vec![
            "broker log lines naming (0,223) (the first 1; 3 more name it):".to_string(),
            "  logs/standalone.log:599 2026-11-30T16:37:09,076 WARN TopicTransactionBuffer: Successes to abort low water mark for txn [(0,223)]".to_string(),
        ]
    );
    assert_eq!(
        broker_log_text(&[log(223), log(224)], &mut shown)[0],
        "broker log about (0,223): as above"
    );
    assert!(broker_log_text(&[], &mut shown).is_empty());
}

/// The table of what each error meant, aligned, one line per class.
#[test]
fn client_answers_are_printed_as_a_table() {
    let t = checker::ClientAnswers {
        client: "java".into(),
        rows: vec![
            checker::AnswerRow {
                op: "commit".into(),
                class: "TimeoutException".into(),
                transactions: 3,
                committed: 1,
                aborted: 2,
                unknown: 0,
            },
            checker::AnswerRow {
                op: "send".into(),
                class: "NoAnswer".into(),
                transactions: 1,
                committed: 0,
                aborted: 1,
                unknown: 0,
            },
        ],
    };
    assert_eq!(
        client_answers_text(&t),
        vec![
            "what each error meant (java client):",
            "  op      class              txns  committed  aborted  unknown",
            "  commit  TimeoutException      3          1        2        0",
            "  send    NoAnswer              1          0        1        0",
        ]
    );
    assert!(client_answers_text(&checker::ClientAnswers {
        client: "own".into(),
        rows: Vec::new()
    })
    .is_empty());
}
