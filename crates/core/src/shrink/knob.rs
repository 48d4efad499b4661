//! The numbers the search lowers after it has dropped what it could: each firing's time (or
//! commit count), each hold, `messages`, `concurrency`, `commits_in_flight`; for each, how to read it, change it,
//! the floor it stops at and the words that say what a candidate changed.

use std::fmt;
use std::time::Duration;

use crate::scenario::{Dur, FaultFile, OneOrMany, Scenario, ScenarioFile, Timing};
use serde::{Deserialize, Serialize};

/// The earliest a firing is moved to when no firing comes before it: the producer has begun.
pub const AT_FLOOR: Duration = Duration::from_secs(2);
/// The shortest hold (`down_for`, `duration`) a candidate gets.
pub const HOLD_FLOOR: Duration = Duration::from_secs(1);
/// The fewest numbers a candidate sends (more when the transactions or the faults need more).
pub const MESSAGES_FLOOR: u64 = 1000;

/// The step of the search a candidate comes from, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Whole fault entries dropped (delta debugging over the list).
    DropFaults,
    /// A firing moved earlier (toward the one before it).
    Earlier,
    /// A `down_for` or `duration` shortened.
    ShorterHolds,
    FewerMessages,
    LowerConcurrency,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::DropFaults => "drop-faults",
            Phase::Earlier => "earlier",
            Phase::ShorterHolds => "shorter-holds",
            Phase::FewerMessages => "fewer-messages",
            Phase::LowerConcurrency => "lower-concurrency",
        })
    }
}

/// One number of the scenario the search lowers; `usize`: the fault entry's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Knob {
    /// A firing's single `at` offset (ms), moved toward the firing before it.
    At(usize),
    /// A firing's single `after_commits` count, moved toward the one before it.
    Commits(usize),
    /// `down_for` or `duration` (ms).
    Hold(usize),
    Messages,
    Concurrency,
    /// `commits_in_flight` (a producer with transactions only).
    CommitsInFlight,
}

/// The knobs of a scenario, in the order the search turns them: firings earlier (first to
/// last), holds shorter, then messages and concurrency.
pub(super) fn knobs(file: &ScenarioFile) -> Vec<Knob> {
    let n = file.faults.len();
    let mut out: Vec<Knob> = (0..n)
        .filter_map(|i| {
            let f = &file.faults[i];
            at_of(f)
                .map(|_| Knob::At(i))
                .or_else(|| commits_of(f).map(|_| Knob::Commits(i)))
        })
        .collect();
    out.extend(
        (0..n)
            .filter(|i| hold(&file.faults[*i]).is_some())
            .map(Knob::Hold),
    );
    out.extend([Knob::Messages, Knob::Concurrency, Knob::CommitsInFlight]);
    out
}

impl Knob {
    pub(super) fn phase(self) -> Phase {
        match self {
            Knob::At(_) | Knob::Commits(_) => Phase::Earlier,
            Knob::Hold(_) => Phase::ShorterHolds,
            Knob::Messages => Phase::FewerMessages,
            Knob::Concurrency | Knob::CommitsInFlight => Phase::LowerConcurrency,
        }
    }

    /// The current value (`None`: the entry has no such number).
    pub(super) fn get(self, file: &ScenarioFile, s: &Scenario) -> Option<u64> {
        match self {
            Knob::At(i) => file.faults.get(i).and_then(at_of),
            Knob::Commits(i) => file.faults.get(i).and_then(commits_of),
            Knob::Hold(i) => file.faults.get(i).and_then(hold).map(|(_, d)| ms(d.0)),
            Knob::Messages => Some(file.workload.messages),
            Knob::Concurrency => Some(u64::from(s.workload.concurrency)),
            Knob::CommitsInFlight => (s.workload.transactions && s.workload.transform.is_none())
                .then_some(u64::from(s.workload.commits_in_flight)),
        }
    }

    /// The file with this number set to `v`.
    pub(super) fn set(self, file: &ScenarioFile, v: u64) -> ScenarioFile {
        let mut out = file.clone();
        let dur = Dur(Duration::from_millis(v));
        match self {
            Knob::At(i) => out.faults[i].schedule_mut().at = Some(vec![dur]),
            Knob::Commits(i) => {
                out.faults[i].schedule_mut().after_commits = Some(OneOrMany::One(v))
            }
            Knob::Hold(i) => set_hold(&mut out.faults[i], dur),
            Knob::Messages => out.workload.messages = v,
            Knob::Concurrency => {
                out.workload.concurrency = Some(u32::try_from(v).unwrap_or(u32::MAX))
            }
            Knob::CommitsInFlight => {
                out.workload.commits_in_flight = Some(u32::try_from(v).unwrap_or(u32::MAX))
            }
        }
        out
    }

    /// Where lowering stops; the smallest step worth a run, which is also the grain of the
    /// values tried (whole seconds, whole transactions).
    pub(super) fn floor_and_step(self, file: &ScenarioFile, s: &Scenario) -> (u64, u64) {
        let second = ms(Duration::from_secs(1));
        match self {
            Knob::At(i) => (previous(file, i, at_of).unwrap_or(ms(AT_FLOOR)), second),
            Knob::Commits(i) => (previous(file, i, commits_of).unwrap_or(1), 1),
            Knob::Hold(_) => (ms(HOLD_FLOOR), second),
            Knob::Messages => (messages_floor(s), u64::from(s.workload.txn_size)),
            Knob::Concurrency | Knob::CommitsInFlight => (1, 1),
        }
    }

