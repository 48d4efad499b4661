//! Checker micro-benchmark (issue 6): how fast the streaming [`Tally`] counts numbers, and how
//! much memory it holds while doing so.
//!
//! ```text
//! CARGO_TARGET_DIR=/work/target-bench cargo bench --bench checker
//! CARGO_TARGET_DIR=/work/target-bench cargo bench --bench checker -- --n 10000000 --runs 1
//! CARGO_TARGET_DIR=/work/target-bench cargo bench --bench checker -- --cases shuffled-10k --json
//! ```
//!
//! Options (after `--`): `--n N` (default 100,000,000; or env `CHECKER_BENCH_N`), `--runs R`
//! (default 3; env `CHECKER_BENCH_RUNS`), `--cases a,b` (default: all), `--json` (also print a
//! JSON document), `--cpu C` (the core to pin to; default 1, or 0 on a one-core machine),
//! `--no-pin`, `--no-scaling` (skip the in-order row at N/10), `--no-gen` (skip the
//! generator-only runs).
//!
//! Every run of every case is its own child process (this binary re-executed with `--child`),
//! so the peak resident set (VmHWM, read from /proc/self/status at the end of the case) belongs
//! to that case alone. The parent pins itself to one core with sched_setaffinity before it
//! spawns the children, which inherit the mask (the same as `taskset -c 1 <bench binary>`).
//!
//! The generators never materialise the N numbers: the shuffled case shuffles one 10,000-number
//! window at a time in a reused buffer (40 KB), the payload case increments one 100-byte ASCII
//! buffer in place. Each case's generator also runs alone (feeding a black box instead of the
//! tally) so its share of the time can be told apart from the checker's.
//!
//! Every child checks the [`Findings`] against what it planted (no missing number, exactly the
//! planted duplicates, nothing unexpected), and fails loudly otherwise, so the benchmark can't
//! silently measure a broken checker.

use std::hint::black_box;
use std::process::{Command, ExitCode};
use std::time::Instant;

use pulsar_chaos::checker::{DupSpan, Findings, MsgId, Tally, LIST_CAP};

const DEFAULT_N: u64 = 100_000_000;
/// The shuffled case shuffles each consecutive window of this many numbers.
const WINDOW: u64 = 10_000;
/// The duplicate case delivers every DUP_EVERY-th number a second time...
const DUP_EVERY: u64 = 1000;
/// ...right after the number DUP_LAG places after it (i.e. 1000k is re-sent after 1000k+9).
const DUP_LAG: u64 = 9;
/// Payload size of the payload case (the producer's default message size).
const PAYLOAD: usize = 100;
/// Partitions of the partitioned case (read back one partition after the other).
const PARTITIONS: u64 = 4;
const SEED: u64 = 0x6368_6563_6b65_7221;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Case {
    InOrder,
    Shuffled,
    Duplicates,
    Payload,
    Partitioned,
}

const ALL: [Case; 5] = [
    Case::InOrder,
    Case::Shuffled,
    Case::Duplicates,
    Case::Payload,
    Case::Partitioned,
];

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::InOrder => "in-order",
            Case::Shuffled => "shuffled-10k",
            Case::Duplicates => "dup-0.1%",
            Case::Payload => "payload-100B",
            Case::Partitioned => "partitioned-4",
        }
    }

    fn parse(s: &str) -> Option<Case> {
        ALL.iter().copied().find(|c| c.name() == s)
    }

    fn describe(self) -> &'static str {
        match self {
            Case::InOrder => "0..N in order, observe_value",
            Case::Shuffled => "each consecutive 10,000-number window shuffled (seeded Fisher-Yates), observe_value",
            Case::Duplicates => "0..N in order, every 1000th number (1000k) re-sent once more right after 1000k+9, observe_value",
            Case::Payload => "0..N in order through observe(payload, id): decimal ASCII padded with spaces to 100 bytes",
            Case::Partitioned => "the read-back order of a 4-partition topic: n mod 4 == 0 ascending, then == 1, == 2, == 3 (observe_value)",
        }
    }
}

/// SplitMix64 with Lemire's multiply-shift for bounded draws (cheap and deterministic).
struct Rng(u64);

impl Rng {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// In [0, n) (n <= 2^32; the tiny bias of plain multiply-shift does not matter here).
    #[inline]
    fn below(&mut self, n: u32) -> u32 {
        (((self.next_u64() >> 32) * u64::from(n)) >> 32) as u32
    }
}

