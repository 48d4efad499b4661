//! Client-side persistence of in-flight transactions (the design of Pulsar issue #19780).
//!
//! `<run dir>/journal/cursor` holds the first number not yet handed to any transaction;
//! `<run dir>/journal/txn-<attempt>.json` names the numbers (as ranges) and the transaction id
//! of one in-flight attempt. Both are written and synced before the numbers are sent; an
//! attempt's file is cleared (removed) when its commit is confirmed, or when its numbers have
//! been journaled again under a new attempt. After a crash, `run --resume` finds here every
//! number that might not have been committed.
//!
//! The invariant that makes this enough: numbers are handed out only together with the
//! journal entry that names them (the transaction is opened first, then the numbers are taken,
//! journaled and the cursor moved, all under one lock). So every number below the cursor, or
//! named by an entry, was journaled before it was sent; a number below the cursor that no
//! entry names was confirmed committed (or given up on, which the history records).

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::history::{Ranges, TxnId};

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("journal {path}: unreadable entry: {message}")]
    Corrupt { path: String, message: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> JournalError + '_ {
    move |source| JournalError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// One in-flight attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub attempt: u64,
    pub txn: TxnId,
    pub numbers: Ranges,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resend_of: Option<u64>,
}

/// The journal directory of a run.
#[derive(Debug, Clone)]
pub struct Journal {
    dir: PathBuf,
}

