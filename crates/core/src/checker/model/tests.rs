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
        resolved_how: None,
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

/// Regression: `verdict.json` of a run with duplicates whose message ids the second read
/// located could not be read back (`Attributed` flattens `DuplicateEntry`, whose map keys then
/// arrive as strings): `replay` took such a run for one without a verdict and `shrink` refused
/// it.
#[test]
fn a_duplicate_with_its_message_ids_reads_back_through_attributed() {
    let id = |entry: u64| crate::checker::MsgId {
        partition: 1,
        ledger: 9,
        entry,
        batch: -1,
    };
    let d = Attributed {
        what: DuplicateEntry {
            start: 300,
            end: 400,
            copies: 2,
            message_ids: [(300, vec![id(1), id(7)]), (301, vec![id(2), id(8)])]
                .into_iter()
                .collect(),
            ranges: vec![
                Span {
                    start: 300,
                    end: 302,
                },
                Span {
                    start: 399,
                    end: 400,
                },
            ],
        },
        attempts: vec![7, 11],
        cause: Cause::default(),
        explanation: "resent after an ambiguous commit".into(),
        evidence: Vec::new(),
        broker_log: Vec::new(),
    };
    let text = serde_json::to_string(&d).unwrap();
    assert!(text.contains("\"300\":["), "{text}");
    let back: Attributed<DuplicateEntry> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, d);
    let bad = text.replace("\"301\"", "\"x\"");
    let err = serde_json::from_str::<Attributed<DuplicateEntry>>(&bad).unwrap_err();
    assert!(err.to_string().contains("not a number: \"x\""), "{err}");
}
