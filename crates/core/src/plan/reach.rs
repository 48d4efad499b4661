//! Whether a scenario's faults can come after its workload has finished ([`reach_warnings`]):
//! a fault due after the producer finished is skipped, and a run whose planned faults all
//! were skipped tested nothing under faults (the checker grades it inconclusive). `validate`
//! and `plan` print these warnings; the exit code does not change.
//!
//! The workload's length is known only from `rate:` (messages per second at most, so the
//! producer runs at least `messages / rate`); without it the producer goes as fast as it can
//! and a schedule in seconds may come after its end. A time trigger counts at the latest
//! moment it can fire (`every:` with its jitter, the end of `random:`'s window). An
//! `after_commits:` trigger is checked against the workload's number of transactions
//! (`messages / txn_size`), whatever the rate. A `while:` guard does not move a fault: it
//! waits for a commit in flight once the fault is due, which needs the producer running then.

use crate::scenario::{FaultSpec, Scenario, Timing};

/// The warnings, one sentence each (empty: the schedule fits the workload as far as the
/// scenario can tell).
pub fn reach_warnings(s: &Scenario) -> Vec<String> {
    let w = &s.workload;
    let deadline_ms = w.deadline.as_millis() as u64;
    let mut out = Vec::new();
    let last = s
        .faults
        .iter()
        .filter_map(|f| latest_ms(&f.schedule.timing, deadline_ms).map(|t| (t, f)))
        .max_by_key(|(t, f)| (*t, std::cmp::Reverse(f.index)));
    if let Some((last_ms, f)) = last {
        out.extend(time_warning(s, last_ms, f));
    }
    let txns = w.messages.div_ceil(u64::from(w.txn_size.max(1)));
    for f in &s.faults {
        if let Timing::AfterCommits(ns) = &f.schedule.timing {
            if let Some(n) = ns.iter().copied().filter(|n| *n >= txns).max() {
                out.push(format!(
                    "fault `{}` fires after {n} commits, but the workload has about {txns} transaction(s) ({} messages / txn_size {}): it fires only as the last one commits, if at all; lower the count or raise `messages:`",
                    f.name, w.messages, w.txn_size
                ));
            }
        }
    }
    out
}

/// The warning about the latest time-triggered fault, if the workload may end before it.
fn time_warning(s: &Scenario, last_ms: u64, f: &FaultSpec) -> Option<String> {
    let w = &s.workload;
    let due = format!("faults are due up to {} (`{}`)", secs(last_ms), f.name);
    let skipped = "a fault due after the workload has finished is skipped, and a run that fired none of its faults is INCONCLUSIVE";
    // What the workload should at least last: the last fault, its hold, and a margin.
    let hold_ms = f.kind.hold().as_millis() as u64;
    let wanted_ms = (last_ms + hold_ms) * 3 / 2;
    if w.transform.is_some() {
        return Some(format!(
            "a transform consumes as fast as it goes, so how long it runs cannot be known from the scenario, and {due}: {skipped}; give it enough `messages:` to outlast {} or use `after_commits:` triggers (docs/scenarios.md, \"Sizing a workload for its faults\")",
            secs(last_ms + hold_ms)
        ));
    }
    let suggested_rate = (w.messages * 1000 / wanted_ms.max(1)).max(1);
    match w.rate {
        None => Some(format!(
            "the workload has no `rate:`, so how long the producer runs cannot be known from the scenario (it may finish within seconds), and {due}: {skipped}; add `rate:` so that messages / rate exceeds the last fault by a margin, e.g. `rate: {suggested_rate}` ({} messages over about {}) (docs/scenarios.md, \"Sizing a workload for its faults\")",
            w.messages,
            secs(w.messages * 1000 / suggested_rate)
        )),
        Some(rate) => {
            let length_ms = w.messages * 1000 / u64::from(rate.max(1));
            (length_ms < last_ms).then(|| {
                let messages = u64::from(rate) * wanted_ms / 1000;
                format!(
                    "messages / rate = {} / {rate} = {}, shorter than the schedule: {due}: {skipped}; lower `rate:` to about {suggested_rate} or raise `messages:` to about {messages} (docs/scenarios.md, \"Sizing a workload for its faults\")",
                    w.messages,
                    secs(length_ms)
                )
            })
        }
    }
}

