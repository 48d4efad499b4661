use std::cell::RefCell;

use super::*;
use crate::plan;
use crate::scenario::FaultFile;
use crate::seed::Rng;
use crate::shrink::test_support::{all_scenarios, drive, names};
use crate::shrink::{pin, MESSAGES_FLOOR};

/// Eight pinned pause entries `p0`..`p7` at 10 s, 20 s, ... 80 s, 4 s each, on a cluster.
fn eight() -> ScenarioFile {
    let mut text = String::from(
        "name: eight\ncluster: { topology: cluster, brokers: 2, bookies: 1 }\nworkload:\n  topic: persistent://public/default/e\n  messages: 50000\n  txn_size: 100\n  concurrency: 8\nfaults:\n",
    );
    for i in 0..8 {
        text.push_str(&format!(
            "  - kind: pause\n    name: p{i}\n    duration: 4s\n    target: broker-1\n    schedule: {{ at: [{}s] }}\n",
            10 * (i + 1)
        ));
    }
    scenario::parse("eight.yaml", &text).unwrap().resolved
}

fn has(f: &ScenarioFile, name: &str) -> bool {
    names(f).iter().any(|n| n == name)
}

/// The candidates of the drop-faults phase.
fn drops(c: &[Candidate]) -> usize {
    c.iter().filter(|c| c.phase == Phase::DropFaults).count()
}

#[test]
fn delta_debugging_finds_a_single_culprit_among_eight_in_a_few_runs() {
    for x in 0..8 {
        let culprit = format!("p{x}");
        let mut s = Shrinker::new(eight(), 1).unwrap();
        let c = drive(&mut s, |f| has(f, &culprit));
        assert_eq!(names(s.best()), vec![culprit.clone()]);
        // All at once, then halves, quarters, single entries: 1 + 2 + 2 + 2 at most.
        assert!(drops(&c) <= 7, "p{x}: {} drops", drops(&c));
        assert_eq!(
            c[0].description,
            "drop all 8 faults (p0, p1, p2, and 5 more)"
        );
    }
}

#[test]
fn delta_debugging_keeps_two_faults_that_fail_only_together() {
    let mut s = Shrinker::new(eight(), 1).unwrap();
    let c = drive(&mut s, |f| has(f, "p2") && has(f, "p6"));
    assert_eq!(names(s.best()), vec!["p2", "p6"]);
    assert!(drops(&c) <= 16, "{} drops", drops(&c));
}

#[test]
fn a_failure_that_needs_no_fault_loses_every_fault_at_once() {
    let mut s = Shrinker::new(eight(), 1).unwrap();
    let c = drive(&mut s, |_| true);
    assert_eq!(drops(&c), 1);
    assert!(s.best().faults.is_empty());
    // Then fewer messages, down to the floor, concurrency and commits in flight down to 1.
    assert_eq!(s.best().workload.messages, MESSAGES_FLOOR);
    assert_eq!(s.best().workload.concurrency, Some(1));
    assert_eq!(s.best().workload.commits_in_flight, Some(1));
    let phases: Vec<Phase> = c.iter().map(|c| c.phase).collect();
    let mut sorted = phases.clone();
    sorted.sort();
    assert_eq!(phases, sorted, "the phases run in order");
}

#[test]
fn firings_move_earlier_and_holds_shorten_while_it_still_fails() {
    let mut s = Shrinker::new(eight(), 1).unwrap();
    // Fails while p5 is present, fires no earlier than 12 s and holds at least 2 s.
    let oracle = |f: &ScenarioFile| {
        let Some(p5) = f
            .faults
            .iter()
            .find(|e| e.common().name.as_deref() == Some("p5"))
        else {
            return false;
        };
        let at = p5.common().schedule.at.as_ref().unwrap()[0].0;
        let FaultFile::Pause { duration, .. } = p5 else {
            panic!("{p5:?}")
        };
        at >= Duration::from_secs(12) && duration.0 >= Duration::from_secs(2)
    };
    let c = drive(&mut s, oracle);
    let e = &s.best().faults[0];
    let at = e.common().schedule.at.as_ref().unwrap()[0].0;
    assert!(
        at >= Duration::from_secs(12) && at < Duration::from_secs(20),
        "{at:?}"
    );
    let FaultFile::Pause { duration, .. } = e else {
        panic!()
    };
    assert_eq!(duration.0, Duration::from_secs(2));
    let earlier: Vec<&str> = c
        .iter()
        .filter(|c| c.phase == Phase::Earlier)
        .map(|c| c.description.as_str())
        .collect();
    assert_eq!(earlier[0], "fault 1 of 1 (p5) earlier: at 1m -> 31s");
    assert!(earlier.len() <= 8, "{earlier:?}");
    assert!(c
        .iter()
        .any(|c| c.description == "fault 1 of 1 (p5) shorter: duration 4s -> 2s"));
}

#[test]
fn never_failing_candidates_leave_the_original_and_end() {
    let original = eight();
    let mut s = Shrinker::new(original.clone(), 4).unwrap();
    let c = drive(&mut s, |_| false);
    let mut expected = original;
    expected.seed = Some(4);
    assert_eq!(s.best(), &expected);
    assert_eq!(s.best_size(), s.original_size());
    assert!(c.len() < 60, "{}", c.len());
}

