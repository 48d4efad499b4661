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
