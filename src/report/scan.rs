//! The one pass over `history.jsonl` that the run page needs beyond the verdict: commits,
//! aborts, ambiguous commits and commit latency folded into [`TimeBuckets`], the faults as
//! they started and healed (with the replies a `reply_loss` fault dropped), the faults that
//! were skipped or failed, when each anomalous attempt first learned an outcome, and the
//! read-backs held after every fault healed with the remedies tried on them. The memory is
//! bounded: fixed buckets, the attempts in flight, the ambiguous attempts not yet resolved,
//! and at most [`MAX_FAULTS`] fault, stuck-read and remedy events of each kind.

use std::collections::HashMap;
use std::path::Path;

use super::buckets::TimeBuckets;
use super::fmt::fmt_t;
use crate::history::{EventBody, HistoryError, Outcome, TxnId};

/// Fault events kept for the report (a plan has far fewer).
const MAX_FAULTS: usize = 5000;
/// Dropped replies listed per fault in the faults table.
pub(super) const MAX_DROPS_SHOWN: usize = 20;

/// One fault as the history tells it, from `fault_started` to `fault_healed`.
#[derive(Debug, Clone)]
pub(super) struct FaultSpan {
    pub(super) name: String,
    pub(super) kind: String,
    pub(super) target: String,
    pub(super) planned_ms: Option<u64>,
    pub(super) action: String,
    pub(super) detail: String,
    pub(super) started_ms: u64,
    pub(super) healed_ms: Option<u64>,
    pub(super) heal_ok: Option<bool>,
    pub(super) heal_action: String,
    pub(super) heal_detail: String,
    /// What a `reply_loss` fault dropped (the first MAX_DROPS_SHOWN), and how many in all.
    pub(super) drops: Vec<String>,
    pub(super) drops_n: u64,
}

/// A fault that was skipped or whose injection failed.
#[derive(Debug, Clone)]
pub(super) struct FaultNote {
    pub(super) t_ms: u64,
    pub(super) fault: String,
    pub(super) why: String,
}

/// A read-back held after every fault healed, as the history tells it: from `read_stuck`'s
/// `since_ms` to the first `remedy_tried` that healed it.
#[derive(Debug, Clone)]
pub(super) struct StuckSpan {
    pub(super) since_ms: u64,
    /// When the harness gave up waiting (the time of `read_stuck`).
    pub(super) detected_ms: u64,
    pub(super) partitions: Vec<String>,
    /// When the first remedy that healed it ended, and its name.
    pub(super) healed: Option<(u64, String)>,
}

/// One `remedy_tried` event: the remedy ended at `t_ms` after `elapsed_ms`.
#[derive(Debug, Clone)]
pub(super) struct RemedyMark {
    pub(super) t_ms: u64,
    pub(super) remedy: String,
    pub(super) targets: Vec<String>,
    pub(super) healed: bool,
    pub(super) elapsed_ms: u64,
}

/// A node's own exit (`node_exited`) and what the supervisor's restart of it came to
/// (`node_restarted`).
#[derive(Debug, Clone)]
pub(super) struct OwnExit {
    pub(super) t_ms: u64,
    pub(super) node: String,
    pub(super) container: String,
    pub(super) exit_code: Option<i64>,
    pub(super) oom_killed: bool,
    pub(super) log: Vec<String>,
    /// (when, served again, after how long, detail).
    pub(super) restarted: Option<(u64, bool, u64, String)>,
}

/// An attempt opened and not yet ended.
struct OpenAttempt {
    messages: u64,
    commit_ms: Option<u64>,
}

/// What one pass over the history gathers. Memory: the timeline (fixed), the attempts in
/// flight, the ambiguous attempts not yet resolved, and the fault events.
#[derive(Default)]
pub(super) struct Scan {
    pub(super) timeline: TimeBuckets,
    open: HashMap<u64, OpenAttempt>,
    /// Ambiguous attempts not yet resolved -> their message count.
    ambiguous: HashMap<u64, u64>,
    pub(super) faults: Vec<FaultSpan>,
    open_faults: HashMap<String, usize>,
    pub(super) faults_dropped: u64,
    pub(super) skipped: Vec<FaultNote>,
    pub(super) failed: Vec<FaultNote>,
    pub(super) end_ms: u64,
    pub(super) events: u64,
    pub(super) messages_committed: u64,
    messages_resolved: u64,
    /// Lines that could not be read, and the first such problem (or why there is no history).
    pub(super) unreadable: u64,
    pub(super) problem: Option<String>,
    /// The anomalous attempts of the verdict -> when the producer first learned an outcome
    /// (their records keep only the last time, which may be a much later resolution).
    pub(super) first_outcome: HashMap<u64, Option<u64>>,
    /// When the producer finished.
    pub(super) finished_ms: Option<u64>,
    /// Read-backs held after every fault healed, and the remedies tried on them.
    pub(super) stuck: Vec<StuckSpan>,
    pub(super) remedies: Vec<RemedyMark>,
    /// Nodes that exited on their own (Pulsar's own exits), and their restarts.
    pub(super) exits: Vec<OwnExit>,
}

