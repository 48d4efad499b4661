//! Issue 13, step 2: consume-transform-produce end to end through the command line. The smoke
//! scenario passes, and an independent read checks both topics: the output holds [0, N)
//! exactly once and the input [0, N) once, with the subscription's backlog 0 (asked over the
//! admin API). Then a run that aborts every 3rd attempt on purpose: its inputs are handed back
//! and processed again (redeliveries > 0), and it still passes. The Failover and Key_Shared
//! subscriptions and a transactional input pass the same way. `consumer_restart` faults close
//! consumers holding inputs in open transactions, and the run still passes.

use std::path::Path;

use pulsar_chaos::admin::Admin;
use pulsar_chaos::scenario::transform::{input_topic, SUBSCRIPTION};

use crate::common::*;

/// Every payload of `topic`, read by the `pulsar` crate's own consumer, as sorted numbers;
/// asserted to be exactly [0, n).
async fn assert_exactly_once(service_url: &str, topic: &str, n: u64) {
    let mut got = numbers(&independent_readback(service_url, topic).await);
    got.sort_unstable();
    let want: Vec<u64> = (0..n).collect();
    if got != want {
        let mut distinct = got.clone();
        distinct.dedup();
        panic!(
            "{topic}: {} messages, {} distinct, expected [0, {n}) once",
            got.len(),
            distinct.len()
        );
    }
}

async fn assert_backlog_zero(admin: &Admin, input: &str) {
    let stats = admin.topic_stats(input).await.unwrap();
    assert_eq!(
        stats["subscriptions"][SUBSCRIPTION]["msgBacklog"].as_u64(),
        Some(0),
        "{input}: {}",
        stats["subscriptions"]
    );
}

/// Run `scenario` against the cluster; the run directory, asserted to have passed.
fn run_pass(scenario: &Path, dir: &Path, c: &pulsar_chaos::cluster::Cluster) -> std::path::PathBuf {
    let urls = [
        "--service-url",
        c.service_url.as_str(),
        "--admin-url",
        c.admin_url.as_str(),
    ];
    let o = run_scenario(scenario, 5, dir, &urls);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let rd = run_dir_of(&t);
    assert_eq!(verdict(&rd)["status"], "pass", "{t}");
    rd
}

fn topic_of(rd: &Path) -> String {
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rd.join("run.json")).unwrap()).unwrap();
    info["topic"].as_str().unwrap().to_string()
}

#[test]
fn transform_smoke_passes_and_aborted_inputs_come_again() {
    let dir = tmpdir("transform");
    rt().block_on(async {
        let tc = shared_standalone();
        let c = &tc.cluster;
        let admin = Admin::new(&c.admin_url);

        let smoke = repo("scenarios/transform-smoke.yaml");
        let rd = run_pass(&smoke, &dir, c);
        let topic = topic_of(&rd);
        assert_exactly_once(&c.service_url, &topic, 2000).await;
        assert_exactly_once(&c.service_url, &input_topic(&topic), 2000).await;
        assert_backlog_zero(&admin, &input_topic(&topic)).await;
        let v = verdict(&rd);
        let consumer = &v["consumer"];
        assert!(consumer["transactions"].as_u64().unwrap() >= 200, "{consumer}");
        assert_eq!(consumer["backlog"][0]["backlog"], 0, "{consumer}");
        // Plain input entries: every probe that got an answer was refused.
        assert!(consumer["probes_refused"].as_u64().unwrap() >= 1, "{consumer}");
        assert_eq!(consumer["probes_accepted"], 0, "{consumer}");
        // The ACK latency over every attempt whose ACKs were all acknowledged, and the
        // commit latency in producer.json (both were missing for a transform).
        let lat = &consumer["ack_latency"];
        assert!(lat["attempts"].as_u64().unwrap() >= 190, "{consumer}");
        assert!(lat["median_ms"].as_u64().unwrap() <= lat["max_ms"].as_u64().unwrap());
        let pj: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(rd.join("producer.json")).unwrap())
                .unwrap();
        assert!(pj["commit_latency_avg_ms"].as_f64().unwrap() > 0.0, "{pj}");

        let s = write(
            &dir,
            "aborts.yaml",
            "name: transform-aborts\nworkload:\n  kind: transform\n  topic: persistent://public/default/transform-aborts\n  partitions: 2\n  messages: 1000\n  txn_size: 10\n  batch_size: 1\n  consumers: 2\n  abort_every: 3\n  deadline: 3m\n",
        );
        let rd = run_pass(&s, &dir, c);
        let topic = topic_of(&rd);
        assert_exactly_once(&c.service_url, &topic, 1000).await;
        for p in 0..2 {
            assert_backlog_zero(&admin, &format!("{}-partition-{p}", input_topic(&topic))).await;
        }
        let consumer = &verdict(&rd)["consumer"];
        assert!(consumer["redeliveries"].as_u64().unwrap() > 0, "{consumer}");
        assert!(consumer["inputs_redelivered"].as_u64().unwrap() > 0, "{consumer}");
        let h = history(&rd);
        let aborted = h
            .iter()
            .filter(|e| e["event"] == "abort_requested")
            .count();
        assert!(aborted >= 30, "{aborted} deliberate aborts");
    });
}