/// Feed the case's numbers, in the case's order, to `sink`.
fn gen_values(case: Case, n: u64, mut sink: impl FnMut(u64)) {
    match case {
        Case::InOrder => {
            for v in 0..n {
                sink(black_box(v));
            }
        }
        Case::Shuffled => {
            let mut rng = Rng(SEED);
            let mut buf: Vec<u32> = Vec::with_capacity(WINDOW as usize);
            let mut base = 0;
            while base < n {
                let len = WINDOW.min(n - base) as u32;
                buf.clear();
                buf.extend(0..len);
                for i in (1..len).rev() {
                    let j = rng.below(i + 1);
                    buf.swap(i as usize, j as usize);
                }
                for &off in &buf {
                    sink(black_box(base + u64::from(off)));
                }
                base += WINDOW;
            }
        }
        Case::Duplicates => {
            for v in 0..n {
                sink(black_box(v));
                if v % DUP_EVERY == DUP_LAG {
                    sink(black_box(v - DUP_LAG));
                }
            }
        }
        Case::Partitioned => {
            for p in 0..PARTITIONS.min(n) {
                let mut v = p;
                while v < n {
                    sink(black_box(v));
                    v += PARTITIONS;
                }
            }
        }
        Case::Payload => unreachable!("the payload case feeds payloads"),
    }
}

/// Feed 0..n as the producer's payloads (decimal ASCII, space-padded to 100 bytes) with
/// plausible message ids. The buffer is incremented in place, not formatted anew.
fn gen_payloads(n: u64, mut sink: impl FnMut(&[u8], MsgId)) {
    let mut buf = [b' '; PAYLOAD];
    buf[0] = b'0';
    let mut digits = 1;
    let mut id = MsgId {
        partition: -1,
        ledger: 7,
        entry: 0,
        batch: 0,
    };
    for _ in 0..n {
        sink(black_box(&buf[..]), id);
        // Next message id: batches of 100 messages per entry.
        id.batch += 1;
        if id.batch == 100 {
            id.batch = 0;
            id.entry += 1;
        }
        // Decimal increment of buf[..digits].
        let mut i = digits;
        loop {
            if i == 0 {
                // All nines: 99 -> 100.
                buf[0] = b'1';
                buf[digits] = b'0';
                digits += 1;
                break;
            }
            i -= 1;
            if buf[i] == b'9' {
                buf[i] = b'0';
            } else {
                buf[i] += 1;
                break;
            }
        }
    }
}

