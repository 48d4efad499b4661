//! Tests of `report.html` as a whole: a fixture run directory (history, plan, verdict) is
//! rendered with `write_html` and the page is read back.

use super::fmt::esc;
use super::write_html;
use crate::checker::{self, Context, Status, Tally, Verdict};
use crate::history::{Event, EventBody, Outcome, TxnId};
use crate::plan::Plan;
use crate::rundir::{RunDir, RunInfo};

fn tempdir(tag: &str) -> crate::scratch::Scratch {
    crate::scratch::Scratch::new(&format!("pc-report-{tag}"))
}

const SCENARIO: &str = "\
name: report-test
cluster: { topology: cluster, brokers: 2, bookies: 1 }
workload:
  topic: persistent://public/default/report-test
  messages: 40
  txn_size: 10
faults:
  - kind: broker_restart
    name: restart
    schedule: { at: [1s] }
  - kind: packet_loss
    name: loss
    percent: 30
    duration: 5s
    schedule: { at: [6s] }
";

const KILL: &str = "docker kill pc-broker-1 <script>alert(1)</script>";
const LOSS: &str = "tc qdisc add dev eth0 root netem loss 30% # https://example.com/netem";
const REPRODUCE: &str =
    "pulsar-chaos run scenarios/report-test.yaml --seed 4242 --admin-url http://127.0.0.1:18080";

fn ev(t_ms: u64, body: EventBody) -> Event {
    Event { t_ms, body }
}

fn txn(n: u64) -> TxnId {
    TxnId { most: 1, least: n }
}

fn opened(t: u64, attempt: u64, numbers: (u64, u64), resend_of: Option<u64>) -> Event {
    ev(
        t,
        EventBody::TxnOpened {
            attempt,
            txn: txn(attempt),
            numbers: vec![numbers],
            resend_of,
        },
    )
}

fn commit(t: u64, attempt: u64) -> Event {
    ev(
        t,
        EventBody::CommitRequested {
            attempt,
            txn: txn(attempt),
            try_no: 1,
        },
    )
}

fn outcome(t: u64, attempt: u64, outcome: Outcome) -> Event {
    ev(
        t,
        EventBody::TxnOutcome {
            attempt,
            txn: txn(attempt),
            outcome,
            detail: String::new(),
        },
    )
}

/// Five attempts over [0, 40): #2's commit is ambiguous during the broker restart and in
/// fact applied, #3 resends its numbers (duplicates); #4 is confirmed yet lost (missing).
/// The packet loss starts after every attempt and never heals.
fn history() -> Vec<Event> {
    vec![
        opened(10, 1, (0, 10), None),
        commit(50, 1),
        outcome(80, 1, Outcome::Committed),
        opened(100, 2, (10, 20), None),
        commit(900, 2),
        ev(
            1000,
            EventBody::FaultStarted {
                fault: "restart#1".into(),
                kind: "broker_restart".into(),
                target: "broker-1".into(),
                planned_ms: Some(1000),
                action: KILL.into(),
                detail: String::new(),
            },
        ),
        outcome(3000, 2, Outcome::Ambiguous),
        ev(
            3000,
            EventBody::ResendScheduled {
                attempt: 2,
                numbers: vec![(10, 20)],
                reason: "naive".into(),
            },
        ),
        opened(3100, 3, (10, 20), Some(2)),
        ev(
            3500,
            EventBody::FaultHealed {
                fault: "restart#1".into(),
                action: "docker start pc-broker-1".into(),
                ok: true,
                detail: String::new(),
            },
        ),
        commit(4000, 3),
        outcome(4100, 3, Outcome::Committed),
        opened(4200, 4, (20, 30), None),
        commit(4300, 4),
        outcome(4350, 4, Outcome::Committed),
        opened(4400, 5, (30, 40), None),
        commit(4450, 5),
        outcome(4500, 5, Outcome::Committed),
        ev(
            6000,
            EventBody::FaultStarted {
                fault: "loss#1".into(),
                kind: "packet_loss".into(),
                target: "broker-2".into(),
                planned_ms: Some(6000),
                action: LOSS.into(),
                detail: String::new(),
            },
        ),
        ev(
            6100,
            EventBody::FaultSkipped {
                fault: "pause#1".into(),
                reason: "the producer finished before the fault was due".into(),
            },
        ),
        ev(
            6200,
            EventBody::FaultFailed {
                fault: "zk#1".into(),
                error: "no such container: pc-zookeeper".into(),
            },
        ),
        ev(
            6500,
            EventBody::ProducerFinished {
                committed: 4,
                aborted: 0,
                ambiguous: 1,
                messages_committed: 40,
                complete: true,
                detail: String::new(),
            },
        ),
        ev(
            7000,
            EventBody::TxnResolved {
                attempt: 2,
                txn: txn(2),
                resolved: Outcome::Committed,
                how: "read-back".into(),
            },
        ),
    ]
}

