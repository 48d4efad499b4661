//! report.html as a browser sees it: a synthetic run directory is rendered through the
//! library, then opened offline in headless Chromium (Debian package `chromium`), which takes a
//! screenshot and dumps the parsed DOM. Chromium missing is a failure, not a skip.
//!
//! Set `REPORT_HTML_KEEP=1` to keep the run directory and the screenshot (their paths are
//! printed).

#[path = "support/scratch.rs"]
mod scratch;

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pulsar_chaos::checker::{self, Context, Status, Tally, Verdict};
use pulsar_chaos::history::{Event, EventBody, Outcome, TxnId};
use pulsar_chaos::report::IndexRow;
use pulsar_chaos::rundir::{RunDir, RunInfo};

const SCENARIO: &str = "\
name: report-browser
cluster: { topology: cluster, brokers: 3, bookies: 2 }
workload:
  topic: persistent://public/default/report-browser
  messages: 40000
  txn_size: 50
faults:
  - kind: broker_restart
    name: restart
    mode: kill
    down_for: 8s
    target: owner-of-topic
    schedule: { at: [20s] }
  - kind: packet_loss
    name: loss
    percent: 30
    duration: 10s
    schedule: { at: [50s] }
  - kind: topic_unload
    name: unload
    schedule: { at: [75s] }
  - kind: pause
    name: pause
    duration: 30s
    target: any-bookie
    schedule: { at: [85s] }
  - kind: bookie_restart
    name: bookie
    schedule: { at: [89s] }
";

/// Fault firings of the synthetic run: (name, kind, target, start, heal, action, heal action).
#[allow(clippy::type_complexity)]
const FAULTS: [(&str, &str, &str, u64, Option<u64>, &str, &str); 4] = [
    (
        "restart#1",
        "broker_restart",
        "broker-2 (owner of the topic)",
        20_000,
        Some(28_000),
        "docker kill --signal SIGKILL pc-4f2a-broker-2",
        "docker start pc-4f2a-broker-2",
    ),
    (
        "loss#1",
        "packet_loss",
        "broker-1",
        50_000,
        Some(60_000),
        "docker exec pc-4f2a-broker-1 tc qdisc add dev eth0 root netem loss 30%",
        "docker exec pc-4f2a-broker-1 tc qdisc del dev eth0 root",
    ),
    (
        "unload#1",
        "topic_unload",
        "cluster (admin API)",
        75_000,
        Some(75_000),
        "PUT http://127.0.0.1:18080/admin/v2/persistent/public/default/report-browser/unload",
        "none (an unload needs no heal)",
    ),
    (
        "pause#1",
        "pause",
        "bookie-1",
        85_000,
        None,
        "docker pause pc-4f2a-bookie-1",
        "docker unpause pc-4f2a-bookie-1",
    ),
];

const PER_TXN: u64 = 50;

struct Rng(u64);

impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

struct Gen {
    events: Vec<Event>,
    attempt: u64,
    next_number: u64,
}

impl Gen {
    fn push(&mut self, t_ms: u64, body: EventBody) {
        self.events.push(Event { t_ms, body });
    }

    fn txn(attempt: u64) -> TxnId {
        TxnId {
            most: attempt % 2,
            least: attempt,
        }
    }

