//! Pinning: a scenario and the plan its seed made -> a scenario whose every firing is an entry
//! of its own, at its time (or commit count), on its drawn target, with its guard and its kind's
//! settings. Its plan, with the same seed, has the same firings; and it keeps them whichever
//! entries a candidate drops, because nothing is left to draw.

use std::time::Duration;

use crate::plan::{Plan, PlannedFault, PlannedTarget, Trigger};
use crate::scenario::{
    Dur, FaultFile, FaultKind, OneOrMany, ScenarioFile, ScheduleFile, UnloadScope,
};

/// The scenario with one entry per firing of `plan`, in the plan's order, and the plan's seed.
pub fn pin(file: &ScenarioFile, plan: &Plan) -> ScenarioFile {
    let mut out = file.clone();
    out.seed = Some(plan.seed);
    out.faults = plan.faults.iter().map(entry).collect();
    out
}

/// One firing as a fault entry, named after the firing (`kill-broker#2`).
fn entry(f: &PlannedFault) -> FaultFile {
    let schedule = ScheduleFile {
        at: match f.trigger {
            Trigger::AtMs(ms) => Some(vec![Dur(Duration::from_millis(ms))]),
            Trigger::AfterCommits(_) => None,
        },
        after_commits: match f.trigger {
            Trigger::AfterCommits(n) => Some(OneOrMany::One(n)),
            Trigger::AtMs(_) => None,
        },
        while_: f.guard,
        ..ScheduleFile::default()
    };
    let name = Some(f.name.clone());
    let Pinned {
        target,
        partition,
        coordinator,
    } = pinned_target(&f.target);
    let dur = |d: Duration| Dur(d);
    match &f.kind {
        FaultKind::BrokerRestart { mode, down_for } => FaultFile::BrokerRestart {
            name,
            mode: Some(*mode),
            down_for: Some(dur(*down_for)),
            target,
            partition,
            coordinator,
            schedule,
        },
        FaultKind::TopicUnload { scope } => {
            let (topic, namespace) = match scope {
                UnloadScope::WorkloadTopic => (None, None),
                UnloadScope::Topic(t) => (Some(t.clone()), None),
                UnloadScope::Namespace(n) => (None, Some(n.clone())),
            };
            FaultFile::TopicUnload {
                name,
                topic,
                namespace,
                target,
                schedule,
            }
        }
        FaultKind::PacketLoss { percent, duration } => FaultFile::PacketLoss {
            name,
            percent: *percent,
            duration: dur(*duration),
            target,
            partition,
            coordinator,
            schedule,
        },
        FaultKind::Pause { duration } => FaultFile::Pause {
            name,
            duration: dur(*duration),
            target,
            partition,
            coordinator,
            schedule,
        },
        FaultKind::BookieRestart { mode, down_for } => FaultFile::BookieRestart {
            name,
            mode: Some(*mode),
            down_for: Some(dur(*down_for)),
            target,
            schedule,
        },
        FaultKind::ZookeeperRestart { mode, down_for } => FaultFile::ZookeeperRestart {
            name,
            mode: Some(*mode),
            down_for: Some(dur(*down_for)),
            target,
            schedule,
        },
        FaultKind::ReplyLoss {
            reply,
            count,
            probability,
            duration,
        } => FaultFile::ReplyLoss {
            name,
            reply: *reply,
            count: *count,
            probability: *probability,
            duration: duration.map(dur),
            target,
            draw_seed: f.draw_seed,
            schedule,
        },
        FaultKind::ConsumerRestart { down_for } => FaultFile::ConsumerRestart {
            name,
            down_for: Some(dur(*down_for)),
            target,
            schedule,
        },
    }
}

/// The keys that name a planned target: `target`, and the partition or coordinator drawn.
struct Pinned {
    target: Option<String>,
    partition: Option<u32>,
    coordinator: Option<u32>,
}

fn pinned_target(t: &PlannedTarget) -> Pinned {
    let only = |s: String| Pinned {
        target: Some(s),
        partition: None,
        coordinator: None,
    };
    match t {
        PlannedTarget::Broker { index } => only(format!("broker-{index}")),
        PlannedTarget::Bookie { index } => only(format!("bookie-{index}")),
        PlannedTarget::Zookeeper => only("zookeeper".into()),
        PlannedTarget::Consumer { index } => only(format!("consumer-{index}")),
        PlannedTarget::OwnerOfTopic { partition } => Pinned {
            partition: *partition,
            ..only("owner-of-topic".into())
        },
        PlannedTarget::CoordinatorOwner { coordinator } => Pinned {
            coordinator: Some(*coordinator),
            ..only("coordinator-owner".into())
        },
        // The admin API (unloads) and the producer's proxy (reply loss): their kinds' default.
        PlannedTarget::Cluster => Pinned {
            target: None,
            partition: None,
            coordinator: None,
        },
    }
}

#[cfg(test)]
mod tests;
