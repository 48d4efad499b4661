//! Shared helpers of the integration tests: the binary, free ports, scenario files, clusters
//! that remove themselves, and an independent read-back through the `pulsar` crate.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub use crate::scratch::Scratch;
use std::os::unix::process::CommandExt;
use std::process::{Command, Output};
use std::time::Duration;

use pulsar_chaos::cluster::engine::{Engine, LABEL_MANAGED, LABEL_RUN};
use pulsar_chaos::cluster::{image, Cluster};
use pulsar_chaos::scenario::{DockerCluster, Jvm, Topology};

pub use crate::bin::{repo, BIN};

/// The binary, its results store (`PULSAR_CHAOS_STORE`) this test process's own under
/// target/tmp: an integration test never writes to the user's store. A test that checks the
/// store passes `--store` itself. Clusters it starts run [`it_jvm`]'s JVM setting.
pub fn bin() -> Command {
    let mut c = Command::new(&*BIN);
    c.env("PULSAR_CHAOS_STORE", it_store());
    c.env(Jvm::ENV, it_jvm().name());
    c
}

/// How the clusters of the integration tests run their JVMs: `quick` (first JIT tier, serial
/// GC: half the CPU to start a node, which is what the suite spends most of its time on with
/// two cores), unless `PULSAR_CHAOS_JVM` says otherwise
/// (`PULSAR_CHAOS_JVM=standard cargo test ...` runs them as the official image does).
pub fn it_jvm() -> Jvm {
    match std::env::var(Jvm::ENV) {
        Ok(v) => Jvm::parse(&v).expect("PULSAR_CHAOS_JVM is standard or quick"),
        Err(_) => Jvm::Quick,
    }
}

/// This test process's results store.
pub fn it_store() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("it-store-{}", std::process::id()))
        .join("results.db")
}

