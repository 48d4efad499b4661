//! Writing and reading `history.jsonl`: the appender a run records into and the streaming
//! reader. The event types are the core crate's (`pulsar_chaos_core::history`).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub use pulsar_chaos_core::history::*;

/// The history of a run in progress. Cheap to clone; every clone appends to the same file.
#[derive(Clone)]
pub struct History {
    inner: Arc<Mutex<Inner>>,
    start: Instant,
}

struct Inner {
    out: BufWriter<File>,
    sinks: Vec<Sink>,
}

/// A subscriber to every event as it is recorded (`--json`, the progress line).
type Sink = Box<dyn FnMut(&Event) + Send>;

/// Errors of writing or reading a history file.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("cannot write the history {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the history {path}: {source}{}", damaged_hint(.source))]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: not a history event: {message}; {DAMAGED}")]
    Parse {
        path: String,
        line: usize,
        message: String,
    },
}

/// What to do about a history whose text is damaged.
const DAMAGED: &str = "the history is damaged (a run only appends whole lines, so something changed it afterwards); run the scenario again with run.json's `reproduce` command";

/// After a read error: when the file's bytes are not text, it is damaged, not unreadable.
fn damaged_hint(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::InvalidData {
        format!(" (not UTF-8 text); {DAMAGED}")
    } else {
        String::new()
    }
}

impl HistoryError {
    /// True when the file is there and readable but its content is not a history: bad input
    /// (exit 2), not the machine's failure.
    pub fn is_damaged(&self) -> bool {
        match self {
            HistoryError::Parse { .. } => true,
            HistoryError::Read { source, .. } => source.kind() == std::io::ErrorKind::InvalidData,
            HistoryError::Write { .. } => false,
        }
    }
}

impl History {
    /// Note Pulsar's answer to the ABORT of an attempt (producer and transform alike): a report
    /// about an aborted transaction quotes it.
    pub fn abort_answered(&self, attempt: u64, txn: TxnId, answer: &Result<(), String>) {
        let message = match answer {
            Ok(()) => format!("the coordinator answered the abort of attempt {attempt} {txn} success"),
            Err(e) => format!("the abort of attempt {attempt} {txn} was not confirmed ({e}); the coordinator's timeout ends it"),
        };
        self.record(EventBody::Note { message });
    }

    /// Create (or, with `append`, continue) the history at `path`. `start` is t_ms = 0.
    pub fn create(path: &Path, start: Instant, append: bool) -> Result<History, HistoryError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(append)
            .write(true)
            .truncate(!append)
            .open(path)
            .map_err(|source| HistoryError::Write {
                path: path.display().to_string(),
                source,
            })?;
        Ok(History {
            inner: Arc::new(Mutex::new(Inner {
                out: BufWriter::new(file),
                sinks: Vec::new(),
            })),
            start,
        })
    }

    /// Also hand every event to `sink` (live progress, `--json`).
    pub fn add_sink(&self, sink: Sink) {
        self.inner.lock().expect("history lock").sinks.push(sink);
    }

    pub fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    pub fn start(&self) -> Instant {
        self.start
    }

    /// Append one event. A write error is reported once through tracing and does not stop the
    /// run: the verdict notes that the history is incomplete.
    pub fn record(&self, body: EventBody) {
        // The time is taken under the lock, so the file is in time order.
        let mut inner = self.inner.lock().expect("history lock");
        let ev = Event {
            t_ms: self.now_ms(),
            body,
        };
        // One write per line, newline included: the buffer goes out only at line ends, so a
        // killed process leaves whole lines.
        let mut line = serde_json::to_string(&ev).expect("events serialize");
        line.push('\n');
        if let Err(e) = inner.out.write_all(line.as_bytes()) {
            tracing::error!("history write failed: {e}");
        }
        for sink in inner.sinks.iter_mut() {
            sink(&ev);
        }
        // Rare events go to the file at once (a killed harness must not lose a fault's
        // record); the frequent transaction events are flushed in batches, except the durable
        // ones. A flush hands the bytes to the OS, which keeps them through a kill of this
        // process; no fsync: it blocked a runtime thread for a disk round trip per attempt
        // (the synced journal is what outlives a crash of the machine itself).
        if ev.body.is_rare() || ev.body.is_durable() {
            if let Err(e) = inner.out.flush() {
                tracing::error!("history flush failed: {e}");
            }
        }
    }

    /// Flush buffered events to the file (and the OS).
    pub fn flush(&self) {
        let mut inner = self.inner.lock().expect("history lock");
        if let Err(e) = inner.out.flush() {
            tracing::error!("history flush failed: {e}");
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = self.out.flush();
    }
}

/// Read a history file as a stream of events.
pub fn read(
    path: &Path,
) -> Result<impl Iterator<Item = Result<Event, HistoryError>>, HistoryError> {
    let p = path.display().to_string();
    let file = File::open(path).map_err(|source| HistoryError::Read {
        path: p.clone(),
        source,
    })?;
    let reader = BufReader::new(file);
    Ok(reader.lines().enumerate().filter_map(move |(i, line)| {
        let line = match line {
            Ok(l) => l,
            Err(source) => {
                return Some(Err(HistoryError::Read {
                    path: p.clone(),
                    source,
                }))
            }
        };
        if line.trim().is_empty() {
            return None;
        }
        Some(
            serde_json::from_str::<Event>(&line).map_err(|e| HistoryError::Parse {
                path: p.clone(),
                line: i + 1,
                message: e.to_string(),
            }),
        )
    }))
}

