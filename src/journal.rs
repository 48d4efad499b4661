//! Client-side persistence of in-flight transactions (the design of Pulsar issue #19780), as
//! a write-ahead log with group commit.
//!
//! `<run dir>/journal/wal` is one append-only file of records (`format.rs` has the bytes):
//! the cursor (the first number not yet handed to any transaction), an attempt opened with the
//! numbers it carries (`Entry`), an attempt final (its commit confirmed, or its numbers
//! journaled again under a new attempt). One writer thread (`writer.rs`) appends what was
//! queued while its previous `fdatasync` ran and syncs it all at once; a sender awaits only
//! the sync that covers its records (`Ticket::synced`). When dead records dominate, the writer
//! rewrites the live ones to a temporary file and renames it over the journal. After a crash,
//! `run --resume` finds here every number that might not have been committed.
//!
//! The invariant that makes this enough: numbers are handed out only together with the
//! journal records that name them (the transaction is opened first, then the numbers are
//! taken, and their attempt and the moved cursor are queued, all under one lock; queueing is a
//! push, no I/O), and none is sent before the sync that covers those records. The file is
//! written in queue order and read back only up to its first torn or corrupt record, so what
//! a resume reads is a prefix of the queue: every number below the cursor it reads, or named
//! by an attempt it reads as open, was journaled before it was sent; a number below the cursor
//! that no open attempt names was confirmed committed (or given up on, which the history
//! records).
//!
//! Run directories of earlier versions (one `txn-<attempt>.json` per attempt and a `cursor`
//! file) cannot be resumed: opening such a journal fails with `JournalError::OldLayout`.

mod format;
mod writer;

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::history::{Ranges, TxnId};

use format::State;
pub use format::{Damage, DamageKind, Record};
use writer::{Shared, Synced};

/// The journal file in the journal directory.
const FILE: &str = "wal";
/// A compacted (or new) journal before it is renamed over `FILE`.
const TMP: &str = ".wal.tmp";

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("journal {path}: unreadable: {message}")]
    Corrupt { path: String, message: String },
    #[error(
        "journal {path}: written by an earlier version of pulsar-chaos (one file per \
         transaction: {found}); this version keeps one write-ahead log and cannot resume it"
    )]
    OldLayout { path: String, found: String },
    #[error("journal {path}: a write or sync failed, nothing after it is durable: {message}")]
    Failed { path: String, message: String },
    #[error("journal {path}: its writer has stopped")]
    Closed { path: String },
    #[error(
        "cannot resume: {damage}. The records after it are lost, so a resume could send \
         committed numbers again or leave numbers out, and the verdict would blame Pulsar for \
         it; run the scenario afresh"
    )]
    Damaged { damage: String },
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

/// What a journal holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// The first number not yet handed to any transaction (0 when none was recorded).
    pub cursor: u64,
    /// The attempts left in flight, by attempt number. An attempt whose numbers a later
    /// attempt (`resend_of`) already carries is superseded and left out.
    pub entries: Vec<Entry>,
    /// The highest attempt number any record names, superseded and final ones included (0
    /// when none).
    pub last_attempt: u64,
    /// Where reading stopped before the end of the file, if it did (a warning for the user:
    /// a torn last record is what a crash leaves; anything else is corruption).
    pub damage: Option<Damage>,
}

impl Loaded {
    /// Whether a resume may go on from what was read: yes when the file was read to its end or
    /// only a torn last record was left (its writer never saw it synced, so none of its numbers
    /// was sent); no for a corrupt or unreadable record, after which records are lost.
    pub fn resumable(&self) -> Result<(), JournalError> {
        match &self.damage {
            Some(d) if d.kind != DamageKind::Torn => Err(JournalError::Damaged {
                damage: d.to_string(),
            }),
            _ => Ok(()),
        }
    }
}

/// Tuning of a journal.
#[derive(Debug, Clone)]
pub struct Options {
    /// Compact only a file at least this long (and only when dead records dominate it).
    pub compact_min_bytes: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            compact_min_bytes: 1 << 20,
        }
    }
}

/// What the writer did so far: `records / syncs` is the group commit's batch size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    pub syncs: u64,
    pub records: u64,
    pub compactions: u64,
}

/// The journal of a run: cheap to clone; the writer ends when the last clone is dropped
/// (after writing what was queued).
#[derive(Clone)]
pub struct Journal {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    shared: Arc<Shared>,
    synced: watch::Receiver<Synced>,
    /// What opening found and cut off.
    recovered: Option<Damage>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shared.close();
    }
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("dir", &self.inner.dir)
            .finish_non_exhaustive()
    }
}

