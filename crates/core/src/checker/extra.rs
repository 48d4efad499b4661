//! Extra copies: how many times beyond the first each number arrived, kept by value range.
//! Consecutive duplicated numbers are batched first, so a resent stretch costs one map update,
//! not one per number.

use rangemap::RangeInclusiveMap;

/// Extra copies: value range -> number of copies beyond the first, with the stretch of
/// consecutive single extra copies not yet added.
#[derive(Debug, Default)]
pub(super) struct Extra {
    pub(super) map: RangeInclusiveMap<u64, u32>,
    pub(super) pending: Option<(u64, u64)>,
}

impl Extra {
    /// One more copy of every value in [a, b].
    #[inline]
    pub(super) fn mark(&mut self, a: u64, b: u64) {
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

    pub(super) fn flush(&mut self) {
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
