//! Readiness of a Pulsar cluster, by condition, in order: every broker answers ready,
//! `public/default` exists, the coordinator-assign topic has its partitions, a client connects
//! to every coordinator (which makes the brokers load them), every coordinator reports Ready,
//! and one real transaction is opened and aborted on each. Never a fixed sleep.

use std::time::{Duration, Instant};

use pulsar::message::proto::TxnAction;

use crate::admin::Admin;
use crate::backoff::Backoff;
use crate::cluster::{Cluster, ClusterError};
use crate::txn::coordinator::{Coordinators, TC_ASSIGN_TOPIC};
use crate::txn::Client;

/// How long each step took.
#[derive(Debug, Clone, Default)]
pub struct ReadyReport {
    pub steps: Vec<(String, Duration)>,
    pub total: Duration,
}

/// Poll `probe` until it returns Ok or the deadline passes; the last error explains a timeout.
async fn poll<F, Fut>(deadline: Instant, mut probe: F) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
    loop {
        let err = match probe().await {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if Instant::now() + backoff.peek() >= deadline {
            return Err(err);
        }
        backoff.wait().await;
    }
}

/// Wait until the cluster serves transactions, or fail with the last lines of every log.
pub async fn wait_ready(cluster: &Cluster, timeout: Duration) -> Result<ReadyReport, ClusterError> {
    let started = Instant::now();
    let deadline = started + timeout;
    let mut report = ReadyReport::default();
    let fail = |what: String, logs: String| ClusterError::NotReady {
        what,
        timeout_s: timeout.as_secs(),
        logs,
    };

    let t = Instant::now();
    for b in cluster.brokers() {
        let admin = Admin::new(&b.admin_url);
        // A broker that exits is reported at once, with its log.
        cluster
            .wait_until(
                deadline,
                &b.node,
                "GET /admin/v2/brokers/ready answers 200",
                || {
                    let admin = admin.clone();
                    async move { admin.broker_ready().await.is_ok() }
                },
            )
            .await?;
    }
    report.steps.push(("brokers ready".into(), t.elapsed()));

    let admin = Admin::new(&cluster.admin_url);
    let t = Instant::now();
    let r = poll(deadline, || async {
        match admin.namespace_exists("public/default").await {
            Ok(true) => Ok(()),
            Ok(false) => Err("public/default does not exist yet".to_string()),
            Err(e) => Err(e.to_string()),
        }
    })
    .await;
    if let Err(e) = r {
        return Err(fail(
            format!("namespace public/default: {e}"),
            cluster.logs_of_all(30).await,
        ));
    }
    report
        .steps
        .push(("public/default exists".into(), t.elapsed()));

    let t = Instant::now();
    let want = cluster.coordinators.max(1);
    let r = poll(deadline, || async {
        match admin.partitions(TC_ASSIGN_TOPIC).await {
            Ok(n) if n >= want => Ok(()),
            Ok(n) => Err(format!("{TC_ASSIGN_TOPIC} has {n} partitions, want {want}")),
            Err(e) => Err(e.to_string()),
        }
    })
    .await;
    if let Err(e) = r {
        return Err(fail(
            format!("transaction coordinator topic: {e}"),
            cluster.logs_of_all(30).await,
        ));
    }
    report
        .steps
        .push(("coordinator topic has partitions".into(), t.elapsed()));

    let t = Instant::now();
    let r = probe_transactions(&cluster.service_url, &admin, deadline).await;
    if let Err(e) = r {
        return Err(fail(e, cluster.logs_of_all(30).await));
    }
    report.steps.push((
        "coordinators ready, a transaction opened and aborted".into(),
        t.elapsed(),
    ));
    report.total = started.elapsed();
    Ok(report)
}

/// Connect to every coordinator, wait until the admin API reports each Ready, then open and
/// abort one transaction on each. Works against any cluster (used by `run` on an external
/// cluster too).
pub async fn probe_transactions(
    service_url: &str,
    admin: &Admin,
    deadline: Instant,
) -> Result<(), String> {
    let client = Client::new(service_url, Duration::from_secs(10));
    let tdeadline = tokio::time::Instant::from_std(deadline);
    let tcs = poll(deadline, || async {
        Coordinators::discover(client.clone())
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
    .await;
    if let Err(e) = tcs {
        return Err(format!("transaction coordinators: {e}"));
    }
    let tcs = Coordinators::discover(client.clone())
        .await
        .map_err(|e| format!("transaction coordinators: {e}"))?;
    tcs.connect_all(tdeadline)
        .await
        .map_err(|e| format!("connecting to the transaction coordinators: {e}"))?;
    let n = tcs.count();
    poll(deadline, || async {
        let stats = admin.coordinator_stats().await.map_err(|e| e.to_string())?;
        let ready = stats.values().filter(|s| s.state == "Ready").count() as u32;
        if ready >= n {
            Ok(())
        } else {
            Err(format!(
                "{ready} of {n} coordinators Ready ({})",
                stats
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", v.state))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        }
    })
    .await
    .map_err(|e| format!("coordinator stats: {e}"))?;
    for _ in 0..n {
        let txn = tcs
            .new_txn(Duration::from_secs(30), tdeadline)
            .await
            .map_err(|e| format!("opening a probe transaction: {e}"))?;
        poll(deadline, || async {
            tcs.end_txn(txn, TxnAction::Abort)
                .await
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| format!("aborting the probe transaction {txn}: {e}"))?;
    }
    client.close_all().await;
    Ok(())
}
