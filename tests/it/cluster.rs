//! Issue 2: a real Pulsar in Docker, started and stopped from our own code.

use std::time::{Duration, Instant};

use pulsar_chaos::admin::Admin;
use pulsar_chaos::cluster::{Role, STOP_TIMEOUT};
use pulsar_chaos::plan::{PlannedFault, PlannedTarget, Trigger};
use pulsar_chaos::scenario::{FaultKind, RestartMode, Topology};
use pulsar_chaos::txn::coordinator::TC_ASSIGN_TOPIC;

use crate::common::*;

#[test]
fn standalone_comes_up_restarts_and_leaves_nothing() {
    rt().block_on(async {
        let tc = TestCluster::start(Topology::Standalone, 1, 1).await;
        let c = &tc.cluster;
        let admin = Admin::new(&c.admin_url);
        let stats = admin.coordinator_stats().await.unwrap();
        assert!(
            !stats.is_empty() && stats.values().all(|s| s.state == "Ready"),
            "{stats:?}"
        );
        let node = c.nodes_of(Role::Standalone)[0].clone();
        // The JVM runs with the setting the tests ask for (`it_jvm`), restarted or not.
        let first_tier_only = |name: &str| {
            let o = std::process::Command::new("docker")
                .args(["exec", name, "cat", "/proc/1/cmdline"])
                .output()
                .unwrap();
            let cmdline = String::from_utf8_lossy(&o.stdout).replace('\0', " ");
            assert!(cmdline.contains("java"), "{cmdline}");
            cmdline.contains("-XX:TieredStopAtLevel=1")
        };
        let quick = it_jvm() == pulsar_chaos::scenario::Jvm::Quick;
        assert_eq!(first_tier_only(&node.name), quick);

        // Graceful restart, then kill: ready again each time.
        c.stop(&node, STOP_TIMEOUT).await.unwrap();
        assert!(!c.is_running(&node).await.unwrap());
        c.start(&node).await.unwrap();
        pulsar_chaos::ready::wait_ready(c, Duration::from_secs(300))
            .await
            .expect("ready after a graceful restart");
        c.kill(&node).await.unwrap();
        assert!(!c.is_running(&node).await.unwrap());
        c.start(&node).await.unwrap();
        pulsar_chaos::ready::wait_ready(c, Duration::from_secs(300))
            .await
            .expect("ready after a kill");
        assert_eq!(first_tier_only(&node.name), quick);

        let run_id = tc.run_id();
        let removed = c.down().await.unwrap();
        assert!(!removed.containers.is_empty());
        assert_eq!(leftovers(&run_id).await, (0, 0, 0));
    });
}