impl Scan {
    /// Fold the event at time `t` in.
    pub(super) fn add(&mut self, t: u64, body: EventBody) {
        self.events += 1;
        self.end_ms = self.end_ms.max(t);
        match body {
            EventBody::TxnOpened {
                attempt, numbers, ..
            } => {
                let messages = numbers.iter().map(|(a, b)| b.saturating_sub(*a)).sum();
                self.open.insert(
                    attempt,
                    OpenAttempt {
                        messages,
                        commit_ms: None,
                    },
                );
            }
            EventBody::CommitRequested {
                attempt, try_no: 1, ..
            } => {
                if let Some(a) = self.open.get_mut(&attempt) {
                    a.commit_ms.get_or_insert(t);
                }
            }
            EventBody::TxnOutcome {
                attempt, outcome, ..
            } => self.outcome(t, attempt, outcome),
            EventBody::TxnResolved {
                attempt, resolved, ..
            } => self.resolved(t, attempt, resolved),
            EventBody::FaultStarted {
                fault,
                kind,
                target,
                planned_ms,
                action,
                detail,
            } => self.fault_started(FaultSpan {
                name: fault,
                kind,
                target,
                planned_ms,
                action,
                detail,
                started_ms: t,
                healed_ms: None,
                heal_ok: None,
                heal_action: String::new(),
                heal_detail: String::new(),
                drops: Vec::new(),
                drops_n: 0,
            }),
            EventBody::ReplyDropped {
                fault,
                command,
                request_id,
                txn,
            } => self.reply_dropped(t, &fault, &command, request_id, txn),
            EventBody::FaultHealed {
                fault,
                action,
                ok,
                detail,
            } => self.fault_healed(t, &fault, ok, action, detail),
            EventBody::ProducerFinished { .. } => {
                self.finished_ms.get_or_insert(t);
            }
            EventBody::FaultSkipped { fault, reason } if self.skipped.len() < MAX_FAULTS => {
                self.skipped.push(FaultNote {
                    t_ms: t,
                    fault,
                    why: reason,
                });
            }
            EventBody::FaultFailed { fault, error } if self.failed.len() < MAX_FAULTS => {
                self.failed.push(FaultNote {
                    t_ms: t,
                    fault,
                    why: error,
                });
            }
            body @ (EventBody::ReadStuck { .. } | EventBody::RemedyTried { .. }) => {
                self.stuck_event(t, body)
            }
            EventBody::NodeExited {
                node,
                container,
                exit_code,
                oom_killed,
                log,
            } if self.exits.len() < MAX_FAULTS => self.exits.push(OwnExit {
                t_ms: t,
                node,
                container,
                exit_code,
                oom_killed,
                log,
                restarted: None,
            }),
            EventBody::NodeRestarted {
                node,
                ok,
                ready_ms,
                detail,
            } => {
                if let Some(e) = self
                    .exits
                    .iter_mut()
                    .rev()
                    .find(|e| e.node == node && e.restarted.is_none())
                {
                    e.restarted = Some((t, ok, ready_ms, detail));
                }
            }
            _ => {}
        }
    }

    /// The producer learned an attempt's outcome: count it, and its commit latency.
    fn outcome(&mut self, t: u64, attempt: u64, outcome: Outcome) {
        if let Some(first @ None) = self.first_outcome.get_mut(&attempt) {
            *first = Some(t);
        }
        let open = self.open.remove(&attempt);
        let messages = open.as_ref().map_or(0, |o| o.messages);
        let i = self.timeline.slot(t);
        let b = &mut self.timeline.buckets[i];
        match outcome {
            Outcome::Committed => {
                b.committed += messages;
                self.messages_committed += messages;
            }
            Outcome::Aborted => b.aborted += 1,
            Outcome::Ambiguous => {
                b.ambiguous += 1;
                self.ambiguous.insert(attempt, messages);
            }
        }
        if let Some(c) = open.and_then(|o| o.commit_ms) {
            self.timeline.latency(t, t.saturating_sub(c));
        }
    }

