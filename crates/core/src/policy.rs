//! The resend decision: a pure state machine from what Pulsar answered to an END_TXN COMMIT
//! (and, under the `verify` policy, what a read-back showed) to the producer's next step.
//! No I/O, no clock: the workload asks `next` after every answer and does what it says.
//!
//! The rule it enforces: the numbers of a transaction are sent again only after a definitive
//! abort (the coordinator says it is aborting or aborted; it no longer knows a transaction to
//! which no commit of ours could have applied; or no commit request ever left the client), or
//! after a read-back proved its messages invisible once the coordinator had let go of it. The
//! `naive` policy (the design of apache/pulsar#19780) breaks this rule on purpose and says so:
//! its resends after an unknown outcome are `Step::ResendAmbiguous`.

use crate::scenario::ResendPolicy;

/// What one END_TXN COMMIT came back with, as far as its effect on the transaction goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitAnswer {
    /// The coordinator confirmed the commit, or says the transaction is committing/committed.
    Committed(String),
    /// The coordinator says the transaction is aborting or aborted: no commit applied.
    Aborted(String),
    /// The coordinator does not know the transaction (TransactionNotFound). Definitive
    /// ("it timed out and was aborted") only while no earlier commit of ours may have reached
    /// the coordinator; after one, the coordinator may have committed it and let go of it.
    NotFound(String),
    /// The request may have reached the coordinator; its effect is unknown.
    Ambiguous(String),
    /// The request provably never left the client (no connection, no coordinator to send to).
    NotSent(String),
    /// Transactions do not work here at all.
    Fatal(String),
}

impl CommitAnswer {
    pub fn text(&self) -> &str {
        match self {
            CommitAnswer::Committed(s)
            | CommitAnswer::Aborted(s)
            | CommitAnswer::NotFound(s)
            | CommitAnswer::Ambiguous(s)
            | CommitAnswer::NotSent(s)
            | CommitAnswer::Fatal(s) => s,
        }
    }
}

/// The state an InvalidTxnStatus message says the transaction is in: the last status word
/// ("Expect Txn `(0,5)` to be in ABORTING status but it is in COMMITTING status").
pub fn state_named(message: &str) -> Option<&'static str> {
    let tail = message.rsplit("it is in").next()?;
    [
        "COMMITTING",
        "COMMITTED",
        "ABORTING",
        "ABORTED",
        "OPEN",
        "TIME_OUT",
    ]
    .into_iter()
    .find(|s| tail.contains(s))
}

/// What the producer knows about one transaction's commit so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitState {
    /// END_TXN COMMIT requests answered so far.
    pub tries: u32,
    /// Some request may have reached the coordinator without a definitive answer: from then
    /// on nothing but a definitive answer or a read-back can say the commit did not apply.
    pub ever_ambiguous: bool,
    /// The first unknown outcome (what the history records as `ambiguous`).
    pub first_ambiguity: Option<String>,
}

/// What the producer does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Committed: the numbers are final. `after_ambiguity`: an earlier answer was unknown, so
    /// this resolves an ambiguous outcome.
    Committed {
        evidence: String,
        after_ambiguity: bool,
    },
    /// Definitively not committed: send the numbers again in a new transaction.
    Resend {
        evidence: String,
        after_ambiguity: bool,
    },
    /// `naive` only: send the numbers again although the outcome is unknown. If the first
    /// commit applied, this duplicates them; the checker attributes that to the ambiguity.
    ResendAmbiguous {
        why: String,
    },
    /// Ask to commit the same transaction again.
    RetryCommit,
    /// `verify` only: read the transaction's partitions back once the coordinator has let go
    /// of it; `after_read` then decides.
    Verify {
        why: String,
    },
    /// Give the numbers up without resending: the outcome stayed unknown. The verdict counts
    /// them as the harness's gap (inconclusive), never as a loss by Pulsar.
    Withhold {
        why: String,
    },
    Fatal(String),
}

