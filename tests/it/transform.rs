//! Issue 13, step 2: consume-transform-produce end to end through the command line, on one
//! standalone shared by both runs. The smoke scenario passes, and an independent read checks
//! both topics: the output holds [0, N) exactly once and the input [0, N) once, with the
//! subscription's backlog 0 (asked over the admin API). Then a run that aborts every 3rd
//! attempt on purpose: its inputs are handed back and processed again (redeliveries > 0), and
//! it still passes.

use std::path::Path;

use pulsar_chaos::admin::Admin;
use pulsar_chaos::scenario::transform::{input_topic, SUBSCRIPTION};
use pulsar_chaos::scenario::Topology;

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
        let tc = TestCluster::start(Topology::Standalone, 1, 1).await;
        let c = &tc.cluster;
        let admin = Admin::new(&c.admin_url);

        let smoke = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/transform-smoke.yaml");
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
