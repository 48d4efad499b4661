//! Issue 13, step 1: the consumer side of transactions on the harness's own client, against a
//! real Pulsar. Two acks of one message in two open transactions: the second is refused as a
//! conflict (for a plain entry and for one member of a batch) and the first commits. Acks in a
//! transaction that is aborted: the messages come again, and acked in a committed transaction
//! they leave the subscription's backlog.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use pulsar::message::proto::{MessageIdData, ServerError, TxnAction};
use pulsar_chaos::admin::Admin;
use pulsar_chaos::history::TxnId;
use pulsar_chaos::txn::consumer::{
    classify_ack, AckAnswer, AckKind, ConsumerOptions, Received, SubType, TxnConsumer,
};
use pulsar_chaos::txn::coordinator::Coordinators;
use pulsar_chaos::txn::producer::PartitionProducer;
use pulsar_chaos::txn::Client;

use crate::common::*;

const SUB: &str = "ctp";

fn deadline(secs: u64) -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(secs)
}

fn number(r: &Received) -> u64 {
    pulsar_chaos::checker::parse_number(&r.payload).expect("a number payload")
}

/// Publish `from..to` as plain (non-transactional) messages, one entry each.
async fn publish(client: &Arc<Client>, topic: &str, from: u64, to: u64) -> PartitionProducer {
    let p = PartitionProducer::new(client.clone(), topic, "ctp-it", false);
    for n in from..to {
        p.send(None, n.to_string().into_bytes(), Duration::from_secs(10))
            .await
            .unwrap();
    }
    p
}

/// Receive until every number of `want` has come (copies allowed), or fail after `secs`.
async fn receive_all(c: &mut TxnConsumer, want: &BTreeSet<u64>, secs: u64) -> Vec<Received> {
    let until = deadline(secs);
    let mut got = Vec::new();
    let mut seen = BTreeSet::new();
    while !want.is_subset(&seen) {
        let left = until.saturating_duration_since(tokio::time::Instant::now());
        match c.receive(left).await.unwrap() {
            Some(m) => {
                seen.insert(number(&m));
                got.push(m);
            }
            None => panic!("within {secs}s only {seen:?} came of {want:?}"),
        }
    }
    got
}

fn by_number(got: &[Received], n: u64) -> MessageIdData {
    got.iter()
        .find(|m| number(m) == n)
        .unwrap_or_else(|| panic!("{n} not received"))
        .id
        .clone()
}

async fn open(tcs: &Coordinators, topic: &str) -> TxnId {
    let txn = tcs
        .new_txn(Duration::from_secs(60), deadline(30))
        .await
        .unwrap();
    tcs.add_subscriptions(txn, &[(topic.to_string(), SUB.to_string())], deadline(30))
        .await
        .unwrap();
    txn
}

async fn backlog(admin: &Admin, topic: &str) -> Option<u64> {
    let stats = admin.topic_stats(topic).await.ok()?;
    stats["subscriptions"][SUB]["msgBacklog"].as_u64()
}

