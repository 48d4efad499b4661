//! The checker: a pure function from the read-back (and the producer's history) to a
//! [`Verdict`]. It never touches the network, Docker, tokio or the clock.
//!
//! The read-back is fed one message at a time into a [`Tally`], which keeps the numbers seen as
//! a set of ranges: memory grows with the number of gaps and duplicated stretches, not with N.
//! In-order input takes a fast path that only extends the current run; numbers that arrive
//! scattered (shuffled, or strided as partitions read one after the other) are kept in bitmaps
//! of 64 Ki numbers that turn back into ranges as they fill.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use rangemap::{RangeInclusiveMap, RangeInclusiveSet};
use serde::{Deserialize, Serialize};

use crate::history::{Event, EventBody, Outcome, TxnId};

/// Where a message was read: partition (-1 for a non-partitioned topic), ledger, entry, and the
/// index inside a batch (-1 when not batched).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MsgId {
    pub partition: i32,
    pub ledger: u64,
    pub entry: u64,
    pub batch: i32,
}

impl fmt::Display for MsgId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.ledger, self.entry, self.partition)?;
        if self.batch >= 0 {
            write!(f, ":{}", self.batch)?;
        }
        Ok(())
    }
}

/// Parse a payload: the number in decimal ASCII at its start, optionally followed by a
/// non-digit (padding). `None` when it does not start with a number.
#[inline]
pub fn parse_number(payload: &[u8]) -> Option<u64> {
    // At most 19 digits (20 or more is refused), and 19 digits cannot overflow a u64: no
    // checked arithmetic is needed, only a look at the 20th byte.
    let head = &payload[..payload.len().min(20)];
    let mut v: u64 = 0;
    let mut digits = 0;
    for &b in head {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(u64::from(d));
        digits += 1;
    }
    if digits == 0 || digits > 19 {
        return None;
    }
    // Leading zeros would make two payloads mean one number: refuse them.
    if digits > 1 && payload[0] == b'0' {
        return None;
    }
    Some(v)
}

/// Cap on the anomalies listed one by one in a verdict (all are counted).
pub const LIST_CAP: usize = 1000;

/// The streaming range check.
///
/// The numbers seen so far are
/// - the current run `run_start..=run_end`, which the in-order fast path extends with one
///   compare per number; when a number does not extend it, it is merged into the store below
///   (the parts already there are duplicates);
/// - the store, where each number is in exactly one place:
///   - `seen`, a set of ranges, for everything that arrived in long enough stretches;
///   - bitmaps of `CHUNK` numbers (`hot`, and `cold` for the others), for chunks whose
///     numbers arrive scattered (shuffled, or strided as when partitions are read one after
///     the other). A chunk whose bitmap fills up becomes one range of `seen` again.
///
/// So memory stays independent of N for in-order and for locally shuffled data, and is at most
/// one bit per number of the chunks that are partly seen (plus the ranges of `seen`).
///
/// Extra copies are counted in `extra`; consecutive duplicated numbers are batched there first
/// (`Extra::pending`) so a resent stretch costs one map update, not one per number.
#[derive(Debug)]
pub struct Tally {
    expected: u64,
    seen: RangeInclusiveSet<u64>,
    /// The run [run_start, run_end] being extended by the fast path, not yet in `seen`; empty
    /// when run_start > run_end (then (1, 0), so that 1 starts it). run_end is never u64::MAX,
    /// so run_end + 1 cannot wrap.
    run_start: u64,
    run_end: u64,
    /// The chunks whose bitmaps are being filled (at most `HOT`, the most recent last).
    hot: Vec<Bitmap>,
    /// Other chunks kept as bitmaps (partly seen, too scattered for ranges).
    cold: BTreeMap<u64, Bitmap>,
    /// A zeroed bitmap buffer kept for reuse.
    spare: Option<Box<[u64; WORDS]>>,
    /// The chunk of the last short run that went to `seen` (see `wants_bitmap`).
    last_short: u64,
    extra: Extra,
    received: u64,
    unexpected: Vec<Unexpected>,
    unexpected_total: u64,
    /// How many anomalies of each kind `finish` lists one by one (all are counted).
    cap: usize,
}

/// The checker caught itself: its counts do not add up. No verdict can be trusted then.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckerError {
    #[error(
        "the checker's counts do not add up: {received} message(s) read, but {distinct} distinct number(s) + {duplicate_copies} extra cop(ies) + {unexpected} unexpected message(s) = {sum}; no verdict is given (a bug in pulsar-chaos's checker, not a finding about Pulsar)"
    )]
    Conservation {
        received: u64,
        distinct: u64,
        duplicate_copies: u64,
        unexpected: u64,
        sum: u128,
    },
}

/// A message whose payload is not a number of [0, N).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unexpected {
    /// The number, when the payload starts with one (then it is >= N).
    pub value: Option<u64>,
    /// The first bytes of the payload, lossily as text.
    pub payload_prefix: String,
    pub message_id: MsgId,
}

/// Numbers per bitmap chunk: 2^16, so a bitmap is 8 KiB.
const CHUNK_BITS: u32 = 16;
const CHUNK: u64 = 1 << CHUNK_BITS;
const WORDS: usize = (CHUNK / 64) as usize;
/// A run shorter than this inside one chunk is "scattered": a candidate for a bitmap.
const SHORT_RUN: u64 = 256;
/// A chunk held in `seen` in this many pieces gets a bitmap at the next short run into it; a
/// bitmap leaving the hot slots with fewer numbers goes back to `seen` as ranges.
const FRAGMENTS: usize = 8;
/// Bitmaps looked up without a map (two: a shuffled window may straddle two chunks).
const HOT: usize = 2;

/// The numbers seen of one chunk, as bits.
struct Bitmap {
    chunk: u64,
    count: u32,
    words: Box<[u64; WORDS]>,
}

impl fmt::Debug for Bitmap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Bitmap {{ chunk: {}, count: {} }}",
            self.chunk, self.count
        )
    }
}

impl Bitmap {
    /// Mark [a, b] (inside this chunk) seen; the numbers already seen are duplicates.
    /// Returns true when the chunk is now complete.
    #[inline(always)]
    fn mark(&mut self, a: u64, b: u64, extra: &mut Extra) -> bool {
        if a != b {
            return self.mark_range(a, b, extra);
        }
        let o = (a & (CHUNK - 1)) as usize;
        let (w, m) = (&mut self.words[o >> 6], 1u64 << (o & 63));
        if *w & m != 0 {
            extra.mark(a, a);
            return false;
        }
        *w |= m;
        self.count += 1;
        self.count == CHUNK as u32
    }

