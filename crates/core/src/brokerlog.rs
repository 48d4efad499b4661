//! What the brokers logged about the transactions behind an anomaly. Pure: the logs, the
//! transaction ids and the times come in as arguments.
//!
//! After a run that did not pass, the runner saves every container's log (`logs/<node>.log`)
//! and asks this module for the lines that name the transactions of the anomalies' attempts,
//! and for the WARN/ERROR lines about the run's topic logged while such a transaction was open
//! or committing. The checker quotes them under each anomaly, with the file and line number,
//! and names a known pattern in plain words (`known_cause`). The lines are quoted evidence:
//! they never change an anomaly's cause.
//!
//! Pulsar prints a transaction id as `TxnID.toString()`, `(most,least)` (e.g. `(0,957)`,
//! `[(0,957)]`, `` `(0,957)` ``); a few places print the fields, `mostSigBits=0,
//! leastSigBits=957`. Both are recognised, whole numbers only (`(0,95)` is not `(0,957)`),
//! and only in log entries that speak of a transaction (`txn` or `transaction` in them).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::history::{Event, EventBody, TxnId};
use crate::stall::parse_log_time;

/// Lines naming a transaction quoted per transaction (the rest are counted).
pub const MAX_NAMED: usize = 10;
/// WARN/ERROR lines logged while a transaction was open or committing, quoted per transaction.
pub const MAX_DURING: usize = 5;
/// A quoted line's text is cut to this many characters.
pub const MESSAGE_CHARS: usize = 400;

/// One container's log, as saved in the run directory.
#[derive(Debug, Clone, Copy)]
pub struct LogFile<'a> {
    /// The container, e.g. `standalone` or `broker-1`.
    pub node: &'a str,
    /// The file, relative to the run directory, e.g. `logs/standalone.log`.
    pub file: &'a str,
    pub text: &'a str,
}

/// One quoted log line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerLine {
    pub node: String,
    /// Relative to the run directory.
    pub file: String,
    /// 1-based line number of the line quoted (for a line inside a multi-line entry, such as
    /// an exception, that line's own number).
    pub line: u64,
    /// The entry's level (`INFO`, `WARN`, `ERROR`, ...), empty when the log has none.
    pub level: String,
    /// The entry's timestamp as written (`2026-11-30T16:37:09,076`, UTC).
    pub time: String,
    /// `Logger: message`, then ` | ` and the exception line that follows the entry's first
    /// line (or the entry's line that names the transaction); at most `MESSAGE_CHARS`.
    pub message: String,
}

impl BrokerLine {
    /// `logs/standalone.log:599`
    pub fn place(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

impl fmt::Display for BrokerLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.place())?;
        if !self.time.is_empty() {
            write!(f, " {}", self.time)?;
        }
        if !self.level.is_empty() {
            write!(f, " {}", self.level)?;
        }
        write!(f, " {}", self.message)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What the brokers logged about one transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnLog {
    pub txn: TxnId,
    /// Lines that name the transaction, in time order: the first `MAX_NAMED`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub named: Vec<BrokerLine>,
    /// How many more lines name it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub named_more: u64,
    /// WARN/ERROR lines that name the run's topic and no transaction, logged while this
    /// transaction was open or committing (from its opening to the first outcome the producer
    /// learned): the first `MAX_DURING`. They may concern another transaction of that time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub during: Vec<BrokerLine>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub during_more: u64,
}

/// Maps the history's run time (`t_ms`) to Unix milliseconds, from its `run_started` events
/// (a resumed run starts again, with its own wall clock, at a later `t_ms`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WallClock {
    /// (t_ms, Unix ms at that t_ms), in t_ms order.
    starts: Vec<(u64, u64)>,
}

impl WallClock {
    pub fn from_history<I, E>(events: I) -> WallClock
    where
        I: IntoIterator<Item = Result<Event, E>>,
    {
        let mut starts: Vec<(u64, u64)> = events
            .into_iter()
            .filter_map(|e| match e {
                Ok(Event {
                    t_ms,
                    body: EventBody::RunStarted { wall_ms, .. },
                }) => Some((t_ms, wall_ms)),
                _ => None,
            })
            .collect();
        starts.sort();
        WallClock { starts }
    }

