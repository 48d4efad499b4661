//! Issue 18 point 4 and issue 32: a finding's verdict quotes the broker's own lines about it,
//! and the finding's recipe reproduces it on every run.
//!
//! `scenarios/findings/lwm-abort-after-namespace-unload.yaml` loses confirmed commits on
//! Pulsar 4.2.4 (the default) and 4.0.7: the reloaded partition aborts the transaction by its
//! low-water-mark rule. Its recipe drives commits into the window of a namespace unload (about
//! 17 unloads per run on 8 partitions, each fired while a commit requested after it came due
//! is in flight), so a PASS fails this test at once. Why a PASS is not the race merely missed:
//! the recipe lost committed transactions in every run measured that did not end STUCK (its
//! earlier form, 4 partitions and 11 unloads, in 10 of 10 on a quiet machine); the present one,
//! on 2026-12-06, in 14 of 15 runs, under load too, the 15th reading an aborted transaction's
//! numbers twice instead (docs/findings/lwm-abort-after-namespace-unload.md, "For this
//! repository"). A PASS therefore means, far more likely, that the finding no longer reproduces
//! (a fixed Pulsar, or a harness that no longer sees the loss). A run that ends STUCK (the
//! other finding: a partition's buffer failed to recover, the read stays held, safety
//! undecided; 2 of the first 6 runs on that loaded machine) says nothing either way and
//! is run again, up to [`STUCK_TRIES`] times. The violation must be that loss: every missing
//! range quotes the broker's "Successes to abort low water mark for txn [(0,N)]" line about its
//! own transaction, by file and line.

use std::path::Path;

use crate::common::*;

const LWM: &str = "Successes to abort low water mark for txn";

/// Runs that may end STUCK (the other finding, which hides this one) before the test gives up.
const STUCK_TRIES: usize = 3;

/// A bundled finding's scenario as it is, on free ports (another cluster may hold the default
/// ones).
fn on_free_ports(scenario: &str) -> String {
    let original = std::fs::read_to_string(repo(scenario)).unwrap();
    let yaml = original.replace(
        "cluster:\n  topology: standalone\n",
        &standalone_cluster_yaml(),
    );
    assert_ne!(
        yaml, original,
        "{scenario}: the cluster section changed shape"
    );
    yaml
}

/// Line `n` (1-based) of `file` in `run_dir`.
fn line_of(run_dir: &Path, file: &str, n: u64) -> String {
    let text = std::fs::read_to_string(run_dir.join(file))
        .unwrap_or_else(|e| panic!("{file} is not in the run directory: {e}"));
    text.lines()
        .nth(n as usize - 1)
        .unwrap_or_else(|| panic!("{file} has no line {n}"))
        .to_string()
}