struct Fixture {
    /// Removed when the test passes, kept when it fails.
    _scratch: crate::scratch::Scratch,
    dir: RunDir,
    info: RunInfo,
    plan: Plan,
    verdict: Verdict,
}

/// A run directory as `run` leaves it, without the report.
fn fixture(tag: &str) -> Fixture {
    let scratch = tempdir(tag);
    let dir = RunDir {
        path: scratch.to_path_buf(),
    };
    let scenario = crate::scenario::parse("report-test.yaml", SCENARIO).unwrap();
    let plan = crate::plan::make(&scenario, 4242);
    let info = RunInfo {
        run_id: "r1a2b3".into(),
        scenario: "report-test".into(),
        seed: 4242,
        topic: "persistent://public/default/report-test".into(),
        partitions: 1,
        messages: 40,
        topology: "cluster".into(),
        service_url: "pulsar://127.0.0.1:16650".into(),
        admin_url: "http://127.0.0.1:18080".into(),
        image: Some("apachepulsar/pulsar:4.0.7".into()),
        started_ms: 1_796_000_000_000,
        reproduce: REPRODUCE.into(),
        kept_cluster: false,
        client: None,
    };
    let mut text = String::new();
    for e in history() {
        text.push_str(&serde_json::to_string(&e).unwrap());
        text.push('\n');
    }
    dir.write("history.jsonl", &text).unwrap();
    let mut tally = Tally::new(40);
    for v in (0..20).chain(10..20).chain(30..40) {
        tally.observe_value(v);
    }
    let ctx = Context {
        seed: Some(4242),
        ..Context::default()
    };
    let verdict = checker::verdict(
        tally.finish().unwrap(),
        Some(history().into_iter().map(Ok::<_, String>)),
        &ctx,
    );
    dir.write_json("run.json", &info).unwrap();
    dir.write("plan.json", &plan.to_json()).unwrap();
    dir.write_json("verdict.json", &verdict).unwrap();
    Fixture {
        _scratch: scratch,
        dir,
        info,
        plan,
        verdict,
    }
}

fn render(tag: &str) -> (Fixture, String) {
    let f = fixture(tag);
    write_html(&f.dir, &f.info, &f.plan, &f.verdict).unwrap();
    let html = std::fs::read_to_string(f.dir.file("report.html")).unwrap();
    (f, html)
}

/// The value of attribute `name` in the tag that starts at `tag`.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let end = tag.find('>').unwrap_or(tag.len());
    let tag = &tag[..end];
    let key = format!(" {name}=\"");
    let i = tag.find(&key)? + key.len();
    let j = tag[i..].find('"')? + i;
    Some(&tag[i..j])
}

fn bands(html: &str) -> Vec<&str> {
    html.match_indices("<rect class=\"fault-band\"")
        .map(|(i, _)| &html[i..])
        .collect()
}

#[test]
fn the_fixture_is_a_violation_with_both_anomalies() {
    let f = fixture("fixture");
    assert_eq!(f.verdict.status, Status::Violation);
    assert_eq!(f.verdict.missing_total, 10);
    assert_eq!(f.verdict.duplicate_values, 10);
    let attempts: Vec<u64> = f.verdict.attempts.iter().map(|a| a.attempt).collect();
    assert_eq!(attempts, vec![2, 3, 4]);
    assert!(f.verdict.attempts[0]
        .faults
        .contains(&"restart#1".to_string()));
}