    /// Open an attempt at `t` (fresh numbers, or those of `resend_of`), request its commit 40 ms
    /// later, learn `outcome` after `latency` ms. Returns (attempt, numbers).
    fn attempt(
        &mut self,
        t: u64,
        numbers: Option<(u64, u64)>,
        resend_of: Option<u64>,
        latency: u64,
        outcome: Outcome,
    ) -> (u64, (u64, u64)) {
        self.attempt += 1;
        let a = self.attempt;
        let numbers = numbers.unwrap_or_else(|| {
            let n = (self.next_number, self.next_number + PER_TXN);
            self.next_number += PER_TXN;
            n
        });
        let txn = Self::txn(a);
        self.push(
            t,
            EventBody::TxnOpened {
                attempt: a,
                txn,
                numbers: vec![numbers],
                resend_of,
            },
        );
        self.push(
            t + 30,
            EventBody::SendsAcked {
                attempt: a,
                messages: PER_TXN,
            },
        );
        self.push(
            t + 40,
            EventBody::CommitRequested {
                attempt: a,
                txn,
                try_no: 1,
            },
        );
        let detail = match outcome {
            Outcome::Committed => String::new(),
            Outcome::Aborted => "TransactionCoordinatorNotFound".to_string(),
            Outcome::Ambiguous => "connection closed with END_TXN in flight".to_string(),
        };
        if outcome != Outcome::Committed {
            let class = match outcome {
                Outcome::Aborted => "TransactionCoordinatorNotFound",
                _ => "ConnectionLost<&>",
            };
            self.push(
                t + 40 + latency,
                EventBody::ClientAnswer {
                    attempt: a,
                    txn,
                    op: "commit".into(),
                    client: "own".into(),
                    class: class.into(),
                    message: detail.clone(),
                },
            );
        }
        self.push(
            t + 40 + latency,
            EventBody::TxnOutcome {
                attempt: a,
                txn,
                outcome,
                detail,
            },
        );
        (a, numbers)
    }
}