    #[inline(never)]
    fn mark_range(&mut self, a: u64, b: u64, extra: &mut Extra) -> bool {
        let base = self.chunk << CHUNK_BITS;
        let (oa, ob) = ((a - base) as usize, (b - base) as usize);
        for wi in oa >> 6..=ob >> 6 {
            let lo = if wi == oa >> 6 { oa & 63 } else { 0 };
            let hi = if wi == ob >> 6 { ob & 63 } else { 63 };
            let mask = (u64::MAX >> (63 - hi)) & (u64::MAX << lo);
            let w = &mut self.words[wi];
            let mut dup = *w & mask;
            self.count += (mask & !*w).count_ones();
            *w |= mask;
            let word_base = base + (wi as u64) * 64;
            while dup != 0 {
                let t = dup.trailing_zeros();
                let len = (!(dup >> t)).trailing_zeros();
                extra.mark(word_base + u64::from(t), word_base + u64::from(t + len - 1));
                dup &= if t + len >= 64 {
                    0
                } else {
                    u64::MAX << (t + len)
                };
            }
        }
        self.count == CHUNK as u32
    }

    /// The runs of set bits, in order, as inclusive ranges.
    fn runs(&self) -> BitRuns<'_> {
        BitRuns {
            words: &self.words[..],
            base: self.chunk << CHUNK_BITS,
            pos: 0,
        }
    }
}

/// Iterator over the runs of set bits of a bitmap.
struct BitRuns<'a> {
    words: &'a [u64],
    base: u64,
    /// The next bit to look at.
    pos: usize,
}

impl BitRuns<'_> {
    /// The first bit at or after `from` whose value is `one`, or the bitmap's length.
    fn seek(&self, from: usize, one: bool) -> usize {
        let total = self.words.len() * 64;
        let mut wi = from >> 6;
        if wi >= self.words.len() {
            return total;
        }
        let flip = if one { 0 } else { u64::MAX };
        let mut w = (self.words[wi] ^ flip) & (u64::MAX << (from & 63));
        loop {
            if w != 0 {
                return wi * 64 + w.trailing_zeros() as usize;
            }
            wi += 1;
            if wi == self.words.len() {
                return total;
            }
            w = self.words[wi] ^ flip;
        }
    }
}

impl Iterator for BitRuns<'_> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        let start = self.seek(self.pos, true);
        if start >= self.words.len() * 64 {
            self.pos = start;
            return None;
        }
        let end = self.seek(start, false);
        self.pos = end;
        Some((self.base + start as u64, self.base + end as u64 - 1))
    }
}

/// Extra copies: value range -> number of copies beyond the first, with the stretch of
/// consecutive single extra copies not yet added.
#[derive(Debug, Default)]
struct Extra {
    map: RangeInclusiveMap<u64, u32>,
    pending: Option<(u64, u64)>,
}

impl Extra {
    /// One more copy of every value in [a, b].
    #[inline]
    fn mark(&mut self, a: u64, b: u64) {
        if let Some((_, pb)) = &mut self.pending {
            if *pb != u64::MAX && a == *pb + 1 {
                *pb = b;
                return;
            }
        }
        if let Some((pa, pb)) = self.pending.replace((a, b)) {
            self.add(pa, pb);
        }
    }

    fn flush(&mut self) {
        if let Some((a, b)) = self.pending.take() {
            self.add(a, b);
        }
    }

    /// One more copy of every value in [a, b], into the map.
    #[cold]
    fn add(&mut self, a: u64, b: u64) {
        let existing: Vec<(u64, u64, u32)> = self
            .map
            .overlapping(&(a..=b))
            .map(|(r, c)| ((*r.start()).max(a), (*r.end()).min(b), *c))
            .collect();
        let mut cursor = a;
        for (s, e, c) in existing {
            if s > cursor {
                self.map.insert(cursor..=s - 1, 1);
            }
            self.map.insert(s..=e, c + 1);
            cursor = e.saturating_add(1);
            if e == u64::MAX {
                return;
            }
        }
        if cursor <= b {
            self.map.insert(cursor..=b, 1);
        }
    }
}

impl Tally {
    pub fn new(expected: u64) -> Tally {
        Tally {
            expected,
            seen: RangeInclusiveSet::new(),
            run_start: 1,
            run_end: 0,
            hot: Vec::with_capacity(HOT),
            cold: BTreeMap::new(),
            spare: None,
            last_short: u64::MAX,
            extra: Extra::default(),
            received: 0,
            unexpected: Vec::new(),
            unexpected_total: 0,
            cap: LIST_CAP,
        }
    }

    /// A tally whose findings list every anomaly (no `LIST_CAP`): what the run directory's
    /// stored read-back keeps. `Findings::capped` gives what `new` would have given.
    pub fn uncapped(expected: u64) -> Tally {
        Tally {
            cap: usize::MAX,
            ..Tally::new(expected)
        }
    }

    /// Count one message read back.
    #[inline]
    pub fn observe(&mut self, payload: &[u8], id: MsgId) {
        match parse_number(payload) {
            Some(v) if v < self.expected => self.observe_value(v),
            value => self.observe_unexpected(payload, id, value),
        }
    }

    #[cold]
    fn observe_unexpected(&mut self, payload: &[u8], id: MsgId, value: Option<u64>) {
        self.received += 1;
        self.unexpected_total += 1;
        if self.unexpected.len() < self.cap {
            let n = payload.len().min(32);
            self.unexpected.push(Unexpected {
                value,
                payload_prefix: String::from_utf8_lossy(&payload[..n]).into_owned(),
                message_id: id,
            });
        }
    }

    /// Count one unexpected message as a stored read-back recorded it.
    pub fn observe_unexpected_record(&mut self, u: Unexpected) {
        self.received += 1;
        self.unexpected_total += 1;
        if self.unexpected.len() < self.cap {
            self.unexpected.push(u);
        }
    }

    /// Count one number of [0, N).
    #[inline]
    pub fn observe_value(&mut self, v: u64) {
        self.received += 1;
        if v == self.run_end + 1 {
            self.run_end = v;
            return;
        }
        self.observe_off_run(v);
    }