/// A TransactionNotFound read with the transaction's age: `age` bounds from above how long the
/// coordinator has known the transaction (measured from before its NEW_TXN was asked), `timeout`
/// is the timeout it was opened with. While `age < timeout` the coordinator cannot have timed
/// it out, so "not found" does not show an abort: the answer is ambiguous. Seen with the own
/// client under coordinator moves and an unload while committing (4.2.4): the only END_TXN
/// COMMIT of a 1.6-s-old transaction with a 20-s timeout was answered TransactionNotFound after
/// the coordinator had logged the commit's partition failure, and the commit applied. Every
/// other answer, and a NotFound without a known age, is returned as it is.
pub fn not_found_with_age(
    answer: CommitAnswer,
    age: Option<std::time::Duration>,
    timeout: std::time::Duration,
) -> CommitAnswer {
    match (answer, age) {
        (CommitAnswer::NotFound(m), Some(age)) if age < timeout => CommitAnswer::Ambiguous(format!(
            "TransactionNotFound for a transaction at most {:.1}s old, younger than its {}s timeout, so not a timeout's abort: {m}",
            age.as_secs_f64(),
            timeout.as_secs()
        )),
        (answer, _) => answer,
    }
}

/// The next step after `answer`. `may_retry`: time is left to ask again (the caller's clock).
pub fn next(
    state: &mut CommitState,
    policy: ResendPolicy,
    answer: CommitAnswer,
    may_retry: bool,
) -> Step {
    state.tries += 1;
    let after_ambiguity = state.ever_ambiguous;
    match answer {
        CommitAnswer::Committed(evidence) => Step::Committed {
            evidence,
            after_ambiguity,
        },
        CommitAnswer::Aborted(evidence) => Step::Resend {
            evidence,
            after_ambiguity,
        },
        CommitAnswer::Fatal(m) => Step::Fatal(m),
        CommitAnswer::NotFound(m) if !state.ever_ambiguous => Step::Resend {
            evidence: format!(
                "TransactionNotFound to the first commit request that reached the coordinator (the transaction had timed out; no commit of ours could apply): {m}"
            ),
            after_ambiguity: false,
        },
        CommitAnswer::NotFound(m) => {
            // Forgotten by the coordinator: it may have committed it and let go.
            let why = format!(
                "forgotten by the coordinator: TransactionNotFound after an earlier commit request whose outcome is unknown ({m})"
            );
            unknown(state, policy, why, false)
        }
        CommitAnswer::Ambiguous(m) => unknown(state, policy, m, may_retry),
        CommitAnswer::NotSent(m) => {
            if may_retry {
                Step::RetryCommit
            } else if !state.ever_ambiguous {
                Step::Resend {
                    evidence: format!(
                        "no commit request ever left the client ({m}); the coordinator's timeout aborts the transaction"
                    ),
                    after_ambiguity: false,
                }
            } else {
                unknown(state, policy, m, false)
            }
        }
    }
}

/// An answer that leaves the outcome unknown.
fn unknown(state: &mut CommitState, policy: ResendPolicy, why: String, may_retry: bool) -> Step {
    state.ever_ambiguous = true;
    if state.first_ambiguity.is_none() {
        state.first_ambiguity = Some(why.clone());
    }
    match policy {
        ResendPolicy::Naive => Step::ResendAmbiguous {
            why: format!("naive policy: resend after an ambiguous commit ({why})"),
        },
        _ if may_retry => Step::RetryCommit,
        ResendPolicy::RetryCommit => Step::Withhold {
            why: format!("retry-commit: the commit stayed ambiguous ({why}); not resent"),
        },
        ResendPolicy::Verify => Step::Verify { why },
    }
}

/// What the `verify` policy learned by reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadEvidence {
    /// The coordinator has let go of the transaction, every partition's transaction buffer
    /// has moved past its messages, and the read between its first and last message found
    /// `found` of its `total` messages.
    Read { found: u64, total: u64 },
    /// The check could not be finished (the coordinator still holds it, the admin API did not
    /// answer, a 404 that may only mean "not loaded", a buffer that did not move, a read that
    /// stopped short).
    Unknown(String),
}

/// The step after a `verify` read.
pub fn after_read(evidence: ReadEvidence) -> Step {
    match evidence {
        ReadEvidence::Read { found: 0, total } => Step::Resend {
            evidence: format!(
                "read-back after the coordinator let go of it: none of its {total} messages is visible"
            ),
            after_ambiguity: true,
        },
        ReadEvidence::Read { found, total } if found == total => Step::Committed {
            evidence: format!("read-back: all {total} messages are visible"),
            after_ambiguity: true,
        },
        ReadEvidence::Read { found, total } => Step::Committed {
            evidence: format!(
                "read-back: only {found} of {total} messages are visible (a partial commit; the checker will show what is missing)"
            ),
            after_ambiguity: true,
        },
        ReadEvidence::Unknown(why) => Step::Withhold {
            why: format!("verify: {why}"),
        },
    }
}

#[cfg(test)]
mod tests;
