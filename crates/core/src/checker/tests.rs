use super::*;

fn id(e: u64) -> MsgId {
    MsgId {
        partition: -1,
        ledger: 1,
        entry: e,
        batch: -1,
    }
}

fn tally_of(expected: u64, values: &[u64]) -> Findings {
    let mut t = Tally::new(expected);
    for (i, v) in values.iter().enumerate() {
        t.observe(v.to_string().as_bytes(), id(i as u64));
    }
    t.finish().unwrap()
}

#[test]
fn parses_numbers_with_padding() {
    assert_eq!(parse_number(b"123"), Some(123));
    assert_eq!(parse_number(b"123 xxxxx"), Some(123));
    assert_eq!(parse_number(b"0"), Some(0));
    assert_eq!(parse_number(b"007"), None);
    assert_eq!(parse_number(b"x1"), None);
    assert_eq!(parse_number(b""), None);
    assert_eq!(parse_number(b"99999999999999999999"), None);
}

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

#[test]
fn parse_matches_the_plain_definition() {
    // The plain definition: the leading digits, at most 19 of them, no leading zero.
    fn plain(p: &[u8]) -> Option<u64> {
        let d: Vec<u8> = p
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .copied()
            .collect();
        if d.is_empty() || d.len() > 19 || (d.len() > 1 && d[0] == b'0') {
            return None;
        }
        std::str::from_utf8(&d).ok()?.parse().ok()
    }
    let mut r = crate::seed::Rng::new(3);
    let alphabet = b"0123456789 x/:\xff";
    for _ in 0..20_000 {
        let len = r.between(0, 24) as usize;
        let p: Vec<u8> = (0..len)
            .map(|_| {
                if r.below(4) == 0 {
                    alphabet[r.below(alphabet.len() as u64) as usize]
                } else {
                    b'0' + r.below(10) as u8
                }
            })
            .collect();
        assert_eq!(
            parse_number(&p),
            plain(&p),
            "{:?}",
            String::from_utf8_lossy(&p)
        );
    }
    for s in [
        "9999999999999999999",
        "18446744073709551615",
        "1 ",
        "42 padding",
    ] {
        assert_eq!(parse_number(s.as_bytes()), plain(s.as_bytes()), "{s}");
    }
}

fn ok(v: Vec<Event>) -> Vec<Result<Event, String>> {
    v.into_iter().map(Ok).collect()
}

#[test]
fn unreadable_history_lines_are_noted() {
    let f = tally_of(10, &(0..10).collect::<Vec<_>>());
    let mut h = ok(history_19629());
    h.insert(2, Err("history.jsonl:3: not a history event".to_string()));
    let v = verdict(f, Some(h), &Context::default());
    assert_eq!(v.status, Status::Pass);
    assert_eq!(v.notes.len(), 1, "{:?}", v.notes);
    assert!(
        v.notes[0].contains("1 history line(s) could not be read"),
        "{:?}",
        v.notes
    );
    assert!(v.summary.contains("Note:"), "{}", v.summary);
}

#[test]
fn faults_after_the_outcome_are_not_blamed() {
    // Attempt 1's commit is ambiguous at 16 ms and resolved at 500 ms; a fault from 100 to
    // 200 ms came after the producer learned the outcome.
    let mut h = history_19629();
    h.insert(
        8,
        ev(
            100,
            EventBody::FaultStarted {
                fault: "late".into(),
                kind: "pause".into(),
                target: "broker-1".into(),
                planned_ms: None,
                action: "docker pause".into(),
                detail: String::new(),
            },
        ),
    );
    h.insert(
        9,
        ev(
            200,
            EventBody::FaultHealed {
                fault: "late".into(),
                action: "docker unpause".into(),
                ok: true,
                detail: String::new(),
            },
        ),
    );
    h.push(ev(
        500,
        EventBody::TxnResolved {
            attempt: 1,
            txn: T1,
            resolved: Outcome::Committed,
            how: "read-back".into(),
        },
    ));
    let mut values: Vec<u64> = (0..10).collect();
    values.extend(0..10);
    let v = verdict(tally_of(10, &values), Some(ok(h)), &Context::default());
    let a1 = v.attempts.iter().find(|a| a.attempt == 1).unwrap();
    assert_eq!(a1.faults, vec!["restart".to_string()]);
    assert_eq!(a1.outcome_ms, Some(16));
    assert_eq!(a1.ended_ms, Some(500));
}