    /// `v` does not extend the current run. Kept out of line so that the in-order fast path
    /// above stays small enough to be inlined into the caller's loop.
    #[inline(never)]
    fn observe_off_run(&mut self, v: u64) {
        let (s, e) = (self.run_start, self.run_end);
        if s <= e {
            if v >= s && v <= e {
                // A copy of a number in the current run.
                self.extra.mark(v, v);
                return;
            }
            self.flush_run(s, e);
        }
        if v == u64::MAX {
            // Not a run end (see run_end).
            self.flush_run_slow(v, v);
            (self.run_start, self.run_end) = (1, 0);
        } else {
            (self.run_start, self.run_end) = (v, v);
        }
    }

    /// Move the run [s, e] into `seen` or the bitmaps.
    #[inline(always)]
    fn flush_run(&mut self, s: u64, e: u64) {
        let c = s >> CHUNK_BITS;
        if e >> CHUNK_BITS == c {
            for i in 0..self.hot.len() {
                if self.hot[i].chunk == c {
                    if self.hot[i].mark(s, e, &mut self.extra) {
                        self.complete_hot(i);
                    }
                    return;
                }
            }
        }
        self.flush_run_slow(s, e);
    }

    #[inline(never)]
    fn flush_run_slow(&mut self, s: u64, e: u64) {
        let (cs, ce) = (s >> CHUNK_BITS, e >> CHUNK_BITS);
        if cs == ce {
            if let Some(i) = self.hot.iter().position(|h| h.chunk == cs) {
                if self.hot[i].mark(s, e, &mut self.extra) {
                    self.complete_hot(i);
                }
                return;
            }
            let has_bitmap = self.cold.contains_key(&cs);
            if has_bitmap || (e - s < SHORT_RUN && self.wants_bitmap(cs)) {
                let i = self.make_hot(cs);
                if self.hot[i].mark(s, e, &mut self.extra) {
                    self.complete_hot(i);
                }
                return;
            }
            if e - s < SHORT_RUN {
                self.last_short = cs;
            }
            self.mark_ranges(s, e);
            return;
        }
        // Across chunks: the chunks with a bitmap take their part, `seen` the rest.
        let mut chunks: Vec<u64> = self.cold.range(cs..=ce).map(|(k, _)| *k).collect();
        chunks.extend(
            self.hot
                .iter()
                .map(|h| h.chunk)
                .filter(|c| (cs..=ce).contains(c)),
        );
        chunks.sort_unstable();
        let mut cursor = s;
        for c in chunks {
            let lo = c << CHUNK_BITS;
            let hi = lo | (CHUNK - 1);
            if lo > cursor {
                self.mark_ranges(cursor, lo - 1);
            }
            let (a, z) = (cursor.max(lo), e.min(hi));
            if let Some(i) = self.hot.iter().position(|h| h.chunk == c) {
                if self.hot[i].mark(a, z, &mut self.extra) {
                    self.complete_hot(i);
                }
            } else {
                let b = self.cold.get_mut(&c).expect("listed");
                if b.mark(a, z, &mut self.extra) {
                    let b = self.cold.remove(&c).expect("listed");
                    self.retire(b);
                }
            }
            if hi >= e {
                return;
            }
            cursor = hi + 1;
        }
        self.mark_ranges(cursor, e);
    }

    /// Whether a short run into chunk `c` (which has no bitmap) should give it one: the
    /// previous short run landed in it too (unless `seen` holds all of it: that is a copy of
    /// old data), or `seen` already holds it in many pieces (scattered arrivals).
    fn wants_bitmap(&self, c: u64) -> bool {
        let lo = c << CHUNK_BITS;
        let hi = lo | (CHUNK - 1);
        if self.last_short == c {
            return self.seen.get(&lo).is_none_or(|r| *r.end() < hi);
        }
        self.seen
            .overlapping(&(lo..=hi))
            .nth(FRAGMENTS - 1)
            .is_some()
    }

    /// [s, e] (in no chunk with a bitmap) into `seen`; the parts already there are duplicates.
    fn mark_ranges(&mut self, s: u64, e: u64) {
        for r in self.seen.overlapping(&(s..=e)) {
            self.extra.mark((*r.start()).max(s), (*r.end()).min(e));
        }
        self.seen.insert(s..=e);
    }

    /// Hot chunk `i` is complete: it becomes a range of `seen`.
    #[cold]
    fn complete_hot(&mut self, i: usize) {
        let b = self.hot.remove(i);
        self.retire(b);
    }

    /// Give chunk `c` (not hot) a hot slot, with its bitmap (from `cold`, or built from
    /// `seen`); the oldest hot bitmap makes room. Returns the slot.
    fn make_hot(&mut self, c: u64) -> usize {
        let b = match self.cold.remove(&c) {
            Some(b) => b,
            None => self.load(c),
        };
        if self.hot.len() == HOT {
            let old = self.hot.remove(0);
            self.retire(old);
        }
        self.hot.push(b);
        self.hot.len() - 1
    }

    /// A bitmap for chunk `c`, taking the chunk's numbers out of `seen`.
    fn load(&mut self, c: u64) -> Bitmap {
        let words = self.spare.take().unwrap_or_else(|| Box::new([0u64; WORDS]));
        let mut b = Bitmap {
            chunk: c,
            count: 0,
            words,
        };
        let lo = c << CHUNK_BITS;
        let hi = lo | (CHUNK - 1);
        let present: Vec<(u64, u64)> = self
            .seen
            .overlapping(&(lo..=hi))
            .map(|r| ((*r.start()).max(lo), (*r.end()).min(hi)))
            .collect();
        if !present.is_empty() {
            let mut none = Extra::default();
            for (a, z) in present {
                b.mark(a, z, &mut none);
            }
            debug_assert!(none.pending.is_none());
            self.seen.remove(lo..=hi);
        }
        b
    }

    /// A bitmap leaves the hot slots (or fills up): complete or sparse ones go back to `seen`
    /// as ranges, others to `cold`.
    fn retire(&mut self, b: Bitmap) {
        if b.count as usize >= FRAGMENTS && b.count < CHUNK as u32 {
            self.cold.insert(b.chunk, b);
            return;
        }
        if b.count == CHUNK as u32 {
            let lo = b.chunk << CHUNK_BITS;
            self.seen.insert(lo..=lo | (CHUNK - 1));
        } else {
            for (a, z) in b.runs() {
                self.seen.insert(a..=z);
            }
        }
        let mut words = b.words;
        words.fill(0);
        self.spare = Some(words);
    }

