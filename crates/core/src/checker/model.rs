//! The verdict's model: the types of verdict.json ([`Verdict`], [`Status`], [`Cause`],
//! [`Attributed`], [`AttemptRecord`], [`FaultRecord`], [`ProducerSummary`], [`StallFinding`],
//! [`DuplicateEntry`]) and the [`Context`] a verdict is given besides the findings.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use serde::{Deserialize, Serialize};

use super::findings::{Span, Unexpected};
use super::message::MsgId;
use crate::history::{Outcome, TxnId};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Violation,
    Inconclusive,
    /// A liveness finding with Pulsar's evidence: the read-back was held after every fault
    /// healed (see `stuck`). No violation was found; whether the safety check is complete says
    /// the verdict's `stuck_reads` (healed by a remedy, then read to the end) and `reasons`.
    Stuck,
    /// `verify` without a producer history: the topic is not exactly [0, N) (a number
    /// missing, duplicated or unexpected), and with nothing to say who wrote what, the cause
    /// cannot be known (a duplicate may be the writing application's own resend). Not a
    /// finding about Pulsar; its own exit code (`exit::MISMATCH`).
    Mismatch,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Pass => "pass",
            Status::Violation => "violation",
            Status::Inconclusive => "inconclusive",
            Status::Stuck => "stuck",
            Status::Mismatch => "mismatch",
        })
    }
}

/// One transaction attempt that carried an anomalous number, as the history tells it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub attempt: u64,
    pub txn: TxnId,
    pub numbers: Vec<(u64, u64)>,
    pub opened_ms: u64,
    /// When the producer first learned an outcome (committed, aborted or ambiguous).
    #[serde(default)]
    pub outcome_ms: Option<u64>,
    /// When the last outcome (or resolution) was learned.
    pub ended_ms: Option<u64>,
    /// What the producer was told (None: the run ended before it learned anything).
    pub outcome: Option<Outcome>,
    pub detail: String,
    /// What a later check found, for an ambiguous attempt.
    pub resolved: Option<Outcome>,
    /// How it was found (the history's `txn_resolved` words: a commit retried, a read-back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_how: Option<String>,
    pub commit_tries: u32,
    pub resent: bool,
    /// Why the producer sent its numbers again (the history's `resend_scheduled` reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resend_reason: Option<String>,
    pub withheld: bool,
    /// Why the resend was withheld.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld_reason: Option<String>,
    /// Replies to this transaction the harness's `reply_loss` fault dropped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replies_dropped: Vec<String>,
    /// Faults active while the attempt was open or committing.
    pub faults: Vec<String>,
}

impl AttemptRecord {
    /// The attempt as the broker-log scan needs it; None for the placeholder transaction of a
    /// run without transactions.
    pub fn opened(&self) -> Option<crate::brokerlog::Opened> {
        (self.txn.most != NO_TXN).then_some(crate::brokerlog::Opened {
            txn: self.txn,
            opened_ms: self.opened_ms,
            outcome_ms: self.outcome_ms,
        })
    }
}

/// Whose doing an anomaly is, as the evidence shows it. See docs/grading.md.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// A definitive answer from Pulsar is contradicted by the read-back: a commit confirmed
    /// but its numbers missing; an abort confirmed, or a commit never sent, but its numbers
    /// readable; numbers committed twice with no resend of ours behind it.
    Pulsar,
    /// The numbers were resent after an outcome the client could not learn, and the first
    /// commit had applied (what the `naive` policy, the design of #19780, runs into).
    Ambiguity,
    /// The harness could not finish the job: a resend it withheld, a read that stopped short,
    /// a transaction the coordinator still held, an attempt with no outcome, numbers never
    /// sent. Never a violation: the verdict is inconclusive.
    Harness,
    /// One transaction carried the numbers and the harness sent them once, yet they arrived
    /// twice through an official client whose producer sends a pending batch again after a
    /// reconnect, on a topic whose deduplication was off (the broker said so): that
    /// configuration's documented behaviour, not a Pulsar bug. Still not exactly-once, so a
    /// violation; the remedy is deduplication.
    ClientResend,
    /// Numbers of a transaction the official client aborted are readable, and the copies read
    /// name no transaction in their metadata (`txnid_most_bits`/`txnid_least_bits`) although
    /// the client sent them in one: the broker filters an aborted transaction's messages by
    /// the transaction their metadata names, so it delivers such a message as
    /// non-transactional (the Go client, apache/pulsar-client-go#1498). Not exactly-once, so a
    /// violation, but the client's, not Pulsar's.
    #[serde(rename = "client_txn_metadata")]
    ClientNoTxnMetadata,
    /// The scenario's `sabotage` asked for it (the checker's own self-test).
    Sabotage,
    /// No producer history was given (`verify` without `--history`): the range check alone,
    /// blaming nobody.
    #[default]
    Unknown,
}

