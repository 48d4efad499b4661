//! The plan: a pure function of (scenario, seed) to an ordered list of fault firings, with
//! every random choice (offsets, jitter, which broker) already drawn.
//!
//! The same scenario and seed give a byte-identical `plan.json`. Randomness comes from
//! [`crate::seed::Rng`] streams named after each fault's position, so a fault added at the end
//! of a scenario does not move the others. No clock, no I/O.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::scenario::{FaultKind, FaultSpec, Guard, Scenario, Target, Timing, UnloadScope};
use crate::seed::Rng;

mod reach;
pub use reach::reach_warnings;

/// Where a planned fault lands, with the random choices resolved. `OwnerOfTopic` and
/// `CoordinatorOwner` name which partition / coordinator; the broker that owns it is looked
/// up when the fault fires and recorded in the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PlannedTarget {
    Broker {
        index: u32,
    },
    OwnerOfTopic {
        partition: Option<u32>,
    },
    CoordinatorOwner {
        coordinator: u32,
    },
    Bookie {
        index: u32,
    },
    Zookeeper,
    Cluster,
    /// A transform's consumer, 1-based (worker `index - 1`).
    Consumer {
        index: u32,
    },
}

impl std::fmt::Display for PlannedTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlannedTarget::Broker { index } => write!(f, "broker-{index}"),
            PlannedTarget::OwnerOfTopic { partition: None } => f.write_str("owner-of-topic"),
            PlannedTarget::OwnerOfTopic { partition: Some(p) } => {
                write!(f, "owner-of-topic(partition {p})")
            }
            PlannedTarget::CoordinatorOwner { coordinator } => {
                write!(f, "coordinator-owner(coordinator {coordinator})")
            }
            PlannedTarget::Bookie { index } => write!(f, "bookie-{index}"),
            PlannedTarget::Zookeeper => f.write_str("zookeeper"),
            PlannedTarget::Cluster => f.write_str("cluster"),
            PlannedTarget::Consumer { index } => write!(f, "consumer-{index}"),
        }
    }
}

/// When a planned fault fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// At this offset from the start of the producer, in milliseconds.
    AtMs(u64),
    /// When this many transactions have committed.
    AfterCommits(u64),
}

/// One fault firing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedFault {
    /// Position in the plan (0-based), also the firing's id in the history.
    pub id: u32,
    /// The fault's name in the scenario, with `#<n>` for its n-th firing.
    pub name: String,
    pub fault: String,
    pub fault_index: usize,
    pub trigger: Trigger,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guard: Option<Guard>,
    pub target: PlannedTarget,
    #[serde(flatten)]
    pub kind: FaultKind,
    /// The seed of the draws a `reply_loss` fault with a probability makes, one per matching
    /// reply while it is active (from the plan's seed, so a replay draws the same sequence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw_seed: Option<u64>,
}

impl PlannedFault {
    /// How long the fault stays before its heal (0 for an unload).
    pub fn hold(&self) -> Duration {
        self.kind.hold()
    }

    /// How long the fault stays before its heal at most; `None`: until the fault says it is
    /// spent (a `reply_loss` whose count is used up) or the producer finishes.
    pub fn hold_window(&self) -> Option<Duration> {
        match &self.kind {
            FaultKind::ReplyLoss { duration, .. } => *duration,
            _ => Some(self.hold()),
        }
    }
}

/// The plan of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub scenario: String,
    pub seed: u64,
    pub faults: Vec<PlannedFault>,
}

impl Plan {
    /// The canonical JSON text (what `plan.json` holds).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("plans serialize");
        s.push('\n');
        s
    }
}