#[test]
fn recovery_is_measured_from_the_heal_to_the_next_commit() {
    let h = vec![
        ev(
            10,
            EventBody::TxnOutcome {
                attempt: 1,
                txn: T1,
                outcome: Outcome::Committed,
                detail: String::new(),
            },
        ),
        ev(
            20,
            EventBody::FaultStarted {
                fault: "f".into(),
                kind: "pause".into(),
                target: "b".into(),
                planned_ms: None,
                action: "a".into(),
                detail: String::new(),
            },
        ),
        ev(
            25,
            EventBody::TxnOutcome {
                attempt: 2,
                txn: T2,
                outcome: Outcome::Committed,
                detail: String::new(),
            },
        ),
        ev(
            30,
            EventBody::FaultHealed {
                fault: "f".into(),
                action: "a".into(),
                ok: true,
                detail: String::new(),
            },
        ),
        ev(
            45,
            EventBody::TxnOutcome {
                attempt: 3,
                txn: T2,
                outcome: Outcome::Committed,
                detail: String::new(),
            },
        ),
    ];
    let v = verdict(tally_of(1, &[0]), Some(ok(h)), &Context::default());
    assert_eq!(v.faults[0].recovery_ms, Some(15));
    assert_eq!(v.faults[0].commit_gap_ms, Some(35));
}

#[test]
fn a_stall_is_inconclusive_with_the_failures_since_the_last_progress_and_the_broker_lines() {
    let aborted = |t: u64, attempt: u64, detail: &str| {
        ev(
            t,
            EventBody::TxnOutcome {
                attempt,
                txn: TxnId {
                    most: 0,
                    least: attempt,
                },
                outcome: Outcome::Aborted,
                detail: detail.into(),
            },
        )
    };
    let h = vec![
        // Before the last commit: not part of the stall.
        aborted(5, 1, "a SEND timed out"),
        ev(
            10,
            EventBody::TxnOutcome {
                attempt: 2,
                txn: T2,
                outcome: Outcome::Committed,
                detail: String::new(),
            },
        ),
        aborted(
            20,
            3,
            "the broker closed producer 1 (topic unloaded or moved)",
        ),
        aborted(
            30,
            4,
            "the broker closed producer 2 (topic unloaded or moved)",
        ),
        aborted(40, 5, "a SEND failed: PersistenceError"),
        ev(
            70_010,
            EventBody::Stalled {
                since_ms: 10,
                idle_ms: 70_000,
                detail: "nothing committed for 70s with no fault active".into(),
            },
        ),
        ev(
            70_020,
            EventBody::ProducerFinished {
                committed: 1,
                aborted: 4,
                ambiguous: 0,
                messages_committed: 1,
                complete: false,
                detail: "stopped: stalled".into(),
            },
        ),
    ];
    let ctx = Context {
        stall_log: vec![crate::stall::LogEvidence {
            node: "broker-1".into(),
            topic: "t-partition-1".into(),
            level: "WARN".into(),
            message: "PersistentTopic: Failed to persist msg in store".into(),
            count: 687,
            first: "2026-11-30T07:23:43,454".into(),
            last: "2026-11-30T07:30:12,000".into(),
        }],
        stall_cause: Some("the transaction buffer bug".into()),
        ..Context::default()
    };
    let v = verdict(tally_of(2, &[1]), Some(ok(h)), &ctx);
    assert_eq!(v.status, Status::Inconclusive, "{}", v.summary);
    let st = v.stall.as_ref().expect("a stall finding");
    assert_eq!((st.since_ms, st.detected_ms), (10, 70_010));
    assert_eq!(st.failed_attempts, 3);
    // Failures differing only in ids count as one kind.
    assert_eq!(
        st.failures[0],
        (
            2,
            "the broker closed producer 1 (topic unloaded or moved)".to_string()
        )
    );
    assert_eq!(st.broker_log.len(), 1);
    assert!(
        v.reasons
            .iter()
            .any(|r| r.contains("the run stalled: nothing committed for 70s")
                && r.contains(
                    "3 attempt(s) failed meanwhile, 2 with: the broker closed producer 1"
                )),
        "{:?}",
        v.reasons
    );
    assert!(
        v.notes
            .iter()
            .any(|n| n.contains("broker-1 logged WARN 687x about t-partition-1")),
        "{:?}",
        v.notes
    );
    assert!(
        v.notes
            .iter()
            .any(|n| n == "likely cause: the transaction buffer bug"),
        "{:?}",
        v.notes
    );
    assert!(v.summary.contains("the run stalled"), "{}", v.summary);
    // A run without a stall event has no stall finding, whatever the context holds.
    let v = verdict(tally_of(1, &[0]), Some(ok(Vec::new())), &ctx);
    assert!(v.stall.is_none());
}

