//! The conflict probe (an input acknowledged in an open transaction must not be acknowledged
//! in another: Pulsar answers TransactionConflict) and the subscription's backlog per input
//! partition, as the admin API reports it.

use std::sync::atomic::Ordering;
use std::time::Duration;

use pulsar::message::proto::{ServerError, TxnAction};
use tokio::time::Instant;

use crate::admin::Admin;
use crate::checker::{held, FillOutcome, HeldEntry, HeldEvidence, PartitionBacklog, HELD_MAX};
use crate::history::{EventBody, Outcome, ProbeOutcome, TxnId};
use crate::scenario::transform::{ConflictProbe, SUBSCRIPTION};
use crate::txn::consumer::{classify_ack, AckAnswer, AckKind};
use crate::txn::TxnError;

use super::source::Input;
use super::worker::{answer_words, Worker};
use super::Transformer;

impl Transformer {
    /// Acknowledge `input` (acknowledged in `held_by`, still open) in a probe transaction of
    /// its own, record what Pulsar answered, and abort the probe; with `conflict_probe:
    /// commit` an accepted probe processes the input again and commits instead
    /// (`commit_probe`). At most `PROBE_MAX` per run.
    pub(super) async fn probe(
        &self,
        w: &mut Worker,
        attempt: u64,
        held_by: TxnId,
        input: &Input,
        op_deadline: Instant,
    ) {
        let (p, id) = (input.partition, &input.msg.id);
        let left = self
            .probes_left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if left.is_err() {
            return;
        }
        let Ok(probe) = self.tcs.new_txn(self.cfg.txn_timeout, op_deadline).await else {
            return;
        };
        let sub = [(self.input_partitions[p].clone(), SUBSCRIPTION.to_string())];
        let r = match self.tcs.add_subscriptions(probe, &sub, op_deadline).await {
            Err(e) => Err(e),
            Ok(()) => match w.consumers[p].as_ref().and_then(super::source::Source::own) {
                Some(c) => {
                    let ack = c.ack(Some(probe), std::slice::from_ref(id), AckKind::Individual);
                    match tokio::time::timeout(PROBE_PATIENCE, ack).await {
                        Ok(r) => r,
                        Err(_) => Err(TxnError::Timeout(format!(
                            "no ACK_RESPONSE within {}ms",
                            PROBE_PATIENCE.as_millis()
                        ))),
                    }
                }
                None => Err(TxnError::NotSent("the consumer was lost".into())),
            },
        };
        let answer = classify_ack(&r);
        let outcome = probe_outcome(&r, &answer);
        let (name, detail) = answer_words(&answer);
        self.counts.probes.fetch_add(1, Ordering::Relaxed);
        match outcome {
            ProbeOutcome::Refused => self.counts.probes_refused.fetch_add(1, Ordering::Relaxed),
            ProbeOutcome::Accepted => self.counts.probes_accepted.fetch_add(1, Ordering::Relaxed),
            ProbeOutcome::Unanswered => self
                .counts
                .probes_unanswered
                .fetch_add(1, Ordering::Relaxed),
            ProbeOutcome::Unknown => 0,
        };
        self.history.record(EventBody::ConflictProbe {
            attempt,
            probe,
            held_by,
            message: format!(
                "{} {}:{}{}",
                self.input_partitions[p],
                id.ledger_id,
                id.entry_id,
                id.batch_index.map(|b| format!(":{b}")).unwrap_or_default()
            ),
            outcome,
            answer: format!("{name}: {detail}"),
        });
        if outcome == ProbeOutcome::Accepted && self.cfg.conflict_probe == ConflictProbe::Commit {
            self.commit_probe(probe, input.n, op_deadline).await;
            return;
        }
        if let Err(e) = self.tcs.end_txn(probe, TxnAction::Abort).await {
            self.history.record(EventBody::Note {
                message: format!("the abort of conflict probe {probe} was not confirmed ({e}); the coordinator's timeout ends it"),
            });
        }
    }
}

