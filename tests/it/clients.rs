//! Issue 31: the official Java and Go clients under the harness (docs/drivers.md). Each test
//! shares one standalone among its runs; the drivers are built on first use (cached).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::durability::{kill_now, resume, wait_for_moment, wait_run_dir};

fn urls(tc: &TestCluster) -> [String; 4] {
    let b = &tc.cluster.brokers()[0];
    [
        "--service-url".into(),
        b.service_url.clone(),
        "--admin-url".into(),
        b.admin_url.clone(),
    ]
}

fn scenario(
    dir: &Path,
    name: &str,
    client: &str,
    messages: u64,
    extra: &str,
) -> std::path::PathBuf {
    write(
        dir,
        &format!("{name}.yaml"),
        &format!(
            "name: {name}\nworkload:\n  topic: persistent://public/default/{name}\n  partitions: 4\n  messages: {messages}\n  txn_size: 100\n  batch_size: 10\n  concurrency: 4\n  client: {client}\n{extra}"
        ),
    )
}

/// The driver's pid, from the history's `client:` note.
fn driver_pid(run_dir: &Path) -> Option<i32> {
    let h = std::fs::read_to_string(run_dir.join("history.jsonl")).ok()?;
    h.lines().rev().find_map(|l| {
        let e: serde_json::Value = serde_json::from_str(l).ok()?;
        let m = e["message"].as_str()?;
        m.starts_with("client: ")
            .then(|| m.rsplit("driver pid ").next()?.trim().parse().ok())
            .flatten()
    })
}

