//! When the wait for open transactions runs out after every fault healed: ask Pulsar what
//! holds each partition, quote the brokers' lines about it, then try the scenario's remedies in
//! order, each followed by a wait by condition, until one makes every partition readable.
//! Every step is recorded in the history (`read_stuck`, `remedy_tried`).

use std::time::{Duration, Instant};

use crate::admin::Admin;
use crate::history::{EventBody, History};
use crate::readback::Until;
use crate::rundir::{now_ms, RunDir, RunInfo};
use crate::stuck::{self, Held, Remedy, RemedyRecord, StuckPartition, StuckReads};

use super::env::Env;
use super::logs::{quote_lines, save_logs};

/// How long the harness waits after each remedy for the partitions to become readable.
pub(super) const AFTER_REMEDY: Duration = Duration::from_secs(60);

/// What one look at the held partitions found, diagnosed, and the remedies tried. `None` when
/// nothing holds the read any more (it became readable between the wait and this look).
#[allow(clippy::too_many_arguments)]
pub(super) async fn investigate(
    dir: &RunDir,
    env: &Env,
    admin: &Admin,
    info: &RunInfo,
    parts: &[(String, i32)],
    remedies: &[Remedy],
    history: &History,
    waited: Duration,
) -> Option<StuckReads> {
    let held: Vec<Held> = held_now(admin, parts)
        .await
        .into_iter()
        .filter_map(|(h, is_held)| is_held.then_some(h))
        .collect();
    if held.is_empty() {
        return None;
    }
    let mut partitions = stuck::diagnose(admin, &held, now_ms()).await;
    if let Some(c) = &env.cluster {
        // Saved now for the lines up to the hold; `judge` saves them again after the remedies
        // and the read, so that `logs/` holds what the brokers said meanwhile too.
        let all = save_logs(dir, env, c, info).await;
        quote_lines(&mut partitions, &all, info);
    }
    let txn_ids: Vec<String> = partitions
        .iter()
        .flat_map(|p| p.txns.iter().map(|t| t.txn.clone()))
        .collect();
    let detected_ms = history.now_ms();
    let since_ms = match crate::history::read(&dir.file("history.jsonl")) {
        Ok(events) => stuck::held_since(events, &txn_ids, detected_ms),
        Err(_) => detected_ms,
    };
    let mut found = StuckReads {
        since_ms,
        detected_ms,
        waited_s: waited.as_secs(),
        likely_cause: stuck::known_cause(&partitions),
        partitions,
        remedies: Vec::new(),
    };
    history.record(EventBody::ReadStuck {
        since_ms,
        partitions: found
            .partitions
            .iter()
            .map(|p| p.partition.clone())
            .collect(),
        detail: found.describe(),
    });
    crate::errln!("read-back held: {}", found.describe());
    let held_targets = crate::readback::nothing_open(found.partitions.iter().map(|p| &p.partition));
    // A hold Pulsar's answers do not show as an anomaly (an OPEN transaction within its
    // timeout may hold the partition; an admin API that did not answer) is left alone: a
    // remedy would be the harness acting on a topic that may be working as it should.
    let remedies: &[Remedy] = if found.has_evidence() { remedies } else { &[] };
    for &remedy in remedies {
        let rec = try_remedy(
            remedy,
            admin,
            env,
            &found.partitions,
            &held_targets,
            history,
        )
        .await;
        let healed = rec.healed;
        found.remedies.push(rec);
        if healed {
            break;
        }
    }
    history.flush();
    Some(found)
}

/// What Pulsar says about every partition of the topic once a stall was detected, diagnosed
/// as a held read is (a partition nothing holds says "nothing open"). The brokers' lines are
/// quoted once the logs are saved (`quote_lines`). Each partition is a note in the history.
pub(super) async fn at_stall(
    admin: &Admin,
    parts: &[(String, i32)],
    history: &History,
) -> Vec<StuckPartition> {
    let all: Vec<Held> = held_now(admin, parts)
        .await
        .into_iter()
        .map(|(h, _)| h)
        .collect();
    let partitions = stuck::diagnose(admin, &all, now_ms()).await;
    for p in &partitions {
        let message = format!("at the stall, {}", p.describe());
        crate::errln!("{message}");
        history.record(EventBody::Note { message });
    }
    history.flush();
    partitions
}

/// Every partition, with what holds its read now ("nothing open" and `false` when nothing
/// does).
async fn held_now(admin: &Admin, parts: &[(String, i32)]) -> Vec<(Held, bool)> {
    let targets = crate::readback::nothing_open(parts.iter().map(|(t, _)| t));
    let mut held = crate::readback::held_now(admin, &targets).await;
    parts
        .iter()
        .map(|(partition, index)| {
            let why = held
                .iter()
                .position(|(t, _)| t == partition)
                .map(|i| held.swap_remove(i).1);
            let h = Held {
                partition: partition.clone(),
                index: *index,
                held: why.clone().unwrap_or_else(|| "nothing open".to_string()),
            };
            (h, why.is_some())
        })
        .collect()
}

/// Apply one remedy, wait by condition, and record what happened.
async fn try_remedy(
    remedy: Remedy,
    admin: &Admin,
    env: &Env,
    partitions: &[StuckPartition],
    held_targets: &[(String, Until)],
    history: &History,
) -> RemedyRecord {
    let at_ms = history.now_ms();
    let started = Instant::now();
    crate::errln!("trying remedy `{remedy}` ...");
    let (targets, mut answers) = stuck::apply(remedy, admin, &env.service_url, partitions).await;
    let waited = crate::readback::wait_readable(admin, held_targets, AFTER_REMEDY).await;
    for p in partitions {
        if let Ok(b) = admin.transaction_buffer(&p.partition).await {
            let pos =
                |m: Option<(u64, i64)>| m.map_or("?".to_string(), |(l, e)| format!("{l}:{e}"));
            answers.push(format!(
                "{} after it: maxReadPosition {} (was {}), {} transaction(s) open",
                p.partition,
                pos(b.max_read),
                pos(p.max_read),
                b.open.map_or("?".to_string(), |n| n.to_string())
            ));
        }
    }
    let rec = RemedyRecord {
        remedy,
        targets,
        at_ms,
        elapsed_ms: started.elapsed().as_millis() as u64,
        answers,
        healed: waited.is_ok(),
        still_held: waited.err().unwrap_or_default(),
    };
    history.record(EventBody::RemedyTried {
        remedy: remedy.name().to_string(),
        targets: rec.targets.clone(),
        healed: rec.healed,
        elapsed_ms: rec.elapsed_ms,
        detail: rec.answers.join("; "),
    });
    crate::errln!(
        "remedy `{remedy}`: {} after {:.1}s",
        if rec.healed {
            "every partition readable"
        } else {
            "still held"
        },
        rec.elapsed_ms as f64 / 1000.0
    );
    rec
}