/// A 92-second run with four faults. A commit during the broker restart is ambiguous, in fact
/// applied, and its numbers are resent: duplicates. A commit during the packet loss is
/// confirmed yet its numbers are lost: missing. Returns the events in time order, N and the
/// numbers the read-back sees.
fn synthetic() -> (Vec<Event>, u64, Vec<u64>) {
    let mut g = Gen {
        events: Vec::new(),
        attempt: 0,
        next_number: 0,
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    g.push(
        0,
        EventBody::RunStarted {
            run_id: "4f2a9c".into(),
            seed: 90210,
            scenario: "report-browser".into(),
            topic: "persistent://public/default/report-browser".into(),
            partitions: 1,
            messages: 40000,
            resend: "naive".into(),
            wall_ms: 1_796_000_000_000,
        },
    );
    let mut ambiguous = None;
    let mut lost = None;
    let mut resends = Vec::new();
    let mut t = 200;
    while t < 90_000 {
        if (20_000..28_000).contains(&t) {
            // The broker is down: what was in flight fails, nothing new opens.
            t = 28_000;
            for (i, (a, numbers)) in resends.drain(..).enumerate() {
                let lat = 400 + rng.next(2500);
                g.attempt(
                    t + 30 * i as u64,
                    Some(numbers),
                    Some(a),
                    lat,
                    Outcome::Committed,
                );
            }
            continue;
        }
        if (19_500..20_000).contains(&t) {
            // In flight when the broker dies.
            if ambiguous.is_none() {
                let (a, n) = g.attempt(t, None, None, 20_300 - t + 6_000, Outcome::Ambiguous);
                g.push(
                    26_340,
                    EventBody::ResendScheduled {
                        attempt: a,
                        numbers: vec![n],
                        reason: "ambiguous commit; resend policy naive".into(),
                    },
                );
                ambiguous = Some((a, n));
                resends.push((a, n));
            } else {
                let (a, n) = g.attempt(t, None, None, 20_600 - t, Outcome::Aborted);
                g.push(
                    20_640,
                    EventBody::AbortRequested {
                        attempt: a,
                        txn: Gen::txn(a),
                        reason: "commit failed: coordinator not found".into(),
                    },
                );
                resends.push((a, n));
            }
            t += 100;
            continue;
        }
        let lat = match t {
            28_000..=35_000 => 100 + rng.next(1 + (35_000 - t) / 3),
            50_000..=60_000 => 120 + rng.next(900),
            _ => 6 + rng.next(18) + if rng.next(40) == 0 { 60 } else { 0 },
        };
        let (_, n) = g.attempt(t, None, None, lat, Outcome::Committed);
        if t >= 52_000 && lost.is_none() {
            lost = Some(n);
        }
        let gap = if (50_000..60_000).contains(&t) {
            200 + rng.next(200)
        } else {
            100
        };
        t += gap;
    }
    for (name, kind, target, start, heal, action, heal_action) in FAULTS {
        g.push(
            start,
            EventBody::FaultStarted {
                fault: name.into(),
                kind: kind.into(),
                target: target.into(),
                planned_ms: Some(start),
                action: action.into(),
                detail: String::new(),
            },
        );
        if let Some(h) = heal {
            g.push(
                h,
                EventBody::FaultHealed {
                    fault: name.into(),
                    action: heal_action.into(),
                    ok: true,
                    detail: String::new(),
                },
            );
        }
    }
    g.push(
        89_000,
        EventBody::FaultSkipped {
            fault: "bookie#1".into(),
            reason: "waited for pause#1 to end; the producer finished first".into(),
        },
    );
    let expected = g.next_number;
    g.push(
        90_500,
        EventBody::ProducerFinished {
            committed: g.attempt - 4,
            aborted: 4,
            ambiguous: 1,
            messages_committed: expected,
            complete: true,
            detail: String::new(),
        },
    );
    let (amb, amb_numbers) = ambiguous.expect("an ambiguous attempt");
    g.push(
        92_000,
        EventBody::TxnResolved {
            attempt: amb,
            txn: Gen::txn(amb),
            resolved: Outcome::Committed,
            how: "read-back found its numbers".into(),
        },
    );
    g.events.sort_by_key(|e| e.t_ms);
    let lost = lost.expect("a lost attempt");
    let mut read: Vec<u64> = (0..expected)
        .filter(|v| !(lost.0..lost.1).contains(v))
        .collect();
    read.extend(amb_numbers.0..amb_numbers.1);
    (g.events, expected, read)
}

fn tempdir(tag: &str) -> scratch::Scratch {
    scratch::Scratch::new(&format!("pc-report-html-{tag}"))
}

/// Write a run directory and its report.html through the library. The directory lives as long
/// as the returned `Scratch`.
fn render(tag: &str) -> (scratch::Scratch, PathBuf, Verdict) {
    let root = tempdir(tag);
    let dir = RunDir {
        path: root.join("run"),
    };
    std::fs::create_dir_all(&dir.path).unwrap();
    let scenario = pulsar_chaos::scenario::parse("report-browser.yaml", SCENARIO).unwrap();
    let plan = pulsar_chaos::plan::make(&scenario, 90210);
    let (events, expected, read) = synthetic();
    let info = RunInfo {
        run_id: "4f2a9c".into(),
        scenario: "report-browser".into(),
        seed: 90210,
        topic: "persistent://public/default/report-browser".into(),
        partitions: 1,
        messages: expected,
        topology: "cluster".into(),
        service_url: "pulsar://127.0.0.1:16650".into(),
        admin_url: "http://127.0.0.1:18080".into(),
        image: Some("apachepulsar/pulsar:4.0.7".into()),
        started_ms: 1_796_000_000_000,
        reproduce: "pulsar-chaos run scenarios/report-browser.yaml --seed 90210".into(),
        kept_cluster: false,
        client: None,
    };
    let mut text = String::new();
    for e in &events {
        text.push_str(&serde_json::to_string(e).unwrap());
        text.push('\n');
    }
    dir.write("history.jsonl", &text).unwrap();
    let mut tally = Tally::new(expected);
    for v in read {
        tally.observe_value(v);
    }
    let ctx = Context {
        seed: Some(90210),
        ..Context::default()
    };
    let verdict = checker::verdict(
        tally.finish().unwrap(),
        Some(events.into_iter().map(Ok::<_, String>)),
        &ctx,
    );
    assert_eq!(verdict.status, Status::Violation, "{}", verdict.summary);
    assert_eq!(verdict.missing_total, PER_TXN);
    assert_eq!(verdict.duplicate_values, PER_TXN);
    dir.write_json("run.json", &info).unwrap();
    dir.write("plan.json", &plan.to_json()).unwrap();
    dir.write_json("verdict.json", &verdict).unwrap();
    pulsar_chaos::report::write_html(&dir, &info, &plan, &verdict).unwrap();
    (root, dir.path.clone(), verdict)
}

struct Ran {
    stdout: String,
    stderr: String,
}

/// Run headless Chromium on `page` with `args`, offline and with a fresh profile. Panics when
/// Chromium is missing, fails or hangs.
fn chromium(work: &Path, page: &Path, args: &[String]) -> Ran {
    let bin = std::env::var("CHROMIUM").unwrap_or_else(|_| "chromium".to_string());
    let profile = work.join("profile");
    std::fs::create_dir_all(&profile).unwrap();
    let out_path = work.join("chromium.stdout");
    let err_path = work.join("chromium.stderr");
    let mut cmd = Command::new(&bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        // Offline: any name lookup fails, so nothing outside the file could load.
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(format!("file://{}", page.display()))
    .stdin(Stdio::null())
    .stdout(File::create(&out_path).unwrap())
    .stderr(File::create(&err_path).unwrap())
    .env("HOME", work)
    .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => panic!(
            "cannot start `{bin}` ({e}): headless Chromium is required for this test; install it with `apt-get install -y chromium` (or set CHROMIUM to its path)"
        ),
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            // The whole process group: Chromium's helpers too.
            let _ = rustix::process::kill_process_group(
                rustix::process::Pid::from_child(&child),
                rustix::process::Signal::KILL,
            );
            let _ = child.wait();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let ran = Ran {
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
    };
    assert!(
        status.success(),
        "chromium failed: {status}\n{}",
        ran.stderr
    );
    ran
}

/// Console errors, uncaught exceptions and failed loads in Chromium's log.
fn page_errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            l.contains("Uncaught")
                || l.contains(":CONSOLE")
                || l.contains("Failed to load resource")
                || l.contains("net::ERR_")
        })
        .collect()
}