fn alive(pid: i32) -> bool {
    // A zombie is gone for our purposes: it answers nothing.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

/// Events of the history so far (none before the run has opened it).
fn count(run_dir: &Path, event: &str, outcome: &str) -> usize {
    let text = std::fs::read_to_string(run_dir.join("history.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == event && (outcome.is_empty() || e["outcome"] == outcome))
        .count()
}

#[test]
fn java_and_go_pass_a_smoke_with_an_independent_readback_and_java_under_unloads() {
    let dir = tmpdir("clients-smoke");
    let rt = rt();
    let tc = shared_standalone();
    let urls = urls(tc);
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    for (client, library) in [
        ("java", "org.apache.pulsar:pulsar-client 4.2.4"),
        ("go", "github.com/apache/pulsar-client-go v0.19.0"),
    ] {
        let name = format!("{client}-smoke");
        let s = scenario(&dir, &name, client, 20000, "");
        let o = run_scenario(&s, 31, &dir, &urls);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "{client}: {t}");
        let rd = run_dir_of(&t);
        let v = verdict(&rd);
        assert_eq!(v["status"], "pass", "{client}: {v}");
        let info: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(rd.join("run.json")).unwrap()).unwrap();
        assert!(
            info["client"].as_str().unwrap().starts_with(client),
            "{info}"
        );
        // The history names the client and its library as the driver reported them, and every
        // outcome came from that client.
        let h = history(&rd);
        let note = h
            .iter()
            .find_map(|e| e["message"].as_str().filter(|m| m.starts_with("client: ")))
            .unwrap_or_else(|| panic!("{client}: no client note"));
        assert!(note.contains(library), "{note}");
        // The Java driver registers each transaction's partitions ahead of its sends (the
        // optional `register` request), and none of those registrations failed.
        assert_eq!(
            note.contains("partitions registered ahead"),
            client == "java",
            "{note}"
        );
        assert!(
            !h.iter()
                .any(|e| e["event"] == "client_answer" && e["op"] == "register"),
            "{client}: a registration failed"
        );
        let outcomes: Vec<&serde_json::Value> =
            h.iter().filter(|e| e["event"] == "txn_outcome").collect();
        assert_eq!(outcomes.len(), 200, "{client}");
        for e in outcomes {
            assert!(
                e["detail"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{client} client:")),
                "{e}"
            );
        }
        // The driver's own log is kept, and the driver is gone.
        let log = std::fs::read_to_string(rd.join("driver.log")).unwrap();
        assert!(!log.is_empty(), "{client}: empty driver.log");
        let pid = driver_pid(&rd).unwrap();
        assert!(!alive(pid), "{client}: driver {pid} still runs");
        // Another client reads exactly [0, 20000).
        let payloads = rt.block_on(independent_readback(
            info["service_url"].as_str().unwrap(),
            info["topic"].as_str().unwrap(),
        ));
        let mut got = numbers(&payloads);
        got.sort_unstable();
        assert_eq!(got, (0..20000).collect::<Vec<u64>>(), "{client}");
    }
    // A topic without partitions (`partitions: 1`) too: the drivers produce to the topic
    // itself (regression: they asked for `<topic>-partition-0`, which does not exist).
    for client in ["java", "go"] {
        let s = scenario(&dir, &format!("{client}-one"), client, 2000, "")
            .to_str()
            .unwrap()
            .to_string();
        let text1 = std::fs::read_to_string(&s)
            .unwrap()
            .replace("partitions: 4", "partitions: 1");
        std::fs::write(&s, text1).unwrap();
        let o = run_scenario(Path::new(&s), 35, &dir, &urls);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "{client} with one partition: {t}");
        assert_eq!(verdict(&run_dir_of(&t))["status"], "pass");
    }
    // Faults work with a foreign client: two topic unloads under the Java client end in a
    // pass or in Pulsar's own anomalies (the low-water-mark finding), never the harness's.
    let s = scenario(
        &dir,
        "java-unloads",
        "java",
        20000,
        "  rate: 4000\nfaults:\n  - kind: topic_unload\n    schedule: { at: [1500ms, 3s] }\n",
    );
    let o = run_scenario(&s, 32, &dir, &urls);
    let t = text(&o);
    let rd = run_dir_of(&t);
    let v = verdict(&rd);
    assert!(
        ["pass", "violation"].contains(&v["status"].as_str().unwrap()),
        "{v}\n{t}"
    );
    // A copy the Java producer sent again after a reconnect, kept on a topic without
    // deduplication (every partition says so), is `client_resend`; anything else is Pulsar's.
    for a in v["missing"]
        .as_array()
        .unwrap()
        .iter()
        .chain(v["duplicates"].as_array().unwrap())
    {
        match a["cause"].as_str().unwrap() {
            "pulsar" => assert!(!a["evidence"].as_array().unwrap().is_empty(), "{a}"),
            "client_resend" => assert!(
                a["explanation"]
                    .as_str()
                    .unwrap()
                    .contains("deduplicationStatus partition 0: Disabled"),
                "{a}"
            ),
            other => panic!("not Pulsar's nor the client's resend ({other}): {a}"),
        }
    }
    assert_eq!(v["faults_summary"]["fired"], 2, "{v}");
}

#[test]
fn a_killed_driver_is_the_harness_s_gap_and_a_killed_harness_resumes_with_a_new_driver() {
    let dir = tmpdir("clients-kill");
    let tc = shared_standalone();
    let urls = urls(tc);
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    // 30,000 numbers at 2,000 a second: long enough to be killed in the middle.
    let slow = "  rate: 2000\n";

    // 1. The driver is SIGKILLed mid-run: INCONCLUSIVE, every gap the harness's, the driver's
    //    end named with its last log lines.
    let killed = dir.join("killed");
    std::fs::create_dir_all(&killed).unwrap();
    let s = scenario(&dir, "driver-killed", "java", 30000, slow);
    let mut child = spawn_run(&s, 33, &killed, &urls, true);
    let rd = wait_run_dir(&killed, &mut child);
    let pid = wait_for_moment(&killed, &mut child, "20 commits", || {
        (count(&rd, "txn_outcome", "committed") >= 20)
            .then(|| driver_pid(&rd))
            .flatten()
    });
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::KILL,
    );
    let out = child.wait_with_output().unwrap();
    let t = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(4), "{t}");
    let v = verdict(&rd);
    assert_eq!(v["status"], "inconclusive", "{v}");
    let reasons = v["reasons"].to_string();
    assert!(reasons.contains("the java driver ended"), "{reasons}");
    assert!(reasons.contains("signal: 9"), "{reasons}");
    for a in v["missing"].as_array().unwrap() {
        assert_eq!(a["cause"], "harness", "{a}");
    }
    assert!(v["duplicates"].as_array().unwrap().is_empty(), "{v}");

    // 2. The harness is SIGKILLed while commits are under way: its driver sees its input close
    //    and exits; `--resume` starts a new driver and the run passes.
    let resumed = dir.join("resumed");
    std::fs::create_dir_all(&resumed).unwrap();
    let s = scenario(&dir, "harness-killed", "java", 30000, slow);
    killed_mid_commit_then_resumed(&s, 34, &resumed, &urls);
}

