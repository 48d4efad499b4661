use crate::checker::test_support::*;
use crate::checker::{verdict, Cause, Context, Span, Status};
use crate::history::{Event, EventBody, Outcome, TxnId};

#[test]
fn duplicates_are_attributed_to_the_ambiguous_commit_and_the_fault() {
    let mut v: Vec<u64> = (0..10).collect();
    v.extend(0..10);
    let f = tally_of(10, &v);
    let verdict = verdict(f, Some(ok(history_19629())), &Context::default());
    assert_eq!(verdict.status, Status::Violation);
    assert_eq!(verdict.duplicates.len(), 1);
    let d = &verdict.duplicates[0];
    assert_eq!(d.attempts, vec![1, 2]);
    assert_eq!(d.cause, Cause::Ambiguity);
    assert!(
        d.explanation.contains("the first commit had applied"),
        "{}",
        d.explanation
    );
    assert!(
        d.evidence
            .iter()
            .any(|e| e.contains("faults active: restart")),
        "{:?}",
        d.evidence
    );
    let a1 = verdict.attempts.iter().find(|a| a.attempt == 1).unwrap();
    assert_eq!(a1.outcome, Some(Outcome::Ambiguous));
    assert!(a1.resent);
    assert_eq!(a1.faults, vec!["restart".to_string()]);
    assert_eq!(verdict.faults[0].recovery_ms, Some(20));
    assert!(
        verdict.summary.starts_with("VIOLATION"),
        "{}",
        verdict.summary
    );
}

/// Regression: a read-back held up by a transaction left open on a partition said of every
/// committed-but-unread number that "the broker lost committed data".
#[test]
fn unread_numbers_of_an_incomplete_readback_are_not_called_lost() {
    let f = tally_of(10, &(5..10).collect::<Vec<_>>());
    let h = committed_0_to_10(5);
    let ctx = Context {
        readback_incomplete: Some("1 transaction(s) still open on the topic after 50s".into()),
        ..Context::default()
    };
    let v = verdict(f, Some(ok(h)), &ctx);
    assert_eq!(v.status, Status::Inconclusive);
    let e = &v.missing[0].explanation;
    assert!(
        e.starts_with("not read: the read-back is incomplete (1 transaction(s) still open"),
        "{e}"
    );
    assert!(!e.contains("lost"), "{e}");
    assert_eq!(v.missing[0].cause, Cause::Harness);
    assert!(
        v.missing[0].evidence[0].contains("committed"),
        "{:?}",
        v.missing[0].evidence
    );
}

#[test]
fn committed_but_missing_blames_the_broker() {
    let f = tally_of(10, &(5..10).collect::<Vec<_>>());
    let mut h = committed_0_to_10(9);
    h.push(ev(
        10,
        EventBody::ProducerFinished {
            committed: 1,
            aborted: 0,
            ambiguous: 0,
            messages_committed: 10,
            complete: true,
            detail: String::new(),
        },
    ));
    let v = verdict(f, Some(ok(h)), &Context::default());
    assert_eq!(v.status, Status::Violation);
    assert_eq!(v.missing[0].what, Span { start: 0, end: 5 });
    assert!(
        v.missing[0].explanation.contains("lost committed data"),
        "{}",
        v.missing[0].explanation
    );
}

#[test]
fn withheld_ambiguous_commit_explains_a_gap() {
    let f = tally_of(10, &(5..10).collect::<Vec<_>>());
    let h = vec![
        ev(
            0,
            EventBody::TxnOpened {
                attempt: 1,
                txn: T1,
                numbers: vec![(0, 5)],
                resend_of: None,
            },
        ),
        ev(
            9,
            EventBody::TxnOutcome {
                attempt: 1,
                txn: T1,
                outcome: Outcome::Ambiguous,
                detail: "timeout".into(),
            },
        ),
        ev(
            9,
            EventBody::ResendWithheld {
                attempt: 1,
                numbers: vec![(0, 5)],
                reason: "retry-commit".into(),
            },
        ),
        ev(
            10,
            EventBody::ProducerFinished {
                committed: 0,
                aborted: 0,
                ambiguous: 1,
                messages_committed: 5,
                complete: true,
                detail: String::new(),
            },
        ),
    ];
    let v = verdict(f, Some(ok(h)), &Context::default());
    assert!(
        v.missing[0].explanation.contains("withheld"),
        "{}",
        v.missing[0].explanation
    );
    assert_eq!(v.producer.unwrap().withheld, 1);
}