fn keep() -> bool {
    std::env::var_os("REPORT_HTML_KEEP").is_some()
}

#[test]
fn the_report_renders_in_chromium_without_errors() {
    let (_root, run, _) = render("shot");
    let page = run.join("report.html");
    let work = run.parent().unwrap().to_path_buf();
    let shot = work.join("shot.png");
    let ran = chromium(
        &work,
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,2000".to_string(),
        ],
    );
    let errors = page_errors(&ran.stderr);
    assert!(errors.is_empty(), "the page logged errors: {errors:#?}");
    let png = std::fs::read(&shot).unwrap_or_else(|e| {
        panic!(
            "no screenshot at {} ({e}); chromium said:\n{}",
            shot.display(),
            ran.stderr
        )
    });
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (1400, 2000));
    assert!(
        png.len() > 10 * 1024,
        "the screenshot is only {} bytes: the page looks empty",
        png.len()
    );
    if keep() {
        eprintln!("screenshot: {}", shot.display());
    } else {
        let _ = std::fs::remove_dir_all(&work);
    }
}

#[test]
fn the_svg_and_fault_bands_survive_parsing() {
    let (_root, run, verdict) = render("dom");
    let page = run.join("report.html");
    let work = run.parent().unwrap().to_path_buf();
    let ran = chromium(&work, &page, &["--dump-dom".to_string()]);
    let dom = ran.stdout;
    let errors = page_errors(&ran.stderr);
    assert!(errors.is_empty(), "the page logged errors: {errors:#?}");
    assert!(
        dom.contains("<title>report-browser 4f2a9c - VIOLATION</title>"),
        "{dom}"
    );
    assert_eq!(dom.matches("<svg class=\"timeline\"").count(), 1, "{dom}");
    assert!(dom.contains("</svg>"));
    // One band per fault that fired, each inside the SVG.
    let svg = &dom[dom.find("<svg").unwrap()..dom.find("</svg>").unwrap()];
    assert_eq!(
        svg.matches("<rect class=\"fault-band\"").count(),
        FAULTS.len()
    );
    for (name, ..) in FAULTS {
        assert!(
            svg.contains(&format!("data-fault=\"{name}\"")),
            "no band for {name}"
        );
    }
    // A marker per anomalous attempt, and the throughput bars and latency line.
    assert_eq!(
        svg.matches("<g class=\"anomaly ").count(),
        verdict.attempts.len()
    );
    assert!(svg.contains("class=\"bar-commit\""));
    assert!(svg.contains("<path class=\"lat-p99\""));
    // The parser kept the script-free page: no element was moved out of the tables.
    assert!(!dom.contains("<script"));
    assert!(dom.contains("<td>bookie#1</td>"));
    // What each error meant: the four refused commits aborted, the ambiguous one found
    // committed (its numbers were read twice after the naive resend); the class escaped.
    assert!(
        dom.contains("<tr><td>commit</td><td><code>TransactionCoordinatorNotFound</code></td><td class=\"num\">4</td><td class=\"num\">0</td><td class=\"num\">4</td><td class=\"num\">0</td></tr><tr><td>commit</td><td><code>ConnectionLost&lt;&amp;&gt;</code></td><td class=\"num\">1</td><td class=\"num\">1</td><td class=\"num\">0</td><td class=\"num\">0</td></tr>"),
        "{dom}"
    );
    assert!(dom.contains("pulsar-chaos run scenarios/report-browser.yaml --seed 90210"));
    if !keep() {
        let _ = std::fs::remove_dir_all(&work);
    }
}