impl Transformer {
    /// `conflict_probe: commit`, after Pulsar accepted the probe's ACK of input `n`: the probe
    /// does what a transform that received the input again would do, publish `f(n)` in its
    /// transaction and commit, recorded as an attempt of its own (opened, sent, commit asked,
    /// outcome), so the read-back's duplicate is attributed to the two committed transactions.
    /// Not journaled: a run interrupted here leaves the probe to the coordinator's timeout.
    async fn commit_probe(&self, probe: TxnId, n: u64, op_deadline: Instant) {
        let attempt = self.next_attempt.fetch_add(1, Ordering::Relaxed);
        let output = self.cfg.function.apply(n);
        let q = self.output_partition(output);
        self.history.record(EventBody::TxnOpened {
            attempt,
            txn: probe,
            numbers: vec![(output, output + 1)],
            resend_of: None,
        });
        self.history.record(EventBody::Note {
            message: format!("conflict probe {probe} was accepted and, as `conflict_probe: commit` asks, processes input {n} again as attempt {attempt}: it publishes {output} and commits"),
        });
        let sent = match self
            .tcs
            .add_partitions(
                probe,
                std::slice::from_ref(&self.output_partitions[q]),
                op_deadline,
            )
            .await
        {
            Err(e) => Err(format!("ADD_PARTITION_TO_TXN failed: {e}")),
            Ok(()) => self.producers[q]
                .send_batch(
                    Some(probe),
                    vec![crate::workload::payload(output, self.cfg.message_size)],
                    self.cfg.op_timeout,
                )
                .await
                .map_err(|e| format!("the SEND failed: {e}")),
        };
        if let Err(why) = sent {
            self.abort(attempt, probe, format!("conflict probe: {why}"))
                .await;
            return;
        }
        self.history.record(EventBody::SendsAcked {
            attempt,
            messages: 1,
        });
        self.history.record(EventBody::CommitRequested {
            attempt,
            txn: probe,
            try_no: 1,
        });
        let (outcome, detail) = match self.tcs.end_txn(probe, TxnAction::Commit).await {
            Ok(()) => (
                Outcome::Committed,
                "END_TXN_RESPONSE without error".to_string(),
            ),
            Err(e) => (
                Outcome::Ambiguous,
                format!("the probe's commit was not confirmed ({e}); it is not retried"),
            ),
        };
        self.history.record(EventBody::TxnOutcome {
            attempt,
            txn: probe,
            outcome,
            detail,
        });
    }
}

/// How long a probe's ACK may go unanswered (a probe that is not answered is recorded as
/// such and aborted; it holds the worker's transaction open meanwhile).
pub const PROBE_PATIENCE: Duration = Duration::from_secs(3);

/// What a probe's answer proves: refused only with TransactionConflict, accepted on success,
/// unanswered on a timeout, anything else proves nothing. Pure.
pub fn probe_outcome(r: &Result<(), TxnError>, answer: &AckAnswer) -> ProbeOutcome {
    match answer {
        AckAnswer::Acked(_) => ProbeOutcome::Accepted,
        _ if matches!(r, Err(TxnError::Timeout(_))) => ProbeOutcome::Unanswered,
        AckAnswer::Refused(_)
            if r.as_ref().err().and_then(|e| e.server_code())
                == Some(ServerError::TransactionConflict) =>
        {
            ProbeOutcome::Refused
        }
        _ => ProbeOutcome::Unknown,
    }
}

/// The subscription's backlog on each input partition (`msgBacklog` of the topic stats), with
/// the admin API's words as evidence.
pub async fn subscription_backlog(admin: &Admin, partitions: &[String]) -> Vec<PartitionBacklog> {
    let mut out = Vec::new();
    for t in partitions {
        let (backlog, evidence) = match admin.topic_stats_precise(t).await {
            Ok(stats) => {
                let s = &stats["subscriptions"][SUBSCRIPTION];
                let backlog = s["msgBacklog"].as_u64();
                let evidence = serde_json::json!({
                    "msgBacklog": s["msgBacklog"],
                    "unackedMessages": s["unackedMessages"],
                    "msgBacklogNoDelayed": s["msgBacklogNoDelayed"],
                    "consumers": s["consumers"].as_array().map(|c| c.len()),
                });
                (
                    backlog,
                    format!(
                        "GET /admin/v2/{}/stats?getPreciseBacklog=true: subscriptions.{SUBSCRIPTION} = {evidence}",
                        t.replacen("persistent://", "persistent/", 1)
                    ),
                )
            }
            Err(e) => (None, format!("GET {t} stats failed: {e}")),
        };
        out.push(PartitionBacklog {
            partition: t.clone(),
            backlog,
            evidence,
        });
    }
    out
}

