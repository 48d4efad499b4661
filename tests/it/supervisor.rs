//! What keeps a run's data and nodes as production would (issue 29, items 2 and 9): the
//! retention guard subscription made before the first message (and a cluster that refuses it
//! refuses the run), and the supervisor that starts a node again after it exited on its own,
//! while leaving alone the node a restart fault holds down.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pulsar_chaos::scenario::Topology;

use crate::common::*;

/// The position of the first event matching `pred`.
fn position(h: &[serde_json::Value], pred: impl Fn(&serde_json::Value) -> bool) -> Option<usize> {
    h.iter().position(pred)
}

fn is(e: &serde_json::Value, event: &str) -> bool {
    e["event"] == event
}

#[test]
fn the_retention_guard_holds_the_topic_before_the_first_message_and_a_refusal_exits_2() {
    let t0 = Instant::now();
    let dir = tmpdir("guard");
    let rt = rt();
    let tc = rt.block_on(TestCluster::start(Topology::Standalone, 1, 1));
    let (svc, adm) = (tc.cluster.service_url.clone(), tc.cluster.admin_url.clone());
    let urls = ["--service-url", svc.as_str(), "--admin-url", adm.as_str()];
    let s = write(
        &dir,
        "guard.yaml",
        "name: guard\nworkload:\n  topic: persistent://public/default/guard\n  partitions: 2\n  messages: 3000\n  txn_size: 50\n  txn_timeout: 20s\n  op_timeout: 5s\nfaults: []\n",
    );
    let o = run_scenario(&s, 1, &dir, &urls);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let run_dir = run_dir_of(&out);
    let h = history(&run_dir);
    let guard = position(&h, |e| {
        is(e, "note")
            && e["message"].as_str().is_some_and(|m| {
                m.starts_with("retention guard: the durable subscription pulsar-chaos-retain")
            })
    })
    .unwrap_or_else(|| panic!("no retention guard note in the history: {h:?}"));
    let first_txn = position(&h, |e| is(e, "txn_opened")).expect("transactions were opened");
    assert!(
        guard < first_txn,
        "the guard ({guard}) came after the first txn_opened ({first_txn})"
    );
    // Every partition holds the guard, its cursor still at the start: it holds every entry
    // (msgBacklog counts batched entries and transaction markers, not numbers).
    let topic = serde_json::from_str::<serde_json::Value>(
        &std::fs::read_to_string(run_dir.join("run.json")).unwrap(),
    )
    .unwrap()["topic"]
        .as_str()
        .unwrap()
        .to_string();
    let admin = pulsar_chaos::admin::Admin::new(&adm);
    for p in 0..2 {
        let part = format!("{topic}-partition-{p}");
        let stats = rt.block_on(admin.topic_stats(&part)).unwrap();
        let sub = &stats["subscriptions"]["pulsar-chaos-retain"];
        assert!(sub.is_object(), "{part} has no guard: {stats}");
        let backlog = sub["msgBacklog"].as_u64().unwrap_or(0);
        assert!(backlog > 0, "{part}: the guard holds nothing: {sub}");
    }

    // A namespace Pulsar refuses: the run is refused before anything is produced (exit 2),
    // naming the topic and Pulsar's answer.
    let s = write(
        &dir,
        "refused.yaml",
        "name: refused\nworkload:\n  topic: persistent://no-such-tenant/default/guard\n  partitions: 2\n  messages: 100\nfaults: []\n",
    );
    let o = run_scenario(&s, 1, &dir, &urls);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(
        out.contains("refusing to run: cannot make persistent://no-such-tenant/default/guard-"),
        "{out}"
    );
    assert!(
        out.contains("pulsar-chaos-retain") && out.contains("HTTP 4"),
        "{out}"
    );
    assert!(!out.contains("producer: "), "a refused run produced: {out}");
    eprintln!("guard test: {:.0}s", t0.elapsed().as_secs_f64());
}

/// The run's directory under `out`, once it has `history.jsonl`.
fn run_dir_in(out: &Path) -> Option<PathBuf> {
    std::fs::read_dir(out)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.join("history.jsonl").exists())
}