/// The latest moment a time-triggered schedule can fire (None: progress-triggered, or no
/// firing at all), in ms from the run's start; as `plan::triggers` draws them.
fn latest_ms(timing: &Timing, deadline_ms: u64) -> Option<u64> {
    match timing {
        Timing::At(offsets) => offsets.iter().map(|d| d.as_millis() as u64).max(),
        Timing::Every {
            period,
            jitter,
            start,
            stop,
        } => {
            let (period, jitter) = (period.as_millis() as u64, jitter.as_millis() as u64);
            let start = start.as_millis() as u64;
            let stop = stop.map_or(deadline_ms, |d| d.as_millis() as u64);
            if start >= stop || period == 0 {
                return None;
            }
            let last_slot = start + (stop - 1 - start) / period * period;
            Some((last_slot + jitter).min(stop - 1))
        }
        Timing::Random { count, to, .. } => (*count > 0).then_some(to.as_millis() as u64),
        Timing::AfterCommits(_) => None,
    }
}

/// `30s`, `1m 5.5s`: a time as a scenario writes it, to a tenth of a second.
fn secs(ms: u64) -> String {
    let tenths = (ms + 50) / 100;
    let (m, t) = (tenths / 600, tenths % 600);
    let s = if t % 10 == 0 {
        format!("{}s", t / 10)
    } else {
        format!("{}.{}s", t / 10, t % 10)
    };
    match (m, t) {
        (0, _) => s,
        (m, 0) => format!("{m}m"),
        (m, _) => format!("{m}m {s}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario;

    fn parse(workload: &str, faults: &str) -> Scenario {
        let text = format!(
            "name: reach\ncluster: {{ topology: standalone }}\nworkload:\n  topic: persistent://public/default/t\n{workload}faults:\n{faults}"
        );
        scenario::parse("reach.yaml", &text).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The issue's scenario: 50,000 numbers, no rate, packet loss at 10 s and 30 s, an unload
    /// at 20 s.
    const ISSUE_FAULTS: &str = "  - kind: packet_loss\n    name: loss\n    percent: 30\n    duration: 5s\n    target: coordinator-owner\n    schedule: { at: [10s, 30s] }\n  - kind: topic_unload\n    name: unload\n    namespace: public/default\n    schedule: { at: [20s] }\n";

    #[test]
    fn no_rate_warns_and_suggests_one() {
        let s = parse("  messages: 50000\n", ISSUE_FAULTS);
        let w = reach_warnings(&s);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("the workload has no `rate:`"), "{}", w[0]);
        assert!(
            w[0].contains("faults are due up to 30s (`loss`)"),
            "{}",
            w[0]
        );
        // (30 s + 5 s hold) x 1.5 = 52.5 s: 50,000 / 52.5 s.
        assert!(w[0].contains("`rate: 952`"), "{}", w[0]);
        assert!(w[0].contains("over about 52.5s"), "{}", w[0]);
    }

    #[test]
    fn a_rate_too_high_for_the_schedule_warns() {
        // 50,000 / 2,000 = 25 s < 30 s.
        let s = parse("  messages: 50000\n  rate: 2000\n", ISSUE_FAULTS);
        let w = reach_warnings(&s);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("messages / rate = 50000 / 2000 = 25s, shorter than the schedule"),
            "{}",
            w[0]
        );
        assert!(
            w[0].contains("raise `messages:` to about 105000"),
            "{}",
            w[0]
        );
    }

    #[test]
    fn a_workload_that_outlasts_its_faults_does_not_warn() {
        // 50,000 / 1,000 = 50 s > 30 s.
        let s = parse("  messages: 50000\n  rate: 1000\n", ISSUE_FAULTS);
        assert_eq!(reach_warnings(&s), Vec::<String>::new());
        // No faults: nothing to reach.
        let s = parse("  messages: 50000\n", "  []\n");
        assert_eq!(reach_warnings(&s), Vec::<String>::new());
    }

    #[test]
    fn every_counts_its_last_slot_with_jitter_and_random_its_window_end() {
        let every = "  - kind: topic_unload\n    schedule: { every: 10s, jitter: 3s, start: 5s, stop: 40s }\n";
        // Slots 5, 15, 25, 35; the last may come at 38 s.
        assert_eq!(
            latest_ms(
                &parse("  messages: 10\n", every).faults[0].schedule.timing,
                0
            ),
            Some(38_000)
        );
        // 40,000 / 1,000 = 40 s > 38 s; at 1,100/s 36.4 s < 38 s.
        assert!(reach_warnings(&parse("  messages: 40000\n  rate: 1000\n", every)).is_empty());
        let w = reach_warnings(&parse("  messages: 40000\n  rate: 1100\n", every));
        assert_eq!(w.len(), 1, "{w:?}");
        // The jitter never goes past `stop`.
        let tight = "  - kind: topic_unload\n    schedule: { every: 10s, jitter: 3s, start: 5s, stop: 36s }\n";
        assert_eq!(
            latest_ms(
                &parse("  messages: 10\n", tight).faults[0].schedule.timing,
                0
            ),
            Some(35_999)
        );
        // Without `stop`, until the deadline.
        let open = "  - kind: topic_unload\n    schedule: { every: 20s }\n";
        let s = parse("  messages: 10\n  deadline: 2m\n", open);
        assert_eq!(
            latest_ms(&s.faults[0].schedule.timing, 120_000),
            Some(100_000)
        );
        let random =
            "  - kind: topic_unload\n    schedule: { random: { count: 2, within: [5s, 50s] } }\n";
        let w = reach_warnings(&parse("  messages: 40000\n  rate: 1000\n", random));
        assert!(w[0].contains("due up to 50s"), "{w:?}");
    }

    #[test]
    fn after_commits_is_checked_against_the_number_of_transactions() {
        let f = "  - kind: topic_unload\n    name: u\n    schedule: { after_commits: [10, 60] }\n";
        // 5,000 / 100 = 50 transactions: 60 can never fire; 10 can. No time trigger: no
        // warning about `rate:`.
        let w = reach_warnings(&parse("  messages: 5000\n  txn_size: 100\n", f));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with(
                "fault `u` fires after 60 commits, but the workload has about 50 transaction(s)"
            ),
            "{}",
            w[0]
        );
        let ok = "  - kind: topic_unload\n    schedule: { after_commits: [10] }\n";
        assert!(reach_warnings(&parse("  messages: 5000\n  txn_size: 100\n", ok)).is_empty());
    }

    #[test]
    fn a_transform_with_a_time_schedule_warns_without_suggesting_rate() {
        let w = "  kind: transform\n  messages: 2000\n  txn_size: 10\n";
        let f = "  - kind: consumer_restart\n    name: restart\n    schedule: { at: [20s] }\n";
        let out = reach_warnings(&parse(w, f));
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(
            out[0].starts_with("a transform consumes as fast as it goes"),
            "{}",
            out[0]
        );
        assert!(!out[0].contains("rate:"), "{}", out[0]);
    }

    #[test]
    fn times_read_as_a_scenario_writes_them() {
        assert_eq!(secs(30_000), "30s");
        assert_eq!(secs(52_500), "52.5s");
        assert_eq!(secs(65_500), "1m 5.5s");
        assert_eq!(secs(39_999), "40s");
        assert_eq!(secs(120_000), "2m");
    }
}
