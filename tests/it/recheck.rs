//! Issue 10 point 7: the read-back is stored in the run directory and `recheck` derives the
//! verdict again from it offline.

use std::path::Path;

use crate::common::*;

/// `pulsar-chaos run` on an external cluster (the test's), waited for: (exit code, output).
fn run_on(
    c: &pulsar_chaos::cluster::Cluster,
    scenario: &Path,
    seed: u64,
    dir: &Path,
) -> (i32, String) {
    let o = run_scenario(
        scenario,
        seed,
        dir,
        &["--service-url", &c.service_url, "--admin-url", &c.admin_url],
    );
    (o.status.code().unwrap_or(-1), text(&o))
}

fn readback(run_dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run_dir.join("readback.json")).unwrap()).unwrap()
}

#[test]
fn recheck_reproduces_a_clean_and_a_sabotaged_verdict_and_names_a_tampered_readback() {
    rt().block_on(async {
        let tc = shared_standalone();
        let c = &tc.cluster;
        let dir = tmpdir("recheck");

        // A clean run of 100,000 numbers on 4 partitions: PASS, and recheck agrees.
        let clean = write(
            &dir,
            "clean.yaml",
            "name: recheck-clean\nworkload:\n  topic: persistent://public/default/recheck-clean\n  messages: 100000\n  txn_size: 100\n  concurrency: 4\n  partitions: 4\n",
        );
        let (code, t) = run_on(c, &clean, 21, &dir);
        assert_eq!(code, 0, "{t}");
        let clean_dir = run_dir_of(&t);
        let size = std::fs::metadata(clean_dir.join("readback.json")).unwrap().len();
        let rb = readback(&clean_dir);
        let runs: usize = rb["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["runs"].as_array().unwrap().len())
            .sum();
        eprintln!("clean run of 100000 numbers: readback.json is {size} bytes, {runs} runs");
        assert_eq!(rb["partitions"].as_array().unwrap().len(), 4);
        assert!(size < 256 * 1024, "readback.json is {size} bytes");
        let o = run(&["recheck", clean_dir.to_str().unwrap()]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "{t}");
        assert!(t.contains("PASS") && t.contains("verdict.json reproduced"), "{t}");

        // Sabotaged: 1100 numbers skipped and 1100 others sent twice, none adjacent: more
        // missing and more duplicated ranges than verdict.json lists (LIST_CAP = 1000).
        let skip: Vec<String> = (0..1100u64).map(|i| (i * 4).to_string()).collect();
        let dup: Vec<String> = (0..1100u64).map(|i| (i * 4 + 2).to_string()).collect();
        let sabotaged = write(
            &dir,
            "sabotaged.yaml",
            &format!(
                "name: recheck-sabotaged\nworkload:\n  topic: persistent://public/default/recheck-sabotaged\n  messages: 6000\n  txn_size: 100\n  partitions: 2\nsabotage:\n  skip: [{}]\n  duplicate: [{}]\n",
                skip.join(", "),
                dup.join(", ")
            ),
        );
        let (code, t) = run_on(c, &sabotaged, 22, &dir);
        assert_eq!(code, 1, "{t}");
        let bad_dir = run_dir_of(&t);
        let v = verdict(&bad_dir);
        assert_eq!(v["status"], "violation", "{v}");
        assert_eq!(v["missing_total"], 1100);
        assert_eq!(v["duplicate_values"], 1100);
        assert_eq!(v["missing"].as_array().unwrap().len(), 1000);
        assert_eq!(v["duplicates"].as_array().unwrap().len(), 1000);
        let rb = readback(&bad_dir);
        assert_eq!(rb["findings"]["missing"].as_array().unwrap().len(), 1100);
        assert_eq!(rb["findings"]["duplicates"].as_array().unwrap().len(), 1100);
        // The message ids of both copies of every duplicated number, the last one too.
        assert_eq!(rb["duplicate_ids"].as_object().unwrap().len(), 1100);
        assert_eq!(rb["duplicate_ids"]["4398"].as_array().unwrap().len(), 2);
        let o = run(&["recheck", bad_dir.to_str().unwrap(), "--json"]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let answer: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(answer["reproduced"], true, "{answer}");
        assert_eq!(answer["verdict"], v);

        // Tampered: one more copy of 2 read on its partition than the run saw.
        let mut rb = rb;
        let p = rb["partitions"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|p| p["partition"] == 0)
            .unwrap();
        p["runs"].as_array_mut().unwrap().push(serde_json::json!([2, 1, 0]));
        std::fs::write(bad_dir.join("readback.json"), rb.to_string()).unwrap();
        let o = run(&["recheck", bad_dir.to_str().unwrap()]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(5), "{t}");
        assert!(t.contains("NOT reproduced"), "{t}");
        assert!(t.contains("partition 0: "), "{t}");
        assert!(t.contains("verdict.duplicate_copies: 1100 != 1101"), "{t}");
    });
}
