//! The steps after the workload, shared by a run that produced and one whose driver never
//! started (`unstarted`): `producer.json` and its summary, the wait for open transactions and
//! the read-back (with the stuck-read remedies), and the verdict with its files.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::admin::Admin;
use crate::checker::{self, Context, Verdict};
use crate::error::{Error, Result};
use crate::history::{self, EventBody, History};
use crate::plan::Plan;
use crate::readback::Readback;
use crate::rundir::{RunDir, RunInfo};
use crate::scenario::Workload;
use crate::workload::{self, Stats};

use super::env::Env;
use super::logs::{quote_broker_log, save_logs, StallLogs};
use super::Request;

/// `producer.json`: the producer's throughput and outcome counts.
pub(super) fn write_producer_json(
    dir: &RunDir,
    report: &workload::Report,
    stats: &Stats,
    journal: crate::journal::Counters,
) -> Result<()> {
    let lat_n = stats.commit_latency_n.load(Ordering::Relaxed);
    let elapsed = report.elapsed.as_secs_f64().max(1e-9);
    dir.write_json(
        "producer.json",
        &serde_json::json!({
            "messages_committed": report.stats.messages_committed,
            "elapsed_s": report.elapsed.as_secs_f64(),
            "messages_per_s": report.stats.messages_committed as f64 / report.elapsed.as_secs_f64().max(1e-9),
            "transactions_committed": report.stats.committed,
            "aborted": report.stats.aborted,
            "ambiguous": report.stats.ambiguous,
            "commit_latency_avg_ms": if lat_n > 0 { stats.commit_latency_us.load(Ordering::Relaxed) as f64 / lat_n as f64 / 1000.0 } else { 0.0 },
            "complete": report.complete,
            // The journal's group commit: fdatasyncs, the records they covered, compactions.
            "journal_syncs": journal.syncs,
            "journal_records": journal.records,
            "journal_compactions": journal.compactions,
            "journal_syncs_per_s": journal.syncs as f64 / elapsed,
            "journal_records_per_sync": if journal.syncs > 0 { journal.records as f64 / journal.syncs as f64 } else { 0.0 },
        }),
    )?;
    Ok(())
}

/// The producer's outcome in one line on stderr.
pub(super) fn print_producer(report: &workload::Report) {
    crate::errln!(
        "producer: {} committed, {} aborted, {} ambiguous transaction(s); {} messages committed in {:.1}s ({})",
        report.stats.committed,
        report.stats.aborted,
        report.stats.ambiguous,
        report.stats.messages_committed,
        report.elapsed.as_secs_f64(),
        report.detail
    );
}

/// The read-back and what held it.
pub(super) struct Read {
    pub(super) rb: Readback,
    /// What still held the topic when the wait (and every remedy) ran out.
    pub(super) incomplete: Option<String>,
    pub(super) stuck_reads: Option<crate::stuck::StuckReads>,
    /// A transform run: the input subscription's backlog.
    pub(super) consumer: Option<crate::checker::ConsumerEvidence>,
    /// The coordinators' transaction-log cursors seen going back across a fault.
    pub(super) txnlog_steps: Vec<crate::txnlog::CursorStepBack>,
}

/// Wait out open transactions (when the wait runs out: diagnose and try the remedies), then
/// read back. Returns the read-back, what still held the topic when nothing healed it, and the
/// stuck reads found.
pub(super) async fn settle_and_read(
    dir: &RunDir,
    env: &Env,
    admin: &Admin,
    info: &RunInfo,
    parts: &[(String, i32)],
    scenario: &crate::scenario::Scenario,
    history: &History,
) -> Result<(Readback, Option<String>, Option<crate::stuck::StuckReads>)> {
    let w = &scenario.workload;
    let settle = w.settle_timeout;
    let mut incomplete = None;
    let mut stuck_reads = None;
    match crate::readback::wait_settled(admin, parts, settle).await {
        Ok(d) => history.record(EventBody::Note {
            message: format!(
                "no transaction open on the topic after {}ms; reading back",
                d.as_millis()
            ),
        }),
        Err(e) => {
            stuck_reads = super::stuck::investigate(
                dir,
                env,
                admin,
                info,
                parts,
                &scenario.remedies,
                history,
                settle,
            )
            .await;
            let healed = stuck_reads
                .as_ref()
                .is_none_or(|s: &crate::stuck::StuckReads| s.healed_by().is_some());
            if !healed {
                incomplete = Some(e);
            }
        }
    }
    crate::errln!("reading back {} ...", info.topic);
    let rb = crate::readback::read_back(
        &env.service_url,
        &info.topic,
        w.messages,
        Duration::from_secs(60),
        crate::readback::Shape {
            partitions: Some(w.partitions),
            admin: Some(admin),
        },
    )
    .await?;
    history.record(EventBody::Note {
        message: format!(
            "read back {} messages from {} partition(s) in {}ms",
            rb.findings.received,
            rb.partitions,
            rb.elapsed.as_millis()
        ),
    });
    history.flush();
    Ok((rb, incomplete, stuck_reads))
}