fn ev(t: u64, body: EventBody) -> Event {
    Event { t_ms: t, body }
}

const T1: TxnId = TxnId { most: 0, least: 1 };
const T2: TxnId = TxnId { most: 0, least: 2 };

fn history_19629() -> Vec<Event> {
    // Attempt 1 carries [0, 10); its commit is ambiguous while a broker restarts; the naive
    // policy resends [0, 10) as attempt 2, which commits. Both are visible.
    vec![
        ev(
            0,
            EventBody::TxnOpened {
                attempt: 1,
                txn: T1,
                numbers: vec![(0, 10)],
                resend_of: None,
            },
        ),
        ev(
            5,
            EventBody::FaultStarted {
                fault: "restart".into(),
                kind: "broker_restart".into(),
                target: "broker-1".into(),
                planned_ms: Some(5),
                action: "docker kill".into(),
                detail: String::new(),
            },
        ),
        ev(
            6,
            EventBody::CommitRequested {
                attempt: 1,
                txn: T1,
                try_no: 1,
            },
        ),
        ev(
            16,
            EventBody::TxnOutcome {
                attempt: 1,
                txn: T1,
                outcome: Outcome::Ambiguous,
                detail: "connection lost".into(),
            },
        ),
        ev(
            16,
            EventBody::ResendScheduled {
                attempt: 1,
                numbers: vec![(0, 10)],
                reason: "naive".into(),
            },
        ),
        ev(
            20,
            EventBody::FaultHealed {
                fault: "restart".into(),
                action: "docker start".into(),
                ok: true,
                detail: String::new(),
            },
        ),
        ev(
            30,
            EventBody::TxnOpened {
                attempt: 2,
                txn: T2,
                numbers: vec![(0, 10)],
                resend_of: Some(1),
            },
        ),
        ev(
            40,
            EventBody::TxnOutcome {
                attempt: 2,
                txn: T2,
                outcome: Outcome::Committed,
                detail: String::new(),
            },
        ),
        ev(
            41,
            EventBody::ProducerFinished {
                committed: 1,
                aborted: 0,
                ambiguous: 1,
                messages_committed: 10,
                complete: true,
                detail: String::new(),
            },
        ),
    ]
}

#[test]
fn duplicates_are_attributed_to_the_ambiguous_commit_and_the_fault() {
    let mut v: Vec<u64> = (0..10).collect();
    v.extend(0..10);
    let f = tally_of(10, &v);
    let verdict = verdict(f, Some(ok(history_19629())), &Context::default());
    assert_eq!(verdict.status, Status::Violation);
    assert_eq!(verdict.duplicates.len(), 1);
    let d = &verdict.duplicates[0];
    assert_eq!(d.attempts, vec![1, 2]);
    assert_eq!(d.cause, Cause::Ambiguity);
    assert!(
        d.explanation.contains("the first commit had applied"),
        "{}",
        d.explanation
    );
    assert!(
        d.evidence
            .iter()
            .any(|e| e.contains("faults active: restart")),
        "{:?}",
        d.evidence
    );
    let a1 = verdict.attempts.iter().find(|a| a.attempt == 1).unwrap();
    assert_eq!(a1.outcome, Some(Outcome::Ambiguous));
    assert!(a1.resent);
    assert_eq!(a1.faults, vec!["restart".to_string()]);
    assert_eq!(verdict.faults[0].recovery_ms, Some(20));
    assert!(
        verdict.summary.starts_with("VIOLATION"),
        "{}",
        verdict.summary
    );
}

#[test]
fn clean_read_with_finished_producer_passes() {
    let f = tally_of(10, &(0..10).collect::<Vec<_>>());
    let v = verdict(f, Some(ok(history_19629())), &Context::default());
    assert_eq!(v.status, Status::Pass);
    assert!(v.attempts.is_empty(), "only anomalous attempts are kept");
    assert_eq!(v.producer.as_ref().unwrap().committed, 1);
}

