//! Tests of the Stuck reads section: a verdict with a stuck read is rendered and the markup is
//! read back.

use super::{stall_section, stuck_section};
use crate::brokerlog::BrokerLine;
use crate::checker::{self, Context, Status, Tally, Verdict};
use crate::stuck::{Remedy, RemedyRecord, StuckPartition, StuckReads, StuckTxn, TxnPartition};

pub(in crate::report) const HELD: &str = "persistent://public/default/report-test-partition-2";
const OTHER: &str = "persistent://public/default/report-test-partition-0";

fn broker_line(line: u64, message: &str) -> BrokerLine {
    BrokerLine {
        node: "broker-1".into(),
        file: "logs/broker-1.log".into(),
        line,
        level: "ERROR".into(),
        time: "2026-11-30T16:37:09,076".into(),
        message: message.into(),
    }
}

/// Partition 2 held behind (0,1067), ABORTING and not ended there; `re-end` did not heal it,
/// `unload-topic` did. Pulsar's texts carry markup that must come out escaped.
pub(in crate::report) fn stuck_reads() -> StuckReads {
    let partition = StuckPartition {
        partition: HELD.into(),
        index: 2,
        held: "4 transaction(s) open, maxReadPosition 21:265 <behind>".into(),
        buffer_state: Some("Ready".into()),
        open: Some(4),
        max_read: Some((21, 265)),
        last_confirmed: Some((34, 3961)),
        entries_behind: Some(64766),
        txns: vec![StuckTxn {
            txn: "(0,1067)".into(),
            status: "ABORTING".into(),
            age_ms: Some(380_000),
            timeout_ms: None,
            partitions: vec![
                TxnPartition {
                    partition: HELD.into(),
                    start_position: Some("21:266".into()),
                    aborted: Some(false),
                },
                TxnPartition {
                    partition: OTHER.into(),
                    start_position: None,
                    aborted: Some(true),
                },
            ],
        }],
        broker_lines: vec![
            broker_line(
                1234,
                "TransactionMetadataStoreService: End transaction fail! <script>x</script>",
            ),
            broker_line(
                1200,
                "TransactionBufferHandlerImpl: handleEndTxnOnPartition fail: has already been closed",
            ),
        ],
        errors: vec!["GET internalStats: 500 <html>oops</html>".into()],
    };
    let partitions = vec![partition];
    StuckReads {
        since_ms: 4450,
        detected_ms: 9000,
        waited_s: 60,
        likely_cause: crate::stuck::known_cause(&partitions),
        partitions,
        remedies: vec![
            RemedyRecord {
                remedy: Remedy::ReEnd,
                targets: vec!["(0,1067)".into()],
                at_ms: 9100,
                elapsed_ms: 60_900,
                answers: vec!["(0,1067): TransactionConflict <x>".into()],
                healed: false,
                still_held: "partition 2: 4 transaction(s) open".into(),
            },
            RemedyRecord {
                remedy: Remedy::UnloadTopic,
                targets: vec![HELD.into()],
                at_ms: 70_000,
                elapsed_ms: 3200,
                answers: vec![format!("{HELD}: unloaded (204)")],
                healed: true,
                still_held: String::new(),
            },
        ],
    }
}

/// A verdict of 3 numbers, all read once, with `stuck` in its context.
fn verdict(stuck: Option<StuckReads>) -> Verdict {
    let mut t = Tally::new(3);
    for v in 0..3 {
        t.observe_value(v);
    }
    checker::verdict(
        t.finish().unwrap(),
        None::<Vec<Result<crate::history::Event, String>>>,
        &Context {
            stuck_reads: stuck,
            ..Context::default()
        },
    )
}

fn section(v: &Verdict) -> String {
    let mut h = String::new();
    stuck_section(&mut h, v);
    h
}

#[test]
fn no_stuck_read_no_section() {
    assert_eq!(section(&verdict(None)), "");
}

#[test]
fn the_panel_shows_the_partitions_numbers_transaction_and_broker_lines() {
    let v = verdict(Some(stuck_reads()));
    assert_eq!(v.status, Status::Stuck);
    let h = section(&v);
    assert!(h.starts_with("<h2 id=\"stuck\">Stuck reads</h2>"), "{h}");
    assert!(h.contains("<p>The read-back was held from 4.450 s; the harness gave up waiting at 9.000 s, 60 s after every fault healed. Remedy <code>unload-topic</code> healed it in 3.2 s.</p>"), "{h}");
    assert!(
        h.contains(&format!(
            "<div class=\"stuck-partition\" id=\"stuck-0\"><h3>Partition 2 <code>{HELD}</code></h3><p class=\"note\">4 transaction(s) open, maxReadPosition 21:265 &lt;behind&gt;</p>"
        )),
        "{h}"
    );
    assert!(h.contains("<table class=\"facts\"><tbody><tr><th>buffer state</th><td>Ready</td></tr><tr><th>transactions open</th><td>4</td></tr><tr><th>maxReadPosition</th><td>21:265</td></tr><tr><th>lastConfirmedEntry</th><td>34:3961</td></tr><tr><th>entries behind</th><td>64,766</td></tr></tbody></table>"), "{h}");
    // The coordinator's transaction, ending and not ended on the held partition (in bold).
    assert!(h.contains("<tr><td><code>(0,1067)</code></td><td><span class=\"pill stuck\">ABORTING</span></td><td class=\"num\">6 min 20 s</td><td class=\"wrap\"><b><code>report-test-partition-2</code> aborted: false</b><br><code>report-test-partition-0</code> aborted: true</td></tr>"), "{h}");
    // The broker lines with their place in the saved logs, escaped.
    assert!(h.contains("<div class=\"label\">Broker WARN/ERROR lines about it (2)</div><pre class=\"log\"><span>logs/broker-1.log:1234 2026-11-30T16:37:09,076 ERROR TransactionMetadataStoreService: End transaction fail! &lt;script&gt;x&lt;/script&gt;</span>\n<span>logs/broker-1.log:1200 "), "{h}");
    assert!(h.contains("<ul class=\"errors\"><li>GET internalStats: 500 &lt;html&gt;oops&lt;/html&gt;</li></ul>"), "{h}");
    assert!(!h.contains("<script"), "{h}");
    assert!(!h.contains("<html>"), "{h}");
}