#[test]
fn message_ids_of_duplicates_are_carried() {
    let f = tally_of(3, &[0, 1, 1, 2]);
    let mut ctx = Context::default();
    ctx.duplicate_ids.insert(1, vec![id(1), id(2)]);
    let v = verdict(f, None::<Vec<Result<Event, String>>>, &ctx);
    assert_eq!(v.duplicates[0].what.message_ids[&1], vec![id(1), id(2)]);
    let json = serde_json::to_string(&v).unwrap();
    assert!(json.contains("\"status\":\"mismatch\""));
}

#[test]
fn a_reply_the_harness_dropped_is_quoted_as_evidence() {
    let mut h = history_19629();
    h.insert(
        2,
        ev(
            9,
            EventBody::ReplyDropped {
                fault: "lose-commit-reply#1".into(),
                command: "END_TXN_RESPONSE".into(),
                request_id: 7,
                txn: Some(T1),
            },
        ),
    );
    let v = grade(&twice(), h, &Context::default());
    assert_eq!(v.duplicates[0].cause, Cause::Ambiguity);
    assert!(
        v.duplicates[0].evidence[0].contains("END_TXN_RESPONSE dropped by lose-commit-reply#1"),
        "{:?}",
        v.duplicates[0].evidence
    );
}

// ---- Broker log lines quoted under anomalies (issue 18) ----

fn lwm_line(txn: TxnId, line: u64) -> crate::brokerlog::TxnLog {
    crate::brokerlog::TxnLog {
        txn,
        named: vec![crate::brokerlog::BrokerLine {
            node: "standalone".into(),
            file: "logs/standalone.log".into(),
            line,
            level: "WARN".into(),
            time: "2026-11-30T16:37:09,076".into(),
            message: format!("TopicTransactionBuffer: Successes to abort low water mark for txn [{txn}], topic [persistent://public/default/eos-lwm-78ef54aa-partition-2], lowWaterMark [225]"),
        }],
        named_more: 0,
        during: Vec::new(),
        during_more: 0,
    }
}

/// A transaction confirmed committed, its numbers gone, and the broker's line saying its
/// transaction buffer aborted it: the line is quoted under the anomaly and named in words.
#[test]
fn a_lost_committed_transaction_quotes_the_brokers_low_water_mark_abort() {
    let h: Vec<Event> = committed_0_to_10(5)
        .into_iter()
        .chain([finished(6, true)])
        .collect();
    let ctx = Context {
        broker_log: vec![lwm_line(T1, 599), lwm_line(T2, 600)],
        ..Context::default()
    };
    let v = grade(&(5..10).collect::<Vec<_>>(), h.clone(), &ctx);
    assert_eq!(v.status, Status::Violation);
    let m = &v.missing[0];
    assert_eq!(m.cause, Cause::Pulsar);
    // Only the lines of the anomaly's own transaction.
    assert_eq!(m.broker_log, vec![lwm_line(T1, 599)]);
    assert!(
        m.explanation.starts_with(
            "transaction #1 (0,1) was confirmed committed by the coordinator (END_TXN COMMIT answered success), yet its numbers are not readable: Pulsar lost committed data; the broker's transaction buffer aborted, by its low-water-mark rule, a transaction the coordinator had confirmed committed: (0,1) on eos-lwm-78ef54aa-partition-2 (logs/standalone.log:599)"
        ),
        "{}",
        m.explanation
    );
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(
        json["missing"][0]["broker_log"][0]["named"][0]["line"], 599,
        "{json}"
    );
    // Without lines: the explanation as before, and no `broker_log` key in verdict.json.
    let plain = grade(&(5..10).collect::<Vec<_>>(), h, &Context::default());
    assert!(plain.missing[0].broker_log.is_empty());
    assert!(!plain.missing[0].explanation.contains("low-water-mark"));
    assert!(!serde_json::to_string(&plain)
        .unwrap()
        .contains("broker_log"));
}

