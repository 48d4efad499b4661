//! The bitmaps of the tally: the numbers seen of one chunk of 64 Ki numbers, one bit each,
//! for chunks whose numbers arrive scattered; and the iterator that turns a bitmap back into
//! ranges.

use std::fmt;

use super::extra::Extra;

/// Numbers per bitmap chunk: 2^16, so a bitmap is 8 KiB.
pub(super) const CHUNK_BITS: u32 = 16;
pub(super) const CHUNK: u64 = 1 << CHUNK_BITS;
pub(super) const WORDS: usize = (CHUNK / 64) as usize;

/// The numbers seen of one chunk, as bits.
pub(super) struct Bitmap {
    pub(super) chunk: u64,
    pub(super) count: u32,
    pub(super) words: Box<[u64; WORDS]>,
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
    pub(super) fn mark(&mut self, a: u64, b: u64, extra: &mut Extra) -> bool {
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
    pub(super) fn runs(&self) -> BitRuns<'_> {
        BitRuns {
            words: &self.words[..],
            base: self.chunk << CHUNK_BITS,
            pos: 0,
        }
    }
}

/// Iterator over the runs of set bits of a bitmap.
pub(super) struct BitRuns<'a> {
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
