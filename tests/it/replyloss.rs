//! Issue 10 point 6: `reply_loss`, a deterministic ambiguous commit. The producer's
//! connections go through the harness's proxy, which drops the broker's reply to a chosen
//! command after the broker acted and closes the connection.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::common::*;

/// The seed the END_TXN tests share (the same plan under every resend policy).
const SEED: u64 = 3;
const MESSAGES: u64 = 3000;

/// A standalone scenario on free ports: `MESSAGES` numbers in transactions of 50, one at a
/// time (so a dropped commit reply closes a connection with no other commit in flight), and
/// `fault`.
fn scenario(dir: &Path, name: &str, resend: &str, fault: &str) -> PathBuf {
    scenario_with(dir, name, resend, fault, "")
}

/// [`scenario`] with more workload keys (`extra`: indented lines).
fn scenario_with(dir: &Path, name: &str, resend: &str, fault: &str, extra: &str) -> PathBuf {
    write(
        dir,
        &format!("{name}.yaml"),
        &format!(
            "name: {name}\n{}workload:\n  topic: persistent://public/default/{name}\n  messages: {MESSAGES}\n  txn_size: 50\n  concurrency: 1\n  commits_in_flight: 1\n  txn_timeout: 20s\n  op_timeout: 5s\n  resend: {resend}\n{extra}faults:\n{fault}",
            standalone_cluster_yaml()
        ),
    )
}

const END_TXN_FAULT: &str =
    "  - kind: reply_loss\n    reply: end_txn\n    count: 3\n    schedule: { after_commits: [5, 30] }\n";

/// Run it with the cluster kept; (exit code, run directory, output, the guard that removes
/// the cluster when the test ends, passed or not).
fn run_kept(scenario: &Path, dir: &Path) -> (Option<i32>, PathBuf, String, Down) {
    let o = run_scenario(scenario, SEED, dir, &["--keep-cluster"]);
    let t = text(&o);
    let run_dir = run_dir_of(&t);
    let down = Down(run_info(&run_dir)["run_id"].as_str().unwrap().to_string());
    (o.status.code(), run_dir, t, down)
}

fn run_info(run_dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap()
}

/// Each number's copies as an independent client reads them; removes the cluster after.
fn independent_copies(run_dir: &Path) -> BTreeMap<u64, u64> {
    let info = run_info(run_dir);
    let payloads = rt().block_on(independent_readback(
        info["service_url"].as_str().unwrap(),
        info["topic"].as_str().unwrap(),
    ));
    let _ = run(&["cluster", "down", "--run", info["run_id"].as_str().unwrap()]);
    let mut copies = BTreeMap::new();
    for n in numbers(&payloads) {
        *copies.entry(n).or_insert(0) += 1;
    }
    copies
}

/// What the history says of each attempt.
#[derive(Debug, Default)]
struct Attempt {
    txn: (u64, u64),
    numbers: Vec<(u64, u64)>,
    resend_of: Option<u64>,
    commit_requested: bool,
    outcome: Option<String>,
    resend_scheduled: bool,
}

