use super::*;
use crate::history::{Event, EventBody, Outcome, TxnId};
use crate::rundir::RunDir;
use crate::runner::tests::scratch;

/// The history of a run whose attempt 1 (transaction (0,223)) committed [0, 10), from
/// the run of the low-water-mark finding.
fn lwm_history(wall: u64, txn: TxnId) -> Vec<Event> {
    vec![
        Event {
            t_ms: 0,
            body: EventBody::RunStarted {
                run_id: "78ef54aa".into(),
                seed: 1,
                scenario: "lwm".into(),
                topic: "persistent://public/default/eos-lwm-78ef54aa".into(),
                partitions: 1,
                messages: 10,
                resend: "verify".into(),
                wall_ms: wall,
            },
        },
        Event {
            t_ms: 6_230,
            body: EventBody::TxnOpened {
                attempt: 1,
                txn,
                numbers: vec![(0, 10)],
                resend_of: None,
            },
        },
        Event {
            t_ms: 7_234,
            body: EventBody::TxnOutcome {
                attempt: 1,
                txn,
                outcome: Outcome::Committed,
                detail: "END_TXN COMMIT answered success".into(),
            },
        },
        Event {
            t_ms: 7_300,
            body: EventBody::ProducerFinished {
                committed: 1,
                aborted: 0,
                ambiguous: 0,
                messages_committed: 10,
                complete: true,
                detail: String::new(),
            },
        },
    ]
}