    /// Unix ms of run time `t_ms` (None before the first `run_started`).
    pub fn unix_ms(&self, t_ms: u64) -> Option<u64> {
        let (t0, w0) = self.starts.iter().rev().find(|(t0, _)| *t0 <= t_ms)?;
        Some(w0 + (t_ms - t0))
    }
}

/// An attempt as the scan needs it: its transaction, when it opened and when it first learned
/// an outcome (run ms; the checker's `AttemptRecord::opened` makes one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    pub txn: TxnId,
    pub opened_ms: u64,
    pub outcome_ms: Option<u64>,
}

/// The transactions to look for, each with the Unix-ms windows in which its attempt was open
/// or committing: one per attempt, from its opening to the first outcome it learned (none
/// when it learned nothing).
pub fn queries(
    attempts: impl IntoIterator<Item = Opened>,
    clock: &WallClock,
) -> BTreeMap<TxnId, Vec<(u64, u64)>> {
    let mut out: BTreeMap<TxnId, Vec<(u64, u64)>> = BTreeMap::new();
    for a in attempts {
        let windows = out.entry(a.txn).or_default();
        let window = a.outcome_ms.and_then(|end| {
            Some((
                clock.unix_ms(a.opened_ms)?,
                clock.unix_ms(end.max(a.opened_ms))?,
            ))
        });
        windows.extend(window);
    }
    out
}

/// Every transaction id a line prints, in the two forms Pulsar uses.
pub fn txn_ids_in(line: &str) -> Vec<TxnId> {
    let mut out = Vec::new();
    let b = line.as_bytes();
    // `(most,least)`: whole numbers between the parentheses, nothing else.
    let digits = |from: usize| -> Option<(u64, usize)> {
        let n = b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 || n > 20 {
            return None;
        }
        Some((line[from..from + n].parse().ok()?, from + n))
    };
    for (i, _) in line.match_indices('(') {
        let Some((most, j)) = digits(i + 1) else {
            continue;
        };
        if b.get(j) != Some(&b',') {
            continue;
        }
        let Some((least, k)) = digits(j + 1) else {
            continue;
        };
        if b.get(k) == Some(&b')') {
            out.push(TxnId { most, least });
        }
    }
    // `mostSigBits=0, leastSigBits=957` (a TxnID's fields, as some objects print them).
    for (i, m) in line.match_indices("mostSigBits=") {
        let Some((most, j)) = digits(i + m.len()) else {
            continue;
        };
        let mut end = line.len().min(j + 24);
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        let rest = &line[j..end];
        let Some(at) = rest.find("leastSigBits=") else {
            continue;
        };
        if !rest[..at].chars().all(|c| c == ',' || c == ' ' || c == ';') {
            continue;
        }
        if let Some((least, _)) = digits(j + at + "leastSigBits=".len()) {
            out.push(TxnId { most, least });
        }
    }
    out
}

fn speaks_of_txn(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l.contains("txn") || l.contains("transaction")
}

/// A log entry's first line, taken apart: `<time> [thread] LEVEL logger - message`.
struct Head<'a> {
    line: u64,
    time: &'a str,
    level: &'a str,
    /// `Logger: message` (the logger's last name).
    text: String,
    raw: &'a str,
}

const LEVELS: [&str; 6] = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"];

fn head(line_no: u64, line: &str) -> Option<Head<'_>> {
    let time = line.get(..23)?;
    parse_log_time(time)?;
    let rest = line[23..].trim_start();
    let rest = match rest.strip_prefix('[') {
        Some(r) => r.split_once("] ").map(|(_, r)| r).unwrap_or(r),
        None => rest,
    };
    let (level, after) = rest.split_once(' ').unwrap_or((rest, ""));
    let (level, after) = if LEVELS.contains(&level) {
        (level, after.trim_start())
    } else {
        ("", rest)
    };
    let (logger, message) = after.split_once(" - ").unwrap_or(("", after));
    let logger = logger.rsplit('.').next().unwrap_or(logger).trim();
    let text = if logger.is_empty() || logger.contains(' ') {
        after.trim().to_string()
    } else {
        format!("{logger}: {}", message.trim())
    };
    Some(Head {
        line: line_no,
        time,
        level,
        text,
        raw: line,
    })
}

fn cut(s: String) -> String {
    if s.chars().count() <= MESSAGE_CHARS {
        s
    } else {
        let mut t: String = s.chars().take(MESSAGE_CHARS - 3).collect();
        t.push_str("...");
        t
    }
}