    /// Messages counted so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// The anomalies found. Consumes the tally. Fails when the counts do not add up
    /// (`received == distinct + duplicate copies + unexpected`), in release builds too.
    pub fn finish(mut self) -> Result<Findings, CheckerError> {
        if self.run_start <= self.run_end {
            self.flush_run(self.run_start, self.run_end);
        }
        self.extra.flush();

        // The numbers seen, in order, coalesced: `seen` merged with the bitmaps' runs.
        let mut bitmaps: Vec<&Bitmap> = self.cold.values().chain(self.hot.iter()).collect();
        bitmaps.sort_unstable_by_key(|b| b.chunk);
        let mut from_bits = bitmaps.into_iter().flat_map(|b| b.runs()).peekable();
        let mut from_ranges = self.seen.iter().map(|r| (*r.start(), *r.end())).peekable();
        let mut next_seen = || match (from_ranges.peek(), from_bits.peek()) {
            (Some(r), Some(b)) if b.0 < r.0 => from_bits.next(),
            (Some(_), _) => from_ranges.next(),
            (None, _) => from_bits.next(),
        };

        let mut missing = Vec::new();
        let mut missing_total = 0;
        let mut distinct = 0;
        // The first number not yet known to be seen or missing.
        let mut cursor = 0u64;
        let cap = self.cap;
        let mut gap = |a: u64, b: u64, missing_total: &mut u64| {
            *missing_total += b - a + 1;
            if missing.len() < cap {
                missing.push(Span {
                    start: a,
                    end: b + 1,
                });
            }
        };
        let mut current: Option<(u64, u64)> = None;
        let mut done = false;
        while !done {
            // Coalesce touching pieces into one range before using it.
            let piece = next_seen();
            let range = match (current, piece) {
                (Some((a, b)), Some((c, d))) if b != u64::MAX && c == b + 1 => {
                    current = Some((a, d));
                    continue;
                }
                (cur, Some(p)) => {
                    current = Some(p);
                    cur
                }
                (cur, None) => {
                    done = true;
                    current = None;
                    cur
                }
            };
            let Some((a, b)) = range else { continue };
            distinct += b - a + 1;
            if a > cursor && cursor < self.expected {
                gap(cursor, (a - 1).min(self.expected - 1), &mut missing_total);
            }
            cursor = cursor.max(b.saturating_add(1));
        }
        if cursor < self.expected {
            gap(cursor, self.expected - 1, &mut missing_total);
        }

        let mut duplicates = Vec::new();
        let mut duplicate_values = 0;
        let mut duplicate_copies = 0;
        for (r, c) in self.extra.map.iter() {
            let n = r.end() - r.start() + 1;
            duplicate_values += n;
            duplicate_copies += n * u64::from(*c);
            if duplicates.len() < self.cap {
                duplicates.push(DupSpan {
                    start: *r.start(),
                    end: r.end() + 1,
                    copies: c + 1,
                });
            }
        }
        let findings = Findings {
            expected: self.expected,
            received: self.received,
            distinct,
            missing,
            missing_total,
            duplicates,
            duplicate_values,
            duplicate_copies,
            unexpected: self.unexpected,
            unexpected_total: self.unexpected_total,
        };
        findings.conserved()?;
        Ok(findings)
    }
}

/// A half-open range of numbers `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub start: u64,
    pub end: u64,
}

impl Span {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.len() == 1 {
            write!(f, "{}", self.start)
        } else {
            write!(f, "[{}, {})", self.start, self.end)
        }
    }
}

/// Numbers `[start, end)` that arrived `copies` times each (copies >= 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DupSpan {
    pub start: u64,
    pub end: u64,
    pub copies: u32,
}

/// What the read-back showed, before attribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Findings {
    pub expected: u64,
    pub received: u64,
    pub distinct: u64,
    /// Up to LIST_CAP missing ranges, in order.
    pub missing: Vec<Span>,
    pub missing_total: u64,
    /// Up to LIST_CAP duplicated ranges, in order.
    pub duplicates: Vec<DupSpan>,
    /// How many distinct numbers arrived more than once.
    pub duplicate_values: u64,
    /// How many extra copies arrived in all.
    pub duplicate_copies: u64,
    pub unexpected: Vec<Unexpected>,
    pub unexpected_total: u64,
}

impl Findings {
    /// Every message read is a distinct number, an extra copy or unexpected: checked wherever
    /// findings are made, in release builds too.
    pub fn conserved(&self) -> Result<(), CheckerError> {
        let sum = u128::from(self.distinct)
            + u128::from(self.duplicate_copies)
            + u128::from(self.unexpected_total);
        if u128::from(self.received) == sum {
            return Ok(());
        }
        Err(CheckerError::Conservation {
            received: self.received,
            distinct: self.distinct,
            duplicate_copies: self.duplicate_copies,
            unexpected: self.unexpected_total,
            sum,
        })
    }

    /// The findings as a `Tally::new` lists them: at most `LIST_CAP` of each kind, the first
    /// ones in order (the totals stay).
    pub fn capped(mut self) -> Findings {
        self.missing.truncate(LIST_CAP);
        self.duplicates.truncate(LIST_CAP);
        self.unexpected.truncate(LIST_CAP);
        self
    }

    pub fn is_clean(&self) -> bool {
        self.missing_total == 0 && self.duplicate_values == 0 && self.unexpected_total == 0
    }

