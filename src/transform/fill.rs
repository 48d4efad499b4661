//! The input topic filled with `[0, N)` before the transform and before any fault: the
//! workload's own producer on `<topic>-in` (plain sends, or transactions with
//! `input_transactional`), with a history (`history-in.jsonl`) and a journal (`journal-in/`) of
//! its own so the run's history holds only the transform's attempts. The input is then read
//! back and checked like an output: exactly `[0, N)` once, or the run does not start (a
//! duplicated input would make a duplicated output that is nobody's fault but the fill's).
//!
//! A checked input is marked by `input.json` in the run directory. A resumed run whose fill was
//! interrupted before that (no fault has started yet, no consumer subscribed) deletes the input
//! topic and fills it again from the start; the interrupted fill's history is kept as
//! `history-in.interrupted.jsonl`.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::admin::Admin;
use crate::history::History;
use crate::journal::Journal;
use crate::scenario::transform::SUBSCRIPTION;
use crate::scenario::{ResendPolicy, Workload};
use crate::workload::{Config as ProducerConfig, Producer};

use super::TransformError;

/// The run directory's mark of an input filled and checked.
pub const INPUT_FILLED: &str = "input.json";

/// Fill and check the input, unless a resumed run finds it done (`input.json`); a fill the
/// interruption cut short is thrown away first (topic, journal, history). Returns what was
/// done, for the run's history.
pub async fn fill_or_resume(
    w: &Workload,
    input: &str,
    service_url: &str,
    admin: &Admin,
    dir: &Path,
    name: &str,
    resuming: bool,
) -> Result<String, TransformError> {
    let mark = dir.join(INPUT_FILLED);
    if resuming && mark.exists() {
        return Ok(format!(
            "resuming: the input {input} was filled and checked before the interruption"
        ));
    }
    let mut said = String::new();
    if resuming {
        let fail = |detail: String| TransformError::Fill {
            topic: input.to_string(),
            detail,
        };
        // The transform's subscription is made only after the mark: if it is there, the mark
        // was lost, and deleting the topic would throw away what the transform did.
        match admin.subscriptions(input).await {
            Ok(subs) if subs.iter().any(|s| s == SUBSCRIPTION) => {
                return Err(fail(format!(
                    "{} is missing but the subscription {SUBSCRIPTION} exists, so the transform had started; the input is not filled again (that would lose its progress): run the scenario afresh",
                    mark.display()
                )))
            }
            Ok(_) => {}
            Err(e) if e.status() == Some(404) => {}
            Err(e) => return Err(e.into()),
        }
        admin.delete_topic(input, w.partitions > 1).await?;
        let journal = dir.join("journal-in");
        if journal.exists() {
            std::fs::remove_dir_all(&journal)
                .map_err(|e| fail(format!("removing {}: {e}", journal.display())))?;
        }
        let history = dir.join("history-in.jsonl");
        if history.exists() {
            std::fs::rename(&history, dir.join("history-in.interrupted.jsonl"))
                .map_err(|e| fail(format!("moving {} aside: {e}", history.display())))?;
        }
        said = format!("resuming: the fill of {input} was interrupted; the topic was deleted and is filled again from 0. ");
    }
    fill_input(w, input, service_url, admin, dir, name).await?;
    mark_filled(&mark, input, w.messages).map_err(|e| TransformError::Fill {
        topic: input.to_string(),
        detail: format!("writing {}: {e}", mark.display()),
    })?;
    Ok(format!(
        "{said}input {input}: [0, {}) filled and checked",
        w.messages
    ))
}

/// Write the mark and sync it: a resume must never take a started transform's input for an
/// unfinished fill.
fn mark_filled(mark: &Path, input: &str, messages: u64) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::create(mark)?;
    writeln!(
        f,
        "{}",
        serde_json::json!({ "topic": input, "messages": messages })
    )?;
    f.sync_all()?;
    if let Some(parent) = mark.parent() {
        std::fs::File::open(parent)?.sync_all()?;
    }
    Ok(())
}

/// Fill `input` with `[0, N)` (`partitions` as the workload's), then read it back and check it.
pub async fn fill_input(
    w: &Workload,
    input: &str,
    service_url: &str,
    admin: &Admin,
    dir: &Path,
    name: &str,
) -> Result<(), TransformError> {
    let fail = |detail: String| TransformError::Fill {
        topic: input.to_string(),
        detail,
    };
    let transactional = w.transform.is_some_and(|t| t.input_transactional);
    if w.partitions > 1 {
        admin.create_partitioned_topic(input, w.partitions).await?;
    }
    // The retention guard (the runner made it before the run; a resume that deleted an
    // unfinished fill makes it again), before the first input is produced.
    admin.guard_topic(input, w.partitions).await?;
    let cfg = ProducerConfig {
        topic: input.to_string(),
        partitions: w.partitions,
        messages: w.messages,
        txn_size: w.txn_size.max(100),
        batch_size: w
            .transform
            .and_then(|t| t.input_batch_size)
            .unwrap_or(w.batch_size),
        concurrency: 4,
        commits_in_flight: crate::scenario::DEFAULT_COMMITS_IN_FLIGHT,
        txn_timeout: w.txn_timeout,
        resend: ResendPolicy::RetryCommit,
        message_size: w.message_size,
        rate: None,
        abort_every: w.transform.and_then(|t| t.input_abort_every),
        transactions: transactional,
        op_timeout: w.op_timeout,
        deadline: w.deadline,
        skip: BTreeSet::new(),
        duplicate: Vec::new(),
        name: format!("{name}-in"),
        dial: None,
        driver: None,
        driver_service_url: None,
    };
    let journal = Journal::open(&dir.join("journal-in")).map_err(|e| fail(e.to_string()))?;
    let history = History::create(
        &dir.join("history-in.jsonl"),
        tokio::time::Instant::now().into_std(),
        false,
    )
    .map_err(|e| fail(e.to_string()))?;
    let producer = Producer::connect(cfg, service_url, admin.clone(), journal, history, 1)
        .await
        .map_err(|e| fail(format!("cannot start its producer: {e}")))?;
    let producer = Arc::new(producer);
    let report = producer.run().await;
    producer.close().await;
    // Aborts asked on purpose (`input_abort_every`) are definitive; their numbers were sent
    // again in a new transaction, and the read-back below checks the input.
    let deliberate = w.transform.is_some_and(|t| t.input_abort_every.is_some());
    if !report.complete || (report.stats.aborted > 0 && !deliberate) || report.stats.ambiguous > 0 {
        return Err(fail(format!(
            "{} ({} aborted, {} ambiguous); a resent input could be there twice",
            report.detail, report.stats.aborted, report.stats.ambiguous
        )));
    }
    let rb = crate::readback::read_back(
        service_url,
        input,
        w.messages,
        Duration::from_secs(60),
        crate::readback::Shape::default(),
    )
    .await
    .map_err(|e| fail(format!("reading it back: {e}")))?;
    let f = &rb.findings;
    if rb.incomplete.is_some()
        || f.missing_total > 0
        || f.duplicate_values > 0
        || f.unexpected_total > 0
    {
        return Err(fail(format!(
            "it does not hold [0, {}) exactly once: {} missing, {} duplicated, {} unexpected{}",
            w.messages,
            f.missing_total,
            f.duplicate_values,
            f.unexpected_total,
            rb.incomplete.map(|i| format!(" ({i})")).unwrap_or_default()
        )));
    }
    crate::errln!(
        "input {input}: {} numbers in {:.1}s, read back and checked",
        w.messages,
        report.elapsed.as_secs_f64()
    );
    Ok(())
}