fn cursor_back(after_ms: u64, reopened: &[&str]) -> crate::txnlog::CursorStepBack {
    crate::txnlog::CursorStepBack {
        coordinator: 0,
        log: "pulsar/system/persistent/__transaction_log_0".into(),
        cursor: "transaction.subscription".into(),
        before_ms: after_ms - 12_000,
        before: "3:1099".into(),
        after_ms,
        after: "3:961".into(),
        reopened: reopened.iter().map(|r| r.to_string()).collect(),
        reopened_entries: Some(98),
    }
}

/// The coordinator-kill finding: a committed transaction lost, and the runner's watch of the
/// transaction log saw its cursor go back after the commit. The admin API's views are quoted
/// under the loss; a step back before the commit, or one that reopened nothing, is not.
#[test]
fn a_lost_committed_transaction_quotes_a_transaction_log_cursor_that_went_back_after_it() {
    let h: Vec<Event> = committed_0_to_10(5_000)
        .into_iter()
        .chain([finished(60_000, true)])
        .collect();
    let read: Vec<u64> = (5..10).collect();
    let ctx = Context {
        txnlog_steps: vec![
            cursor_back(4_000, &["(3:1..3:5]"]),
            cursor_back(20_000, &[]),
            cursor_back(34_100, &["(3:961..3:963]", "(3:965..3:1061]"]),
        ],
        ..Context::default()
    };
    let v = grade(&read, h.clone(), &ctx);
    let m = &v.missing[0];
    assert_eq!(m.cause, Cause::Pulsar);
    assert!(
        m.explanation.ends_with(
            "Pulsar lost committed data; after these commits, coordinator 0's transaction log pulsar/system/persistent/__transaction_log_0 (admin API coordinatorInternalStats): cursor transaction.subscription had markDeletePosition 3:1099 at t=22100 ms and came back at 3:961 at t=34100 ms; 98 entries it had acknowledged were unacknowledged again ((3:961..3:963], (3:965..3:1061]), so the recovering coordinator replays them (see docs/findings/committed-then-aborted-after-coordinator-kills.md)"
        ),
        "{}",
        m.explanation
    );
    // Only steps before the commit: nothing quoted. The context keeps them (recheck).
    let early = Context {
        txnlog_steps: vec![cursor_back(4_000, &["(3:1..3:5]"])],
        ..Context::default()
    };
    let v = grade(&read, h, &early);
    assert!(
        !v.missing[0].explanation.contains("came back"),
        "{}",
        v.missing[0].explanation
    );
    let json = serde_json::to_value(&early).unwrap();
    assert_eq!(json["txnlog_steps"][0]["after"], "3:961", "{json}");
    assert!(!serde_json::to_string(&Context::default())
        .unwrap()
        .contains("txnlog_steps"));
}

/// Regression guard: broker lines are evidence, never a cause. An attempt that learned no
/// outcome stays the harness's (inconclusive) even when the broker says it aborted it.
#[test]
fn broker_lines_never_turn_a_harness_anomaly_into_pulsars() {
    let h = vec![opened(0, 1, T1, vec![(0, 10)], None), finished(6, false)];
    let ctx = Context {
        broker_log: vec![lwm_line(T1, 42)],
        ..Context::default()
    };
    let v = grade(&[], h, &ctx);
    assert_eq!(v.status, Status::Inconclusive);
    assert_eq!(v.missing[0].cause, Cause::Harness);
    assert!(!v.missing[0].explanation.contains("low-water-mark"));
    assert_eq!(v.missing[0].broker_log, vec![lwm_line(T1, 42)]);
}

#[test]
fn duplicates_quote_the_lines_of_their_transactions() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(1, 1, T1, Outcome::Committed, "ok"),
        opened(2, 2, T2, vec![(0, 10)], None),
        outcome(3, 2, T2, Outcome::Committed, "ok"),
        finished(4, true),
    ];
    let t3 = TxnId { most: 0, least: 3 };
    let ctx = Context {
        broker_log: vec![lwm_line(T2, 7), lwm_line(t3, 8)],
        ..Context::default()
    };
    let v = grade(&twice(), h, &ctx);
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
    assert_eq!(v.duplicates[0].broker_log, vec![lwm_line(T2, 7)]);
    // A duplicate's explanation names no known cause (the pattern is about lost commits).
    assert!(!v.duplicates[0].explanation.contains("low-water-mark"));
}

