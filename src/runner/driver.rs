//! What drives a run's workload: the transactional producer, or the transform
//! (`kind: transform`: the input topic filled first, before any fault, then the
//! consume-transform-produce workers). The steps of `phases` see one type.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::admin::Admin;
use crate::checker::ConsumerEvidence;
use crate::error::{Error, Result};
use crate::history::{EventBody, History};
use crate::journal::Journal;
use crate::scenario::transform::{input_topic, SUBSCRIPTION};
use crate::transform::{self, Transformer};
use crate::workload::{self, Producer, Stats};

/// The workload of a run.
#[derive(Clone)]
pub(super) enum Driver {
    Produce(Arc<Producer>),
    Transform(Arc<Transformer>),
}

impl Driver {
    pub(super) fn stats(&self) -> Arc<Stats> {
        match self {
            Driver::Produce(p) => p.stats(),
            Driver::Transform(t) => t.stats(),
        }
    }

    pub(super) async fn run(&self) -> workload::Report {
        match self {
            Driver::Produce(p) => p.run().await,
            Driver::Transform(t) => t.run().await,
        }
    }

    pub(super) fn stop(&self, reason: &str) {
        match self {
            Driver::Produce(p) => p.stop(reason),
            Driver::Transform(t) => t.stop(reason),
        }
    }

    pub(super) async fn close(&self) {
        match self {
            Driver::Produce(p) => p.close().await,
            Driver::Transform(t) => t.close().await,
        }
    }

    pub(super) fn journal_counters(&self) -> crate::journal::Counters {
        match self {
            Driver::Produce(p) => p.journal_counters(),
            Driver::Transform(t) => t.journal_counters(),
        }
    }

    /// The transform's counters for `transform.json` (None for the producer).
    pub(super) fn transform_json(&self) -> Option<serde_json::Value> {
        let Driver::Transform(t) = self else {
            return None;
        };
        let c = &t.counts;
        let get = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        Some(serde_json::json!({
            "redeliveries": get(&c.redeliveries),
            "redelivered_inputs": get(&c.redelivered_inputs),
            "received_again": get(&c.received_again),
            "stale_copies_dropped": get(&c.stale_copies),
            "probes": get(&c.probes),
            "probes_refused": get(&c.probes_refused),
            "probes_accepted": get(&c.probes_accepted),
            "probes_unanswered": get(&c.probes_unanswered),
            "consumer_reconnects": get(&c.reconnects),
            "outputs_registered_ahead": get(&c.registered_ahead),
            "inputs_registered_ahead": get(&c.inputs_registered_ahead),
            "ack_requests_grouped": get(&c.ack_requests_grouped),
        }))
    }
}

/// What a transform run starts from.
pub(super) struct TransformStart<'a> {
    pub(super) scenario: &'a crate::scenario::Scenario,
    pub(super) dir: &'a Path,
    pub(super) topic: &'a str,
    pub(super) run_id: &'a str,
    pub(super) service_url: &'a str,
    pub(super) admin: &'a Admin,
    pub(super) history: &'a History,
    pub(super) history_path: &'a Path,
    pub(super) dial: Option<workload::Dialer>,
    pub(super) journal: Journal,
    pub(super) first_attempt: u64,
    /// `run --resume`: the fill is kept if it was checked, and what the interrupted run left
    /// in flight is settled (`Transformer::resume`).
    pub(super) resuming: bool,
    /// The official client's driver, when the workload runs through one.
    pub(super) driver: Option<workload::DriverHandle>,
    /// The service URL the driver is given instead of `service_url` (the `reply_loss` proxy's).
    pub(super) driver_service_url: Option<String>,
}

/// Why the transform could not start: its official client's failed `connect` is the driver's
/// (the run is judged without a workload, INCONCLUSIVE, as the producer's is), anything else
/// the harness cannot go on from (exit 3).
fn start_error(e: transform::TransformError) -> Error {
    match e {
        transform::TransformError::Driver(message) => {
            Error::Driver(crate::drivers::DriverError::Connect { message })
        }
        e => Error::Pulsar(format!("cannot start the transform: {e}")),
    }
}

