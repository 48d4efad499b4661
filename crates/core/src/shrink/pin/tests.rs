use super::*;
use crate::plan::{self, Plan};
use crate::scenario::{self, Scenario};
use crate::shrink::test_support::{all_scenarios, bundled, FIXTURE};
use crate::shrink::to_yaml;

/// What a firing is, apart from its name and position in the scenario.
type Firing = (
    Trigger,
    Option<crate::scenario::Guard>,
    PlannedTarget,
    FaultKind,
    Option<u64>,
);

fn firings(p: &Plan) -> Vec<Firing> {
    p.faults
        .iter()
        .map(|f| {
            (
                f.trigger,
                f.guard,
                f.target.clone(),
                f.kind.clone(),
                f.draw_seed,
            )
        })
        .collect()
}

/// The pinned scenario written out and read back by the loader.
fn pinned(s: &Scenario, seed: u64) -> (Plan, Scenario) {
    let original = plan::make(s, seed);
    let file = pin(&s.resolved, &original);
    let back = scenario::parse("pinned.yaml", &to_yaml(&file)).unwrap_or_else(|e| panic!("{e}"));
    (original, back)
}

#[test]
fn a_pinned_scenario_plans_the_same_firings_for_every_bundled_scenario() {
    let mut checked = 0;
    for (name, s) in all_scenarios() {
        if s.faults.is_empty() {
            continue;
        }
        for seed in (0..20).chain(s.seed) {
            let (original, back) = pinned(&s, seed);
            assert_eq!(
                back.faults.len(),
                original.faults.len(),
                "{name} seed {seed}"
            );
            assert_eq!(back.seed, Some(seed));
            let again = plan::make(&back, seed);
            assert_eq!(firings(&again), firings(&original), "{name} seed {seed}");
            // The names say which firing of which fault each entry was.
            let named: Vec<&str> = again.faults.iter().map(|f| f.fault.as_str()).collect();
            let was: Vec<&str> = original.faults.iter().map(|f| f.name.as_str()).collect();
            assert_eq!(named, was, "{name} seed {seed}");
        }
        checked += 1;
    }
    assert!(checked >= 12, "{checked} scenarios with faults");
}

#[test]
fn a_pinned_scenario_plans_the_same_with_any_other_seed_and_any_entries_dropped() {
    let s = scenario::parse("fixture", FIXTURE).unwrap();
    let (original, back) = pinned(&s, 11);
    // Nothing is left to draw: another seed plans the same firings.
    let mut other = firings(&plan::make(&back, 12));
    let same = firings(&original);
    // (A reply loss's draws are pinned too.)
    assert_eq!(other, same);
    // Dropping entries (what the search does) leaves the others' firings as they were.
    let mut file = back.resolved.clone();
    let keep: Vec<usize> = (0..file.faults.len()).filter(|i| i % 3 != 1).collect();
    file.faults = keep.iter().map(|i| file.faults[*i].clone()).collect();
    let fewer = scenario::parse("fewer.yaml", &to_yaml(&file)).unwrap();
    other = firings(&plan::make(&fewer, 11));
    let expected: Vec<Firing> = keep.iter().map(|i| same[*i].clone()).collect();
    assert_eq!(other, expected);
}

#[test]
fn every_pinned_entry_fires_once_with_its_settings_written_out() {
    let s = scenario::parse("fixture", FIXTURE).unwrap();
    let p = plan::make(&s, 3);
    let file = pin(&s.resolved, &p);
    let yaml = to_yaml(&file);
    for f in &file.faults {
        let sch = f.common().schedule;
        let at = sch.at.as_ref().map_or(0, |v| v.len());
        let commits = sch.after_commits.clone().map_or(0, |c| c.into_vec().len());
        assert_eq!(at + commits, 1, "{f:?}");
        assert!(sch.every.is_none() && sch.random.is_none());
    }
    assert!(yaml.contains("target: coordinator-owner\n"), "{yaml}");
    assert!(yaml.contains("coordinator: "), "{yaml}");
    assert!(yaml.contains("target: owner-of-topic\n"), "{yaml}");
    assert!(yaml.contains("partition: "), "{yaml}");
    assert!(yaml.contains("draw_seed: "), "{yaml}");
    assert!(yaml.contains("while: committing"), "{yaml}");
    assert!(yaml.contains("after_commits: 5\n"), "{yaml}");
    assert!(yaml.contains("mode: graceful"), "{yaml}");
    assert!(yaml.contains("down_for: 0s"), "{yaml}");
    assert!(yaml.contains("name: owner-kill#1"), "{yaml}");
    assert!(
        !yaml.contains("any-broker") && !yaml.contains("any-bookie"),
        "{yaml}"
    );
    assert!(yaml.starts_with("name: golden-fixture\n"), "{yaml}");
}

