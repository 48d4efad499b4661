//! The history read in one pass ([`scan_history`]): the producer's counts, the faults with
//! their recovery times, a stall, and in full only the attempts that carried an anomalous
//! number ([`HistoryView`]).

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use rangemap::RangeInclusiveSet;

use super::faults_fired::Fate;
use super::model::{AttemptRecord, FaultRecord, ProducerSummary, StallFinding};
use crate::history::{Event, EventBody, Outcome, TxnId};

/// What the history says, gathered in one pass. Only attempts that carried an anomalous
/// number are kept in full.
#[derive(Debug, Default)]
pub(super) struct HistoryView {
    pub(super) attempts: BTreeMap<u64, AttemptRecord>,
    pub(super) faults: Vec<FaultRecord>,
    pub(super) producer: ProducerSummary,
    saw_producer: bool,
    /// For each fault (same index as `faults`): the last commit seen before it started.
    commit_before: Vec<Option<u64>>,
    /// Faults healed whose first commit after the heal is not seen yet.
    awaiting_recovery: Vec<usize>,
    last_commit: Option<u64>,
    /// Failures since the last commit or heal: shape -> (count, first detail).
    failing: BTreeMap<String, (u64, String)>,
    failing_n: u64,
    pub(super) stall: Option<StallFinding>,
    /// History lines that could not be read, and the first error.
    pub(super) unreadable: u64,
    pub(super) first_error: Option<String>,
    /// A transform run's consumer side (empty for the producer's).
    pub(super) consumer: super::consumer::ConsumerSummary,
    /// What became of each fault firing the history names, by name (the last word wins).
    pub(super) fates: BTreeMap<String, Fate>,
    /// The client's failed answers and what the history says of every attempt.
    pub(super) answers: super::client_answers::Collector,
    /// The run's topic (`run_started`).
    topic: String,
    /// Sends refused, since the last progress, with an answer naming another transaction.
    foreign: crate::stall::ForeignRefusals,
}

impl HistoryView {
    fn progress(&mut self) {
        self.failing.clear();
        self.failing_n = 0;
        self.foreign.clear();
    }

    fn failed(&mut self, detail: &str) {
        self.failing_n += 1;
        let shape = crate::stall::shape(detail);
        if let Some(e) = self.failing.get_mut(&shape) {
            e.0 += 1;
        } else if self.failing.len() < 64 {
            self.failing.insert(shape, (1, detail.to_string()));
        }
    }

    fn commit_at(&mut self, t: u64) {
        self.progress();
        self.last_commit = Some(self.last_commit.map_or(t, |c| c.max(t)));
        let faults = &mut self.faults;
        let before = &self.commit_before;
        self.awaiting_recovery.retain(|&i| {
            let f = &mut faults[i];
            match f.healed_ms {
                Some(h) if t >= h => {
                    f.recovery_ms = Some(t - h);
                    f.commit_gap_ms = before[i].map(|b| t.saturating_sub(b));
                    false
                }
                _ => true,
            }
        });
    }

    /// The harness stopped the producer at `t`: nothing committed from `since_ms` on.
    fn stalled(&mut self, t: u64, since_ms: u64) {
        let mut failures: Vec<(u64, String)> = self.failing.values().cloned().collect();
        failures.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        failures.truncate(3);
        self.stall = Some(StallFinding {
            since_ms,
            detected_ms: t,
            failed_attempts: self.failing_n,
            failures,
            broker_log: Vec::new(),
            // The brokers' lines, when they show a known cause, take its place (the runner
            // gathers them; see `verdict::stall_finding`).
            likely_cause: self.foreign.cause(&self.topic),
            partitions: Vec::new(),
        });
    }
}

fn intersects(numbers: &[(u64, u64)], anomalies: &RangeInclusiveSet<u64>) -> bool {
    numbers
        .iter()
        .any(|(s, e)| *e > *s && anomalies.overlaps(&(*s..=*e - 1)))
}

