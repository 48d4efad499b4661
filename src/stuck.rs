//! Stuck reads, the I/O beside the core's `stuck`: ask Pulsar what holds each partition (its
//! transaction buffer, its managed ledger, the coordinators' transactions that name it) and
//! apply a remedy. What the answers mean is decided in the core; the runner
//! (`runner/stuck.rs`) puts the steps in order and records them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

pub use pulsar_chaos_core::stuck::*;

use crate::admin::{Admin, TxnReport};
use crate::history::TxnId;
use crate::txn::coordinator::Coordinators;
use crate::txn::coordinator::TC_ASSIGN_TOPIC;
use crate::txn::Client;

/// A partition the wait found not readable, and why in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub partition: String,
    pub index: i32,
    pub held: String,
}

/// Ask Pulsar about every held partition: its buffer, its ledger's end and the coordinators'
/// transactions that name it. A call that fails is recorded in the partition's `errors`; an
/// unknown is never filled in.
pub async fn diagnose(admin: &Admin, held: &[Held], now_wall_ms: u64) -> Vec<StuckPartition> {
    let (txns, txn_error) = match admin.slow_transactions(Duration::from_millis(0)).await {
        Ok(t) => (t, None),
        Err(e) => (Vec::new(), Some(format!("slowTransactions: {e}"))),
    };
    let mut out = Vec::new();
    for h in held {
        let mut p = StuckPartition {
            partition: h.partition.clone(),
            index: h.index,
            held: h.held.clone(),
            buffer_state: None,
            open: None,
            max_read: None,
            last_confirmed: None,
            entries_behind: None,
            txns: naming(&txns, &h.partition, now_wall_ms),
            broker_lines: Vec::new(),
            errors: txn_error.iter().cloned().collect(),
        };
        match admin.transaction_buffer(&h.partition).await {
            Ok(b) => {
                p.buffer_state = b.state;
                p.open = b.open;
                p.max_read = b.max_read;
            }
            Err(e) => p.errors.push(format!("transactionBufferStats: {e}")),
        }
        match admin.ledger_state(&h.partition).await {
            Ok(l) => {
                p.last_confirmed = l.last_confirmed;
                if let (Some(m), Some(lc)) = (p.max_read, l.last_confirmed) {
                    p.entries_behind = entries_behind(&l.ledgers, l.current, m, lc);
                }
            }
            Err(e) => p.errors.push(format!("internalStats: {e}")),
        }
        out.push(p);
    }
    out
}

/// The coordinators' transactions that wrote to `partition`.
fn naming(txns: &[TxnReport], partition: &str, now_wall_ms: u64) -> Vec<StuckTxn> {
    txns.iter()
        .filter(|t| t.produced_partitions.contains_key(partition))
        .map(|t| StuckTxn {
            txn: t.txn_id.clone(),
            status: t.status.clone(),
            age_ms: t.open_timestamp.map(|o| now_wall_ms.saturating_sub(o)),
            timeout_ms: t.timeout_at,
            partitions: t
                .produced_partitions
                .iter()
                .map(|(name, b)| TxnPartition {
                    partition: name.clone(),
                    start_position: b.start_position.clone(),
                    aborted: b.aborted,
                })
                .collect(),
        })
        .collect()
}

/// `(0,1067)` as a transaction id.
pub fn parse_txn(s: &str) -> Option<TxnId> {
    let inner = s.trim().strip_prefix('(')?.strip_suffix(')')?;
    let (most, least) = inner.split_once(',')?;
    Some(TxnId {
        most: most.trim().parse().ok()?,
        least: least.trim().parse().ok()?,
    })
}

/// The transactions the coordinators are ending, each with the action they carry out.
pub fn ending(parts: &[StuckPartition]) -> BTreeMap<TxnId, pulsar::message::proto::TxnAction> {
    use pulsar::message::proto::TxnAction;
    parts
        .iter()
        .flat_map(|p| &p.txns)
        .filter_map(|t| {
            let action = match t.status.as_str() {
                "COMMITTING" => TxnAction::Commit,
                "ABORTING" => TxnAction::Abort,
                _ => return None,
            };
            Some((parse_txn(&t.txn)?, action))
        })
        .collect()
}

/// Apply one remedy to what `parts` show. Returns the targets and Pulsar's answer for each.
/// Only what the coordinator is already doing is asked for again: a COMMITTING transaction is
/// committed, an ABORTING one aborted; an OPEN one is left to its timeout (ending it would be
/// the harness deciding an outcome).
pub async fn apply(
    remedy: Remedy,
    admin: &Admin,
    service_url: &str,
    parts: &[StuckPartition],
) -> (Vec<String>, Vec<String>) {
    match remedy {
        Remedy::ReEnd => re_end(service_url, &ending(parts)).await,
        Remedy::UnloadCoordinator => unload_coordinators(admin, service_url, parts).await,
        Remedy::UnloadTopic => {
            let mut targets = Vec::new();
            let mut answers = Vec::new();
            for p in parts {
                targets.push(p.partition.clone());
                answers.push(match admin.unload_topic(&p.partition).await {
                    Ok(()) => format!(
                        "{}: unloaded; {}",
                        p.partition,
                        load(admin, &p.partition).await
                    ),
                    Err(e) => format!("{}: {e}", p.partition),
                });
            }
            (targets, answers)
        }
    }
}