/// Run `s` through the Java driver, SIGKILL the harness once 30 commits were asked for, check
/// that its driver exits (its input closed), then `--resume`: the run must pass with a second
/// driver. The run directory, and how many transactions had committed before the kill.
fn killed_mid_commit_then_resumed(
    s: &Path,
    seed: u64,
    dir: &Path,
    urls: &[&str],
) -> (std::path::PathBuf, usize) {
    let mut child = bin()
        .args(run_args(s, seed, dir, urls))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("segment-0.log")).unwrap())
        .spawn()
        .unwrap();
    let rd = wait_run_dir(dir, &mut child);
    let first = wait_for_moment(dir, &mut child, "commits under way", || {
        (count(&rd, "commit_requested", "") >= 30)
            .then(|| driver_pid(&rd))
            .flatten()
    });
    kill_now(&mut child, &rd);
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(first) {
        assert!(
            Instant::now() < deadline,
            "the driver {first} outlived its harness"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let committed_before = count(&rd, "txn_outcome", "committed");
    let mut child = resume(&rd, &dir.join("segment-1.log"));
    let status = child.wait().unwrap();
    let t = crate::durability::logs(dir);
    assert_eq!(status.code(), Some(0), "{t}");
    let v = verdict(&rd);
    assert_eq!(v["status"], "pass", "{v}");
    let drivers = history(&rd)
        .iter()
        .filter(|e| {
            e["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("client: java"))
        })
        .count();
    assert_eq!(drivers, 2, "one driver per segment");
    assert_ne!(driver_pid(&rd), Some(first));
    (rd, committed_before)
}

/// A driver that cannot start once the cluster is up is the harness's gap: a run directory
/// with an INCONCLUSIVE verdict (exit 4), every number `harness` (never sent), the reason
/// quoting the driver's last log lines, and the run's containers removed.
///
/// The cause is one a user hits: the JDK's launcher reads `JDK_JAVA_OPTIONS` from the
/// environment (JDK 9 and newer), and a JVM given an option it does not know refuses to start
/// ("Unrecognized VM option"). The driver is built first without it (Maven runs on the same
/// JVM, and a build that cannot happen is a refusal before the cluster, not this case).
#[test]
fn a_driver_that_cannot_start_is_inconclusive_with_its_last_log_lines() {
    let dir = tmpdir("clients-unstarted");
    let s = write(
        &dir,
        "driver-refused.yaml",
        &format!(
            "name: driver-refused\n{}workload:\n  topic: persistent://public/default/driver-refused\n  partitions: 2\n  messages: 500\n  txn_size: 50\n  client: java\n",
            standalone_cluster_yaml()
        ),
    );
    let scenario = pulsar_chaos::scenario::load(&s).unwrap();
    rt().block_on(pulsar_chaos::runner::build_client(&scenario))
        .unwrap()
        .expect("a java driver");
    let out_dir = dir.join("runs");
    let out = bin()
        .args(run_args(&s, 35, &out_dir, &[]))
        .env("JDK_JAVA_OPTIONS", "-XX:+PulsarChaosNoSuchOption")
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(4), "{t}");
    let rd = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap_or_else(|| panic!("no run directory: {t}"));
    let v = verdict(&rd);
    assert_eq!(v["status"], "inconclusive", "{v}");
    let reasons = v["reasons"].to_string();
    assert!(reasons.contains("cannot start the java"), "{reasons}");
    assert!(
        reasons.contains("Unrecognized VM option 'PulsarChaosNoSuchOption'"),
        "{reasons}"
    );
    let missing = v["missing"].as_array().unwrap();
    assert!(!missing.is_empty(), "{v}");
    for a in missing {
        assert_eq!(a["cause"], "harness", "{a}");
        assert!(
            a["explanation"]
                .as_str()
                .unwrap()
                .contains("the harness never sent them"),
            "{a}"
        );
    }
    assert_eq!(v["graded"]["by_cause"]["harness"]["numbers"], 500, "{v}");
    assert!(v["duplicates"].as_array().unwrap().is_empty(), "{v}");
    let log = std::fs::read_to_string(rd.join("driver.log")).unwrap();
    assert!(log.contains("Unrecognized VM option"), "{log}");
    // Nothing was produced, and nothing of the run is left.
    assert_eq!(count(&rd, "txn_opened", ""), 0);
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rd.join("run.json")).unwrap()).unwrap();
    let run_id = info["run_id"].as_str().unwrap().to_string();
    assert_eq!(rt().block_on(leftovers(&run_id)), (0, 0, 0));
    // The verdict is derived from what was stored, as any run's (recheck exits with it).
    let o = run(&["recheck", rd.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert!(text(&o).contains("verdict.json reproduced"), "{}", text(&o));
}

/// Consume-transform-produce through each official client (its consumers, its transactional
/// acknowledgements, its sends and commits): 2,000 numbers on 2 partitions, 2 workers on a
/// Shared subscription. Passes with the same checks as the own client's smoke, and an
/// independent read finds the output [0, 2000) exactly once and the input subscription's
/// backlog 0. Unbatched, as the own client's smoke: batched inputs meet the broker's
/// batch-member conflict finding (docs/findings/transform-batch-member-conflict.md; the Java
/// client hit it too, one input committed twice). Java with every 5th attempt aborted on
/// purpose (through the client; the broker hands its inputs back). Go without aborts: v0.19.0
/// leaves the transaction id out of the message metadata, so an aborted transaction's messages
/// are readable (apache/pulsar-client-go#1498), which the checker rightly fails (docs/drivers.md,
/// Go notes). The Go driver is built with the race detector (`GOFLAGS=-race`) and its log must
/// report no data race. Regression: v0.19.0 registers a transaction's partitions and
/// subscriptions through a map it reads unlocked (apache/pulsar-client-go#1536); two
/// partitions' first sends or acknowledgements in one transaction raced, and a CI run's driver
/// died of "concurrent map read and map write" (exit status 2) after 1,600 of 2,000 numbers.
#[test]
fn java_and_go_pass_a_transform_smoke_with_an_independent_readback() {
    use pulsar_chaos::admin::Admin;
    use pulsar_chaos::scenario::transform::{input_topic, SUBSCRIPTION};
    let dir = tmpdir("clients-transform");
    let rt = rt();
    let tc = shared_standalone();
    let urls = urls(tc);
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    let admin = Admin::new(&tc.cluster.brokers()[0].admin_url);
    for (client, extra) in [
        ("java", "  batch_size: 1\n  abort_every: 5\n"),
        ("go", "  batch_size: 1\n"),
    ] {
        let name = format!("{client}-transform");
        let s = write(
            &dir,
            &format!("{name}.yaml"),
            &format!("name: {name}\nworkload:\n  kind: transform\n  topic: persistent://public/default/{name}\n  partitions: 2\n  messages: 2000\n  txn_size: 10\n  consumers: 2\n  subscription_type: shared\n  client: {client}\n  deadline: 4m\n{extra}"),
        );
        let race: &[(&str, &str)] = if client == "go" {
            &[("GOFLAGS", "-race")]
        } else {
            &[]
        };
        let o = run_scenario_env(&s, 31, &dir, &urls, race);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "{client}: {t}");
        let rd = run_dir_of(&t);
        let v = verdict(&rd);
        assert_eq!(v["status"], "pass", "{client}: {v}");
        let log = std::fs::read_to_string(rd.join("driver.log")).unwrap();
        if let Some(at) = log.find("WARNING: DATA RACE") {
            let report: String = log[at..].lines().take(30).collect::<Vec<_>>().join("\n");
            panic!("{client}: the driver raced:\n{report}");
        }
        let consumer = &v["consumer"];
        assert!(
            consumer["transactions"].as_u64().unwrap() >= 200,
            "{client}: {consumer}"
        );
        if client == "java" {
            // The deliberate aborts' inputs came again.
            assert!(
                consumer["inputs_redelivered"].as_u64().unwrap() > 0,
                "{client}: {consumer}"
            );
        }
        // Every commit and every acknowledgement was the client's.
        let h = history(&rd);
        let committed: Vec<&serde_json::Value> = h
            .iter()
            .filter(|e| e["event"] == "txn_outcome" && e["outcome"] == "committed")
            .collect();
        assert!(committed.len() >= 200, "{client}: {}", committed.len());
        for e in committed {
            assert!(
                e["detail"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{client} client:")),
                "{e}"
            );
        }
        let acked = h
            .iter()
            .find(|e| e["event"] == "inputs_acked" && e["answer"] == "acked")
            .unwrap_or_else(|| panic!("{client}: no inputs_acked"));
        assert!(
            acked["detail"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{client} client:")),
            "{acked}"
        );
        // The Java driver registers the output partitions ahead of the sends and the input
        // subscription ahead of the ACKs (spares and attempts, through `register`); the Go
        // driver does not offer it. No registration failed.
        let counters: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(rd.join("transform.json")).unwrap())
                .unwrap();
        let ahead = counters["outputs_registered_ahead"].as_u64().unwrap();
        let inputs_ahead = counters["inputs_registered_ahead"].as_u64().unwrap();
        // The Java driver answers each id of one `ack` on its own: an attempt's inputs of a
        // partition go in one request (at least one per attempt); the Go driver acks one by one.
        let grouped = counters["ack_requests_grouped"].as_u64().unwrap();
        if client == "java" {
            assert!(ahead >= 200, "{client}: {counters}");
            assert!(inputs_ahead >= 200, "{client}: {counters}");
            assert!(grouped >= 200, "{client}: {counters}");
        } else {
            assert_eq!(
                (ahead, inputs_ahead, grouped),
                (0, 0, 0),
                "{client}: {counters}"
            );
        }
        assert!(
            !h.iter()
                .any(|e| e["event"] == "client_answer" && e["op"] == "register"),
            "{client}: a registration failed"
        );
        let pid = driver_pid(&rd).unwrap();
        assert!(!alive(pid), "{client}: driver {pid} still runs");
        // Another client reads the output: exactly [0, 2000).
        let info: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(rd.join("run.json")).unwrap()).unwrap();
        let topic = info["topic"].as_str().unwrap();
        let payloads = rt.block_on(independent_readback(
            info["service_url"].as_str().unwrap(),
            topic,
        ));
        let mut got = numbers(&payloads);
        got.sort_unstable();
        assert_eq!(got, (0..2000).collect::<Vec<u64>>(), "{client}");
        for p in 0..2 {
            let input = format!("{}-partition-{p}", input_topic(topic));
            let stats = rt.block_on(admin.topic_stats(&input)).unwrap();
            assert_eq!(
                stats["subscriptions"][SUBSCRIPTION]["msgBacklog"].as_u64(),
                Some(0),
                "{client}: {input}: {}",
                stats["subscriptions"]
            );
        }
    }
}

