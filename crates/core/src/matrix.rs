//! The version matrix: one scenario with the same seeds on several Pulsar versions (and,
//! with `--clients`, through several clients), K runs each, summed per version and client and
//! compared with what the scenario expects of the version (`expect:`). Pure:
//! the runs come in as records, the table and `matrix.json` go out; `commands::matrix` runs
//! the clusters and `report::matrix` draws `matrix.html`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::checker::{Status, Verdict};
use crate::exit;
use crate::scenario::Expected;

/// How one run ended, as the matrix counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    Violation,
    Inconclusive,
    /// Inconclusive because the producer stopped making progress with no fault active.
    Stalled,
    /// A liveness finding with Pulsar's evidence (the read-back held after every fault
    /// healed), no violation.
    Stuck,
    /// The run could not be carried out (cluster never ready, image missing, ...).
    Error,
}

impl Outcome {
    /// The exit code of a run with this outcome; none for a run without a verdict.
    pub fn code(self) -> Option<i32> {
        match self {
            Outcome::Pass => Some(exit::PASS),
            Outcome::Violation => Some(exit::VIOLATION),
            Outcome::Inconclusive | Outcome::Stalled => Some(exit::INCONCLUSIVE),
            Outcome::Stuck => Some(exit::STUCK),
            Outcome::Error => None,
        }
    }

    pub fn of(v: &Verdict) -> Outcome {
        match v.status {
            Status::Pass => Outcome::Pass,
            // A mismatch comes only from `verify` without a history, never from a run.
            Status::Violation | Status::Mismatch => Outcome::Violation,
            Status::Inconclusive if v.stall.is_some() => Outcome::Stalled,
            Status::Inconclusive => Outcome::Inconclusive,
            Status::Stuck => Outcome::Stuck,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Violation => "violation",
            Outcome::Inconclusive => "inconclusive",
            Outcome::Stalled => "stalled",
            Outcome::Stuck => "stuck",
            Outcome::Error => "error",
        }
    }

    /// Whether a scenario's expectation allows this outcome. An error never meets one.
    pub fn meets(self, expected: &[Expected]) -> bool {
        expected.iter().any(|e| {
            matches!(
                (e, self),
                (Expected::Pass, Outcome::Pass)
                    | (Expected::Violation, Outcome::Violation)
                    | (Expected::Inconclusive, Outcome::Inconclusive)
                    | (Expected::Stalled, Outcome::Stalled)
                    | (Expected::Stuck, Outcome::Stuck)
            )
        })
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One run of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub version: String,
    /// The client chosen for the run (`--clients`; None: the scenario's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// 1..=K within its version.
    pub index: u32,
    pub seed: u64,
    pub outcome: Outcome,
    /// The verdict's summary (or the error).
    pub summary: String,
    pub seconds: f64,
    /// The run directory, relative to the matrix directory (None: the run never got one).
    pub run_dir: Option<String>,
    pub reproduce: String,
    pub ambiguous: u64,
    pub duplicate_copies: u64,
    pub missing: u64,
    /// Fault kind -> recovery times (ms, heal to the first commit after it) of its faults.
    pub recovery_ms: BTreeMap<String, Vec<u64>>,
    /// Messages committed per second by the producer.
    pub throughput: Option<f64>,
    /// The known bug a stall's or a stuck read's evidence matched, as the verdict names it.
    pub likely_cause: Option<String>,
    /// Whether the outcome is one the scenario expects on this version (None: no expectation).
    pub as_expected: Option<bool>,
    /// How many of the planned faults fired (None: not known, e.g. the run could not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<crate::checker::FaultsSummary>,
}

impl RunRecord {
    /// The record of a run that ended with a verdict.
    pub fn from_verdict(
        at: RunAt,
        v: &Verdict,
        throughput: Option<f64>,
        expected: Option<&[Expected]>,
    ) -> RunRecord {
        let mut recovery_ms: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for f in &v.faults {
            if let Some(r) = f.recovery_ms {
                recovery_ms.entry(f.kind.clone()).or_default().push(r);
            }
        }
        let outcome = Outcome::of(v);
        RunRecord {
            version: at.version,
            client: at.client,
            index: at.index,
            seed: at.seed,
            outcome,
            summary: v.summary.clone(),
            seconds: at.seconds,
            run_dir: at.run_dir,
            reproduce: at.reproduce,
            ambiguous: v.producer.as_ref().map(|p| p.ambiguous).unwrap_or(0),
            duplicate_copies: v.duplicate_copies,
            missing: v.missing_total,
            recovery_ms,
            throughput,
            likely_cause: v
                .stall
                .as_ref()
                .and_then(|s| s.likely_cause.clone())
                .or_else(|| v.stuck_reads.as_ref().and_then(|s| s.likely_cause.clone())),
            as_expected: expected.map(|e| outcome.meets(e)),
            faults: v.faults_summary.clone(),
        }
    }