#[test]
fn a_lost_commit_after_a_namespace_unload_quotes_the_brokers_low_water_mark_abort() {
    let dir = tmpdir("lwm-finding");
    let yaml = on_free_ports("scenarios/findings/lwm-abort-after-namespace-unload.yaml");
    let mut stuck = Vec::new();
    let (t, run_dir, v) = loop {
        let out = dir.join(format!("try-{}", stuck.len() + 1));
        std::fs::create_dir_all(&out).unwrap();
        let scenario = write(&out, "lwm.yaml", &yaml);
        let started = std::time::Instant::now();
        let o = run_scenario(&scenario, 1, &out, &[]);
        let t = text(&o);
        let run_dir = run_dir_of(&t);
        let v = verdict(&run_dir);
        eprintln!(
            "lwm finding, seed 1, try {}, {:.0}s: {}",
            stuck.len() + 1,
            started.elapsed().as_secs_f64(),
            v["summary"]
        );
        match o.status.code() {
            Some(1) => {
                assert_eq!(v["status"], "violation", "{t}");
                break (t, run_dir, v);
            }
            Some(0) => panic!(
                "the finding did not reproduce: PASS where the recipe lost committed transactions \
                 in every run that was not STUCK (a fixed Pulsar, or the harness no longer sees \
                 the loss; run directory {}):\n{t}",
                run_dir.display()
            ),
            // The other finding (a partition's buffer failed to recover and left transactions
            // ending): the read stays held and safety is undecided, which says nothing about
            // this one. Run again, a bounded number of times.
            Some(7) => {
                assert_eq!(v["status"], "stuck", "{t}");
                stuck.push(run_dir);
                assert!(
                    stuck.len() < STUCK_TRIES,
                    "every run ended STUCK ({stuck:?}): the loss could not be judged"
                );
            }
            other => panic!("neither a pass nor a violation ({other:?}):\n{t}"),
        }
    };
    // A violation: missing numbers, each range carried by a transaction the coordinator
    // confirmed committed, and the broker's abort of that transaction quoted under it, by file
    // and line. Numbers read twice may come with them (an aborted transaction readable on a
    // partition that missed its abort marker, docs/findings/aborted-txn-readable-after-
    // unload.md): Pulsar's too.
    assert_eq!(v["unexpected_total"], 0, "{v}");
    for d in v["duplicates"].as_array().unwrap() {
        assert_eq!(d["cause"], "pulsar", "{d}");
    }
    let missing = v["missing"].as_array().unwrap();
    assert!(!missing.is_empty(), "{v}");
    for m in missing {
        assert_eq!(m["cause"], "pulsar", "{m}");
        let e = m["explanation"].as_str().unwrap();
        assert!(e.contains("confirmed committed"), "{m}");
        assert!(e.contains("low-water-mark rule"), "{m}");
        let logs = m["broker_log"]
            .as_array()
            .unwrap_or_else(|| panic!("no broker lines: {m}"));
        let mut quoted = 0;
        for l in logs {
            let txn = format!("({},{})", l["txn"]["most"], l["txn"]["least"]);
            for q in l["named"].as_array().into_iter().flatten() {
                let file = q["file"].as_str().unwrap();
                let n = q["line"].as_u64().unwrap();
                assert!(file.starts_with("logs/") && file.ends_with(".log"), "{q}");
                // The line quoted is that line of that file, and names the transaction.
                let line = line_of(&run_dir, file, n);
                assert!(
                    line.contains(&txn),
                    "{file}:{n} does not name {txn}: {line}"
                );
                assert!(
                    line.starts_with(q["time"].as_str().unwrap()),
                    "{q} / {line}"
                );
                if q["message"].as_str().unwrap().contains(LWM) {
                    assert!(line.contains(&format!("{LWM} [{txn}]")), "{line}");
                    assert!(e.contains(&format!("({file}:{n})")), "{m}");
                    quoted += 1;
                }
            }
        }
        assert!(quoted > 0, "no low-water-mark abort quoted under {m}");
    }
    // The CLI and the report show the lines; recheck reproduces the verdict with them.
    assert!(t.contains("broker log lines naming"), "{t}");
    assert!(t.contains(LWM), "{t}");
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(html.contains("Broker log lines naming"));
    assert!(html.contains(LWM));
    let o = run(&["recheck", run_dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("verdict.json reproduced"), "{}", text(&o));
}

/// `scenarios/findings/transform-batch-member-conflict.yaml` (docs/findings/
/// transform-batch-member-conflict.md): one open transaction acknowledges every member of a
/// batched input entry, and a second transaction's ACK of one of them is accepted; with
/// `conflict_probe: commit` both commit and the input's output is read back twice. The recipe
/// is deterministic (10 of 10 runs per version, docs/findings/README.md), so one run must be a
/// violation: a pass means the broker refused the probe (fixed upstream) or the harness no
/// longer reaches the trigger, and fails this test either way. About a minute.
#[test]
fn a_batch_member_acked_in_two_transactions_is_committed_twice() {
    let dir = tmpdir("batch-member-finding");
    let yaml = on_free_ports("scenarios/findings/transform-batch-member-conflict.yaml");
    let scenario = write(&dir, "batch.yaml", &yaml);
    let o = run_scenario(&scenario, 1, &dir, &[]);
    let t = text(&o);
    let run_dir = run_dir_of(&t);
    let v = verdict(&run_dir);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the recipe must violate (a pass: Pulsar refused every probe, or the trigger was not reached):\n{t}"
    );
    assert_eq!(v["status"], "violation", "{t}");
    // Every accepted probe was answered success by the broker, and its holder committed.
    let c = &v["consumer"];
    let accepted = c["probes_accepted"].as_u64().unwrap();
    assert!(accepted >= 1, "{c}");
    assert_eq!(c["probes_refused"], 0, "{c}");
    let findings = c["findings"].as_array().unwrap();
    assert_eq!(findings.len() as u64, accepted, "{c}");
    for f in findings {
        let f = f.as_str().unwrap();
        assert!(f.contains("ACK_RESPONSE without error"), "{f}");
        assert!(f.contains("TransactionConflict expected"), "{f}");
    }
    // The consequence: each accepted probe's input was published twice, by two transactions
    // the coordinator confirmed committed; nothing is missing.
    assert_eq!(v["missing_total"], 0, "{v}");
    assert_eq!(v["duplicate_values"].as_u64().unwrap(), accepted, "{v}");
    for d in v["duplicates"].as_array().unwrap() {
        assert_eq!(d["cause"], "pulsar", "{d}");
        assert_eq!(d["copies"], 2, "{d}");
        assert!(
            d["explanation"]
                .as_str()
                .unwrap()
                .contains("committed by more than one transaction"),
            "{d}"
        );
    }
    // The input subscription holds nothing back.
    for b in c["backlog"].as_array().unwrap() {
        assert_eq!(b["backlog"], 0, "{b}");
    }
}
