//! The one writer of a journal file: a thread of its own that takes every record queued
//! while its previous write and `fdatasync` ran, writes them together and syncs once (group
//! commit), then tells the waiting senders how far the file is synced. When dead records
//! dominate it compacts the file (`write_compacted`, then `install_compacted`).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use tokio::sync::watch;

use super::format::{encode, Record, State, MAGIC};
use super::{io, JournalError, Options, FILE, TMP};

/// What the writer has made durable: every record up to `seq` (records are numbered from 1 in
/// the order they were queued), or, once a write or sync failed, why nothing more will be.
#[derive(Debug, Clone, Default)]
pub(super) struct Synced {
    pub seq: u64,
    pub failed: Option<String>,
}

/// Records queued and not yet taken by the writer.
#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    records: Vec<(Record, u64)>,
    /// The number of the last record queued.
    seq: u64,
    closed: bool,
}

/// What the senders and the writer share.
#[derive(Default)]
pub(super) struct Shared {
    pending: Mutex<Pending>,
    wake: Condvar,
    pub syncs: AtomicU64,
    pub records: AtomicU64,
    pub compactions: AtomicU64,
    /// Set by a test to keep the writer from writing while records queue up.
    #[cfg(test)]
    gate: (Mutex<bool>, Condvar),
}

impl Shared {
    /// Queue records, in order and together; returns the number of the last one.
    pub fn submit(&self, records: Vec<Record>) -> u64 {
        let framed: Vec<(Record, Vec<u8>)> = records
            .into_iter()
            .map(|r| {
                let b = encode(&r);
                (r, b)
            })
            .collect();
        let mut p = self.pending.lock().expect("lock");
        for (r, b) in framed {
            p.bytes.extend_from_slice(&b);
            p.records.push((r, b.len() as u64));
            p.seq += 1;
        }
        let seq = p.seq;
        drop(p);
        self.wake.notify_one();
        seq
    }

    /// The number of the last record queued.
    #[cfg(test)]
    pub fn queued(&self) -> u64 {
        self.pending.lock().expect("lock").seq
    }

    /// Keep the writer from writing (`true`) or let it go on (`false`).
    #[cfg(test)]
    pub fn hold(&self, held: bool) {
        *self.gate.0.lock().expect("lock") = held;
        self.gate.1.notify_all();
    }

    /// No more records: the writer writes what is queued and ends.
    pub fn close(&self) {
        self.pending.lock().expect("lock").closed = true;
        self.wake.notify_all();
    }
}

/// Start the writer on `file` (open for appending, its records adding up to `state`).
pub(super) fn spawn(
    dir: PathBuf,
    file: File,
    state: State,
    opts: Options,
    shared: Arc<Shared>,
    synced: watch::Sender<Synced>,
) -> Result<(), JournalError> {
    std::thread::Builder::new()
        .name("journal-writer".into())
        .spawn(move || {
            if let Err(e) = run(&dir, file, state, &opts, &shared, &synced) {
                tracing::error!("{e}");
                synced.send_modify(|s| s.failed = Some(e.to_string()));
            }
        })
        .map_err(io(&PathBuf::from("journal-writer thread")))?;
    Ok(())
}

fn run(
    dir: &Path,
    mut file: File,
    mut state: State,
    opts: &Options,
    shared: &Shared,
    synced: &watch::Sender<Synced>,
) -> Result<(), JournalError> {
    let path = dir.join(FILE);
    loop {
        let (bytes, records, seq) = {
            let mut p = shared.pending.lock().expect("lock");
            while p.bytes.is_empty() && !p.closed {
                p = shared.wake.wait(p).expect("lock");
            }
            if p.bytes.is_empty() {
                return Ok(());
            }
            (
                std::mem::take(&mut p.bytes),
                std::mem::take(&mut p.records),
                p.seq,
            )
        };
        #[cfg(test)]
        {
            let mut held = shared.gate.0.lock().expect("lock");
            while *held {
                held = shared.gate.1.wait(held).expect("lock");
            }
        }
        file.write_all(&bytes)
            .and_then(|()| file.sync_data())
            .map_err(io(&path))?;
        shared.syncs.fetch_add(1, Ordering::Relaxed);
        shared
            .records
            .fetch_add(records.len() as u64, Ordering::Relaxed);
        for (r, size) in records {
            state.apply(r, size);
        }
        synced.send_modify(|s| s.seq = seq);
        if state.should_compact(opts.compact_min_bytes) {
            state = write_compacted(dir, &state)?;
            install_compacted(dir)?;
            file = open_append(&path)?;
            shared.compactions.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The journal file, open for appending.
pub(super) fn open_append(path: &Path) -> Result<File, JournalError> {
    OpenOptions::new().append(true).open(path).map_err(io(path))
}

/// Compaction, step 1: the records `state` adds up to, written to the temporary file and
/// synced. The journal itself is untouched (a crash here leaves the temporary file, which
/// opening the journal removes). Returns the state of the new file. Creating a journal is
/// compacting an empty state.
pub(super) fn write_compacted(dir: &Path, state: &State) -> Result<State, JournalError> {
    let tmp = dir.join(TMP);
    let mut out = State::new();
    let mut bytes = MAGIC.to_vec();
    for r in state.compacted() {
        let b = encode(&r);
        bytes.extend_from_slice(&b);
        out.apply(r, b.len() as u64);
    }
    let mut f = File::create(&tmp).map_err(io(&tmp))?;
    f.write_all(&bytes)
        .and_then(|()| f.sync_all())
        .map_err(io(&tmp))?;
    Ok(out)
}

/// Compaction, step 2: the temporary file renamed over the journal, and the directory synced
/// (before it, a crash leaves the old file or the new one; both hold the same live records).
pub(super) fn install_compacted(dir: &Path) -> Result<(), JournalError> {
    let dst = dir.join(FILE);
    fs::rename(dir.join(TMP), &dst).map_err(io(&dst))?;
    sync_dir(dir)
}

pub(super) fn sync_dir(dir: &Path) -> Result<(), JournalError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}