#[test]
fn the_same_inputs_give_the_same_candidates() {
    for (name, sc) in all_scenarios() {
        let file = pin(&sc.resolved, &plan::make(&sc, 9));
        let run = || {
            let mut s = Shrinker::new(file.clone(), 9).unwrap();
            // A noisy oracle: half the candidates fail, the same ones for the same stream.
            let rng = RefCell::new(Rng::derive(9, "oracle"));
            let c = drive(&mut s, |_| rng.borrow_mut().below(2) == 0);
            (c, s.best().clone())
        };
        let (a, best_a) = run();
        let (b, best_b) = run();
        assert_eq!(a, b, "{name}");
        assert_eq!(best_a, best_b, "{name}");
    }
}

#[test]
fn every_candidate_of_every_bundled_scenario_is_valid_and_no_larger() {
    // `drive` checks each candidate: the loader accepts it, no dimension grows, one shrinks.
    let mut total = 0;
    for (name, sc) in all_scenarios() {
        for seed in [1, 13] {
            let file = pin(&sc.resolved, &plan::make(&sc, seed));
            for oracle_seed in 0..3 {
                let mut s = Shrinker::new(file.clone(), seed).unwrap();
                let rng = RefCell::new(Rng::derive(oracle_seed, &name));
                let c = drive(&mut s, |_| rng.borrow_mut().below(3) == 0);
                assert!(s.best_size().within(&s.original_size()), "{name}");
                total += c.len();
            }
        }
    }
    assert!(total > 500, "{total} candidates");
}

#[test]
fn a_report_names_the_candidate_out() {
    let mut s = Shrinker::new(eight(), 1).unwrap();
    assert!(matches!(
        s.report(1, true),
        Err(ShrinkError::NotPending {
            id: 1,
            pending: None
        })
    ));
    let c = s.next_candidate().unwrap();
    let err = s.report(c.id + 1, true).unwrap_err();
    assert_eq!(
        err.to_string(),
        "candidate 2 is not the one being tried (that is 1)"
    );
    s.report(c.id, false).unwrap();
    assert_eq!(s.next_candidate().unwrap().id, 2);
}

#[test]
fn an_invalid_scenario_is_refused_at_the_start() {
    let mut f = eight();
    f.workload.messages = 0;
    let err = Shrinker::new(f, 1).unwrap_err();
    assert!(err.to_string().contains("messages"), "{err}");
}

#[test]
fn the_messages_floor_keeps_the_faults_within_the_run() {
    // rate 1000/s: enough messages to be producing when the last fault heals.
    let mut f = eight();
    f.workload.rate = Some(1000);
    f.workload.messages = 200_000;
    let mut s = Shrinker::new(f, 1).unwrap();
    // Fails with all eight faults and the last one no earlier than 80 s (holds may shorten).
    let last_at_80 = |f: &ScenarioFile| {
        f.faults.len() == 8
            && f.faults[7].common().schedule.at.as_ref().unwrap()[0]
                .0
                .as_secs()
                >= 80
    };
    drive(&mut s, last_at_80);
    assert_eq!(s.best().faults.len(), 8);
    // The last fault heals at 81 s at the earliest (a 1 s hold): 81000 messages at 1000/s.
    assert_eq!(s.best().workload.messages, 81_000);
    assert!(s.best().workload.messages < 200_000);
}

#[test]
fn the_messages_floor_leaves_commits_after_a_count_triggered_firing() {
    // A dropped commit reply after 20 commits, in transactions of 50: the floor keeps 20
    // transactions after the firing (41 in all), not one, so the fault still meets a commit.
    let text = "name: c\ncluster: { topology: standalone }\nworkload:\n  topic: persistent://public/default/c\n  messages: 6000\n  txn_size: 50\n  concurrency: 2\nfaults:\n  - kind: reply_loss\n    name: lose-commit\n    reply: end_txn\n    count: 1\n    schedule: { after_commits: 20 }\n";
    let f = scenario::parse("c.yaml", text).unwrap().resolved;
    let mut s = Shrinker::new(f, 1).unwrap();
    // Fails while the fault is there and fires after 20 commits.
    let needs_20 = |f: &ScenarioFile| {
        f.faults.len() == 1
            && matches!(
                f.faults[0].common().schedule.after_commits,
                Some(crate::scenario::OneOrMany::One(20))
            )
    };
    drive(&mut s, needs_20);
    assert_eq!(s.best().workload.messages, 41 * 50);
}

#[test]
fn sizes_say_what_they_count() {
    let s = Shrinker::new(eight(), 1).unwrap();
    let size = s.original_size();
    assert_eq!(size.faults, 8);
    assert_eq!(size.hold_ms, 32_000);
    assert_eq!(size.offsets_ms, 360_000);
    assert_eq!(
        size.to_string(),
        "8 fault(s), 32s held, 50000 messages, concurrency 8"
    );
    let mut smaller = size;
    smaller.faults = 7;
    assert!(smaller.within(&size) && !size.within(&smaller));
}