    /// The duplicated values whose copies' message ids a second read collects (the first
    /// `limit` values).
    pub fn duplicate_values_to_locate(&self, limit: usize) -> BTreeSet<u64> {
        let mut out = BTreeSet::new();
        for d in &self.duplicates {
            for v in d.start..d.end {
                if out.len() >= limit {
                    return out;
                }
                out.insert(v);
            }
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Violation,
    Inconclusive,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Pass => "pass",
            Status::Violation => "violation",
            Status::Inconclusive => "inconclusive",
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

/// Whose doing an anomaly is, as the evidence shows it. See README, "How a verdict is graded".
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
}

/// A duplicated stretch with the message ids of each copy (for the first values).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuplicateEntry {
    pub start: u64,
    pub end: u64,
    pub copies: u32,
    /// value -> message ids of every copy (located by a second read; may be empty).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub message_ids: BTreeMap<u64, Vec<MsgId>>,
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
    /// Broker log lines about the transactions of the attempts that carried anomalous
    /// numbers (gathered by the runner after a verdict that was not a pass).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub broker_log: Vec<crate::brokerlog::TxnLog>,
    /// Numbers the scenario's sabotage never sent, and sent twice.
    pub sabotage_skip: BTreeSet<u64>,
    pub sabotage_duplicate: BTreeSet<u64>,
}

fn sorted_by_value<S: serde::Serializer>(
    m: &HashMap<u64, Vec<MsgId>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    m.iter().collect::<BTreeMap<_, _>>().serialize(s)
}

/// What the history says, gathered in one pass. Only attempts that carried an anomalous
/// number are kept in full.
#[derive(Debug, Default)]
struct HistoryView {
    attempts: BTreeMap<u64, AttemptRecord>,
    faults: Vec<FaultRecord>,
    producer: ProducerSummary,
    saw_producer: bool,
    /// For each fault (same index as `faults`): the last commit seen before it started.
    commit_before: Vec<Option<u64>>,
    /// Faults healed whose first commit after the heal is not seen yet.
    awaiting_recovery: Vec<usize>,
    last_commit: Option<u64>,
    /// Failures since the last commit or heal: shape -> (count, first detail).
    failing: BTreeMap<String, (u64, String)>,
    failing_n: u64,
    stall: Option<StallFinding>,
    /// History lines that could not be read, and the first error.
    unreadable: u64,
    first_error: Option<String>,
}

impl HistoryView {
    fn progress(&mut self) {
        self.failing.clear();
        self.failing_n = 0;
    }

    fn failed(&mut self, detail: &str) {
        self.failing_n += 1;
        let shape = crate::stall::shape(detail);
        if let Some(e) = self.failing.get_mut(&shape) {
            e.0 += 1;
        } else if self.failing.len() < 64 {
            self.failing.insert(shape, (1, detail.to_string()));
        }
    }

