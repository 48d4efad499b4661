//! Issue 10, points 4 and 5: a harness killed again and again never reuses an attempt number
//! and loses nothing; a SEND the broker drops as a duplicate fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use pulsar::message::proto::TxnAction;
use pulsar_chaos::admin::Admin;
use pulsar_chaos::scenario::Topology;
use pulsar_chaos::seed::Rng;
use pulsar_chaos::txn::coordinator::Coordinators;
use pulsar_chaos::txn::producer::PartitionProducer;
use pulsar_chaos::txn::{Client, TxnError};

use crate::common::*;

/// The events of a history written so far (a line still being written is skipped).
pub(crate) fn events(run_dir: &Path) -> Vec<serde_json::Value> {
    events_in(run_dir, "history.jsonl")
}

/// The same for another history of the run directory (`history-in.jsonl`).
pub(crate) fn events_in(run_dir: &Path, file: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run_dir.join(file))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Right after a transaction opened: its SENDs are going out.
    Sending,
    /// After a commit was requested: commits are under way.
    Committing,
    /// After a resumed run opened a transaction for numbers of an earlier attempt.
    Resending,
}

fn reached(phase: Phase, e: &serde_json::Value) -> bool {
    match phase {
        Phase::Sending => e["event"] == "txn_opened",
        Phase::Committing => e["event"] == "commit_requested",
        Phase::Resending => e["event"] == "txn_opened" && e.get("resend_of").is_some(),
    }
}