fn attempts(h: &[serde_json::Value]) -> BTreeMap<u64, Attempt> {
    let txn = |e: &serde_json::Value| {
        (
            e["txn"]["most"].as_u64().unwrap(),
            e["txn"]["least"].as_u64().unwrap(),
        )
    };
    let mut out: BTreeMap<u64, Attempt> = BTreeMap::new();
    for e in h {
        let Some(a) = e["attempt"].as_u64() else {
            continue;
        };
        let at = out.entry(a).or_default();
        match e["event"].as_str().unwrap() {
            "txn_opened" => {
                at.txn = txn(e);
                at.numbers = e["numbers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| (r[0].as_u64().unwrap(), r[1].as_u64().unwrap()))
                    .collect();
                at.resend_of = e["resend_of"].as_u64();
            }
            "commit_requested" => at.commit_requested = true,
            "txn_outcome" => at.outcome = e["outcome"].as_str().map(str::to_string),
            "resend_scheduled" => at.resend_scheduled = true,
            _ => {}
        }
    }
    out
}

/// The txn ids whose reply of `command` the proxy dropped.
fn dropped(h: &[serde_json::Value], command: &str) -> Vec<(u64, u64)> {
    h.iter()
        .filter(|e| e["event"] == "reply_dropped" && e["command"] == command)
        .map(|e| {
            assert!(
                e["fault"].as_str().unwrap().starts_with("reply_loss-0#"),
                "{e}"
            );
            assert!(e["request_id"].is_u64(), "{e}");
            (
                e["txn"]["most"]
                    .as_u64()
                    .expect("the dropped reply names its txn"),
                e["txn"]["least"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The fault fired, was applied and healed.
fn assert_fault_cycle(h: &[serde_json::Value]) {
    for ev in ["fault_started", "fault_applied", "fault_healed"] {
        assert!(
            h.iter()
                .any(|e| e["event"] == ev && e["fault"] == "reply_loss-0#1"),
            "no {ev} of reply_loss-0#1"
        );
    }
    assert!(h
        .iter()
        .filter(|e| e["event"] == "fault_healed")
        .all(|e| e["ok"] == true));
}

#[test]
fn naive_resends_after_a_dropped_commit_reply_and_duplicates_exactly_those_numbers() {
    let dir = tmpdir("replyloss-naive");
    let s = scenario(&dir, "replyloss-naive", "naive", END_TXN_FAULT);
    let (code, run_dir, t, _down) = run_kept(&s, &dir);
    let copies = independent_copies(&run_dir);
    assert_eq!(code, Some(1), "{t}");
    naive_duplicated_exactly_the_dropped_commits(&run_dir, &copies, "own");
}

/// A naive run's verdict and read-back: every duplicate is a resend of a transaction whose
/// commit reply the proxy dropped, nothing is missing, and the verdict counts what an
/// independent client read.
fn naive_duplicated_exactly_the_dropped_commits(
    run_dir: &Path,
    copies: &BTreeMap<u64, u64>,
    client: &str,
) {
    let v = verdict(run_dir);
    assert_eq!(v["status"], "violation", "{v}");
    // Every duplicate is attributed to the ambiguity, with the dropped reply as evidence.
    for d in v["duplicates"].as_array().unwrap() {
        assert_eq!(d["cause"], "ambiguity", "{d}");
        assert!(
            d["evidence"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e.as_str().unwrap().contains("END_TXN_RESPONSE dropped by")),
            "{d}"
        );
    }
    let h = history(run_dir);
    assert_fault_cycle(&h);
    let drops = dropped(&h, "END_TXN_RESPONSE");
    assert!(!drops.is_empty(), "no END_TXN reply dropped");
    let att = attempts(&h);
    let by_txn: HashMap<(u64, u64), u64> = att.iter().map(|(k, a)| (a.txn, *k)).collect();
    // The independent read-back agrees with the verdict: all there, some twice.
    let dups: Vec<u64> = copies
        .iter()
        .filter(|(_, c)| **c > 1)
        .map(|(n, _)| *n)
        .collect();
    assert!(!dups.is_empty(), "{v}");
    assert_eq!((0..MESSAGES).filter(|n| !copies.contains_key(n)).count(), 0);
    let extra: u64 = copies.values().map(|c| c - 1).sum();
    assert_eq!(v["duplicate_copies"].as_u64().unwrap(), extra, "{v}");
    assert_eq!(v["missing_total"], 0, "{v}");
    // Every duplicated number: one of its carriers had its commit reply dropped, ended
    // ambiguous and was resent (the first carrier may have aborted for a SEND lost with the
    // connection the drop closed, and been resent before that); every later carrier is a resend
    // of the first.
    for n in &dups {
        let carriers: Vec<u64> = att
            .iter()
            .filter(|(_, a)| a.numbers.iter().any(|(s, e)| s <= n && n < e))
            .map(|(k, _)| *k)
            .collect();
        let ambiguous = carriers.iter().map(|k| &att[k]).find(|a| {
            drops.contains(&a.txn)
                && a.commit_requested
                && a.outcome.as_deref() == Some("ambiguous")
                && a.resend_scheduled
        });
        assert!(
            ambiguous.is_some(),
            "{n}: no carrier had its commit reply dropped, ended ambiguous and was resent ({:?}; drops {drops:?})",
            carriers.iter().map(|k| &att[k]).collect::<Vec<_>>()
        );
        for later in &carriers[1..] {
            let mut a = *later;
            while let Some(prev) = att[&a].resend_of {
                a = prev;
            }
            assert_eq!(
                a, carriers[0],
                "{n}: #{later} is no resend of #{}",
                carriers[0]
            );
        }
    }
    // Every dropped commit reply (of a commit the producer asked for) left it ambiguous.
    for txn in &drops {
        let a = &att[&by_txn[txn]];
        if a.commit_requested {
            assert_eq!(a.outcome.as_deref(), Some("ambiguous"), "{a:?}");
        }
    }
    eprintln!(
        "{client}, naive under reply_loss: {} END_TXN replies dropped; {}",
        drops.len(),
        v["summary"]
    );
}

/// The same seed and plan under a policy that learns the outcome: PASS, and every number once.
fn passes_under(resend: &str) {
    passes_under_with(resend, "own", "")
}

/// (history, the dropped END_TXN replies' txns, each number's copies).
type Passed = (Vec<serde_json::Value>, Vec<(u64, u64)>, BTreeMap<u64, u64>);

/// Run `scenario` with the cluster kept and require a PASS after the fault's whole cycle with
/// at least one END_TXN reply dropped: (history, the dropped replies' txns, each number's
/// copies as an independent client reads them).
fn passed_with_dropped_commits(scenario: &Path, dir: &Path) -> Passed {
    let (code, run_dir, t, _down) = run_kept(scenario, dir);
    let copies = independent_copies(&run_dir);
    assert_eq!(code, Some(0), "{t}");
    assert_eq!(verdict(&run_dir)["status"], "pass");
    let h = history(&run_dir);
    assert_fault_cycle(&h);
    let drops = dropped(&h, "END_TXN_RESPONSE");
    assert!(!drops.is_empty(), "no END_TXN reply dropped");
    (h, drops, copies)
}

/// The history's `client:` note names `client`: the run went through its driver.
fn assert_through(h: &[serde_json::Value], client: &str) {
    assert!(
        h.iter().any(|e| e["message"]
            .as_str()
            .is_some_and(|m| m.starts_with(&format!("client: {client}")))),
        "the run did not go through the {client} driver"
    );
}

fn passes_under_with(resend: &str, client: &str, extra: &str) {
    let name = format!("replyloss-{client}-{resend}");
    let dir = tmpdir(&name);
    let s = scenario_with(&dir, &name, resend, END_TXN_FAULT, extra);
    let (h, drops, copies) = passed_with_dropped_commits(&s, &dir);
    let att = attempts(&h);
    assert!(
        att.values()
            .any(|a| drops.contains(&a.txn) && a.outcome.as_deref() == Some("ambiguous")),
        "no commit was made ambiguous: {drops:?}"
    );
    assert_eq!(copies.len() as u64, MESSAGES);
    assert!(copies.keys().all(|n| *n < MESSAGES));
    assert!(copies.values().all(|c| *c == 1), "{copies:?}");
    eprintln!(
        "{client}, {resend} under reply_loss: {} END_TXN replies dropped; PASS",
        drops.len()
    );
}

#[test]
fn retry_commit_and_verify_pass_on_the_same_seed() {
    passes_under("retry-commit");
    passes_under("verify");
}

#[test]
fn a_dropped_send_receipt_never_lets_its_transaction_commit() {
    let dir = tmpdir("replyloss-receipt");
    let s = scenario(
        &dir,
        "replyloss-receipt",
        "verify",
        "  - kind: reply_loss\n    reply: send_receipt\n    count: 3\n    schedule: { after_commits: [5, 30] }\n",
    );
    let (code, run_dir, t, _down) = run_kept(&s, &dir);
    let copies = independent_copies(&run_dir);
    assert_eq!(code, Some(0), "{t}");
    assert_eq!(verdict(&run_dir)["status"], "pass");
    let h = history(&run_dir);
    assert_fault_cycle(&h);
    let drops = dropped(&h, "SEND_RECEIPT");
    assert!(!drops.is_empty(), "no SEND_RECEIPT dropped");
    let att = attempts(&h);
    let by_txn: HashMap<(u64, u64), u64> = att.iter().map(|(k, a)| (a.txn, *k)).collect();
    for txn in &drops {
        let k = by_txn
            .get(txn)
            .unwrap_or_else(|| panic!("the dropped receipt names {txn:?}, which no attempt had"));
        let a = &att[k];
        assert!(
            !a.commit_requested,
            "#{k} committed after a lost receipt: {a:?}"
        );
        assert_eq!(a.outcome.as_deref(), Some("aborted"), "#{k}: {a:?}");
        assert!(a.resend_scheduled, "#{k}: {a:?}");
    }
    assert_eq!(copies.len() as u64, MESSAGES);
    assert!(copies.values().all(|c| *c == 1), "{copies:?}");
}

/// Issue 31: the proxy works with an official client too. The Java driver is given the proxy's
/// listener as its service URL and the proxy rewrites the broker addresses in the lookups it
/// forwards, so the coordinator's connection goes through it as well. Deduplication is on so
/// that the Java producer's own resend of a batch cut by a closed connection is dropped by the
/// broker (docs/drivers.md): what remains duplicated is the application's resend alone.
#[test]
fn the_java_client_behind_the_proxy_naive_duplicates_the_dropped_commits_and_verify_passes() {
    const JAVA: &str = "  client: java\n  deduplication: true\n";
    let dir = tmpdir("replyloss-java-naive");
    let s = scenario_with(&dir, "replyloss-java-naive", "naive", END_TXN_FAULT, JAVA);
    let (code, run_dir, t, _down) = run_kept(&s, &dir);
    let copies = independent_copies(&run_dir);
    assert_eq!(code, Some(1), "{t}");
    assert_through(&history(&run_dir), "java");
    naive_duplicated_exactly_the_dropped_commits(&run_dir, &copies, "java");
    passes_under_with("verify", "java", JAVA);
}

/// Issue 31: a transform through the Java client behind the proxy. The driver's consumers,
/// producers and coordinator connection all go through it (its service URL is the proxy's
/// listener); dropped END_TXN replies reach the client's commits, whose outcome the harness
/// learns (the history's ambiguous commits end committed or aborted on the client's answers),
/// and with the broker deduplicating the outputs (the Java producer's resend after a
/// reconnect would otherwise keep a second copy: `client_resend`) every number arrives once.
#[test]
fn the_java_client_transforms_behind_the_proxy_and_passes_with_deduplication() {
    let dir = tmpdir("replyloss-java-transform");
    let s = write(
        &dir,
        "replyloss-java-transform.yaml",
        &format!(
            "name: replyloss-java-transform\n{}workload:\n  kind: transform\n  topic: persistent://public/default/replyloss-java-transform\n  partitions: 1\n  messages: 2000\n  txn_size: 10\n  consumers: 2\n  subscription_type: shared\n  client: java\n  batch_size: 1\n  deduplication: true\n  txn_timeout: 30s\n  deadline: 4m\nfaults:\n  - kind: reply_loss\n    reply: end_txn\n    count: 3\n    schedule: {{ after_commits: 10 }}\n",
            standalone_cluster_yaml()
        ),
    );
    let (h, drops, copies) = passed_with_dropped_commits(&s, &dir);
    assert_through(&h, "java");
    // A dropped reply met one of the driver's commits: its outcome was the client's to tell.
    let att = attempts(&h);
    assert!(
        att.values().any(|a| drops.contains(&a.txn)),
        "no dropped reply belongs to a transaction of the transform: {drops:?}"
    );
    assert_eq!(copies.len(), 2000);
    assert!(copies.values().all(|c| *c == 1), "{copies:?}");
}
