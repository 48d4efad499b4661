//! The consumer side of a transform run (`kind: transform`): what the history says of its
//! transactions (redeliveries, conflict probes) and what Pulsar's admin API said of the input
//! subscription's backlog after the read-back, judged.
//!
//! Grading, on top of the output's range check:
//! - a conflict probe that Pulsar accepted (an input acknowledged in two open transactions)
//!   is a violation of its own kind, with the broker's answer as evidence, when the holding
//!   transaction later committed (so it was open when the probe was accepted); when the holder
//!   ended aborted or its outcome stayed unknown, the coordinator may have timed it out before
//!   the probe (its acknowledgements released: then the acceptance is right), so that is a note;
//! - a backlog above 0 on a partition, when the harness finished every input, the outputs
//!   are complete and the admin API answered, is a violation: every input's output was
//!   committed together with its acknowledgement, yet Pulsar still holds inputs;
//! - a backlog above 0 when the harness stopped early is the harness's: inconclusive (the run
//!   is already, its workload did not finish), never a violation;
//! - a backlog the admin API did not report is a note.

use serde::{Deserialize, Serialize};

use crate::history::{EventBody, ProbeOutcome, TxnId};

pub mod held;
pub use held::HeldEvidence;

/// The subscription's backlog on one input partition, as the admin API reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionBacklog {
    pub partition: String,
    /// `msgBacklog`; `None`: not reported (the call failed or the subscription is absent).
    pub backlog: Option<u64>,
    /// The request and the part of its answer that matters, quoted.
    pub evidence: String,
}

/// What the runner gathered about the input subscription (stored in `readback.json` with the
/// rest of the context).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConsumerEvidence {
    pub input_topic: String,
    pub subscription: String,
    pub backlog: Vec<PartitionBacklog>,
    /// The entries the subscription still held, looked at (gathered only when the backlog
    /// stayed above 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<HeldEvidence>,
}

/// One conflict probe, from the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeRecord {
    pub t_ms: u64,
    pub attempt: u64,
    pub probe: TxnId,
    pub held_by: TxnId,
    pub message: String,
    pub outcome: ProbeOutcome,
    pub answer: String,
}

/// The verdict's consumer section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConsumerSummary {
    pub input_topic: String,
    pub subscription: String,
    /// Attempts that took inputs (each a transaction).
    pub transactions: u64,
    /// Inputs taken in all (with every processing again).
    pub inputs_taken: u64,
    /// Inputs taken that had been delivered before.
    pub inputs_redelivered: u64,
    /// Attempts whose inputs were handed back (REDELIVER_UNACKNOWLEDGED_MESSAGES), and how
    /// many inputs so.
    pub redeliveries: u64,
    pub inputs_handed_back: u64,
    /// ACKs in a transaction that were not acknowledged (refused, aborted, unknown, not sent).
    pub acks_failed: u64,
    pub probes: u64,
    pub probes_refused: u64,
    pub probes_accepted: u64,
    /// Probes Pulsar did not answer at all (see `ProbeOutcome::Unanswered`): a note.
    pub probes_unanswered: u64,
    /// Every probe (few per run).
    pub probe_records: Vec<ProbeRecord>,
    /// What became of each probe's holding transaction, as the history tells it (committed,
    /// aborted, ambiguous; absent: no outcome recorded).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub holders: std::collections::BTreeMap<String, crate::history::Outcome>,
    pub backlog: Vec<PartitionBacklog>,
    /// How long an attempt's ACKs took: from its `sends_acked` (the ACKs go out right after)
    /// to its `inputs_acked` (every ACK answered), over the attempts whose every ACK was
    /// acknowledged. `None`: no such attempt.
    pub ack_latency: Option<AckLatency>,
    /// The violations this section found (empty: none).
    pub findings: Vec<String>,
    /// `sends_acked` times of attempts whose ACKs are not answered yet (while counting).
    #[serde(skip)]
    acks_pending: std::collections::BTreeMap<u64, u64>,
    /// One sample (ms) per attempt whose ACKs were all acknowledged (while counting).
    #[serde(skip)]
    ack_samples: Vec<u64>,
    /// Which transactions took which inputs, and how they ended (to explain held entries).
    #[serde(skip)]
    acknowledgers: held::Acknowledgers,
}