/// A duplicate inside one committed transaction of an official client's run: the client
/// library's resend with deduplication off (its own cause, still a violation), Pulsar's with
/// it on, nobody's when the broker did not say.
#[test]
fn a_duplicate_within_one_transaction_of_an_official_client_is_graded_by_the_deduplication_policy()
{
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(
            1,
            1,
            T1,
            Outcome::Committed,
            "java client: commit() completed normally",
        ),
        finished(2, true),
    ];
    let ctx = |dedup: Option<bool>| Context {
        client: Some(crate::checker::ClientContext {
            client: "java".into(),
            deduplication: dedup,
            evidence: "deduplicationStatus Disabled on 4 partition(s)".into(),
        }),
        ..Context::default()
    };
    let off = grade(&twice(), h.clone(), &ctx(Some(false)));
    assert_eq!(off.duplicates[0].cause, Cause::ClientResend);
    assert_eq!(off.status, Status::Violation);
    assert!(
        off.duplicates[0]
            .explanation
            .contains("documented behaviour"),
        "{off:?}"
    );
    assert!(off.duplicates[0]
        .explanation
        .contains("deduplicationStatus Disabled"));
    let on = grade(&twice(), h.clone(), &ctx(Some(true)));
    assert_eq!(on.duplicates[0].cause, Cause::Pulsar);
    let unknown = grade(&twice(), h.clone(), &ctx(None));
    assert_eq!(unknown.duplicates[0].cause, Cause::Harness);
    assert_eq!(unknown.status, Status::Inconclusive);
    // The own client never resends inside a transaction: Pulsar's, as before.
    let own = grade(&twice(), h, &Context::default());
    assert_eq!(own.duplicates[0].cause, Cause::Pulsar);
}

fn client_ctx(client: &str, dedup: Option<bool>) -> Context {
    Context {
        client: Some(crate::checker::ClientContext {
            client: client.into(),
            deduplication: dedup,
            evidence: "the partitions' stats say deduplicationStatus partition 0: Disabled".into(),
        }),
        ..Context::default()
    }
}

/// A lost commit says what the harness saw of the commit with the run's client: the
/// coordinator's END_TXN answer for the own client, the client's own call for an official one
/// (whose wire the harness does not see).
#[test]
fn a_lost_commit_says_what_was_seen_of_the_commit_with_each_client() {
    let h: Vec<Event> = committed_0_to_10(5)
        .into_iter()
        .chain([finished(6, true)])
        .collect();
    let lost = |ctx: &Context| {
        let v = grade(&(5..10).collect::<Vec<_>>(), h.clone(), ctx);
        assert_eq!(v.status, Status::Violation);
        assert_eq!(v.missing[0].cause, Cause::Pulsar);
        v.missing[0].explanation.clone()
    };
    let own = lost(&Context::default());
    assert!(
        own.starts_with("transaction #1 (0,1) was confirmed committed by the coordinator (END_TXN COMMIT answered success), yet its numbers are not readable"),
        "{own}"
    );
    let java = lost(&client_ctx("java", Some(false)));
    assert!(
        java.starts_with("transaction #1 (0,1) was confirmed committed by the java client (its commit() completed normally), yet its numbers are not readable"),
        "{java}"
    );
    let go = lost(&client_ctx("go", Some(false)));
    assert!(
        go.starts_with("transaction #1 (0,1) was confirmed committed by the go client (its Commit() returned no error), yet its numbers are not readable"),
        "{go}"
    );
    for e in [&java, &go] {
        assert!(!e.contains("END_TXN"), "{e}");
    }
    // `client: own` in the context (not written by the runner, but a valid name) is the own.
    assert_eq!(lost(&client_ctx("own", None)), own);
}

