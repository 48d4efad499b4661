//! The documented process exit codes. `main` maps every outcome to exactly one of these.

/// The run passed: every number of [0, N) arrived exactly once. Also: a command that has no
/// verdict (plan, validate, cluster up, clean, ...) succeeded.
pub const PASS: i32 = 0;
/// The checker found a violation: a number missing, duplicated, or unexpected.
pub const VIOLATION: i32 = 1;
/// Bad input: a usage error, an invalid scenario file, or a run directory whose files do not
/// parse (damaged). Nothing was started.
pub const BAD_INPUT: i32 = 2;
/// Infrastructure failure: Docker unreachable, image missing, cluster never ready, port taken.
pub const INFRASTRUCTURE: i32 = 3;
/// The run could not decide: e.g. the read-back stopped short, the producer never finished, or
/// the scenario planned faults and none fired (nothing was tested under faults).
pub const INCONCLUSIVE: i32 = 4;
/// `recheck`: the run directory's stored read-back and history do not reproduce its
/// verdict.json (the differences are printed).
pub const RECHECK_DIFFERS: i32 = 5;
/// The checker caught itself: its counts do not add up (received != distinct + extra copies +
/// unexpected). No verdict is given; this is a bug in pulsar-chaos, not a finding about Pulsar.
pub const CHECKER_FAULT: i32 = 6;
/// A liveness finding and no violation: Pulsar held the read-back after every fault healed
/// (a transaction stuck COMMITTING/ABORTING, a partition unreadable), with its evidence in the
/// verdict's `stuck_reads`. Whether a remedy healed it and the safety check completed says the
/// verdict.
pub const STUCK: i32 = 7;
/// `verify` without `--history`: the topic is not exactly [0, N), and with no producer history
/// the cause cannot be known (it may be the writing application's, not Pulsar's).
pub const MISMATCH: i32 = 8;
/// `soak --fail-on-regression`: every iteration passed, but the results store names a
/// regression (a recovery time or throughput beyond the usual spread; a new finding or cause in
/// a passing run). A soak with a failing iteration exits with that iteration's code instead.
pub const REGRESSION: i32 = 9;
/// Interrupted by Ctrl-C / SIGTERM (after cleanup). 128 + SIGINT, as shells report it.
pub const INTERRUPTED: i32 = 130;

/// Every code above with its meaning in a few words, in order: the one list `--help` prints
/// (a test keeps it complete).
pub const ALL: &[(i32, &str)] = &[
    (PASS, "pass (or a command without a verdict succeeded)"),
    (
        VIOLATION,
        "violation: a number missing, duplicated or unexpected",
    ),
    (
        BAD_INPUT,
        "bad input: usage error, invalid scenario, damaged run directory",
    ),
    (
        INFRASTRUCTURE,
        "infrastructure failure: Docker, image, ports, cluster never ready",
    ),
    (INCONCLUSIVE, "inconclusive: the run could not decide"),
    (
        RECHECK_DIFFERS,
        "recheck: the stored read-back does not reproduce verdict.json",
    ),
    (
        CHECKER_FAULT,
        "checker fault: its counts do not add up (a pulsar-chaos bug)",
    ),
    (
        STUCK,
        "stuck: Pulsar held the read-back after every fault healed",
    ),
    (
        MISMATCH,
        "mismatch: `verify` without --history found the topic not exactly [0, N)",
    ),
    (
        REGRESSION,
        "regression: soak --fail-on-regression passed but the store names a regression",
    ),
    (INTERRUPTED, "interrupted (Ctrl-C / SIGTERM), after cleanup"),
];

/// The exit code of a verdict's status: the one mapping every command uses.
pub fn of_status(status: crate::checker::Status) -> i32 {
    use crate::checker::Status;
    match status {
        Status::Pass => PASS,
        Status::Violation => VIOLATION,
        Status::Inconclusive => INCONCLUSIVE,
        Status::Stuck => STUCK,
        Status::Mismatch => MISMATCH,
    }
}

/// The codes of a run's verdict, most severe first: a command that ends several runs with one
/// code (replay, soak, matrix) ends with the first of these that any run had.
pub const SEVERITY: &[i32] = &[VIOLATION, MISMATCH, STUCK, INCONCLUSIVE, PASS];

/// The one code of several runs: the most severe of their verdicts' codes ([`SEVERITY`]);
/// `errors` runs that ended without a verdict count as inconclusive, and make it an
/// infrastructure failure when no run has a verdict at all. No run at all passes.
pub fn of_runs(verdicts: impl IntoIterator<Item = i32>, errors: u64) -> i32 {
    let codes: Vec<i32> = verdicts.into_iter().collect();
    if codes.is_empty() && errors > 0 {
        return INFRASTRUCTURE;
    }
    let inconclusive = (errors > 0).then_some(INCONCLUSIVE);
    SEVERITY
        .iter()
        .copied()
        .find(|s| codes.contains(s) || inconclusive == Some(*s))
        .unwrap_or(PASS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_runs_end_with_the_most_severe_code() {
        assert_eq!(of_runs([], 0), PASS);
        assert_eq!(of_runs([PASS, PASS], 0), PASS);
        assert_eq!(of_runs([PASS, INCONCLUSIVE, STUCK], 0), STUCK);
        assert_eq!(of_runs([STUCK, MISMATCH], 0), MISMATCH);
        assert_eq!(of_runs([MISMATCH, VIOLATION, PASS], 0), VIOLATION);
        // A run without a verdict is inconclusive beside others, infrastructure alone.
        assert_eq!(of_runs([PASS], 1), INCONCLUSIVE);
        assert_eq!(of_runs([STUCK], 2), STUCK);
        assert_eq!(of_runs([], 3), INFRASTRUCTURE);
    }

    /// Every `pub const NAME: i32` of this file, read from its source: a code added without
    /// an entry in `ALL` fails here (and so cannot be missing from `--help`).
    #[test]
    fn all_lists_every_code_of_this_file_once() {
        let declared: Vec<i32> = include_str!("exit.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("pub const "))
            .filter_map(|l| l.split_once(": i32 = "))
            .map(|(_, v)| v.trim_end_matches(';').parse().unwrap())
            .collect();
        assert!(declared.len() >= 10, "{declared:?}");
        let listed: Vec<i32> = ALL.iter().map(|(c, _)| *c).collect();
        assert_eq!(listed, declared);
    }
}