#[test]
fn one_band_per_fault_named_and_labelled() {
    let (_, html) = render("bands");
    let bands = bands(&html);
    assert_eq!(bands.len(), 2, "{html}");
    assert_eq!(html.matches("class=\"fault-band\"").count(), 2);
    let names: Vec<&str> = bands
        .iter()
        .map(|b| attr(b, "data-fault").unwrap())
        .collect();
    assert_eq!(names, vec!["restart#1", "loss#1"]);
    let labels: Vec<&str> = html
        .match_indices("<g class=\"fault-label\">")
        .map(|(i, _)| {
            let g = &html[i..];
            &g[..g.find("</g>").unwrap()]
        })
        .collect();
    assert_eq!(labels.len(), 2);
    for (label, n) in labels.iter().zip(names) {
        assert!(label.ends_with(&format!(">{n}</text>")), "{label}");
    }
}

#[test]
fn a_fault_that_never_healed_extends_to_the_end() {
    let (_, html) = render("unhealed");
    let bands = bands(&html);
    let right = |b: &str| -> f64 {
        attr(b, "x").unwrap().parse::<f64>().unwrap()
            + attr(b, "width").unwrap().parse::<f64>().unwrap()
    };
    // The plot spans x in [72, 1180]; the run ends at 7 s with the loss still on.
    assert!((right(bands[1]) - 1180.0).abs() < 0.5, "{}", bands[1]);
    // The restart healed at 3.5 s of 7 s: its band ends in the middle.
    let mid = 72.0 + 1108.0 * 3500.0 / 7000.0;
    assert!((right(bands[0]) - mid).abs() < 0.5, "{}", bands[0]);
}

#[test]
fn verdict_seed_and_reproduce_command_are_shown() {
    let (f, html) = render("facts");
    assert!(
        html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"),
        "{html}"
    );
    assert!(html.contains("<meta charset=\"utf-8\">"));
    assert!(html.contains("<title>report-test r1a2b3 - VIOLATION</title>"));
    assert!(
        html.contains("<section class=\"verdict violation\"><div class=\"status\">VIOLATION</div>")
    );
    assert!(html.contains(&esc(&f.verdict.summary)));
    assert!(html.contains("<dt>seed</dt><dd>4242</dd>"));
    assert!(html.contains(&format!(
        "<pre class=\"cmd\"><code>{}</code></pre>",
        esc(REPRODUCE)
    )));
    assert!(html.contains("2026-11-30 00:53:20 UTC"));
    assert!(html.trim_end().ends_with("</html>"));
}

#[test]
fn injected_markup_is_escaped() {
    let (_, html) = render("escape");
    assert!(!html.to_lowercase().contains("<script"), "{html}");
    assert!(html.contains("docker kill pc-broker-1 &lt;script&gt;alert(1)&lt;/script&gt;"));
}

#[test]
fn nothing_is_fetched_from_outside_the_file() {
    let (f, html) = render("offline");
    let lower = html.to_lowercase();
    assert!(!lower.contains("src="), "src= in the report");
    assert!(!lower.contains("url("), "a CSS url() in the report");
    assert!(!lower.contains("@import"));
    for (i, _) in lower.match_indices("href=\"") {
        let target = &lower[i + 6..];
        assert!(
            target.starts_with('#'),
            "a link out: {}",
            &target[..40.min(target.len())]
        );
    }
    // The only http(s) text is in the reproduce command, the actions and the endpoints.
    let mut rest = html.clone();
    for text in [REPRODUCE, KILL, LOSS, &f.info.admin_url] {
        rest = rest.replace(&esc(text), "");
    }
    assert!(!rest.contains("http://"), "{rest}");
    assert!(!rest.contains("https://"), "{rest}");
}