/// A transform through the Java driver, its harness SIGKILLed while commits are under way:
/// the driver sees its input close and exits, `--resume` starts a new driver whose consumers
/// get back every input the killed run had not committed, and the run passes, the output
/// exactly once by another client's read.
#[test]
fn a_java_transform_whose_harness_is_killed_resumes_with_a_new_driver_to_a_pass() {
    let dir = tmpdir("clients-transform-resume");
    let rt = rt();
    let tc = shared_standalone();
    let urls = urls(tc);
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    let name = "java-transform-resume";
    let s = write(
        &dir,
        &format!("{name}.yaml"),
        &format!("name: {name}\nworkload:\n  kind: transform\n  topic: persistent://public/default/{name}\n  partitions: 2\n  messages: 6000\n  txn_size: 10\n  batch_size: 1\n  consumers: 2\n  subscription_type: shared\n  client: java\n  deadline: 4m\n"),
    );
    let (rd, committed_before) = killed_mid_commit_then_resumed(&s, 35, &dir, &urls);
    assert!(
        count(&rd, "txn_outcome", "committed") > committed_before,
        "the resumed segment committed nothing"
    );
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rd.join("run.json")).unwrap()).unwrap();
    let payloads = rt.block_on(independent_readback(
        info["service_url"].as_str().unwrap(),
        info["topic"].as_str().unwrap(),
    ));
    let mut got = numbers(&payloads);
    got.sort_unstable();
    assert_eq!(got, (0..6000).collect::<Vec<u64>>());
}