impl Cause {
    /// Whether an anomaly of this cause makes the verdict a violation.
    pub fn is_violation(self) -> bool {
        !matches!(self, Cause::Harness)
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Cause::Pulsar => "pulsar",
            Cause::Ambiguity => "ambiguity",
            Cause::Harness => "harness",
            Cause::ClientResend => "client_resend",
            Cause::ClientNoTxnMetadata => "client_txn_metadata",
            Cause::Sabotage => "sabotage",
            Cause::Unknown => "unknown",
        })
    }
}

/// The anomalies with the attempts that carried them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attributed<T> {
    #[serde(flatten)]
    pub what: T,
    /// Attempt numbers; details in `Verdict::attempts`.
    pub attempts: Vec<u64>,
    /// Whose doing it is (see `Cause`).
    #[serde(default)]
    pub cause: Cause,
    /// One sentence: the cause as the history shows it.
    pub explanation: String,
    /// What the cause rests on, one line each: Pulsar's answers to the attempts that carried
    /// the numbers, the resends and their reasons, as the history recorded them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    /// What the brokers logged about the transactions of `attempts` (`Context::broker_log`):
    /// quoted lines with their file and line number. Evidence only: they never set the cause.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broker_log: Vec<crate::brokerlog::TxnLog>,
}

/// One fault as it happened, with how long commits took to flow again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultRecord {
    pub fault: String,
    pub kind: String,
    pub target: String,
    pub started_ms: u64,
    pub healed_ms: Option<u64>,
    pub action: String,
    /// From the heal to the first commit confirmed after it.
    pub recovery_ms: Option<u64>,
    /// From the last commit confirmed before the fault to the first one after its heal.
    pub commit_gap_ms: Option<u64>,
    pub heal_ok: bool,
    /// False when the injection failed (see the history's `fault_failed`).
    #[serde(default = "yes")]
    pub applied: bool,
}

fn yes() -> bool {
    true
}

/// The producer's side, summed from the history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProducerSummary {
    pub attempts: u64,
    pub committed: u64,
    pub aborted: u64,
    pub ambiguous: u64,
    pub resolved_committed: u64,
    pub resolved_aborted: u64,
    pub withheld: u64,
    pub finished: bool,
    pub complete: bool,
    /// Why it stopped, when it stopped before every number was final (the first line of
    /// `producer_finished`'s detail: a stall, a signal, the driver's end, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_because: Option<String>,
}

