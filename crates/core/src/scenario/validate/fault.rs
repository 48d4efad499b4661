//! Validation of one fault entry: its target (or the default of its kind), its kind's
//! settings, whether the target exists in the topology, its schedule and its name.

use std::time::Duration;

use crate::scenario::file::{Dur, FaultFile, ScheduleFile};
use crate::scenario::kinds::{Pins, ReplyKind, Topology};
use crate::scenario::locate::Seg;
use crate::scenario::model::{
    FaultKind, FaultSpec, Schedule, Target, Timing, UnloadScope, Workload,
};

use super::{err, key, Invalid};

/// What a fault entry is checked against: the topology and how many of each node it has.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub topology: Topology,
    pub brokers: u32,
    pub bookies: u32,
    pub coordinators: u32,
}

/// One entry of `faults`, checked against the topology and the workload; paths in errors are
/// relative to the entry.
pub(super) fn validate_fault(
    index: usize,
    f: &FaultFile,
    shape: Shape,
    workload: &Workload,
) -> Result<FaultSpec, Invalid> {
    let Shape {
        topology,
        brokers,
        bookies,
        coordinators,
    } = shape;
    let common = f.common();
    let kind = f.kind_name();
    let target = fault_target(f, common.target)?;
    if topology == Topology::External && matches!(f, FaultFile::ReplyLoss { .. }) {
        return err(
            &["kind"],
            "reply_loss needs a cluster the harness started (topology standalone or cluster)",
        );
    }
    let consumers = match (f, workload.transform) {
        (FaultFile::ConsumerRestart { .. }, None) => {
            return err(
                &["kind"],
                "consumer_restart goes with `kind: transform` only (it closes one of the transform's consumers)",
            )
        }
        (_, t) => t.map(|t| t.consumers).unwrap_or(0),
    };
    let fault_kind = validate_fault_kind(f, kind, target)?;
    target_exists(target, topology, brokers, bookies, consumers)?;
    let pins = validate_pins(f, target, workload.partitions, coordinators)?;
    let schedule = validate_schedule(common.schedule, workload)?;
    let name = match &common.name {
        Some(n) if !n.trim().is_empty() => n.clone(),
        Some(_) => return err(&["name"], "must not be empty"),
        None => format!("{kind}-{index}"),
    };
    Ok(FaultSpec {
        index,
        name,
        kind: fault_kind,
        target,
        pins,
        schedule,
    })
}

/// The choices written out that the plan would otherwise draw: each goes with the target or
/// setting it pins, and names something that exists.
fn validate_pins(
    f: &FaultFile,
    target: Target,
    partitions: u32,
    coordinators: u32,
) -> Result<Pins, Invalid> {
    let pins = f.pins();
    if let Some(p) = pins.partition {
        if target != Target::OwnerOfTopic {
            return err(&["partition"], "goes with target: owner-of-topic");
        }
        if partitions == 1 {
            return err(
                &["partition"],
                "the topic has one partition, so its owner is the topic's; leave partition out",
            );
        }
        if p >= partitions {
            return err(
                &["partition"],
                format!(
                    "the topic has {partitions} partitions: 0 to {}",
                    partitions - 1
                ),
            );
        }
    }
    if let Some(c) = pins.coordinator {
        if target != Target::CoordinatorOwner {
            return err(&["coordinator"], "goes with target: coordinator-owner");
        }
        if c >= coordinators {
            return err(
                &["coordinator"],
                format!(
                    "the cluster has {coordinators} coordinator(s): 0 to {}",
                    coordinators - 1
                ),
            );
        }
    }
    if pins.draw_seed.is_some() {
        if let FaultFile::ReplyLoss {
            probability: None, ..
        } = f
        {
            return err(
                &["draw_seed"],
                "goes with probability (it seeds the draws); a count draws nothing",
            );
        }
    }
    Ok(pins)
}

/// The fault's target as written, or the default of its kind.
fn fault_target(f: &FaultFile, target: &Option<String>) -> Result<Target, Invalid> {
    let default_target = match f {
        FaultFile::TopicUnload { .. } => "cluster",
        FaultFile::BookieRestart { .. } => "any-bookie",
        FaultFile::ZookeeperRestart { .. } => "zookeeper",
        FaultFile::ReplyLoss { .. } => "cluster",
        FaultFile::ConsumerRestart { .. } => "any-consumer",
        _ => "any-broker",
    };
    let target_text = target.clone().unwrap_or_else(|| default_target.to_string());
    Target::parse(&target_text).ok_or_else(|| {
        (
            vec![key("target")],
            format!("unknown target '{target_text}' (any-broker, broker-<i>, owner-of-topic, coordinator-owner, any-bookie, bookie-<i>, zookeeper, any-consumer, consumer-<i>)"),
        )
    })
}

