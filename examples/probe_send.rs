use pulsar::message::proto::TxnAction;
use pulsar_chaos::txn::{coordinator::Coordinators, producer::PartitionProducer, Client};
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() {
    let url = std::env::args()
        .nth(1)
        .unwrap_or("pulsar://127.0.0.1:6650".into());
    let client = Client::new(&url, Duration::from_secs(10));
    let topic = format!("persistent://public/default/probe-{}", std::process::id());
    let p = PartitionProducer::new(client.clone(), &topic, "probe", true);
    p.ready().await.unwrap();
    let t = Instant::now();
    let futs =
        (0..1000).map(|i| p.send(None, format!("{i}").into_bytes(), Duration::from_secs(10)));
    let r = futures::future::join_all(futs).await;
    println!(
        "1000 plain sends: {:?} errors {}",
        t.elapsed(),
        r.iter().filter(|x| x.is_err()).count()
    );
    let tcs = Coordinators::discover(client.clone()).await.unwrap();
    for _ in 0..3 {
        let t = Instant::now();
        let txn = tcs
            .new_txn(
                Duration::from_secs(30),
                tokio::time::Instant::now() + Duration::from_secs(10),
            )
            .await
            .unwrap();
        let t1 = t.elapsed();
        tcs.add_partitions(
            txn,
            &[topic.clone()],
            tokio::time::Instant::now() + Duration::from_secs(10),
        )
        .await
        .unwrap();
        let t2 = t.elapsed();
        let futs = (0..100).map(|i| {
            p.send(
                Some(txn),
                format!("{i}").into_bytes(),
                Duration::from_secs(10),
            )
        });
        let r = futures::future::join_all(futs).await;
        let t3 = t.elapsed();
        tcs.end_txn(txn, TxnAction::Commit).await.unwrap();
        println!(
            "txn: new {:?} add {:?} 100 sends {:?} (err {}) commit {:?}",
            t1,
            t2,
            t3,
            r.iter().filter(|x| x.is_err()).count(),
            t.elapsed()
        );
    }
}
