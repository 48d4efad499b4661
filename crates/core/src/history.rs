//! The run's history: every operation of the producer and every fault as a timestamped event,
//! one JSON object per line in `history.jsonl`.
//!
//! An outcome the producer could not learn is written as `ambiguous`, never as committed or
//! aborted. When it is resolved later (by a retried commit or a read-back) that is a separate
//! `txn_resolved` event, so the original uncertainty stays on record.

use serde::{Deserialize, Serialize};

/// A transaction id as the coordinator gave it: (most significant bits = coordinator id, least).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub struct TxnId {
    pub most: u64,
    pub least: u64,
}

impl std::fmt::Display for TxnId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({},{})", self.most, self.least)
    }
}

/// What the producer learned of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The coordinator confirmed the commit.
    Committed,
    /// The transaction definitively did not commit (abort confirmed, or it failed before any
    /// commit was requested).
    Aborted,
    /// A commit was requested and no definitive answer came back.
    Ambiguous,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Outcome::Committed => "committed",
            Outcome::Aborted => "aborted",
            Outcome::Ambiguous => "ambiguous",
        })
    }
}

/// One line of history.jsonl.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Milliseconds since the run started.
    pub t_ms: u64,
    #[serde(flatten)]
    pub body: EventBody,
}

/// Half-open number ranges `[start, end)`.
pub type Ranges = Vec<(u64, u64)>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventBody {
    RunStarted {
        run_id: String,
        seed: u64,
        scenario: String,
        topic: String,
        partitions: u32,
        messages: u64,
        resend: String,
        /// Unix time in milliseconds at t_ms = 0.
        wall_ms: u64,
    },
    /// A transaction was opened to carry these numbers. `resend_of` names the attempt whose
    /// numbers these are again.
    TxnOpened {
        attempt: u64,
        txn: TxnId,
        numbers: Ranges,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resend_of: Option<u64>,
    },
    /// Every SEND of the attempt has its receipt.
    SendsAcked { attempt: u64, messages: u64 },
    /// END_TXN COMMIT sent (try 1, 2, ... on the same txn id).
    CommitRequested {
        attempt: u64,
        txn: TxnId,
        try_no: u32,
    },
    /// END_TXN ABORT sent (or the abort was left to the coordinator's timeout).
    AbortRequested {
        attempt: u64,
        txn: TxnId,
        reason: String,
    },
    /// What the producer learned. `detail` carries the broker's error or the timeout.
    TxnOutcome {
        attempt: u64,
        txn: TxnId,
        outcome: Outcome,
        detail: String,
    },
    /// An ambiguous attempt was later found to have committed or aborted.
    TxnResolved {
        attempt: u64,
        txn: TxnId,
        resolved: Outcome,
        how: String,
    },
    /// The numbers of an attempt will be sent again in a new transaction.
    ResendScheduled {
        attempt: u64,
        numbers: Ranges,
        reason: String,
    },
    /// The numbers of an ambiguous attempt will not be sent again (resend policy).
    ResendWithheld {
        attempt: u64,
        numbers: Ranges,
        reason: String,
    },
    /// A fault began. `action` is the exact command or API call.
    FaultStarted {
        fault: String,
        kind: String,
        target: String,
        planned_ms: Option<u64>,
        action: String,
        detail: String,
    },
    /// A fault took effect: the exact command or API call, and how (e.g. which packet-loss
    /// method). Follows its `fault_started`, which is written just before the action.
    FaultApplied {
        fault: String,
        action: String,
        detail: String,
    },
    /// A fault was healed (or found already gone). `ok` false: the heal failed, see detail.
    FaultHealed {
        fault: String,
        action: String,
        ok: bool,
        detail: String,
    },
    /// A `reply_loss` fault's proxy dropped a broker reply to the producer and then closed
    /// that connection. `request_id` is the request the reply answered (for a SEND_RECEIPT,
    /// which has none, its sequence id); `txn` the transaction the reply named (for a
    /// SEND_RECEIPT, the one the matching SEND carried).
    ReplyDropped {
        fault: String,
        command: String,
        request_id: u64,
        txn: Option<TxnId>,
    },
    /// A planned fault did not fire, and why.
    FaultSkipped { fault: String, reason: String },
    /// A fault's injection failed (after its `fault_started`, when it got that far).
    FaultFailed { fault: String, error: String },
    /// The producer stopped.
    ProducerFinished {
        committed: u64,
        aborted: u64,
        ambiguous: u64,
        messages_committed: u64,
        complete: bool,
        detail: String,
    },
    /// Nothing committed for `idle_ms` (since `since_ms`) with no fault active: the harness
    /// stopped the producer instead of waiting out the deadline.
    Stalled {
        since_ms: u64,
        idle_ms: u64,
        detail: String,
    },
    /// The wait for open transactions ran out after every fault healed: the partitions that
    /// held the read-back, held since `since_ms` (see `stuck::StuckReads`).
    ReadStuck {
        since_ms: u64,
        partitions: Vec<String>,
        detail: String,
    },
    /// A remedy for a stuck read-back was tried: on what, what Pulsar answered, and whether
    /// every partition was readable after it.
    RemedyTried {
        remedy: String,
        targets: Vec<String>,
        healed: bool,
        elapsed_ms: u64,
        detail: String,
    },
    /// A node of the cluster the harness started exited while no fault of the harness held
    /// it down: Pulsar's own exit (a broker whose ZooKeeper session expired shuts itself down
    /// by design), as Docker reports it, with the last lines of its log. The supervisor starts
    /// it again (`node_restarted`), as Kubernetes or systemd would.
    NodeExited {
        /// "broker-2", "bookie-1", "zookeeper", "standalone".
        node: String,
        container: String,
        exit_code: Option<i64>,
        #[serde(default)]
        oom_killed: bool,
        /// Its last log lines, oldest first.
        #[serde(default)]
        log: Vec<String>,
    },
    /// The supervisor started an exited node again: `ok` when it served again (`ready_ms`
    /// after the start), else `detail` says why not (it exited again, it did not become ready,
    /// the start failed, it was given up after too many exits).
    NodeRestarted {
        node: String,
        ok: bool,
        ready_ms: u64,
        detail: String,
    },
    /// Free text of note (reconnects, resume, read-back start and end).
    Note { message: String },
    /// Transform: the inputs an attempt took from the input topic (its `txn_opened` names the
    /// outputs), which consumer took them, and how many of them had been delivered before.
    InputsTaken {
        attempt: u64,
        consumer: u32,
        inputs: Ranges,
        redelivered: u64,
    },
    /// Transform: the ACKs of an attempt's inputs in its transaction and what the broker's
    /// answer proves (`answer`: acked, refused, aborted, not_sent, fatal, ambiguous; see
    /// `txn::consumer::classify_ack`).
    InputsAcked {
        attempt: u64,
        txn: TxnId,
        messages: u64,
        answer: String,
        detail: String,
    },
    /// Transform: the inputs of an attempt that ended without a confirmed commit were handed
    /// back to the subscription (REDELIVER_UNACKNOWLEDGED_MESSAGES) to be processed again.
    InputsRedelivered {
        attempt: u64,
        inputs: Ranges,
        reason: String,
    },
    /// Transform: a probe transaction acknowledged `message`, an input that `held_by` (the
    /// attempt's transaction, still open) had acknowledged; Pulsar must refuse it
    /// (TransactionConflict).
    ConflictProbe {
        attempt: u64,
        probe: TxnId,
        held_by: TxnId,
        message: String,
        outcome: ProbeOutcome,
        answer: String,
    },
    /// Transform: a `consumer_restart` fault closed the consumers of worker `consumer` (as
    /// `inputs_taken` numbers it) while attempt `attempt` held `inputs` acknowledged in its
    /// transaction `txn`, still open (no END_TXN asked yet); `answer`: the broker's answers to
    /// CLOSE_CONSUMER. The attempt then goes on (its commit) as the client learns.
    ConsumerClosed {
        fault: String,
        consumer: u32,
        attempt: u64,
        txn: TxnId,
        inputs: Ranges,
        answer: String,
    },
    /// A failed answer of the client to a commit (each failed try) or to a send (the
    /// attempt's first failed send), as the client gave it, so the verdict can tell what each
    /// error class meant (`checker::client_answers`) without reading free text back.
    /// `op`: "commit" or "send"; `client`: "own", "java" or "go"; `class`: the official
    /// client's error class (its short name) or, for the own client, the `TxnError` variant
    /// (for a broker error its `ServerError` code, e.g. `TransactionNotFound`).
    ClientAnswer {
        attempt: u64,
        txn: TxnId,
        op: String,
        client: String,
        class: String,
        message: String,
    },
}