/// What the case's findings must be.
fn verify(case: Case, n: u64, f: &Findings) -> Result<(), String> {
    let mut problems = Vec::new();
    let mut check = |what: &str, got: u64, want: u64| {
        if got != want {
            problems.push(format!("{what}: got {got}, want {want}"));
        }
    };
    let planted = if case == Case::Duplicates && n > DUP_LAG {
        (n - DUP_LAG - 1) / DUP_EVERY + 1
    } else {
        0
    };
    check("expected", f.expected, n);
    check("received", f.received, n + planted);
    check("distinct", f.distinct, n);
    check("missing_total", f.missing_total, 0);
    check("missing listed", f.missing.len() as u64, 0);
    check("unexpected_total", f.unexpected_total, 0);
    check("duplicate_values", f.duplicate_values, planted);
    check("duplicate_copies", f.duplicate_copies, planted);
    let want: Vec<DupSpan> = (0..planted.min(LIST_CAP as u64))
        .map(|k| DupSpan {
            start: k * DUP_EVERY,
            end: k * DUP_EVERY + 1,
            copies: 2,
        })
        .collect();
    if f.duplicates != want {
        problems.push(format!(
            "duplicates listed: got {} entries starting {:?}, want {} starting {:?}",
            f.duplicates.len(),
            f.duplicates.iter().take(3).collect::<Vec<_>>(),
            want.len(),
            want.iter().take(3).collect::<Vec<_>>()
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// A field of /proc/self/status in kB.
fn status_kb(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|&c| set.is_set(c))
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn pin_to(cpu: usize) -> Result<(), String> {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set).map_err(|e| e.to_string())
}

/// One run of one case, in this (child) process. Prints one JSON line.
fn child(case: Case, n: u64, gen_only: bool) -> ExitCode {
    let rss_start = status_kb("VmRSS");
    let t0 = Instant::now();
    let mut finish_s = 0.0;
    let mut messages: u64 = 0;
    if gen_only {
        // The generator alone, feeding a black box: its cost per number.
        let mut acc = 0u64;
        if case == Case::Payload {
            gen_payloads(n, |p, id| {
                acc = acc.wrapping_add(u64::from(p[0])).wrapping_add(id.entry);
                messages += 1;
            });
        } else {
            gen_values(case, n, |v| {
                acc ^= v;
                messages += 1;
            });
        }
        black_box(acc);
    } else {
        let mut tally = Tally::new(n);
        if case == Case::Payload {
            gen_payloads(n, |p, id| tally.observe(p, id));
        } else {
            gen_values(case, n, |v| tally.observe_value(v));
        }
        messages = tally.received();
        let tf = Instant::now();
        let findings = tally.finish().expect("the counts add up");
        finish_s = tf.elapsed().as_secs_f64();
        if let Err(e) = verify(case, n, &findings) {
            eprintln!(
                "checker-bench: {} at n={n}: WRONG FINDINGS: {e}",
                case.name()
            );
            return ExitCode::from(2);
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let hwm = status_kb("VmHWM");
    let cpu = rustix::thread::sched_getcpu();
    println!(
        "{}",
        serde_json::json!({
            "case": case.name(), "n": n, "messages": messages, "gen_only": gen_only,
            "secs": secs, "finish_secs": finish_s, "rss_start_kb": rss_start,
            "hwm_kb": hwm, "cpu_at_end": cpu,
        })
    );
    ExitCode::SUCCESS
}

#[derive(Debug, Clone)]
struct Run {
    secs: f64,
    finish_secs: f64,
    messages: u64,
    rss_start_kb: u64,
    hwm_kb: u64,
}

fn spawn(case: Case, n: u64, gen_only: bool) -> Result<Run, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    cmd.args(["--child", case.name(), "--n", &n.to_string()]);
    if gen_only {
        cmd.arg("--gen-only");
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "{} (n={n}) failed ({}): {}",
            case.name(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let line = String::from_utf8_lossy(&out.stdout);
    let j: serde_json::Value = serde_json::from_str(line.trim()).map_err(|e| e.to_string())?;
    let f = |k: &str| j[k].as_f64().unwrap_or(f64::NAN);
    let u = |k: &str| j[k].as_u64().unwrap_or(0);
    Ok(Run {
        secs: f("secs"),
        finish_secs: f("finish_secs"),
        messages: u("messages"),
        rss_start_kb: u("rss_start_kb"),
        hwm_kb: u("hwm_kb"),
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

struct Row {
    label: String,
    n: u64,
    runs: Vec<Run>,
    gen: Vec<Run>,
}

impl Row {
    /// Messages (numbers observed, duplicates included) per second, each run.
    fn rates(&self) -> Vec<f64> {
        self.runs
            .iter()
            .map(|r| r.messages as f64 / r.secs)
            .collect()
    }
    fn ns_per(&self) -> f64 {
        median(
            self.runs
                .iter()
                .map(|r| r.secs * 1e9 / r.messages as f64)
                .collect(),
        )
    }
    fn gen_ns_per(&self) -> Option<f64> {
        if self.gen.is_empty() {
            return None;
        }
        Some(median(
            self.gen
                .iter()
                .map(|r| r.secs * 1e9 / r.messages as f64)
                .collect(),
        ))
    }
    fn hwm_mb(&self) -> f64 {
        median(self.runs.iter().map(|r| r.hwm_kb as f64 / 1024.0).collect())
    }
    fn start_mb(&self) -> f64 {
        median(
            self.runs
                .iter()
                .map(|r| r.rss_start_kb as f64 / 1024.0)
                .collect(),
        )
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: checker [--n N] [--runs R] [--cases {}] [--json] [--cpu C | --no-pin] [--no-scaling] [--no-gen]",
        ALL.iter().map(|c| c.name()).collect::<Vec<_>>().join(",")
    );
    std::process::exit(64);
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let env_u64 = |k: &str| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.replace('_', "").parse().ok())
    };
    let mut n: u64 = env_u64("CHECKER_BENCH_N").unwrap_or(DEFAULT_N);
    let mut runs: usize = env_u64("CHECKER_BENCH_RUNS").map_or(3, |r| r as usize);
    let mut cases: Vec<Case> = ALL.to_vec();
    let (mut json, mut pin, mut scaling, mut gen) = (false, true, true, true);
    let mut cpu: Option<usize> = None;
    let mut child_case: Option<Case> = None;
    let mut gen_only = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().unwrap_or_else(|| usage());
        match a.as_str() {
            "--n" => n = val().replace('_', "").parse().unwrap_or_else(|_| usage()),
            "--runs" => runs = val().parse().unwrap_or_else(|_| usage()),
            "--cases" => {
                cases = val()
                    .split(',')
                    .map(|c| Case::parse(c).unwrap_or_else(|| usage()))
                    .collect()
            }
            "--cpu" => cpu = Some(val().parse().unwrap_or_else(|_| usage())),
            "--json" => json = true,
            "--no-pin" => pin = false,
            "--no-scaling" => scaling = false,
            "--no-gen" => gen = false,
            "--child" => child_case = Some(Case::parse(&val()).unwrap_or_else(|| usage())),
            "--gen-only" => gen_only = true,
            // cargo bench passes --bench to harness = false targets.
            "--bench" => {}
            _ => usage(),
        }
    }
    if let Some(c) = child_case {
        return child(c, n, gen_only);
    }
    let runs = runs.max(1);

    let allowed = allowed_cpus();
    let pinned = if pin {
        let want = cpu.unwrap_or(if allowed.contains(&1) {
            1
        } else {
            allowed.first().copied().unwrap_or(0)
        });
        match pin_to(want) {
            Ok(()) => format!("pinned to CPU {want} (sched_setaffinity; children inherit it)"),
            Err(e) => format!("NOT pinned (sched_setaffinity to CPU {want} failed: {e})"),
        }
    } else {
        "not pinned (--no-pin)".to_string()
    };
    eprintln!("checker bench: N = {n}, {runs} run(s) per case, {pinned}");

    let mut jobs: Vec<(String, Case, u64)> = Vec::new();
    for &c in &cases {
        jobs.push((c.name().to_string(), c, n));
        if c == Case::InOrder && scaling && n >= 10 {
            jobs.push((format!("{} (N/10)", c.name()), c, n / 10));
        }
    }
    let mut rows: Vec<Row> = Vec::new();
    let mut failed = false;
    for (label, case, n) in jobs {
        let mut row = Row {
            label,
            n,
            runs: Vec::new(),
            gen: Vec::new(),
        };
        for i in 0..runs {
            match spawn(case, n, false) {
                Ok(r) => {
                    eprintln!(
                        "  {:<18} run {}: {:>7.1} M/s, {:>6.3} s (finish {:.4} s), VmHWM {:.1} MB",
                        row.label,
                        i + 1,
                        r.messages as f64 / r.secs / 1e6,
                        r.secs,
                        r.finish_secs,
                        r.hwm_kb as f64 / 1024.0
                    );
                    row.runs.push(r);
                }
                Err(e) => {
                    eprintln!("  {e}");
                    failed = true;
                    break;
                }
            }
            if gen {
                match spawn(case, n, true) {
                    Ok(r) => row.gen.push(r),
                    Err(e) => eprintln!("  generator-only run failed: {e}"),
                }
            }
        }
        if !row.runs.is_empty() {
            rows.push(row);
        }
    }

    println!();
    println!(
        "{:<20} {:>12} {:>11} {:>22} {:>9} {:>9} {:>10} {:>10}",
        "case", "N", "M msgs/s", "(min..max of runs)", "ns/msg", "gen ns", "VmHWM MB", "start MB"
    );
    for r in &rows {
        let rates = r.rates();
        let lo = rates.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = rates.iter().cloned().fold(0.0, f64::max);
        println!(
            "{:<20} {:>12} {:>11.1} {:>22} {:>9.2} {:>9} {:>10.1} {:>10.1}",
            r.label,
            r.n,
            median(rates.clone()) / 1e6,
            format!("({:.1}..{:.1})", lo / 1e6, hi / 1e6),
            r.ns_per(),
            r.gen_ns_per().map_or("-".into(), |g| format!("{g:.2}")),
            r.hwm_mb(),
            r.start_mb()
        );
    }
    println!(
        "\nmsgs = numbers observed (duplicates included); median of {runs} run(s), each its own process; \
         ns/msg includes the generator, whose cost alone is 'gen ns'; VmHWM = peak RSS of the case's process, \
         'start MB' = its RSS before the case began."
    );
    for c in &cases {
        println!("  {:<14} {}", c.name(), c.describe());
    }
    if json {
        let doc = serde_json::json!({
            "n": n, "runs": runs, "pinning": pinned,
            "results": rows.iter().map(|r| serde_json::json!({
                "case": r.label, "n": r.n,
                "msgs_per_sec_median": median(r.rates()),
                "msgs_per_sec_runs": r.rates(),
                "ns_per_msg_median": r.ns_per(),
                "generator_ns_per_msg_median": r.gen_ns_per(),
                "finish_secs_runs": r.runs.iter().map(|x| x.finish_secs).collect::<Vec<_>>(),
                "vmhwm_kb_runs": r.runs.iter().map(|x| x.hwm_kb).collect::<Vec<_>>(),
                "rss_start_kb_runs": r.runs.iter().map(|x| x.rss_start_kb).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap());
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