/// The ACK latency of a transform run, in milliseconds of the history's clock: from an
/// attempt's `sends_acked` to its `inputs_acked` (the ACKs go out with the SENDs, so this is
/// what they add after the last receipt).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckLatency {
    /// Attempts measured.
    pub attempts: u64,
    pub median_ms: u64,
    pub p99_ms: u64,
    pub max_ms: u64,
}

impl AckLatency {
    /// Nearest-rank percentiles of the samples; `None` when there are none.
    pub fn of(samples: &mut [u64]) -> Option<AckLatency> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let rank = |q: f64| {
            let i = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
            samples[i - 1]
        };
        Some(AckLatency {
            attempts: samples.len() as u64,
            median_ms: rank(0.5),
            p99_ms: rank(0.99),
            max_ms: samples[samples.len() - 1],
        })
    }
}

impl ConsumerSummary {
    /// Count one event of the history (`history_view` hands every one).
    pub(super) fn event(&mut self, t_ms: u64, body: &EventBody) {
        match body {
            EventBody::InputsTaken {
                attempt,
                inputs,
                redelivered,
                ..
            } => {
                self.acknowledgers.taken(*attempt, inputs);
                self.transactions += 1;
                self.inputs_taken += inputs.iter().map(|(a, b)| b - a).sum::<u64>();
                self.inputs_redelivered += redelivered;
            }
            EventBody::InputsRedelivered { inputs, .. } => {
                self.redeliveries += 1;
                self.inputs_handed_back += inputs.iter().map(|(a, b)| b - a).sum::<u64>();
            }
            EventBody::SendsAcked { attempt, .. } => {
                self.acks_pending.insert(*attempt, t_ms);
            }
            EventBody::InputsAcked {
                attempt, answer, ..
            } => {
                let sent = self.acks_pending.remove(attempt);
                if answer != "acked" {
                    self.acks_failed += 1;
                } else if let Some(sent) = sent {
                    self.ack_samples.push(t_ms.saturating_sub(sent));
                }
            }
            EventBody::TxnOutcome {
                attempt,
                txn,
                outcome,
                ..
            } => {
                self.acknowledgers.ended(*attempt, *txn, *outcome);
                self.holder_ended(*txn, *outcome)
            }
            EventBody::TxnResolved {
                attempt,
                txn,
                resolved,
                ..
            } => {
                self.acknowledgers.ended(*attempt, *txn, *resolved);
                self.holder_ended(*txn, *resolved)
            }
            EventBody::ConflictProbe {
                attempt,
                probe,
                held_by,
                message,
                outcome,
                answer,
            } => {
                self.probes += 1;
                match outcome {
                    ProbeOutcome::Refused => self.probes_refused += 1,
                    ProbeOutcome::Accepted => self.probes_accepted += 1,
                    ProbeOutcome::Unanswered => self.probes_unanswered += 1,
                    ProbeOutcome::Unknown => {}
                }
                self.probe_records.push(ProbeRecord {
                    t_ms,
                    attempt: *attempt,
                    probe: *probe,
                    held_by: *held_by,
                    message: message.clone(),
                    outcome: *outcome,
                    answer: answer.clone(),
                });
            }
            _ => {}
        }
    }

    /// A transaction's outcome, kept when it holds a probed input (probes come before their
    /// holder's end: it was open when probed). A later definitive word replaces an ambiguous one.
    fn holder_ended(&mut self, txn: TxnId, outcome: crate::history::Outcome) {
        if self.probe_records.iter().any(|p| p.held_by == txn) {
            let e = self.holders.entry(txn.to_string()).or_insert(outcome);
            if *e == crate::history::Outcome::Ambiguous {
                *e = outcome;
            }
        }
    }

