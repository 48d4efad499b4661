//! Issue 13: journal and `--resume` for a transform run as for the producer. The harness is
//! SIGKILLed at seeded moments — during the input's fill, right after a transaction opened,
//! while commits are under way — and resumed after each kill. The end must be a PASS that an
//! independent client agrees with: the output holds [0, N) exactly once, the input [0, N)
//! once, and the subscription's backlog is 0; no attempt number was used twice; and the
//! transactions a kill left in flight were settled on the coordinator's words.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use pulsar_chaos::admin::Admin;
use pulsar_chaos::scenario::transform::{input_topic, SUBSCRIPTION};
use pulsar_chaos::seed::Rng;

use crate::common::*;
use crate::durability::{events, events_in, kill_now, logs, resume, wait_for_moment, wait_run_dir};

const N: u64 = 20_000;

/// Where a kill lands.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Moment {
    /// The input's fill has sent something and is not checked yet.
    Filling,
    /// A transform attempt opened its transaction: its SENDs and ACKs are going out.
    Transacting,
    /// A transform attempt asked to commit.
    Committing,
}

/// Whether the run has reached `m` since the first `from` events of its history.
fn reached(m: Moment, run_dir: &Path, from: usize) -> bool {
    let after = |event: &str| {
        events(run_dir)
            .iter()
            .skip(from)
            .any(|e| e["event"] == event)
    };
    match m {
        Moment::Filling => {
            !run_dir.join("input.json").exists()
                && events_in(run_dir, "history-in.jsonl")
                    .iter()
                    .any(|e| e["event"] == "txn_opened")
        }
        Moment::Transacting => after("txn_opened"),
        Moment::Committing => after("commit_requested"),
    }
}

#[test]
fn a_transform_killed_at_seeded_moments_resumes_to_a_pass() {
    let started = Instant::now();
    let dir = tmpdir("transform-killed");
    let scenario = write(
        &dir,
        "transform-killed.yaml",
        &format!(
            "name: transform-killed\n{}workload:\n  kind: transform\n  topic: persistent://public/default/transform-killed\n  partitions: 2\n  messages: {N}\n  txn_size: 10\n  batch_size: 1\n  consumers: 4\n  txn_timeout: 10s\n  deadline: 5m\n",
            standalone_cluster_yaml()
        ),
    );
    let mut rng = Rng::derive(1313, "kill-moments");
    let mut child = bin()
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--seed",
            "13",
            "--out",
            dir.to_str().unwrap(),
            "--keep-cluster",
            "--progress",
            "none",
        ])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("segment-0.log")).unwrap())
        .spawn()
        .unwrap();
    let run_dir = wait_run_dir(&dir, &mut child);
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    let _down = Down(info["run_id"].as_str().unwrap().to_string());

    let plan = [
        Moment::Filling,
        if rng.below(2) == 0 {
            Moment::Transacting
        } else {
            Moment::Committing
        },
        Moment::Committing,
        Moment::Transacting,
    ];
    let mut done = Vec::new();
    for (k, moment) in plan.iter().enumerate() {
        let from = events(&run_dir).len();
        wait_for_moment(&dir, &mut child, &format!("kill {k}: {moment:?}"), || {
            reached(*moment, &run_dir, from).then_some(())
        });
        // The moment itself is seeded: up to 300 ms after it showed.
        let delay = rng.below(300);
        std::thread::sleep(Duration::from_millis(delay));
        let in_flight = kill_now(&mut child, &run_dir);
        let filled = run_dir.join("input.json").exists();
        done.push(format!(
            "{moment:?}+{delay}ms ({in_flight} in the journal, input filled: {filled})"
        ));
        child = resume(&run_dir, &dir.join(format!("segment-{}.log", k + 1)));
    }
    let status = child.wait().unwrap();
    let t = logs(&dir);
    eprintln!(
        "transform kills {done:?}; {:.0}s in all",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(status.code(), Some(0), "kills {done:?}:\n{t}");

    let h = history(&run_dir);
    // The first kill cut the fill short: it was thrown away and done again; every later
    // resume continued the transform.
    assert_eq!(
        notes_starting(&h, "resuming: the fill of"),
        1,
        "kills {done:?}:\n{t}"
    );
    assert_eq!(
        notes_starting(&h, "resuming the transform:"),
        plan.len(),
        "kills {done:?}:\n{t}"
    );
    // Transactions the kills left in flight were settled on the coordinator's words.
    let settled = h
        .iter()
        .filter(|e| {
            e["event"] == "txn_outcome"
                && e["detail"]
                    .as_str()
                    .unwrap()
                    .starts_with("after the interruption")
        })
        .count();
    assert!(settled >= 1, "kills {done:?}: no leftover settled:\n{t}");
    let mut attempts: Vec<u64> = h
        .iter()
        .filter(|e| e["event"] == "txn_opened")
        .map(|e| e["attempt"].as_u64().unwrap())
        .collect();
    let opened = attempts.len();
    attempts.sort_unstable();
    attempts.dedup();
    assert_eq!(attempts.len(), opened, "an attempt number was reused");

    let v = verdict(&run_dir);
    assert_eq!(v["status"], "pass", "kills {done:?}: {v}\n{t}");
    let service_url = info["service_url"].as_str().unwrap();
    let topic = info["topic"].as_str().unwrap();
    rt().block_on(async {
        for (t, what) in [(topic.to_string(), "output"), (input_topic(topic), "input")] {
            let mut got = numbers(&independent_readback(service_url, &t).await);
            got.sort_unstable();
            assert_eq!(got.len() as u64, N, "{what}: kills {done:?}");
            assert_eq!(got, (0..N).collect::<Vec<u64>>(), "{what}: kills {done:?}");
        }
        let admin = Admin::new(info["admin_url"].as_str().unwrap());
        for p in 0..2 {
            let part = format!("{}-partition-{p}", input_topic(topic));
            let stats = admin.topic_stats(&part).await.unwrap();
            assert_eq!(
                stats["subscriptions"][SUBSCRIPTION]["msgBacklog"].as_u64(),
                Some(0),
                "{part}: {}",
                stats["subscriptions"]
            );
        }
    });

    // Without the fill's mark, a resume must not take the transform's input for an unfinished
    // fill (deleting it would throw the transform's progress away): it refuses, and the input
    // is still there.
    std::fs::remove_file(run_dir.join("input.json")).unwrap();
    let log = dir.join("segment-unmarked.log");
    let status = resume(&run_dir, &log).wait().unwrap();
    let said = std::fs::read_to_string(&log).unwrap();
    assert_ne!(status.code(), Some(0), "{said}");
    assert!(said.contains("the transform had started"), "{said}");
    rt().block_on(async {
        let got = numbers(&independent_readback(service_url, &input_topic(topic)).await);
        assert_eq!(got.len() as u64, N, "the input after the refused resume");
    });
}