pub(crate) fn resume(run_dir: &Path, log: &Path) -> Child {
    bin()
        .args([
            "run",
            "--resume",
            run_dir.to_str().unwrap(),
            "--progress",
            "none",
        ])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

/// Poll `found` every 20 ms until it gives a value, for up to 300 s; fails (with the logs under
/// `dir`) when the time runs out or the run `child` exits first.
pub(crate) fn wait_for_moment<T>(
    dir: &Path,
    child: &mut Child,
    what: &str,
    mut found: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Some(v) = found() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "{what} never came: {}",
            logs(dir)
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before {what} (make the workload longer): {}",
            logs(dir)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGKILL the harness and wait for it; the attempts its journal holds in flight.
pub(crate) fn kill_now(child: &mut Child, run_dir: &Path) -> usize {
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_child(child),
        rustix::process::Signal::KILL,
    );
    let _ = child.wait();
    pulsar_chaos::journal::read(&run_dir.join("journal"))
        .map(|l| l.entries.len())
        .unwrap_or(0)
}

pub(crate) fn logs(dir: &Path) -> String {
    let mut out = String::new();
    for k in 0..20 {
        if let Ok(t) = std::fs::read_to_string(dir.join(format!("segment-{k}.log"))) {
            out.push_str(&format!("--- segment {k}\n{t}"));
        }
    }
    out
}

/// The run directory under `dir`, once the run has written its run.json (by condition; the
/// run must not exit first).
pub(crate) fn wait_run_dir(dir: &Path, child: &mut Child) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let found = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|d| d.join("run.json").exists());
        if let Some(d) = found {
            return d;
        }
        assert!(Instant::now() < deadline, "no run directory: {}", logs(dir));
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run exited early: {}",
            logs(dir)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Start a run, SIGKILL it `kills` times at seeded moments (right after a transaction opened,
/// while commits are under way, while a resumed run resends), resume it after each kill, and
/// check the end: PASS, every attempt number used once, and the verdict equal to what an
/// independent client reads.
fn kill_and_resume(name: &str, seed: u64, kills: usize, faults: &str) {
    let started = Instant::now();
    let dir = tmpdir(name);
    let scenario = write(
        &dir,
        &format!("{name}.yaml"),
        &format!(
            "name: {name}\n{}workload:\n  topic: persistent://public/default/{name}\n  partitions: 2\n  messages: 30000\n  txn_size: 100\n  batch_size: 10\n  concurrency: 4\n  rate: 1000\n  txn_timeout: 10s\n  resend: verify\n{faults}",
            standalone_cluster_yaml()
        ),
    );
    let mut rng = Rng::derive(seed, "kill-moments");
    let mut child = {
        let log = std::fs::File::create(dir.join("segment-0.log")).unwrap();
        bin()
            .args([
                "run",
                scenario.to_str().unwrap(),
                "--seed",
                &seed.to_string(),
                "--out",
                dir.to_str().unwrap(),
                "--keep-cluster",
                "--progress",
                "none",
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let run_dir = wait_run_dir(&dir, &mut child);
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    let _down = Down(info["run_id"].as_str().unwrap().to_string());

    let mut done = Vec::new();
    for k in 0..kills {
        let from = events(&run_dir).len();
        let phase = match rng.below(if k == 0 { 2 } else { 3 }) {
            0 => Phase::Sending,
            1 => Phase::Committing,
            _ => Phase::Resending,
        };
        // A resumed run resends only what the kill left in flight; when nothing was, the
        // kill lands on its sends instead.
        let give_up_on_resend = Instant::now() + Duration::from_secs(30);
        let landed = wait_for_moment(&dir, &mut child, &format!("kill {k}: {phase:?}"), || {
            let ev = events(&run_dir);
            [phase, Phase::Sending].into_iter().find(|p| {
                (*p == phase || Instant::now() > give_up_on_resend)
                    && ev.iter().skip(from).any(|e| reached(*p, e))
            })
        });
        // The moment itself is seeded: up to 400 ms after the phase showed.
        let delay = rng.below(400);
        std::thread::sleep(Duration::from_millis(delay));
        let in_flight = kill_now(&mut child, &run_dir);
        done.push(format!("{landed:?}+{delay}ms ({in_flight} in the journal)"));
        child = resume(&run_dir, &dir.join(format!("segment-{}.log", k + 1)));
    }
    let status = child.wait().unwrap();
    let t = logs(&dir);
    eprintln!(
        "{name}: kills {done:?}; {:.0}s in all",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(status.code(), Some(0), "kills {done:?}:\n{t}");

    let h = history(&run_dir);
    let resumes = notes_starting(&h, "resuming: journal cursor");
    assert_eq!(resumes, kills, "{t}");
    // Point 4: no attempt number was handed out twice.
    let mut attempts: Vec<u64> = h
        .iter()
        .filter(|e| e["event"] == "txn_opened")
        .map(|e| e["attempt"].as_u64().unwrap())
        .collect();
    let opened = attempts.len();
    attempts.sort_unstable();
    attempts.dedup();
    assert_eq!(
        attempts.len(),
        opened,
        "an attempt number was reused: kills {done:?}"
    );

    let v = verdict(&run_dir);
    assert_eq!(v["status"], "pass", "kills {done:?}: {v}\n{t}");
    assert_eq!(v["missing_total"], 0, "{v}");
    assert_eq!(v["duplicate_copies"], 0, "{v}");
    assert_eq!(v["unexpected_total"], 0, "{v}");
    // The same from a client that shares no code with the harness.
    let payloads = rt().block_on(independent_readback(
        info["service_url"].as_str().unwrap(),
        info["topic"].as_str().unwrap(),
    ));
    let mut got = numbers(&payloads);
    assert_eq!(got.len(), 30000, "kills {done:?}");
    got.sort_unstable();
    got.dedup();
    assert_eq!(got, (0..30000).collect::<Vec<u64>>(), "kills {done:?}");
}

#[test]
fn a_run_killed_five_times_at_seeded_moments_resumes_to_a_pass() {
    kill_and_resume("killed-5", 1005, 5, "");
}

#[test]
fn a_run_killed_five_times_around_a_broker_kill_resumes_to_a_pass() {
    // The standalone (broker, bookie and coordinator in one) is killed 6 s into the run,
    // while the harness is being killed and resumed.
    kill_and_resume(
        "killed-5-broker",
        2005,
        5,
        "faults:\n  - kind: broker_restart\n    mode: kill\n    down_for: 2s\n    schedule: { at: [6s] }\n",
    );
}

/// Point 5: on a topic with deduplication on, a SEND whose sequence id is not above the last
/// persisted one gets the receipt -1:-1, and the producer reports the send failed; then a run
/// with `deduplication: true` ends PASS on the same cluster.
#[test]
fn a_send_dropped_as_a_duplicate_fails_and_a_run_with_deduplication_passes() {
    let tc = rt().block_on(TestCluster::start(Topology::Standalone, 1, 1));
    let c = tc.cluster.clone();
    rt().block_on(async {
        let admin = Admin::new(&c.admin_url);
        let topic = format!("persistent://public/default/dedup-{}", rand_id());
        admin.create_topic(&topic).await.unwrap();
        admin.set_deduplication(&topic, true).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while admin
            .deduplication_status(&topic)
            .await
            .ok()
            .flatten()
            .as_deref()
            != Some("Enabled")
        {
            assert!(Instant::now() < deadline, "deduplication never enabled");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let client = Client::new(&c.service_url, Duration::from_secs(10));
        let tcs = Coordinators::discover(client.clone()).await.unwrap();
        let op_deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let txn = tcs
            .new_txn(Duration::from_secs(60), op_deadline)
            .await
            .unwrap();
        tcs.add_partitions(txn, std::slice::from_ref(&topic), op_deadline)
            .await
            .unwrap();
        let p = PartitionProducer::new(client.clone(), &topic, "dedup-test", true);
        let timeout = Duration::from_secs(10);
        let a = p.send(Some(txn), b"0".to_vec(), timeout).await.unwrap();
        let b = p.send(Some(txn), b"1".to_vec(), timeout).await.unwrap();
        assert_eq!(b.sequence_id, a.sequence_id + 1);
        let again = p
            .send_with_sequence_id(Some(txn), b"0".to_vec(), a.sequence_id, timeout)
            .await;
        assert!(
            matches!(again, Err(TxnError::DuplicateDropped(_))),
            "expected the broker to drop it: {again:?}"
        );
        // The producer goes on above the dropped id.
        let d = p.send(Some(txn), b"2".to_vec(), timeout).await.unwrap();
        assert!(d.sequence_id > b.sequence_id, "{d:?}");
        // Point 5's ordering: 200 SENDs raced from 50 tasks on one producer. Each sequence id
        // is handed out and its SEND queued under one lock, so they leave in order and the
        // broker (deduplication on) drops none; were the id taken before the queueing without
        // the lock, a later id could overtake an earlier one and the earlier be dropped as a
        // duplicate.
        let p = std::sync::Arc::new(p);
        let mut tasks = Vec::new();
        for t in 0..50u64 {
            let p = p.clone();
            tasks.push(tokio::spawn(async move {
                let mut out = Vec::new();
                for i in 0..4u64 {
                    out.push(
                        p.send(
                            Some(txn),
                            format!("{}", 100 + t * 4 + i).into_bytes(),
                            timeout,
                        )
                        .await,
                    );
                }
                out
            }));
        }
        let mut ids = Vec::new();
        for task in tasks {
            for r in task.await.unwrap() {
                match r {
                    Ok(sent) => ids.push(sent.sequence_id),
                    Err(e) => panic!("a concurrent SEND failed (out of order?): {e:?}"),
                }
            }
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 200, "every SEND got its own sequence id");
        tcs.end_txn(txn, TxnAction::Abort).await.unwrap();
    });

    let dir = tmpdir("dedup-run");
    // `rate:` makes the producer last at least 5 s, so the unload at 2 s fires (a run whose
    // faults were all skipped is inconclusive, not a pass).
    let scenario = write(
        &dir,
        "dedup.yaml",
        &format!(
            "name: dedup\ncluster: {{ service_url: {}, admin_url: {} }}\nworkload:\n  topic: persistent://public/default/dedup-run\n  partitions: 2\n  messages: 20000\n  txn_size: 100\n  batch_size: 10\n  concurrency: 4\n  rate: 4000\n  txn_timeout: 10s\n  deduplication: true\nfaults:\n  - kind: topic_unload\n    schedule: {{ at: [2s] }}\n",
            c.service_url, c.admin_url
        ),
    );
    let o = run_scenario(&scenario, 7, &dir, &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let run_dir = run_dir_of(&t);
    assert_eq!(verdict(&run_dir)["status"], "pass", "{t}");
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    let topic = info["topic"].as_str().unwrap().to_string();
    rt().block_on(async {
        let admin = Admin::new(&c.admin_url);
        assert_eq!(
            admin
                .deduplication_status(&format!("{topic}-partition-0"))
                .await
                .unwrap()
                .as_deref(),
            Some("Enabled")
        );
        let mut got = numbers(&independent_readback(&c.service_url, &topic).await);
        assert_eq!(got.len(), 20000);
        got.sort_unstable();
        got.dedup();
        assert_eq!(got.len(), 20000);
    });
}

/// Issue 10: the harness SIGKILLed while a fault of its own holds the standalone down (killed,
/// to be restarted 40 s later). The resumed run must bring the broker back itself (the
/// interrupted run can no longer heal it), not fail with "exited before ready", and end PASS.
#[test]
fn a_run_killed_while_its_broker_is_down_restarts_it_on_resume_and_passes() {
    let dir = tmpdir("killed-broker-down");
    let scenario = write(
        &dir,
        "down.yaml",
        &format!(
            "name: down\n{}workload:\n  topic: persistent://public/default/down\n  partitions: 2\n  messages: 20000\n  txn_size: 100\n  concurrency: 4\n  rate: 1000\n  txn_timeout: 10s\n  resend: verify\nfaults:\n  - kind: broker_restart\n    mode: kill\n    down_for: 40s\n    schedule: {{ at: [4s] }}\n",
            standalone_cluster_yaml()
        ),
    );
    let log0 = std::fs::File::create(dir.join("segment-0.log")).unwrap();
    let mut child = bin()
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--seed",
            "5",
            "--out",
            dir.to_str().unwrap(),
            "--keep-cluster",
            "--progress",
            "none",
        ])
        .stdout(Stdio::null())
        .stderr(log0)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    let run_dir = wait_run_dir(&dir, &mut child);
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    let _down = Down(info["run_id"].as_str().unwrap().to_string());
    // Wait for the kill to land, then kill the harness while the broker is down.
    loop {
        if events(&run_dir)
            .iter()
            .any(|e| e["event"] == "fault_started" && e["kind"] == "broker_restart")
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the fault never started: {}",
            logs(&dir)
        );
        assert!(child.try_wait().unwrap().is_none(), "{}", logs(&dir));
        std::thread::sleep(Duration::from_millis(20));
    }
    // At once: Docker may not have noticed the kill(2) yet when the resumed run looks, which
    // is the case that left the broker dead before (a start of a container still counted as
    // running is a no-op).
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::KILL,
    );
    let _ = child.wait();
    let mut child = resume(&run_dir, &dir.join("segment-1.log"));
    let status = child.wait().unwrap();
    let t = logs(&dir);
    assert_eq!(status.code(), Some(0), "{t}");
    let v = verdict(&run_dir);
    assert_eq!(v["status"], "pass", "{v}\n{t}");
}