#[test]
fn missing_with_unfinished_producer_is_inconclusive() {
    let f = tally_of(20, &(0..10).collect::<Vec<_>>());
    let h: Vec<Event> = history_19629()
        .into_iter()
        .filter(|e| !matches!(e.body, EventBody::ProducerFinished { .. }))
        .collect();
    let v = verdict(f, Some(ok(h)), &Context::default());
    assert_eq!(v.status, Status::Inconclusive);
    assert!(v.reasons[0].contains("never finished"));
}

#[test]
fn incomplete_readback_is_inconclusive() {
    let f = tally_of(20, &(0..10).collect::<Vec<_>>());
    let ctx = Context {
        readback_incomplete: Some("timed out".into()),
        ..Context::default()
    };
    let v = verdict(f, None::<Vec<Result<Event, String>>>, &ctx);
    assert_eq!(v.status, Status::Inconclusive);
}

/// Attempt 1 opens at 0 with [0, 10) and is confirmed committed at `t`.
fn committed_0_to_10(t: u64) -> Vec<Event> {
    vec![
        ev(
            0,
            EventBody::TxnOpened {
                attempt: 1,
                txn: T1,
                numbers: vec![(0, 10)],
                resend_of: None,
            },
        ),
        ev(
            t,
            EventBody::TxnOutcome {
                attempt: 1,
                txn: T1,
                outcome: Outcome::Committed,
                detail: String::new(),
            },
        ),
    ]
}

/// Regression: a read-back held up by a transaction left open on a partition said of every
/// committed-but-unread number that "the broker lost committed data".
#[test]
fn unread_numbers_of_an_incomplete_readback_are_not_called_lost() {
    let f = tally_of(10, &(5..10).collect::<Vec<_>>());
    let h = committed_0_to_10(5);
    let ctx = Context {
        readback_incomplete: Some("1 transaction(s) still open on the topic after 50s".into()),
        ..Context::default()
    };
    let v = verdict(f, Some(ok(h)), &ctx);
    assert_eq!(v.status, Status::Inconclusive);
    let e = &v.missing[0].explanation;
    assert!(
        e.starts_with("not read: the read-back is incomplete (1 transaction(s) still open"),
        "{e}"
    );
    assert!(!e.contains("lost"), "{e}");
    assert_eq!(v.missing[0].cause, Cause::Harness);
    assert!(
        v.missing[0].evidence[0].contains("committed"),
        "{:?}",
        v.missing[0].evidence
    );
}

#[test]
fn committed_but_missing_blames_the_broker() {
    let f = tally_of(10, &(5..10).collect::<Vec<_>>());
    let mut h = committed_0_to_10(9);
    h.push(ev(
        10,
        EventBody::ProducerFinished {
            committed: 1,
            aborted: 0,
            ambiguous: 0,
            messages_committed: 10,
            complete: true,
            detail: String::new(),
        },
    ));
    let v = verdict(f, Some(ok(h)), &Context::default());
    assert_eq!(v.status, Status::Violation);
    assert_eq!(v.missing[0].what, Span { start: 0, end: 5 });
    assert!(
        v.missing[0].explanation.contains("lost committed data"),
        "{}",
        v.missing[0].explanation
    );
}

#[test]
fn withheld_ambiguous_commit_explains_a_gap() {
    let f = tally_of(10, &(5..10).collect::<Vec<_>>());
    let h = vec![
        ev(
            0,
            EventBody::TxnOpened {
                attempt: 1,
                txn: T1,
                numbers: vec![(0, 5)],
                resend_of: None,
            },
        ),
        ev(
            9,
            EventBody::TxnOutcome {
                attempt: 1,
                txn: T1,
                outcome: Outcome::Ambiguous,
                detail: "timeout".into(),
            },
        ),
        ev(
            9,
            EventBody::ResendWithheld {
                attempt: 1,
                numbers: vec![(0, 5)],
                reason: "retry-commit".into(),
            },
        ),
        ev(
            10,
            EventBody::ProducerFinished {
                committed: 0,
                aborted: 0,
                ambiguous: 1,
                messages_committed: 5,
                complete: true,
                detail: String::new(),
            },
        ),
    ];
    let v = verdict(f, Some(ok(h)), &Context::default());
    assert!(
        v.missing[0].explanation.contains("withheld"),
        "{}",
        v.missing[0].explanation
    );
    assert_eq!(v.producer.unwrap().withheld, 1);
}