/// What became of a conflict probe (see `EventBody::ConflictProbe`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeOutcome {
    /// Refused with TransactionConflict, as it must be.
    Refused,
    /// Answered success: the message was acknowledged in two open transactions.
    Accepted,
    /// No answer at all within the probe's patience, the connection staying up (seen on 4.2.4
    /// when the other transaction holds every member of the message's batched entry): neither
    /// a refusal nor an acceptance.
    Unanswered,
    /// No definitive answer (connection lost, another error): proves nothing.
    Unknown,
}

impl EventBody {
    /// The event for a commit's final answer `outcome`: the attempt's outcome with `evidence`,
    /// or, when an earlier answer had left it ambiguous, its resolution on try `try_no`.
    pub fn commit_answer(
        attempt: u64,
        txn: TxnId,
        outcome: Outcome,
        try_no: u32,
        evidence: String,
        after_ambiguity: bool,
    ) -> EventBody {
        if after_ambiguity {
            EventBody::TxnResolved {
                attempt,
                txn,
                resolved: outcome,
                how: format!("commit try {try_no}: {evidence}"),
            }
        } else {
            EventBody::TxnOutcome {
                attempt,
                txn,
                outcome,
                detail: evidence,
            }
        }
    }

    /// Written through to the OS before `record` returns (not synced to the disk). `TxnOpened`
    /// is recorded before the attempt's first SEND, so after a kill of the harness every
    /// attempt that may have sent something is in the history (its attempt number is never
    /// handed out again), and so is every attempt the journal cleared (which happens only
    /// after `TxnOpened`). The journal, synced before the first SEND, is what names such an
    /// attempt after a crash of the machine itself.
    pub fn is_durable(&self) -> bool {
        matches!(self, EventBody::TxnOpened { .. })
    }