/// The arguments of `pulsar-chaos run SCENARIO --seed SEED --out DIR [extra] --progress none`.
pub fn run_args(scenario: &Path, seed: u64, dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "run".into(),
        scenario.to_str().unwrap().into(),
        "--seed".into(),
        seed.to_string(),
        "--out".into(),
        dir.to_str().unwrap().into(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    args.extend(["--progress".to_string(), "none".to_string()]);
    args
}

/// That run, waited for.
pub fn run_scenario(scenario: &Path, seed: u64, dir: &Path, extra: &[&str]) -> Output {
    bin()
        .args(run_args(scenario, seed, dir, extra))
        .output()
        .expect("the binary runs")
}

/// That run with `env` added to the harness's environment, waited for.
pub fn run_scenario_env(
    scenario: &Path,
    seed: u64,
    dir: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Output {
    bin()
        .args(run_args(scenario, seed, dir, extra))
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs")
}

/// That run in the background, stdout discarded; stderr piped when `keep_stderr`, else
/// discarded.
pub fn spawn_run(
    scenario: &Path,
    seed: u64,
    dir: &Path,
    extra: &[&str],
    keep_stderr: bool,
) -> std::process::Child {
    bin()
        .args(run_args(scenario, seed, dir, extra))
        .stdout(std::process::Stdio::null())
        .stderr(if keep_stderr {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .spawn()
        .unwrap()
}

/// A fresh directory under target/tmp for one test: removed when the test passes, kept when
/// it fails.
pub fn tmpdir(name: &str) -> Scratch {
    Scratch::new_in(Path::new(env!("CARGO_TARGET_TMPDIR")), name)
}

/// A TCP port nobody listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Two distinct free ports.
pub fn free_ports() -> (u16, u16) {
    let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let b = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("the binary runs")
}

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A standalone scenario header on free ports.
pub fn standalone_cluster_yaml() -> String {
    let (b, h) = free_ports();
    format!("cluster: {{ topology: standalone, binary_port: {b}, http_port: {h} }}\n")
}

pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A cluster started through the library; removed (by label) when dropped.
pub struct TestCluster {
    pub cluster: std::sync::Arc<Cluster>,
}

impl TestCluster {
    pub async fn start(topology: Topology, brokers: u32, bookies: u32) -> TestCluster {
        let engine = Engine::connect().await.expect("Docker is reachable");
        let (img, _) = image::resolve(&engine, None, pulsar_chaos::versions::DEFAULT)
            .await
            .expect("an image (run `pulsar-chaos image build`)");
        let (bp, hp) = free_ports();
        let spec = DockerCluster {
            topology,
            image: None,
            pulsar_version: pulsar_chaos::versions::DEFAULT.to_string(),
            brokers,
            bookies,
            coordinators: 1,
            binary_port: bp,
            http_port: hp,
            ready_timeout: Duration::from_secs(300),
            jvm: it_jvm(),
            broker_config: Default::default(),
        };
        let run_id = format!("t{:07x}", rand_id());
        let cluster = Cluster::up(engine, &spec, &run_id, &img, false)
            .await
            .expect("cluster starts");
        let tc = TestCluster {
            cluster: std::sync::Arc::new(cluster),
        };
        pulsar_chaos::ready::wait_ready(&tc.cluster, spec.ready_timeout)
            .await
            .expect("cluster becomes ready");
        tc
    }

    pub fn run_id(&self) -> String {
        self.cluster.run_id.clone()
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        let _ = bin()
            .args(["cluster", "down", "--run", &self.cluster.run_id])
            .output();
    }
}

/// The standalone the tests share (started by the first that asks, removed when the test
/// binary exits): for tests that only produce, consume and read on topics of their own and
/// neither stop, pause nor restart its node. A standalone's start is ~20 s of CI per test.
/// Its runtime lives as long as it does (the cluster's Docker client belongs to it).
///
/// The removal: a reaper process (`sh`) reads a pipe whose writing end only this process
/// holds; when the process ends, however it ends, the pipe closes and the reaper runs
/// `cluster down` for the standalone. `.ci/run` waits, by condition, for it to finish.
pub fn shared_standalone() -> &'static TestCluster {
    // The reaper's stdin stays piped in its `Child`: the writing end lives as long as this
    // process does.
    type Shared = (tokio::runtime::Runtime, TestCluster, std::process::Child);
    static SHARED: std::sync::OnceLock<Shared> = std::sync::OnceLock::new();
    &SHARED
        .get_or_init(|| {
            // On a thread of its own: the caller may be inside a runtime already.
            let (rt, tc) = std::thread::spawn(|| {
                let rt = rt();
                let tc = rt.block_on(TestCluster::start(Topology::Standalone, 1, 1));
                (rt, tc)
            })
            .join()
            .expect("the shared standalone starts");
            let reaper = Command::new("sh")
                .args([
                    "-c",
                    "cat > /dev/null; exec \"$0\" cluster down --run \"$1\" > /dev/null 2>&1",
                    BIN.to_str().unwrap(),
                    &tc.cluster.run_id,
                ])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .process_group(0)
                .spawn()
                .expect("the shared standalone's reaper starts");
            (rt, tc, reaper)
        })
        .1
}

/// Removes a kept cluster (`--keep-cluster`) when the test ends, passed or not, so that a
/// failed assertion does not leave it running under the tests that follow.
pub struct Down(pub String);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = run(&["cluster", "down", "--run", &self.0]);
    }
}

pub fn rand_id() -> u32 {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    (pulsar_chaos::seed::Rng::new(n ^ u64::from(std::process::id())).next_u64() & 0x0fff_ffff)
        as u32
}

/// Containers, networks and volumes still labelled with `run_id`.
pub async fn leftovers(run_id: &str) -> (usize, usize, usize) {
    let engine = Engine::connect().await.unwrap();
    let labels = [(LABEL_MANAGED, "true"), (LABEL_RUN, run_id)];
    (
        engine.list_containers(&labels).await.unwrap().len(),
        engine.list_networks(&labels).await.unwrap().len(),
        engine.list_volumes(&labels).await.unwrap().len(),
    )
}

/// Read a whole topic with the `pulsar` crate's own consumer (a client independent of the
/// harness's): every payload, in order of arrival.
///
/// Every step is bounded, and a read that gets stuck is started over with a fresh client (seen
/// twice after broker restarts: the crate's consumer waited forever for the last message ids);
/// after three stuck reads the test fails instead of hanging.
pub async fn independent_readback(service_url: &str, topic: &str) -> Vec<Vec<u8>> {
    let mut failures = Vec::new();
    for attempt in 1..=3 {
        match read_once(service_url, topic).await {
            Ok(out) => return out,
            Err(e) => {
                eprintln!("independent read {attempt} of {topic} failed: {e}; starting over");
                failures.push(e);
            }
        }
    }
    panic!("the independent reader could not read {topic}: {failures:?}");
}

/// Writes `values` to `topic`, each in decimal as a message of its own, through a plain
/// (non-transactional) producer of the `pulsar` crate, each send's receipt awaited.
pub async fn produce_plain(service_url: &str, topic: &str, values: impl IntoIterator<Item = u64>) {
    use pulsar::{producer::ProducerOptions, Pulsar, TokioExecutor};
    let pulsar: Pulsar<TokioExecutor> = Pulsar::builder(service_url, TokioExecutor)
        .build()
        .await
        .unwrap();
    let mut producer = pulsar
        .producer()
        .with_topic(topic)
        .with_options(ProducerOptions::default())
        .build()
        .await
        .unwrap();
    for v in values {
        producer
            .send_non_blocking(v.to_string().into_bytes())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    producer.close().await.unwrap();
}

/// One message as an independent read identifies it: (partition, ledger, entry, batch index).
pub type MsgId = (i32, u64, u64, i32);

pub fn msg_id(id: &pulsar::message::proto::MessageIdData) -> MsgId {
    (
        id.partition.unwrap_or(-1),
        id.ledger_id,
        id.entry_id,
        id.batch_index.unwrap_or(-1),
    )
}

/// What an independent read received, each message once. The `pulsar` crate's consumer
/// subscribes again after its connection breaks (a broker restart, an unload), with the same
/// options: its non-durable subscription starts over at the earliest message, and the broker
/// delivers what was read already a second time. Such a delivery has the id of the first and
/// is counted as `redelivered`; a number written to the topic twice has two ids and stays in
/// `payloads` twice.
#[derive(Default)]
pub struct Deliveries {
    seen: std::collections::HashSet<MsgId>,
    pub payloads: Vec<Vec<u8>>,
    pub redelivered: u64,
}

impl Deliveries {
    pub fn take(&mut self, id: MsgId, payload: &[u8]) {
        if self.seen.insert(id) {
            self.payloads.push(payload.to_vec());
        } else {
            self.redelivered += 1;
        }
    }
}

/// How long one step of an independent read may take.
const READ_BOUND: Duration = Duration::from_secs(60);

/// An independent subscription to `topic`: exclusive, non-durable, from the earliest message.
pub async fn independent_consumer(
    service_url: &str,
    topic: &str,
) -> Result<pulsar::Consumer<Vec<u8>, pulsar::TokioExecutor>, String> {
    use pulsar::{consumer::InitialPosition, ConsumerOptions, Pulsar, SubType, TokioExecutor};
    let bound = READ_BOUND;
    let step = |what: &'static str| move |_| format!("{what} timed out after {}s", bound.as_secs());
    let pulsar: Pulsar<TokioExecutor> =
        tokio::time::timeout(bound, Pulsar::builder(service_url, TokioExecutor).build())
            .await
            .map_err(step("connecting"))?
            .map_err(|e| format!("connecting: {e}"))?;
    let consumer = pulsar
        .consumer()
        .with_topic(topic)
        .with_subscription(format!("independent-{}", rand_id()))
        .with_subscription_type(SubType::Exclusive)
        .with_options(
            ConsumerOptions::default()
                .durable(false)
                .with_initial_position(InitialPosition::Earliest),
        )
        .build();
    tokio::time::timeout(bound, consumer)
        .await
        .map_err(step("subscribing"))?
        .map_err(|e| format!("subscribing: {e}"))
}

/// Reads `consumer` to the topic's end into `got`, then closes it.
pub async fn read_to_end(
    mut consumer: pulsar::Consumer<Vec<u8>, pulsar::TokioExecutor>,
    got: &mut Deliveries,
) -> Result<(), String> {
    use futures::TryStreamExt;
    let bound = READ_BOUND;
    let last = match tokio::time::timeout(bound, consumer.get_last_message_id()).await {
        Ok(r) => r.map_err(|e| format!("asking for the last message ids: {e}"))?,
        Err(_) => {
            // The crate's GET_LAST_MESSAGE_ID sometimes never answers after a chaos run (seen on
            // a cluster whose brokers had just restarted). The run's topic is settled by then,
            // so read until nothing more arrives instead of failing the test on the reader.
            eprintln!(
                "the last message ids did not come within {}s; reading until idle",
                bound.as_secs()
            );
            while let Ok(next) =
                tokio::time::timeout(Duration::from_secs(20), consumer.try_next()).await
            {
                match next.map_err(|e| format!("reading: {e}"))? {
                    Some(msg) => got.take(msg_id(msg.message_id()), &msg.payload.data),
                    None => break,
                }
            }
            let _ = tokio::time::timeout(Duration::from_secs(10), consumer.close()).await;
            return Ok(());
        }
    };
    let mut remaining: std::collections::HashMap<i32, MsgId> = last
        .iter()
        .filter(|id| id.ledger_id != u64::MAX)
        .map(|id| (id.partition.unwrap_or(-1), msg_id(id)))
        .collect();
    while !remaining.is_empty() {
        let msg = tokio::time::timeout(bound, consumer.try_next())
            .await
            .map_err(|_| {
                format!(
                    "no message for {}s after {} read",
                    bound.as_secs(),
                    got.payloads.len()
                )
            })?
            .map_err(|e| format!("reading: {e}"))?
            .ok_or_else(|| "the stream ended".to_string())?;
        let id = msg_id(msg.message_id());
        got.take(id, &msg.payload.data);
        if remaining.get(&id.0).is_some_and(|end| id >= *end) {
            remaining.remove(&id.0);
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(10), consumer.close()).await;
    Ok(())
}

async fn read_once(service_url: &str, topic: &str) -> Result<Vec<Vec<u8>>, String> {
    let consumer = independent_consumer(service_url, topic).await?;
    let mut got = Deliveries::default();
    read_to_end(consumer, &mut got).await?;
    if got.redelivered > 0 {
        eprintln!(
            "the independent reader of {topic} was delivered {} messages again (counted once)",
            got.redelivered
        );
    }
    Ok(got.payloads)
}

pub fn numbers(payloads: &[Vec<u8>]) -> Vec<u64> {
    payloads
        .iter()
        .map(|p| pulsar_chaos::checker::parse_number(p).expect("a number payload"))
        .collect()
}

/// The verdict.json of a run directory.
pub fn verdict(run_dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run_dir.join("verdict.json")).unwrap()).unwrap()
}

/// The run directory a `run` printed ("run directory: ...").
pub fn run_dir_of(output: &str) -> PathBuf {
    let line = output
        .lines()
        .rev()
        .find(|l| l.starts_with("run directory: "))
        .unwrap_or_else(|| panic!("no run directory in:\n{output}"));
    PathBuf::from(line.trim_start_matches("run directory: ").trim())
}

pub fn history(run_dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run_dir.join("history.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// How many of a history's notes start with `prefix`.
pub fn notes_starting(h: &[serde_json::Value], prefix: &str) -> usize {
    h.iter()
        .filter(|e| e["event"] == "note" && e["message"].as_str().unwrap().starts_with(prefix))
        .count()
}

/// Every listed missing and duplicated range of a verdict is Pulsar's doing, with the evidence
/// it rests on (what a run under `verify` may show: no unknown commit is resent blind).
pub fn assert_anomalies_are_pulsars(v: &serde_json::Value) {
    for a in v["missing"]
        .as_array()
        .unwrap()
        .iter()
        .chain(v["duplicates"].as_array().unwrap())
    {
        assert_eq!(a["cause"], "pulsar", "not Pulsar's doing: {a}");
        assert!(!a["evidence"].as_array().unwrap().is_empty(), "{a}");
    }
}
