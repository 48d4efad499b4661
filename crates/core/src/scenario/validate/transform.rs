//! The keys of `kind: transform` (see `scenario::transform`): refused on the producer's
//! workload, checked and defaulted on the transform's, and the producer's keys that do not
//! apply to a transform refused.

use super::super::file::{ScenarioFile, WorkloadFile};
use super::super::kinds::ResendPolicy;
use super::super::transform::{ConflictProbe, Transform, WorkloadKind};
use super::{err, Invalid};

/// Why `conflict_probe: commit` does not go with an official client.
pub(crate) const PROBE_OWN_ONLY: &str = "goes with the own client only (through `client: java` or `go` no conflict probe runs: it registers the subscription with ADD_SUBSCRIPTION_TO_TXN before its ACK)";

/// Why `deduplication: true` does not go with a transform through the own client.
pub(crate) const DEDUP_OWN_TRANSFORM: &str = "applies to a producer's sequence ids, and the own client's transform outputs do not use them (through `client: java` or `go` the official producer's do)";

/// The transform's keys, or `None` for the producer's workload (where they are refused).
pub(super) fn validate_transform(
    w: &WorkloadFile,
    concurrency: u32,
) -> Result<Option<Transform>, Invalid> {
    if w.kind.unwrap_or_default() == WorkloadKind::Produce {
        for (field, set) in [
            ("consumers", w.consumers.is_some()),
            ("subscription_type", w.subscription_type.is_some()),
            ("function", w.function.is_some()),
            ("input_transactional", w.input_transactional.is_some()),
            ("input_abort_every", w.input_abort_every.is_some()),
            ("input_batch_size", w.input_batch_size.is_some()),
            ("conflict_probe", w.conflict_probe.is_some()),
        ] {
            if set {
                return err(&["workload", field], "goes with `kind: transform` only");
            }
        }
        return Ok(None);
    }
    let consumers = w.consumers.unwrap_or(concurrency);
    if !(1..=1024).contains(&consumers) {
        return err(&["workload", "consumers"], "must be between 1 and 1024");
    }
    // The producer's keys that mean nothing to the transform are refused rather than ignored.
    for (field, set, why) in [
        (
            "transactions",
            w.transactions == Some(false),
            "a transform runs in transactions (transactions: false is the producer's baseline)",
        ),
        (
            "rate",
            w.rate.is_some(),
            "applies to the producer; a transform consumes as fast as it goes",
        ),
        (
            "deduplication",
            w.deduplication == Some(true) && !w.client.unwrap_or_default().is_foreign(),
            DEDUP_OWN_TRANSFORM,
        ),
        (
            "resend",
            matches!(w.resend, Some(ResendPolicy::Naive | ResendPolicy::Verify)),
            "a transform never resends its outputs: after an unknown commit outcome it retries the commit (retry-commit) and leaves the rest to the subscription (an aborted transaction's inputs come again)",
        ),
    ] {
        if set {
            return err(&["workload", field], format!("does not go with `kind: transform`: {why}"));
        }
    }
    let input_abort_every = w.input_abort_every;
    if let Some(k) = input_abort_every {
        if k < 2 {
            return err(&["workload", "input_abort_every"], "must be at least 2");
        }
        if w.input_transactional != Some(true) {
            return err(
                &["workload", "input_abort_every"],
                "goes with `input_transactional: true` (it aborts transactions of the fill)",
            );
        }
    }
    if let Some(n) = w.input_batch_size {
        if !(1..=1000).contains(&n) {
            return err(
                &["workload", "input_batch_size"],
                "must be between 1 and 1000",
            );
        }
    }
    let conflict_probe = w.conflict_probe.unwrap_or_default();
    if conflict_probe != ConflictProbe::Abort && w.client.unwrap_or_default().is_foreign() {
        return err(&["workload", "conflict_probe"], PROBE_OWN_ONLY);
    }
    Ok(Some(Transform {
        consumers,
        subscription_type: w.subscription_type.unwrap_or_default(),
        function: w.function.unwrap_or_default(),
        input_transactional: w.input_transactional.unwrap_or(false),
        input_abort_every,
        input_batch_size: w.input_batch_size,
        conflict_probe,
    }))
}

/// Sabotage is the producer's (numbers never sent, sent twice); a transform refuses it.
pub(super) fn check_sabotage(raw: &ScenarioFile) -> Result<(), Invalid> {
    if raw.workload.kind == Some(WorkloadKind::Transform) && raw.sabotage.is_some() {
        return err(
            &["sabotage"],
            "does not go with `kind: transform` (sabotage changes what the producer sends)",
        );
    }
    Ok(())
}