/// The topic's partitions (name, index; -1 for a topic that is not partitioned), as the
/// broker reports them.
pub(super) async fn topic_partitions(env: &Env, info: &RunInfo) -> Result<Vec<(String, i32)>> {
    let client = crate::txn::Client::new(&env.service_url, Duration::from_secs(10));
    let parts = crate::readback::partitions_of(&client, &info.topic)
        .await
        .map_err(|e| Error::Pulsar(e.to_string()));
    client.close_all().await;
    parts
}

/// Judge the read-back: what the checker sees is stored first (`readback.json`), then the
/// verdict; for a run that did not pass in a cluster of the harness, the brokers' lines about
/// the anomalies' transactions are quoted in it.
#[allow(clippy::too_many_arguments)]
pub(super) async fn judge(
    req: &Request,
    dir: &RunDir,
    info: &RunInfo,
    env: &Env,
    plan: &Plan,
    read: Read,
    stall: StallLogs,
    history_path: &Path,
) -> Result<Verdict> {
    let Read {
        rb,
        incomplete,
        stuck_reads,
        consumer,
        txnlog_steps,
    } = read;
    let w = &req.scenario.workload;
    let StallLogs {
        mut logs,
        lines: stall_log,
        cause: stall_cause,
        partitions: stall_partitions,
    } = stall;
    let mut ctx = Context {
        seed: Some(info.seed),
        readback_incomplete: incomplete.or(rb.incomplete.clone()),
        duplicate_ids: rb.duplicate_ids.clone(),
        stall_log,
        stall_cause,
        stall_partitions,
        sabotage_skip: req.scenario.sabotage.skip.iter().copied().collect(),
        sabotage_duplicate: req.scenario.sabotage.duplicate.iter().copied().collect(),
        broker_log: Vec::new(),
        stuck_reads,
        consumer,
        // The whole plan, also for a resumed run: its history holds the faults fired before
        // the interruption.
        planned_faults: Some(plan.faults.iter().map(|f| f.name.clone()).collect()),
        client: client_context(w, &info.topic, &Admin::new(&env.admin_url)).await,
        // Derived from the read-back's record once it is stored (below).
        metadata_txns: None,
        txnlog_steps,
    };
    // What the checker sees is stored before it judges (`recheck` judges it again offline).
    // It grades every range (uncapped findings) and lists the first `LIST_CAP` of each kind.
    let findings = rb.all_findings.clone();
    let stored = crate::readlog::StoredReadback::new(
        w.messages,
        rb.log,
        rb.all_findings,
        rb.all_duplicate_ids,
        ctx.clone(),
    );
    dir.write(
        crate::readlog::FILE,
        &(serde_json::to_string(&stored).expect("serializable") + "\n"),
    )?;
    // What the copies' metadata named: derived from the stored record, as `recheck` does.
    ctx.metadata_txns = stored.metadata_txns(&findings);
    drop(stored);
    let events = history::read(history_path)?;
    let mut verdict = checker::verdict(findings.clone(), Some(events), &ctx);
    if let (Some(c), false) = (&env.cluster, verdict.status == checker::Status::Pass) {
        let all = match logs.take() {
            Some(all) => all,
            None => save_logs(dir, env, c, info).await,
        };
        verdict = quote_broker_log(
            dir,
            &mut ctx,
            findings,
            verdict,
            &all,
            history_path,
            &info.topic,
        )?;
    }
    Ok(verdict)
}

/// For a run through an official client: whether the broker's deduplication was on for the
/// topic, from each partition's own `deduplicationStatus` (the checker tells a client
/// library's resend from Pulsar's duplicate by it). `None` for the own client.
async fn client_context(
    w: &Workload,
    topic: &str,
    admin: &Admin,
) -> Option<checker::ClientContext> {
    if !w.client.is_foreign() {
        return None;
    }
    let mut said = Vec::new();
    for (i, p) in crate::txn::partition_names(topic, w.partitions)
        .iter()
        .enumerate()
    {
        let status = match admin.deduplication_status(p).await {
            Ok(Some(s)) => s,
            Ok(None) => "absent".to_string(),
            Err(e) => format!("unanswered ({e})"),
        };
        said.push((i, status));
    }
    let all = |s: &str| said.iter().all(|(_, x)| x == s);
    let deduplication = if all("Enabled") {
        Some(true)
    } else if all("Disabled") {
        Some(false)
    } else {
        None
    };
    let evidence = said
        .iter()
        .map(|(i, s)| format!("partition {i}: {s}"))
        .collect::<Vec<_>>()
        .join(", ");
    Some(checker::ClientContext {
        client: w.client.to_string(),
        deduplication,
        evidence: format!("the partitions' stats say deduplicationStatus {evidence}"),
    })
}