#[test]
fn the_error_filter_sees_console_errors() {
    let log = "[1:1:1130/020207.934287:WARNING:ui/base/idle/idle_linux.cc:111] None of the known D-Bus ScreenSaver services could be used.
[1:1:1130/020208.519476:INFO:CONSOLE:1] \"bad thing\", source: file:///tmp/bad.html (1)
[1:1:1130/020208.519530:INFO:CONSOLE:1] \"Uncaught Error: boom\", source: file:///tmp/bad.html (1)
";
    assert_eq!(page_errors(log).len(), 2);
    assert!(
        page_errors("[1:1:1130/020208.5:ERROR:dbus/bus.cc:405] Failed to connect to the bus")
            .is_empty()
    );
}

#[test]
fn the_soak_index_renders_in_chromium() {
    let (_root, run, _) = render("index");
    let work = run.parent().unwrap().to_path_buf();
    let rows: Vec<IndexRow> = (1..=40u64)
        .map(|i| {
            let status = match i {
                7 | 23 => "violation",
                31 => "inconclusive",
                _ => "pass",
            };
            IndexRow {
                iteration: i,
                seed: 90_000 + i,
                status: status.to_string(),
                summary: if status == "pass" {
                    format!("PASS: all 40000 numbers of [0, 40000) arrived exactly once ({i} <b>)")
                } else {
                    "VIOLATION: 50 number(s) missing in 1 range(s) (first: [21250, 21300))."
                        .to_string()
                },
                seconds: 90.0 + i as f64 * 0.7,
                run_dir: (status != "pass" || i == 40).then(|| "run/report.html".to_string()),
                reproduce: format!(
                    "pulsar-chaos run scenarios/report-browser.yaml --seed {}",
                    90_000 + i
                ),
            }
        })
        .collect();
    pulsar_chaos::report::write_index(&work, "soak of report-browser", &rows).unwrap();
    let page = work.join("index.html");
    let shot = work.join("index.png");
    let ran = chromium(
        &work,
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,1200".to_string(),
        ],
    );
    let errors = page_errors(&ran.stderr);
    assert!(errors.is_empty(), "the page logged errors: {errors:#?}");
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(png.len() > 10 * 1024, "only {} bytes", png.len());
    let dom = chromium(&work, &page, &["--dump-dom".to_string()]).stdout;
    assert_eq!(dom.matches("<tr id=\"iteration-").count(), 40);
    assert_eq!(dom.matches("href=\"run/report.html\"").count(), 4);
    assert!(!dom.contains("<b>"), "a summary was not escaped");
    if keep() {
        eprintln!("index screenshot: {}", shot.display());
    } else {
        let _ = std::fs::remove_dir_all(&work);
    }
}

