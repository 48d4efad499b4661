use super::*;

/// A context stored before broker lines existed loads, with none.
#[test]
fn a_context_without_broker_lines_loads() {
    let ctx: Context = serde_json::from_str(r#"{"seed":4,"stall_log":[]}"#).unwrap();
    assert!(ctx.broker_log.is_empty());
    assert!(!serde_json::to_string(&ctx).unwrap().contains("broker_log"));
}

#[test]
fn an_attempt_is_scanned_for_in_the_brokers_logs_unless_it_is_the_placeholder() {
    let mut a = AttemptRecord {
        attempt: 1,
        txn: TxnId {
            most: 0,
            least: 223,
        },
        numbers: vec![(0, 10)],
        opened_ms: 6_230,
        outcome_ms: Some(7_234),
        ended_ms: Some(7_234),
        outcome: Some(Outcome::Committed),
        detail: String::new(),
        resolved: None,
        commit_tries: 1,
        resent: false,
        resend_reason: None,
        withheld: false,
        withheld_reason: None,
        replies_dropped: Vec::new(),
        faults: Vec::new(),
    };
    assert_eq!(
        a.opened(),
        Some(crate::brokerlog::Opened {
            txn: TxnId {
                most: 0,
                least: 223
            },
            opened_ms: 6_230,
            outcome_ms: Some(7_234),
        })
    );
    a.txn.most = NO_TXN;
    assert_eq!(a.opened(), None);
}