fn events(run_dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run_dir.join("history.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Wait for `found` while the run is alive; the run's stderr on failure.
fn wait_for<T>(
    child: &mut Child,
    log: &Path,
    what: &str,
    mut found: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Some(v) = found() {
            return v;
        }
        let log = || std::fs::read_to_string(log).unwrap_or_default();
        assert!(Instant::now() < deadline, "{what} never came:\n{}", log());
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before {what}:\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_broker_that_exits_on_its_own_is_started_again_and_the_run_passes() {
    let t0 = Instant::now();
    let dir = tmpdir("own-exit");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    // broker-1 is killed by a fault and held down for 4 s: the supervisor must leave it to
    // the fault. broker-2 is then made to exit by the test, outside the nemesis.
    let s = write(
        &dir,
        "own-exit.yaml",
        "name: own-exit\ncluster: { topology: cluster, brokers: 2, bookies: 1 }\nworkload:\n  topic: persistent://public/default/own-exit\n  partitions: 2\n  messages: 9000\n  txn_size: 50\n  rate: 250\n  txn_timeout: 15s\n  op_timeout: 5s\n  deadline: 300s\n  stall_timeout: 60s\nfaults:\n  - kind: broker_restart\n    mode: kill\n    down_for: 4s\n    target: broker-1\n    schedule: { at: [2s] }\n",
    );
    let log = dir.join("run.log");
    let mut child = bin()
        .args(run_args(&s, 3, &out, &[]))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let run_dir = wait_for(&mut child, &log, "the run directory", || run_dir_in(&out));
    // After the fault's heal, and some commits after it.
    wait_for(&mut child, &log, "commits after the fault's heal", || {
        let h = events(&run_dir);
        let healed = position(&h, |e| is(e, "fault_healed"))?;
        let after = h[healed..]
            .iter()
            .filter(|e| is(e, "txn_outcome") && e["outcome"] == "committed")
            .count();
        (after >= 10).then_some(())
    });
    let run_id = serde_json::from_str::<serde_json::Value>(
        &std::fs::read_to_string(run_dir.join("run.json")).unwrap(),
    )
    .unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let broker2 = format!("pc-{run_id}-broker-2");
    // The broker shuts itself down (SIGTERM to its JVM, the container's main process).
    let o = Command::new("docker")
        .args(["exec", &broker2, "sh", "-c", "kill -TERM 1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "docker exec kill: {}", text(&o));
    let status = child.wait().unwrap();
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    let h = events(&run_dir);
    let exited = position(&h, |e| is(e, "node_exited") && e["node"] == "broker-2")
        .unwrap_or_else(|| panic!("no node_exited for broker-2:\n{stderr}"));
    let e = &h[exited];
    assert_eq!(e["container"], broker2.as_str(), "{e}");
    assert!(
        e["log"].as_array().is_some_and(|l| !l.is_empty()),
        "no log lines with the exit: {e}"
    );
    let restarted = position(&h, |e| is(e, "node_restarted") && e["node"] == "broker-2")
        .unwrap_or_else(|| panic!("no node_restarted for broker-2:\n{stderr}"));
    assert!(restarted > exited);
    assert_eq!(h[restarted]["ok"], true, "{}", h[restarted]);
    // The node the fault held down was the fault's to start: no own exit of broker-1.
    assert!(
        !h.iter()
            .any(|e| is(e, "node_exited") && e["node"] == "broker-1"),
        "the supervisor took the fault's kill for an own exit:\n{stderr}"
    );
    let healed = h
        .iter()
        .find(|e| is(e, "fault_healed"))
        .expect("the fault was healed");
    assert_eq!(healed["ok"], true, "{healed}");
    // A complete verdict: the run's only hurts were restarts.
    assert_eq!(status.code(), Some(0), "{stderr}");
    let v = verdict(&run_dir);
    assert_eq!(v["status"], "pass", "{v}");
    let page = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(
        page.contains("Pulsar's own exits") && page.contains(&broker2),
        "the report does not show the exit"
    );
    eprintln!(
        "own-exit test: {:.0}s; {}; {}",
        t0.elapsed().as_secs_f64(),
        h[exited],
        h[restarted]
    );
}
