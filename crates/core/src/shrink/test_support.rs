//! Fixtures shared by the shrink's tests: the repository's bundled scenarios, a scenario that
//! draws every kind of choice, and driving a shrinker with an oracle.

use super::{to_yaml, Candidate, Shrinker};
use crate::scenario::{self, Scenario, ScenarioFile};

/// The repository's scenarios (scenarios/, known-bugs/, findings/): path under scenarios/ and
/// text, in path order. (Tests may read files; the crate itself may not.)
#[allow(clippy::disallowed_methods)]
pub(super) fn bundled() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut out = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().and_then(|e| e.to_str()) == Some("yaml") {
                let name = path.strip_prefix(&root).unwrap().display().to_string();
                out.push((name, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    out.sort();
    assert!(out.len() >= 12, "{} scenario files", out.len());
    out
}

/// Every choice a plan draws: any broker with jitter, owner-of-topic of 4 partitions at random
/// times, commit counts, coordinator-owner of 3 coordinators, a guard, a bookie, reply loss
/// with a probability (draw seeds) and with a count.
pub(super) const FIXTURE: &str = "\
name: golden-fixture
cluster: { topology: cluster, brokers: 3, bookies: 2, coordinators: 3 }
workload:
  topic: persistent://public/default/t
  partitions: 4
  messages: 1000
faults:
  - kind: broker_restart
    mode: kill
    target: any-broker
    schedule: { every: 10s, jitter: 3s, stop: 60s }
  - kind: pause
    duration: 2s
    target: owner-of-topic
    schedule: { random: { count: 4, within: [5s, 50s] } }
  - kind: topic_unload
    schedule: { after_commits: [10, 5] }
  - kind: packet_loss
    percent: 50
    duration: 5s
    target: coordinator-owner
    schedule: { at: [7s, 9s], while: committing }
  - kind: bookie_restart
    schedule: { at: [3s] }
  - kind: reply_loss
    reply: end_txn
    probability: 0.5
    duration: 20s
    schedule: { every: 30s, stop: 100s }
  - kind: reply_loss
    reply: send_receipt
    count: 2
    schedule: { at: [1s] }
  - kind: broker_restart
    name: owner-kill
    target: owner-of-topic
    down_for: 2s
    schedule: { random: { count: 3, within: [1s, 90s] }, while: committing }
";

/// The bundled scenarios and the fixture, parsed: (name, scenario).
pub(super) fn all_scenarios() -> Vec<(String, Scenario)> {
    let mut out: Vec<(String, Scenario)> = bundled()
        .into_iter()
        .map(|(name, text)| {
            let s = scenario::parse(&name, &text).unwrap_or_else(|e| panic!("{e}"));
            (name, s)
        })
        .collect();
    out.push((
        "fixture".into(),
        scenario::parse("fixture", FIXTURE).unwrap(),
    ));
    out
}

/// Run a shrinker to the end with `still_fails` as the oracle, checking each candidate on the
/// way: ids in order, the loader accepts its YAML, no larger than the best it came from and
/// smaller somewhere, the shrink's seed written in. Returns the candidates.
pub(super) fn drive(
    s: &mut Shrinker,
    still_fails: impl Fn(&ScenarioFile) -> bool,
) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    let seed = s.best().seed;
    while let Some(c) = s.next_candidate() {
        assert_eq!(
            s.next_candidate().as_ref(),
            Some(&c),
            "the same candidate until reported"
        );
        assert_eq!(c.id as usize, out.len() + 1);
        let back = scenario::parse("candidate.yaml", &to_yaml(&c.scenario))
            .unwrap_or_else(|e| panic!("candidate {} ({}): {e}", c.id, c.description));
        assert_eq!(super::Size::of(&back), c.size);
        assert_eq!(back.seed, seed);
        let parent = s.best_size();
        assert!(
            c.size.within(&parent) && c.size != parent,
            "{c:?} vs {parent:?}"
        );
        let fails = still_fails(&c.scenario);
        s.report(c.id, fails).unwrap();
        if fails {
            assert_eq!(s.best(), &c.scenario);
        }
        out.push(c);
        assert!(out.len() < 2_000, "the search does not end");
    }
    assert!(s.is_done());
    assert_eq!(s.skipped_invalid(), 0);
    out
}

/// The names of a file's fault entries.
pub(super) fn names(f: &ScenarioFile) -> Vec<String> {
    f.faults
        .iter()
        .map(|e| e.common().name.clone().unwrap_or_default())
        .collect()
}