#[test]
fn the_likely_cause_follows_the_partitions_and_the_remedies_follow_it() {
    let h = section(&verdict(Some(stuck_reads())));
    let panel = h.find("class=\"stuck-partition\"").unwrap();
    let cause = h
        .find("<p class=\"likely-cause\"><b>Likely cause:</b> the coordinator gave up ending (0,1067) ABORTING (logs/broker-1.log:1234: ")
        .expect(&h);
    let remedies = h.find("<h3>Remedies tried</h3>").unwrap();
    assert!(panel < cause && cause < remedies, "{h}");
    assert!(h.contains("<tr data-remedy=\"re-end\"><td><code>re-end</code></td><td class=\"num\">9.100 s</td><td class=\"wrap\">(0,1067)</td><td class=\"wrap\">(0,1067): TransactionConflict &lt;x&gt;</td><td><span class=\"pill held\">still held</span><br>partition 2: 4 transaction(s) open</td><td class=\"num\">1 min 00 s</td></tr>"), "{h}");
    assert!(h.contains(&format!("<tr data-remedy=\"unload-topic\"><td><code>unload-topic</code></td><td class=\"num\">70.000 s</td><td class=\"wrap\">{HELD}</td><td class=\"wrap\">{HELD}: unloaded (204)</td><td><span class=\"pill ok\">healed</span></td><td class=\"num\">3.2 s</td></tr>")), "{h}");
}

#[test]
fn without_pulsars_evidence_or_remedies_the_panel_says_so() {
    let mut s = stuck_reads();
    let p = &mut s.partitions[0];
    (p.open, p.max_read, p.last_confirmed, p.entries_behind) = (None, None, None, None);
    p.buffer_state = None;
    p.txns.clear();
    s.remedies.clear();
    let v = verdict(Some(s));
    assert_ne!(v.status, Status::Stuck);
    let h = section(&v);
    assert!(h.contains("No remedy was tried.</p>"), "{h}");
    assert!(
        h.contains("Pulsar's answers do not show a partition held"),
        "{h}"
    );
    assert!(h.contains("<tr><th>maxReadPosition</th><td>not reported</td></tr>"));
    assert!(h.contains("No coordinator reports a transaction naming it."));
    assert!(h.contains("<h3>Remedies tried</h3>\n<p class=\"empty-note\">None.</p>"));
}

/// Issue 17: a stall has its own section with what Pulsar reported about each partition at the
/// stall, in the same panels as a stuck read (ids of their own), Pulsar's words escaped.
#[test]
fn a_stall_shows_its_failures_broker_lines_and_each_partition_at_the_stall() {
    let mut v = verdict(None);
    assert_eq!(
        {
            let mut h = String::new();
            stall_section(&mut h, &v);
            h
        },
        "",
        "no stall, no section"
    );
    v.stall = Some(checker::StallFinding {
        since_ms: 10_000,
        detected_ms: 80_000,
        failed_attempts: 12,
        failures: vec![(9, "a SEND failed: <PersistenceError>".into())],
        broker_log: vec![crate::stall::LogEvidence {
            node: "broker-1".into(),
            topic: "t-partition-1".into(),
            level: "WARN".into(),
            message: "Failed to persist msg in store".into(),
            count: 687,
            first: "07:23:43".into(),
            last: "07:30:12".into(),
        }],
        likely_cause: Some("apache/pulsar#24945".into()),
        partitions: stuck_reads().partitions,
    });
    let mut h = String::new();
    stall_section(&mut h, &v);
    assert!(h.starts_with("<h2 id=\"stall\">Stall</h2>\n<p>Nothing committed from 10.000 s to 80.000 s with no fault active; the harness stopped the producer. 12 attempt(s) failed meanwhile.</p>"), "{h}");
    assert!(
        h.contains("<li>9x: a SEND failed: &lt;PersistenceError&gt;</li>"),
        "{h}"
    );
    assert!(
        h.contains(
            "<td>broker-1</td><td>WARN</td><td class=\"num\">687</td><td>t-partition-1</td>"
        ),
        "{h}"
    );
    assert!(
        h.contains("<b>Likely cause:</b> apache/pulsar#24945"),
        "{h}"
    );
    assert!(
        h.contains(&format!(
            "<div class=\"stuck-partition\" id=\"stall-0\"><h3>Partition 2 <code>{HELD}</code></h3>"
        )),
        "{h}"
    );
    assert!(h.contains("<th>maxReadPosition</th><td>21:265</td>"), "{h}");
    assert!(!h.contains("<script"), "{h}");
}
