//! Commit throughput and commit latency over time in fixed memory: at most [`BUCKETS`] time
//! buckets of equal width, each with counts and a latency histogram, plus one histogram for
//! the whole run. When an event falls past the last bucket, neighbours merge and the width
//! doubles, so the length of the run need not be known in advance. Latencies are binned
//! exactly below 4 ms and in quarter powers of two above, so a quantile read back is an
//! upper bound at most 25% above the true value.

/// The most time buckets the timeline is cut into, whatever the length of the run.
pub const BUCKETS: usize = 200;
/// The width of a bucket at the start; it doubles whenever the run outgrows the buckets.
const FIRST_BUCKET_MS: u64 = 50;
/// Bins of the commit latency histograms: exact below 4 ms, then 4 per power of two.
const LAT_BINS: usize = 160;

/// The latency histogram bin of `ms`.
fn lat_bin(ms: u64) -> usize {
    if ms < 4 {
        return ms as usize;
    }
    let e = 63 - ms.leading_zeros() as usize; // >= 2
    let sub = ((ms >> (e - 2)) & 3) as usize;
    (4 + (e - 2) * 4 + sub).min(LAT_BINS - 1)
}

/// The largest latency that falls in bin `i`.
fn lat_bin_upper(i: usize) -> u64 {
    if i < 4 {
        return i as u64;
    }
    let e = (i - 4) / 4 + 2;
    let sub = ((i - 4) % 4) as u64;
    ((5 + sub) << (e - 2)) - 1
}

/// The `q` quantile of a latency histogram of `n` values (an upper bound, at most `max`).
fn quantile(hist: &[u64], n: u64, q: f64, max: u64) -> Option<u64> {
    if n == 0 {
        return None;
    }
    let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
    let mut seen = 0;
    for (i, c) in hist.iter().enumerate() {
        seen += c;
        if seen >= rank {
            return Some(lat_bin_upper(i).min(max));
        }
    }
    Some(max)
}

/// What happened in one time bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Bucket {
    /// Messages of attempts confirmed committed.
    pub(super) committed: u64,
    /// Messages of ambiguous attempts found committed later (counted when found).
    pub(super) resolved: u64,
    /// Attempts that ended aborted.
    pub(super) aborted: u64,
    /// Attempts whose commit was ambiguous.
    pub(super) ambiguous: u64,
    /// Commit latencies measured (attempts with a commit request that got an outcome).
    pub(super) lat_n: u64,
    /// The longest of those latencies.
    pub(super) lat_max: u64,
}

impl Bucket {
    fn add(&mut self, o: &Bucket) {
        self.committed += o.committed;
        self.resolved += o.resolved;
        self.aborted += o.aborted;
        self.ambiguous += o.ambiguous;
        self.lat_n += o.lat_n;
        self.lat_max = self.lat_max.max(o.lat_max);
    }
}

/// Commit throughput and latency in at most [`BUCKETS`] buckets of equal width.
#[derive(Debug)]
pub(super) struct TimeBuckets {
    /// The width of every bucket: bucket `i` covers `[i * width_ms, (i + 1) * width_ms)`.
    pub(super) width_ms: u64,
    pub(super) buckets: Vec<Bucket>,
    /// `BUCKETS` latency histograms of `LAT_BINS` bins, one after the other.
    pub(super) hist: Vec<u64>,
    /// The latency histogram of the whole run.
    pub(super) total: Vec<u64>,
    pub(super) total_n: u64,
    pub(super) total_max: u64,
}

impl Default for TimeBuckets {
    fn default() -> TimeBuckets {
        TimeBuckets {
            width_ms: FIRST_BUCKET_MS,
            buckets: vec![Bucket::default(); BUCKETS],
            hist: vec![0; BUCKETS * LAT_BINS],
            total: vec![0; LAT_BINS],
            total_n: 0,
            total_max: 0,
        }
    }
}

impl TimeBuckets {
    /// The bucket of time `t`, coarsening first if `t` is past the last one.
    pub(super) fn slot(&mut self, t: u64) -> usize {
        while t / self.width_ms >= BUCKETS as u64 {
            self.coarsen();
        }
        (t / self.width_ms) as usize
    }

    fn coarsen(&mut self) {
        // Bucket i takes 2i and 2i+1; both lie at or after i, so nothing is read after it
        // was overwritten.
        for i in 0..BUCKETS / 2 {
            let mut b = self.buckets[2 * i];
            b.add(&self.buckets[2 * i + 1]);
            self.buckets[i] = b;
            for k in 0..LAT_BINS {
                self.hist[i * LAT_BINS + k] =
                    self.hist[2 * i * LAT_BINS + k] + self.hist[(2 * i + 1) * LAT_BINS + k];
            }
        }
        for b in &mut self.buckets[BUCKETS / 2..] {
            *b = Bucket::default();
        }
        for c in &mut self.hist[BUCKETS / 2 * LAT_BINS..] {
            *c = 0;
        }
        self.width_ms *= 2;
    }

    /// How many buckets cover the times `0..=end_ms`.
    pub(super) fn used(&self, end_ms: u64) -> usize {
        ((end_ms / self.width_ms) as usize + 1).min(BUCKETS)
    }

    /// Count a commit latency of `ms` that ended at time `t`.
    pub(super) fn latency(&mut self, t: u64, ms: u64) {
        let i = self.slot(t);
        let bin = lat_bin(ms);
        let b = &mut self.buckets[i];
        b.lat_n += 1;
        b.lat_max = b.lat_max.max(ms);
        self.hist[i * LAT_BINS + bin] += 1;
        self.total[bin] += 1;
        self.total_n += 1;
        self.total_max = self.total_max.max(ms);
    }

    /// The `q` quantile of the commit latency in bucket `i`.
    pub(super) fn bucket_quantile(&self, i: usize, q: f64) -> Option<u64> {
        let b = &self.buckets[i];
        quantile(
            &self.hist[i * LAT_BINS..(i + 1) * LAT_BINS],
            b.lat_n,
            q,
            b.lat_max,
        )
    }

    /// The `q` quantile of the commit latency over the whole run.
    pub(super) fn total_quantile(&self, q: f64) -> Option<u64> {
        quantile(&self.total, self.total_n, q, self.total_max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_bins_bound_their_values() {
        let mut prev_upper = None;
        for i in 0..LAT_BINS {
            let upper = lat_bin_upper(i);
            assert_eq!(lat_bin(upper), i, "bin {i}");
            if let Some(p) = prev_upper {
                assert_eq!(lat_bin(p + 1), i, "bin {i}");
                // At most 25% wider than its lower bound.
                assert!((upper - p) * 4 <= p + 1 + 4, "bin {i}: {p}..{upper}");
            }
            prev_upper = Some(upper);
        }
        let mut hist = vec![0u64; LAT_BINS];
        for ms in 1..=100u64 {
            hist[lat_bin(ms)] += 1;
        }
        let p99 = quantile(&hist, 100, 0.99, 100).unwrap();
        assert!((99..=111).contains(&p99), "{p99}");
        assert_eq!(quantile(&hist, 100, 1.0, 100), Some(100));
        assert_eq!(quantile(&hist, 0, 0.99, 0), None);
    }
}