/// Short runs on one standalone: a Failover and a Key_Shared subscription, and an input filled
/// in transactions; each passes with the output read back independently as [0, N) once and
/// the backlog 0.
#[test]
fn transform_failover_key_shared_and_transactional_input_pass() {
    let dir = tmpdir("transform-subs");
    rt().block_on(async {
        let tc = shared_standalone();
        let c = &tc.cluster;
        let admin = Admin::new(&c.admin_url);
        for (name, extra) in [
            ("failover", "  subscription_type: failover\n"),
            ("key-shared", "  subscription_type: key_shared\n"),
            ("txn-input", "  input_transactional: true\n"),
        ] {
            let s = write(
                &dir,
                &format!("{name}.yaml"),
                &format!("name: transform-{name}\nworkload:\n  kind: transform\n  topic: persistent://public/default/transform-{name}\n  partitions: 2\n  messages: 600\n  txn_size: 10\n  batch_size: 1\n  consumers: 2\n  deadline: 2m\n{extra}"),
            );
            let rd = run_pass(&s, &dir, c);
            let topic = topic_of(&rd);
            assert_exactly_once(&c.service_url, &topic, 600).await;
            for p in 0..2 {
                assert_backlog_zero(&admin, &format!("{}-partition-{p}", input_topic(&topic)))
                    .await;
            }
        }
    });
}

/// Whether each `consumer_closed` of `h` hit an attempt holding inputs acknowledged in an open
/// transaction: its `txn_opened` and an `inputs_acked` "acked" before, no END_TXN asked before,
/// its fault a `consumer_restart` that started; and the attempt reached an outcome after.
/// Returns how many did.
fn closes_in_open_transactions(h: &[serde_json::Value]) -> usize {
    let mut hits = 0;
    for (k, e) in h.iter().enumerate() {
        if e["event"] != "consumer_closed" {
            continue;
        }
        let attempt = &e["attempt"];
        let before = &h[..k];
        let of_attempt =
            |ev: &serde_json::Value, name: &str| ev["event"] == name && &ev["attempt"] == attempt;
        let started = before.iter().any(|f| {
            f["event"] == "fault_started"
                && f["kind"] == "consumer_restart"
                && f["fault"] == e["fault"]
        });
        let opened = before
            .iter()
            .any(|f| of_attempt(f, "txn_opened") && f["txn"] == e["txn"]);
        let acked = before
            .iter()
            .any(|f| of_attempt(f, "inputs_acked") && f["answer"] == "acked");
        let ended = before.iter().any(|f| {
            of_attempt(f, "commit_requested")
                || of_attempt(f, "abort_requested")
                || of_attempt(f, "txn_outcome")
        });
        let held = e["inputs"].as_array().is_some_and(|r| !r.is_empty());
        let outcome = h[k..]
            .iter()
            .any(|f| of_attempt(f, "txn_outcome") || of_attempt(f, "txn_resolved"));
        assert!(outcome, "attempt {attempt} closed and never ended: {e}");
        if started && opened && acked && !ended && held {
            hits += 1;
        }
    }
    hits
}