/// Wait until the subscription's backlog is `want`; fail with the last value after `secs`.
async fn wait_backlog(admin: &Admin, topic: &str, want: u64, secs: u64) {
    let until = deadline(secs);
    loop {
        let b = backlog(admin, topic).await;
        if b == Some(want) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < until,
            "the backlog of {SUB} on {topic} stayed {b:?}, expected {want}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// (a) Message 0 acked in A, then in B: B is refused with TransactionConflict, B can still ack
/// another message, A commits. The same for member 0 of a batched entry, while member 1 of
/// that entry is B's to take.
async fn conflict_probe(client: &Arc<Client>, tcs: &Coordinators, admin: &Admin) {
    let topic = format!("persistent://public/default/ctp-conflict-{}", rand_id());
    let producer = publish(client, &topic, 0, 10).await;
    producer
        .send_batch(
            None,
            (10..14u64).map(|n| n.to_string().into_bytes()).collect(),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
    let opts = ConsumerOptions {
        sub_type: SubType::Shared,
        ..Default::default()
    };
    let mut consumer = TxnConsumer::subscribe(client, &topic, SUB, opts)
        .await
        .unwrap();
    let got = receive_all(&mut consumer, &(0..14).collect(), 30).await;
    let (a, b) = (open(tcs, &topic).await, open(tcs, &topic).await);
    for (first, second, other) in [(0, 0, 1), (10, 10, 11)] {
        let (first, second, other) = (
            by_number(&got, first),
            by_number(&got, second),
            by_number(&got, other),
        );
        let r = consumer.ack(Some(a), &[first], AckKind::Individual).await;
        assert!(matches!(classify_ack(&r), AckAnswer::Acked(_)), "{r:?}");
        let r = consumer.ack(Some(b), &[second], AckKind::Individual).await;
        assert_eq!(
            r.as_ref().err().and_then(|e| e.server_code()),
            Some(ServerError::TransactionConflict),
            "the second ack of one message must be refused: {r:?}"
        );
        assert!(matches!(classify_ack(&r), AckAnswer::Refused(_)), "{r:?}");
        let r = consumer.ack(Some(b), &[other], AckKind::Individual).await;
        assert!(matches!(classify_ack(&r), AckAnswer::Acked(_)), "{r:?}");
    }
    tcs.end_txn(a, TxnAction::Commit).await.unwrap();
    tcs.end_txn(b, TxnAction::Abort).await.unwrap();
    // A's plain ack applied; B's were aborted: 9 plain messages and the batch are left (the
    // batch's count depends on batch-index acks, so only the plain part is asserted).
    let until = deadline(10);
    loop {
        let left = backlog(admin, &topic).await;
        if matches!(left, Some(n) if (9..=13).contains(&n)) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < until,
            "backlog after A committed and B aborted: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    consumer.close().await.unwrap();
}

/// (b) Acks in C, C aborted: REDELIVER_UNACKNOWLEDGED_MESSAGES brings the messages back; acked
/// in D, they are still in the backlog until D commits, then the backlog is 0.
async fn abort_redelivers(client: &Arc<Client>, tcs: &Coordinators, admin: &Admin) {
    let topic = format!("persistent://public/default/ctp-abort-{}", rand_id());
    publish(client, &topic, 0, 10).await;
    let opts = ConsumerOptions {
        sub_type: SubType::Shared,
        ..Default::default()
    };
    let mut consumer = TxnConsumer::subscribe(client, &topic, SUB, opts)
        .await
        .unwrap();
    let want: BTreeSet<u64> = (0..10).collect();
    let got = receive_all(&mut consumer, &want, 30).await;
    let ids: Vec<MessageIdData> = got.iter().map(|m| m.id.clone()).collect();
    let c = open(tcs, &topic).await;
    let r = consumer.ack(Some(c), &ids, AckKind::Individual).await;
    assert!(matches!(classify_ack(&r), AckAnswer::Acked(_)), "{r:?}");
    tcs.end_txn(c, TxnAction::Abort).await.unwrap();
    consumer.redeliver_unacknowledged(&[]).unwrap();
    let again = receive_all(&mut consumer, &want, 30).await;
    eprintln!(
        "redelivered after the abort: {:?}",
        again
            .iter()
            .map(|m| (number(m), m.redelivery_count))
            .collect::<Vec<_>>()
    );
    // One ack per message: a second ack of a message in the same transaction is a conflict.
    let ids: Vec<MessageIdData> = want.iter().map(|n| by_number(&again, *n)).collect();
    let d = open(tcs, &topic).await;
    let r = consumer.ack(Some(d), &ids, AckKind::Individual).await;
    assert!(matches!(classify_ack(&r), AckAnswer::Acked(_)), "{r:?}");
    // Pending in an open transaction is not acknowledged.
    assert_eq!(backlog(admin, &topic).await, Some(10));
    tcs.end_txn(d, TxnAction::Commit).await.unwrap();
    wait_backlog(admin, &topic, 0, 20).await;
    // A fresh consumer of the subscription gets nothing: the acks committed. (Not a
    // redelivery on the old one: a copy dispatched before the commit may still be on its way.)
    consumer.reconnect().await.unwrap();
    let late = consumer.receive(Duration::from_secs(2)).await.unwrap();
    assert!(late.is_none(), "delivered after the commit: {late:?}");
    consumer.close().await.unwrap();
}

#[test]
fn acks_in_transactions_conflict_and_an_aborted_ack_is_delivered_again() {
    rt().block_on(async {
        let tc = shared_standalone();
        let c = &tc.cluster;
        let admin = Admin::new(&c.admin_url);
        let client = Client::new(&c.service_url, Duration::from_secs(10));
        let tcs = Coordinators::discover(client.clone()).await.unwrap();
        tcs.connect_all(deadline(60)).await.unwrap();
        conflict_probe(&client, &tcs, &admin).await;
        abort_redelivers(&client, &tcs, &admin).await;
    });
}