/// `matrix --clients`: matrix.html with a client column parses cleanly, one row per version
/// and client, and a client's text stays text.
#[test]
fn the_matrix_page_with_clients_renders_in_chromium() {
    use pulsar_chaos::matrix::{Matrix, RunAt, RunRecord};
    let (_root, run, verdict) = render("matrix");
    let work = run.parent().unwrap().to_path_buf();
    let clients = ["own", "java", "<go>"];
    let mut m = Matrix {
        scenario: "report-browser".into(),
        scenario_file: "scenarios/report-browser.yaml".into(),
        versions: vec!["4.0.7".into(), "4.2.4".into()],
        clients: clients.iter().map(|c| c.to_string()).collect(),
        times: 1,
        seeds: vec![90210],
        started_ms: 0,
        elapsed_s: 600.0,
        interrupted: false,
        rows: vec![],
        runs: vec![],
    };
    for v in ["4.0.7", "4.2.4"] {
        for c in clients {
            let at = RunAt {
                version: v.into(),
                client: Some(c.into()),
                index: 1,
                seed: 90210,
                seconds: 90.0,
                run_dir: Some("run".into()),
                reproduce: format!(
                    "pulsar-chaos run scenarios/report-browser.yaml --seed 90210 --pulsar-version {v} --client {c}"
                ),
            };
            m.runs
                .push(RunRecord::from_verdict(at, &verdict, Some(1000.0), None));
        }
    }
    m.summarize(&Default::default());
    let page = work.join("matrix.html");
    std::fs::write(&page, pulsar_chaos::report::matrix::page(&m)).unwrap();
    let ran = chromium(&work, &page, &["--dump-dom".to_string()]);
    let errors = page_errors(&ran.stderr);
    assert!(errors.is_empty(), "the page logged errors: {errors:#?}");
    let dom = ran.stdout;
    assert_eq!(dom.matches("<th>client</th>").count(), 2, "{dom}");
    assert!(
        dom.contains("<tr><td><b>4.2.4</b></td><td>java</td><td class=\"num\">1</td>"),
        "{dom}"
    );
    assert!(dom.contains("<td>&lt;go&gt;</td>"), "{dom}");
    assert!(!dom.contains("<go>"), "a client was not escaped");
    assert_eq!(dom.matches("<tr id=\"4.").count(), 6, "{dom}");
    assert_eq!(dom.matches("href=\"run/report.html\"").count(), 6, "{dom}");
    if !keep() {
        let _ = std::fs::remove_dir_all(&work);
    }
}

