//! Issue 11: any Pulsar version through one image path.

use crate::common::*;

/// The newest version served here, built through `image build --pulsar-version` (skipped when
/// its image is current), runs a transactional workload to a pass, and the run records the
/// version so its reproduce command needs no flag.
#[test]
fn another_pulsar_version_builds_runs_and_is_recorded() {
    let o = run(&["image", "build", "--pulsar-version", "4.2.4"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let dir = tmpdir("version-424");
    let scenario = write(
        &dir,
        "v.yaml",
        &format!(
            "name: v424\n{}workload:\n  topic: persistent://public/default/eos-v424\n  partitions: 2\n  messages: 20000\n  txn_size: 100\n  concurrency: 4\n",
            standalone_cluster_yaml()
        ),
    );
    let o = run_scenario(&scenario, 3, &dir, &["--pulsar-version", "4.2.4"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("image: pulsar-chaos/pulsar:4.2.4-")
            || t.contains("image: apachepulsar/pulsar:4.2.4"),
        "{t}"
    );
    let run_dir = run_dir_of(&t);
    assert_eq!(verdict(&run_dir)["status"], "pass");
    let resolved = std::fs::read_to_string(run_dir.join("scenario.yaml")).unwrap();
    assert!(resolved.contains("pulsar_version: 4.2.4"), "{resolved}");
}

#[test]
fn a_malformed_version_is_refused_before_anything_starts() {
    let o = run(&["image", "build", "--pulsar-version", "4.2"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("major.minor.patch"), "{}", text(&o));
    let dir = tmpdir("version-bad");
    let scenario = write(
        &dir,
        "v.yaml",
        &format!(
            "name: vbad\ncluster:\n  topology: standalone\n  pulsar_version: latest\nworkload:\n  topic: persistent://public/default/x\n  messages: 10\n"
        ),
    );
    let o = run(&["validate", scenario.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("pulsar_version"), "{}", text(&o));
    assert!(
        text(&o).contains(":4:"),
        "the error names the line: {}",
        text(&o)
    );
}