#[test]
fn client_keys_that_do_not_fit_exit_2_with_file_line_and_column() {
    let dir = tmpdir("clients-bad");
    let base = "name: t\ncluster: { topology: standalone }\nworkload:\n  topic: persistent://public/default/t\n  messages: 100\n";
    let cases = [
        (
            "unknown.yaml",
            "  client: python\n",
            "unknown.yaml:6:",
            "python",
        ),
        (
            "version-go.yaml",
            "  client: go\n  client_version: 4.2.4\n",
            "version-go.yaml:7:",
            "goes with `client: java` only",
        ),
        (
            "version-unserved.yaml",
            "  client: java\n  client_version: 9.9.9\n",
            "version-unserved.yaml:7:",
            "served: 4.0.0",
        ),
    ];
    for (name, extra, location, message) in cases {
        let p = write(&dir, name, &format!("{base}{extra}"));
        let o = run(&["validate", p.to_str().unwrap()]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {t}");
        assert!(t.contains(location), "{name}: {location:?} not in {t}");
        assert!(t.contains(message), "{name}: {message:?} not in {t}");
    }
    // The same checks for the command line's override.
    let good = write(&dir, "good.yaml", base);
    let o = run(&[
        "run",
        good.to_str().unwrap(),
        "--client",
        "rust",
        "--dry-run",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("one of own, java, go"), "{}", text(&o));
    // The override is checked as the file's keys are (one rule, `clients::misfit`): a
    // transform runs through every client.
    let transform = repo("scenarios/transform-smoke.yaml");
    let transform = transform.to_str().unwrap();
    for client in ["java", "go"] {
        // Past the client's check, the dry run stops only for want of a cluster.
        let o = run(&["run", transform, "--client", client, "--dry-run"]);
        let t = text(&o);
        assert!(!t.contains("--client"), "{client}: {t}");
        assert!(t.contains("--dry-run resolves targets"), "{client}: {t}");
    }
    let o = run(&[
        "run",
        good.to_str().unwrap(),
        "--client",
        "go",
        "--client-version",
        "4.2.4",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--client-version: goes with `client: java` only"),
        "{}",
        text(&o)
    );
}

/// apache/pulsar-client-go#1498: the Go client puts a transactional send's transaction id on
/// CommandSend but not in the message's metadata, so the messages of a transaction it aborted
/// are readable. The read-back records what each message's metadata named, and the checker
/// blames the client (`client_txn_metadata`), never Pulsar; the same scenario through the
/// Java client passes, its messages' metadata naming their transactions. `recheck` derives
/// both verdicts again from `readback.json`.
#[test]
fn go_aborted_messages_without_a_txn_id_in_their_metadata_are_the_clients_and_java_passes() {
    let dir = tmpdir("clients-txn-metadata");
    let tc = shared_standalone();
    let urls = urls(tc);
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    let readback = |rd: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(rd.join("readback.json")).unwrap()).unwrap()
    };
    let recheck = |rd: &Path| {
        let o = bin()
            .args(["recheck", rd.to_str().unwrap()])
            .output()
            .unwrap();
        (o.status.code(), text(&o))
    };
    for client in ["go", "java"] {
        let name = format!("{client}-txn-metadata");
        let s = write(
            &dir,
            &format!("{name}.yaml"),
            &format!(
                "name: {name}\nworkload:\n  topic: persistent://public/default/{name}\n  partitions: 2\n  messages: 1000\n  txn_size: 50\n  batch_size: 1\n  concurrency: 2\n  abort_every: 5\n  client: {client}\n"
            ),
        );
        let o = run_scenario(&s, 36, &dir, &urls);
        let t = text(&o);
        let rd = run_dir_of(&t);
        let v = verdict(&rd);
        let rb = readback(&rd);
        let parts = rb["partitions"].as_array().unwrap();
        assert_eq!(parts.len(), 2, "{rb}");
        // Every partition's read recorded what the metadata named.
        let named: u64 = parts
            .iter()
            .map(|p| {
                p["txns"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{client}: no txns record: {p}"))
                    .iter()
                    .map(|r| r[1].as_u64().unwrap())
                    .sum::<u64>()
            })
            .sum();
        let aborted = history(&rd)
            .iter()
            .filter(|e| e["event"] == "txn_outcome" && e["outcome"] == "aborted")
            .count();
        assert_eq!(aborted, 4, "{client}: {t}");
        match client {
            "go" => {
                assert_eq!(o.status.code(), Some(1), "{t}");
                assert_eq!(v["status"], "violation", "{v}");
                // No message's metadata names a transaction.
                assert_eq!(named, 0, "{rb}");
                assert_eq!(v["duplicate_values"], 200, "{v}");
                let causes: Vec<&String> = v["graded"]["by_cause"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .collect();
                assert_eq!(causes, vec!["client_txn_metadata"], "{v}");
                let dups = v["duplicates"].as_array().unwrap();
                assert!(!dups.is_empty());
                for d in dups {
                    assert_eq!(d["cause"], "client_txn_metadata", "{d}");
                    let e = d["explanation"].as_str().unwrap();
                    assert!(
                        e.contains("carry no transaction id in their metadata")
                            && e.contains("although the go client sent them in transaction (")
                            && e.contains("apache/pulsar-client-go#1498"),
                        "{e}"
                    );
                }
                assert!(v["missing"].as_array().unwrap().is_empty(), "{v}");
            }
            _ => {
                assert_eq!(o.status.code(), Some(0), "{t}");
                assert_eq!(v["status"], "pass", "{v}");
                // Every message read names the transaction that committed it.
                assert_eq!(named, 1000, "{rb}");
            }
        }
        let (code, rt_text) = recheck(&rd);
        assert_eq!(code, o.status.code(), "{client}: {rt_text}");
        assert!(rt_text.contains("reproduced"), "{rt_text}");
    }
}