    /// Events that are few per run (everything but the per-transaction ones).
    pub fn is_rare(&self) -> bool {
        !matches!(
            self,
            EventBody::TxnOpened { .. }
                | EventBody::SendsAcked { .. }
                | EventBody::CommitRequested { .. }
                | EventBody::TxnOutcome { .. }
                | EventBody::AbortRequested { .. }
                | EventBody::ResendScheduled { .. }
                | EventBody::InputsTaken { .. }
                | EventBody::InputsAcked { .. }
                | EventBody::InputsRedelivered { .. }
                | EventBody::ClientAnswer { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nodes_own_exit_and_its_restart_round_trip_and_old_lines_still_parse() {
        let line = r#"{"t_ms":1200,"event":"node_exited","node":"broker-2","container":"pc-x-broker-2","exit_code":1}"#;
        let e: Event = serde_json::from_str(line).unwrap();
        assert_eq!(
            e.body,
            EventBody::NodeExited {
                node: "broker-2".into(),
                container: "pc-x-broker-2".into(),
                exit_code: Some(1),
                oom_killed: false,
                log: Vec::new(),
            }
        );
        let r = Event {
            t_ms: 9,
            body: EventBody::NodeRestarted {
                node: "broker-2".into(),
                ok: true,
                ready_ms: 8000,
                detail: "docker start".into(),
            },
        };
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains(r#""event":"node_restarted""#), "{text}");
        assert_eq!(serde_json::from_str::<Event>(&text).unwrap(), r);
        assert!(r.body.is_rare());
        // A history written before these events existed parses as before.
        let old = r#"{"t_ms":5,"event":"note","message":"read back 10 messages"}"#;
        assert!(matches!(
            serde_json::from_str::<Event>(old).unwrap().body,
            EventBody::Note { .. }
        ));
    }
}