#[test]
fn anomalies_are_marked_where_their_transactions_ran() {
    let (_, html) = render("marks");
    assert!(html.contains("<g class=\"anomaly missing\" data-attempt=\"4\"><title>attempt #4 txn (1,4): missing numbers [20, 30); outcome committed"));
    assert!(html.contains("<g class=\"anomaly duplicated\" data-attempt=\"2\"><title>attempt #2 txn (1,2): duplicated numbers [10, 20); outcome ambiguous, resolved committed"));
    assert!(html.contains("opened at 0.100 s, outcome at 3.000 s, resolved at 7.000 s"));
    assert!(html.contains("faults active: restart#1"));
    // The tables.
    assert!(
        html.contains("<span class=\"pill missing\">missing</span></td><td><code>[20, 30)</code>")
    );
    assert!(html.contains(
            "<span class=\"pill duplicated\">duplicated</span></td><td class=\"wrap\"><code>[10, 20)</code>"
        ));
    assert!(html.contains("<tr id=\"attempt-3\">"));
    assert!(html.contains("<a href=\"#attempt-4\">#4</a>"));
}

#[test]
fn faults_table_has_timing_recovery_and_skips() {
    let (_, html) = render("faults");
    assert!(html.contains("2 planned, 2 fired, 1 skipped, 1 failed to inject."));
    // restart#1: started 1 s, healed 3.5 s; the first commit after the heal is at 4.1 s.
    assert!(html.contains("<td class=\"num\">1.000 s</td><td class=\"num\">1.000 s</td><td class=\"num\">2.5 s</td><td class=\"num\">600 ms</td><td class=\"num\">4.0 s</td><td class=\"wrap\"><span class=\"pill ok\">ok</span>"), "{html}");
    assert!(html.contains("never healed"));
    assert!(html.contains("<td>pause#1</td><td><span class=\"pill aborted\">skipped</span></td><td class=\"num\">6.100 s</td><td>the producer finished before the fault was due</td>"));
    assert!(html.contains("no such container: pc-zookeeper"));
}

#[test]
fn counts_come_from_the_verdict_and_the_history() {
    let (_, html) = render("counts");
    for (n, label) in [
        ("5", "transaction attempts"),
        ("4", "committed"),
        ("1", "ambiguous"),
        ("40", "expected numbers"),
        ("40", "messages received"),
        ("30", "distinct numbers"),
        ("10", "missing"),
        ("40", "messages confirmed committed"),
    ] {
        let card = format!("<div class=\"n\">{n}</div><div class=\"l\">{label}</div>");
        assert!(html.contains(&card), "{card}");
    }
}

#[test]
fn a_missing_history_is_noted_not_fatal() {
    let f = fixture("nohistory");
    std::fs::remove_file(f.dir.file("history.jsonl")).unwrap();
    write_html(&f.dir, &f.info, &f.plan, &f.verdict).unwrap();
    let html = std::fs::read_to_string(f.dir.file("report.html")).unwrap();
    assert!(html.contains("The history could not be read"), "{html}");
    assert_eq!(bands(&html).len(), 0);
    assert!(html.contains("VIOLATION"));
}

fn broker_lines(t: TxnId) -> crate::brokerlog::TxnLog {
    let line = |line: u64, level: &str, message: &str| crate::brokerlog::BrokerLine {
        node: "standalone".into(),
        file: "logs/standalone.log".into(),
        line,
        level: level.into(),
        time: "2026-11-30T16:37:09,076".into(),
        message: message.into(),
    };
    crate::brokerlog::TxnLog {
        txn: t,
        named: vec![line(
            599,
            "WARN",
            &format!("TopicTransactionBuffer: Successes to abort low water mark for txn [{t}], topic [persistent://public/default/eos-lwm-partition-2], lowWaterMark [225] <script>x</script>"),
        )],
        named_more: 2,
        during: vec![line(
            404,
            "ERROR",
            "TransactionBufferHandlerImpl: endTxn error topic: [persistent://public/default/eos-lwm-partition-2]",
        )],
        during_more: 0,
    }
}