/// The fault's kind with its settings checked, and whether it can aim at `target`.
fn validate_fault_kind(f: &FaultFile, kind: &str, target: Target) -> Result<FaultKind, Invalid> {
    let is_broker_target = matches!(
        target,
        Target::AnyBroker | Target::Broker(_) | Target::OwnerOfTopic | Target::CoordinatorOwner
    );
    let bad_target = |allowed: &str| -> Result<FaultKind, Invalid> {
        err(
            &["target"],
            format!("{kind} cannot aim at '{target}': {allowed}"),
        )
    };
    let is_consumer_target = matches!(target, Target::AnyConsumer | Target::Consumer(_));
    if is_consumer_target != matches!(f, FaultFile::ConsumerRestart { .. }) {
        return bad_target(if is_consumer_target {
            "only consumer_restart aims at a consumer"
        } else {
            "it takes any-consumer or consumer-<i>"
        });
    }
    Ok(match f {
        FaultFile::ConsumerRestart { down_for, .. } => FaultKind::ConsumerRestart {
            down_for: down_for.map(|d| d.0).unwrap_or(Duration::ZERO),
        },
        FaultFile::BrokerRestart { mode, down_for, .. } => {
            if !is_broker_target {
                return bad_target("it takes a broker target");
            }
            FaultKind::BrokerRestart {
                mode: mode.unwrap_or_default(),
                down_for: down_for.map(|d| d.0).unwrap_or(Duration::ZERO),
            }
        }
        FaultFile::TopicUnload {
            topic, namespace, ..
        } => {
            if target != Target::Cluster {
                return bad_target("an unload goes through the admin API; leave target out");
            }
            FaultKind::TopicUnload {
                scope: unload_scope(topic, namespace)?,
            }
        }
        FaultFile::PacketLoss {
            percent, duration, ..
        } => {
            if !is_broker_target
                && !matches!(
                    target,
                    Target::Bookie(_) | Target::AnyBookie | Target::Zookeeper
                )
            {
                return bad_target("it takes a container target");
            }
            if !(1..=100).contains(percent) {
                return err(&["percent"], "must be between 1 and 100");
            }
            FaultKind::PacketLoss {
                percent: *percent,
                duration: positive(duration.0, "duration")?,
            }
        }
        FaultFile::Pause { duration, .. } => {
            if target == Target::Cluster {
                return bad_target("it takes a container target");
            }
            FaultKind::Pause {
                duration: positive(duration.0, "duration")?,
            }
        }
        FaultFile::BookieRestart { mode, down_for, .. } => {
            if !matches!(target, Target::AnyBookie | Target::Bookie(_)) {
                return bad_target("it takes any-bookie or bookie-<i>");
            }
            FaultKind::BookieRestart {
                mode: mode.unwrap_or_default(),
                down_for: down_for.map(|d| d.0).unwrap_or(Duration::ZERO),
            }
        }
        FaultFile::ZookeeperRestart { mode, down_for, .. } => {
            if target != Target::Zookeeper {
                return bad_target("it takes zookeeper");
            }
            FaultKind::ZookeeperRestart {
                mode: mode.unwrap_or_default(),
                down_for: down_for.map(|d| d.0).unwrap_or(Duration::ZERO),
            }
        }
        FaultFile::ReplyLoss {
            reply,
            count,
            probability,
            duration,
            ..
        } => {
            if target != Target::Cluster {
                return bad_target(
                    "it acts on the producer's own connections (through the harness's proxy); leave target out",
                );
            }
            validate_reply_loss(*reply, *count, *probability, *duration)?
        }
    })
}

/// What a `topic_unload` unloads: a topic, a namespace, or the workload's topic.
fn unload_scope(
    topic: &Option<String>,
    namespace: &Option<String>,
) -> Result<UnloadScope, Invalid> {
    Ok(match (topic, namespace) {
        (Some(_), Some(_)) => return err(&["namespace"], "give topic or namespace, not both"),
        (Some(t), None) => {
            if !t.starts_with("persistent://") {
                return err(
                    &["topic"],
                    "must be persistent://<tenant>/<namespace>/<name>",
                );
            }
            UnloadScope::Topic(t.clone())
        }
        (None, Some(ns)) => {
            if ns.split('/').count() != 2 || ns.contains("://") {
                return err(&["namespace"], "must be <tenant>/<namespace>");
            }
            UnloadScope::Namespace(ns.clone())
        }
        (None, None) => UnloadScope::WorkloadTopic,
    })
}