    fn commit_at(&mut self, t: u64) {
        self.progress();
        self.last_commit = Some(self.last_commit.map_or(t, |c| c.max(t)));
        let faults = &mut self.faults;
        let before = &self.commit_before;
        self.awaiting_recovery.retain(|&i| {
            let f = &mut faults[i];
            match f.healed_ms {
                Some(h) if t >= h => {
                    f.recovery_ms = Some(t - h);
                    f.commit_gap_ms = before[i].map(|b| t.saturating_sub(b));
                    false
                }
                _ => true,
            }
        });
    }
}

fn intersects(numbers: &[(u64, u64)], anomalies: &RangeInclusiveSet<u64>) -> bool {
    numbers
        .iter()
        .any(|(s, e)| *e > *s && anomalies.overlaps(&(*s..=*e - 1)))
}

fn scan_history<I, E>(events: I, anomalies: &RangeInclusiveSet<u64>) -> HistoryView
where
    I: IntoIterator<Item = Result<Event, E>>,
    E: fmt::Display,
{
    let mut v = HistoryView::default();
    let mut open_faults: HashMap<String, usize> = HashMap::new();
    let mut dropped: HashMap<TxnId, Vec<String>> = HashMap::new();
    for ev in events {
        let ev = match ev {
            Ok(ev) => ev,
            Err(e) => {
                v.unreadable += 1;
                if v.first_error.is_none() {
                    v.first_error = Some(e.to_string());
                }
                continue;
            }
        };
        let t = ev.t_ms;
        match ev.body {
            EventBody::TxnOpened {
                attempt,
                txn,
                numbers,
                ..
            } => {
                v.producer.attempts += 1;
                if intersects(&numbers, anomalies) {
                    v.attempts.insert(
                        attempt,
                        AttemptRecord {
                            attempt,
                            txn,
                            numbers,
                            opened_ms: t,
                            outcome_ms: None,
                            ended_ms: None,
                            outcome: None,
                            detail: String::new(),
                            resolved: None,
                            commit_tries: 0,
                            resent: false,
                            resend_reason: None,
                            withheld: false,
                            withheld_reason: None,
                            replies_dropped: Vec::new(),
                            faults: Vec::new(),
                        },
                    );
                }
            }
            EventBody::CommitRequested {
                attempt, try_no, ..
            } => {
                if let Some(a) = v.attempts.get_mut(&attempt) {
                    a.commit_tries = a.commit_tries.max(try_no);
                }
            }
            EventBody::TxnOutcome {
                attempt,
                outcome,
                detail,
                ..
            } => {
                match outcome {
                    Outcome::Committed => {
                        v.producer.committed += 1;
                        v.commit_at(t);
                    }
                    Outcome::Aborted => {
                        v.producer.aborted += 1;
                        v.failed(&detail);
                    }
                    Outcome::Ambiguous => {
                        v.producer.ambiguous += 1;
                        v.failed(&detail);
                    }
                }
                if let Some(a) = v.attempts.get_mut(&attempt) {
                    a.outcome = Some(outcome);
                    a.detail = detail;
                    a.outcome_ms.get_or_insert(t);
                    a.ended_ms = Some(t);
                }
            }
            EventBody::TxnResolved {
                attempt,
                resolved,
                how,
                ..
            } => {
                match resolved {
                    Outcome::Committed => {
                        v.producer.resolved_committed += 1;
                        v.commit_at(t);
                    }
                    _ => v.producer.resolved_aborted += 1,
                }
                if let Some(a) = v.attempts.get_mut(&attempt) {
                    a.resolved = Some(resolved);
                    a.ended_ms = Some(t);
                    if !a.detail.is_empty() {
                        a.detail.push_str("; ");
                    }
                    a.detail.push_str(&format!("resolved {resolved} by {how}"));
                }
            }
            EventBody::ResendScheduled {
                attempt, reason, ..
            } => {
                if let Some(a) = v.attempts.get_mut(&attempt) {
                    a.resent = true;
                    a.resend_reason = Some(reason);
                }
            }
            EventBody::ResendWithheld {
                attempt, reason, ..
            } => {
                v.producer.withheld += 1;
                if let Some(a) = v.attempts.get_mut(&attempt) {
                    a.withheld = true;
                    a.withheld_reason = Some(reason);
                }
            }
            EventBody::FaultStarted {
                fault,
                kind,
                target,
                action,
                ..
            } => {
                open_faults.insert(fault.clone(), v.faults.len());
                v.commit_before.push(v.last_commit);
                v.faults.push(FaultRecord {
                    fault,
                    kind,
                    target,
                    started_ms: t,
                    healed_ms: None,
                    action,
                    recovery_ms: None,
                    commit_gap_ms: None,
                    heal_ok: false,
                    applied: true,
                });
            }
            EventBody::FaultApplied { fault, action, .. } => {
                if let Some(i) = open_faults.get(&fault) {
                    v.faults[*i].action = action;
                }
            }
            EventBody::FaultFailed { fault, .. } => {
                if let Some(i) = open_faults.remove(&fault) {
                    v.faults[i].applied = false;
                    v.faults[i].healed_ms = Some(t);
                }
            }
            EventBody::FaultHealed { fault, ok, .. } => {
                v.progress();
                if let Some(i) = open_faults.remove(&fault) {
                    v.faults[i].healed_ms = Some(t);
                    v.faults[i].heal_ok = ok;
                    v.awaiting_recovery.push(i);
                }
            }
            EventBody::Stalled { since_ms, .. } => {
                let mut failures: Vec<(u64, String)> = v.failing.values().cloned().collect();
                failures.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
                failures.truncate(3);
                v.stall = Some(StallFinding {
                    since_ms,
                    detected_ms: t,
                    failed_attempts: v.failing_n,
                    failures,
                    broker_log: Vec::new(),
                    likely_cause: None,
                });
            }
            EventBody::ReplyDropped {
                fault,
                command,
                txn: Some(txn),
                ..
            } => {
                let d = dropped.entry(txn).or_default();
                if d.len() < 8 {
                    d.push(format!("{command} dropped by {fault} at t={}", secs(t)));
                }
            }
            EventBody::ProducerFinished { complete, .. } => {
                v.saw_producer = true;
                v.producer.finished = true;
                v.producer.complete = complete;
            }
            _ => {}
        }
    }
    // Faults active while each attempt was open or committing: up to the first outcome the
    // producer learned (a later resolution is not part of the attempt's own window).
    for a in v.attempts.values_mut() {
        if let Some(d) = dropped.get(&a.txn) {
            a.replies_dropped = d.clone();
        }
        let end = a.outcome_ms.or(a.ended_ms).unwrap_or(u64::MAX);
        for f in &v.faults {
            let f_end = f.healed_ms.unwrap_or(u64::MAX);
            if f.started_ms <= end && f_end >= a.opened_ms {
                a.faults.push(f.fault.clone());
            }
        }
    }
    v
}

/// The coordinator id of the placeholder transactions of a run without transactions (a send
/// there is not atomic: a failed one may have been persisted, so a resend is ambiguous).
pub const NO_TXN: u64 = u64::MAX;

fn secs(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

/// One line of evidence per attempt: what Pulsar answered, and what the producer did then.
fn evidence_line(a: &AttemptRecord) -> String {
    let told = match a.outcome {
        Some(o) => format!("{o}"),
        None => "no outcome (the producer stopped first)".to_string(),
    };
    let mut line = format!(
        "#{} {} opened t={}, {} commit request(s): {told}",
        a.attempt,
        a.txn,
        secs(a.opened_ms),
        a.commit_tries
    );
    if let Some(t) = a.outcome_ms {
        line.push_str(&format!(" at t={}", secs(t)));
    }
    if !a.detail.is_empty() {
        line.push_str(&format!(" ({})", a.detail));
    }
    for d in &a.replies_dropped {
        line.push_str(&format!("; the harness's reply loss: {d}"));
    }
    if let Some(r) = &a.resend_reason {
        line.push_str(&format!("; resent: {r}"));
    }
    if let Some(r) = &a.withheld_reason {
        line.push_str(&format!("; resend withheld: {r}"));
    }
    if !a.faults.is_empty() {
        line.push_str(&format!("; faults active: {}", a.faults.join(", ")));
    }
    line
}

/// The broker log lines the context holds about these attempts' transactions.
fn broker_log_of(records: &[&AttemptRecord], ctx: &Context) -> Vec<crate::brokerlog::TxnLog> {
    if ctx.broker_log.is_empty() {
        return Vec::new();
    }
    let txns: BTreeSet<TxnId> = records.iter().map(|a| a.txn).collect();
    ctx.broker_log
        .iter()
        .filter(|l| txns.contains(&l.txn))
        .cloned()
        .collect()
}

/// Pulsar said so itself: confirmed committed (first answer or a later resolution).
fn confirmed_committed(a: &AttemptRecord) -> bool {
    a.outcome == Some(Outcome::Committed) || a.resolved == Some(Outcome::Committed)
}

/// Its numbers were sent again although nobody knew whether it had committed.
fn resent_after_unknown(a: &AttemptRecord) -> bool {
    a.resent
        && (a.txn.most == NO_TXN && a.outcome == Some(Outcome::Aborted)
            || a.outcome == Some(Outcome::Ambiguous) && a.resolved != Some(Outcome::Aborted)
            || a.outcome.is_none())
}

fn ids(v: &[&AttemptRecord]) -> String {
    v.iter()
        .map(|a| format!("#{} {}", a.attempt, a.txn))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Cause, explanation and evidence of numbers missing from a complete read. Pure.
fn attribute_missing(records: &[&AttemptRecord], span: Span, ctx: &Context) -> (Cause, String) {
    if (span.start..span.end).all(|n| ctx.sabotage_skip.contains(&n)) {
        return (
            Cause::Sabotage,
            "the scenario's sabotage never sent these numbers".into(),
        );
    }
    let committed: Vec<&AttemptRecord> = records
        .iter()
        .copied()
        .filter(|a| confirmed_committed(a))
        .collect();
    if !committed.is_empty() {
        let mut why = format!(
            "transaction {} was confirmed committed by the coordinator, yet its numbers are not readable: Pulsar lost committed data",
            ids(&committed)
        );
        // What the brokers' own lines say happened to it (quoted, never a cause by itself).
        for known in committed.iter().filter_map(|a| {
            let log = ctx.broker_log.iter().find(|l| l.txn == a.txn)?;
            crate::brokerlog::known_cause(log)
        }) {
            why.push_str("; ");
            why.push_str(&known);
        }
        return (Cause::Pulsar, why);
    }
    if let Some(a) = records.iter().find(|a| a.withheld) {
        return (
            Cause::Harness,
            format!(
                "the outcome of transaction #{} {} stayed unknown and the harness withheld a resend ({}); whether Pulsar applied it is not known",
                a.attempt,
                a.txn,
                a.withheld_reason.clone().unwrap_or_default()
            ),
        );
    }
    let unknown: Vec<&AttemptRecord> = records
        .iter()
        .copied()
        .filter(|a| a.outcome.is_none())
        .collect();
    if !unknown.is_empty() {
        return (
            Cause::Harness,
            format!(
                "transaction {} never learned an outcome (the producer stopped first)",
                ids(&unknown)
            ),
        );
    }
    if records.is_empty() {
        return (
            Cause::Harness,
            "no transaction in the history carried these numbers: the harness never sent them"
                .into(),
        );
    }
    (
        Cause::Harness,
        "every transaction carrying these numbers ended without a commit and the producer did not send them again to completion".into(),
    )
}

/// Cause and explanation of numbers that arrived more than once. Pure.
fn attribute_duplicate(records: &[&AttemptRecord], span: Span, ctx: &Context) -> (Cause, String) {
    if (span.start..span.end).all(|n| ctx.sabotage_duplicate.contains(&n)) {
        return (
            Cause::Sabotage,
            "the scenario's sabotage sent these numbers twice".into(),
        );
    }
    let unknown: Vec<&AttemptRecord> = records
        .iter()
        .copied()
        .filter(|a| resent_after_unknown(a))
        .collect();
    if !unknown.is_empty() {
        let others: Vec<&AttemptRecord> = records
            .iter()
            .copied()
            .filter(|a| !resent_after_unknown(a))
            .collect();
        return (
            Cause::Ambiguity,
            format!(
                "the outcome of transaction {} could not be learned, its numbers were sent again{}, and the first commit had applied: resending after an ambiguous commit is not exactly-once",
                ids(&unknown),
                if others.is_empty() { String::new() } else { format!(" in {}", ids(&others)) }
            ),
        );
    }
    let committed: Vec<&AttemptRecord> = records
        .iter()
        .copied()
        .filter(|a| confirmed_committed(a))
        .collect();
    let aborted: Vec<&AttemptRecord> = records
        .iter()
        .copied()
        .filter(|a| {
            !confirmed_committed(a) && matches!(a.outcome, Some(Outcome::Aborted))
                || a.resolved == Some(Outcome::Aborted)
        })
        .collect();
    if !aborted.is_empty() {
        return (
            Cause::Pulsar,
            format!(
                "transaction {} ended aborted on Pulsar's word (or was never asked to commit), yet its messages are readable",
                ids(&aborted)
            ),
        );
    }
    if committed.len() >= 2 {
        return (
            Cause::Pulsar,
            format!(
                "the numbers were committed by more than one transaction ({}) with no resend of the harness's behind them",
                ids(&committed)
            ),
        );
    }
    if records.len() <= 1 {
        return (
            Cause::Pulsar,
            format!(
                "one transaction ({}) carried these numbers, yet they arrived more than once: Pulsar delivered a message twice",
                ids(records)
            ),
        );
    }
    (
        Cause::Pulsar,
        format!("the numbers arrived more than once; no resend after an unknown outcome explains it ({})", ids(records)),
    )
}

/// Build the verdict from the findings, the history (if any) and the context. Pure.
pub fn verdict<I, E>(findings: Findings, history: Option<I>, ctx: &Context) -> Verdict
where
    I: IntoIterator<Item = Result<Event, E>>,
    E: fmt::Display,
{
    let mut anomalies = RangeInclusiveSet::new();
    for m in &findings.missing {
        anomalies.insert(m.start..=m.end - 1);
    }
    for d in &findings.duplicates {
        anomalies.insert(d.start..=d.end - 1);
    }
    let view = history.map(|h| scan_history(h, &anomalies));
    let records_for = |s: u64, e: u64| -> Vec<&AttemptRecord> {
        match &view {
            None => Vec::new(),
            Some(v) => v
                .attempts
                .values()
                .filter(|a| a.numbers.iter().any(|(a0, a1)| *a0 < e && s < *a1))
                .collect(),
        }
    };
    let missing: Vec<Attributed<Span>> = findings
        .missing
        .iter()
        .map(|m| {
            let recs = records_for(m.start, m.end);
            let evidence: Vec<String> = recs.iter().map(|a| evidence_line(a)).collect();
            let (cause, explanation) = if let Some(why) = &ctx.readback_incomplete {
                // Not read is not lost: say what held the read back, not what it would mean.
                (
                    Cause::Harness,
                    format!("not read: the read-back is incomplete ({why})"),
                )
            } else if view.is_none() {
                (
                    Cause::Unknown,
                    "no producer history given: the topic lacks these numbers, and nothing says why".to_string(),
                )
            } else {
                attribute_missing(&recs, *m, ctx)
            };
            Attributed {
                what: *m,
                attempts: recs.iter().map(|a| a.attempt).collect(),
                cause,
                explanation,
                evidence,
                broker_log: broker_log_of(&recs, ctx),
            }
        })
        .collect();
    let duplicates: Vec<Attributed<DuplicateEntry>> = findings
        .duplicates
        .iter()
        .map(|d| {
            let recs = records_for(d.start, d.end);
            let message_ids = (d.start..d.end)
                .filter_map(|v| ctx.duplicate_ids.get(&v).map(|ids| (v, ids.clone())))
                .collect();
            let span = Span {
                start: d.start,
                end: d.end,
            };
            let (cause, explanation) = if view.is_some() {
                attribute_duplicate(&recs, span, ctx)
            } else {
                (
                    Cause::Unknown,
                    "no producer history given: the topic holds these numbers more than once, and nothing says why".to_string(),
                )
            };
            Attributed {
                what: DuplicateEntry {
                    start: d.start,
                    end: d.end,
                    copies: d.copies,
                    message_ids,
                },
                attempts: recs.iter().map(|a| a.attempt).collect(),
                cause,
                explanation,
                evidence: recs.iter().map(|a| evidence_line(a)).collect(),
                broker_log: broker_log_of(&recs, ctx),
            }
        })
        .collect();

    let mut reasons = Vec::new();
    let mut notes = Vec::new();
    if let Some(v) = &view {
        if v.unreadable > 0 {
            notes.push(format!(
                "{} history line(s) could not be read (first: {}); attribution may be incomplete",
                v.unreadable,
                v.first_error.clone().unwrap_or_default()
            ));
        }
    }
    if let Some(r) = &ctx.readback_incomplete {
        reasons.push(format!("the read-back is incomplete: {r}"));
    }
    if let Some(v) = &view {
        if !v.producer.finished {
            reasons.push("the producer never finished (no producer_finished event)".to_string());
        } else if !v.producer.complete {
            reasons.push(
                "the producer stopped before every number was confirmed committed".to_string(),
            );
        }
    }
    let mut stall = view.as_ref().and_then(|v| v.stall.clone());
    if let Some(st) = &mut stall {
        st.broker_log = ctx.stall_log.clone();
        st.likely_cause = ctx.stall_cause.clone();
        let mut why = format!(
            "the run stalled: nothing committed for {:.0}s (from t={:.1}s) with no fault active, so the harness stopped the producer; {} attempt(s) failed meanwhile",
            (st.detected_ms.saturating_sub(st.since_ms)) as f64 / 1000.0,
            st.since_ms as f64 / 1000.0,
            st.failed_attempts
        );
        if let Some((n, d)) = st.failures.first() {
            why.push_str(&format!(", {n} with: {d}"));
        }
        reasons.push(why);
        for e in st.broker_log.iter().take(3) {
            notes.push(format!(
                "{} logged {} {}x about {} from {} to {}: {}",
                e.node, e.level, e.count, e.topic, e.first, e.last, e.message
            ));
        }
        if let Some(c) = &st.likely_cause {
            notes.push(format!("likely cause: {c}"));
        }
    }
    // Grading (README, "How a verdict is graded"): a violation needs an anomaly that Pulsar's
    // own answers contradict, an ambiguous commit resent, a sabotage, or, with no history to
    // ask, the range check alone. Anomalies of the harness's own making only make it
    // inconclusive, and say so.
    let harness_missing: u64 = missing
        .iter()
        .filter(|m| m.cause == Cause::Harness)
        .map(|m| m.what.len())
        .sum();
    if harness_missing > 0 && ctx.readback_incomplete.is_none() {
        reasons.push(format!(
            "{harness_missing} number(s) are missing for reasons of the harness's own, not Pulsar's (see each range's explanation)"
        ));
    }
    let violation = findings.unexpected_total > 0
        || missing.iter().any(|m| m.cause.is_violation())
        || duplicates.iter().any(|d| d.cause.is_violation())
        // Anomalies beyond what the lists hold are graded as the listed ones are.
        || (findings.duplicate_values > 0 && duplicates.is_empty())
        || (findings.missing_total > 0 && missing.is_empty() && reasons.is_empty());
    let status = if violation {
        Status::Violation
    } else if !reasons.is_empty() {
        Status::Inconclusive
    } else {
        Status::Pass
    };
    let mut summary = summarize(&findings, status, &reasons);
    let causes = cause_counts(&missing, &duplicates);
    if !causes.is_empty() && status != Status::Pass {
        summary.push_str(&format!(" Causes: {causes}."));
    }
    for n in &notes {
        summary.push_str(&format!(" Note: {n}."));
    }
    let (producer, attempts, faults) = match view {
        Some(v) => (
            Some(v.producer),
            v.attempts.into_values().collect(),
            v.faults,
        ),
        None => (None, Vec::new(), Vec::new()),
    };
    Verdict {
        status,
        summary,
        seed: ctx.seed,
        expected: findings.expected,
        received: findings.received,
        distinct: findings.distinct,
        missing_total: findings.missing_total,
        duplicate_values: findings.duplicate_values,
        duplicate_copies: findings.duplicate_copies,
        unexpected_total: findings.unexpected_total,
        missing,
        duplicates,
        unexpected: findings.unexpected,
        reasons,
        notes,
        producer,
        attempts,
        faults,
        stall,
    }
}

/// "2 range(s) pulsar, 1 ambiguity": how many listed anomalies have each cause.
fn cause_counts(missing: &[Attributed<Span>], duplicates: &[Attributed<DuplicateEntry>]) -> String {
    let mut n: BTreeMap<Cause, usize> = BTreeMap::new();
    for c in missing
        .iter()
        .map(|m| m.cause)
        .chain(duplicates.iter().map(|d| d.cause))
    {
        *n.entry(c).or_default() += 1;
    }
    n.iter()
        .map(|(c, k)| format!("{k} range(s) {c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn summarize(f: &Findings, status: Status, reasons: &[String]) -> String {
    let mut parts = Vec::new();
    match status {
        Status::Pass => {
            return format!(
                "PASS: all {} numbers of [0, {}) arrived exactly once ({} messages read).",
                f.expected, f.expected, f.received
            )
        }
        Status::Violation => parts.push("VIOLATION:".to_string()),
        Status::Inconclusive => parts.push("INCONCLUSIVE:".to_string()),
    }
    if f.missing_total > 0 {
        let first: Vec<String> = f.missing.iter().take(5).map(|s| s.to_string()).collect();
        parts.push(format!(
            "{} number(s) missing in {} range(s) (first: {}).",
            f.missing_total,
            f.missing.len(),
            first.join(", ")
        ));
    }
    if f.duplicate_values > 0 {
        let first: Vec<String> = f
            .duplicates
            .iter()
            .take(5)
            .map(|d| {
                let s = Span {
                    start: d.start,
                    end: d.end,
                };
                format!("{s} x{}", d.copies)
            })
            .collect();
        parts.push(format!(
            "{} number(s) duplicated, {} extra cop(ies) (first: {}).",
            f.duplicate_values,
            f.duplicate_copies,
            first.join(", ")
        ));
    }
    if f.unexpected_total > 0 {
        parts.push(format!(
            "{} unexpected message(s) (not a number of [0, {})).",
            f.unexpected_total, f.expected
        ));
    }
    for r in reasons {
        parts.push(format!("{r}."));
    }
    parts.push(format!(
        "{} of {} numbers arrived ({} messages read).",
        f.distinct, f.expected, f.received
    ));
    parts.join(" ")
}

#[cfg(test)]
mod tests;