#[test]
fn message_ids_of_duplicates_are_carried() {
    let f = tally_of(3, &[0, 1, 1, 2]);
    let mut ctx = Context::default();
    ctx.duplicate_ids.insert(1, vec![id(1), id(2)]);
    let v = verdict(f, None::<Vec<Result<Event, String>>>, &ctx);
    assert_eq!(v.duplicates[0].what.message_ids[&1], vec![id(1), id(2)]);
    let json = serde_json::to_string(&v).unwrap();
    assert!(json.contains("\"status\":\"violation\""));
}

// ---- The grading table (README, "How a verdict is graded"): one test per row. ----

fn opened(
    t: u64,
    attempt: u64,
    txn: TxnId,
    numbers: Vec<(u64, u64)>,
    resend_of: Option<u64>,
) -> Event {
    ev(
        t,
        EventBody::TxnOpened {
            attempt,
            txn,
            numbers,
            resend_of,
        },
    )
}
fn outcome(t: u64, attempt: u64, txn: TxnId, o: Outcome, detail: &str) -> Event {
    ev(
        t,
        EventBody::TxnOutcome {
            attempt,
            txn,
            outcome: o,
            detail: detail.into(),
        },
    )
}
fn resend(t: u64, attempt: u64, numbers: Vec<(u64, u64)>, reason: &str) -> Event {
    ev(
        t,
        EventBody::ResendScheduled {
            attempt,
            numbers,
            reason: reason.into(),
        },
    )
}
fn finished(t: u64, complete: bool) -> Event {
    ev(
        t,
        EventBody::ProducerFinished {
            committed: 1,
            aborted: 0,
            ambiguous: 0,
            messages_committed: 10,
            complete,
            detail: String::new(),
        },
    )
}
fn grade(read: &[u64], h: Vec<Event>, ctx: &Context) -> Verdict {
    verdict(tally_of(10, read), Some(ok(h)), ctx)
}
fn twice() -> Vec<u64> {
    (0..10).chain(0..10).collect()
}

#[test]
fn row_pass_every_number_once() {
    let v = grade(
        &(0..10).collect::<Vec<_>>(),
        committed_0_to_10(5)
            .into_iter()
            .chain([finished(6, true)])
            .collect(),
        &Context::default(),
    );
    assert_eq!(v.status, Status::Pass);
}

#[test]
fn row_confirmed_commit_missing_is_pulsar() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(
            5,
            1,
            T1,
            Outcome::Committed,
            "END_TXN COMMIT answered success",
        ),
        finished(6, true),
    ];
    let v = grade(&(5..10).collect::<Vec<_>>(), h, &Context::default());
    assert_eq!(v.status, Status::Violation);
    assert_eq!(v.missing[0].cause, Cause::Pulsar);
    assert!(
        v.missing[0].evidence[0].contains("END_TXN COMMIT answered success"),
        "{:?}",
        v.missing[0].evidence
    );
    // Even when the producer did not finish: Pulsar contradicted its own answer.
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(5, 1, T1, Outcome::Committed, "ok"),
        finished(6, false),
    ];
    assert_eq!(
        grade(&(5..10).collect::<Vec<_>>(), h, &Context::default()).status,
        Status::Violation
    );
}

#[test]
fn row_confirmed_abort_readable_is_pulsar() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(
            5,
            1,
            T1,
            Outcome::Aborted,
            "InvalidTxnStatus: ... it is in ABORTED status",
        ),
        resend(5, 1, vec![(0, 10)], "the commit did not apply"),
        opened(6, 2, T2, vec![(0, 10)], Some(1)),
        outcome(7, 2, T2, Outcome::Committed, "ok"),
        finished(8, true),
    ];
    let v = grade(&twice(), h, &Context::default());
    assert_eq!(v.status, Status::Violation);
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
    assert!(
        v.duplicates[0]
            .explanation
            .contains("aborted on Pulsar's word"),
        "{}",
        v.duplicates[0].explanation
    );
}

#[test]
fn row_one_transaction_delivered_twice_is_pulsar() {
    let v = grade(
        &twice(),
        committed_0_to_10(5)
            .into_iter()
            .chain([finished(6, true)])
            .collect(),
        &Context::default(),
    );
    assert_eq!(v.status, Status::Violation);
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
}