/// `trends.html` from a real SQLite store filled through the library's store API: a section
/// per scenario × version × client, a pass-rate point per night with its value, and each
/// finding's first and last night, as Chromium parsed them; a screenshot of the page.
#[test]
fn the_trends_page_renders_in_chromium() {
    use pulsar_chaos::results::{self, Filter, Record};
    use pulsar_chaos::store::{Location, Store};
    let work = tempdir("trends");
    let groups = [
        ("mixed", "4.2.4", "own"),
        ("mixed", "4.0.7", "own"),
        ("smoke", "4.2.4", "java 4.2.4"),
    ];
    let mut records = Vec::new();
    for (g, (scenario, version, client)) in groups.iter().enumerate() {
        for day in 1..=5u64 {
            // Two runs a night; on 4.0.7 the second fails from the 3rd on.
            for run in 0..2u64 {
                let failed = *version == "4.0.7" && run == 1 && day >= 3;
                let mut findings = Vec::new();
                if failed {
                    findings.push("lwm-abort-of-confirmed-commit".to_string());
                }
                if g == 2 && day == 2 && run == 0 {
                    findings.push("apache/pulsar#24945".to_string());
                }
                records.push(Record {
                    run_id: format!("{g}-{day}-{run}"),
                    started_ms: results::parse_date(&format!("2026-11-{day:02}")).unwrap()
                        + run * 3_600_000,
                    source: "soak".into(),
                    scenario: scenario.to_string(),
                    scenario_hash: "abc".into(),
                    seed: day * 10 + run,
                    pulsar_version: version.to_string(),
                    image: None,
                    client: client.to_string(),
                    harness_version: "0.1.0".into(),
                    status: if failed { "violation" } else { "pass" }.into(),
                    causes: vec![],
                    expected: 40_000,
                    received: 40_000,
                    missing: 0,
                    duplicate_values: 0,
                    duplicate_copies: 0,
                    unexpected: 0,
                    ambiguous: 0,
                    throughput: Some(9_000.0 + (day * 300 + run * 50 + g as u64 * 1000) as f64),
                    recovery_ms: [
                        ("broker_restart".to_string(), vec![4_000 + day * 500]),
                        ("topic_unload".to_string(), vec![300 + day * 20]),
                    ]
                    .into_iter()
                    .collect(),
                    findings,
                    run_dir: format!("/runs/{g}-{day}-{run}"),
                });
            }
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stored = rt.block_on(async {
        let mut s = Store::open(&Location::Sqlite(work.join("results.db")))
            .await
            .unwrap();
        for r in &records {
            s.insert(r, 0).await.unwrap();
        }
        let back = s.records().await.unwrap();
        s.close().await;
        back
    });
    assert_eq!(stored.len(), 30);
    let page = work.join("trends.html");
    let p = results::page(&stored, &Filter::default());
    std::fs::write(&page, pulsar_chaos::report::trends::page(&p, "")).unwrap();
    let shot = work.join("trends.png");
    let ran = chromium(
        &work,
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,1600".to_string(),
        ],
    );
    let errors = page_errors(&ran.stderr);
    assert!(errors.is_empty(), "the page logged errors: {errors:#?}");
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(png.len() > 10 * 1024, "only {} bytes", png.len());
    let ran = chromium(&work, &page, &["--dump-dom".to_string()]);
    let errors = page_errors(&ran.stderr);
    assert!(errors.is_empty(), "the page logged errors: {errors:#?}");
    let dom = ran.stdout;
    assert_eq!(dom.matches("<section class=\"group\"").count(), 3, "{dom}");
    for (scenario, version, client) in groups {
        assert!(
            dom.contains(&format!(
                "data-scenario=\"{scenario}\" data-version=\"{version}\" data-client=\"{client}\""
            )),
            "no group for {scenario} {version} {client}"
        );
    }
    // The 4.0.7 group's pass-rate chart: a point per night, 100% then 50%.
    let g = &dom[dom.find("data-version=\"4.0.7\"").unwrap()..];
    let chart = &g[g.find("<svg class=\"trend pass-rate\"").unwrap()..];
    let chart = &chart[..chart.find("</svg>").unwrap()];
    let points: Vec<(String, String)> = chart
        .split("<circle class=\"pt\" data-date=\"")
        .skip(1)
        .map(|p| {
            let date = p[..10].to_string();
            let v = p.split("data-value=\"").nth(1).unwrap();
            (date, v[..v.find('"').unwrap()].to_string())
        })
        .collect();
    let want: Vec<(String, String)> = (1..=5)
        .map(|d| {
            (
                format!("2026-11-{d:02}"),
                if d >= 3 { "0.5" } else { "1" }.to_string(),
            )
        })
        .collect();
    assert_eq!(points, want);
    // Each group has its throughput line and a recovery line per fault kind.
    assert_eq!(dom.matches("<svg class=\"trend throughput\"").count(), 3);
    assert_eq!(dom.matches("data-series=\"broker_restart\"").count(), 3);
    assert_eq!(dom.matches("data-series=\"topic_unload\"").count(), 3);
    // Each finding with the night it was first and last seen.
    assert!(
        dom.contains("<tr class=\"finding\" data-finding=\"lwm-abort-of-confirmed-commit\"><td><code>lwm-abort-of-confirmed-commit</code></td><td class=\"first-seen\">2026-11-03</td><td class=\"last-seen\">2026-11-05</td><td class=\"num\">3</td>"),
        "{dom}"
    );
    assert!(
        dom.contains("<td class=\"first-seen\">2026-11-02</td><td class=\"last-seen\">2026-11-02</td><td class=\"num\">1</td><td>smoke</td>"),
        "{dom}"
    );
    assert!(!dom.contains("<script"));
    if keep() {
        // The scratch directory goes when the test passes: the screenshot is copied out.
        let kept = std::env::temp_dir().join("pc-report-html-trends.png");
        std::fs::copy(&shot, &kept).unwrap();
        eprintln!("trends screenshot: {}", kept.display());
    }
}
