//! Issue 3: the transactional producer, its journal, the range checker, `run` and `verify`.

use std::path::Path;
use std::time::{Duration, Instant};

use pulsar_chaos::scenario::Topology;

use crate::common::*;

#[test]
fn a_hundred_thousand_numbers_pass_and_an_independent_read_agrees() {
    let dir = tmpdir("hundred-k");
    let scenario = write(
        &dir,
        "smoke.yaml",
        &format!(
            "name: smoke\n{}workload:\n  topic: persistent://public/default/eos-it\n  messages: 100000\n  txn_size: 100\n  concurrency: 4\n",
            standalone_cluster_yaml()
        ),
    );
    let o = run_scenario(&scenario, 11, &dir, &["--keep-cluster"]);
    let t = text(&o);
    let run_dir = run_dir_of(&t);
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    let _down = Down(info["run_id"].as_str().unwrap().to_string());
    assert_eq!(o.status.code(), Some(0), "{t}");
    let v = verdict(&run_dir);
    assert_eq!(v["status"], "pass", "{v}");
    assert_eq!(v["expected"], 100000);
    assert_eq!(v["received"], 100000);
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    let run_id = info["run_id"].as_str().unwrap().to_string();
    // No attempt is left open in the journal after a clean finish.
    let left = pulsar_chaos::journal::read(&run_dir.join("journal")).unwrap();
    assert!(left.entries.is_empty(), "journal entries left: {left:?}");
    assert_eq!(left.damage, None);
    // An independent client reads the same.
    let payloads = rt().block_on(independent_readback(
        info["service_url"].as_str().unwrap(),
        info["topic"].as_str().unwrap(),
    ));
    let mut got = numbers(&payloads);
    assert_eq!(got.len(), 100000);
    got.sort_unstable();
    got.dedup();
    assert_eq!(got.len(), 100000);
    assert_eq!(got.first(), Some(&0));
    assert_eq!(got.last(), Some(&99999));
    // One worker hands its sends and commit to a task and opens its next transaction meanwhile
    // (with transactions), or keeps several chunks in flight (without): attempt N+1 opens
    // before attempt N's receipts are in, and the run still passes.
    for (name, txns) in [("handoff", true), ("window", false)] {
        let s = write(
            &dir,
            &format!("{name}.yaml"),
            &format!(
                "name: {name}\nworkload:\n  topic: persistent://public/default/{name}\n  messages: 5000\n  txn_size: 10\n  concurrency: 1\n  transactions: {txns}\n"
            ),
        );
        let urls = [
            "--service-url",
            info["service_url"].as_str().unwrap(),
            "--admin-url",
            info["admin_url"].as_str().unwrap(),
        ];
        let o = run_scenario(&s, 3, &dir, &urls);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "{t}");
        let rd = run_dir_of(&t);
        assert_eq!(verdict(&rd)["status"], "pass");
        let h = history(&rd);
        let t_of = |event: &str, attempt: u64| {
            h.iter()
                .find(|e| e["event"] == event && e["attempt"] == attempt)
                .and_then(|e| e["t_ms"].as_u64())
        };
        let overlapped = (1..500u64)
            .filter(
                |a| match (t_of("txn_opened", a + 1), t_of("sends_acked", *a)) {
                    (Some(next), Some(acked)) => next < acked,
                    _ => false,
                },
            )
            .count();
        assert!(
            overlapped > 0,
            "{name}: no attempt opened before its predecessor's receipts were in"
        );
        if txns {
            // A worker opens its next transaction ahead (a spare); the spares no attempt used
            // are aborted when the producer ends, so the coordinators hold nothing open.
            let admin = pulsar_chaos::admin::Admin::new(info["admin_url"].as_str().unwrap());
            let mut open = u64::MAX;
            let until = Instant::now() + Duration::from_secs(20);
            while Instant::now() < until {
                let stats = rt().block_on(admin.coordinator_stats()).unwrap();
                open = stats.values().map(|c| c.ongoing_txn_size).sum();
                if open == 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            assert_eq!(open, 0, "{name}: transactions left open after the run");
        }
    }
    let o = run(&["cluster", "down", "--run", &run_id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn deliberately_aborted_transactions_stay_invisible_and_their_numbers_arrive_once() {
    let dir = tmpdir("abort-every");
    let scenario = write(
        &dir,
        "abort.yaml",
        &format!(
            "name: abort-every\n{}workload:\n  topic: persistent://public/default/abort\n  messages: 7000\n  txn_size: 50\n  partitions: 3\n  abort_every: 7\n",
            standalone_cluster_yaml()
        ),
    );
    let store = dir.join("store").join("results.db");
    let o = run_scenario(&scenario, 12, &dir, &["--store", store.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let run_dir = run_dir_of(&t);
    let v = verdict(&run_dir);
    assert_eq!(v["status"], "pass", "{v}");
    assert_eq!(v["received"], 7000);
    the_store_holds_exactly_this_run(&store, &run_dir);
    let h = history(&run_dir);
    let deliberate: Vec<_> = h
        .iter()
        .filter(|e| {
            e["event"] == "txn_outcome"
                && e["outcome"] == "aborted"
                && e["detail"].as_str().unwrap_or("").contains("abort_every")
        })
        .collect();
    // 7000 / 50 = 140 chunks; every 7th: 20.
    assert_eq!(deliberate.len(), 20, "{deliberate:?}");
    let resent = h
        .iter()
        .filter(|e| e["event"] == "txn_opened" && !e["resend_of"].is_null())
        .count();
    assert_eq!(resent, 20);
    // Pulsar's answer to each ABORT is in the history (a report about an aborted transaction
    // quotes it), not only the request.
    let answered = notes_starting(&h, "the coordinator answered the abort of attempt ");
    assert_eq!(answered, 20);
}

/// The results store `--store` named holds one record, this run's, as its files say.
fn the_store_holds_exactly_this_run(store: &Path, run_dir: &Path) {
    let rt = rt();
    let records = rt.block_on(async {
        let mut s = pulsar_chaos::store::Store::open(&pulsar_chaos::store::Location::Sqlite(
            store.to_path_buf(),
        ))
        .await
        .unwrap();
        s.records().await.unwrap()
    });
    assert_eq!(records.len(), 1, "{records:?}");
    let r = &records[0];
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    let producer: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("producer.json")).unwrap())
            .unwrap();
    assert_eq!(r.run_id, info["run_id"].as_str().unwrap());
    assert_eq!(r.started_ms, info["started_ms"].as_u64().unwrap());
    assert_eq!(r.image.as_deref(), info["image"].as_str());
    assert_eq!(Path::new(&r.run_dir), run_dir);
    assert_eq!(
        (
            r.source.as_str(),
            r.scenario.as_str(),
            r.seed,
            r.client.as_str()
        ),
        ("run", "abort-every", 12, "own")
    );
    assert_eq!(r.pulsar_version, pulsar_chaos::versions::DEFAULT);
    assert_eq!(r.status, "pass");
    assert_eq!((r.expected, r.received, r.missing), (7000, 7000, 0));
    assert_eq!((r.duplicate_copies, r.unexpected, r.ambiguous), (0, 0, 0));
    assert!(r.causes.is_empty() && r.findings.is_empty() && r.recovery_ms.is_empty());
    assert_eq!(r.throughput, producer["messages_per_s"].as_f64());
    assert_eq!(r.scenario_hash.len(), 16);
}

/// Without a history the topic's gap and duplicate are a mismatch (exit 8), the cause unknown:
/// the plain producer here is the "application" whose resend made the duplicate. With a history
/// whose run wrote another partition count, the read is refused as incomplete (exit 4).
#[test]
fn verify_names_the_gap_and_the_duplicate_of_a_plain_producer() {
    rt().block_on(async {
        let tc = shared_standalone();
        let c = &tc.cluster;
        let topic = format!("persistent://public/default/plain-{}", rand_id());
        // A plain (non-transactional) producer of the pulsar crate writes 0..1000 without 500,
        // with 700 twice.
        let mut values: Vec<u64> = (0..1000).filter(|n| *n != 500).collect();
        values.push(700);
        produce_plain(&c.service_url, &topic, values).await;
        let o = run(&[
            "verify",
            "--service-url",
            &c.service_url,
            "--admin-url",
            &c.admin_url,
            "--topic",
            &topic,
            "--count",
            "1000",
            "--json",
        ]);
        let t = String::from_utf8_lossy(&o.stdout).to_string();
        assert_eq!(o.status.code(), Some(8), "{}", text(&o));
        let v: serde_json::Value = serde_json::from_str(&t).unwrap();
        assert_eq!(v["status"], "mismatch");
        let summary = v["summary"].as_str().unwrap();
        assert!(
            summary.starts_with("MISMATCH: the topic is not exactly [0, 1000)")
                && summary.contains("the cause cannot be known"),
            "{summary}"
        );
        assert_eq!(v["missing"][0]["cause"], "unknown");
        assert_eq!(v["missing_total"], 1);
        assert_eq!(v["missing"][0]["start"], 500);
        assert_eq!(v["missing"][0]["end"], 501);
        assert_eq!(v["duplicate_values"], 1);
        assert_eq!(v["duplicates"][0]["start"], 700);
        assert_eq!(v["duplicates"][0]["copies"], 2);
        assert_eq!(
            v["duplicates"][0]["message_ids"]["700"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        assert_eq!(v["received"], 1000);
        // A history whose run wrote 4 partitions does not fit this plain topic: refused.
        let dir = tmpdir("verify-shape");
        let history = write(
            &dir,
            "history.jsonl",
            &format!(
                "{{\"t_ms\":0,\"event\":\"run_started\",\"run_id\":\"r\",\"seed\":1,\"scenario\":\"s\",\"topic\":\"{topic}\",\"partitions\":4,\"messages\":1000,\"resend\":\"retry-commit\",\"wall_ms\":0}}\n"
            ),
        );
        let o = run(&[
            "verify",
            "--service-url",
            &c.service_url,
            "--admin-url",
            &c.admin_url,
            "--topic",
            &topic,
            "--count",
            "1000",
            "--history",
            history.to_str().unwrap(),
            "--json",
        ]);
        assert_eq!(o.status.code(), Some(4), "{}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["status"], "inconclusive");
        let reasons = v["reasons"].to_string();
        assert!(
            reasons.contains("the topic has 1 partition(s) (not partitioned), but the run wrote 4 partitions"),
            "{reasons}"
        );
        // A clean topic passes.
        let clean = format!("persistent://public/default/clean-{}", rand_id());
        produce_plain(&c.service_url, &clean, 0..100).await;
        let o = run(&[
            "verify",
            "--service-url",
            &c.service_url,
            "--admin-url",
            &c.admin_url,
            "--topic",
            &clean,
            "--count",
            "100",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(text(&o).contains("PASS"), "{}", text(&o));
    });
}

#[test]
fn a_run_killed_mid_way_resumes_without_losing_a_number() {
    let dir = tmpdir("resume");
    let scenario = write(
        &dir,
        "resume.yaml",
        &format!(
            "name: resume\n{}workload:\n  topic: persistent://public/default/resume\n  messages: 30000\n  txn_size: 100\n  batch_size: 10\n  concurrency: 4\n  rate: 2000\n  txn_timeout: 10s\n",
            standalone_cluster_yaml()
        ),
    );
    let mut child = spawn_run(&scenario, 13, &dir, &[], false);
    // Kill it once a few thousand numbers are committed.
    let deadline = Instant::now() + Duration::from_secs(300);
    let run_dir = loop {
        let found = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|d| {
                std::fs::read_to_string(d.join("history.jsonl"))
                    .map(|t| t.matches("\"outcome\":\"committed\"").count() >= 40)
                    .unwrap_or(false)
            });
        if let Some(d) = found {
            break d;
        }
        assert!(Instant::now() < deadline, "the run never got going");
        assert!(child.try_wait().unwrap().is_none(), "the run exited early");
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::KILL,
    );
    let _ = child.wait();
    let journaled = pulsar_chaos::journal::read(&run_dir.join("journal"))
        .unwrap()
        .entries
        .len();

    let o = run(&[
        "run",
        "--resume",
        run_dir.to_str().unwrap(),
        "--progress",
        "none",
    ]);
    let t = text(&o);
    let v = verdict(&run_dir);
    assert_eq!(
        v["missing_total"], 0,
        "numbers lost across the resume ({journaled} journaled at the kill): {t}"
    );
    assert_eq!(v["unexpected_total"], 0, "{t}");
    // Nor duplicated: under `verify` (the default) the resume learns what each transaction
    // left in flight became (the coordinator's answer, or a read of the topic) before it sends
    // its numbers again, so a kill costs nothing; durability.rs holds five kills to a pass.
    assert_eq!(v["duplicate_copies"], 0, "{t}");
    assert_eq!(v["status"], "pass", "{t}");
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        std::fs::read_to_string(run_dir.join("history.jsonl"))
            .unwrap()
            .contains("resuming: journal cursor"),
        "{t}"
    );
    // The cluster of the run is gone after the resumed run finished.
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(
        rt().block_on(leftovers(info["run_id"].as_str().unwrap())),
        (0, 0, 0)
    );
}

/// Regression: a stall stops the producer promptly even while every worker is retrying
/// NEW_TXN on a cluster that is gone (seen in a soak: a stall declared at 378 s, the producer
/// ending at 1,816 s, its deadline, because NEW_TXN was retried until then).
#[test]
fn a_stall_stops_the_producer_while_new_txn_is_being_retried() {
    let dir = tmpdir("stall-stop");
    let rt = rt();
    let tc = rt.block_on(TestCluster::start(Topology::Standalone, 1, 1));
    let c = tc.cluster.clone();
    let s = write(
        &dir,
        "stall-stop.yaml",
        "name: stall-stop\nworkload:\n  topic: persistent://public/default/stall-stop\n  messages: 1000000\n  txn_size: 50\n  rate: 2000\n  txn_timeout: 10s\n  op_timeout: 3s\n  deadline: 900s\n  stall_timeout: 15s\n  settle_timeout: 5s\n",
    );
    let mut child = spawn_run(
        &s,
        5,
        &dir,
        &["--service-url", &c.service_url, "--admin-url", &c.admin_url],
        false,
    );
    let history_of = || -> Option<Vec<serde_json::Value>> {
        let d = std::fs::read_dir(&*dir)
            .ok()?
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("stall-stop-"))?;
        // The run directory exists a moment before its history file (regression: the first
        // look found the directory and no history.jsonl yet).
        d.path()
            .join("history.jsonl")
            .exists()
            .then(|| history(&d.path()))
    };
    let committed = |h: &[serde_json::Value]| {
        h.iter()
            .filter(|e| e["event"] == "txn_outcome" && e["outcome"] == "committed")
            .count()
    };
    let until = Instant::now() + Duration::from_secs(300);
    while history_of().map_or(0, |h| committed(&h)) < 20 {
        assert!(
            Instant::now() < until,
            "the run never committed 20 transactions"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The cluster goes away under the producer (not a fault of the plan: the stall watch runs).
    let node = c
        .nodes
        .iter()
        .find(|n| n.role != pulsar_chaos::cluster::Role::Init)
        .unwrap()
        .clone();
    rt.block_on(c.kill(&node)).unwrap();
    let until = Instant::now() + Duration::from_secs(300);
    let h = loop {
        let h = history_of().unwrap();
        if h.iter().any(|e| e["event"] == "producer_finished") {
            break h;
        }
        assert!(
            Instant::now() < until,
            "the producer did not finish within 300 s"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let _ = child.kill();
    let _ = child.wait();
    let t = |event: &str| {
        h.iter()
            .find(|e| e["event"] == event)
            .and_then(|e| e["t_ms"].as_u64())
            .unwrap_or_else(|| panic!("no {event}"))
    };
    let (stalled, finished) = (t("stalled"), t("producer_finished"));
    assert!(
        finished - stalled < 90_000,
        "the producer ended {} ms after the stall",
        finished - stalled
    );
}