/// Make the plan. Pure: the same inputs give the same plan.
pub fn make(scenario: &Scenario, seed: u64) -> Plan {
    let (brokers, bookies, coordinators) = scenario.cluster.counts();
    let (brokers, bookies, coordinators) = (brokers.max(1), bookies.max(1), coordinators.max(1));
    let partitions = scenario.workload.partitions;
    let consumers = scenario
        .workload
        .transform
        .map_or(1, |t| t.consumers.max(1));
    let mut firings: Vec<PlannedFault> = Vec::new();
    for f in &scenario.faults {
        let mut rng = Rng::derive(seed, &format!("fault-{}", f.index));
        let deadline_ms = scenario.workload.deadline.as_millis() as u64;
        let triggers = triggers(&f.schedule.timing, &mut rng, deadline_ms);
        for (n, trigger) in triggers.into_iter().enumerate() {
            let target = planned_target(
                f,
                &mut rng,
                [brokers, bookies, coordinators, partitions, consumers],
            );
            let kind = match &f.kind {
                FaultKind::TopicUnload {
                    scope: UnloadScope::WorkloadTopic,
                } => FaultKind::TopicUnload {
                    scope: UnloadScope::WorkloadTopic,
                },
                k => k.clone(),
            };
            // A stream of its own per firing, so these draws never move another fault's.
            let draw_seed = match &f.kind {
                FaultKind::ReplyLoss {
                    probability: Some(_),
                    ..
                } => Some(f.pins.draw_seed.unwrap_or_else(|| {
                    Rng::derive(seed, &format!("fault-{}-firing-{}-replies", f.index, n + 1))
                        .next_u64()
                })),
                _ => None,
            };
            firings.push(PlannedFault {
                id: 0,
                name: format!("{}#{}", f.name, n + 1),
                fault: f.name.clone(),
                fault_index: f.index,
                trigger,
                guard: f.schedule.guard,
                target,
                kind,
                draw_seed,
            });
        }
    }
    // Time triggers first, in time order; then progress triggers by count. Stable: ties keep
    // scenario order.
    firings.sort_by_key(|a| a.trigger);
    for (i, f) in firings.iter_mut().enumerate() {
        f.id = i as u32;
    }
    Plan {
        scenario: scenario.name.clone(),
        seed,
        faults: firings,
    }
}

/// The firings of one schedule (`every` with jitter and `random` draw from the fault's
/// stream).
fn triggers(timing: &Timing, rng: &mut Rng, deadline_ms: u64) -> Vec<Trigger> {
    match timing {
        Timing::At(offsets) => offsets
            .iter()
            .map(|d| Trigger::AtMs(d.as_millis() as u64))
            .collect(),
        Timing::Every {
            period,
            jitter,
            start,
            stop,
        } => {
            let period = period.as_millis() as u64;
            let jitter = jitter.as_millis() as u64;
            let stop = stop.map(|d| d.as_millis() as u64).unwrap_or(deadline_ms);
            let mut t = start.as_millis() as u64;
            let mut out = Vec::new();
            while t < stop {
                let j = if jitter > 0 {
                    rng.between(0, 2 * jitter)
                } else {
                    jitter
                };
                let at = (t + j).saturating_sub(jitter);
                if at < stop {
                    out.push(Trigger::AtMs(at));
                }
                t += period;
            }
            out
        }
        Timing::Random { count, from, to } => {
            let (a, b) = (from.as_millis() as u64, to.as_millis() as u64);
            let mut v: Vec<u64> = (0..*count).map(|_| rng.between(a, b)).collect();
            v.sort();
            v.into_iter().map(Trigger::AtMs).collect()
        }
        Timing::AfterCommits(list) => list.iter().map(|n| Trigger::AfterCommits(*n)).collect(),
    }
}