/// One partition's share of a committed transaction (numbers go to partition `n % 4`, so
/// every 4th number) stored twice by the client's resend is one entry with its ranges, not a
/// range per number; contiguous stretches inside it are joined; another transaction's share
/// is an entry of its own.
#[test]
fn a_client_resend_of_one_partitions_share_is_one_entry() {
    let t2 = TxnId { most: 0, least: 2 };
    let h = vec![
        opened(0, 1, T1, vec![(0, 100)], None),
        outcome(
            1,
            1,
            T1,
            Outcome::Committed,
            "java client: commit() completed normally",
        ),
        opened(2, 2, t2, vec![(100, 200)], None),
        outcome(
            3,
            2,
            t2,
            Outcome::Committed,
            "java client: commit() completed normally",
        ),
        finished(4, true),
    ];
    // Transaction 1: partition 2's share, and numbers 40, 41 (partitions 0 and 1 of one
    // batch) besides: [40, 42) is contiguous. Transaction 2: partition 3's share.
    let mut dups: Vec<u64> = (0..100).step_by(4).map(|n| n + 2).collect();
    dups.extend([40, 41]);
    dups.extend((100..200).step_by(4).map(|n| n + 3));
    let read: Vec<u64> = (0..200).chain(dups.iter().copied()).collect();
    let v = verdict(
        tally_of(200, &read),
        Some(ok(h)),
        &client_ctx("java", Some(false)),
    );
    assert_eq!(v.status, Status::Violation);
    assert_eq!(v.duplicates.len(), 2, "{:?}", v.duplicates);
    let (a, b) = (&v.duplicates[0], &v.duplicates[1]);
    assert_eq!(
        (a.cause, b.cause),
        (Cause::ClientResend, Cause::ClientResend)
    );
    assert_eq!(a.attempts, vec![1]);
    assert_eq!(b.attempts, vec![2]);
    assert_eq!((a.what.start, a.what.end), (2, 99));
    assert_eq!(a.what.numbers(), 27);
    let spans: Vec<(u64, u64)> = a.what.ranges.iter().map(|s| (s.start, s.end)).collect();
    assert_eq!(spans.len(), 25, "{spans:?}");
    assert_eq!(&spans[..3], &[(2, 3), (6, 7), (10, 11)]);
    assert!(spans.contains(&(40, 43)), "{spans:?}");
    assert_eq!(a.what.to_string(), "27 numbers of [2, 99): 2, 6, …, 98");
    assert_eq!((b.what.start, b.what.end, b.what.numbers()), (103, 200, 25));
    // Graded as two ranges of 52 numbers.
    let c = &v.graded.by_cause[&Cause::ClientResend];
    assert_eq!((c.ranges, c.numbers), (2, 52));
    assert_eq!(v.graded.duplicate_ranges, 2);
    // verdict.json: the ranges, and it reads back.
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["duplicates"][0]["ranges"][0]["start"], 2, "{json}");
    assert!(json["duplicates"][0].get("ranges").is_some());
    let back: crate::checker::Verdict = serde_json::from_value(json).unwrap();
    assert_eq!(back.duplicates, v.duplicates);
}

/// A contiguous duplicate keeps its one range and no `ranges` key, as before.
#[test]
fn a_contiguous_duplicate_has_no_ranges() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(1, 1, T1, Outcome::Committed, "ok"),
        finished(2, true),
    ];
    let v = grade(&twice(), h, &client_ctx("go", Some(false)));
    assert_eq!(v.duplicates.len(), 1);
    assert!(v.duplicates[0].what.ranges.is_empty());
    assert_eq!(v.duplicates[0].what.to_string(), "[0, 10)");
    let json = serde_json::to_value(&v).unwrap();
    assert!(json["duplicates"][0].get("ranges").is_none(), "{json}");
}

/// The own client's (and the sabotage's) ranges are listed one by one, as before: only a
/// foreign client's resend inside one transaction is joined.
#[test]
fn strided_duplicates_of_the_own_client_stay_one_range_each() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 100)], None),
        outcome(
            1,
            1,
            T1,
            Outcome::Committed,
            "END_TXN COMMIT answered success",
        ),
        finished(2, true),
    ];
    let read: Vec<u64> = (0..100).chain((0..100).step_by(4)).collect();
    let v = verdict(tally_of(100, &read), Some(ok(h)), &Context::default());
    assert_eq!(v.duplicates.len(), 25);
    assert!(v.duplicates.iter().all(|d| d.what.ranges.is_empty()));
    assert!(v.duplicates.iter().all(|d| d.cause == Cause::Pulsar));
}