/// The time of the last event in a history file (0 when empty or absent): a resumed run goes
/// on from there, so the file stays in time order.
/// Cut a torn last line (one without its newline, left by a crash mid-write) off a history
/// that a resumed run is about to append to; otherwise the next event would be glued to it
/// and the history could not be read. Returns how many bytes were cut.
pub fn repair_tail(path: &Path) -> Result<u64, HistoryError> {
    let err = |source| HistoryError::Write {
        path: path.display().to_string(),
        source,
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(err(e)),
    };
    let keep = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map(|i| i + 1)
        .unwrap_or(0);
    if keep == bytes.len() {
        return Ok(0);
    }
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(err)?;
    f.set_len(keep as u64).map_err(err)?;
    f.sync_data().map_err(err)?;
    Ok((bytes.len() - keep) as u64)
}

pub fn last_t_ms(path: &Path) -> u64 {
    match read(path) {
        Ok(events) => events
            .filter_map(|e| e.ok())
            .map(|e| e.t_ms)
            .max()
            .unwrap_or(0),
        Err(_) => 0,
    }
}

/// Read a whole history file into memory (small histories: tests, reports).
pub fn read_all(path: &Path) -> Result<Vec<Event>, HistoryError> {
    read(path)?.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 33: a history line that is not JSON, or not UTF-8, is a damaged file (exit 2,
    /// named, with what to do), not an infrastructure failure (exit 3).
    #[test]
    fn a_damaged_history_is_bad_input_with_what_to_do() {
        let dir = tempdir();
        let path = dir.join("history.jsonl");
        for bytes in [&b"{bad\n"[..], &b"{\"t_ms\": \"\xff\"}\n"[..]] {
            std::fs::write(&path, bytes).unwrap();
            let e = read(&path).unwrap().next().unwrap().unwrap_err();
            assert!(e.is_damaged(), "{e}");
            let t = e.to_string();
            assert!(t.contains(&path.display().to_string()), "{t}");
            assert!(t.contains("the history is damaged"), "{t}");
            assert!(t.contains("`reproduce`"), "{t}");
            assert_eq!(
                crate::error::Error::from(e).exit_code(),
                crate::exit::BAD_INPUT
            );
        }
        let missing = read(&dir.join("none.jsonl")).err().unwrap();
        assert!(!missing.is_damaged());
    }

    #[test]
    fn events_round_trip_through_a_file() {
        let dir = tempdir();
        let path = dir.join("history.jsonl");
        let h = History::create(&path, Instant::now(), false).unwrap();
        let txn = TxnId { most: 0, least: 7 };
        h.record(EventBody::TxnOpened {
            attempt: 1,
            txn,
            numbers: vec![(0, 100)],
            resend_of: None,
        });
        h.record(EventBody::TxnOutcome {
            attempt: 1,
            txn,
            outcome: Outcome::Ambiguous,
            detail: "timeout".into(),
        });
        h.flush();
        let events = read_all(&path).unwrap();
        assert_eq!(events.len(), 2);
        assert!(matches!(
            events[1].body,
            EventBody::TxnOutcome {
                outcome: Outcome::Ambiguous,
                ..
            }
        ));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"event\":\"txn_outcome\""), "{text}");
        assert!(text.contains("\"outcome\":\"ambiguous\""), "{text}");
    }

    #[test]
    fn a_bad_line_is_located() {
        let dir = tempdir();
        let path = dir.join("h.jsonl");
        std::fs::write(
            &path,
            "{\"t_ms\":1,\"event\":\"note\",\"message\":\"x\"}\nnot json\n",
        )
        .unwrap();
        let err = read_all(&path).unwrap_err();
        assert!(err.to_string().contains(":2:"), "{err}");
    }

    /// Regression (issue 10, point 4): `TxnOpened` sat in the buffer, so after a kill the
    /// history named fewer attempts than the journal and a resumed run reused their numbers.
    #[test]
    fn an_opened_attempt_is_in_the_file_when_record_returns() {
        let dir = tempdir();
        let path = dir.join("history.jsonl");
        let h = History::create(&path, Instant::now(), false).unwrap();
        h.record(EventBody::SendsAcked {
            attempt: 1,
            messages: 5,
        });
        h.record(EventBody::TxnOpened {
            attempt: 2,
            txn: TxnId { most: 0, least: 2 },
            numbers: vec![(0, 100)],
            resend_of: None,
        });
        // No flush, and `h` is alive (a SIGKILL now would not run its Drop).
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"attempt\":2"), "{text:?}");
        assert!(text.ends_with('\n'), "{text:?}");
        drop(h);
    }

    /// A kill can leave a line without its end; a resumed run cuts it before appending,
    /// or the history could not be read.
    #[test]
    fn a_torn_last_line_is_cut_before_a_resumed_run_appends() {
        let dir = tempdir();
        let path = dir.join("history.jsonl");
        let whole = "{\"t_ms\":1,\"event\":\"note\",\"message\":\"x\"}\n";
        std::fs::write(&path, format!("{whole}{{\"t_ms\":2,\"event\":\"sends_ac")).unwrap();
        assert_eq!(repair_tail(&path).unwrap(), 27);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), whole);
        assert_eq!(repair_tail(&path).unwrap(), 0);
        let h = History::create(&path, Instant::now(), true).unwrap();
        h.record(EventBody::Note {
            message: "resumed".into(),
        });
        drop(h);
        assert_eq!(read_all(&path).unwrap().len(), 2);
        assert_eq!(repair_tail(&dir.join("absent.jsonl")).unwrap(), 0);
    }

    fn tempdir() -> crate::scratch::Scratch {
        crate::scratch::Scratch::new("pc-history")
    }
}
