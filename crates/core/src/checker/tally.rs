//! The streaming range check: [`Tally`] takes the read-back one message at a time and keeps
//! the numbers seen as a set of ranges, with bitmaps for the chunks whose numbers arrive
//! scattered; [`Tally::finish`] turns it into [`Findings`].

use std::collections::BTreeMap;

use rangemap::RangeInclusiveSet;

use super::bitmap::{Bitmap, CHUNK, CHUNK_BITS, WORDS};
use super::extra::Extra;
use super::findings::{CheckerError, DupSpan, Findings, Span, Unexpected, LIST_CAP};
use super::message::{parse_number, MsgId};

/// A run shorter than this inside one chunk is "scattered": a candidate for a bitmap.
const SHORT_RUN: u64 = 256;
/// A chunk held in `seen` in this many pieces gets a bitmap at the next short run into it; a
/// bitmap leaving the hot slots with fewer numbers goes back to `seen` as ranges.
const FRAGMENTS: usize = 8;
/// Bitmaps looked up without a map (two: a shuffled window may straddle two chunks).
const HOT: usize = 2;

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

#[cfg(test)]
mod tests;