    /// The record of a run that could not be carried out.
    pub fn error(at: RunAt, error: String, expected: Option<&[Expected]>) -> RunRecord {
        RunRecord {
            version: at.version,
            client: at.client,
            index: at.index,
            seed: at.seed,
            outcome: Outcome::Error,
            summary: error,
            seconds: at.seconds,
            run_dir: at.run_dir,
            reproduce: at.reproduce,
            ambiguous: 0,
            duplicate_copies: 0,
            missing: 0,
            recovery_ms: BTreeMap::new(),
            throughput: None,
            likely_cause: None,
            as_expected: expected.map(|_| false),
            faults: None,
        }
    }
}

/// Which run of the matrix a record is, and where it went.
#[derive(Debug, Clone, PartialEq)]
pub struct RunAt {
    pub version: String,
    /// The client chosen for the run (None: the scenario's own).
    pub client: Option<String>,
    pub index: u32,
    pub seed: u64,
    pub seconds: f64,
    pub run_dir: Option<String>,
    pub reproduce: String,
}

/// Median and maximum of some durations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub n: usize,
    pub median_ms: u64,
    pub max_ms: u64,
}

impl Spread {
    /// `7.3s / 7.7s (5)`: median / max (how many).
    pub fn text(&self) -> String {
        format!(
            "{:.1}s / {:.1}s ({})",
            self.median_ms as f64 / 1000.0,
            self.max_ms as f64 / 1000.0,
            self.n
        )
    }

    pub fn of(xs: &[u64]) -> Option<Spread> {
        let mut v = xs.to_vec();
        v.sort_unstable();
        let n = v.len();
        (n > 0).then(|| Spread {
            n,
            // The lower median: a value that occurred.
            median_ms: v[(n - 1) / 2],
            max_ms: v[n - 1],
        })
    }
}

/// One line of the matrix: a version, or a version through one client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionRow {
    pub version: String,
    /// The client of the line (`--clients`; None: the scenario's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    pub runs: u64,
    pub pass: u64,
    pub violation: u64,
    pub inconclusive: u64,
    pub stalled: u64,
    #[serde(default)]
    pub stuck: u64,
    pub error: u64,
    pub ambiguous: u64,
    pub duplicate_copies: u64,
    /// Numbers missing in the runs that ended in a violation (a stalled or otherwise
    /// inconclusive run's unsent numbers are not a loss).
    pub missing: u64,
    /// Fault kind -> recovery time over every fault of that kind in the version's runs.
    pub recovery: BTreeMap<String, Spread>,
    /// The median of the runs' producer throughput (messages/s).
    pub throughput_median: Option<f64>,
    /// The outcomes the scenario expects on this version (empty: none named).
    pub expected: Vec<Expected>,
    /// Runs whose outcome the expectation allows (None: no expectation).
    pub as_expected: Option<u64>,
    /// Known causes the stalls' evidence matched (by the upstream issue they name), with how
    /// many runs named each.
    pub likely_causes: BTreeMap<String, u64>,
    /// Planned fault firings over the version's runs, and how many of them fired.
    #[serde(default)]
    pub faults_planned: u64,
    #[serde(default)]
    pub faults_fired: u64,
}

/// `matrix.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    pub scenario: String,
    pub scenario_file: String,
    pub versions: Vec<String>,
    /// The clients of `--clients`, in the order given (empty: the scenario's own client only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<String>,
    pub times: u32,
    /// The seed of each run index (the same on every version and client).
    pub seeds: Vec<u64>,
    pub started_ms: u64,
    pub elapsed_s: f64,
    pub interrupted: bool,
    pub rows: Vec<VersionRow>,
    pub runs: Vec<RunRecord>,
}

/// The seeds of K runs: the one seed given (a scenario's or `--seed`) K times, so that the
/// matrix measures how often that schedule fails on each version; else K seeds derived from a
/// master seed.
pub fn seeds(fixed: Option<u64>, master: u64, times: u32) -> Vec<u64> {
    (1..=u64::from(times))
        .map(|i| fixed.unwrap_or_else(|| crate::seed::iteration_seed(master, i)))
        .collect()
}

impl Matrix {
    /// The client axis: each client of `--clients`, or the scenario's own (None) alone.
    pub fn client_axis(&self) -> Vec<Option<String>> {
        if self.clients.is_empty() {
            vec![None]
        } else {
            self.clients.iter().cloned().map(Some).collect()
        }
    }

    /// Whether the matrix compares clients (the table then has a client column).
    pub fn compares_clients(&self) -> bool {
        self.clients.len() > 1
    }

