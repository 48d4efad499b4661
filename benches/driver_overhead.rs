//! The driver's own cost per transaction (issue 31): what going through a driver process costs
//! the harness, with no Pulsar in the loop.
//!
//! ```text
//! cargo bench --locked --bench driver_overhead
//! cargo bench --locked --bench driver_overhead -- --client go --txn-size 100 --seconds 20
//! bench/driver-overhead.sh        # java and go, T=10 and T=100, into bench/results/
//! ```
//!
//! The driver (built as a run builds it, from the cache when its inputs are unchanged) is
//! started through the harness's own [`Driver`] and never sent `connect`, so it answers every
//! request at once with a refusal (Java `NotConnected`, Go `BadRequest`) instead of asking a
//! client. What is timed is then everything a request costs besides the client: the harness
//! encodes the JSON line, hands it to the writer task, the pipe carries it, the driver parses it
//! on its reader thread, dispatches, writes its reply line, and the harness's reader parses it
//! and wakes the waiting request. Not timed: the client's own work (the driver's calls into
//! it, which a real run makes on the same reader thread for `send`) and the `ids` a successful
//! `send` carries back (three integers per message).
//!
//! Two measures, each after a warm-up of `--warmup` seconds (the JVM's JIT):
//! - **per transaction**: `--workers` tasks, each opening a "transaction" as a producer worker
//!   does, one request after the other — `new_txn`, `register`, `send` of `--txn-size`
//!   numbers, `commit` — so the figure is the protocol's latency per transaction, to set beside
//!   a real transaction's (section 6 of BENCHMARKS.md);
//! - **pipelined**: `--inflight` requests kept in flight (`send` of `--txn-size` numbers), so
//!   the figure is how many requests a second the driver's reader can take, its ceiling.
//!
//! Options (after `--`): `--client java|go` (default java), `--version V` (the Java client's;
//! default 4.2.4), `--txn-size T` (10), `--workers W` (4), `--inflight N` (64), `--seconds S`
//! (10, each measure), `--warmup S` (3), `--json` (a JSON document on a second line).
//!
//! Every answer is checked: a refusal of the expected kind, or the benchmark fails (a timeout,
//! a driver gone or a success would mean it measured something else).

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pulsar_chaos::drivers::{self, Answer, ClientKind, Driver, Spec};
use pulsar_chaos::history::TxnId;

const TIMEOUT: Duration = Duration::from_secs(10);

struct Opts {
    kind: ClientKind,
    version: String,
    txn_size: u64,
    workers: usize,
    inflight: usize,
    seconds: f64,
    warmup: f64,
    json: bool,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        kind: ClientKind::Java,
        version: "4.2.4".into(),
        txn_size: 10,
        workers: 4,
        inflight: 64,
        seconds: 10.0,
        warmup: 3.0,
        json: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--client" => {
                o.kind = match value()?.as_str() {
                    "java" => ClientKind::Java,
                    "go" => ClientKind::Go,
                    v => return Err(format!("--client: java or go, not {v}")),
                }
            }
            "--version" => o.version = value()?,
            "--txn-size" => o.txn_size = value()?.parse().map_err(|e| format!("{a}: {e}"))?,
            "--workers" => o.workers = value()?.parse().map_err(|e| format!("{a}: {e}"))?,
            "--inflight" => o.inflight = value()?.parse().map_err(|e| format!("{a}: {e}"))?,
            "--seconds" => o.seconds = value()?.parse().map_err(|e| format!("{a}: {e}"))?,
            "--warmup" => o.warmup = value()?.parse().map_err(|e| format!("{a}: {e}"))?,
            "--json" => o.json = true,
            // `cargo bench` passes this to every bench target.
            "--bench" => {}
            _ => return Err(format!("unknown option {a}")),
        }
    }
    if o.kind == ClientKind::Go {
        o.version = pulsar_chaos::clients::GO_VERSION.to_string();
    }
    if o.txn_size == 0 || o.workers == 0 || o.inflight == 0 || o.seconds <= 0.0 {
        return Err("--txn-size, --workers, --inflight and --seconds must be positive".into());
    }
    Ok(o)
}

/// A refusal the driver gives without asking its client; anything else ends the benchmark.
fn refused(what: &str, r: Result<impl std::fmt::Debug, Answer>) -> Result<(), String> {
    const REFUSALS: [&str; 3] = ["NotConnected", "BadRequest", "UnknownTxn"];
    match r {
        Err(Answer::Client(e)) if REFUSALS.contains(&e.class.as_str()) => Ok(()),
        Err(other) => Err(format!("{what}: not a refusal: {other}")),
        Ok(v) => Err(format!("{what}: answered {v:?} without a client")),
    }
}