/// The target of one firing, drawn from the fault's stream when the scenario leaves a choice
/// (a pinned partition or coordinator draws nothing).
/// `counts`: brokers, bookies, coordinators, partitions, consumers.
fn planned_target(f: &FaultSpec, rng: &mut Rng, counts: [u32; 5]) -> PlannedTarget {
    let [brokers, bookies, coordinators, partitions, consumers] = counts;
    match f.target {
        Target::AnyBroker => PlannedTarget::Broker {
            index: 1 + rng.below(u64::from(brokers)) as u32,
        },
        Target::Broker(i) => PlannedTarget::Broker { index: i },
        Target::OwnerOfTopic => PlannedTarget::OwnerOfTopic {
            partition: if f.pins.partition.is_some() {
                f.pins.partition
            } else if partitions > 1 {
                Some(rng.below(u64::from(partitions)) as u32)
            } else {
                None
            },
        },
        Target::CoordinatorOwner => PlannedTarget::CoordinatorOwner {
            coordinator: match f.pins.coordinator {
                Some(c) => c,
                None => rng.below(u64::from(coordinators)) as u32,
            },
        },
        Target::AnyBookie => PlannedTarget::Bookie {
            index: 1 + rng.below(u64::from(bookies)) as u32,
        },
        Target::Bookie(i) => PlannedTarget::Bookie { index: i },
        Target::Zookeeper => PlannedTarget::Zookeeper,
        Target::Cluster => PlannedTarget::Cluster,
        Target::AnyConsumer => PlannedTarget::Consumer {
            index: 1 + rng.below(u64::from(consumers)) as u32,
        },
        Target::Consumer(i) => PlannedTarget::Consumer { index: i },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario;

    const TEXT: &str = "\
name: plan-test
cluster: { topology: cluster, brokers: 3, bookies: 2, coordinators: 2 }
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
    schedule: { at: [7s], while: committing }
  - kind: bookie_restart
    schedule: { at: [3s] }
";

    fn scenario() -> Scenario {
        scenario::parse("plan-test.yaml", TEXT).unwrap()
    }

    #[test]
    fn same_seed_same_bytes() {
        let s = scenario();
        assert_eq!(make(&s, 42).to_json(), make(&s, 42).to_json());
    }

    #[test]
    fn different_seeds_differ() {
        let s = scenario();
        assert_ne!(make(&s, 42).to_json(), make(&s, 43).to_json());
    }

    #[test]
    fn firings_are_ordered_and_resolved() {
        let p = make(&scenario(), 7);
        // every 10s from 10s, stop 60s: 10, 20, 30, 40, 50 -> 5; random 4; at 1; at 1; after 2.
        assert_eq!(p.faults.len(), 5 + 4 + 1 + 1 + 2);
        let times: Vec<u64> = p
            .faults
            .iter()
            .filter_map(|f| match f.trigger {
                Trigger::AtMs(t) => Some(t),
                _ => None,
            })
            .collect();
        let mut sorted = times.clone();
        sorted.sort();
        assert_eq!(times, sorted);
        let commits: Vec<Trigger> = p
            .faults
            .iter()
            .map(|f| f.trigger)
            .filter(|t| matches!(t, Trigger::AfterCommits(_)))
            .collect();
        assert_eq!(
            commits,
            vec![Trigger::AfterCommits(5), Trigger::AfterCommits(10)]
        );
        for (i, f) in p.faults.iter().enumerate() {
            assert_eq!(f.id as usize, i);
            match &f.target {
                PlannedTarget::Broker { index } => assert!((1..=3).contains(index)),
                PlannedTarget::OwnerOfTopic { partition } => assert!(partition.unwrap() < 4),
                PlannedTarget::CoordinatorOwner { coordinator } => assert!(*coordinator < 2),
                PlannedTarget::Bookie { index } => assert!((1..=2).contains(index)),
                PlannedTarget::Cluster => {}
                other => panic!("{other:?}"),
            }
        }
        // Jitter keeps every firing within period +- jitter of its slot.
        let restarts: Vec<u64> = p
            .faults
            .iter()
            .filter(|f| f.fault_index == 0)
            .map(|f| match f.trigger {
                Trigger::AtMs(t) => t,
                _ => 0,
            })
            .collect();
        for (k, t) in restarts.iter().enumerate() {
            let slot = 10_000 * (k as u64 + 1);
            assert!(*t + 3000 >= slot && *t <= slot + 3000, "{t} vs {slot}");
        }
        let guarded = p.faults.iter().find(|f| f.fault_index == 3).unwrap();
        assert_eq!(guarded.guard, Some(Guard::Committing));
    }

    #[test]
    fn adding_a_fault_keeps_the_others() {
        let s = scenario();
        let more = scenario::parse(
            "more.yaml",
            &format!("{TEXT}  - kind: pause\n    duration: 1s\n    schedule: {{ random: {{ count: 3, within: [1s, 9s] }} }}\n"),
        )
        .unwrap();
        let a = make(&s, 9);
        let b = make(&more, 9);
        let strip = |p: &Plan| -> Vec<(String, Trigger, PlannedTarget)> {
            p.faults
                .iter()
                .filter(|f| f.fault_index < 5)
                .map(|f| (f.name.clone(), f.trigger, f.target.clone()))
                .collect()
        };
        assert_eq!(strip(&a), strip(&b));
    }

    #[test]
    fn plan_json_round_trips() {
        for seed in [1, 7, 42] {
            let p = make(&scenario(), seed);
            let back: Plan = serde_json::from_str(&p.to_json()).unwrap();
            assert_eq!(back, p);
            assert_eq!(back.to_json(), p.to_json());
        }
    }

    #[test]
    fn reply_loss_is_planned_with_its_draws() {
        let text = TEXT.replace(
            "faults:\n",
            "faults:\n  - kind: reply_loss\n    reply: end_txn\n    probability: 0.5\n    duration: 20s\n    schedule: { every: 30s, stop: 100s }\n  - kind: reply_loss\n    reply: send_receipt\n    count: 2\n    schedule: { at: [1s] }\n",
        );
        let s = scenario::parse("r.yaml", &text).unwrap();
        let p = make(&s, 5);
        let loss: Vec<&PlannedFault> = p
            .faults
            .iter()
            .filter(|f| matches!(f.kind, FaultKind::ReplyLoss { .. }))
            .collect();
        assert_eq!(loss.len(), 3 + 1);
        let seeds: Vec<Option<u64>> = loss
            .iter()
            .filter(|f| f.fault_index == 0)
            .map(|f| f.draw_seed)
            .collect();
        assert!(seeds.iter().all(|s| s.is_some()), "{seeds:?}");
        assert_ne!(seeds[0], seeds[1]);
        let counted = loss.iter().find(|f| f.fault_index == 1).unwrap();
        assert_eq!(counted.draw_seed, None);
        assert_eq!(counted.hold_window(), None);
        assert_eq!(counted.target, PlannedTarget::Cluster);
        assert_eq!(make(&s, 5).to_json(), p.to_json());
        assert_ne!(make(&s, 6).to_json(), p.to_json());
        let json = p.to_json();
        assert!(json.contains("\"kind\": \"reply_loss\""), "{json}");
        assert!(json.contains("\"reply\": \"end_txn\""), "{json}");
        assert!(json.contains("\"probability\": 0.5"), "{json}");
        assert!(json.contains("\"duration\": 20000"), "{json}");
        assert!(json.contains("\"count\": 2"), "{json}");
        let back: Plan = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
        // The other faults are where they were.
        let others = |p: &Plan| -> Vec<(String, Trigger, PlannedTarget)> {
            p.faults
                .iter()
                .filter(|f| !matches!(f.kind, FaultKind::ReplyLoss { .. }))
                .map(|f| (f.name.clone(), f.trigger, f.target.clone()))
                .collect()
        };
        let plain = make(&scenario(), 5);
        assert_eq!(others(&plain).len(), others(&p).len());
    }

    #[test]
    fn plan_json_names_kind_and_parameters() {
        let json = make(&scenario(), 1).to_json();
        assert!(json.contains("\"kind\": \"broker_restart\""), "{json}");
        assert!(json.contains("\"mode\": \"kill\""), "{json}");
        assert!(json.contains("\"duration\": 2000"), "{json}");
        assert!(json.contains("\"after_commits\": 5"), "{json}");
    }
}
