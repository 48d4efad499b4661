//! Command-line definitions and help texts. No I/O here.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Proves or disproves exactly-once delivery of Apache Pulsar's transactional producer under
/// chaos: start a real Pulsar in Docker, send the numbers 0..N in transactions while faults
/// hit the cluster on a seeded schedule, read everything back and check that exactly [0, N)
/// arrived.
#[derive(Debug, Parser)]
#[command(name = "pulsar-chaos", version, about, long_about, after_help = exit_codes_help())]
pub struct Cli {
    /// More diagnostic output on stderr (-v info, -vv debug). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scenario: cluster up, produce under faults, verify, tear down.
    Run(RunArgs),
    /// Check a scenario file without running it.
    Validate {
        /// The scenario file (YAML).
        scenario: PathBuf,
    },
    /// Print the fault plan a scenario and seed give, and start nothing.
    ///
    /// Without --seed or a scenario `seed:`, a seed is drawn and printed on standard error, as
    /// `run` does: `run` with that --seed executes the plan printed.
    Plan {
        /// The scenario file (YAML).
        scenario: PathBuf,
        /// The master seed; overrides the scenario's. Without either, one is drawn and printed
        /// (as `run` does).
        #[arg(long)]
        seed: Option<u64>,
        /// Instead of plan.json, list each firing with the command or API call it will make
        /// and the node it will touch (nodes found only at run time print as <node>; `run
        /// --dry-run` resolves them on the cluster).
        #[arg(long)]
        commands: bool,
        /// The exec adapter file (overrides the scenario's `adapter:`), with --commands.
        #[arg(long, requires = "commands")]
        adapter: Option<PathBuf>,
    },
    /// Read a topic back and check that it holds exactly the numbers [0, N).
    Verify(VerifyArgs),
    /// Run a recorded run again (same seed, same plan) K times and compare verdicts.
    Replay(ReplayArgs),
    /// Run a scenario again and again with fresh seeds until the time is up.
    Soak(SoakArgs),
    /// Run one scenario with the same seeds on several Pulsar versions, K times each, and
    /// compare: pass / violation / inconclusive / stalled counts, ambiguous commits,
    /// duplicates, recovery time per fault kind, throughput, and the scenario's `expect:`.
    /// Writes matrix.txt, matrix.json and matrix.html; exits with the worst verdict.
    Matrix(MatrixArgs),
    /// Shrink a failing run to the smallest fault schedule that still fails the same way
    /// (the same kind of violation with the same cause, or a stall or stuck read with the same
    /// likely cause), each candidate run K times on one kept cluster. Writes
    /// <RUN_DIR>/shrink/: minimal.yaml (reproduces without flags), log.jsonl, summary.json,
    /// report.html. Exits with the original's code when the minimal case still fails, 4 when
    /// the original could not be reproduced.
    Shrink(ShrinkArgs),
    /// Write report.html of a run directory again from its history.
    Report {
        /// A run directory written by `run` (or by `soak`, `matrix`, `replay`).
        run_dir: PathBuf,
    },
    /// Derive a run's verdict again, offline, from its stored read-back (readback.json) and
    /// history, and compare it with verdict.json. Exits with the verdict's code when they
    /// agree, 5 when they differ (the differences are printed).
    Recheck {
        /// A run directory written by `run`.
        run_dir: PathBuf,
        /// Print {reproduced, differences, verdict} as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The results store's runs per scenario × Pulsar version × client: pass rate, throughput
    /// and recovery time per night (UTC date), and the night each finding or known bug was
    /// first and last seen. Writes trends.html (or --out) and prints a summary, or --json.
    Trends(TrendsArgs),
    /// Start, inspect or stop a Pulsar cluster in Docker.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// Build the local Pulsar image.
    #[command(subcommand)]
    Image(ImageCommand),
    /// Remove every container, network, volume and network rule the harness left behind.
    Clean {
        /// Heal only what this exec adapter's commands left applied on a cluster the harness
        /// did not start (a crashed run's journal), without Docker.
        #[arg(long, conflicts_with = "run")]
        adapter: Option<PathBuf>,
        /// Only this run's leftovers (its id, as `cluster status` and run.json name it):
        /// other runs on the same engine, a nightly soak say, are left alone.
        #[arg(long)]
        run: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The scenario file (YAML).
    #[arg(required_unless_present = "resume")]
    pub scenario: Option<PathBuf>,
    /// The master seed; overrides the scenario's. Without either, one is drawn and printed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Parent directory of the run directory.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Leave the cluster running after the run (remove it with `cluster down`).
    #[arg(long)]
    pub keep_cluster: bool,
    #[command(flatten)]
    pub external: ExternalArgs,
    /// The Pulsar image (overrides the scenario's).
    #[arg(long)]
    pub image: Option<String>,
    #[command(flatten)]
    pub overrides: Overrides,
    /// Continue an interrupted run from its directory: settle the transactions its journal and
    /// history left in flight, then go on (a producer resends what they held; a transform's
    /// inputs come back from the subscription).
    #[arg(long, conflicts_with_all = ["scenario", "seed"])]
    pub resume: Option<PathBuf>,
    /// Stream history events as JSON lines on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write a JUnit XML report here.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Progress display: auto (a bar on a terminal, plain lines otherwise), bar, plain, none.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
    /// Resolve every fault's target on the cluster (--service-url/--admin-url) and print each
    /// command, without running any, creating a topic or producing.
    #[arg(long, conflicts_with = "resume")]
    pub dry_run: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// The Pulsar version and the client over the scenario's (`run`, `soak`, `replay`; a replay's
/// scenario is its original's).
#[derive(Debug, Args)]
pub struct Overrides {
    /// The Pulsar version to run (overrides the scenario's `cluster.pulsar_version`; the
    /// official image of that version, else the local one: `image build --pulsar-version`).
    #[arg(long)]
    pub pulsar_version: Option<String>,
    /// The client the workload runs through: own, java or go (overrides `workload.client`;
    /// docs/drivers.md).
    #[arg(long)]
    pub client: Option<String>,
    /// The Java client's version (overrides `workload.client_version`; default: the broker's).
    #[arg(long)]
    pub client_version: Option<String>,
}

/// A cluster the harness did not start (`run`, `soak`, `replay`), and the faults allowed on it.
#[derive(Debug, Args)]
pub struct ExternalArgs {
    /// Use a running cluster instead of starting one (with --admin-url).
    #[arg(long, requires = "admin_url")]
    pub service_url: Option<String>,
    /// Admin URL of the running cluster (with --service-url).
    #[arg(long, requires = "service_url")]
    pub admin_url: Option<String>,
    /// The exec adapter file that makes faults on a cluster the harness did not start
    /// (overrides the scenario's `adapter:`).
    #[arg(long)]
    pub adapter: Option<PathBuf>,
    /// Let restarts, pauses and packet loss touch a cluster the harness did not start (as
    /// `allow_destructive: true` in the scenario).
    #[arg(long)]
    pub allow_destructive: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressMode {
    Auto,
    Bar,
    Plain,
    None,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Service URL of the cluster (pulsar://host:6650).
    #[arg(long)]
    pub service_url: String,
    /// Admin URL of the cluster (http://host:8080).
    #[arg(long)]
    pub admin_url: String,
    /// The topic (persistent://tenant/ns/name); every partition is read.
    #[arg(long)]
    pub topic: String,
    /// N: the topic must hold exactly the numbers [0, N).
    #[arg(long)]
    pub count: u64,
    /// A producer history (history.jsonl) to attribute anomalies to transactions.
    #[arg(long)]
    pub history: Option<PathBuf>,
    /// Print the verdict as JSON.
    #[arg(long)]
    pub json: bool,
    /// Give up reading after this long without progress (e.g. 60s).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub idle_timeout: std::time::Duration,
    /// Only read and count the messages, check nothing (the baseline for the checker's cost).
    #[arg(long)]
    pub consume_only: bool,
    /// Before reading, wait (by condition: every partition's transaction buffer reports no
    /// open transaction) at most this long; 0s looks once without waiting. When transactions
    /// are still open, or their state is unknown, the verdict is inconclusive and says which.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub settle: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A run directory written by `run`.
    pub run_dir: PathBuf,
    /// How many replays.
    #[arg(long, default_value_t = 1)]
    pub times: u32,
    /// Where the replays' run directories go (default: beside the original).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Another Pulsar version or client than the original's (by default the original's own
    /// image and client).
    #[command(flatten)]
    pub overrides: Overrides,
    /// Progress display: auto (a bar on a terminal, plain lines otherwise), bar, plain, none.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
    /// Replay on a running cluster (another than the original's, or the one an original
    /// run started): --service-url, --admin-url, --adapter, --allow-destructive.
    #[command(flatten)]
    pub external: ExternalArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct SoakArgs {
    /// The scenario file (YAML).
    pub scenario: PathBuf,
    /// How long to soak (e.g. 8h, 20m).
    #[arg(long, value_parser = parse_duration)]
    pub duration: std::time::Duration,
    /// The master seed; each iteration's seed derives from it.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Stop at the first failing iteration.
    #[arg(long)]
    pub stop_on_failure: bool,
    /// Keep the run directories of the last K passing iterations (failing ones are all kept).
    #[arg(long, default_value_t = 3)]
    pub keep_passing: usize,
    /// Parent directory of the soak directory.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// The Pulsar image (overrides the scenario's).
    #[arg(long)]
    pub image: Option<String>,
    #[command(flatten)]
    pub overrides: Overrides,
    /// Stream history events as JSON lines on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write a JUnit XML report here (one test case per iteration).
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Progress display: auto (a bar on a terminal, plain lines otherwise), bar, plain, none.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
    /// Stop after this many iterations even if time is left.
    #[arg(long)]
    pub max_iterations: Option<u64>,
    /// Check the scenario and options, print the soak's plan (the first iteration's faults,
    /// the store, the regression settings) and start nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// A failure is a regression when the scenario passed on each of this many previous
    /// nights in the results store (docs/nightly.md).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub regression_nights: u64,
    /// A recovery time or throughput is a regression beyond median ± K spreads of the
    /// previous nights' values (docs/nightly.md).
    #[arg(long, default_value_t = 3.0, value_name = "K")]
    pub regression_spread: f64,
    /// Exit 9 when every iteration passed but a regression is named (a recovery time or
    /// throughput beyond the usual spread); without it such a soak exits 0. A failing
    /// iteration's own code wins either way.
    #[arg(long)]
    pub fail_on_regression: bool,
    #[command(flatten)]
    pub external: ExternalArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct ShrinkArgs {
    /// A failing run directory written by `run` (or by `soak`, `matrix`, `replay`).
    pub run_dir: PathBuf,
    /// Tries per candidate: it still fails when at least one try fails the same way.
    #[arg(long, default_value_t = 3)]
    pub times: u32,
    /// Wall time for the whole shrink (e.g. 1h, 20m); when it runs out the best so far is the
    /// answer, and the output says it may not be minimal.
    #[arg(long, value_parser = parse_duration, default_value = "1h")]
    pub budget: std::time::Duration,
    /// Leave the cluster running afterwards.
    #[arg(long)]
    pub keep_cluster: bool,
    /// Progress display: auto (a bar on a terminal, plain lines otherwise), bar, plain, none.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
}

#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// The scenario file (YAML).
    pub scenario: PathBuf,
    /// The Pulsar versions, comma-separated (each the official image, else the local one:
    /// `image build --pulsar-version V`).
    #[arg(long, default_value = "4.0.7,4.2.4")]
    pub versions: String,
    /// The clients, comma-separated (own, java, go): one line per version and client, the
    /// same seeds on each (default: the scenario's own client only). Checked as `run
    /// --client` is, before anything starts.
    #[arg(long)]
    pub clients: Option<String>,
    /// Runs per version (and client).
    #[arg(long, default_value_t = 5)]
    pub times: u32,
    /// One seed for every run (default: the scenario's). Without either, each run index gets
    /// a seed derived from a drawn master seed, the same on every version.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Parent directory of the matrix directory.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Progress display: auto (a bar on a terminal, plain lines otherwise), bar, plain, none.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Where `run`, `soak`, `matrix` and `replay` record each finished run (README, "Results
/// store").
#[derive(Debug, Clone, Default, Args)]
pub struct StoreArgs {
    /// The results store: a SQLite file, or a postgres:// URL (default:
    /// $XDG_DATA_HOME/pulsar-chaos/results.db, else ~/.local/share/pulsar-chaos/results.db).
    #[arg(long, env = "PULSAR_CHAOS_STORE", value_name = "PATH|URL")]
    pub store: Option<String>,
    /// Record nothing in the results store.
    #[arg(long)]
    pub no_store: bool,
}

#[derive(Debug, Args)]
pub struct TrendsArgs {
    /// The results store to read: a SQLite file, or a postgres:// URL (default as for `run`).
    #[arg(long, env = "PULSAR_CHAOS_STORE", value_name = "PATH|URL")]
    pub store: Option<String>,
    /// Print the trends as JSON instead of writing the HTML page.
    #[arg(long)]
    pub json: bool,
    /// Where to write the HTML page (default: trends.html in the current directory).
    #[arg(long, value_name = "PATH", conflicts_with = "json")]
    pub out: Option<std::path::PathBuf>,
    /// Only this scenario (its name).
    #[arg(long)]
    pub scenario: Option<String>,
    /// Only this Pulsar version.
    #[arg(long = "version", alias = "pulsar-version")]
    pub version: Option<String>,
    /// Only runs started on or after this UTC date (2026-12-01) or within this long before
    /// now (7d, 36h).
    #[arg(long)]
    pub since: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Start a cluster and leave it running; prints its URLs and run id.
    Up(ClusterUpArgs),
    /// List the clusters the harness has running.
    Status,
    /// Remove a cluster (by run id), or every cluster started by `cluster up` / --keep-cluster.
    Down {
        /// Only the cluster of this run id (as `cluster status` and run.json name it).
        #[arg(long)]
        run: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct ClusterUpArgs {
    /// standalone: one container; cluster: ZooKeeper, bookies and brokers in containers.
    #[arg(long, value_enum, default_value_t = TopologyArg::Standalone)]
    pub topology: TopologyArg,
    /// Brokers (cluster topology).
    #[arg(long, default_value_t = 2)]
    pub brokers: u32,
    /// Bookies (cluster topology).
    #[arg(long, default_value_t = 1)]
    pub bookies: u32,
    /// Transaction coordinators (cluster topology).
    #[arg(long, default_value_t = 1)]
    pub coordinators: u32,
    /// The Pulsar image (default: the official image, else the local one).
    #[arg(long)]
    pub image: Option<String>,
    /// The Pulsar version (default: the harness's default version).
    #[arg(long, default_value = crate::versions::DEFAULT)]
    pub pulsar_version: String,
    /// Host port of the binary protocol (standalone).
    #[arg(long, default_value_t = 6650)]
    pub binary_port: u16,
    /// Host port of HTTP (standalone).
    #[arg(long, default_value_t = 8080)]
    pub http_port: u16,
    /// How long to wait for readiness (e.g. 300s).
    #[arg(long, default_value = "300s", value_parser = parse_duration)]
    pub ready_timeout: std::time::Duration,
    /// How the JVMs run: standard (the official image's G1 and full JIT) or quick (first JIT
    /// tier and serial GC: about half the CPU to start; docs/clusters.md).
    #[arg(long, value_enum, default_value = "standard", env = "PULSAR_CHAOS_JVM")]
    pub jvm: JvmArg,
    /// A broker setting KEY=VALUE (as `cluster.broker_config` in a scenario), such as
    /// acknowledgmentAtBatchIndexLevelEnabled=true; repeatable.
    #[arg(long = "broker-config", value_name = "KEY=VALUE", value_parser = parse_broker_setting)]
    pub broker_config: Vec<(String, String)>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum JvmArg {
    Standard,
    Quick,
}

impl From<JvmArg> for crate::scenario::Jvm {
    fn from(j: JvmArg) -> Self {
        match j {
            JvmArg::Standard => crate::scenario::Jvm::Standard,
            JvmArg::Quick => crate::scenario::Jvm::Quick,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TopologyArg {
    Standalone,
    Cluster,
}

#[derive(Debug, Subcommand)]
pub enum ImageCommand {
    /// Build the local image (skipped when one with the same inputs exists).
    Build {
        /// Build even if the image exists.
        #[arg(long)]
        force: bool,
        /// The Pulsar version whose broker closure Maven Central serves (docker/README.md
        /// lists the versions checked).
        #[arg(long, default_value = crate::versions::DEFAULT)]
        pulsar_version: String,
    },
    /// Print the image a run would use.
    Show {
        /// The Pulsar version.
        #[arg(long, default_value = crate::versions::DEFAULT)]
        pulsar_version: String,
    },
}

/// The exit codes, from the documented constants (`exit::ALL`), as `--help` ends.
pub fn exit_codes_help() -> String {
    let mut t = String::from("Exit codes:\n");
    for (code, meaning) in crate::exit::ALL {
        t.push_str(&format!("  {code:<4} {meaning}\n"));
    }
    t
}

/// `--broker-config KEY=VALUE`, checked as `cluster.broker_config` is.
fn parse_broker_setting(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: give KEY=VALUE"))?;
    crate::scenario::check_broker_setting(k, v)?;
    Ok((k.to_string(), v.to_string()))
}

pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("'{s}' is not a duration like 30s or 2h: {e}"))
}

impl From<ProgressMode> for crate::progress::Mode {
    fn from(m: ProgressMode) -> crate::progress::Mode {
        match m {
            ProgressMode::Auto => crate::progress::Mode::Auto,
            ProgressMode::Bar => crate::progress::Mode::Bar,
            ProgressMode::Plain => crate::progress::Mode::Plain,
            ProgressMode::None => crate::progress::Mode::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// Every argument of every sub-command, at any depth, by its path (`cluster down --run`).
    fn arguments(cmd: &clap::Command, path: &str, out: &mut Vec<(String, bool)>) {
        for a in cmd.get_arguments() {
            let name = a
                .get_long()
                .map(|l| format!("--{l}"))
                .unwrap_or_else(|| format!("<{}>", a.get_id()));
            let has_help = a
                .get_help()
                .is_some_and(|h| !h.to_string().trim().is_empty());
            out.push((format!("{path} {name}"), has_help));
        }
        for sub in cmd.get_subcommands() {
            arguments(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_argument_of_every_command_has_help_text() {
        let cmd = Cli::command()
            .disable_help_flag(true)
            .disable_version_flag(true);
        let mut all = Vec::new();
        arguments(&cmd, "pulsar-chaos", &mut all);
        assert!(all.len() > 50, "{all:?}");
        let without: Vec<&String> = all.iter().filter(|(_, h)| !h).map(|(n, _)| n).collect();
        assert!(
            without.is_empty(),
            "arguments without help text: {without:?}"
        );
    }

    #[test]
    fn help_lists_every_exit_code() {
        for long in [true, false] {
            let mut cmd = Cli::command();
            let help = if long {
                cmd.render_long_help()
            } else {
                cmd.render_help()
            }
            .to_string();
            for (code, meaning) in crate::exit::ALL {
                assert!(
                    help.contains(&format!("  {code:<4} {meaning}")),
                    "exit code {code} not in --help:\n{help}"
                );
            }
        }
    }

    /// The long options of one sub-command.
    fn longs(name: &str) -> Vec<String> {
        Cli::command()
            .find_subcommand(name)
            .unwrap()
            .get_arguments()
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect()
    }

    /// Every option only `soak` has (not `run`'s too) is in the README where soak is
    /// described: its usage line or its section.
    #[test]
    fn the_readme_describes_every_option_of_soak() {
        // Read when the test runs, not compiled in: a README edit does not rebuild the lib's
        // tests (a release compile of minutes).
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
            .expect("README.md");
        let section = readme
            .split("### Soak runs")
            .nth(1)
            .and_then(|r| r.split("\n### ").next())
            .expect("README has a soak section");
        let usage: String = readme
            .lines()
            .filter(|l| l.starts_with("pulsar-chaos soak"))
            .collect();
        let run = longs("run");
        let only_soak: Vec<String> = longs("soak")
            .into_iter()
            .filter(|l| !run.contains(l))
            .collect();
        assert!(
            only_soak.contains(&"--max-iterations".to_string()),
            "{only_soak:?}"
        );
        for l in only_soak {
            assert!(
                section.contains(&l) || usage.contains(&l),
                "{l} of soak is not in README.md's soak usage line or section"
            );
        }
    }

    #[test]
    fn a_broker_setting_is_key_equals_value_and_never_one_the_harness_sets() {
        assert_eq!(
            parse_broker_setting("acknowledgmentAtBatchIndexLevelEnabled=true"),
            Ok((
                "acknowledgmentAtBatchIndexLevelEnabled".to_string(),
                "true".to_string()
            ))
        );
        assert!(parse_broker_setting("noValue")
            .unwrap_err()
            .contains("KEY=VALUE"));
        assert!(parse_broker_setting("brokerServicePort=7000")
            .unwrap_err()
            .contains("set by the harness"));
    }
}