#[test]
fn row_committed_twice_without_a_resend_is_pulsar() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(1, 1, T1, Outcome::Committed, "ok"),
        opened(2, 2, T2, vec![(0, 10)], None),
        outcome(3, 2, T2, Outcome::Committed, "ok"),
        finished(4, true),
    ];
    let v = grade(&twice(), h, &Context::default());
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
    assert!(
        v.duplicates[0].explanation.contains("no resend"),
        "{}",
        v.duplicates[0].explanation
    );
}

#[test]
fn row_resend_after_an_ambiguous_commit_is_ambiguity() {
    let v = grade(&twice(), history_19629(), &Context::default());
    assert_eq!(v.status, Status::Violation);
    assert_eq!(v.duplicates[0].cause, Cause::Ambiguity);
    assert!(v.summary.contains("1 range(s) ambiguity"), "{}", v.summary);
}

/// Regression: a resend the policy withheld left numbers missing, graded VIOLATION.
#[test]
fn row_withheld_resend_is_harness_inconclusive() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(5, 1, T1, Outcome::Ambiguous, "timed out"),
        ev(
            9,
            EventBody::ResendWithheld {
                attempt: 1,
                numbers: vec![(0, 10)],
                reason: "retry-commit: the commit stayed ambiguous".into(),
            },
        ),
        finished(10, true),
    ];
    let v = grade(&[], h, &Context::default());
    assert_eq!(v.status, Status::Inconclusive);
    assert_eq!(v.missing[0].cause, Cause::Harness);
    assert!(
        v.reasons.iter().any(|r| r.contains("harness's own")),
        "{:?}",
        v.reasons
    );
}

#[test]
fn row_incomplete_read_is_harness_inconclusive() {
    let ctx = Context {
        readback_incomplete: Some("a partition still held".into()),
        ..Context::default()
    };
    let v = grade(
        &(0..5).collect::<Vec<_>>(),
        committed_0_to_10(5)
            .into_iter()
            .chain([finished(6, true)])
            .collect(),
        &ctx,
    );
    assert_eq!(v.status, Status::Inconclusive);
    assert_eq!(v.missing[0].cause, Cause::Harness);
}

#[test]
fn row_no_outcome_is_harness_inconclusive() {
    let h = vec![opened(0, 1, T1, vec![(0, 10)], None), finished(6, false)];
    let v = grade(&[], h, &Context::default());
    assert_eq!(v.status, Status::Inconclusive);
    assert_eq!(v.missing[0].cause, Cause::Harness);
}

#[test]
fn row_never_sent_is_harness_inconclusive() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 5)], None),
        outcome(1, 1, T1, Outcome::Committed, "ok"),
        finished(2, true),
    ];
    let v = grade(&(0..5).collect::<Vec<_>>(), h, &Context::default());
    assert_eq!(v.status, Status::Inconclusive);
    assert_eq!(v.missing[0].cause, Cause::Harness);
    assert!(
        v.missing[0].explanation.contains("never sent"),
        "{}",
        v.missing[0].explanation
    );
}

#[test]
fn row_sabotage_is_a_violation_by_design() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 7), (8, 10)], None),
        outcome(1, 1, T1, Outcome::Committed, "ok"),
        finished(2, true),
    ];
    let ctx = Context {
        sabotage_skip: [7].into_iter().collect(),
        ..Context::default()
    };
    let read: Vec<u64> = (0..10).filter(|n| *n != 7).collect();
    let v = grade(&read, h, &ctx);
    assert_eq!(v.status, Status::Violation);
    assert_eq!(v.missing[0].cause, Cause::Sabotage);
}

#[test]
fn row_no_history_is_the_range_check_alone() {
    let v = verdict(
        tally_of(10, &(0..9).collect::<Vec<_>>()),
        None::<Vec<Result<Event, String>>>,
        &Context::default(),
    );
    assert_eq!(v.status, Status::Violation);
    assert_eq!(v.missing[0].cause, Cause::Unknown);
    assert!(
        !v.missing[0].explanation.contains("Pulsar"),
        "{}",
        v.missing[0].explanation
    );
}

#[test]
fn row_unexpected_payloads_are_a_violation() {
    let mut t = Tally::new(10);
    for i in 0..10u64 {
        t.observe(i.to_string().as_bytes(), id(i));
    }
    t.observe(b"hello", id(99));
    let v = verdict(
        t.finish().unwrap(),
        Some(ok(committed_0_to_10(5)
            .into_iter()
            .chain([finished(6, true)])
            .collect())),
        &Context::default(),
    );
    assert_eq!(v.status, Status::Violation);
}