#[test]
fn a_pinned_partition_or_coordinator_draws_nothing() {
    let text = FIXTURE
        .replace(
            "    target: owner-of-topic\n    schedule: { random",
            "    target: owner-of-topic\n    partition: 2\n    schedule: { random",
        )
        .replace(
            "    target: coordinator-owner\n",
            "    target: coordinator-owner\n    coordinator: 1\n",
        );
    let s = scenario::parse("pinned", &text).unwrap();
    for seed in 0..10 {
        for f in &plan::make(&s, seed).faults {
            match (&f.target, f.fault.as_str()) {
                (PlannedTarget::OwnerOfTopic { partition }, "pause-1") => {
                    assert_eq!(*partition, Some(2))
                }
                (PlannedTarget::CoordinatorOwner { coordinator }, _) => assert_eq!(*coordinator, 1),
                _ => {}
            }
        }
    }
}

/// FNV-1a, for digests of plan texts.
fn fnv(s: &str) -> u64 {
    let mut x: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.as_bytes() {
        x ^= u64::from(*b);
        x = x.wrapping_mul(0x0000_0100_0000_01b3);
    }
    x
}

/// The plans of seeds 0..20 as one text.
fn plans(s: &Scenario) -> String {
    (0..20).map(|seed| plan::make(s, seed).to_json()).collect()
}

/// Digests of (scenario text, its plans for seeds 0..20) taken before the `partition`,
/// `coordinator` and `draw_seed` keys existed (commit 3a42c12). A scenario whose text has
/// changed since is another scenario and is skipped.
const BEFORE_PINS: [(&str, u64, u64); 14] = [
    (
        "broker-restarts.yaml",
        0xff81ca4c50e3e769,
        0x163c0894d4d4d0db,
    ),
    (
        "coordinator-chaos.yaml",
        0x724a2140c1ce955e,
        0x225e4175e75a5faf,
    ),
    (
        "findings/lwm-abort-after-namespace-unload.yaml",
        0xbf12081e451cbd51,
        0x0eaf08ab909fffaa,
    ),
    (
        "known-bugs/19629-commit-applied-told-failed.yaml",
        0x3e803a3d3e193b49,
        0x4b3a71b68aa1fdfd,
    ),
    (
        "known-bugs/23550-stuck-committing.yaml",
        0x0bdb944336c66caf,
        0xb27625544135d94c,
    ),
    (
        "known-bugs/24945-bookie-restart-stall.yaml",
        0xa48b5cf611696dc3,
        0x83614f991eb9a12d,
    ),
    (
        "known-bugs/26234-unload-while-recovering.yaml",
        0x081dfdbc1bc9c337,
        0x640e0061a985aac5,
    ),
    ("mixed.yaml", 0x484224a755fa7907, 0x57e3ee8a670f3071),
    ("packet-loss.yaml", 0x5cd735129bc36351, 0xcfcf14b87dd9b3b7),
    ("reply-loss.yaml", 0x281ee3aa43665806, 0xc8565872ec7cb1c5),
    ("smoke.yaml", 0x793d98f01b218c4e, 0x83e3c288b8e43af3),
    ("stuck-reads.yaml", 0x2727b323f2e17551, 0x948dacb3398e29af),
    ("topic-unloads.yaml", 0xca92ced5cecb8916, 0xb6c02aab194bc94c),
    ("fixture", 0x4e8fe3584261801e, 0x81c65b6b64dcea4b),
];

#[test]
fn plans_of_scenarios_without_the_pin_keys_are_as_before_them() {
    let mut texts = bundled();
    texts.push(("fixture".into(), FIXTURE.to_string()));
    let mut compared = 0;
    for (name, text) in texts {
        let Some((_, text_hash, plans_hash)) = BEFORE_PINS.iter().find(|(n, ..)| *n == name) else {
            continue;
        };
        if fnv(&text) != *text_hash {
            continue;
        }
        let s = scenario::parse(&name, &text).unwrap();
        assert_eq!(fnv(&plans(&s)), *plans_hash, "{name}: plans changed");
        compared += 1;
    }
    // The fixture always; the bundled files unless they were edited since.
    assert!(compared >= 1);
}