    /// Sum the runs per version and client, in the order they were given (each version's
    /// clients together). A version's expectation applies to each of its clients.
    pub fn summarize(&mut self, expect: &BTreeMap<String, Vec<Expected>>) {
        let axis = self.client_axis();
        let cells: Vec<(&String, &Option<String>)> = self
            .versions
            .iter()
            .flat_map(|v| axis.iter().map(move |c| (v, c)))
            .collect();
        self.rows = cells
            .into_iter()
            .map(|(version, client)| {
                let runs: Vec<&RunRecord> = self
                    .runs
                    .iter()
                    .filter(|r| &r.version == version && &r.client == client)
                    .collect();
                let count = |o: Outcome| runs.iter().filter(|r| r.outcome == o).count() as u64;
                let mut recovery: BTreeMap<String, Vec<u64>> = BTreeMap::new();
                for r in &runs {
                    for (k, xs) in &r.recovery_ms {
                        recovery.entry(k.clone()).or_default().extend(xs);
                    }
                }
                let mut tp: Vec<f64> = runs.iter().filter_map(|r| r.throughput).collect();
                tp.sort_by(|a, b| a.total_cmp(b));
                let mut likely_causes = BTreeMap::new();
                for r in &runs {
                    if let Some(c) = &r.likely_cause {
                        *likely_causes.entry(cause_key(c)).or_insert(0) += 1;
                    }
                }
                let expected = expect.get(version).cloned().unwrap_or_default();
                VersionRow {
                    version: version.clone(),
                    client: client.clone(),
                    runs: runs.len() as u64,
                    pass: count(Outcome::Pass),
                    violation: count(Outcome::Violation),
                    inconclusive: count(Outcome::Inconclusive),
                    stalled: count(Outcome::Stalled),
                    stuck: count(Outcome::Stuck),
                    error: count(Outcome::Error),
                    ambiguous: runs.iter().map(|r| r.ambiguous).sum(),
                    duplicate_copies: runs.iter().map(|r| r.duplicate_copies).sum(),
                    missing: runs
                        .iter()
                        .filter(|r| r.outcome == Outcome::Violation)
                        .map(|r| r.missing)
                        .sum(),
                    recovery: recovery
                        .into_iter()
                        .filter_map(|(k, xs)| Spread::of(&xs).map(|s| (k, s)))
                        .collect(),
                    throughput_median: (!tp.is_empty()).then(|| tp[(tp.len() - 1) / 2]),
                    as_expected: (!expected.is_empty())
                        .then(|| runs.iter().filter(|r| r.outcome.meets(&expected)).count() as u64),
                    expected,
                    likely_causes,
                    faults_planned: runs
                        .iter()
                        .filter_map(|r| r.faults.as_ref())
                        .map(|f| f.planned)
                        .sum(),
                    faults_fired: runs
                        .iter()
                        .filter_map(|r| r.faults.as_ref())
                        .map(|f| f.fired)
                        .sum(),
                }
            })
            .collect();
    }

    /// The exit code: the worst outcome of any run (violation, then stuck, then inconclusive,
    /// stalled or an error). Infrastructure only when no run produced a verdict at all.
    pub fn exit_code(&self) -> i32 {
        // A matrix that ran nothing could not be carried out.
        if self.runs.is_empty() {
            return exit::INFRASTRUCTURE;
        }
        let errors = self
            .runs
            .iter()
            .filter(|r| r.outcome == Outcome::Error)
            .count() as u64;
        exit::of_runs(self.runs.iter().filter_map(|r| r.outcome.code()), errors)
    }

