//! The clients a workload can run through, and what each client's answers mean.
//!
//! `own` is the harness's protocol client (`src/txn/`), which knows per request whether it
//! left the process. `java` and `go` are the official clients, run in a driver process
//! (docs/drivers.md); the harness sees only what they answer: success, or an error's class and
//! message. One table per client (`java.rs`, `go.rs`) maps such an error to what it says
//! about a commit; every row cites the client source it rests on, and a failure no row makes
//! definitive is ambiguous.

mod go;
mod java;

use serde::{Deserialize, Serialize};

use crate::policy::CommitAnswer;

/// The client a workload runs through.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, PartialOrd, Ord,
)]
#[serde(rename_all = "lowercase")]
pub enum ClientKind {
    /// The harness's own protocol client.
    #[default]
    Own,
    /// The official Java client (`org.apache.pulsar:pulsar-client`).
    Java,
    /// The official Go client (`github.com/apache/pulsar-client-go`).
    Go,
}

impl ClientKind {
    pub const ALL: [ClientKind; 3] = [ClientKind::Own, ClientKind::Java, ClientKind::Go];

    pub fn name(self) -> &'static str {
        match self {
            ClientKind::Own => "own",
            ClientKind::Java => "java",
            ClientKind::Go => "go",
        }
    }

    /// Whether the client runs in a driver process.
    pub fn is_foreign(self) -> bool {
        self != ClientKind::Own
    }

    pub fn parse(s: &str) -> Option<ClientKind> {
        ClientKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

impl std::fmt::Display for ClientKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The Java client versions known to be served by Maven here (docs/drivers.md).
pub const JAVA_VERSIONS: &[&str] = &[
    "4.0.0", "4.0.1", "4.0.2", "4.0.3", "4.0.4", "4.0.5", "4.0.6", "4.0.7", "4.2.4",
];

/// The Go client's version, fixed by `drivers/go/go.mod`.
pub const GO_VERSION: &str = "v0.19.0";

/// A `client_version` for the Java client: one of `JAVA_VERSIONS`.
pub fn check_java_version(v: &str) -> Result<(), String> {
    if JAVA_VERSIONS.contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "the Java client {v} is not one the harness can build here; served: {}",
            JAVA_VERSIONS.join(", ")
        ))
    }
}

/// Why a client does not fit a workload, if it does not: the workload key at fault (`client`
/// or `client_version`) and the reason. The scenario's validation and `--client` ask the same.
/// Every client runs both workload kinds (`transform` through the driver's consumers:
/// docs/drivers.md).
pub fn misfit(kind: ClientKind, version: Option<&str>) -> Option<(&'static str, String)> {
    let v = version?;
    if kind != ClientKind::Java {
        return Some(("client_version", format!("goes with `client: java` only (the {kind} client's version is fixed: docs/drivers.md)")));
    }
    check_java_version(v).err().map(|m| ("client_version", m))
}

/// The Java client version a run uses: the scenario's, else the broker's when it is served,
/// else the default Pulsar version's.
pub fn java_version_for(client_version: Option<&str>, broker: Option<&str>) -> String {
    client_version
        .map(str::to_string)
        .or_else(|| {
            broker
                .filter(|b| JAVA_VERSIONS.contains(b))
                .map(str::to_string)
        })
        .unwrap_or_else(|| crate::versions::DEFAULT.to_string())
}

/// A driver's error answer, verbatim (docs/drivers.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientError {
    /// Java: the exception's binary class name; Go: the `pulsar.Result` name or the Go type.
    pub class: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<String>,
}

impl ClientError {
    /// The class's last segment (`...$InvalidTxnStatusException` → `InvalidTxnStatusException`).
    pub fn short_class(&self) -> &str {
        self.class.rsplit(['.', '$']).next().unwrap_or(&self.class)
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.short_class(), self.message)
    }
}

/// What a row says an error means for the commit that got it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meaning {
    /// The coordinator's own words name the transaction's state: read it from the message
    /// (COMMITTING/COMMITTED → committed; ABORTING/ABORTED/TIME_OUT → aborted; else ambiguous).
    CoordinatorState,
    /// The coordinator does not know the transaction, answering the only END_TXN of this
    /// commit that reached it (see `CommitAnswer::NotFound`).
    NotFound,
    /// The client refused before sending anything: no request left the process.
    NotSent,
    /// As `NotSent`, and the client will refuse every later request on this transaction the
    /// same way (its local state no longer allows one): asking again is useless.
    NotSentForGood,
    /// Transactions cannot work here at all.
    Fatal,
    /// The request may have reached the coordinator; its effect is unknown.
    Ambiguous,
}

/// One row of a client's table: an error class (its short name, or the full one), optionally
/// narrowed by a text its message contains, what it means, and the client source that says so.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub class: &'static str,
    pub message_contains: Option<&'static str>,
    pub meaning: Meaning,
    /// File and method of the client's source this row rests on, and why.
    pub source: &'static str,
}

impl Row {
    fn matches(&self, e: &ClientError) -> bool {
        (self.class == e.class || self.class == e.short_class())
            && self.message_contains.is_none_or(|t| e.message.contains(t))
    }
}

/// The commit table of a foreign client (empty for `own`, whose answers `txn::coordinator`
/// classifies from the wire).
pub fn commit_rows(kind: ClientKind) -> &'static [Row] {
    match kind {
        ClientKind::Own => &[],
        ClientKind::Java => java::COMMIT_ROWS,
        ClientKind::Go => go::COMMIT_ROWS,
    }
}

/// The row that decides `e`'s meaning (the first that matches), if any.
pub fn row_for(kind: ClientKind, e: &ClientError) -> Option<&'static Row> {
    commit_rows(kind).iter().find(|r| r.matches(e))
}

/// Whether the client will refuse every later commit of the transaction as it refused this
/// one (`Meaning::NotSentForGood`): the producer then stops asking.
pub fn refuses_for_good(kind: ClientKind, e: &ClientError) -> bool {
    row_for(kind, e).is_some_and(|r| r.meaning == Meaning::NotSentForGood)
}

/// What a foreign client's answer to a commit says (`policy::next` decides the step).
pub fn classify_commit(kind: ClientKind, answer: &Result<(), ClientError>) -> CommitAnswer {
    let e = match answer {
        Ok(()) => {
            return CommitAnswer::Committed(format!("{kind} client: commit() completed normally"))
        }
        Err(e) => e,
    };
    let text = format!("{kind} client: {e}");
    let Some(row) = row_for(kind, e) else {
        return CommitAnswer::Ambiguous(format!(
            "{text} (no row of the {kind} table makes it definitive)"
        ));
    };
    match row.meaning {
        // Only the broker's own wording ("... but it is in COMMITTED status") names the
        // coordinator's state; a message without it says nothing about the commit.
        Meaning::CoordinatorState if !e.message.contains("it is in") => {
            CommitAnswer::Ambiguous(text)
        }
        Meaning::CoordinatorState => match crate::policy::state_named(&e.message) {
            Some("COMMITTING") | Some("COMMITTED") => CommitAnswer::Committed(text),
            Some("ABORTING") | Some("ABORTED") | Some("TIME_OUT") => CommitAnswer::Aborted(text),
            _ => CommitAnswer::Ambiguous(text),
        },
        Meaning::NotSent | Meaning::NotSentForGood => CommitAnswer::NotSent(text),
        Meaning::Fatal => CommitAnswer::Fatal(text),
        Meaning::NotFound => CommitAnswer::NotFound(text),
        Meaning::Ambiguous => CommitAnswer::Ambiguous(text),
    }
}

#[cfg(test)]
mod tests;