/// The verdict, as written to verdict.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub status: Status,
    /// One paragraph in plain words.
    pub summary: String,
    pub seed: Option<u64>,
    pub expected: u64,
    pub received: u64,
    pub distinct: u64,
    pub missing_total: u64,
    pub duplicate_values: u64,
    pub duplicate_copies: u64,
    pub unexpected_total: u64,
    pub missing: Vec<Attributed<Span>>,
    pub duplicates: Vec<Attributed<DuplicateEntry>>,
    /// Every missing and duplicated range graded, listed or not, by cause.
    #[serde(default)]
    pub graded: Graded,
    pub unexpected: Vec<Unexpected>,
    /// Why the verdict is inconclusive (empty otherwise).
    pub reasons: Vec<String>,
    /// What the reader should know that does not change the status (e.g. unreadable history).
    #[serde(default)]
    pub notes: Vec<String>,
    pub producer: Option<ProducerSummary>,
    pub attempts: Vec<AttemptRecord>,
    pub faults: Vec<FaultRecord>,
    /// The run stopped making progress with no fault active (a liveness finding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<StallFinding>,
    /// The read-back was held after every fault healed: what held it, the remedies tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck_reads: Option<crate::stuck::StuckReads>,
    /// A transform run's consumer side: its transactions, redeliveries, conflict probes and
    /// the input subscription's backlog (see `checker::consumer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer: Option<super::consumer::ConsumerSummary>,
    /// How many of the planned faults fired, and which did not (None: the plan was not given,
    /// as for `verify` or a read-back stored before this field existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults_summary: Option<FaultsSummary>,
    /// What each error class the client answered on a commit or a send meant: how many of
    /// those transactions the evidence found committed, aborted or could not tell (see
    /// `checker::client_answers`). None: no failed answer in the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_answers: Option<ClientAnswers>,
}

/// How many missing and duplicated ranges were graded, by cause: every one the read-back
/// found, cut where the attempts behind it change (see `attribution`), whether `verdict.json`
/// lists it or not (it lists at most `LIST_CAP` of each kind).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Graded {
    pub missing_ranges: u64,
    pub duplicate_ranges: u64,
    /// Graded but not listed in `missing` / `duplicates`.
    pub unlisted_missing: u64,
    pub unlisted_duplicates: u64,
    /// Cause -> ranges and numbers (missing and duplicated together).
    pub by_cause: BTreeMap<Cause, CauseCount>,
}

/// Ranges and numbers of one cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CauseCount {
    pub ranges: u64,
    pub numbers: u64,
    /// Of those numbers, how many are missing (the rest are duplicated).
    pub missing_numbers: u64,
}

impl Graded {
    pub(super) fn count(&mut self, cause: Cause, numbers: u64, missing: bool) {
        if missing {
            self.missing_ranges += 1;
        } else {
            self.duplicate_ranges += 1;
        }
        let c = self.by_cause.entry(cause).or_default();
        c.ranges += 1;
        c.numbers += numbers;
        if missing {
            c.missing_numbers += numbers;
        }
    }

    /// Whether any graded range makes the verdict a violation.
    pub fn any_violation(&self) -> bool {
        self.by_cause.keys().any(|c| c.is_violation())
    }
}

/// A stall: what the producer was told meanwhile and what the brokers logged about the topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StallFinding {
    /// Run time (ms) of the last commit or fault activity.
    pub since_ms: u64,
    /// Run time (ms) at which the harness gave up.
    pub detected_ms: u64,
    /// Attempts that ended without a commit from `since_ms` on.
    pub failed_attempts: u64,
    /// The most frequent failures (count, the producer's words), most frequent first.
    pub failures: Vec<(u64, String)>,
    /// Repeated WARN/ERROR broker log lines about the topic from `since_ms` on.
    pub broker_log: Vec<crate::stall::LogEvidence>,
    /// A known Pulsar bug the evidence matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub likely_cause: Option<String>,
    /// What Pulsar said about each partition of the topic once the stall was detected: its
    /// transaction buffer, its ledger's end, the coordinators' transactions naming it, the
    /// brokers' lines about them (gathered by the runner, as for a stuck read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<crate::stuck::StuckPartition>,
}

/// A duplicated stretch with the message ids of each copy (for the first values).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuplicateEntry {
    pub start: u64,
    pub end: u64,
    pub copies: u32,
    /// value -> message ids of every copy (located by a second read; may be empty).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "value_keys"
    )]
    pub message_ids: BTreeMap<u64, Vec<MsgId>>,
    /// The duplicated ranges when they are not contiguous (`[start, end)` is then their hull),
    /// joined into one entry because, in a run through an official client, the same one
    /// transaction carried them and they have one cause, explanation and copy count: one
    /// partition's share of a transaction (every `partitions`-th number) that the client's
    /// resend stored twice. Empty: every number of `[start, end)` is duplicated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranges: Vec<Span>,
}