    /// "fault 2 of 3 (kill-broker#1) earlier: at 45s -> 23s 500ms", "messages 300000 -> 150500".
    pub(super) fn describe(self, file: &ScenarioFile, from: u64, to: u64) -> String {
        let n = file.faults.len();
        let entry = |i: usize| format!("fault {} of {n} ({})", i + 1, entry_name(file, i));
        let d = |v: u64| humantime::format_duration(Duration::from_millis(v)).to_string();
        match self {
            Knob::At(i) => format!("{} earlier: at {} -> {}", entry(i), d(from), d(to)),
            Knob::Commits(i) => format!("{} earlier: after_commits {from} -> {to}", entry(i)),
            Knob::Hold(i) => {
                let key = hold(&file.faults[i]).map_or("hold", |(k, _)| k);
                format!("{} shorter: {key} {} -> {}", entry(i), d(from), d(to))
            }
            Knob::Messages => format!("messages {from} -> {to}"),
            Knob::Concurrency => format!("concurrency {from} -> {to}"),
            Knob::CommitsInFlight => format!("commits_in_flight {from} -> {to}"),
        }
    }
}

/// The entry's name as written, else its kind.
pub(super) fn entry_name(file: &ScenarioFile, i: usize) -> String {
    let f = &file.faults[i];
    f.common()
        .name
        .clone()
        .unwrap_or_else(|| format!("{}-{i}", f.kind_name()))
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A single `at` offset (ms).
fn at_of(f: &FaultFile) -> Option<u64> {
    match f.common().schedule.at.as_deref() {
        Some([d]) => Some(ms(d.0)),
        _ => None,
    }
}

/// A single `after_commits` count.
fn commits_of(f: &FaultFile) -> Option<u64> {
    match &f.common().schedule.after_commits {
        Some(OneOrMany::One(n)) => Some(*n),
        Some(OneOrMany::Many(v)) if v.len() == 1 => Some(v[0]),
        _ => None,
    }
}

/// The latest value of the entries before `i` that is not after entry i's own.
fn previous(file: &ScenarioFile, i: usize, get: fn(&FaultFile) -> Option<u64>) -> Option<u64> {
    let own = get(&file.faults[i])?;
    file.faults[..i]
        .iter()
        .filter_map(get)
        .filter(|v| *v <= own)
        .max()
}

/// The entry's hold and its key: `down_for` of a restart that names one, `duration` of a
/// packet loss, a pause or a reply loss that names one.
fn hold(f: &FaultFile) -> Option<(&'static str, Dur)> {
    match f {
        FaultFile::BrokerRestart { down_for, .. }
        | FaultFile::BookieRestart { down_for, .. }
        | FaultFile::ZookeeperRestart { down_for, .. }
        | FaultFile::ConsumerRestart { down_for, .. } => down_for.map(|d| ("down_for", d)),
        FaultFile::PacketLoss { duration, .. } | FaultFile::Pause { duration, .. } => {
            Some(("duration", *duration))
        }
        FaultFile::ReplyLoss { duration, .. } => duration.map(|d| ("duration", d)),
        FaultFile::TopicUnload { .. } => None,
    }
}

fn set_hold(f: &mut FaultFile, d: Dur) {
    match f {
        FaultFile::BrokerRestart { down_for, .. }
        | FaultFile::BookieRestart { down_for, .. }
        | FaultFile::ZookeeperRestart { down_for, .. }
        | FaultFile::ConsumerRestart { down_for, .. } => *down_for = Some(d),
        FaultFile::PacketLoss { duration, .. } | FaultFile::Pause { duration, .. } => *duration = d,
        FaultFile::ReplyLoss { duration, .. } => *duration = Some(d),
        FaultFile::TopicUnload { .. } => {}
    }
}

/// The fewest messages a candidate keeps: [`MESSAGES_FLOOR`], one round of transactions, the
/// transactions the latest `after_commits` firing waits for and as many again after it, the
/// numbers `sabotage` names, and under a `rate`, enough to still be producing when the last
/// fault heals.
///
/// The transactions after a count-triggered firing are what it acts on (a dropped commit
/// reply needs a commit after it): the trigger polls the count (every 20 ms), and the commits
/// already under way by then pass before the fault acts, so with one transaction left the
/// minimal case could fail only now and then.
fn messages_floor(s: &Scenario) -> u64 {
    let w = &s.workload;
    let txn = u64::from(w.txn_size);
    let mut floor = MESSAGES_FLOOR.max(txn * u64::from(w.concurrency));
    for f in &s.faults {
        let hold = ms(f.kind.hold());
        match &f.schedule.timing {
            Timing::AfterCommits(v) => {
                let last = v.iter().max().copied().unwrap_or(0);
                floor = floor.max((2 * last + 1) * txn);
            }
            Timing::At(v) => {
                if let (Some(rate), Some(last)) = (w.rate, v.iter().max()) {
                    floor = floor.max(u64::from(rate) * (ms(*last) + hold) / 1000);
                }
            }
            Timing::Every { .. } | Timing::Random { .. } => {}
        }
    }
    let sabotaged = s.sabotage.skip.iter().chain(&s.sabotage.duplicate).max();
    floor.max(sabotaged.map_or(0, |n| n + 1))
}