/// A stack frame or its tail: not worth quoting after an entry's first line.
fn is_frame(line: &str) -> bool {
    let t = line.trim_start();
    t.is_empty() || t.starts_with("at ") || t.starts_with("...")
}

#[derive(Default)]
struct Found {
    named: BTreeMap<TxnId, Vec<BrokerLine>>,
    during: BTreeMap<TxnId, Vec<BrokerLine>>,
}

/// One entry (its first line and what follows up to the next entry) of one file.
struct EntryScan<'a, 'q> {
    file: LogFile<'a>,
    txns: &'q BTreeMap<TxnId, Vec<(u64, u64)>>,
    topic: &'q str,
    head: Option<Head<'a>>,
    /// The first line after the head that is not a stack frame.
    detail: Option<&'a str>,
    /// Transactions this entry's head names (quoted when the entry ends, with `detail`).
    head_names: Vec<TxnId>,
    /// Transactions already quoted from this entry.
    quoted: BTreeSet<TxnId>,
    /// The entry names some transaction id (then it is no `during` line).
    names_any: bool,
}

impl<'a> EntryScan<'a, '_> {
    fn quote(&self, head: Option<&Head<'_>>, line: u64, message: String) -> BrokerLine {
        let (level, time) = head.map(|h| (h.level, h.time)).unwrap_or(("", ""));
        BrokerLine {
            node: self.file.node.to_string(),
            file: self.file.file.to_string(),
            line,
            level: level.to_string(),
            time: time.to_string(),
            message: cut(message),
        }
    }

    /// Close the current entry: quote its first line for the transactions it names, or as a
    /// `during` line of the transactions open then.
    fn end(&mut self, found: &mut Found) {
        let names = std::mem::take(&mut self.head_names);
        let Some(h) = self.head.take() else {
            return;
        };
        let mut message = h.text.clone();
        if let Some(d) = self.detail {
            message.push_str(" | ");
            message.push_str(d.trim());
        }
        for txn in names {
            let l = self.quote(Some(&h), h.line, message.clone());
            found.named.entry(txn).or_default().push(l);
        }
        let about_topic = !self.names_any
            && matches!(h.level, "WARN" | "ERROR" | "FATAL")
            && !self.topic.is_empty()
            && h.raw.contains(self.topic);
        if !about_topic {
            return;
        }
        let Some(t) = parse_log_time(h.time) else {
            return;
        };
        for (txn, windows) in self.txns {
            if windows.iter().any(|(a, b)| *a <= t && t <= *b) {
                let l = self.quote(Some(&h), h.line, message.clone());
                found.during.entry(*txn).or_default().push(l);
            }
        }
    }

    fn scan(&mut self, found: &mut Found) {
        let text = self.file.text;
        for (i, raw) in text.lines().enumerate() {
            let no = i as u64 + 1;
            if let Some(h) = head(no, raw) {
                self.end(found);
                self.detail = None;
                self.quoted.clear();
                self.names_any = false;
                let ids = if speaks_of_txn(raw) {
                    txn_ids_in(raw)
                } else {
                    Vec::new()
                };
                self.names_any = !ids.is_empty();
                for id in ids {
                    if self.txns.contains_key(&id) && self.quoted.insert(id) {
                        self.head_names.push(id);
                    }
                }
                self.head = Some(h);
                continue;
            }
            // A line inside an entry (an exception and its frames), or before the first.
            if self.detail.is_none() && !is_frame(raw) {
                self.detail = Some(raw);
            }
            if is_frame(raw) {
                continue;
            }
            let ctx_txn =
                speaks_of_txn(raw) || self.head.as_ref().is_some_and(|h| speaks_of_txn(h.raw));
            if !ctx_txn {
                continue;
            }
            let ids = txn_ids_in(raw);
            self.names_any |= !ids.is_empty();
            for id in ids {
                if self.txns.contains_key(&id) && self.quoted.insert(id) {
                    let message = match &self.head {
                        Some(h) => format!("{} | {}", h.text, raw.trim()),
                        None => raw.trim().to_string(),
                    };
                    let l = self.quote(self.head.as_ref(), no, message);
                    found.named.entry(id).or_default().push(l);
                }
            }
        }
        self.end(found);
    }
}