impl DuplicateEntry {
    /// How many numbers are duplicated.
    pub fn numbers(&self) -> u64 {
        if self.ranges.is_empty() {
            self.end - self.start
        } else {
            self.ranges.iter().map(Span::len).sum()
        }
    }

    /// Join `next` (after this entry, not overlapping it) into this one.
    pub(super) fn join(&mut self, next: DuplicateEntry) {
        let mut ranges = std::mem::take(&mut self.ranges);
        if ranges.is_empty() {
            ranges.push(Span {
                start: self.start,
                end: self.end,
            });
        }
        match next.ranges.is_empty() {
            true => ranges.push(Span {
                start: next.start,
                end: next.end,
            }),
            false => ranges.extend(next.ranges),
        }
        // Neighbours that touch are one range.
        let mut joined: Vec<Span> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match joined.last_mut() {
                Some(last) if last.end == r.start => last.end = r.end,
                _ => joined.push(r),
            }
        }
        self.end = next.end;
        self.message_ids.extend(next.message_ids);
        self.ranges = if joined.len() > 1 { joined } else { Vec::new() };
    }
}

/// The numbers of a duplicate entry in words: `[0, 10)`, or for an entry of ranges that are
/// not contiguous its count and the ranges, the middle ones elided past eight:
/// `25 numbers of [88202, 88299): 88202, 88206, …, 88298`.
impl fmt::Display for DuplicateEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hull = Span {
            start: self.start,
            end: self.end,
        };
        if self.ranges.is_empty() {
            return write!(f, "{hull}");
        }
        let shown: Vec<String> = if self.ranges.len() <= 8 {
            self.ranges.iter().map(Span::to_string).collect()
        } else {
            let r = &self.ranges;
            vec![
                r[0].to_string(),
                r[1].to_string(),
                "…".to_string(),
                r[r.len() - 1].to_string(),
            ]
        };
        write!(
            f,
            "{} numbers of {hull}: {}",
            self.numbers(),
            shown.join(", ")
        )
    }
}

/// The values of `message_ids` as JSON writes them, as strings. `DuplicateEntry` is read
/// through `Attributed`'s `flatten`, which hands map keys over as strings, and serde would not
/// turn those into numbers: `verdict.json` with duplicates' ids could not be read back.
fn value_keys<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<u64, Vec<MsgId>>, D::Error> {
    let by_text: BTreeMap<String, Vec<MsgId>> = Deserialize::deserialize(d)?;
    by_text
        .into_iter()
        .map(|(k, v)| {
            k.parse::<u64>()
                .map(|k| (k, v))
                .map_err(|_| serde::de::Error::custom(format!("not a number: {k:?}")))
        })
        .collect()
}

