use super::*;

fn line(file: &str, n: u64, message: &str) -> BrokerLine {
    BrokerLine {
        node: "broker-1".into(),
        file: file.into(),
        line: n,
        level: "ERROR".into(),
        time: "2026-11-30T16:37:09,076".into(),
        message: message.into(),
    }
}

fn txn(id: &str, status: &str, here_aborted: Option<bool>) -> StuckTxn {
    StuckTxn {
        txn: id.into(),
        status: status.into(),
        age_ms: Some(380_000),
        timeout_ms: Some(20_000),
        partitions: vec![
            TxnPartition {
                partition: "persistent://public/default/t-partition-0".into(),
                start_position: Some("21:266".into()),
                aborted: here_aborted,
            },
            TxnPartition {
                partition: "persistent://public/default/t-partition-1".into(),
                start_position: None,
                aborted: Some(true),
            },
        ],
    }
}

fn partition(
    open: Option<u64>,
    max_read: Option<(u64, i64)>,
    txns: Vec<StuckTxn>,
) -> StuckPartition {
    StuckPartition {
        partition: "persistent://public/default/t-partition-0".into(),
        index: 0,
        held: "4 transaction(s) open".into(),
        buffer_state: Some("Ready".into()),
        open,
        max_read,
        last_confirmed: Some((34, 3961)),
        entries_behind: Some(64766),
        txns,
        broker_lines: Vec::new(),
        errors: Vec::new(),
    }
}

#[test]
fn remedy_names_round_trip_in_default_order() {
    let names: Vec<&str> = Remedy::ALL.iter().map(|r| r.name()).collect();
    assert_eq!(names, ["re-end", "unload-coordinator", "unload-topic"]);
    for r in Remedy::ALL {
        assert_eq!(Remedy::parse(r.name()), Some(r));
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(json, format!("\"{}\"", r.name()));
    }
    assert_eq!(Remedy::parse("reboot"), None);
}

#[test]
fn evidence_needs_pulsar_to_say_the_partition_is_held() {
    // The buffer: transactions open and its read position before the ledger's end.
    assert!(partition(Some(4), Some((21, 265)), vec![]).has_evidence());
    // Nothing open, read position at the end, no coordinator transaction: no evidence.
    let mut p = partition(Some(0), Some((34, 3961)), vec![]);
    assert!(!p.has_evidence());
    // Unknown answers are not evidence.
    p = partition(None, None, vec![]);
    assert!(!p.has_evidence());
    // A coordinator transaction still ABORTING that names it is.
    p = partition(None, None, vec![txn("(0,1067)", "ABORTING", Some(false))]);
    assert!(p.has_evidence());
    // An OPEN one is not (its timeout may still end it).
    p = partition(None, None, vec![txn("(0,1067)", "OPEN", None)]);
    assert!(!p.has_evidence());
}

#[test]
fn a_partition_is_described_with_pulsars_numbers() {
    let p = partition(
        Some(4),
        Some((21, 265)),
        vec![txn("(0,1067)", "ABORTING", Some(false))],
    );
    assert_eq!(
        p.describe(),
        "partition 0: 64766 entries behind maxReadPosition 21:265 (lastConfirmedEntry 34:3961), 4 transaction(s) open, buffer Ready; coordinator: (0,1067) ABORTING for 380s (not ended here)"
    );
    let lone = partition(Some(1), Some((21, 265)), vec![]);
    assert!(lone
        .describe()
        .ends_with("; no coordinator reports a transaction naming it"));
}