#[test]
fn row_no_anomaly_but_the_producer_stopped_is_inconclusive() {
    let v = grade(
        &(0..10).collect::<Vec<_>>(),
        committed_0_to_10(5)
            .into_iter()
            .chain([finished(6, false)])
            .collect(),
        &Context::default(),
    );
    assert_eq!(v.status, Status::Inconclusive);
}

#[test]
fn row_read_proved_invisible_then_readable_is_pulsar() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(5, 1, T1, Outcome::Ambiguous, "timed out"),
        ev(
            6,
            EventBody::TxnResolved {
                attempt: 1,
                txn: T1,
                resolved: Outcome::Aborted,
                how: "read-back: none of its 10 messages is visible".into(),
            },
        ),
        resend(6, 1, vec![(0, 10)], "the commit did not apply"),
        opened(7, 2, T2, vec![(0, 10)], Some(1)),
        outcome(8, 2, T2, Outcome::Committed, "ok"),
        finished(9, true),
    ];
    let v = grade(&twice(), h, &Context::default());
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
}

#[test]
fn row_no_transaction_resend_after_a_failed_send_is_ambiguity() {
    let t = TxnId {
        most: NO_TXN,
        least: 1,
    };
    let h = vec![
        opened(0, 1, t, vec![(0, 10)], None),
        outcome(
            1,
            1,
            t,
            Outcome::Aborted,
            "a SEND failed (no transaction: the sent messages stay)",
        ),
        resend(1, 1, vec![(0, 10)], "a SEND failed"),
        opened(
            2,
            2,
            TxnId {
                most: NO_TXN,
                least: 2,
            },
            vec![(0, 10)],
            Some(1),
        ),
        outcome(
            3,
            2,
            TxnId {
                most: NO_TXN,
                least: 2,
            },
            Outcome::Committed,
            "no transaction",
        ),
        finished(4, true),
    ];
    assert_eq!(
        grade(&twice(), h, &Context::default()).duplicates[0].cause,
        Cause::Ambiguity
    );
}

#[test]
fn a_reply_the_harness_dropped_is_quoted_as_evidence() {
    let mut h = history_19629();
    h.insert(
        2,
        ev(
            9,
            EventBody::ReplyDropped {
                fault: "lose-commit-reply#1".into(),
                command: "END_TXN_RESPONSE".into(),
                request_id: 7,
                txn: Some(T1),
            },
        ),
    );
    let v = grade(&twice(), h, &Context::default());
    assert_eq!(v.duplicates[0].cause, Cause::Ambiguity);
    assert!(
        v.duplicates[0].evidence[0].contains("END_TXN_RESPONSE dropped by lose-commit-reply#1"),
        "{:?}",
        v.duplicates[0].evidence
    );
}

// ---- Broker log lines quoted under anomalies (issue 18) ----

fn lwm_line(txn: TxnId, line: u64) -> crate::brokerlog::TxnLog {
    crate::brokerlog::TxnLog {
        txn,
        named: vec![crate::brokerlog::BrokerLine {
            node: "standalone".into(),
            file: "logs/standalone.log".into(),
            line,
            level: "WARN".into(),
            time: "2026-11-30T16:37:09,076".into(),
            message: format!("TopicTransactionBuffer: Successes to abort low water mark for txn [{txn}], topic [persistent://public/default/eos-lwm-78ef54aa-partition-2], lowWaterMark [225]"),
        }],
        named_more: 0,
        during: Vec::new(),
        during_more: 0,
    }
}