/// A transform run: fill `<topic>-in` (no fault is active yet), then connect the transform.
pub(super) async fn start_transform(s: TransformStart<'_>) -> Result<Driver> {
    let w = &s.scenario.workload;
    let t = w
        .transform
        .expect("start_transform is called for a transform workload");
    let input = input_topic(s.topic);
    let name = format!("pc-{}", s.run_id);
    let filled =
        transform::fill_or_resume(w, &input, s.service_url, s.admin, s.dir, &name, s.resuming)
            .await?;
    s.history.record(EventBody::Note { message: filled });
    let cfg = transform::Config {
        topic: s.topic.to_string(),
        input,
        partitions: w.partitions,
        messages: w.messages,
        txn_size: w.txn_size,
        batch_size: w.batch_size,
        consumers: t.consumers,
        sub_type: t.subscription_type,
        function: t.function,
        conflict_probe: t.conflict_probe,
        message_size: w.message_size,
        abort_every: w.abort_every,
        txn_timeout: w.txn_timeout,
        op_timeout: w.op_timeout,
        deadline: w.deadline,
        name,
        dial: s.dial,
        driver: s.driver,
        driver_service_url: s.driver_service_url,
    };
    let t = Transformer::connect(
        cfg,
        s.service_url,
        s.admin.clone(),
        s.history.clone(),
        s.journal,
        s.first_attempt,
    )
    .await
    .map_err(start_error)?;
    if s.resuming {
        t.resume(s.history_path)
            .await
            .map_err(|e| Error::Pulsar(format!("cannot resume: {e}")))?;
    }
    Ok(Driver::Transform(Arc::new(t)))
}

/// After the read-back of a transform run: the input subscription's backlog per partition,
/// once 0 everywhere or as it is after 30 s; when it stays above 0, the entries it holds,
/// looked at (`transform::held_entries`, with the fill's history in `dir`).
pub(super) async fn consumer_evidence(
    admin: &Admin,
    scenario: &crate::scenario::Scenario,
    topic: &str,
    history: &History,
    dir: &std::path::Path,
) -> Option<ConsumerEvidence> {
    let w = &scenario.workload;
    w.transform?;
    let input = input_topic(topic);
    let parts = crate::txn::partition_names(&input, w.partitions);
    let backlog = transform::wait_backlog_zero(admin, &parts, Duration::from_secs(30)).await;
    history.record(crate::history::EventBody::Note {
        message: format!(
            "the input subscription's backlog: {}",
            backlog
                .iter()
                .map(|b| format!(
                    "{} {}",
                    b.partition,
                    b.backlog.map_or("not reported".into(), |n| n.to_string())
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    });
    let held = if backlog.iter().any(|b| b.backlog.is_some_and(|n| n > 0)) {
        let h = transform::held_entries(admin, &parts, &dir.join("history-in.jsonl")).await;
        history.record(crate::history::EventBody::Note {
            message: format!(
                "the input subscription holds {} entr{}; {} looked at ({})",
                h.total,
                if h.total == 1 { "y" } else { "ies" },
                h.entries.len(),
                h.batch_index_ack_evidence
            ),
        });
        Some(h)
    } else {
        None
    };
    Some(ConsumerEvidence {
        input_topic: input,
        subscription: SUBSCRIPTION.to_string(),
        backlog,
        held,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transform_whose_client_cannot_connect_is_the_driver_s_and_anything_else_exits_3() {
        let e = start_error(transform::TransformError::Driver(
            "go client: connect failed: connection refused".into(),
        ));
        assert!(
            matches!(&e, Error::Driver(crate::drivers::DriverError::Connect { message }) if message == "go client: connect failed: connection refused"),
            "{e:?}"
        );
        let e = start_error(transform::TransformError::Fill {
            topic: "t-in".into(),
            detail: "x".into(),
        });
        assert!(matches!(&e, Error::Pulsar(m) if m.starts_with("cannot start the transform: ")));
    }
}