/// Queued records; awaiting `synced` returns once a sync covered them.
#[must_use = "records are durable only once `synced` returns"]
pub struct Ticket {
    seq: u64,
    synced: watch::Receiver<Synced>,
    path: PathBuf,
}

impl Ticket {
    /// Wait for the sync that covers these records (and every record queued before them).
    pub async fn synced(mut self) -> Result<(), JournalError> {
        let seq = self.seq;
        let r = self
            .synced
            .wait_for(|s| s.seq >= seq || s.failed.is_some())
            .await
            .map(|s| s.clone());
        let s = r.unwrap_or_else(|_| self.synced.borrow().clone());
        if s.seq >= seq {
            return Ok(());
        }
        let path = self.path.display().to_string();
        Err(match s.failed {
            Some(message) => JournalError::Failed { path, message },
            None => JournalError::Closed { path },
        })
    }
}

impl Journal {
    /// Open (or create) the journal in `dir` with the default options.
    pub fn open(dir: &Path) -> Result<Journal, JournalError> {
        Journal::open_with(dir, Options::default())
    }

    /// Open (or create) the journal in `dir`: remove a compaction's temporary file a crash
    /// left, read the journal, cut it back to its last sound record (the bytes cut are saved
    /// beside it and the cut is reported by `recovered` and `load`), start the writer.
    pub fn open_with(dir: &Path, opts: Options) -> Result<Journal, JournalError> {
        fs::create_dir_all(dir).map_err(io(dir))?;
        refuse_old_layout(dir)?;
        let path = dir.join(FILE);
        let tmp = dir.join(TMP);
        match fs::remove_file(&tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(&tmp)(e)),
        }
        if !path.exists() {
            writer::write_compacted(dir, &State::new())?;
            writer::install_compacted(dir)?;
        }
        let (state, damage) = read_state(&path)?;
        let recovered = match damage {
            Some(d) => Some(cut(dir, d)?),
            None => None,
        };
        let file = writer::open_append(&path)?;
        let shared = Arc::new(Shared::default());
        let (tx, rx) = watch::channel(Synced::default());
        writer::spawn(dir.to_path_buf(), file, state, opts, shared.clone(), tx)?;
        Ok(Journal {
            inner: Arc::new(Inner {
                dir: dir.to_path_buf(),
                shared,
                synced: rx,
                recovered,
            }),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Queue records, in order and together (no I/O: the caller may hold a lock); they are
    /// durable once the ticket's `synced` returns.
    pub fn submit(&self, records: Vec<Record>) -> Ticket {
        Ticket {
            seq: self.inner.shared.submit(records),
            synced: self.inner.synced.clone(),
            path: self.inner.dir.join(FILE),
        }
    }

    /// Record the first number not yet handed to a transaction; returns once synced.
    pub async fn set_cursor(&self, next: u64) -> Result<(), JournalError> {
        self.submit(vec![Record::Cursor { next }]).synced().await
    }

    /// Record an in-flight attempt (before any of its numbers is sent); returns once synced.
    pub async fn record(&self, e: &Entry) -> Result<(), JournalError> {
        self.submit(vec![Record::Opened(e.clone())]).synced().await
    }

    /// Clear an attempt: its commit is confirmed, or its numbers are journaled elsewhere.
    /// Returns once synced. Clearing an attempt the journal does not hold is harmless.
    pub async fn clear(&self, attempt: u64) -> Result<(), JournalError> {
        self.submit(vec![Record::Final { attempt }]).synced().await
    }

    /// The cursor, the attempts left in flight, the highest attempt named, and the damage
    /// found (now, or when the journal was opened and cut back). Reads the file; meant for
    /// before the producer starts (a write under way could read as a torn last record).
    pub fn load(&self) -> Result<Loaded, JournalError> {
        let mut l = read(&self.inner.dir)?;
        if l.damage.is_none() {
            l.damage = self.inner.recovered.clone();
        }
        Ok(l)
    }

    /// The highest attempt number any record names, superseded and final ones included (0
    /// when none): a resumed run numbers its attempts above it. A compaction keeps the final
    /// record of the highest attempt, so this never goes down.
    pub fn last_attempt(&self) -> Result<u64, JournalError> {
        Ok(read(&self.inner.dir)?.last_attempt)
    }

    /// What a resumed run goes on from: `load`, refused unless `resumable`; damage it may go on
    /// after (a torn last record) is logged and noted in the run's history.
    pub fn load_to_resume(
        &self,
        history: &crate::history::History,
    ) -> Result<Loaded, JournalError> {
        let loaded = self.load()?;
        loaded.resumable()?;
        if let Some(damage) = &loaded.damage {
            tracing::warn!("resuming: {damage}");
            history.record(crate::history::EventBody::Note {
                message: format!("resuming: {damage}"),
            });
        }
        Ok(loaded)
    }

    /// What opening the journal found and cut off.
    pub fn recovered(&self) -> Option<&Damage> {
        self.inner.recovered.as_ref()
    }

    /// The writer's syncs, records and compactions so far.
    pub fn counters(&self) -> Counters {
        let s = &self.inner.shared;
        Counters {
            syncs: s.syncs.load(Ordering::Relaxed),
            records: s.records.load(Ordering::Relaxed),
            compactions: s.compactions.load(Ordering::Relaxed),
        }
    }
}

/// Read the journal in `dir` without opening it for writing (nothing is cut or removed): up
/// to its first torn or corrupt record, reported in `damage`. No journal file reads as empty.
pub fn read(dir: &Path) -> Result<Loaded, JournalError> {
    refuse_old_layout(dir)?;
    let path = dir.join(FILE);
    if !path.exists() {
        return Ok(Loaded {
            cursor: 0,
            entries: Vec::new(),
            last_attempt: 0,
            damage: None,
        });
    }
    let (state, damage) = read_state(&path)?;
    let mut entries: Vec<Entry> = state.live.into_values().map(|(e, _)| e).collect();
    let superseded: std::collections::HashSet<u64> =
        entries.iter().filter_map(|e| e.resend_of).collect();
    entries.retain(|e| !superseded.contains(&e.attempt));
    entries.sort_by_key(|e| e.attempt);
    Ok(Loaded {
        cursor: state.cursor.map_or(0, |(c, _)| c),
        entries,
        last_attempt: state.max_attempt,
        damage,
    })
}

/// The records of the journal file at `path` and where reading stopped early.
fn read_state(path: &Path) -> Result<(State, Option<Damage>), JournalError> {
    let bytes = fs::read(path).map_err(io(path))?;
    let (state, damage) = format::scan(&bytes).map_err(|message| JournalError::Corrupt {
        path: path.display().to_string(),
        message,
    })?;
    Ok((
        state,
        damage.map(|d| Damage {
            path: path.to_path_buf(),
            ..d
        }),
    ))
}

/// Cut the journal back to its last sound record, the bytes cut saved to
/// `damaged-at-<offset>.bin` beside it first (evidence; a resume never reads them).
fn cut(dir: &Path, d: Damage) -> Result<Damage, JournalError> {
    let path = dir.join(FILE);
    let bytes = fs::read(&path).map_err(io(&path))?;
    let saved = dir.join(format!("damaged-at-{}.bin", d.offset));
    let mut f = File::create(&saved).map_err(io(&saved))?;
    f.write_all(&bytes[d.offset as usize..])
        .and_then(|()| f.sync_all())
        .map_err(io(&saved))?;
    let j = fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .map_err(io(&path))?;
    j.set_len(d.offset)
        .and_then(|()| j.sync_all())
        .map_err(io(&path))?;
    writer::sync_dir(dir)?;
    Ok(Damage {
        saved: Some(saved),
        ..d
    })
}

/// Refuse a journal directory of an earlier version (a `cursor` file, `txn-<n>.json` files).
fn refuse_old_layout(dir: &Path) -> Result<(), JournalError> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(dir)(e)),
    };
    for de in entries {
        let name = de.map_err(io(dir))?.file_name();
        let name = name.to_string_lossy();
        let core = name.strip_prefix('.').unwrap_or(&name);
        let core = core.strip_suffix(".tmp").unwrap_or(core);
        if core == "cursor" || (core.starts_with("txn-") && core.ends_with(".json")) {
            return Err(JournalError::OldLayout {
                path: dir.display().to_string(),
                found: name.into_owned(),
            });
        }
    }
    Ok(())
}

/// The first number after everything the journal knows of.
pub fn next_number(cursor: u64, entries: &[Entry]) -> u64 {
    entries
        .iter()
        .flat_map(|e| e.numbers.iter().map(|(_, end)| *end))
        .fold(cursor, u64::max)
}

#[cfg(test)]
mod tests;