/// What else the verdict needs to know besides the findings. Stored as it is in the run
/// directory's read-back file (see `readlog`), so a field added here is stored too; a field a
/// file lacks loads as its default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Context {
    pub seed: Option<u64>,
    /// The read-back did not reach the end of every partition.
    pub readback_incomplete: Option<String>,
    /// Message ids of duplicated values (second read). Stored in value order.
    #[serde(serialize_with = "sorted_by_value")]
    pub duplicate_ids: HashMap<u64, Vec<MsgId>>,
    /// Broker log lines about the topic during a stall (gathered by the runner).
    pub stall_log: Vec<crate::stall::LogEvidence>,
    /// A known bug those lines match.
    pub stall_cause: Option<String>,
    /// What Pulsar said about each partition once the stall was detected (gathered by the
    /// runner from the admin API and the brokers' logs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stall_partitions: Vec<crate::stuck::StuckPartition>,
    /// Broker log lines about the transactions of the attempts that carried anomalous
    /// numbers (gathered by the runner after a verdict that was not a pass).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub broker_log: Vec<crate::brokerlog::TxnLog>,
    /// Numbers the scenario's sabotage never sent, and sent twice.
    pub sabotage_skip: BTreeSet<u64>,
    pub sabotage_duplicate: BTreeSet<u64>,
    /// What held the read-back when the wait ran out, and the remedies tried (gathered by the
    /// runner from Pulsar's admin API and the brokers' logs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stuck_reads: Option<crate::stuck::StuckReads>,
    /// A transform run: the input subscription's backlog after the read-back (gathered by the
    /// runner from the admin API).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer: Option<super::consumer::ConsumerEvidence>,
    /// The plan's fault firings by name (`pause#1`), as the history names them (filled by the
    /// runner from the plan; None: no plan, as for `verify`). Against the history's
    /// `fault_started`/`fault_skipped`/`fault_failed` they give the verdict's `faults_summary`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned_faults: Option<Vec<String>>,
    /// A run through an official client (gathered by the runner): which client, and whether
    /// the broker's deduplication was on for the topic, in the broker's own words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientContext>,
    /// What the metadata of each copy of each duplicated number named: derived from the
    /// read-back's own record (`readlog::metadata_txns`), never stored with the context. None:
    /// not recorded (a read-back stored before the record existed), nothing is known.
    #[serde(skip)]
    pub metadata_txns: Option<MetadataTxns>,
    /// The coordinators' transaction-log cursors the runner's watch saw go back across a fault
    /// (`txnlog::CursorStepBack`), in the order seen.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub txnlog_steps: Vec<crate::txnlog::CursorStepBack>,
}

/// Number -> the transaction each of its copies' metadata named (None: none), in read order.
pub type MetadataTxns = BTreeMap<u64, Vec<Option<TxnId>>>;

/// What the checker needs to know of an official client's run: a duplicate inside one
/// transaction may be the client library's own resend of a pending batch after a reconnect,
/// which the broker keeps twice unless deduplication is on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientContext {
    /// `java` or `go`.
    pub client: String,
    /// Whether deduplication was on for the topic (None: the broker did not say).
    pub deduplication: Option<bool>,
    /// The broker's answer it rests on (`deduplicationStatus` of the partitions' stats).
    pub evidence: String,
}

fn sorted_by_value<S: serde::Serializer>(
    m: &HashMap<u64, Vec<MsgId>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    m.iter().collect::<BTreeMap<_, _>>().serialize(s)
}

/// The coordinator id of the placeholder transactions of a run without transactions (a send
/// there is not atomic: a failed one may have been persisted, so a resend is ambiguous).
pub const NO_TXN: u64 = u64::MAX;

#[cfg(test)]
mod tests;

/// The table of one client's failed answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientAnswers {
    /// "own", "java" or "go".
    pub client: String,
    /// By transactions, most first.
    pub rows: Vec<AnswerRow>,
}

/// One error class on one operation, and what became of the transactions that got it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerRow {
    /// "commit" (END_TXN COMMIT) or "send".
    pub op: String,
    /// The client's error class (its short name), or the own client's error kind.
    pub class: String,
    /// Transactions (attempts) that got this answer at least once.
    pub transactions: u64,
    /// Of those, found committed by the evidence.
    pub committed: u64,
    /// Found not committed.
    pub aborted: u64,
    /// The evidence does not tell.
    pub unknown: u64,
}

/// A planned firing that did not fire, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotFired {
    /// The firing's name in the plan and the history (`packet-loss#2`).
    pub fault: String,
    /// `skipped`, `failed`, or `unrecorded` (the history never mentions it).
    pub fate: String,
    /// The history's reason (a skip) or error (a failed injection).
    pub reason: String,
}

/// How many of the planned faults fired (in `verdict.json` as `faults_summary`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultsSummary {
    /// Firings in the plan (`plan.json`).
    pub planned: u64,
    /// Firings the history records as started and not failed.
    pub fired: u64,
    /// Firings the history records as skipped (e.g. the producer finished first).
    pub skipped: u64,
    /// Firings whose injection failed.
    pub failed: u64,
    /// Every planned firing that did not fire, in plan order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_fired: Vec<NotFired>,
}