    /// An ambiguous attempt was resolved: its messages count when it was found committed.
    fn resolved(&mut self, t: u64, attempt: u64, resolved: Outcome) {
        let messages = self.ambiguous.remove(&attempt).unwrap_or(0);
        if resolved == Outcome::Committed {
            let i = self.timeline.slot(t);
            self.timeline.buckets[i].resolved += messages;
            self.messages_resolved += messages;
        }
    }

    fn fault_started(&mut self, f: FaultSpan) {
        if self.faults.len() >= MAX_FAULTS {
            self.faults_dropped += 1;
            return;
        }
        self.open_faults.insert(f.name.clone(), self.faults.len());
        self.faults.push(f);
    }

    /// A `reply_loss` fault dropped a reply: noted under the fault, the first
    /// [`MAX_DROPS_SHOWN`] in words. A drop by a fault not in flight is left out.
    fn reply_dropped(
        &mut self,
        t: u64,
        fault: &str,
        command: &str,
        request_id: u64,
        txn: Option<TxnId>,
    ) {
        let Some(i) = self.open_faults.get(fault) else {
            return;
        };
        let f = &mut self.faults[*i];
        f.drops_n += 1;
        if f.drops.len() < MAX_DROPS_SHOWN {
            f.drops.push(format!(
                "{}: dropped {command} (request {request_id}{})",
                fmt_t(t),
                match txn {
                    Some(x) => format!(", txn {x}"),
                    None => String::new(),
                }
            ));
        }
    }

    /// The read-back was held (a band from `since_ms` on), or a remedy was tried on it.
    fn stuck_event(&mut self, t: u64, body: EventBody) {
        match body {
            EventBody::ReadStuck {
                since_ms,
                partitions,
                ..
            } if self.stuck.len() < MAX_FAULTS => self.stuck.push(StuckSpan {
                since_ms,
                detected_ms: t,
                partitions,
                healed: None,
            }),
            EventBody::RemedyTried {
                remedy,
                targets,
                healed,
                elapsed_ms,
                ..
            } => self.remedy_tried(RemedyMark {
                t_ms: t,
                remedy,
                targets,
                healed,
                elapsed_ms,
            }),
            _ => {}
        }
    }

    /// A remedy was tried: marked, and the end of the stuck read it healed.
    fn remedy_tried(&mut self, r: RemedyMark) {
        if r.healed {
            if let Some(span) = self.stuck.iter_mut().rev().find(|s| s.healed.is_none()) {
                span.healed = Some((r.t_ms, r.remedy.clone()));
            }
        }
        if self.remedies.len() < MAX_FAULTS {
            self.remedies.push(r);
        }
    }

    fn fault_healed(&mut self, t: u64, fault: &str, ok: bool, action: String, detail: String) {
        if let Some(i) = self.open_faults.remove(fault) {
            let f = &mut self.faults[i];
            f.healed_ms = Some(t);
            f.heal_ok = Some(ok);
            f.heal_action = action;
            f.heal_detail = detail;
        }
    }
}