#[test]
fn entries_behind_counts_across_ledgers() {
    // Ledger 21 has 300 entries (0..=299), 28 has 100, 34 is open with 3962 so far.
    let ledgers = [(21, 300), (28, 100), (34, 0)];
    let n = entries_behind(&ledgers, Some((34, 3962)), (21, 265), (34, 3961));
    assert_eq!(n, Some(34 + 100 + 3962));
    // Same ledger.
    assert_eq!(
        entries_behind(&[(5, 0)], Some((5, 10)), (5, 3), (5, 9)),
        Some(6)
    );
    // Before the ledger's first entry (as Pulsar reports a buffer held from the start).
    assert_eq!(
        entries_behind(&[(7, 0)], Some((7, 5)), (7, -1), (7, 4)),
        Some(5)
    );
    // Nothing behind.
    assert_eq!(
        entries_behind(&ledgers, None, (34, 3961), (34, 3961)),
        Some(0)
    );
    // maxReadPosition in a ledger that was trimmed away: unknown.
    assert_eq!(entries_behind(&ledgers, None, (7, 1), (34, 3961)), None);
}

#[test]
fn positions_parse() {
    assert_eq!(parse_position("21:265"), Some((21, 265)));
    assert_eq!(parse_position("21:-1"), Some((21, -1)));
    assert_eq!(parse_position("21:x"), None);
    assert_eq!(parse_position("x"), None);
}

#[test]
fn the_coordinator_giving_up_is_named_with_its_lines() {
    let mut p = partition(
        Some(4),
        Some((21, 265)),
        vec![txn("(0,1067)", "ABORTING", Some(false))],
    );
    assert_eq!(
        known_cause(std::slice::from_ref(&p)),
        None,
        "no lines, no cause"
    );
    // As 4.2.4 logged it (mixed.yaml, seed 13): recovery failed, END_TXN_ON_PARTITION failed,
    // UnknownError, the coordinator gave up.
    p.broker_lines = vec![
        line("logs/broker-1.log", 2494, "TopicTransactionBuffer: Closing topic persistent://public/default/t-partition-0 due to read transaction buffer snapshot while recovering the transaction buffer throw exception | java.util.concurrent.TimeoutException"),
        line("logs/broker-1.log", 2518, "ServerCnx: handleEndTxnOnPartition fail!, topic persistent://public/default/t-partition-0, txnId: [(0,1067)], txnAction: [ABORT]"),
        line("logs/broker-1.log", 2579, "TransactionBufferHandlerImpl: [persistent://public/default/t-partition-0] Got end txn on topic response for request 3739 error UnknownError"),
        line("logs/broker-1.log", 2628, "TransactionMetadataStoreService: End transaction fail! TxnId : (0,1067), TxnAction : 1"),
    ];
    let c = known_cause(std::slice::from_ref(&p)).unwrap();
    assert!(
        c.starts_with("the coordinator gave up ending (0,1067) ABORTING (logs/broker-1.log:2628"),
        "{c}"
    );
    assert!(
        c.contains("failed END_TXN_ON_PARTITION (logs/broker-1.log:2518"),
        "{c}"
    );
    assert!(
        c.contains("failed to recover (logs/broker-1.log:2494"),
        "{c}"
    );
    assert!(c.contains("TimeoutException"), "{c}");
    assert!(
        c.contains("got UnknownError (logs/broker-1.log:2579), which it does not retry"),
        "{c}"
    );
    assert!(
        c.contains("No upstream issue describing this was found"),
        "{c}"
    );
    // The coordinator's line alone names the pattern too.
    p.broker_lines
        .retain(|l| l.message.contains("End transaction fail"));
    assert!(known_cause(std::slice::from_ref(&p)).is_some());
    // The same lines with the transaction no longer being ended: not this pattern.
    p.txns = vec![txn("(0,1067)", "OPEN", None)];
    assert_eq!(known_cause(std::slice::from_ref(&p)), None);
}

#[test]
fn many_transactions_are_named_five_and_counted() {
    let txns: Vec<StuckTxn> = (0..8)
        .map(|i| txn(&format!("(0,{i})"), "ABORTING", Some(false)))
        .collect();
    let p = partition(Some(8), Some((21, 265)), txns);
    let d = p.describe();
    assert!(
        d.contains("(0,4) ABORTING for 380s (not ended here) and 3 more"),
        "{d}"
    );
    assert!(!d.contains("(0,5)"), "{d}");
}