    /// Judge the probes and the backlog (see the module's doc). `finished`: the harness
    /// finished every input (its `producer_finished` says complete); `outputs_complete`: the
    /// read-back found no number missing. Violations go to `self.findings` (and are returned),
    /// reasons for an inconclusive verdict and notes to the given lists. Pure.
    pub fn judge(
        &mut self,
        evidence: Option<&ConsumerEvidence>,
        finished: bool,
        outputs_complete: bool,
        reasons: &mut Vec<String>,
        notes: &mut Vec<String>,
    ) -> bool {
        self.ack_latency = AckLatency::of(&mut std::mem::take(&mut self.ack_samples));
        self.acks_pending.clear();
        for p in self
            .probe_records
            .iter()
            .filter(|p| p.outcome == ProbeOutcome::Accepted)
        {
            use crate::history::Outcome;
            match self.holders.get(&p.held_by.to_string()) {
                Some(Outcome::Committed) => self.findings.push(format!(
                    "conflict probe {} acknowledged {}, which transaction {} of attempt {} held acknowledged and open (it committed afterwards, so it was open), and Pulsar answered {} (TransactionConflict expected)",
                    p.probe, p.message, p.held_by, p.attempt, p.answer
                )),
                holder => notes.push(format!(
                    "conflict probe {} acknowledging {} was accepted ({}), but its holder {} of attempt {} {}: the coordinator may have timed it out before the probe, releasing its acknowledgements, so the acceptance is not graded",
                    p.probe,
                    p.message,
                    p.answer,
                    p.held_by,
                    p.attempt,
                    match holder {
                        Some(Outcome::Aborted) => "ended aborted",
                        Some(_) => "ended with an outcome the client could not learn",
                        None => "has no recorded outcome",
                    }
                )),
            }
        }
        if let Some(p) = self
            .probe_records
            .iter()
            .find(|p| p.outcome == ProbeOutcome::Unanswered)
        {
            notes.push(format!(
                "{} of {} conflict probe(s) got no answer at all, neither the refusal (TransactionConflict) nor an acceptance; the first: probe {} acknowledging {} held by {} ({})",
                self.probes_unanswered, self.probes, p.probe, p.message, p.held_by, p.answer
            ));
        }
        if let Some(e) = evidence {
            self.input_topic = e.input_topic.clone();
            self.subscription = e.subscription.clone();
            self.backlog = e.backlog.clone();
        }
        let held: Vec<&PartitionBacklog> = self
            .backlog
            .iter()
            .filter(|b| b.backlog.is_some_and(|n| n > 0))
            .collect();
        let unknown: Vec<&PartitionBacklog> = self
            .backlog
            .iter()
            .filter(|b| b.backlog.is_none())
            .collect();
        if !unknown.is_empty() {
            notes.push(format!(
                "the input subscription's backlog was not reported for {} partition(s) ({})",
                unknown.len(),
                unknown[0].evidence
            ));
        }
        if !held.is_empty() {
            let words = held
                .iter()
                .map(|b| {
                    format!(
                        "{} on {} ({})",
                        b.backlog.unwrap_or(0),
                        b.partition,
                        b.evidence
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            if finished && outputs_complete {
                let head = format!(
                    "every input's output was committed with its acknowledgement, yet the subscription still holds input(s): {words}"
                );
                match evidence.and_then(|e| e.held.as_ref()) {
                    Some(h) if !h.entries.is_empty() => {
                        let kinds = self.acknowledgers.classify(&h.entries);
                        let mut found = Vec::new();
                        held::judge_held(h, &kinds, &mut found, notes);
                        if found.is_empty() && h.total > h.entries.len() as u64 {
                            found.push(format!(
                                "{} held entries were not looked at (the first {} were)",
                                h.total - h.entries.len() as u64,
                                h.entries.len()
                            ));
                        }
                        let none = found.is_empty();
                        self.findings
                            .extend(found.into_iter().map(|f| format!("{head}. {f}")));
                        if none {
                            notes.push(format!("{head}, but nothing it holds can be delivered"));
                        }
                    }
                    _ => self.findings.push(head),
                }
            } else {
                reasons.push(format!(
                    "the input subscription still holds input(s), but the transform did not finish every input, so that is the harness's: {words}"
                ));
                if let Some(h) = evidence.and_then(|e| e.held.as_ref()) {
                    if let Some(n) = self.acknowledgers.unfinished_note(h) {
                        notes.push(n);
                    }
                }
            }
        }
        !self.findings.is_empty()
    }
}

#[cfg(test)]
mod tests;