/// One worker's transaction: the four requests a producer worker makes, one after the other.
async fn transaction(d: &Driver, n: u64, numbers: &[u64]) -> Result<(), String> {
    let txn = TxnId { most: 0, least: n };
    refused("new_txn", d.new_txn(Duration::from_secs(60), TIMEOUT).await)?;
    let deadline = tokio::time::Instant::now();
    refused("register", d.register(txn, &[0], &[], deadline).await)?;
    refused("send", d.send(Some(txn), 0, numbers, TIMEOUT).await)?;
    refused("commit", d.end(txn, true, TIMEOUT).await)
}

struct Measure {
    count: u64,
    secs: f64,
    latencies_us: Vec<f64>,
}

impl Measure {
    fn rate(&self) -> f64 {
        self.count as f64 / self.secs
    }
    fn quantile(&self, q: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return 0.0;
        }
        let mut v = self.latencies_us.clone();
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * q).round() as usize]
    }
}

/// `tasks` tasks, each repeating `one` until `secs` have passed; latencies kept when `keep`.
async fn drive<F, Fut>(tasks: usize, secs: f64, keep: bool, one: F) -> Result<Measure, String>
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), String>> + Send,
{
    let one = Arc::new(one);
    let stop = Arc::new(AtomicBool::new(false));
    let next = Arc::new(AtomicU64::new(1));
    let started = Instant::now();
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let (one, stop, next) = (one.clone(), stop.clone(), next.clone());
        handles.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut count = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                one(next.fetch_add(1, Ordering::Relaxed)).await?;
                if keep {
                    lat.push(t.elapsed().as_secs_f64() * 1e6);
                }
                count += 1;
            }
            Ok::<_, String>((count, lat))
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let mut m = Measure {
        count: 0,
        secs: 0.0,
        latencies_us: Vec::new(),
    };
    for h in handles {
        let (count, lat) = h.await.map_err(|e| e.to_string())??;
        m.count += count;
        m.latencies_us.extend(lat);
    }
    m.secs = started.elapsed().as_secs_f64();
    Ok(m)
}

async fn bench(o: &Opts) -> Result<(), String> {
    let spec = Spec {
        kind: o.kind,
        version: o.version.clone(),
    };
    let built = drivers::build(&spec).await.map_err(|e| e.to_string())?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let driver = Arc::new(
        Driver::start(
            &built,
            pulsar_chaos::drivers::Jit::Full,
            &dir.path().join("driver.log"),
        )
        .await
        .map_err(|e| e.to_string())?,
    );
    let numbers: Arc<Vec<u64>> = Arc::new((0..o.txn_size).collect());

    let per_txn = {
        let (d, n) = (driver.clone(), numbers.clone());
        move |i: u64| {
            let (d, n) = (d.clone(), n.clone());
            async move { transaction(&d, i, &n).await }
        }
    };
    let pipelined = {
        let (d, n) = (driver.clone(), numbers.clone());
        move |i: u64| {
            let (d, n) = (d.clone(), n.clone());
            async move {
                let txn = TxnId { most: 0, least: i };
                refused("send", d.send(Some(txn), 0, &n, TIMEOUT).await)
            }
        }
    };
    if o.warmup > 0.0 {
        drive(o.workers, o.warmup, false, per_txn.clone()).await?;
        drive(o.inflight, o.warmup, false, pipelined.clone()).await?;
    }
    let txns = drive(o.workers, o.seconds, true, per_txn).await?;
    let reqs = drive(o.inflight, o.seconds, false, pipelined).await?;
    driver.close(Duration::from_secs(2)).await;

    let h = &driver.hello;
    let p50 = txns.quantile(0.5);
    let p99 = txns.quantile(0.99);
    println!(
        "{} {} ({}), T={}: {} workers, {:.0} transactions/s of four requests each, \
         {:.0} us per transaction (p50; p99 {:.0} us); {} in flight: {:.0} sends/s",
        h.client,
        h.version,
        h.library,
        o.txn_size,
        o.workers,
        txns.rate(),
        p50,
        p99,
        o.inflight,
        reqs.rate()
    );
    if o.json {
        println!(
            "{}",
            serde_json::json!({
                "client": h.client, "library": h.library, "version": h.version,
                "txn_size": o.txn_size, "workers": o.workers, "inflight": o.inflight,
                "seconds": o.seconds,
                "txns_per_s": txns.rate(), "txn_us_p50": p50, "txn_us_p99": p99,
                "pipelined_requests_per_s": reqs.rate(),
            })
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("driver_overhead: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    match rt.block_on(bench(&o)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("driver_overhead: {e}");
            ExitCode::FAILURE
        }
    }
}