/// Numbers of a transaction an official client aborted are readable twice (the aborted copy
/// and the committed resend): when the copies read name no transaction in their metadata, the
/// client never put it there (apache/pulsar-client-go#1498) and the cause names the client;
/// when a copy names the aborted transaction, the broker delivered an aborted message: Pulsar's.
/// Without the record (an old read-back) or with the own client, Pulsar's as before.
#[test]
fn readable_aborted_numbers_without_a_txn_id_in_their_metadata_are_the_clients() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(
            1,
            1,
            T1,
            Outcome::Aborted,
            "go client: Abort() returned no error",
        ),
        opened(2, 2, T2, vec![(0, 10)], Some(1)),
        outcome(
            3,
            2,
            T2,
            Outcome::Committed,
            "go client: Commit() returned no error",
        ),
        finished(4, true),
    ];
    let md = |first: Option<TxnId>, second: Option<TxnId>| {
        Some((0..10).map(|v| (v, vec![first, second])).collect())
    };
    let ctx = |client: &str, metadata_txns| Context {
        metadata_txns,
        ..client_ctx(client, Some(false))
    };
    // The go client: no copy names a transaction.
    let v = grade(&twice(), h.clone(), &ctx("go", md(None, None)));
    assert_eq!(v.status, Status::Violation);
    assert_eq!(v.duplicates.len(), 1);
    let d = &v.duplicates[0];
    assert_eq!(d.cause, Cause::ClientNoTxnMetadata);
    assert_eq!(d.attempts, vec![1, 2]);
    for words in [
        "all 20 copies read of these numbers carry no transaction id in their metadata",
        "although the go client sent them in transaction (0,1)",
        "the broker delivers a message whose metadata names no transaction as non-transactional (apache/pulsar-client-go#1498)",
    ] {
        assert!(d.explanation.contains(words), "{words}: {}", d.explanation);
    }
    assert_eq!(
        v.graded.by_cause.keys().collect::<Vec<_>>(),
        vec![&Cause::ClientNoTxnMetadata]
    );
    assert!(v.summary.contains("client_txn_metadata"), "{}", v.summary);
    let json = serde_json::to_string(&v).unwrap();
    assert!(json.contains(r#""cause":"client_txn_metadata""#), "{json}");
    let back: crate::checker::Verdict = serde_json::from_str(&json).unwrap();
    assert_eq!(back, v);
    // The committed resend names its transaction, the aborted copy none: still the client's.
    let v = grade(&twice(), h.clone(), &ctx("java", md(None, Some(T2))));
    assert_eq!(v.duplicates[0].cause, Cause::ClientNoTxnMetadata);
    assert!(
        v.duplicates[0].explanation.contains("10 of the 20 copies"),
        "{}",
        v.duplicates[0].explanation
    );
    assert!(!v.duplicates[0].explanation.contains("#1498"));
    // A copy names the aborted transaction: the broker delivered an aborted message.
    let v = grade(&twice(), h.clone(), &ctx("go", md(Some(T1), Some(T2))));
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
    let v = grade(&twice(), h.clone(), &ctx("go", md(Some(T1), None)));
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
    // Every copy names the committed resend: the aborted attempt wrote nothing that was read,
    // and the duplicate is that one transaction's (graded by the deduplication policy: the
    // test below).
    let v = grade(&twice(), h.clone(), &ctx("go", md(Some(T2), Some(T2))));
    assert_eq!(v.duplicates[0].cause, Cause::ClientResend);
    // No record (a read-back stored before it existed), or a number missing from it.
    let v = grade(&twice(), h.clone(), &ctx("go", None));
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
    let mut partial = md(None, None).unwrap();
    partial.remove(&4);
    let v = grade(&twice(), h.clone(), &ctx("go", Some(partial)));
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
    // The own client: Pulsar's, as before.
    let v = grade(
        &twice(),
        h,
        &Context {
            metadata_txns: md(None, None),
            ..Context::default()
        },
    );
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
}

/// The aborted first attempt's numbers sent again, and the two copies read both name the
/// resend's transaction (the Java client's producer sent its pending batch again after an
/// unload, deduplication off): one transaction wrote both, so the cause is the client's
/// resend, not "an aborted transaction's messages are readable" (Pulsar's). Regression: a run
/// of the stuck END_TXN recipe through the Java client on 4.0.7 (2026-12-06) graded 35 such
/// ranges `pulsar`, although no copy read named any aborted transaction. The copies' names
/// only narrow what the history says: a name the history does not know, a copy without one,
/// or a copy of each attempt leave the grading as it was.
#[test]
fn a_duplicate_whose_copies_all_name_the_resend_is_that_transactions() {
    let h = |first: Outcome, detail: &str| {
        vec![
            opened(0, 1, T1, vec![(0, 10)], None),
            outcome(1, 1, T1, first, detail),
            opened(2, 2, T2, vec![(0, 10)], Some(1)),
            outcome(
                3,
                2,
                T2,
                Outcome::Committed,
                "java client: commit() completed normally",
            ),
            finished(4, true),
        ]
    };
    let aborted = h(
        Outcome::Aborted,
        "deliberate: every 2th transaction's first attempt is aborted (abort_every); no commit was sent, so it cannot commit",
    );
    let md =
        |first: Option<TxnId>, second: Option<TxnId>| -> Option<crate::checker::MetadataTxns> {
            Some((0..10).map(|v| (v, vec![first, second])).collect())
        };
    let ctx = |dedup: Option<bool>, metadata_txns| Context {
        metadata_txns,
        ..client_ctx("java", dedup)
    };
    let v = grade(
        &twice(),
        aborted.clone(),
        &ctx(Some(false), md(Some(T2), Some(T2))),
    );
    assert_eq!(v.status, Status::Violation);
    let d = &v.duplicates[0];
    assert_eq!(d.cause, Cause::ClientResend, "{}", d.explanation);
    assert_eq!(d.attempts, vec![1, 2]);
    for words in [
        "every copy read of these numbers names transaction #2 (0,2) in its metadata (the harness also sent them in #1 (0,1), none of whose copies was read)",
        "the java client's producer sends its pending messages again after a reconnect",
    ] {
        assert!(d.explanation.contains(words), "{words}: {}", d.explanation);
    }
    assert!(
        !d.explanation.contains("sent them once"),
        "{}",
        d.explanation
    );
    assert_eq!(
        v.graded.by_cause.keys().collect::<Vec<_>>(),
        vec![&Cause::ClientResend]
    );
    // Deduplication on: Pulsar delivered that transaction's message twice.
    let v = grade(
        &twice(),
        aborted.clone(),
        &ctx(Some(true), md(Some(T2), Some(T2))),
    );
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
    assert!(v.duplicates[0]
        .explanation
        .contains("names transaction #2 (0,2)"));
    // The broker did not say: nothing is claimed.
    let v = grade(
        &twice(),
        aborted.clone(),
        &ctx(None, md(Some(T2), Some(T2))),
    );
    assert_eq!(v.duplicates[0].cause, Cause::Harness);
    // A copy names the aborted transaction: the broker delivered an aborted message.
    let v = grade(
        &twice(),
        aborted.clone(),
        &ctx(Some(false), md(Some(T1), Some(T2))),
    );
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
    assert!(v.duplicates[0].explanation.contains("ended aborted"));
    // A name the history does not know: the history's grading, as before.
    let t3 = TxnId { most: 0, least: 3 };
    let v = grade(
        &twice(),
        aborted.clone(),
        &ctx(Some(false), md(Some(T2), Some(t3))),
    );
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
    // An ambiguous first attempt whose copies were not read: its commit did not apply (no
    // copy names it), so the resend is not what duplicated the numbers.
    let ambiguous = history_19629();
    let v = grade(
        &twice(),
        ambiguous.clone(),
        &ctx(Some(false), md(Some(T2), Some(T2))),
    );
    assert_eq!(
        v.duplicates[0].cause,
        Cause::ClientResend,
        "{}",
        v.duplicates[0].explanation
    );
    // A copy of each: the ambiguous commit applied and the resend duplicated it.
    let v = grade(
        &twice(),
        ambiguous,
        &ctx(Some(false), md(Some(T1), Some(T2))),
    );
    assert_eq!(v.duplicates[0].cause, Cause::Ambiguity);
    // The own client, both copies naming the resend: Pulsar delivered its message twice.
    let v = grade(
        &twice(),
        aborted,
        &Context {
            metadata_txns: md(Some(T2), Some(T2)),
            ..Context::default()
        },
    );
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
    assert!(v.duplicates[0]
        .explanation
        .contains("names transaction #2 (0,2) in its metadata"));
}
