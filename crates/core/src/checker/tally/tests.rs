use std::collections::{BTreeSet, HashMap};

use super::*;
use crate::checker::test_support::{id, tally_of};

#[test]
fn in_order_is_clean() {
    let v: Vec<u64> = (0..1000).collect();
    let f = tally_of(1000, &v);
    assert!(f.is_clean(), "{f:?}");
    assert_eq!(f.received, 1000);
    assert_eq!(f.distinct, 1000);
}

#[test]
fn shuffled_is_clean() {
    let mut v: Vec<u64> = (0..1000).collect();
    let mut r = crate::seed::Rng::new(5);
    for i in (1..v.len()).rev() {
        let j = r.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    let f = tally_of(1000, &v);
    assert!(f.is_clean(), "{f:?}");
}

#[test]
fn gap_and_duplicate_are_named() {
    // 0..100 without 40..45, with 70 twice and 71..74 three times.
    let mut v: Vec<u64> = (0..100).filter(|n| !(40..45).contains(n)).collect();
    v.push(70);
    v.extend([71, 72, 73, 71, 72, 73]);
    let f = tally_of(100, &v);
    assert_eq!(f.missing, vec![Span { start: 40, end: 45 }]);
    assert_eq!(f.missing_total, 5);
    assert_eq!(
        f.duplicates,
        vec![
            DupSpan {
                start: 70,
                end: 71,
                copies: 2
            },
            DupSpan {
                start: 71,
                end: 74,
                copies: 3
            },
        ]
    );
    assert_eq!(f.duplicate_values, 4);
    assert_eq!(f.duplicate_copies, 1 + 3 * 2);
}

#[test]
fn duplicate_inside_the_current_run() {
    let f = tally_of(10, &[0, 1, 2, 3, 2, 4, 5, 6, 7, 8, 9]);
    assert_eq!(
        f.duplicates,
        vec![DupSpan {
            start: 2,
            end: 3,
            copies: 2
        }]
    );
    assert_eq!(f.missing_total, 0);
}

#[test]
fn missing_at_both_ends() {
    let f = tally_of(10, &[2, 3, 4, 5, 6, 7]);
    assert_eq!(
        f.missing,
        vec![Span { start: 0, end: 2 }, Span { start: 8, end: 10 }]
    );
}

#[test]
fn nothing_read_is_all_missing() {
    let f = tally_of(5, &[]);
    assert_eq!(f.missing, vec![Span { start: 0, end: 5 }]);
}

#[test]
fn unexpected_values_and_payloads() {
    let mut t = Tally::new(10);
    t.observe(b"3", id(0));
    t.observe(b"10", id(1));
    t.observe(b"hello", id(2));
    let f = t.finish().unwrap();
    assert_eq!(f.unexpected_total, 2);
    assert_eq!(f.unexpected[0].value, Some(10));
    assert_eq!(f.unexpected[1].value, None);
    assert_eq!(f.unexpected[1].payload_prefix, "hello");
    assert_eq!(f.unexpected[1].message_id, id(2));
}

#[test]
fn whole_range_duplicated_stays_one_entry() {
    let mut v: Vec<u64> = (0..10_000).collect();
    v.extend(0..10_000);
    let f = tally_of(10_000, &v);
    assert_eq!(
        f.duplicates,
        vec![DupSpan {
            start: 0,
            end: 10_000,
            copies: 2
        }]
    );
    assert_eq!(f.duplicate_copies, 10_000);
}

/// The findings by brute force: count every value in a map.
fn naive(expected: u64, values: &[u64]) -> Findings {
    let mut counts: HashMap<u64, u32> = HashMap::new();
    for v in values {
        *counts.entry(*v).or_default() += 1;
    }
    let mut missing = Vec::new();
    let mut missing_total = 0;
    let mut v = 0;
    while v < expected {
        if counts.contains_key(&v) {
            v += 1;
            continue;
        }
        let start = v;
        while v < expected && !counts.contains_key(&v) {
            v += 1;
        }
        missing_total += v - start;
        if missing.len() < LIST_CAP {
            missing.push(Span { start, end: v });
        }
    }
    let mut dups: Vec<(u64, u32)> = counts
        .iter()
        .filter(|(_, c)| **c > 1)
        .map(|(v, c)| (*v, *c))
        .collect();
    dups.sort_unstable();
    let mut duplicates: Vec<DupSpan> = Vec::new();
    for (v, c) in &dups {
        match duplicates.last_mut() {
            Some(d) if d.end == *v && d.copies == *c => d.end += 1,
            _ => duplicates.push(DupSpan {
                start: *v,
                end: v + 1,
                copies: *c,
            }),
        }
    }
    duplicates.truncate(LIST_CAP);
    Findings {
        expected,
        received: values.len() as u64,
        distinct: counts.len() as u64,
        missing,
        missing_total,
        duplicates,
        duplicate_values: dups.len() as u64,
        duplicate_copies: dups.iter().map(|(_, c)| u64::from(c - 1)).sum(),
        unexpected: Vec::new(),
        unexpected_total: 0,
    }
}

fn tally_values(expected: u64, values: &[u64]) -> Findings {
    let mut t = Tally::new(expected);
    for v in values {
        t.observe_value(*v);
    }
    t.finish().unwrap()
}

fn shuffle(v: &mut [u64], r: &mut crate::seed::Rng) {
    for i in (1..v.len()).rev() {
        let j = r.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

/// A read-back with every kind of disorder: in-order stretches, shuffled windows, strided
/// (partition by partition) stretches, resent stretches, skipped stretches, strays.
fn messy(n: u64, r: &mut crate::seed::Rng) -> Vec<u64> {
    let mut out = Vec::new();
    let mut cursor = 0;
    while cursor < n {
        let len = match r.below(3) {
            0 => r.between(1, 64),
            1 => r.between(1, 4096),
            _ => r.between(1, 3 * CHUNK),
        }
        .min(n - cursor);
        let (a, b) = (cursor, cursor + len);
        match r.below(9) {
            0 | 1 => out.extend(a..b),
            8 => {
                // Some partitions only: chunks left partly seen, in bitmaps.
                let p = r.between(2, 8);
                for k in 0..p {
                    if r.below(2) == 0 {
                        out.extend((a + k..b).step_by(p as usize));
                    }
                }
            }
            2 => {
                let mut w: Vec<u64> = (a..b).collect();
                shuffle(&mut w, r);
                out.extend(w);
            }
            3 => {
                let p = r.between(2, 8);
                for k in 0..p {
                    out.extend((a + k..b).step_by(p as usize));
                }
            }
            4 => {} // missing
            5 => {
                // Delivered, then part of it again, maybe from much earlier.
                out.extend(a..b);
                let from = r.between(0, b - 1);
                let to = r.between(from, b - 1);
                out.extend(from..=to);
            }
            6 => {
                // All but a few, the few in a second pass later.
                let holes: BTreeSet<u64> =
                    (0..r.between(1, 8)).map(|_| r.between(a, b - 1)).collect();
                out.extend((a..b).filter(|v| !holes.contains(v)));
                out.extend(holes.iter().copied());
            }
            _ => {
                for _ in 0..r.between(1, 50) {
                    out.push(r.between(0, n - 1));
                }
                out.extend(a..b);
            }
        }
        cursor = b;
    }
    out
}

#[test]
fn matches_a_naive_count_on_small_random_inputs() {
    for seed in 0..300u64 {
        let mut r = crate::seed::Rng::new(seed);
        let n = r.between(0, 300);
        let len = r.between(0, 600);
        let values: Vec<u64> = (0..len).map(|_| r.between(0, n.max(1) - 1)).collect();
        let n = if values.is_empty() { n } else { n.max(1) };
        assert_eq!(tally_values(n, &values), naive(n, &values), "seed {seed}");
    }
}

#[test]
fn matches_a_naive_count_on_messy_inputs_across_chunks() {
    for seed in 0..16u64 {
        let mut r = crate::seed::Rng::new(1000 + seed);
        let n = r.between(1, 5 * CHUNK);
        let values = messy(n, &mut r);
        assert_eq!(tally_values(n, &values), naive(n, &values), "seed {seed}");
    }
}

#[test]
fn matches_a_naive_count_on_random_values_over_many_chunks() {
    // Scattered values touch many chunks: bitmaps move between hot, cold and ranges.
    for seed in 0..3u64 {
        let mut r = crate::seed::Rng::new(2000 + seed);
        let n = 10 * CHUNK;
        let mut values: Vec<u64> = (0..20_000).map(|_| r.between(0, n - 1)).collect();
        // Then whole chunks in order over some of them, and a long run across all.
        values.extend(3 * CHUNK..7 * CHUNK + 17);
        values.extend(CHUNK / 2..n - CHUNK / 3);
        assert_eq!(tally_values(n, &values), naive(n, &values), "seed {seed}");
    }
}

#[test]
fn partitioned_readback_is_clean_and_ends_as_one_range() {
    // Four partitions read one after the other: 0, 4, 8, ..., then 1, 5, 9, ...
    let n = 5 * CHUNK + 123;
    let mut t = Tally::new(n);
    for p in 0..4 {
        for v in (p..n).step_by(4) {
            t.observe_value(v);
        }
    }
    assert!(
        t.cold.len() + t.hot.len() <= 6,
        "one bitmap per chunk at most"
    );
    let f = t.finish().unwrap();
    assert!(f.is_clean(), "{f:?}");
    assert_eq!(f.distinct, n);
}

#[test]
fn random_order_over_many_chunks_uses_bitmaps() {
    // A full random permutation: consecutive numbers rarely share a chunk, yet the chunks
    // end in bitmaps (1 bit a number), not in one range per number.
    let n = 16 * CHUNK;
    let mut v: Vec<u64> = (0..n).collect();
    shuffle(&mut v, &mut crate::seed::Rng::new(11));
    let mut t = Tally::new(n);
    for x in &v[..(n / 2) as usize] {
        t.observe_value(*x);
    }
    assert!(
        t.seen.iter().count() < 16 * FRAGMENTS * 2,
        "{} ranges",
        t.seen.iter().count()
    );
    assert_eq!(t.cold.len() + t.hot.len(), 16);
    for x in &v[(n / 2) as usize..] {
        t.observe_value(*x);
    }
    // All chunks complete but the one holding the last number, still in the run.
    assert!(t.cold.len() + t.hot.len() <= 1);
    let f = t.finish().unwrap();
    assert!(f.is_clean(), "{f:?}");
}

#[test]
fn shuffled_windows_keep_few_bitmaps() {
    let n = 20 * CHUNK;
    let mut r = crate::seed::Rng::new(9);
    let mut t = Tally::new(n);
    let mut most = 0;
    for w in (0..n).step_by(10_000) {
        let mut v: Vec<u64> = (w..(w + 10_000).min(n)).collect();
        shuffle(&mut v, &mut r);
        for x in v {
            t.observe_value(x);
        }
        most = most.max(t.cold.len() + t.hot.len());
    }
    assert!(most <= 2, "{most} bitmaps at once");
    assert!(t.seen.iter().count() <= 2, "{:?}", t.seen);
    let f = t.finish().unwrap();
    assert!(f.is_clean(), "{f:?}");
}

#[test]
fn duplicates_found_in_bitmaps_across_words_and_chunks() {
    // Odd numbers first (bitmaps), then a run over everything: the odd ones are copies,
    // and the run crosses chunks with bitmaps, hot and cold.
    let n = 3 * CHUNK;
    let mut values: Vec<u64> = (1..n).step_by(2).collect();
    values.extend(0..n);
    let f = tally_values(n, &values);
    assert_eq!(f, naive(n, &values));
    assert_eq!(f.duplicate_values, n / 2);
    assert!(f.missing.is_empty());
    // And a stretch duplicated within one bitmap, crossing word boundaries.
    let mut values: Vec<u64> = (0..1000).rev().collect();
    values.extend(60..200);
    let f = tally_values(1000, &values);
    assert_eq!(
        f.duplicates,
        vec![DupSpan {
            start: 60,
            end: 200,
            copies: 2
        }]
    );
}

#[test]
fn long_run_over_chunks_with_and_without_bitmaps() {
    // Chunks 1 and 3 half seen (bitmaps), then runs across chunks with and without
    // bitmaps, one leaving chunk 1 incomplete, one completing chunk 3: each part goes to
    // its own place once.
    let n = 6 * CHUNK;
    let mut values: Vec<u64> = (CHUNK + 1..2 * CHUNK).step_by(2).collect();
    values.extend((3 * CHUNK + 1..4 * CHUNK).step_by(2));
    values.extend(CHUNK / 2..CHUNK + 100);
    values.extend(2 * CHUNK + 5..5 * CHUNK + 7);
    let f = tally_values(n, &values);
    assert_eq!(f, naive(n, &values));
    assert_eq!(f.duplicate_values, 50 + CHUNK / 2);
}

#[test]
fn sparse_bitmaps_go_back_to_ranges() {
    // Two short runs in one chunk give it a bitmap; moving on to other chunks retires it
    // with few numbers, as ranges.
    let mut t = Tally::new(10 * CHUNK);
    for v in [10, 5, 20, 7] {
        t.observe_value(v);
    }
    for c in 1..4 {
        for v in [c * CHUNK + 10, c * CHUNK + 5, c * CHUNK + 20] {
            t.observe_value(v);
        }
    }
    assert!(t.cold.is_empty(), "{:?}", t.cold);
    let f = t.finish().unwrap();
    assert_eq!(f.distinct, 4 + 3 * 3);
    assert_eq!(f.missing[0], Span { start: 0, end: 5 });
}

#[test]
fn values_near_the_top_of_u64() {
    let n = u64::MAX;
    let mut values: Vec<u64> = (n - 3 * CHUNK..n).rev().step_by(3).collect();
    values.extend([n - 1, n - 1, n - 2]);
    let mut t = Tally::new(n);
    for v in &values {
        t.observe_value(*v);
    }
    let f = t.finish().unwrap();
    // n-1, n-4, ..., n-3*CHUNK+2, and n-2; n-1 three times.
    assert_eq!(f.distinct, CHUNK + 1);
    assert_eq!(
        f.duplicates,
        vec![DupSpan {
            start: n - 1,
            end: n,
            copies: 3
        }]
    );
    assert_eq!(
        f.missing[0],
        Span {
            start: 0,
            end: n - 3 * CHUNK + 2
        }
    );
    assert_eq!(f.missing_total, n - CHUNK - 1);
}

/// One message of a generated read-back: its payload and the message id it was read at.
fn payload_of(v: u64, r: &mut crate::seed::Rng) -> Vec<u8> {
    let mut p = v.to_string().into_bytes();
    if r.below(4) == 0 {
        // Padding after the number, as the producer's `message_size` adds.
        p.extend_from_slice(b" pad");
    }
    p
}

/// The findings by a plain count in a `HashMap<u64, u32>`, every anomaly listed.
fn oracle(expected: u64, messages: &[(Vec<u8>, MsgId)]) -> Findings {
    let mut counts: HashMap<u64, u32> = HashMap::new();
    let mut unexpected = Vec::new();
    for (payload, id) in messages {
        // The plain reading of a payload: its leading digits, 1 to 19 of them, no
        // leading zero; anything else, or a number >= N, is unexpected.
        let digits: Vec<u8> = payload
            .iter()
            .copied()
            .take_while(u8::is_ascii_digit)
            .collect();
        let value =
            if digits.is_empty() || digits.len() > 19 || (digits.len() > 1 && digits[0] == b'0') {
                None
            } else {
                std::str::from_utf8(&digits).unwrap().parse::<u64>().ok()
            };
        match value {
            Some(v) if v < expected => *counts.entry(v).or_default() += 1,
            _ => unexpected.push(Unexpected {
                value,
                payload_prefix: String::from_utf8_lossy(&payload[..payload.len().min(32)])
                    .into_owned(),
                message_id: *id,
            }),
        }
    }
    let mut missing: Vec<Span> = Vec::new();
    for v in 0..expected {
        if counts.contains_key(&v) {
            continue;
        }
        match missing.last_mut() {
            Some(m) if m.end == v => m.end += 1,
            _ => missing.push(Span {
                start: v,
                end: v + 1,
            }),
        }
    }
    let mut dups: Vec<(u64, u32)> = counts
        .iter()
        .filter(|(_, c)| **c > 1)
        .map(|(v, c)| (*v, *c))
        .collect();
    dups.sort_unstable();
    let mut duplicates: Vec<DupSpan> = Vec::new();
    for (v, c) in &dups {
        match duplicates.last_mut() {
            Some(d) if d.end == *v && d.copies == *c => d.end += 1,
            _ => duplicates.push(DupSpan {
                start: *v,
                end: v + 1,
                copies: *c,
            }),
        }
    }
    Findings {
        expected,
        received: messages.len() as u64,
        distinct: counts.len() as u64,
        missing_total: missing.iter().map(Span::len).sum(),
        missing,
        duplicates,
        duplicate_values: dups.len() as u64,
        duplicate_copies: dups.iter().map(|(_, c)| u64::from(c - 1)).sum(),
        unexpected_total: unexpected.len() as u64,
        unexpected,
    }
}

/// A random read-back of [0, n): some numbers left out, some sent again (single numbers
/// and stretches), numbers >= n and payloads that are no number at all, in one of four
/// orders (in order, shuffled, shuffled in windows, partition by partition).
fn generated(n: u64, r: &mut crate::seed::Rng) -> Vec<(Vec<u8>, MsgId)> {
    let drop_per_mille = [0, 1, 50, 500, 1000][r.below(5) as usize];
    let mut values: Vec<u64> = (0..n).filter(|_| r.below(1000) >= drop_per_mille).collect();
    if n > 0 {
        for _ in 0..r.below(20) {
            let v = r.between(0, n - 1);
            for _ in 0..r.between(1, 4) {
                values.push(v);
            }
        }
        for _ in 0..r.below(3) {
            let a = r.between(0, n - 1);
            let len = r.between(0, 3000);
            let b = r.between(a, (a + len).min(n - 1));
            values.extend(a..=b);
        }
    }
    match r.below(4) {
        0 => values.sort_unstable(),
        1 => shuffle(&mut values, r),
        2 => {
            values.sort_unstable();
            let w = r.between(2, 5000) as usize;
            for c in values.chunks_mut(w) {
                shuffle(c, r);
            }
        }
        _ => {
            let p = r.between(2, 8);
            values.sort_by_key(|v| (v % p, *v));
        }
    }
    let mut out: Vec<(Vec<u8>, MsgId)> = Vec::with_capacity(values.len() + 40);
    for v in values {
        let p = payload_of(v, r);
        out.push((p, id(out.len() as u64)));
    }
    // Out of range and junk, anywhere.
    let junk: [&[u8]; 6] = [
        b"",
        b"x1",
        b"007",
        b"99999999999999999999",
        b"-3",
        b"\xff\xfe7",
    ];
    for _ in 0..r.below(30) {
        let payload = if r.below(2) == 0 {
            (n + r.below(1000)).to_string().into_bytes()
        } else {
            junk[r.below(junk.len() as u64) as usize].to_vec()
        };
        let at = r.below(out.len() as u64 + 1) as usize;
        out.insert(at, (payload, id(1_000_000 + at as u64)));
    }
    out
}

#[test]
fn the_tally_agrees_with_a_hashmap_on_random_shuffled_duplicated_and_stray_input() {
    let mut cases = 0;
    for seed in 0..1500u64 {
        let mut r = crate::seed::Rng::new(0x7a11_0000 + seed);
        // Mostly small ranges; every 100th case over several bitmap chunks.
        let n = if seed % 100 == 99 {
            r.between(CHUNK, 4 * CHUNK)
        } else {
            r.between(0, 3000)
        };
        let messages = generated(n, &mut r);
        let want = oracle(n, &messages);
        let mut all = Tally::uncapped(n);
        let mut capped = Tally::new(n);
        for (payload, id) in &messages {
            all.observe(payload, *id);
            capped.observe(payload, *id);
        }
        assert_eq!(all.received(), messages.len() as u64, "seed {seed}");
        let got = all.finish().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(got, want, "seed {seed}, n {n}");
        let got_capped = capped
            .finish()
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(got_capped, want.clone().capped(), "seed {seed}, n {n}");
        cases += 1;
    }
    assert_eq!(cases, 1500);
}

#[test]
fn broken_conservation_is_an_error_not_a_verdict() {
    let mut t = Tally::new(10);
    for v in [0, 1, 2, 2, 3] {
        t.observe_value(v);
    }
    t.observe(b"junk", id(9));
    // As if a message had been counted without landing anywhere.
    t.received += 1;
    let err = t.finish().unwrap_err();
    assert_eq!(
        err,
        CheckerError::Conservation {
            received: 7,
            distinct: 4,
            duplicate_copies: 1,
            unexpected: 1,
            sum: 6
        }
    );
    assert!(err.to_string().contains("no verdict is given"), "{err}");
    // And findings made elsewhere are held to it as well.
    let mut f = tally_of(10, &[0, 1, 2]);
    assert!(f.conserved().is_ok());
    f.distinct += 1;
    assert!(f.conserved().is_err());
}

#[test]
fn capped_findings_are_what_a_capped_tally_gives() {
    // 1500 gaps, 1200 duplicated numbers, 1100 strays: over LIST_CAP each.
    let n = 10_000;
    let mut values: Vec<u64> = (0..n).filter(|v| v % 6 != 1 || *v >= 9000).collect();
    values.extend((0..1200).map(|i| i * 8));
    let mut all = Tally::uncapped(n);
    let mut capped = Tally::new(n);
    for t in [&mut all, &mut capped] {
        for v in &values {
            t.observe_value(*v);
        }
        for i in 0..1100u64 {
            t.observe((n + i).to_string().as_bytes(), id(i));
        }
    }
    let all = all.finish().unwrap();
    assert_eq!(all.missing.len(), 1500);
    assert_eq!(all.duplicates.len(), 1200);
    assert_eq!(all.unexpected.len(), 1100);
    let capped = capped.finish().unwrap();
    assert_eq!(capped.missing.len(), LIST_CAP);
    assert_eq!(all.capped(), capped);
}