/// Issue 18: after a verdict that is not a pass, the broker lines about the anomalies'
/// transactions are quoted under them, `readback.json` is stored again with them, and
/// `recheck` reproduces the verdict. Only brokers' logs are read.
#[test]
fn broker_lines_are_quoted_stored_and_rechecked() {
    let path = scratch("brokerlog");
    let dir = RunDir {
        path: path.to_path_buf(),
    };
    let wall = crate::stall::parse_log_time("2026-11-30T16:37:01,828").unwrap();
    let txn = TxnId {
        most: 0,
        least: 223,
    };
    let events = lwm_history(wall, txn);
    let mut text = String::new();
    for e in &events {
        text.push_str(&serde_json::to_string(e).unwrap());
        text.push('\n');
    }
    dir.write("history.jsonl", &text).unwrap();
    dir.write("run.json", "{}\n").unwrap();
    // Nothing read: [0, 10) missing although (0,223) was confirmed committed.
    let all = checker::Tally::uncapped(10).finish().unwrap();
    let mut ctx = Context {
        seed: Some(1),
        ..Context::default()
    };
    let stored = crate::readlog::StoredReadback::new(
        10,
        crate::readlog::ReadLog::new(),
        all.clone(),
        Default::default(),
        ctx.clone(),
    );
    dir.write(
        crate::readlog::FILE,
        &(serde_json::to_string(&stored).unwrap() + "\n"),
    )
    .unwrap();
    let history_path = dir.file("history.jsonl");
    let first = checker::verdict(
        all.clone().capped(),
        Some(history::read(&history_path).unwrap()),
        &ctx,
    );
    assert_eq!(first.status, checker::Status::Violation);
    let broker = "\
2026-11-30T16:37:08,439 [pulsar-io-20-1] ERROR org.apache.pulsar.broker.transaction.buffer.impl.TransactionBufferHandlerImpl - endTxn error topic: [persistent://public/default/eos-lwm-78ef54aa-partition-0]
2026-11-30T16:37:09,076 [BookKeeperClientWorker-OrderedExecutor-1-0] WARN  org.apache.pulsar.broker.transaction.buffer.impl.TopicTransactionBuffer - Successes to abort low water mark for txn [(0,223)], topic [persistent://public/default/eos-lwm-78ef54aa-partition-0], lowWaterMark [225]
";
    let bookie = "2026-11-30T16:37:09,000 [main] WARN  org.apache.bookkeeper.X - txn (0,223) in a bookie's log\n";
    let logs = vec![
        (Role::Bookie, "bookie-1".to_string(), bookie.to_string()),
        (
            Role::Standalone,
            "standalone".to_string(),
            broker.to_string(),
        ),
    ];
    let v = quote_broker_log(
        &dir,
        &mut ctx,
        all.capped(),
        first,
        &logs,
        &history_path,
        "persistent://public/default/eos-lwm-78ef54aa",
    )
    .unwrap();
    let m = &v.missing[0];
    assert_eq!(m.cause, checker::Cause::Pulsar);
    assert_eq!(m.broker_log.len(), 1, "{m:#?}");
    let places: Vec<String> = m.broker_log[0].named.iter().map(|l| l.place()).collect();
    assert_eq!(places, vec!["logs/standalone.log:2"]);
    let during: Vec<String> = m.broker_log[0].during.iter().map(|l| l.place()).collect();
    assert_eq!(during, vec!["logs/standalone.log:1"]);
    assert!(
        m.explanation.contains("low-water-mark rule")
            && m.explanation.contains("(logs/standalone.log:2)"),
        "{}",
        m.explanation
    );
    // readback.json holds the lines, so the stored read-back and the history give this
    // verdict again.
    let again: crate::readlog::StoredReadback = dir.read_json(crate::readlog::FILE).unwrap();
    assert_eq!(again.context.broker_log, m.broker_log);
    dir.write_json("verdict.json", &v).unwrap();
    let (rechecked, differences) = crate::commands::recheck::recompute(&dir).unwrap();
    assert!(differences.is_empty(), "{differences:#?}");
    assert_eq!(rechecked, v);
    let _ = std::fs::remove_dir_all(&path);
}

// ---- The lines quoted under a held or stalled partition. ----

#[test]
fn the_known_patterns_lines_are_quoted_first() {
    use crate::brokerlog::BrokerLine;
    let l = |n: u64, message: &str| BrokerLine {
        node: "broker-1".into(),
        file: "logs/broker-1.log".into(),
        line: n,
        level: "ERROR".into(),
        time: format!("2026-12-01T00:50:{:02},000", n % 60),
        message: message.into(),
    };
    // Many early lines about other partitions, then the pattern on t-partition-1.
    let mut lines: Vec<BrokerLine> = (0..20)
        .map(|i| {
            l(
                i,
                "handleEndTxnOnPartition fail!, topic t-partition-0, txnId: [(0,1)]",
            )
        })
        .collect();
    lines.push(l(40, "Closing topic t-partition-1 due to read transaction buffer snapshot while recovering the transaction buffer throw exception"));
    lines.push(l(
        41,
        "handleEndTxnOnPartition fail!, topic t-partition-1, txnId: [(0,1)]",
    ));
    lines.push(l(
        42,
        "[t-partition-1] Got end txn on topic response for request 3 error UnknownError",
    ));
    lines.push(l(43, "End transaction fail! TxnId : (0,1), TxnAction : 1"));
    let picked = pick_lines(lines, "t-partition-1");
    assert_eq!(picked.len(), LINES_PER_PARTITION);
    let numbers: Vec<u64> = picked.iter().map(|p| p.line).collect();
    for n in [40, 41, 42, 43] {
        assert!(numbers.contains(&n), "{numbers:?}");
    }
    // Time order.
    assert!(
        picked.windows(2).all(|w| w[0].time <= w[1].time),
        "{numbers:?}"
    );
}

#[test]
fn a_partition_is_named_whole() {
    assert!(names_partition(
        "abort on topic t-partition-1 failed",
        "t-partition-1"
    ));
    assert!(names_partition("[t-partition-1]", "t-partition-1"));
    assert!(!names_partition(
        "abort on topic t-partition-10",
        "t-partition-1"
    ));
    assert!(names_partition(
        "t-partition-10 and t-partition-1",
        "t-partition-1"
    ));
}
