//! Lowering one number toward a floor: halve the distance while candidates still fail; after a
//! candidate that passes, try half the step, until the step is too small to matter.

/// The state of lowering one value (a time, a hold, a count) toward `floor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Lower {
    floor: u64,
    /// Values tried are multiples of this (or the floor): whole seconds, whole transactions.
    grain: u64,
    /// How much the next candidate takes off (0: done).
    step: u64,
    /// The smallest step worth a candidate after one that failed.
    min_step: u64,
    /// After a candidate that passed, a step below this ends the search (an eighth of the
    /// first distance): at most three refinements per value.
    refine: u64,
}

impl Lower {
    /// `None` when `value` is at or below the floor already.
    pub(super) fn start(value: u64, floor: u64, min_step: u64, grain: u64) -> Option<Lower> {
        let gap = value.checked_sub(floor).filter(|g| *g > 0)?;
        Some(Lower {
            floor,
            grain: grain.max(1),
            step: first_step(gap, min_step),
            min_step,
            refine: gap / 8,
        })
    }

    /// The next value to try from `value` (rounded down to the grain, not below the floor),
    /// or `None` when done.
    pub(super) fn target(&self, value: u64) -> Option<u64> {
        let gap = value.saturating_sub(self.floor);
        let raw = value - self.step.min(gap);
        (self.step > 0 && gap > 0).then(|| (raw / self.grain * self.grain).max(self.floor))
    }

    /// The candidate at `value` still failed: go on from there, half the distance again.
    pub(super) fn accepted(&mut self, value: u64) {
        self.step = first_step(value.saturating_sub(self.floor), self.min_step);
    }

    /// The candidate passed: a smaller step, or done.
    pub(super) fn rejected(&mut self) {
        self.step /= 2;
        if self.step < self.min_step.max(self.refine).max(1) {
            self.step = 0;
        }
    }
}

/// Half the gap (rounded up), but at least `min_step` (or the whole gap when it is smaller).
fn first_step(gap: u64, min_step: u64) -> u64 {
    gap.div_ceil(2).max(min_step.min(gap))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values tried lowering `from` toward `floor`, with `fails` as the oracle.
    fn walk(from: u64, floor: u64, min_step: u64, fails: impl Fn(u64) -> bool) -> Vec<u64> {
        walk_in(from, floor, min_step, 1, fails)
    }

    fn walk_in(
        from: u64,
        floor: u64,
        min_step: u64,
        grain: u64,
        fails: impl Fn(u64) -> bool,
    ) -> Vec<u64> {
        let mut tried = Vec::new();
        let mut value = from;
        let Some(mut l) = Lower::start(from, floor, min_step, grain) else {
            return tried;
        };
        while let Some(t) = l.target(value) {
            assert!(t < value && t >= floor, "{t} from {value}");
            tried.push(t);
            if fails(t) {
                value = t;
                l.accepted(t);
            } else {
                l.rejected();
            }
            assert!(tried.len() < 100, "{tried:?}");
        }
        tried
    }

    #[test]
    fn halves_down_to_the_floor_while_it_fails() {
        assert_eq!(walk(8, 1, 1, |_| true), vec![4, 2, 1]);
        assert_eq!(walk(5000, 1000, 1000, |_| true), vec![3000, 2000, 1000]);
        assert_eq!(walk(1000, 1000, 1, |_| true), Vec::<u64>::new());
        assert_eq!(walk(500, 1000, 1, |_| true), Vec::<u64>::new());
    }

    #[test]
    fn refines_a_few_times_after_a_pass_then_stops() {
        // 45 s toward 2 s, failing only from 30 s on.
        let tried = walk(45_000, 2_000, 1_000, |t| t >= 30_000);
        assert_eq!(tried, vec![23_500, 34_250, 18_125, 26_188]);
        // Never fails: three tries at most, each closer to where it started.
        let tried = walk(45_000, 2_000, 1_000, |_| false);
        assert_eq!(tried, vec![23_500, 34_250, 39_625]);
    }

    #[test]
    fn values_tried_are_whole_grains_or_the_floor() {
        // A hold of 4 s toward 1 s, in whole seconds.
        assert_eq!(
            walk_in(4_000, 1_000, 1_000, 1_000, |_| true),
            vec![2_000, 1_000]
        );
        // A firing at 59.296 s toward one at 3.27 s.
        let tried = walk_in(59_296, 3_270, 1_000, 1_000, |t| t >= 10_000);
        assert_eq!(tried, vec![31_000, 17_000, 10_000, 6_000]);
        // Messages in whole transactions of 99.
        assert_eq!(
            walk_in(120_000, 1_000, 99, 99, |_| true)[..3],
            [60_489, 30_690, 15_840]
        );
    }

    #[test]
    fn a_small_gap_goes_straight_to_the_floor() {
        assert_eq!(walk(1_500, 1_000, 1_000, |_| true), vec![1_000]);
        assert_eq!(walk(1_500, 1_000, 1_000, |_| false), vec![1_000]);
    }
}