impl Journal {
    pub fn open(dir: &Path) -> Result<Journal, JournalError> {
        fs::create_dir_all(dir).map_err(io(dir))?;
        Ok(Journal {
            dir: dir.to_path_buf(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn sync_dir(&self) -> Result<(), JournalError> {
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io(&self.dir))
    }

    /// Write `bytes` to `name` atomically and durably (temp file, fsync, rename, fsync dir).
    fn write_durably(&self, name: &str, bytes: &[u8]) -> Result<(), JournalError> {
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let dst = self.dir.join(name);
        {
            let mut f = File::create(&tmp).map_err(io(&tmp))?;
            f.write_all(bytes).map_err(io(&tmp))?;
            f.sync_data().map_err(io(&tmp))?;
        }
        fs::rename(&tmp, &dst).map_err(io(&dst))?;
        self.sync_dir()
    }

    /// Record the first number not yet handed to a transaction.
    pub fn set_cursor(&self, next: u64) -> Result<(), JournalError> {
        self.write_durably("cursor", next.to_string().as_bytes())
    }

    /// Record an in-flight attempt (before any of its numbers is sent).
    pub fn record(&self, e: &Entry) -> Result<(), JournalError> {
        let bytes = serde_json::to_vec(e).expect("journal entries serialize");
        self.write_durably(&format!("txn-{}.json", e.attempt), &bytes)
    }

    /// Clear an attempt: its commit is confirmed, or its numbers are journaled elsewhere.
    pub fn clear(&self, attempt: u64) -> Result<(), JournalError> {
        let p = self.dir.join(format!("txn-{attempt}.json"));
        match fs::remove_file(&p) {
            Ok(()) => self.sync_dir(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io(&p)(e)),
        }
    }

    /// The cursor and the attempts left in flight. An attempt whose numbers a later attempt
    /// (`resend_of`) already carries is superseded and left out.
    pub fn load(&self) -> Result<(u64, Vec<Entry>), JournalError> {
        let cursor_path = self.dir.join("cursor");
        let cursor = match fs::read_to_string(&cursor_path) {
            Ok(t) => t.trim().parse::<u64>().map_err(|e| JournalError::Corrupt {
                path: cursor_path.display().to_string(),
                message: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(io(&cursor_path)(e)),
        };
        let mut entries = Vec::new();
        for de in fs::read_dir(&self.dir).map_err(io(&self.dir))? {
            let de = de.map_err(io(&self.dir))?;
            let name = de.file_name().to_string_lossy().into_owned();
            if !(name.starts_with("txn-") && name.ends_with(".json")) {
                continue;
            }
            let text = fs::read(de.path()).map_err(io(&de.path()))?;
            let e: Entry = serde_json::from_slice(&text).map_err(|e| JournalError::Corrupt {
                path: de.path().display().to_string(),
                message: e.to_string(),
            })?;
            entries.push(e);
        }
        let superseded: std::collections::HashSet<u64> =
            entries.iter().filter_map(|e| e.resend_of).collect();
        entries.retain(|e| !superseded.contains(&e.attempt));
        entries.sort_by_key(|e| e.attempt);
        Ok((cursor, entries))
    }

    /// The highest attempt number any file of the journal names, superseded entries and
    /// half-written ones included (0 when none): a resumed run numbers its attempts above it,
    /// so a new attempt never overwrites (or, through `resend_of`, clears) an old one's entry.
    pub fn last_attempt(&self) -> Result<u64, JournalError> {
        let mut last = 0;
        for de in fs::read_dir(&self.dir).map_err(io(&self.dir))? {
            let de = de.map_err(io(&self.dir))?;
            if let Some(n) = attempt_of(&de.file_name().to_string_lossy()) {
                last = last.max(n);
            }
        }
        Ok(last)
    }
}

/// The attempt number in a journal file's name: `txn-<n>.json`, or the temporary file
/// `.txn-<n>.json.tmp` a crash can leave behind while one was being written.
fn attempt_of(name: &str) -> Option<u64> {
    let core = name.strip_prefix('.').unwrap_or(name);
    let core = core.strip_suffix(".tmp").unwrap_or(core);
    core.strip_prefix("txn-")?
        .strip_suffix(".json")?
        .parse()
        .ok()
}

/// The first number after everything the journal knows of.
pub fn next_number(cursor: u64, entries: &[Entry]) -> u64 {
    entries
        .iter()
        .flat_map(|e| e.numbers.iter().map(|(_, end)| *end))
        .fold(cursor, u64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pc-journal-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    fn entry(attempt: u64, a: u64, b: u64, resend_of: Option<u64>) -> Entry {
        Entry {
            attempt,
            txn: TxnId {
                most: 0,
                least: attempt,
            },
            numbers: vec![(a, b)],
            resend_of,
        }
    }

    #[test]
    fn records_clears_and_loads() {
        let j = Journal::open(&dir("basic")).unwrap();
        j.set_cursor(300).unwrap();
        j.record(&entry(1, 0, 100, None)).unwrap();
        j.record(&entry(2, 100, 200, None)).unwrap();
        j.record(&entry(3, 200, 300, None)).unwrap();
        j.clear(2).unwrap();
        j.clear(2).unwrap();
        let (cursor, entries) = j.load().unwrap();
        assert_eq!(cursor, 300);
        assert_eq!(
            entries.iter().map(|e| e.attempt).collect::<Vec<_>>(),
            vec![1, 3]
        );
        assert_eq!(next_number(cursor, &entries), 300);
    }

    #[test]
    fn a_resent_attempt_supersedes_its_original() {
        let j = Journal::open(&dir("resend")).unwrap();
        j.record(&entry(1, 0, 100, None)).unwrap();
        j.record(&entry(5, 0, 100, Some(1))).unwrap();
        let (_, entries) = j.load().unwrap();
        assert_eq!(entries, vec![entry(5, 0, 100, Some(1))]);
    }

    #[test]
    fn next_number_covers_entries_beyond_the_cursor() {
        // Crash after journaling [100, 200) but before the cursor moved.
        assert_eq!(next_number(100, &[entry(2, 100, 200, None)]), 200);
        assert_eq!(next_number(0, &[]), 0);
    }

    #[test]
    fn the_last_attempt_counts_superseded_and_half_written_entries() {
        let d = dir("last");
        let j = Journal::open(&d).unwrap();
        assert_eq!(j.last_attempt().unwrap(), 0);
        j.set_cursor(100).unwrap();
        j.record(&entry(3, 0, 100, None)).unwrap();
        j.record(&entry(7, 0, 100, Some(3))).unwrap();
        // Superseded: `load` leaves 3 out, but 7 is still the highest.
        assert_eq!(j.last_attempt().unwrap(), 7);
        j.clear(7).unwrap();
        j.record(&entry(5, 0, 100, None)).unwrap();
        assert_eq!(j.last_attempt().unwrap(), 5);
        // A crash while writing entry 9 leaves only its temporary file.
        fs::write(d.join(".txn-9.json.tmp"), "{").unwrap();
        assert_eq!(j.last_attempt().unwrap(), 9);
        assert_eq!(attempt_of("cursor"), None);
        assert_eq!(attempt_of(".cursor.tmp"), None);
        assert_eq!(attempt_of("txn-x.json"), None);
    }

    #[test]
    fn a_corrupt_entry_is_reported() {
        let d = dir("corrupt");
        let j = Journal::open(&d).unwrap();
        fs::write(d.join("txn-9.json"), "{not json").unwrap();
        assert!(matches!(j.load(), Err(JournalError::Corrupt { .. })));
    }
}