/// The backlog once it is 0 on every partition, or as it is after `within` (the acks of the
/// last commits reach the cursor asynchronously; waited for by condition).
pub async fn wait_backlog_zero(
    admin: &Admin,
    partitions: &[String],
    within: Duration,
) -> Vec<PartitionBacklog> {
    let until = Instant::now() + within;
    loop {
        let b = subscription_backlog(admin, partitions).await;
        if b.iter().all(|p| p.backlog == Some(0)) || Instant::now() >= until {
            return b;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The entries the subscription still holds on `partitions`, looked at (at most
/// `HELD_MAX`): the cursor from `internalStats`, each held entry's headers and numbers from the
/// admin API, the fill transaction's outcome from the fill's history (`fill_history`), and the
/// broker's `acknowledgmentAtBatchIndexLevelEnabled` from its runtime configuration.
pub async fn held_entries(
    admin: &Admin,
    partitions: &[String],
    fill_history: &std::path::Path,
) -> HeldEvidence {
    let fills = fill_outcomes(fill_history);
    let mut out = HeldEvidence::default();
    for t in partitions {
        let stats = match admin.internal_stats_raw(t).await {
            Ok(s) => s,
            Err(e) => {
                out.cursors.push(format!("{t}: internalStats failed: {e}"));
                continue;
            }
        };
        let cursor = &stats["cursors"][SUBSCRIPTION];
        let mark = cursor["markDeletePosition"].as_str().unwrap_or("");
        let deleted = cursor["individuallyDeletedMessages"].as_str().unwrap_or("");
        let lac = stats["lastConfirmedEntry"].as_str().unwrap_or("");
        out.cursors.push(format!(
            "GET /admin/v2/{}/internalStats: cursors.{SUBSCRIPTION}.markDeletePosition {mark}, {} deleted range(s) after it, lastConfirmedEntry {lac}",
            t.replacen("persistent://", "persistent/", 1),
            deleted.matches('(').count()
        ));
        let ledger = crate::admin::LedgerState::of(&stats);
        let (Some(mark), Some(lac)) = (crate::stuck::parse_position(mark), ledger.last_confirmed)
        else {
            continue;
        };
        let room = HELD_MAX.saturating_sub(out.entries.len());
        let (positions, total) = held::held_positions(
            mark,
            &held::parse_deleted_ranges(deleted),
            &ledger.ledgers,
            lac,
            room,
        );
        out.total += total;
        for (l, e) in positions {
            out.entries.push(held_entry(admin, t, (l, e), &fills).await);
        }
    }
    match admin.runtime_configuration().await {
        Ok(conf) => {
            let v = conf.get("acknowledgmentAtBatchIndexLevelEnabled");
            out.batch_index_ack = v.and_then(|v| match v {
                serde_json::Value::Bool(b) => Some(*b),
                serde_json::Value::String(s) => s.parse().ok(),
                _ => None,
            });
            out.batch_index_ack_evidence = format!(
                "GET /admin/v2/brokers/configuration/runtime: acknowledgmentAtBatchIndexLevelEnabled = {}",
                v.map_or("absent".into(), |v| v
                    .as_str()
                    .map_or_else(|| v.to_string(), str::to_string))
            );
        }
        Err(e) => out.batch_index_ack_evidence = format!("runtime configuration not read: {e}"),
    }
    out
}

/// One held entry: its marker type, writing transaction and numbers.
async fn held_entry(
    admin: &Admin,
    topic: &str,
    position: (u64, i64),
    fills: &std::collections::HashMap<TxnId, Outcome>,
) -> HeldEntry {
    let mut e = HeldEntry {
        partition: topic.to_string(),
        position,
        marker: None,
        txn: None,
        fill: FillOutcome::Unknown,
        numbers: None,
    };
    let Ok((h, body)) = admin.entry(topic, position.0, position.1).await else {
        return e;
    };
    let num = |k: &str| h.get(k).and_then(|v| v.parse::<i64>().ok());
    e.marker = num("x-pulsar-marker-type");
    if let (Some(most), Some(least)) = (
        num("x-pulsar-txnid-most-bits"),
        num("x-pulsar-txnid-least-bits"),
    ) {
        let txn = TxnId {
            most: most as u64,
            least: least as u64,
        };
        e.txn = Some(txn);
        e.fill = match fills.get(&txn) {
            Some(Outcome::Committed) => FillOutcome::Committed,
            Some(Outcome::Aborted) => FillOutcome::Aborted,
            _ => FillOutcome::Unknown,
        };
    }
    let compressed = h
        .get("x-pulsar-compression")
        .is_some_and(|c| !c.eq_ignore_ascii_case("none"));
    if e.marker.is_none() && !compressed {
        e.numbers = entry_numbers(&body, num("x-pulsar-num-batch-message"));
    }
    e
}

/// The numbers of an entry's messages: a batch's members, or the one message.
pub fn entry_numbers(body: &[u8], batch: Option<i64>) -> Option<Vec<u64>> {
    use crate::checker::parse_number;
    match batch {
        Some(n) if n > 0 => crate::txn::entry::split_batch(body, n as i32)
            .ok()?
            .into_iter()
            .map(parse_number)
            .collect(),
        _ => parse_number(body).map(|n| vec![n]),
    }
}

/// What the fill's history says each of its transactions became (the last definitive word).
fn fill_outcomes(path: &std::path::Path) -> std::collections::HashMap<TxnId, Outcome> {
    let mut out = std::collections::HashMap::new();
    let Ok(events) = crate::history::read(path) else {
        return out;
    };
    for e in events.flatten() {
        let (txn, outcome) = match e.body {
            EventBody::TxnOutcome { txn, outcome, .. } => (txn, outcome),
            EventBody::TxnResolved { txn, resolved, .. } => (txn, resolved),
            _ => continue,
        };
        if outcome != Outcome::Ambiguous {
            out.insert(txn, outcome);
        }
    }
    out
}
