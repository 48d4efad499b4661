//! The independent reader the other tests judge verdicts by: it must count what is on the
//! topic, not what its client happened to be delivered.

use std::time::Duration;

use pulsar_chaos::admin::Admin;

use crate::common::*;

/// A delivery of an id already taken is a redelivery; the same number under two ids is a
/// copy on the topic and stays twice.
#[test]
fn deliveries_keep_copies_and_drop_redeliveries() {
    let mut got = Deliveries::default();
    got.take((0, 7, 1, -1), b"1");
    got.take((0, 7, 2, -1), b"2");
    got.take((0, 7, 1, -1), b"1");
    got.take((0, 7, 3, 0), b"2");
    got.take((1, 7, 1, -1), b"1");
    assert_eq!(numbers(&got.payloads), vec![1, 2, 2, 1]);
    assert_eq!(got.redelivered, 1);
}

/// Regression (CI of 2026-12-07 read 82,550 messages of an 80,000-message topic whose broker
/// had restarted): when the reader's topic is unloaded under it, the crate subscribes again
/// from the earliest message and the broker delivers what was read a second time. The read
/// still counts each message once.
#[test]
fn an_unload_in_the_middle_of_an_independent_read_counts_each_message_once() {
    rt().block_on(async {
        use futures::TryStreamExt;
        let c = &shared_standalone().cluster;
        let topic = format!("persistent://public/default/reread-{}", rand_id());
        let n = 300u64;
        produce_plain(&c.service_url, &topic, 0..n).await;

        let mut consumer = independent_consumer(&c.service_url, &topic).await.unwrap();
        let mut got = Deliveries::default();
        while got.payloads.len() < 100 {
            let msg = consumer.try_next().await.unwrap().unwrap();
            got.take(msg_id(msg.message_id()), &msg.payload.data);
        }
        Admin::new(&c.admin_url).unload_topic(&topic).await.unwrap();
        // The crate subscribes again when it learns of the unload, which on a loaded machine
        // can be after it has handed out every message it had fetched: read until the broker's
        // second delivery begins, then to the end.
        while got.redelivered == 0 {
            let msg = tokio::time::timeout(Duration::from_secs(60), consumer.try_next())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "no second delivery within 60 s of the unload ({} messages read)",
                        got.payloads.len()
                    )
                })
                .unwrap()
                .unwrap();
            got.take(msg_id(msg.message_id()), &msg.payload.data);
        }
        read_to_end(consumer, &mut got).await.unwrap();

        let mut values = numbers(&got.payloads);
        values.sort_unstable();
        assert_eq!(values, (0..n).collect::<Vec<_>>());
    });
}