/// Issue 18: the broker lines about an anomaly's transaction are quoted under it, with file
/// and line, once per transaction (later anomalies of the same transaction link to them).
#[test]
fn broker_lines_are_quoted_under_the_anomaly_once_per_transaction() {
    let mut f = fixture("brokerlog");
    let t = f.verdict.attempts[0].txn;
    f.verdict.missing[0].broker_log = vec![broker_lines(t)];
    f.verdict.duplicates[0].broker_log = vec![broker_lines(t)];
    write_html(&f.dir, &f.info, &f.plan, &f.verdict).unwrap();
    let html = std::fs::read_to_string(f.dir.file("report.html")).unwrap();
    let anchor = format!("id=\"log-{}-{}\"", t.most, t.least);
    assert_eq!(html.matches(&anchor).count(), 1, "{html}");
    assert!(
        html.contains(&format!(
            "Broker log lines naming {t} (the first 1; 2 more name it)</div><pre class=\"log\"><span>logs/standalone.log:599 2026-11-30T16:37:09,076 WARN TopicTransactionBuffer: Successes to abort low water mark for txn [{t}]"
        )),
        "{html}"
    );
    assert!(html.contains("lowWaterMark [225] &lt;script&gt;x&lt;/script&gt;</span>"));
    assert!(html.contains(&format!(
        "WARN/ERROR lines about the topic logged while {t} was open or committing (they name no transaction)</div><pre class=\"log\"><span>logs/standalone.log:404 2026-11-30T16:37:09,076 ERROR TransactionBufferHandlerImpl: endTxn error topic"
    )));
    // The second anomaly of the same transaction links to the lines, in the page.
    assert!(html.contains(&format!(
        "Broker log about {t}: <a href=\"#log-{}-{}\">quoted above</a>",
        t.most, t.least
    )));
    assert!(!html.to_lowercase().contains("<script"));
    // Without lines, no trace of them.
    let (_, plain) = render("brokerlog-none");
    assert!(!plain.contains("class=\"brokerlog"), "{plain}");
}

/// The fixture after a stuck read: every number read once, the history goes on with the
/// read held from 4.45 s (detected at 9 s), `re-end` tried without healing it and
/// `unload-topic` healing it at 73.2 s; the read-back ends at 80 s. `heal: false` leaves out
/// the healing remedy.
fn stuck_fixture(tag: &str, heal: bool) -> Fixture {
    use super::stuck::tests::{stuck_reads, HELD};
    let mut f = fixture(tag);
    let mut events = history();
    events.push(ev(
        9000,
        EventBody::ReadStuck {
            since_ms: 4450,
            partitions: vec![HELD.into()],
            detail: "held <b>".into(),
        },
    ));
    let remedy = |t: u64, remedy: &str, healed: bool, elapsed_ms: u64| {
        ev(
            t,
            EventBody::RemedyTried {
                remedy: remedy.into(),
                targets: vec![HELD.into()],
                healed,
                elapsed_ms,
                detail: String::new(),
            },
        )
    };
    events.push(remedy(70_000, "re-end", false, 60_900));
    if heal {
        events.push(remedy(73_200, "unload-topic", true, 3200));
    }
    events.push(ev(
        80_000,
        EventBody::Note {
            message: "read-back complete".into(),
        },
    ));
    let mut text = String::new();
    for e in &events {
        text.push_str(&serde_json::to_string(e).unwrap());
        text.push('\n');
    }
    f.dir.write("history.jsonl", &text).unwrap();
    let mut tally = Tally::new(40);
    for v in 0..40 {
        tally.observe_value(v);
    }
    let mut stuck = stuck_reads();
    if !heal {
        stuck.remedies.truncate(1);
    }
    let ctx = Context {
        seed: Some(4242),
        stuck_reads: Some(stuck),
        ..Context::default()
    };
    f.verdict = checker::verdict(
        tally.finish().unwrap(),
        Some(events.into_iter().map(Ok::<_, String>)),
        &ctx,
    );
    f
}

fn render_stuck(tag: &str, heal: bool) -> String {
    let f = stuck_fixture(tag, heal);
    write_html(&f.dir, &f.info, &f.plan, &f.verdict).unwrap();
    std::fs::read_to_string(f.dir.file("report.html")).unwrap()
}

fn stuck_bands(html: &str) -> Vec<&str> {
    html.match_indices("<rect class=\"stuck-band\"")
        .map(|(i, _)| &html[i..])
        .collect()
}

fn right(tag: &str) -> f64 {
    attr(tag, "x").unwrap().parse::<f64>().unwrap()
        + attr(tag, "width").unwrap().parse::<f64>().unwrap()
}

