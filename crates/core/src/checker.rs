//! The checker: a pure function from the read-back (and the producer's history) to a
//! [`Verdict`]. It never touches the network, Docker, tokio or the clock.
//!
//! The read-back is fed one message at a time into a [`Tally`], which keeps the numbers seen as
//! a set of ranges: memory grows with the number of gaps and duplicated stretches, not with N.
//! In-order input takes a fast path that only extends the current run; numbers that arrive
//! scattered (shuffled, or strided as partitions read one after the other) are kept in bitmaps
//! of 64 Ki numbers that turn back into ranges as they fill.
//!
//! One concern per file, in the order the data flows: `message` (a message's id and number),
//! `tally` (the range check, with `bitmap` and `extra`), `findings` (what the read-back
//! showed), `history_view` (the history in one pass), `attribution` (whose doing each anomaly
//! is), `client_answers` (what each error class the client answered meant), `faults_fired` (whether the planned faults fired), `verdict` (grading and summary),
//! and `model` (the verdict's types).

mod attribution;
mod bitmap;
mod client_answers;
mod consumer;
mod extra;
mod faults_fired;
mod findings;
mod history_view;
mod message;
mod model;
mod tally;
#[cfg(test)]
mod test_support;
mod verdict;

pub use client_answers::{AnswerRow, ClientAnswers};
pub use consumer::held::{self, FillOutcome, HeldEntry, HeldEvidence, HELD_MAX};
pub use consumer::{AckLatency, ConsumerEvidence, ConsumerSummary, PartitionBacklog, ProbeRecord};
pub use faults_fired::{FaultsSummary, NotFired};
pub use findings::{CheckerError, DupSpan, Findings, Span, Unexpected, LIST_CAP};
pub use message::{parse_number, MsgId};
pub use model::{
    AttemptRecord, Attributed, Cause, CauseCount, ClientContext, Context, DuplicateEntry,
    FaultRecord, Graded, MetadataTxns, ProducerSummary, StallFinding, Status, Verdict, NO_TXN,
};
pub use tally::Tally;
pub use verdict::verdict;