fn order(lines: &mut [BrokerLine]) {
    lines.sort_by(|a, b| {
        (a.time.as_str(), a.file.as_str(), a.line).cmp(&(b.time.as_str(), b.file.as_str(), b.line))
    });
}

/// The lines of `logs` about `txns` (each with the Unix-ms windows in which it was open or
/// committing, see `queries`): the lines that name it, and the WARN/ERROR lines naming
/// `topic` (the topic's local name, e.g. `eos-lwm-78ef54aa`; its partitions match too) and
/// no transaction, logged inside one of its windows. One `TxnLog` per transaction with a
/// line, in transaction order; lines in time order, capped (`MAX_NAMED`, `MAX_DURING`).
pub fn scan(
    logs: &[LogFile<'_>],
    txns: &BTreeMap<TxnId, Vec<(u64, u64)>>,
    topic: &str,
) -> Vec<TxnLog> {
    let mut found = Found::default();
    if txns.is_empty() {
        return Vec::new();
    }
    for file in logs {
        EntryScan {
            file: *file,
            txns,
            topic,
            head: None,
            detail: None,
            head_names: Vec::new(),
            quoted: BTreeSet::new(),
            names_any: false,
        }
        .scan(&mut found);
    }
    let keys: BTreeSet<TxnId> = found
        .named
        .keys()
        .chain(found.during.keys())
        .copied()
        .collect();
    keys.into_iter()
        .map(|txn| {
            let mut named = found.named.remove(&txn).unwrap_or_default();
            let mut during = found.during.remove(&txn).unwrap_or_default();
            order(&mut named);
            order(&mut during);
            let named_more = named.len().saturating_sub(MAX_NAMED) as u64;
            let during_more = during.len().saturating_sub(MAX_DURING) as u64;
            named.truncate(MAX_NAMED);
            during.truncate(MAX_DURING);
            TxnLog {
                txn,
                named,
                named_more,
                during,
                during_more,
            }
        })
        .collect()
}

/// The text between `key[` and the next `]`, as a topic's local name.
fn bracketed_topic(message: &str, key: &str) -> Option<String> {
    let i = message.find(key)? + key.len();
    let rest = &message[i..];
    let end = rest.find(']')?;
    let t = &rest[..end];
    Some(t.rsplit('/').next().unwrap_or(t).to_string())
}

/// What the broker's lines say happened to a transaction the coordinator had confirmed
/// committed, in plain words, when they match a known pattern; `None` otherwise.
///
/// - Pulsar's transaction buffer aborts the transactions of a partition that are below the
///   coordinator's low-water mark and still open in that buffer (`TopicTransactionBuffer`:
///   "Successes to abort low water mark for txn [...]"); for a transaction the coordinator had
///   already confirmed committed, that abort is what makes its messages unreadable there.
/// - The coordinator's end-transaction request to a partition can fail while its commit is
///   in flight (`TransactionBufferHandlerImpl`: "endTxn error topic: [...]").
pub fn known_cause(log: &TxnLog) -> Option<String> {
    let lwm: Vec<&BrokerLine> = log
        .named
        .iter()
        .filter(|l| {
            l.message
                .contains("Successes to abort low water mark for txn")
        })
        .collect();
    if lwm.is_empty() {
        return None;
    }
    let places: Vec<String> = lwm
        .iter()
        .take(4)
        .map(|l| match bracketed_topic(&l.message, "topic [") {
            Some(t) => format!("{t} ({})", l.place()),
            None => l.place(),
        })
        .collect();
    let mut s = format!(
        "the broker's transaction buffer aborted, by its low-water-mark rule, a transaction the coordinator had confirmed committed: {} on {}",
        log.txn,
        places.join(", ")
    );
    if lwm.len() > 4 {
        s.push_str(&format!(" and {} more", lwm.len() - 4));
    }
    let end_txn: Vec<&BrokerLine> = log
        .during
        .iter()
        .filter(|l| l.message.contains("endTxn error topic"))
        .collect();
    if let Some(first) = end_txn.first() {
        let topics: BTreeSet<String> = end_txn
            .iter()
            .filter_map(|l| bracketed_topic(&l.message, "topic: ["))
            .collect();
        s.push_str(&format!(
            "; and while it was open or committing, the broker logged an end-transaction error (naming no transaction) for {} ({})",
            topics.into_iter().collect::<Vec<_>>().join(", "),
            first.place()
        ));
    }
    Some(s)
}

#[cfg(test)]
mod tests;
