use std::collections::BTreeMap;

use super::http::refusal_reason;
use super::topics::DedupStats;
use super::*;

#[test]
fn ledger_state_reads_internal_stats() {
    let s: LedgerState = serde_json::from_str(
        r#"{"lastConfirmedEntry":"34:3961","currentLedgerEntries":3962,
            "ledgers":[{"ledgerId":21,"entries":300},{"ledgerId":34,"entries":0}]}"#,
    )
    .unwrap();
    assert_eq!(s.last_confirmed, Some((34, 3961)));
    assert_eq!(s.ledgers, vec![(21, 300), (34, 0)]);
    assert_eq!(s.current, Some((34, 3962)));
    // A field Pulsar left out stays unknown.
    assert_eq!(
        serde_json::from_str::<LedgerState>("{}").unwrap(),
        LedgerState::default()
    );
    // The same from the raw answer the held entries are read from (cursors beside it).
    let raw: serde_json::Value = serde_json::from_str(
        r#"{"lastConfirmedEntry":"34:3961","currentLedgerEntries":3962,
            "ledgers":[{"ledgerId":21,"entries":300},{"ledgerId":34,"entries":0}],
            "cursors":{"s":{"markDeletePosition":"21:5"}}}"#,
    )
    .unwrap();
    assert_eq!(LedgerState::of(&raw), s);
}

#[test]
fn slow_transactions_decode_as_pulsar_writes_them() {
    let text = r#"{"(0,1067)":{"txnId":"(0,1067)","status":"ABORTING","openTimestamp":1764520000000,
        "timeoutAt":20000,"producedPartitions":{"persistent://public/default/t-partition-0":
        {"startPosition":"21:266","aborted":false}},"ackedPartitions":{}}}"#;
    let raw: BTreeMap<String, TxnReport> = serde_json::from_str(text).unwrap();
    let t = &raw["(0,1067)"];
    assert_eq!(t.status, "ABORTING");
    let p = &t.produced_partitions["persistent://public/default/t-partition-0"];
    assert_eq!(p.aborted, Some(false));
    assert_eq!(p.start_position.as_deref(), Some("21:266"));
}

#[test]
fn buffer_state_reads_transaction_buffer_stats() {
    let s: BufferState = serde_json::from_str(
        r#"{"state":"Ready","maxReadPosition":"7:-1","lastSnapshotTimestamps":0,
            "ongoingTxnSize":2,"recoverStartTime":1764520000000,"recoverEndTime":1764520000120}"#,
    )
    .unwrap();
    assert_eq!(
        s,
        BufferState {
            state: Some("Ready".into()),
            max_read: Some((7, -1)),
            open: Some(2),
        }
    );
    // A field Pulsar left out, or a position not written `ledger:entry`, stays unknown.
    assert_eq!(
        serde_json::from_str::<BufferState>("{}").unwrap(),
        BufferState::default()
    );
    let odd: BufferState = serde_json::from_str(r#"{"maxReadPosition":"nowhere"}"#).unwrap();
    assert_eq!(odd.max_read, None);
}

#[test]
fn deduplication_status_is_read_from_topic_stats() {
    let s: DedupStats = serde_json::from_str(
        r#"{"msgRateIn":0.0,"publishers":[],"subscriptions":{},"deduplicationStatus":"Enabled"}"#,
    )
    .unwrap();
    assert_eq!(s.deduplication_status.as_deref(), Some("Enabled"));
    let none: DedupStats = serde_json::from_str(r#"{"msgRateIn":0.0}"#).unwrap();
    assert_eq!(none.deduplication_status, None);
}

#[test]
fn a_refusal_gives_pulsars_reason_else_its_body_on_one_line() {
    assert_eq!(
        refusal_reason(r#"{"reason":"Topic not found\nat ..."}"#.into()),
        "Topic not found"
    );
    assert_eq!(
        refusal_reason("<html>Service Unavailable</html>\n".into()),
        "<html>Service Unavailable</html>"
    );
    assert_eq!(refusal_reason("x".repeat(400)).len(), 300);
}

#[test]
fn topic_paths() {
    assert_eq!(
        topic_path("persistent://public/default/t-partition-1"),
        "persistent/public/default/t-partition-1"
    );
}