/// A `reply_loss` fault: a count of replies to drop or a probability of dropping each, and
/// how long it stays armed.
fn validate_reply_loss(
    reply: ReplyKind,
    count: Option<u32>,
    probability: Option<f64>,
    duration: Option<Dur>,
) -> Result<FaultKind, Invalid> {
    match (count, probability) {
        (Some(_), Some(_)) => return err(&["probability"], "give count or probability, not both"),
        (None, None) => {
            return err(
                &["reply"],
                "needs count (replies to drop) or probability (of dropping each)",
            )
        }
        (Some(c), None) if !(1..=10_000).contains(&c) => {
            return err(&["count"], "must be between 1 and 10000")
        }
        (None, Some(p)) if !(p > 0.0 && p <= 1.0) => {
            return err(&["probability"], "must be in (0, 1]")
        }
        _ => {}
    }
    let duration = match duration {
        Some(d) => Some(positive(d.0, "duration")?),
        None => None,
    };
    Ok(FaultKind::ReplyLoss {
        reply,
        count,
        probability,
        duration,
    })
}

/// Targets must exist in the topology.
fn target_exists(
    target: Target,
    topology: Topology,
    brokers: u32,
    bookies: u32,
    consumers: u32,
) -> Result<(), Invalid> {
    match target {
        Target::Consumer(i) if i > consumers => {
            return err(&["target"], format!("consumer-{i} does not exist: the transform has {consumers} consumer(s)"))
        }
        Target::Broker(i) if i > brokers => {
            return err(&["target"], format!("broker-{i} does not exist: the cluster has {brokers} broker(s)"))
        }
        Target::Bookie(_) | Target::AnyBookie | Target::Zookeeper if topology == Topology::Standalone => {
            return err(&["target"], format!("'{target}' exists in the cluster topology only (standalone runs bookie and metadata store inside the broker)"))
        }
        Target::Bookie(i) if i > bookies => {
            return err(&["target"], format!("bookie-{i} does not exist: the cluster has {bookies} bookie(s)"))
        }
        _ => {}
    }
    Ok(())
}

/// A duration that must not be zero.
fn positive(d: Duration, field: &str) -> Result<Duration, Invalid> {
    if d.is_zero() {
        return err(&[field], "must be longer than 0s");
    }
    Ok(d)
}

/// When a fault fires: exactly one of at, every, random, after_commits, and its guard.
fn validate_schedule(s: &ScheduleFile, w: &Workload) -> Result<Schedule, Invalid> {
    let p = |f: &str| -> Vec<Seg> { vec![key("schedule"), key(f)] };
    let given = [
        s.at.is_some(),
        s.every.is_some(),
        s.random.is_some(),
        s.after_commits.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if given != 1 {
        return Err((
            vec![key("schedule")],
            "give exactly one of at, every, random, after_commits".to_string(),
        ));
    }
    if s.every.is_none() && (s.jitter.is_some() || s.start.is_some() || s.stop.is_some()) {
        return Err((
            p("jitter"),
            "jitter, start and stop go with every".to_string(),
        ));
    }
    let timing = if let Some(at) = &s.at {
        if at.is_empty() {
            return Err((p("at"), "must list at least one offset".to_string()));
        }
        let mut v: Vec<Duration> = at.iter().map(|d| d.0).collect();
        v.sort();
        Timing::At(v)
    } else if let Some(every) = s.every {
        if every.0 < Duration::from_millis(100) {
            return Err((p("every"), "must be at least 100ms".to_string()));
        }
        let jitter = s.jitter.map(|d| d.0).unwrap_or(Duration::ZERO);
        if jitter >= every.0 {
            return Err((p("jitter"), "must be shorter than every".to_string()));
        }
        let start = s.start.map(|d| d.0).unwrap_or(every.0);
        let stop = s.stop.map(|d| d.0);
        if let Some(stop) = stop {
            if stop <= start {
                return Err((p("stop"), "must come after start".to_string()));
            }
        }
        if (stop.unwrap_or(w.deadline).saturating_sub(start)).as_millis() / every.0.as_millis()
            > 10_000
        {
            return Err((
                p("every"),
                "gives more than 10000 firings; set stop or a longer period".to_string(),
            ));
        }
        Timing::Every {
            period: every.0,
            jitter,
            start,
            stop,
        }
    } else if let Some(r) = &s.random {
        if r.count == 0 || r.count > 10_000 {
            return Err((
                vec![key("schedule"), key("random"), key("count")],
                "must be between 1 and 10000".to_string(),
            ));
        }
        let (from, to) = (r.within[0].0, r.within[1].0);
        if to <= from {
            return Err((
                vec![key("schedule"), key("random"), key("within")],
                "must be [from, to] with from < to".to_string(),
            ));
        }
        Timing::Random {
            count: r.count,
            from,
            to,
        }
    } else {
        let list = s.after_commits.clone().unwrap_or_default().into_vec();
        if list.is_empty() || list.contains(&0) {
            return Err((
                p("after_commits"),
                "must be one or more counts >= 1".to_string(),
            ));
        }
        let mut list = list;
        list.sort();
        Timing::AfterCommits(list)
    };
    Ok(Schedule {
        timing,
        guard: s.while_,
    })
}