#[test]
fn two_brokers_serve_and_a_topic_moves_when_its_owner_dies() {
    rt().block_on(async {
        let tc = TestCluster::start(Topology::Cluster, 2, 1).await;
        let c = &tc.cluster;
        let brokers = c.brokers();
        assert_eq!(brokers.len(), 2);
        for b in &brokers {
            Admin::new(&b.admin_url)
                .broker_ready()
                .await
                .unwrap_or_else(|e| panic!("broker-{} serves: {e}", b.index));
        }
        // Load a topic by producing to it, then find its owner.
        let topic = format!("persistent://public/default/owner-{}", rand_id());
        let client = pulsar_chaos::txn::Client::new(&c.service_url, Duration::from_secs(10));
        let p = pulsar_chaos::txn::producer::PartitionProducer::new(
            client.clone(),
            &topic,
            "owner-test",
            false,
        );
        p.send(None, b"1".to_vec(), Duration::from_secs(10))
            .await
            .unwrap();
        let admin1 = Admin::new(&brokers[0].admin_url);
        let owner_url = admin1.lookup(&topic).await.unwrap().broker_url;
        let owner = c
            .broker_by_url(&owner_url)
            .expect("the owner is one of ours");
        let other = brokers
            .iter()
            .find(|b| b.index != owner.index)
            .unwrap()
            .clone();

        // The coordinator's owner resolves too.
        let tc_owner = admin1
            .lookup(&format!("{TC_ASSIGN_TOPIC}-partition-0"))
            .await
            .unwrap();
        assert!(
            c.broker_by_url(&tc_owner.broker_url).is_some(),
            "{tc_owner:?}"
        );

        c.kill(&owner.node).await.unwrap();
        let survivor = Admin::new(&other.admin_url);
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            // Producing again makes the survivor take the topic over.
            let _ = p.send(None, b"2".to_vec(), Duration::from_secs(5)).await;
            if let Ok(l) = survivor.lookup(&topic).await {
                if c.broker_by_url(&l.broker_url).map(|b| b.index) == Some(other.index) {
                    break;
                }
            }
            assert!(
                Instant::now() < deadline,
                "the topic never moved to broker-{}",
                other.index
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        client.close_all().await;
        let run_id = tc.run_id();
        c.down().await.unwrap();
        assert_eq!(leftovers(&run_id).await, (0, 0, 0));
    });
}

/// Probe the broker's HTTP port from the host: (failures, slowest) of `n` probes.
async fn probe(admin: &Admin, n: usize) -> (usize, Duration) {
    let mut failures = 0;
    let mut slowest = Duration::ZERO;
    for _ in 0..n {
        let t = Instant::now();
        if admin.broker_ready().await.is_err() {
            failures += 1;
        }
        slowest = slowest.max(t.elapsed());
    }
    (failures, slowest)
}

#[test]
fn packet_loss_hurts_and_is_gone_after_heal() {
    rt().block_on(async {
        let tc = TestCluster::start(Topology::Standalone, 1, 1).await;
        let c = tc.cluster.clone();
        let admin = Admin::with_timeout(&c.admin_url, Duration::from_millis(1500));
        let (before, _) = probe(&admin, 20).await;
        assert_eq!(before, 0, "probes fail before any fault");

        let tools = pulsar_chaos::cluster::image::tools_image(
            c.engine(),
            &c.image,
            pulsar_chaos::versions::DEFAULT,
        )
        .await
        .unwrap();
        let nem = pulsar_chaos::nemesis::Nemesis::new(
            c.clone(),
            Admin::new(&c.admin_url),
            tools,
            "persistent://public/default/x".into(),
            1,
        );
        let f = PlannedFault {
            id: 0,
            name: "loss#1".into(),
            fault: "loss".into(),
            fault_index: 0,
            trigger: Trigger::AtMs(0),
            guard: None,
            target: PlannedTarget::Broker { index: 1 },
            kind: FaultKind::PacketLoss {
                percent: 80,
                duration: Duration::from_secs(10),
            },
            draw_seed: None,
        };
        let target = nem.prepare(&f).await.expect("the target resolves");
        let applied = nem.inject(&f, &target).await.expect("packet loss applies");
        assert!(applied.detail.contains("method: "), "{}", applied.detail);
        let (during, slowest) = probe(&admin, 20).await;
        assert!(
            during >= 5 || slowest > Duration::from_millis(1000),
            "80% loss had no effect: {during} failures, slowest {slowest:?}"
        );
        nem.heal(&f, &applied).await.expect("heal");
        let (after, _) = probe(&admin, 20).await;
        assert_eq!(after, 0, "probes still fail after the heal");
        assert!(pulsar_chaos::nemesis::journal::outstanding(&c.run_id).is_empty());

        // Regression: a kill by kill(2) with no hold, healed at once. Docker had not yet seen
        // the container exit, so `docker start` was a no-op and the broker stayed down.
        let kill = PlannedFault {
            name: "kill#1".into(),
            fault: "kill".into(),
            kind: FaultKind::BrokerRestart {
                mode: RestartMode::Kill,
                down_for: Duration::ZERO,
            },
            ..f.clone()
        };
        let node = c
            .node(Role::Standalone, 1)
            .or_else(|| c.node(Role::Broker, 1))
            .unwrap()
            .clone();
        let pid_before = c.host_pid(&node).await.expect("a host pid");
        let target = nem.prepare(&kill).await.expect("the target resolves");
        let applied = nem.inject(&kill, &target).await.expect("the kill applies");
        assert!(applied.action.contains("kill -KILL"), "{}", applied.action);
        nem.heal(&kill, &applied).await.expect("heal");
        assert!(
            c.is_running(&node).await.unwrap(),
            "the container is not running after the heal"
        );
        assert_ne!(
            c.host_pid(&node).await,
            Some(pid_before),
            "the same process still runs"
        );
        let deadline = Instant::now() + Duration::from_secs(180);
        while admin.broker_ready().await.is_err() {
            assert!(
                Instant::now() < deadline,
                "the broker never came back after kill and start"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        drop(tc);
    });
}

#[test]
fn clean_removes_what_a_killed_run_left() {
    let dir = tmpdir("clean");
    let scenario = write(
        &dir,
        "long.yaml",
        &format!(
            "name: long\n{}workload:\n  topic: persistent://public/default/long\n  messages: 10000000\n  rate: 200\n",
            standalone_cluster_yaml()
        ),
    );
    let mut child = spawn_run(&scenario, 1, &dir, &[], true);
    // Wait until the run has a history (its cluster is up and producing).
    let deadline = Instant::now() + Duration::from_secs(300);
    let history = loop {
        let found = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path().join("history.jsonl"))
            .find(|h| {
                std::fs::read_to_string(h)
                    .map(|t| t.contains("txn_outcome"))
                    .unwrap_or(false)
            });
        if let Some(h) = found {
            break h;
        }
        assert!(Instant::now() < deadline, "the run never started producing");
        assert!(child.try_wait().unwrap().is_none(), "the run exited early");
        std::thread::sleep(Duration::from_millis(200));
    };
    let run_json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(history.parent().unwrap().join("run.json")).unwrap(),
    )
    .unwrap();
    let run_id = run_json["run_id"].as_str().unwrap().to_string();
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::KILL,
    );
    let _ = child.wait();
    let before = rt().block_on(leftovers(&run_id));
    assert!(
        before.0 >= 1,
        "the killed run left no container: {before:?}"
    );

    // Only this run's: the tests run side by side, and `clean` without `--run` would take the
    // others' clusters too (it is the same code without the run's label filter).
    let o = run(&["clean", "--run", &run_id]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains(&format!("removed container pc-{run_id}")), "{t}");
    assert!(t.contains(&format!("removed network pc-{run_id}")), "{t}");
    // Nothing of another run.
    assert!(
        t.lines()
            .filter(|l| l.starts_with("removed "))
            .all(|l| l.contains(&run_id)),
        "{t}"
    );
    assert_eq!(rt().block_on(leftovers(&run_id)), (0, 0, 0));
    // Idempotent.
    let o = run(&["clean", "--run", &run_id]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        text(&o).contains(&format!(
            "nothing to clean: no container, network, volume or fault of run {run_id} is left"
        )),
        "{}",
        text(&o)
    );
}