/// The bundled `transform-consumer-restarts.yaml`: consumers closed while they hold inputs in
/// open transactions, reopened after 1 s; PASS, the output read back independently as
/// [0, 10000) once, the backlog 0, and at least one close that hit an open transaction.
#[test]
fn transform_consumer_restarts_pass() {
    let dir = tmpdir("transform-crestart");
    rt().block_on(async {
        let tc = shared_standalone();
        let c = &tc.cluster;
        let admin = Admin::new(&c.admin_url);
        let s = repo("scenarios/transform-consumer-restarts.yaml");
        let rd = run_pass(&s, &dir, c);
        let topic = topic_of(&rd);
        assert_exactly_once(&c.service_url, &topic, 10_000).await;
        for p in 0..2 {
            assert_backlog_zero(&admin, &format!("{}-partition-{p}", input_topic(&topic))).await;
        }
        let h = history(&rd);
        let hits = closes_in_open_transactions(&h);
        assert!(hits >= 1, "no consumer_restart hit an open transaction");
        let healed = h
            .iter()
            .filter(|e| {
                e["event"] == "fault_healed"
                    && e["ok"] == true
                    && e["fault"]
                        .as_str()
                        .unwrap_or("")
                        .starts_with("consumer_restart")
            })
            .count();
        assert!(healed >= hits, "{healed} heals for {hits} closes");
        // The report's fault list names them.
        let page = std::fs::read_to_string(rd.join("report.html")).unwrap();
        assert!(
            page.contains("consumer_restart-0#1"),
            "report without the fault"
        );
    });
}

/// Issue 31 (the 4.0.7 backlog of the #19814 matrix through the Java client, explained): a
/// batch whose members two committed transactions acknowledged stays in the subscription on a
/// broker without batch-index acknowledgement. The run starts its own standalone with
/// `cluster.broker_config` turning `acknowledgmentAtBatchIndexLevelEnabled` off (4.2.4's default
/// is on; 4.0.7's is off); input entries of 7 taken 10 at a time split most batches between
/// two transactions. The verdict is VIOLATION and names the configuration as the cause, with
/// the held entries, the transactions that acknowledged them and Pulsar's runtime
/// configuration as evidence; each held entry was read from the admin API.
#[test]
fn a_batch_split_across_commits_without_batch_index_ack_is_named_the_configuration_s() {
    let dir = tmpdir("transform-split");
    let (b, h) = free_ports();
    let s = write(
        &dir,
        "split.yaml",
        &format!(
            "name: transform-split
cluster:
  topology: standalone
  binary_port: {b}
  http_port: {h}
  broker_config:
    acknowledgmentAtBatchIndexLevelEnabled: false
workload:
  kind: transform
  topic: persistent://public/default/transform-split
  partitions: 1
  messages: 700
  txn_size: 10
  input_batch_size: 7
  input_transactional: true
  concurrency: 2
  consumers: 1
  deadline: 2m
"
        ),
    );
    let o = run_scenario(&s, 5, &dir, &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(pulsar_chaos::exit::VIOLATION), "{t}");
    let rd = run_dir_of(&t);
    let v = verdict(&rd);
    assert_eq!(v["status"], "violation", "{t}");
    let findings = v["consumer"]["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:?}");
    let f = findings[0].as_str().unwrap();
    for words in [
        "acknowledged across two or more committed transactions",
        "GET /admin/v2/brokers/configuration/runtime: acknowledgmentAtBatchIndexLevelEnabled = false",
        "not a Pulsar bug",
        "internalStats: cursors.pulsar-chaos-transform.markDeletePosition",
    ] {
        assert!(f.contains(words), "{words}: {f}");
    }
    // The evidence: every held entry read back with its numbers, written by a committed fill
    // transaction.
    let rb: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rd.join("readback.json")).unwrap()).unwrap();
    let held = &rb["context"]["consumer"]["held"];
    let entries = held["entries"].as_array().unwrap();
    assert!(entries.len() >= 10, "{held}");
    assert_eq!(held["total"].as_u64(), Some(entries.len() as u64), "{held}");
    for e in entries {
        assert_eq!(e["fill"], "committed", "{e}");
        assert_eq!(e["numbers"].as_array().map(Vec::len), Some(7), "{e}");
    }
    assert_eq!(held["batch_index_ack"], false, "{held}");
}