/// A transaction confirmed committed, its numbers gone, and the broker's line saying its
/// transaction buffer aborted it: the line is quoted under the anomaly and named in words.
#[test]
fn a_lost_committed_transaction_quotes_the_brokers_low_water_mark_abort() {
    let h: Vec<Event> = committed_0_to_10(5)
        .into_iter()
        .chain([finished(6, true)])
        .collect();
    let ctx = Context {
        broker_log: vec![lwm_line(T1, 599), lwm_line(T2, 600)],
        ..Context::default()
    };
    let v = grade(&(5..10).collect::<Vec<_>>(), h.clone(), &ctx);
    assert_eq!(v.status, Status::Violation);
    let m = &v.missing[0];
    assert_eq!(m.cause, Cause::Pulsar);
    // Only the lines of the anomaly's own transaction.
    assert_eq!(m.broker_log, vec![lwm_line(T1, 599)]);
    assert!(
        m.explanation.starts_with(
            "transaction #1 (0,1) was confirmed committed by the coordinator, yet its numbers are not readable: Pulsar lost committed data; the broker's transaction buffer aborted, by its low-water-mark rule, a transaction the coordinator had confirmed committed: (0,1) on eos-lwm-78ef54aa-partition-2 (logs/standalone.log:599)"
        ),
        "{}",
        m.explanation
    );
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(
        json["missing"][0]["broker_log"][0]["named"][0]["line"], 599,
        "{json}"
    );
    // Without lines: the explanation as before, and no `broker_log` key in verdict.json.
    let plain = grade(&(5..10).collect::<Vec<_>>(), h, &Context::default());
    assert!(plain.missing[0].broker_log.is_empty());
    assert!(!plain.missing[0].explanation.contains("low-water-mark"));
    assert!(!serde_json::to_string(&plain)
        .unwrap()
        .contains("broker_log"));
}

/// Regression guard: broker lines are evidence, never a cause. An attempt that learned no
/// outcome stays the harness's (inconclusive) even when the broker says it aborted it.
#[test]
fn broker_lines_never_turn_a_harness_anomaly_into_pulsars() {
    let h = vec![opened(0, 1, T1, vec![(0, 10)], None), finished(6, false)];
    let ctx = Context {
        broker_log: vec![lwm_line(T1, 42)],
        ..Context::default()
    };
    let v = grade(&[], h, &ctx);
    assert_eq!(v.status, Status::Inconclusive);
    assert_eq!(v.missing[0].cause, Cause::Harness);
    assert!(!v.missing[0].explanation.contains("low-water-mark"));
    assert_eq!(v.missing[0].broker_log, vec![lwm_line(T1, 42)]);
}

#[test]
fn duplicates_quote_the_lines_of_their_transactions() {
    let h = vec![
        opened(0, 1, T1, vec![(0, 10)], None),
        outcome(1, 1, T1, Outcome::Committed, "ok"),
        opened(2, 2, T2, vec![(0, 10)], None),
        outcome(3, 2, T2, Outcome::Committed, "ok"),
        finished(4, true),
    ];
    let t3 = TxnId { most: 0, least: 3 };
    let ctx = Context {
        broker_log: vec![lwm_line(T2, 7), lwm_line(t3, 8)],
        ..Context::default()
    };
    let v = grade(&twice(), h, &ctx);
    assert_eq!(v.duplicates[0].cause, Cause::Pulsar);
    assert_eq!(v.duplicates[0].broker_log, vec![lwm_line(T2, 7)]);
    // A duplicate's explanation names no known cause (the pattern is about lost commits).
    assert!(!v.duplicates[0].explanation.contains("low-water-mark"));
}

/// A context stored before broker lines existed loads, with none.
#[test]
fn a_context_without_broker_lines_loads() {
    let ctx: Context = serde_json::from_str(r#"{"seed":4,"stall_log":[]}"#).unwrap();
    assert!(ctx.broker_log.is_empty());
    assert!(!serde_json::to_string(&ctx).unwrap().contains("broker_log"));
}

#[test]
fn an_attempt_is_scanned_for_in_the_brokers_logs_unless_it_is_the_placeholder() {
    let mut a = AttemptRecord {
        attempt: 1,
        txn: TxnId {
            most: 0,
            least: 223,
        },
        numbers: vec![(0, 10)],
        opened_ms: 6_230,
        outcome_ms: Some(7_234),
        ended_ms: Some(7_234),
        outcome: Some(Outcome::Committed),
        detail: String::new(),
        resolved: None,
        commit_tries: 1,
        resent: false,
        resend_reason: None,
        withheld: false,
        withheld_reason: None,
        replies_dropped: Vec::new(),
        faults: Vec::new(),
    };
    assert_eq!(
        a.opened(),
        Some(crate::brokerlog::Opened {
            txn: TxnId {
                most: 0,
                least: 223
            },
            opened_ms: 6_230,
            outcome_ms: Some(7_234),
        })
    );
    a.txn.most = NO_TXN;
    assert_eq!(a.opened(), None);
}