/// A reader that stops reading (`pulsar-chaos run … 2>&1 | head -1`) stops the run as Ctrl-C
/// does: the harness notices its closed output at its next line, heals, removes what it
/// created, and exits 130. Regression: `eprintln!`/`println!` panicked on the closed pipe
/// (exit 101) and skipped the cleanup (seen with a matrix whose reader, a test, was stopped:
/// its 2-broker cluster stayed up).
#[test]
fn a_run_whose_output_closes_stops_and_leaves_nothing() {
    let dir = tmpdir("output-closed");
    let scenario = write(
        &dir,
        "long.yaml",
        &format!(
            "name: output-closed\n{}workload:\n  topic: persistent://public/default/output-closed\n  messages: 10000000\n  rate: 200\n",
            standalone_cluster_yaml()
        ),
    );
    let out_dir = dir.join("runs");
    let mut child = bin()
        .args(run_args(&scenario, 1, &out_dir, &[]))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Both readers are gone before the harness writes its first line.
    drop(child.stdout.take());
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    let run_dir = std::fs::read_dir(&out_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("run.json").exists())
        .expect("a run directory");
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    let run_id = info["run_id"].as_str().unwrap();
    assert_eq!(rt().block_on(leftovers(run_id)), (0, 0, 0));
    let h = std::fs::read_to_string(run_dir.join("history.jsonl")).unwrap_or_default();
    assert!(!h.contains("panicked"), "{h}");
}