/// Read the history in one pass. Lines that cannot be read are counted (the first error is
/// kept) and skipped.
pub(super) fn scan_history<I, E>(events: I, anomalies: &RangeInclusiveSet<u64>) -> HistoryView
where
    I: IntoIterator<Item = Result<Event, E>>,
    E: fmt::Display,
{
    let mut scan = Scan {
        v: HistoryView::default(),
        anomalies,
        open_faults: HashMap::new(),
        dropped: HashMap::new(),
    };
    for ev in events {
        let ev = match ev {
            Ok(ev) => ev,
            Err(e) => {
                scan.v.unreadable += 1;
                if scan.v.first_error.is_none() {
                    scan.v.first_error = Some(e.to_string());
                }
                continue;
            }
        };
        scan.event(ev.t_ms, ev.body);
    }
    scan.finish()
}

/// One pass over the history: the view being filled, and what the pass needs only while it
/// runs.
struct Scan<'a> {
    v: HistoryView,
    anomalies: &'a RangeInclusiveSet<u64>,
    /// Fault name -> its index in `v.faults`, from its start to its heal.
    open_faults: HashMap<String, usize>,
    /// The replies the harness dropped, by transaction (at most 8 each).
    dropped: HashMap<TxnId, Vec<String>>,
}

impl Scan<'_> {
    fn event(&mut self, t: u64, body: EventBody) {
        let v = &mut self.v;
        v.consumer.event(t, &body);
        v.answers.event(&body);
        match body {
            EventBody::TxnOpened {
                attempt,
                txn,
                numbers,
                ..
            } => self.txn_opened(t, attempt, txn, numbers),
            EventBody::CommitRequested {
                attempt, try_no, ..
            } => {
                if let Some(a) = v.attempts.get_mut(&attempt) {
                    a.commit_tries = a.commit_tries.max(try_no);
                }
            }
            EventBody::TxnOutcome {
                attempt,
                outcome,
                detail,
                ..
            } => self.txn_outcome(t, attempt, outcome, detail),
            EventBody::TxnResolved {
                attempt,
                resolved,
                how,
                ..
            } => self.txn_resolved(t, attempt, resolved, &how),
            EventBody::ResendScheduled {
                attempt, reason, ..
            } => {
                if let Some(a) = v.attempts.get_mut(&attempt) {
                    a.resent = true;
                    a.resend_reason = Some(reason);
                }
            }
            EventBody::ResendWithheld {
                attempt, reason, ..
            } => {
                v.producer.withheld += 1;
                if let Some(a) = v.attempts.get_mut(&attempt) {
                    a.withheld = true;
                    a.withheld_reason = Some(reason);
                }
            }
            EventBody::FaultStarted {
                fault,
                kind,
                target,
                action,
                ..
            } => self.fault_started(t, fault, kind, target, action),
            EventBody::FaultApplied { fault, action, .. } => {
                if let Some(i) = self.open_faults.get(&fault) {
                    v.faults[*i].action = action;
                }
            }
            EventBody::FaultFailed { fault, error } => {
                v.fates.insert(fault.clone(), Fate::Failed(error));
                if let Some(i) = self.open_faults.remove(&fault) {
                    v.faults[i].applied = false;
                    v.faults[i].healed_ms = Some(t);
                }
            }
            EventBody::FaultHealed { fault, ok, .. } => {
                v.progress();
                if let Some(i) = self.open_faults.remove(&fault) {
                    v.faults[i].healed_ms = Some(t);
                    v.faults[i].heal_ok = ok;
                    v.awaiting_recovery.push(i);
                }
            }
            EventBody::FaultSkipped { fault, reason } => {
                v.fates.insert(fault, Fate::Skipped(reason));
            }
            EventBody::Stalled { since_ms, .. } => v.stalled(t, since_ms),
            EventBody::RunStarted { topic, .. } => v.topic = topic,
            EventBody::ClientAnswer {
                attempt,
                txn,
                op,
                message,
                ..
            } if op == "send" => v.foreign.answer(attempt, txn, &message),
            EventBody::ReplyDropped {
                fault,
                command,
                txn: Some(txn),
                ..
            } => {
                let d = self.dropped.entry(txn).or_default();
                if d.len() < 8 {
                    d.push(format!("{command} dropped by {fault} at t={}", secs(t)));
                }
            }
            EventBody::ProducerFinished {
                complete, detail, ..
            } => {
                v.saw_producer = true;
                v.producer.finished = true;
                v.producer.complete = complete;
                v.producer.stopped_because = (!complete)
                    .then(|| detail.lines().next().unwrap_or_default().to_string())
                    .filter(|d| !d.is_empty());
            }
            _ => {}
        }
    }

    fn txn_opened(&mut self, t: u64, attempt: u64, txn: TxnId, numbers: Vec<(u64, u64)>) {
        let v = &mut self.v;
        v.producer.attempts += 1;
        if intersects(&numbers, self.anomalies) {
            v.attempts.insert(
                attempt,
                AttemptRecord {
                    attempt,
                    txn,
                    numbers,
                    opened_ms: t,
                    outcome_ms: None,
                    ended_ms: None,
                    outcome: None,
                    detail: String::new(),
                    resolved: None,
                    resolved_how: None,
                    commit_tries: 0,
                    resent: false,
                    resend_reason: None,
                    withheld: false,
                    withheld_reason: None,
                    replies_dropped: Vec::new(),
                    faults: Vec::new(),
                },
            );
        }
    }

    fn txn_outcome(&mut self, t: u64, attempt: u64, outcome: Outcome, detail: String) {
        let v = &mut self.v;
        match outcome {
            Outcome::Committed => {
                v.producer.committed += 1;
                v.commit_at(t);
            }
            Outcome::Aborted => {
                v.producer.aborted += 1;
                v.failed(&detail);
            }
            Outcome::Ambiguous => {
                v.producer.ambiguous += 1;
                v.failed(&detail);
            }
        }
        if let Some(a) = v.attempts.get_mut(&attempt) {
            a.outcome = Some(outcome);
            a.detail = detail;
            a.outcome_ms.get_or_insert(t);
            a.ended_ms = Some(t);
        }
    }

    fn txn_resolved(&mut self, t: u64, attempt: u64, resolved: Outcome, how: &str) {
        let v = &mut self.v;
        match resolved {
            Outcome::Committed => {
                v.producer.resolved_committed += 1;
                v.commit_at(t);
            }
            _ => v.producer.resolved_aborted += 1,
        }
        if let Some(a) = v.attempts.get_mut(&attempt) {
            a.resolved = Some(resolved);
            a.resolved_how = Some(how.to_string());
            a.ended_ms = Some(t);
            if !a.detail.is_empty() {
                a.detail.push_str("; ");
            }
            a.detail.push_str(&format!("resolved {resolved} by {how}"));
        }
    }

    fn fault_started(
        &mut self,
        t: u64,
        fault: String,
        kind: String,
        target: String,
        action: String,
    ) {
        let v = &mut self.v;
        v.fates.insert(fault.clone(), Fate::Fired);
        self.open_faults.insert(fault.clone(), v.faults.len());
        v.commit_before.push(v.last_commit);
        v.faults.push(FaultRecord {
            fault,
            kind,
            target,
            started_ms: t,
            healed_ms: None,
            action,
            recovery_ms: None,
            commit_gap_ms: None,
            heal_ok: false,
            applied: true,
        });
    }

    /// The view, with each kept attempt's dropped replies and the faults active while it was
    /// open or committing.
    fn finish(self) -> HistoryView {
        let Scan { mut v, dropped, .. } = self;
        // Faults active while each attempt was open or committing: up to the first outcome the
        // producer learned (a later resolution is not part of the attempt's own window).
        for a in v.attempts.values_mut() {
            if let Some(d) = dropped.get(&a.txn) {
                a.replies_dropped = d.clone();
            }
            let end = a.outcome_ms.or(a.ended_ms).unwrap_or(u64::MAX);
            for f in &v.faults {
                let f_end = f.healed_ms.unwrap_or(u64::MAX);
                if f.started_ms <= end && f_end >= a.opened_ms {
                    a.faults.push(f.fault.clone());
                }
            }
        }
        v
    }
}

/// A run time in seconds, as the evidence lines write it: `12.3s`.
pub(super) fn secs(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

#[cfg(test)]
mod tests;
