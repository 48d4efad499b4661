//! The journal file's bytes, and reading them back.
//!
//! ```text
//! file    = MAGIC record*
//! record  = len:u32 LE | crc:u32 LE | payload (len bytes, JSON of `Record`)
//! crc     = CRC-32 (IEEE) of the 4 length bytes followed by the payload
//! ```
//!
//! The checksum covers the length, so a zero-filled tail (a file extended by a crash before its
//! data reached the disk) never reads as a record. Reading stops at the first record that is
//! cut short by the end of the file (torn), fails its checksum or cannot be decoded (corrupt):
//! nothing after it is trusted.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Entry;

/// The first bytes of a journal file (format version 1).
pub(super) const MAGIC: &[u8; 8] = b"PCJWAL1\n";
/// Length and checksum before each payload.
const FRAME: usize = 8;
/// A longer length field is taken for corruption, not for a record.
const MAX_PAYLOAD: u32 = 64 << 20;

/// One record of the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "r", rename_all = "snake_case")]
pub enum Record {
    /// The first number not yet handed to any transaction.
    Cursor { next: u64 },
    /// An attempt opened, with the numbers it carries (before any of them is sent).
    Opened(Entry),
    /// An attempt is final: its commit is confirmed, or its numbers are journaled elsewhere.
    Final { attempt: u64 },
}

/// A record with its frame.
pub(super) fn encode(r: &Record) -> Vec<u8> {
    let payload = serde_json::to_vec(r).expect("journal records serialize");
    let len = u32::try_from(payload.len()).expect("a journal record under 4 GiB");
    let mut out = Vec::with_capacity(FRAME + payload.len());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&checksum(&len.to_le_bytes(), &payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

fn checksum(len: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(len);
    h.update(payload);
    h.finalize()
}

/// Why reading stopped before the end of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DamageKind {
    /// The file ends inside the record, or only zeros follow: what a crash during a write leaves.
    Torn,
    /// A complete record whose checksum does not match.
    Checksum,
    /// A record that passes its checksum but cannot be decoded, or an impossible length.
    Unreadable(String),
}

/// Where and why reading a journal stopped early. After a crash a torn last record is
/// expected (its writer never saw it synced, so none of its numbers was sent); anything else
/// is corruption, and the records after it are lost to the resume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub path: PathBuf,
    /// Byte offset of the first record not read.
    pub offset: u64,
    /// Bytes from `offset` to the end of the file, all ignored.
    pub ignored: u64,
    pub kind: DamageKind,
    /// Where the ignored bytes were saved before the journal was cut back to `offset`.
    pub saved: Option<PathBuf>,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match &self.kind {
            DamageKind::Torn => {
                "a torn record (the file ends inside it), as a crash during a write leaves"
                    .to_string()
            }
            DamageKind::Checksum => "a corrupt record (its checksum does not match)".to_string(),
            DamageKind::Unreadable(m) => format!("an unreadable record ({m})"),
        };
        write!(
            f,
            "journal {}: stopped reading at byte {}: {what}; the {} byte(s) from there on are ignored",
            self.path.display(),
            self.offset,
            self.ignored
        )?;
        if let Some(s) = &self.saved {
            write!(f, " (saved to {})", s.display())?;
        }
        Ok(())
    }
}

/// What the records of a journal add up to, record after record. The writer keeps one up to
/// date to decide and perform compaction; reading a file builds one.
#[derive(Debug, Clone, Default)]
pub(super) struct State {
    /// The last cursor recorded, and the size of its record.
    pub cursor: Option<(u64, u64)>,
    /// Opened and not final: attempt → (entry, size of its record).
    pub live: BTreeMap<u64, (Entry, u64)>,
    /// The highest attempt any record names.
    pub max_attempt: u64,
    /// Bytes of the file (the magic and every record applied).
    pub len: u64,
}