/// Issue 17: a stuck verdict has its own status colour and the Stuck reads panel, between the
/// timeline and the counts.
#[test]
fn a_stuck_verdict_has_its_own_status_and_panel() {
    let html = render_stuck("stuckpage", true);
    assert!(
        html.contains("<section class=\"verdict stuck\"><div class=\"status\">STUCK</div>"),
        "{html}"
    );
    assert!(html.contains(".verdict.stuck{border-color:var(--stuck);"));
    assert!(html.contains(".pill.stuck,.pill.held{"));
    let timeline = html.find("<h2 id=\"timeline\">").unwrap();
    let stuck = html.find("<h2 id=\"stuck\">Stuck reads</h2>").unwrap();
    let counts = html.find("<h2 id=\"counts\">").unwrap();
    assert!(timeline < stuck && stuck < counts);
    assert!(html.contains("<td>64,766</td>"));
    assert!(html.contains("<code>(0,1067)</code>"));
    assert!(html.contains("<span>logs/broker-1.log:1234 "));
    assert!(html.contains("<tr data-remedy=\"unload-topic\">"));
    assert!(html.contains("<span class=\"swatch stuck\"></span>read-back stuck"));
    assert!(!html.to_lowercase().contains("<script"));
}

/// Issue 17: the stuck read is a hatched band from when it was held to the end of the remedy
/// that healed it, with a mark per remedy; the axis runs on past the producer to the end of
/// the read-back.
#[test]
fn a_stuck_read_is_a_band_up_to_the_remedy_that_healed_it() {
    let html = render_stuck("stuckband", true);
    let bands = stuck_bands(&html);
    assert_eq!(bands.len(), 1, "{html}");
    let b = bands[0];
    // The plot spans x in [72, 1180] over 80 s.
    let x = |t: f64| 72.0 + 1108.0 * t / 80_000.0;
    let x0: f64 = attr(b, "x").unwrap().parse().unwrap();
    assert!((x0 - x(4450.0)).abs() < 0.2, "{b}");
    assert!((right(b) - x(73_200.0)).abs() < 0.2, "{b}");
    assert_eq!(attr(b, "data-partitions"), Some("report-test-partition-2"));
    assert!(b.contains("<title>read-back stuck on report-test-partition-2 from 4.450 s (the harness gave up waiting at 9.000 s); healed by remedy unload-topic at 73.200 s</title></rect><path class=\"stuck-hatch\" d=\"M"), "{b}");
    // The x axis reaches the end of the read-back, far past the producer (6.5 s).
    assert!(html.contains(">80s</text>"), "{html}");
    // One mark per remedy, where it ran.
    let held = html
        .find("<g class=\"remedy held\" data-remedy=\"re-end\"><title>remedy re-end from 9.100 s to 70.000 s (1 min 00 s) on persistent://public/default/report-test-partition-2: still held</title>")
        .expect(&html);
    let healed = &html[html
        .find("<g class=\"remedy healed\" data-remedy=\"unload-topic\">")
        .expect(&html)..];
    let line = &healed[healed.find("<line").unwrap()..];
    let lx: f64 = attr(line, "x1").unwrap().parse().unwrap();
    assert!((lx - x(73_200.0)).abs() < 0.2, "{line}");
    assert!(held > 0);
}

#[test]
fn a_stuck_read_no_remedy_healed_runs_to_the_end_of_the_chart() {
    let html = render_stuck("stuckopen", false);
    let bands = stuck_bands(&html);
    assert_eq!(bands.len(), 1, "{html}");
    assert!((right(bands[0]) - 1180.0).abs() < 0.2, "{}", bands[0]);
    assert!(bands[0].contains("; no remedy healed it (tried: re-end)</title>"));
    assert!(!html.contains("class=\"remedy healed\""));
    assert!(html.contains("No remedy healed it.</p>"));
}

#[test]
fn a_run_without_a_stuck_read_has_no_band_and_no_panel() {
    let (_, html) = render("nostuck");
    assert!(stuck_bands(&html).is_empty());
    assert!(!html.contains("class=\"remedy "));
    assert!(!html.contains("id=\"stuck\""));
    assert!(!html.contains("swatch stuck"));
}