/// Load a partition again after an unload (its stats load it; the transaction-buffer
/// endpoints answer only for a loaded topic), asked until it answers, at most 60 s.
async fn load(admin: &Admin, partition: &str) -> String {
    let started = std::time::Instant::now();
    let mut backoff =
        crate::backoff::Backoff::new(Duration::from_millis(200), Duration::from_secs(2));
    loop {
        match admin.topic_stats(partition).await {
            Ok(_) => return format!("loaded again after {}ms", started.elapsed().as_millis()),
            Err(e) if started.elapsed() >= Duration::from_secs(60) => {
                return format!("not loaded again within 60s: {e}")
            }
            Err(_) => tokio::time::sleep(backoff.next_delay()).await,
        }
    }
}

async fn re_end(
    service_url: &str,
    txns: &BTreeMap<TxnId, pulsar::message::proto::TxnAction>,
) -> (Vec<String>, Vec<String>) {
    let targets: Vec<String> = txns.keys().map(|t| t.to_string()).collect();
    if txns.is_empty() {
        return (
            targets,
            vec!["no transaction is COMMITTING or ABORTING: nothing to end again".into()],
        );
    }
    let client = Client::new(service_url, Duration::from_secs(30));
    let answers = match Coordinators::discover(client.clone()).await {
        Err(e) => vec![format!("coordinators: {e}")],
        Ok(tcs) => {
            let mut answers = Vec::new();
            for (txn, action) in txns {
                let r = tcs.end_txn(*txn, *action).await;
                answers.push(format!(
                    "{txn}: END_TXN {} answered {}",
                    action.as_str_name(),
                    match r {
                        Ok(()) => "success".to_string(),
                        Err(e) => e.to_string(),
                    }
                ));
            }
            answers
        }
    };
    client.close_all().await;
    (targets, answers)
}

/// Unload the coordinators of the transactions being ended (every coordinator when none is
/// known), then connect a transactional client to each so that it loads again and re-drives
/// its COMMITTING and ABORTING transactions.
async fn unload_coordinators(
    admin: &Admin,
    service_url: &str,
    parts: &[StuckPartition],
) -> (Vec<String>, Vec<String>) {
    let client: Arc<Client> = Client::new(service_url, Duration::from_secs(30));
    let tcs = match Coordinators::discover(client.clone()).await {
        Ok(t) => t,
        Err(e) => return (Vec::new(), vec![format!("coordinators: {e}")]),
    };
    let mut ids: BTreeSet<u64> = ending(parts).keys().map(|t| t.most).collect();
    if ids.is_empty() {
        ids = (0..u64::from(tcs.count())).collect();
    }
    let mut targets = Vec::new();
    let mut answers = Vec::new();
    for id in ids {
        let topic = format!("{TC_ASSIGN_TOPIC}-partition-{id}");
        answers.push(match admin.unload_topic(&topic).await {
            Ok(()) => format!("{topic}: unloaded"),
            Err(e) => format!("{topic}: {e}"),
        });
        targets.push(topic);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    answers.push(match tcs.connect_all(deadline).await {
        Ok(()) => "a transactional client connected to every coordinator again".into(),
        Err(e) => format!("reconnecting to the coordinators: {e}"),
    });
    client.close_all().await;
    (targets, answers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_ids_parse_as_pulsar_prints_them() {
        assert_eq!(
            parse_txn("(0,1067)"),
            Some(TxnId {
                most: 0,
                least: 1067
            })
        );
        assert_eq!(parse_txn("(1, 2)"), Some(TxnId { most: 1, least: 2 }));
        assert_eq!(parse_txn("0,1067"), None);
        assert_eq!(parse_txn("(x,1)"), None);
    }

    #[test]
    fn only_what_the_coordinator_is_ending_is_ended_again() {
        use pulsar::message::proto::TxnAction;
        let t = |id: &str, status: &str| StuckTxn {
            txn: id.into(),
            status: status.into(),
            age_ms: None,
            timeout_ms: None,
            partitions: Vec::new(),
        };
        let p = StuckPartition {
            partition: "p".into(),
            index: 0,
            held: String::new(),
            buffer_state: None,
            open: None,
            max_read: None,
            last_confirmed: None,
            entries_behind: None,
            txns: vec![
                t("(0,1)", "COMMITTING"),
                t("(0,2)", "ABORTING"),
                t("(1,3)", "OPEN"),
            ],
            broker_lines: Vec::new(),
            errors: Vec::new(),
        };
        let e = ending(&[p]);
        assert_eq!(e.len(), 2, "an OPEN transaction is left to its timeout");
        assert_eq!(e[&TxnId { most: 0, least: 1 }], TxnAction::Commit);
        assert_eq!(e[&TxnId { most: 0, least: 2 }], TxnAction::Abort);
    }

    #[test]
    fn a_transaction_names_a_partition_by_its_full_name() {
        let report: TxnReport = serde_json::from_str(
            r#"{"txnId":"(0,9)","status":"ABORTING","openTimestamp":1000,
                "producedPartitions":{"persistent://public/default/t-partition-1":{"aborted":true},
                "persistent://public/default/t-partition-10":{"aborted":false}}}"#,
        )
        .unwrap();
        let txns = vec![report];
        let found = naming(&txns, "persistent://public/default/t-partition-1", 61_000);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].age_ms, Some(60_000));
        assert_eq!(found[0].partitions.len(), 2);
        assert!(naming(&txns, "persistent://public/default/t-partition-2", 0).is_empty());
    }
}
