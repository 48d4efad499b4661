use super::*;

fn txn(least: u64) -> TxnId {
    TxnId { most: 0, least }
}

// Lines as Pulsar 4.0.7's standalone wrote them in a run of
// scenarios/findings/lwm-abort-after-namespace-unload.yaml (seed 1, run 78ef54aa) where
// (0,223), confirmed committed at 16:37:09.062, lost its messages on partition 2; stack
// frames shortened. Line 1 is the first line.
const LOG: &str = "\
2026-11-30T16:37:08,302 [BookKeeperClientWorker-OrderedExecutor-0-0] INFO  org.apache.pulsar.metadata.impl.AbstractMetadataStore - Deleting path: /namespace/public/default/0x80000000_0xc0000000 (v. Optional[0])
2026-11-30T16:37:08,352 [BookKeeperClientWorker-OrderedExecutor-1-0] WARN  org.apache.pulsar.broker.service.persistent.PersistentTopic - [persistent://public/default/eos-lwm-78ef54aa-partition-2] Failed to persist msg in store: org.apache.pulsar.broker.service.BrokerServiceException$ServiceUnitNotReadyException: Transaction Buffer recover failed, the current state is: Close
2026-11-30T16:37:08,405 [pulsar-io-20-2] INFO  org.apache.pulsar.broker.lookup.TopicLookupBase - Failed to lookup null for topic persistent://public/default/eos-lwm-78ef54aa-partition-2 with error Namespace bundle public/default/0xc0000000_0xffffffff is being unloaded
2026-11-30T16:37:08,439 [pulsar-io-20-1] ERROR org.apache.pulsar.broker.transaction.buffer.impl.TransactionBufferHandlerImpl - endTxn error topic: [persistent://public/default/eos-lwm-78ef54aa-partition-2]
org.apache.pulsar.client.api.PulsarClientException$BrokerMetadataException: {\"errorMsg\":\"Namespace bundle public/default/0xc0000000_0xffffffff is being unloaded\",\"reqId\":2865807241694338434, \"remote\":\"127.0.0.1/127.0.0.1:6650\", \"local\":\"/127.0.0.1:36538\"}
\tat org.apache.pulsar.client.impl.ClientCnx.getPulsarClientException(ClientCnx.java:1365) ~[pulsar-client-original-4.0.7.jar:4.0.7]
\tat org.apache.pulsar.client.impl.ClientCnx.handleLookupResponse(ClientCnx.java:655) [pulsar-client-original-4.0.7.jar:4.0.7]
\tat java.base/java.lang.Thread.run(Thread.java:840) [?:?]
2026-11-30T16:37:08,600 [BookKeeperClientWorker-OrderedExecutor-1-0] ERROR org.apache.pulsar.broker.service.ServerCnx - handleEndTxnOnPartition fail!, topic persistent://public/default/eos-lwm-78ef54aa-partition-3, txnId: [(0,224)], txnAction: [COMMIT]
2026-11-30T16:37:08,700 [pulsar-io-20-1] WARN  org.apache.pulsar.broker.service.persistent.PersistentTopic - [persistent://public/default/other-topic-partition-2] Failed to persist msg in store
2026-11-30T16:37:09,076 [BookKeeperClientWorker-OrderedExecutor-1-0] WARN  org.apache.pulsar.broker.transaction.buffer.impl.TopicTransactionBuffer - Successes to abort low water mark for txn [(0,223)], topic [persistent://public/default/eos-lwm-78ef54aa-partition-2], lowWaterMark [225]
2026-11-30T16:37:09,089 [BookKeeperClientWorker-OrderedExecutor-1-0] WARN  org.apache.pulsar.broker.transaction.buffer.impl.TopicTransactionBuffer - Successes to abort low water mark for txn [(0,2230)], topic [persistent://public/default/eos-lwm-78ef54aa-partition-2], lowWaterMark [2231]
2026-11-30T16:37:09,090 [BookKeeperClientWorker-OrderedExecutor-1-0] WARN  org.apache.pulsar.broker.transaction.buffer.impl.TopicTransactionBuffer - Successes to abort low water mark for txn [(0,22)], topic [persistent://public/default/eos-lwm-78ef54aa-partition-2], lowWaterMark [25]
2026-11-30T16:37:11,320 [BookKeeperClientWorker-OrderedExecutor-1-0] ERROR org.apache.pulsar.broker.transaction.buffer.impl.TopicTransactionBuffer - Failed to commit for txn (0,329)
org.apache.bookkeeper.mledger.ManagedLedgerException$ManagedLedgerAlreadyClosedException: Managed ledger was already closed
2026-11-30T16:37:11,400 [pulsar-io-20-1] ERROR org.apache.pulsar.broker.service.ServerCnx - Send response error for END_TXN request 213.
org.apache.pulsar.transaction.coordinator.exceptions.CoordinatorException$TransactionNotFoundException: The transaction with this txdID `(0,219)`not found 
\tat org.apache.pulsar.transaction.coordinator.impl.MLTransactionMetadataStore.getTxnMeta(MLTransactionMetadataStore.java:230) ~[pulsar-transaction-coordinator-4.0.7.jar:4.0.7]
2026-11-30T16:37:11,500 [BookKeeperClientWorker-OrderedExecutor-1-0] ERROR org.apache.pulsar.transaction.coordinator.impl.MLTransactionMetadataStore - TxnID : (0,117) add update txn status error with TxnStatus : COMMITTING
org.apache.pulsar.transaction.coordinator.exceptions.CoordinatorException$InvalidTxnStatusException: Expect Txn `(0,117)` to be in OPEN status but it is in COMMITTING status
\tat org.apache.pulsar.transaction.coordinator.impl.TxnMetaImpl.checkTxnStatus(TxnMetaImpl.java:98) ~[pulsar-transaction-coordinator-4.0.7.jar:4.0.7]
Caused by: org.apache.pulsar.transaction.coordinator.exceptions.CoordinatorException$InvalidTxnStatusException: Expect Txn `(0,117)` to be in OPEN status but it is in COMMITTING status
\tat org.apache.pulsar.transaction.coordinator.impl.TxnMetaImpl.checkTxnStatus(TxnMetaImpl.java:98) ~[pulsar-transaction-coordinator-4.0.7.jar:4.0.7]
\t... 10 more
2026-11-30T16:37:11,600 [pulsar-io-20-1] INFO  org.apache.pulsar.broker.service.ServerCnx - [/127.0.0.1:36538] Closed connection (5,7) after (0,223) seconds
";

const FILE: &str = "logs/standalone.log";

fn files() -> Vec<LogFile<'static>> {
    vec![LogFile {
        node: "standalone",
        file: FILE,
        text: LOG,
    }]
}

fn line_of(needle: &str) -> u64 {
    LOG.lines().position(|l| l.contains(needle)).unwrap() as u64 + 1
}

fn only(txns: &[u64]) -> BTreeMap<TxnId, Vec<(u64, u64)>> {
    txns.iter().map(|l| (txn(*l), Vec::new())).collect()
}

#[test]
fn pulsars_ways_of_printing_a_transaction_id_are_read_whole() {
    assert_eq!(txn_ids_in("for txn [(0,957)], topic [t]"), vec![txn(957)]);
    assert_eq!(txn_ids_in("Expect Txn `(0,957)` to be"), vec![txn(957)]);
    assert_eq!(txn_ids_in("TxnId : (0,957), TxnAction : 1"), vec![txn(957)]);
    assert_eq!(
        txn_ids_in("TxnID(mostSigBits=0, leastSigBits=957)"),
        vec![txn(957)]
    );
    assert_eq!(
        txn_ids_in("TxnID{mostSigBits=3, leastSigBits=957}"),
        vec![TxnId {
            most: 3,
            least: 957
        }]
    );
    assert_eq!(
        txn_ids_in("[(1,2)] and (0,957)"),
        vec![txn(2).with_most(1), txn(957)]
    );
    // Regression: no prefix, no longer number, no other shape.
    assert_eq!(txn_ids_in("txn (0,95)"), vec![txn(95)]);
    assert!(!txn_ids_in("txn (0,9570)").contains(&txn(957)));
    assert!(!txn_ids_in("txn (10,957)").contains(&txn(957)));
    assert!(txn_ids_in("txn (0,957a) (0, 957) (0,-957) (,957) (0,)").is_empty());
    assert!(txn_ids_in("mostSigBits=0, somethingElse=1, leastSigBits=957").is_empty());
}

trait WithMost {
    fn with_most(self, most: u64) -> TxnId;
}

impl WithMost for TxnId {
    fn with_most(self, most: u64) -> TxnId {
        TxnId { most, ..self }
    }
}

#[test]
fn the_low_water_mark_abort_of_a_transaction_is_quoted_with_file_line_level_and_time() {
    let got = scan(&files(), &only(&[223]), "eos-lwm-78ef54aa");
    assert_eq!(got.len(), 1, "{got:#?}");
    let l = &got[0];
    assert_eq!(l.txn, txn(223));
    assert_eq!(l.named.len(), 1, "{got:#?}");
    let q = &l.named[0];
    assert_eq!(q.line, 11);
    assert_eq!(q.line, line_of("for txn [(0,223)]"));
    assert_eq!(q.node, "standalone");
    assert_eq!(q.file, FILE);
    assert_eq!(q.level, "WARN");
    assert_eq!(q.time, "2026-11-30T16:37:09,076");
    assert_eq!(
        q.message,
        "TopicTransactionBuffer: Successes to abort low water mark for txn [(0,223)], topic [persistent://public/default/eos-lwm-78ef54aa-partition-2], lowWaterMark [225]"
    );
    assert_eq!(
        q.to_string(),
        format!(
            "logs/standalone.log:11 2026-11-30T16:37:09,076 WARN {}",
            q.message
        )
    );
    // The INFO line that only happens to hold "(0,223)" speaks of no transaction.
    assert_eq!(l.named_more, 0);
    // No window given: nothing quoted as "during".
    assert!(l.during.is_empty());
}

#[test]
fn a_shorter_or_longer_id_is_not_the_same_transaction() {
    // The log names (0,22), (0,223), (0,224) and (0,2230); (0,2) and (0,95) appear nowhere.
    let got = scan(&files(), &only(&[2, 95, 2231]), "eos-lwm-78ef54aa");
    assert!(got.is_empty(), "{got:#?}");
    let got = scan(&files(), &only(&[22]), "eos-lwm-78ef54aa");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].named.len(), 1, "{got:#?}");
    assert!(got[0].named[0].message.contains("[(0,22)]"), "{got:#?}");
}

#[test]
fn an_id_inside_an_exception_is_quoted_with_its_entry() {
    let got = scan(&files(), &only(&[219, 117]), "eos-lwm-78ef54aa");
    assert_eq!(got.len(), 2, "{got:#?}");
    // (0,117): the entry's first line names it, and so do its exception and "Caused by":
    // one line, the first, with the exception that follows it.
    let a = &got[0];
    assert_eq!(a.txn, txn(117));
    assert_eq!(a.named.len(), 1, "{a:#?}");
    assert_eq!(a.named[0].line, line_of("TxnID : (0,117)"));
    assert_eq!(a.named[0].level, "ERROR");
    assert_eq!(
        a.named[0].message,
        "MLTransactionMetadataStore: TxnID : (0,117) add update txn status error with TxnStatus : COMMITTING | org.apache.pulsar.transaction.coordinator.exceptions.CoordinatorException$InvalidTxnStatusException: Expect Txn `(0,117)` to be in OPEN status but it is in COMMITTING status"
    );
    // (0,219): only the exception names it; the entry's first line gives level and time.
    let b = &got[1];
    assert_eq!(b.txn, txn(219));
    assert_eq!(b.named.len(), 1, "{b:#?}");
    assert_eq!(b.named[0].line, line_of("txdID `(0,219)`"));
    assert_eq!(b.named[0].level, "ERROR");
    assert_eq!(b.named[0].time, "2026-11-30T16:37:11,400");
    assert!(
        b.named[0].message.starts_with(
            "ServerCnx: Send response error for END_TXN request 213. | org.apache.pulsar.transaction.coordinator.exceptions.CoordinatorException$TransactionNotFoundException: The transaction with this txdID `(0,219)`not found"
        ),
        "{b:#?}"
    );
}

#[test]
fn warnings_about_the_topic_while_a_transaction_was_committing_are_quoted_as_during() {
    // (0,223) was open from 16:37:08,058 and learned its commit at 16:37:09,062.
    let from = parse_log_time("2026-11-30T16:37:08,058").unwrap();
    let to = parse_log_time("2026-11-30T16:37:09,062").unwrap();
    let q: BTreeMap<TxnId, Vec<(u64, u64)>> = [(txn(223), vec![(from, to)])].into();
    let got = scan(&files(), &q, "eos-lwm-78ef54aa");
    assert_eq!(got.len(), 1);
    let d = &got[0].during;
    // The persist failure and the endTxn error on partition 2; not the INFO lookup line, not
    // the line naming (0,224), not the other topic's line, nothing after 09,062.
    assert_eq!(
        d.iter().map(|l| l.line).collect::<Vec<_>>(),
        vec![2, 4],
        "{d:#?}"
    );
    assert_eq!(d[1].level, "ERROR");
    assert_eq!(
        d[1].message,
        "TransactionBufferHandlerImpl: endTxn error topic: [persistent://public/default/eos-lwm-78ef54aa-partition-2] | org.apache.pulsar.client.api.PulsarClientException$BrokerMetadataException: {\"errorMsg\":\"Namespace bundle public/default/0xc0000000_0xffffffff is being unloaded\",\"reqId\":2865807241694338434, \"remote\":\"127.0.0.1/127.0.0.1:6650\", \"local\":\"/127.0.0.1:36538\"}"
    );
    assert_eq!(got[0].named.len(), 1);
}

#[test]
fn lines_are_ordered_by_time_across_brokers_and_capped() {
    let mut a = String::new();
    let mut b = String::new();
    for i in 0..7 {
        a.push_str(&format!("2026-11-30T16:37:1{i},000 [t] ERROR org.apache.pulsar.broker.transaction.buffer.impl.TopicTransactionBuffer - Failed to append buffer to txn (0,5)\n"));
        b.push_str(&format!("2026-11-30T16:37:1{i},500 [t] ERROR org.apache.pulsar.broker.transaction.buffer.impl.TopicTransactionBuffer - Failed to append buffer to txn (0,5)\n"));
    }
    let logs = [
        LogFile {
            node: "broker-2",
            file: "logs/broker-2.log",
            text: &b,
        },
        LogFile {
            node: "broker-1",
            file: "logs/broker-1.log",
            text: &a,
        },
    ];
    let got = scan(&logs, &only(&[5]), "t");
    assert_eq!(got[0].named.len(), MAX_NAMED);
    assert_eq!(got[0].named_more, 14 - MAX_NAMED as u64);
    let order: Vec<(String, u64)> = got[0]
        .named
        .iter()
        .take(3)
        .map(|l| (l.node.clone(), l.line))
        .collect();
    assert_eq!(
        order,
        vec![
            ("broker-1".to_string(), 1),
            ("broker-2".to_string(), 1),
            ("broker-1".to_string(), 2)
        ]
    );
}

#[test]
fn a_long_line_is_cut() {
    let long = format!(
        "2026-11-30T16:37:10,000 [t] WARN  org.apache.pulsar.X - txn (0,5) {}\n",
        "x".repeat(2000)
    );
    let logs = [LogFile {
        node: "standalone",
        file: FILE,
        text: &long,
    }];
    let got = scan(&logs, &only(&[5]), "t");
    let m = &got[0].named[0].message;
    assert_eq!(m.chars().count(), MESSAGE_CHARS);
    assert!(
        m.starts_with("X: txn (0,5) xxx") && m.ends_with("..."),
        "{m}"
    );
}

#[test]
fn the_low_water_mark_abort_is_named_in_plain_words() {
    let from = parse_log_time("2026-11-30T16:37:08,058").unwrap();
    let to = parse_log_time("2026-11-30T16:37:09,062").unwrap();
    let q: BTreeMap<TxnId, Vec<(u64, u64)>> = [(txn(223), vec![(from, to)])].into();
    let got = scan(&files(), &q, "eos-lwm-78ef54aa");
    let cause = known_cause(&got[0]).unwrap();
    assert_eq!(
        cause,
        "the broker's transaction buffer aborted, by its low-water-mark rule, a transaction the coordinator had confirmed committed: (0,223) on eos-lwm-78ef54aa-partition-2 (logs/standalone.log:11); and while it was open or committing, the broker logged an end-transaction error (naming no transaction) for eos-lwm-78ef54aa-partition-2 (logs/standalone.log:4)"
    );
    // Other lines about a transaction are quoted, not named as a known cause.
    let got = scan(&files(), &only(&[117]), "eos-lwm-78ef54aa");
    assert_eq!(known_cause(&got[0]), None);
}

fn attempt(least: u64, opened: u64, outcome: Option<u64>) -> Opened {
    Opened {
        txn: txn(least),
        opened_ms: opened,
        outcome_ms: outcome,
    }
}

#[test]
fn attempts_become_transactions_with_wall_clock_windows() {
    let started = |t_ms, wall_ms| {
        Ok::<_, String>(Event {
            t_ms,
            body: EventBody::RunStarted {
                run_id: "r".into(),
                seed: 1,
                scenario: "s".into(),
                topic: "t".into(),
                partitions: 1,
                messages: 10,
                resend: "verify".into(),
                wall_ms,
            },
        })
    };
    // Started at Unix 1,000,000; resumed at t=50,000 after a pause of 20 s.
    let clock = WallClock::from_history(vec![
        started(0, 1_000_000),
        Err("a torn line".into()),
        started(50_000, 1_070_000),
    ]);
    assert_eq!(clock.unix_ms(6_230), Some(1_006_230));
    assert_eq!(clock.unix_ms(50_100), Some(1_070_100));
    assert_eq!(WallClock::default().unix_ms(5), None);
    let q = queries(
        [
            attempt(223, 6_230, Some(7_234)),
            attempt(224, 6_300, None),
            attempt(225, 49_000, Some(50_500)),
        ],
        &clock,
    );
    assert_eq!(q.len(), 3, "{q:?}");
    assert_eq!(q[&txn(223)], vec![(1_006_230, 1_007_234)]);
    assert_eq!(q[&txn(224)], vec![], "no outcome: named lines only");
    assert_eq!(q[&txn(225)], vec![(1_049_000, 1_070_500)]);
}