    /// The table, for people.
    pub fn table(&self) -> String {
        let mut t = String::new();
        let by_client = self.compares_clients();
        // The client column, when the matrix compares clients.
        let client_cell = |c: &Option<String>| {
            if by_client {
                format!(" {:<6}", c.as_deref().unwrap_or("-"))
            } else {
                String::new()
            }
        };
        t.push_str(&format!(
            "matrix of {} ({}): {} run(s) per version{}, seeds {}; {:.0}s{}\n",
            self.scenario,
            self.scenario_file,
            self.times,
            match self.clients.as_slice() {
                [] => String::new(),
                [one] => format!(", client {one}"),
                many => format!(" and client ({})", many.join(", ")),
            },
            seeds_text(&self.seeds),
            self.elapsed_s,
            if self.interrupted {
                " (interrupted)"
            } else {
                ""
            }
        ));
        t.push_str(&format!(
            "  {:<9}{} {:>4} {:>5} {:>9} {:>12} {:>7} {:>5} {:>5} {:>9} {:>10} {:>8} {:>10} {:>9}  {}\n",
            "version",
            if by_client {
                format!(" {:<6}", "client")
            } else {
                String::new()
            },
            "runs",
            "pass",
            "violation",
            "inconclusive",
            "stalled",
            "stuck",
            "error",
            "ambiguous",
            "duplicates",
            "missing",
            "msg/s",
            "faults",
            "expected"
        ));
        for r in &self.rows {
            t.push_str(&format!(
                "  {:<9}{} {:>4} {:>5} {:>9} {:>12} {:>7} {:>5} {:>5} {:>9} {:>10} {:>8} {:>10} {:>9}  {}\n",
                r.version,
                client_cell(&r.client),
                r.runs,
                r.pass,
                r.violation,
                r.inconclusive,
                r.stalled,
                r.stuck,
                r.error,
                r.ambiguous,
                r.duplicate_copies,
                r.missing,
                throughput_text(r),
                faults_text(r),
                expectation_text(r)
            ));
        }
        let kinds: std::collections::BTreeSet<&String> =
            self.rows.iter().flat_map(|r| r.recovery.keys()).collect();
        if !kinds.is_empty() {
            t.push_str("  recovery after the heal (median / max, faults):\n");
            for k in kinds {
                let cells: Vec<String> = self
                    .rows
                    .iter()
                    .map(|r| match r.recovery.get(k) {
                        Some(s) => format!("{} {}", r.label(), s.text()),
                        None => format!("{} -", r.label()),
                    })
                    .collect();
                t.push_str(&format!("    {k:<16} {}\n", cells.join("   ")));
            }
        }
        for r in &self.rows {
            for (cause, n) in &r.likely_causes {
                t.push_str(&format!(
                    "  {} stalls or stuck reads, known cause in {n} run(s): {}\n",
                    r.label(),
                    cause.chars().take(160).collect::<String>()
                ));
            }
        }
        let failures: Vec<&RunRecord> = self
            .runs
            .iter()
            .filter(|r| r.outcome != Outcome::Pass)
            .collect();
        if !failures.is_empty() {
            t.push_str("runs that did not pass:\n");
            for r in failures {
                t.push_str(&format!(
                    "  {} #{} seed {}: {}{}{}: {}\n      {}\n",
                    r.label(),
                    r.index,
                    r.seed,
                    r.outcome,
                    match &r.faults {
                        Some(f) if f.planned > 0 => format!(" (faults {})", f.cell()),
                        _ => String::new(),
                    },
                    match r.as_expected {
                        Some(true) => " (as expected)",
                        Some(false) => " (NOT as expected)",
                        None => "",
                    },
                    r.summary.chars().take(160).collect::<String>(),
                    r.reproduce
                ));
            }
        }
        t
    }
}

impl RunRecord {
    /// `4.2.4`, or `4.2.4 java` for a run through a chosen client.
    pub fn label(&self) -> String {
        label(&self.version, self.client.as_deref())
    }
}

impl VersionRow {
    /// `4.2.4`, or `4.2.4 java` for a line of a chosen client.
    pub fn label(&self) -> String {
        label(&self.version, self.client.as_deref())
    }
}

/// A version, and the client when one was chosen.
pub fn label(version: &str, client: Option<&str>) -> String {
    match client {
        Some(c) => format!("{version} {c}"),
        None => version.to_string(),
    }
}

/// What a stall's likely cause is counted under: the upstream issue it names
/// (`apache/pulsar#24945`), else its text with the digits folded (node, topic and counts
/// differ from run to run).
pub fn cause_key(cause: &str) -> String {
    const REF: &str = "apache/pulsar#";
    if let Some(i) = cause.find(REF) {
        let digits: String = cause[i + REF.len()..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        if !digits.is_empty() {
            return format!("{REF}{digits}");
        }
    }
    crate::stall::shape(cause)
}

/// The median throughput as a whole number of msg/s, or `-`.
pub fn throughput_text(r: &VersionRow) -> String {
    r.throughput_median
        .map(|x| format!("{x:.0}"))
        .unwrap_or_else(|| "-".into())
}

/// `12/15`: planned faults fired over the version's runs, of those planned; `-` with none
/// planned.
pub fn faults_text(r: &VersionRow) -> String {
    if r.faults_planned == 0 {
        "-".into()
    } else {
        format!("{}/{}", r.faults_fired, r.faults_planned)
    }
}

/// `pass: 5/5`, `stalled: 3/5`, or `-` without an expectation.
pub fn expectation_text(r: &VersionRow) -> String {
    match r.as_expected {
        None => "-".into(),
        Some(n) => {
            let names: Vec<String> = r.expected.iter().map(|e| e.to_string()).collect();
            format!("{}: {n}/{}", names.join(" or "), r.runs)
        }
    }
}

fn seeds_text(seeds: &[u64]) -> String {
    match seeds.first() {
        Some(first) if seeds.iter().all(|s| s == first) => format!("{first} (each run)"),
        _ => seeds
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(","),
    }
}

#[cfg(test)]
mod tests;