/// Stream a history file into a [`Scan`], noting when the attempts `watch` first learned an
/// outcome. A missing or damaged history does not stop the report: the page says what could
/// not be read.
pub(super) fn scan_history(path: &Path, watch: &[u64]) -> Scan {
    let mut s = Scan {
        first_outcome: watch.iter().map(|a| (*a, None)).collect(),
        ..Scan::default()
    };
    let events = match crate::history::read(path) {
        Ok(events) => events,
        Err(e) => {
            s.problem = Some(e.to_string());
            return s;
        }
    };
    for ev in events {
        match ev {
            Ok(ev) => s.add(ev.t_ms, ev.body),
            Err(e) => {
                s.unreadable += 1;
                let stop = matches!(e, HistoryError::Read { .. });
                if s.problem.is_none() {
                    s.problem = Some(e.to_string());
                }
                if stop {
                    break;
                }
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::buckets::BUCKETS;

    fn txn(n: u64) -> TxnId {
        TxnId { most: 1, least: n }
    }

    #[test]
    fn dropped_replies_are_listed_with_their_fault() {
        let mut s = Scan::default();
        s.add(
            100,
            EventBody::FaultStarted {
                fault: "reply_loss-0#1".into(),
                kind: "reply_loss".into(),
                target: "the producer's connections (reply_loss proxy)".into(),
                planned_ms: Some(100),
                action: "arm".into(),
                detail: String::new(),
            },
        );
        for i in 0..(MAX_DROPS_SHOWN as u64 + 2) {
            s.add(
                200 + i,
                EventBody::ReplyDropped {
                    fault: "reply_loss-0#1".into(),
                    command: "END_TXN_RESPONSE".into(),
                    request_id: 7 + i,
                    txn: Some(txn(3)),
                },
            );
        }
        // A drop of a fault the table does not know is left out, not a panic.
        s.add(
            300,
            EventBody::ReplyDropped {
                fault: "other".into(),
                command: "SEND_RECEIPT".into(),
                request_id: 1,
                txn: None,
            },
        );
        let f = &s.faults[0];
        assert_eq!(f.drops_n, MAX_DROPS_SHOWN as u64 + 2);
        assert_eq!(f.drops.len(), MAX_DROPS_SHOWN);
        assert!(
            f.drops[0].contains("dropped END_TXN_RESPONSE (request 7, txn "),
            "{:?}",
            f.drops
        );
    }

    #[test]
    fn a_stuck_read_ends_at_the_first_remedy_that_healed_it() {
        let mut s = Scan::default();
        let remedy = |remedy: &str, healed: bool| EventBody::RemedyTried {
            remedy: remedy.into(),
            targets: vec!["t-partition-0".into()],
            healed,
            elapsed_ms: 500,
            detail: String::new(),
        };
        s.add(
            9000,
            EventBody::ReadStuck {
                since_ms: 4000,
                partitions: vec!["t-partition-0".into()],
                detail: String::new(),
            },
        );
        s.add(10_000, remedy("re-end", false));
        s.add(11_000, remedy("unload-coordinator", true));
        s.add(12_000, remedy("unload-topic", true));
        assert_eq!(s.stuck.len(), 1);
        let st = &s.stuck[0];
        assert_eq!((st.since_ms, st.detected_ms), (4000, 9000));
        assert_eq!(st.healed, Some((11_000, "unload-coordinator".to_string())));
        let marks: Vec<(u64, &str, bool)> = s
            .remedies
            .iter()
            .map(|r| (r.t_ms, r.remedy.as_str(), r.healed))
            .collect();
        assert_eq!(
            marks,
            [
                (10_000, "re-end", false),
                (11_000, "unload-coordinator", true),
                (12_000, "unload-topic", true)
            ]
        );
        assert_eq!(s.end_ms, 12_000);
    }

    #[test]
    fn a_long_run_folds_into_at_most_200_buckets() {
        let mut s = Scan::default();
        let hours = 10 * 3_600_000;
        let mut committed = 0;
        let mut attempt = 0;
        let mut t = 0;
        while t < hours {
            attempt += 1;
            s.add(
                t,
                EventBody::TxnOpened {
                    attempt,
                    txn: txn(attempt),
                    numbers: vec![(0, 7)],
                    resend_of: None,
                },
            );
            s.add(
                t + 1,
                EventBody::CommitRequested {
                    attempt,
                    txn: txn(attempt),
                    try_no: 1,
                },
            );
            s.add(
                t + 21,
                EventBody::TxnOutcome {
                    attempt,
                    txn: txn(attempt),
                    outcome: Outcome::Committed,
                    detail: String::new(),
                },
            );
            committed += 7;
            t += 9_973;
        }
        let tl = &s.timeline;
        assert!(tl.width_ms * BUCKETS as u64 > s.end_ms);
        assert!(tl.width_ms * (BUCKETS as u64 / 2) <= s.end_ms);
        let total: u64 = tl.buckets.iter().map(|b| b.committed).sum();
        assert_eq!(total, committed);
        assert_eq!(s.messages_committed, committed);
        assert!(s.open.is_empty());
        let n: u64 = tl.buckets.iter().map(|b| b.lat_n).sum();
        assert_eq!(n, attempt);
        assert_eq!(tl.hist.iter().sum::<u64>(), attempt);
        assert_eq!(tl.total_quantile(0.99), Some(20));
        for i in 0..BUCKETS {
            if tl.buckets[i].lat_n > 0 {
                assert_eq!(tl.bucket_quantile(i, 0.99), Some(20));
            }
        }
    }
}