#[test]
fn the_finding_says_which_remedy_healed_it() {
    let mut s = StuckReads {
        since_ms: 30_000,
        detected_ms: 300_000,
        waited_s: 260,
        partitions: vec![partition(Some(4), Some((21, 265)), vec![])],
        remedies: vec![],
        likely_cause: None,
    };
    assert!(s.describe().ends_with("; no remedy was tried"));
    let rec = |remedy, healed| RemedyRecord {
        remedy,
        targets: vec!["(0,1067)".into()],
        at_ms: 300_000,
        elapsed_ms: 2_500,
        answers: vec!["(0,1067): ok".into()],
        healed,
        still_held: String::new(),
    };
    s.remedies = vec![
        rec(Remedy::ReEnd, false),
        rec(Remedy::UnloadCoordinator, true),
    ];
    assert_eq!(
        s.healed_by().map(|r| r.remedy),
        Some(Remedy::UnloadCoordinator)
    );
    assert!(
        s.describe()
            .ends_with("; remedy `unload-coordinator` healed it in 2.5s"),
        "{}",
        s.describe()
    );
    s.remedies.pop();
    assert!(s
        .describe()
        .ends_with("; remedies tried without healing it: re-end"));
}

#[test]
fn held_since_is_the_first_end_request_of_a_holding_transaction() {
    use crate::history::{Event, EventBody, TxnId};
    let t = |most, least| TxnId { most, least };
    let events: Vec<Result<Event, String>> = vec![
        Ok(Event {
            t_ms: 100,
            body: EventBody::CommitRequested {
                attempt: 1,
                txn: t(0, 5),
                try_no: 1,
            },
        }),
        Ok(Event {
            t_ms: 200,
            body: EventBody::AbortRequested {
                attempt: 2,
                txn: t(0, 1067),
                reason: "x".into(),
            },
        }),
        Err("unreadable".into()),
        Ok(Event {
            t_ms: 300,
            body: EventBody::CommitRequested {
                attempt: 3,
                txn: t(0, 1067),
                try_no: 1,
            },
        }),
    ];
    assert_eq!(
        held_since(events.clone(), &["(0,1067)".to_string()], 999),
        200
    );
    assert_eq!(held_since(events, &["(1,1)".to_string()], 999), 999);
}

#[test]
fn a_transaction_open_within_its_timeout_is_no_evidence() {
    let mut open = txn("(0,9)", "OPEN", Some(false));
    open.age_ms = Some(5_000);
    open.timeout_ms = Some(600_000);
    assert!(open.within_timeout());
    // The buffer is held, but by a transaction that may hold it: nothing to blame Pulsar for.
    let p = partition(Some(1), Some((21, 265)), vec![open.clone()]);
    assert!(!p.has_evidence());
    assert!(
        p.describe()
            .contains("(0,9) OPEN for 5s (within its 600s timeout)"),
        "{}",
        p.describe()
    );
    let s = StuckReads {
        since_ms: 0,
        detected_ms: 1,
        waited_s: 10,
        partitions: vec![p],
        remedies: Vec::new(),
        likely_cause: None,
    };
    assert_eq!(
        s.open_within_timeout(),
        vec!["(0,9) OPEN, 5s of 600s".to_string()]
    );
    // Past its timeout it is evidence again (the coordinator should have aborted it).
    let mut late = open.clone();
    late.age_ms = Some(700_000);
    assert!(!late.within_timeout());
    assert!(partition(Some(1), Some((21, 265)), vec![late]).has_evidence());
    // Unknown timeout: not within (the buffer's numbers stand).
    let mut unknown = open;
    unknown.timeout_ms = None;
    assert!(partition(Some(1), Some((21, 265)), vec![unknown]).has_evidence());
    // A transaction being ended beside it is evidence whatever the open one does.
    let mut both = partition(
        Some(2),
        Some((21, 265)),
        vec![txn("(0,1)", "ABORTING", Some(false))],
    );
    let mut o = txn("(0,9)", "OPEN", None);
    o.age_ms = Some(1);
    o.timeout_ms = Some(600_000);
    both.txns.push(o);
    assert!(both.has_evidence());
}