impl State {
    pub fn new() -> State {
        State {
            len: MAGIC.len() as u64,
            ..State::default()
        }
    }

    /// Apply one record of `size` framed bytes.
    pub fn apply(&mut self, r: Record, size: u64) {
        match r {
            Record::Cursor { next } => self.cursor = Some((next, size)),
            Record::Opened(e) => {
                self.max_attempt = self.max_attempt.max(e.attempt);
                self.live.insert(e.attempt, (e, size));
            }
            Record::Final { attempt } => {
                self.max_attempt = self.max_attempt.max(attempt);
                self.live.remove(&attempt);
            }
        }
        self.len += size;
    }

    /// The records a compacted file holds: the cursor, every live attempt, and, when the
    /// highest attempt named is no longer live, its final record (so `last_attempt` does not go
    /// down when a compaction drops the dead records).
    pub fn compacted(&self) -> Vec<Record> {
        let mut out = Vec::with_capacity(self.live.len() + 2);
        if let Some((next, _)) = self.cursor {
            out.push(Record::Cursor { next });
        }
        out.extend(self.live.values().map(|(e, _)| Record::Opened(e.clone())));
        if self.max_attempt > 0 && !self.live.contains_key(&self.max_attempt) {
            out.push(Record::Final {
                attempt: self.max_attempt,
            });
        }
        out
    }

    /// Bytes the records of `compacted` take, about: what a compaction would keep.
    fn live_bytes(&self) -> u64 {
        MAGIC.len() as u64
            + self.cursor.map_or(0, |(_, s)| s)
            + self.live.values().map(|(_, s)| s).sum::<u64>()
            + 32
    }

    /// Dead records dominate a file of at least `min_len` bytes.
    pub fn should_compact(&self, min_len: u64) -> bool {
        self.len >= min_len && self.len.saturating_sub(self.live_bytes()) * 2 > self.len
    }
}

/// The records of a journal file's bytes, up to the first torn or corrupt one. Returns the
/// state they add up to and, when reading stopped early, where and why (its `path` left empty
/// and `saved` unset for the caller to fill in).
pub(super) fn scan(bytes: &[u8]) -> Result<(State, Option<Damage>), String> {
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err("not a journal of this version (its first bytes are not the magic)".into());
    }
    let mut state = State::new();
    let mut at = MAGIC.len();
    while at < bytes.len() {
        match next_record(&bytes[at..]) {
            Ok((r, size)) => {
                state.apply(r, size as u64);
                at += size;
            }
            Err(kind) => {
                return Ok((
                    state,
                    Some(Damage {
                        path: PathBuf::new(),
                        offset: at as u64,
                        ignored: (bytes.len() - at) as u64,
                        kind,
                        saved: None,
                    }),
                ))
            }
        }
    }
    Ok((state, None))
}

/// The record at the start of `rest` and its framed size.
fn next_record(rest: &[u8]) -> Result<(Record, usize), DamageKind> {
    if rest.len() < FRAME {
        return Err(DamageKind::Torn);
    }
    let len_bytes: [u8; 4] = rest[..4].try_into().expect("4 bytes");
    let len = u32::from_le_bytes(len_bytes);
    let crc = u32::from_le_bytes(rest[4..8].try_into().expect("4 bytes"));
    if len > MAX_PAYLOAD {
        return Err(DamageKind::Unreadable(format!("a length of {len} bytes")));
    }
    let end = FRAME + len as usize;
    if rest.len() < end {
        return Err(DamageKind::Torn);
    }
    let payload = &rest[FRAME..end];
    if checksum(&len_bytes, payload) != crc {
        // Only zeros from here on: the file was extended but its data never reached the disk.
        return Err(if rest.iter().all(|b| *b == 0) {
            DamageKind::Torn
        } else {
            DamageKind::Checksum
        });
    }
    let r = serde_json::from_slice(payload).map_err(|e| DamageKind::Unreadable(e.to_string()))?;
    Ok((r, end))
}
