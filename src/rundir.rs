//! The run directory: what a run leaves for people and tools to read.
//!
//! ```text
//! <out>/<scenario>-<yyyymmdd-hhmmss>-<run id>/
//!   scenario.yaml   the scenario as resolved (defaults filled in)
//!   run.json        run id, seed, topic, cluster endpoints, the command that reproduces it
//!   plan.json       the fault plan (pure function of scenario and seed)
//!   history.jsonl   every operation and fault, timestamped
//!   journal/wal     in-flight transactions, a write-ahead log (no attempt open after a clean finish)
//!   readback.json   what the checker saw (`readlog`): per partition the runs of numbers in
//!                   read order, every anomaly with message ids (uncapped), the checker's
//!                   Context; written before verdict.json, read by `recheck`
//!   txnlog.jsonl    the coordinators' transaction-log cursors, each change, when faults hit a
//!                   coordinator (`runner::txnlog`)
//!   verdict.json    the checker's verdict
//!   report.html     the verdict, timeline and faults for people
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A run directory's file that is not there, cannot be written, or is there but cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error("{path}: {what}: the run directory is damaged (a run writes its files whole, so something changed it afterwards); {remedy}")]
    Damaged {
        path: String,
        /// "not valid JSON (line 1, column 2)", "not UTF-8 text (at byte 17)", ...
        what: String,
        remedy: &'static str,
    },
    #[error("{path} is not a run directory (no run.json)")]
    NotARunDir { path: String },
    /// The machine's failure, not the directory's (the top level's `Error::Io`).
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

pub type Result<T> = std::result::Result<T, RunDirError>;

fn io(context: String) -> impl FnOnce(std::io::Error) -> RunDirError {
    move |source| RunDirError::Io { context, source }
}

/// run.json.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunInfo {
    pub run_id: String,
    pub scenario: String,
    pub seed: u64,
    pub topic: String,
    pub partitions: u32,
    pub messages: u64,
    /// "standalone", "cluster" or "external".
    pub topology: String,
    pub service_url: String,
    pub admin_url: String,
    pub image: Option<String>,
    /// Unix milliseconds at the start.
    pub started_ms: u64,
    /// The command that runs this scenario again with the same seed.
    pub reproduce: String,
    /// True when the cluster was left running (`--keep-cluster`).
    pub kept_cluster: bool,
    /// The official client the workload ran through and its library version (`java 4.2.4`);
    /// `None`: the harness's own client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

#[derive(Debug)]
pub struct RunDir {
    pub path: PathBuf,
}

fn utc_stamp(unix_s: u64) -> String {
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl RunDir {
    /// A new run directory under `parent`.
    pub fn create(parent: &Path, scenario: &str, run_id: &str) -> Result<RunDir> {
        let path = parent.join(format!(
            "{scenario}-{}-{run_id}",
            utc_stamp(now_ms() / 1000)
        ));
        std::fs::create_dir_all(&path)
            .map_err(io(format!("create the run directory {}", path.display())))?;
        Ok(RunDir { path })
    }

    pub fn open(path: &Path) -> Result<RunDir> {
        if !path.join("run.json").is_file() {
            return Err(RunDirError::NotARunDir {
                path: path.display().to_string(),
            });
        }
        Ok(RunDir {
            path: path.to_path_buf(),
        })
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Write a file of the run directory whole: a temporary file renamed over it, so a reader
    /// (a test, `soak`'s index, a user's script watching `run.json`) never sees it half written
    /// (seen: a test read an empty `run.json` that had just been created).
    pub fn write(&self, name: &str, text: &str) -> Result<()> {
        let p = self.file(name);
        let tmp = self.file(&format!(".{name}.tmp"));
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &p))
            .map_err(io(format!("write {}", p.display())))
    }

    pub fn write_json<T: Serialize>(&self, name: &str, v: &T) -> Result<()> {
        let mut s = serde_json::to_string_pretty(v).expect("serializable");
        s.push('\n');
        self.write(name, &s)
    }

    /// A JSON file of the run directory. A file that is not UTF-8, not JSON, or not the JSON
    /// this pulsar-chaos writes is a damaged run directory (bad input, exit 2), named with
    /// what to do; only a file that cannot be read at all is the machine's failure.
    pub fn read_json<T: for<'de> Deserialize<'de>>(&self, name: &str) -> Result<T> {
        let p = self.file(name);
        let bytes = std::fs::read(&p).map_err(io(format!("read {}", p.display())))?;
        parse_json(&p, &bytes)
    }
}

/// What to do when `name` of a run directory is damaged.
fn remedy(name: &str) -> &'static str {
    match name {
        "run.json" => "run the scenario again (the seed is in plan.json)",
        crate::readlog::FILE => {
            "`report` still works from verdict.json, `recheck` cannot; to check again, run the scenario again with run.json's `reproduce` command"
        }
        _ => "run the scenario again with run.json's `reproduce` command",
    }
}

/// Parse the bytes of the run directory's file `path` as JSON of `T`.
pub fn parse_json<T: for<'de> Deserialize<'de>>(
    path: &Path,
    bytes: &[u8],
) -> std::result::Result<T, RunDirError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let damaged = |what: String| RunDirError::Damaged {
        path: path.display().to_string(),
        what,
        remedy: remedy(&name),
    };
    let text = std::str::from_utf8(bytes)
        .map_err(|e| damaged(format!("not UTF-8 text (at byte {})", e.valid_up_to())))?;
    serde_json::from_str(text).map_err(|e| {
        use serde_json::error::Category;
        let at = format!("line {}, column {}", e.line(), e.column());
        damaged(match e.classify() {
            Category::Syntax | Category::Io => format!("not valid JSON ({at})"),
            Category::Eof => format!("not valid JSON: it ends early ({at})"),
            // Valid JSON of another shape: serde's text names the field.
            Category::Data => format!("not the JSON this pulsar-chaos writes ({e})"),
        })
    })
}

/// A short id for a run: time and process, in hex.
pub fn new_run_id() -> String {
    let mut r = crate::seed::Rng::new(crate::seed::entropy());
    format!("{:08x}", r.next_u64() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run directory's errors keep their exit codes at the top level: not a run directory
    /// and damaged are bad input (2), a file the machine cannot write is infrastructure.
    #[test]
    fn its_errors_keep_their_exit_codes() {
        use crate::error::Error;
        let tmp = tempfile::tempdir().unwrap();
        let e = RunDir::open(tmp.path()).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("is not a run directory (no run.json)"),
            "{e}"
        );
        assert_eq!(Error::from(e).exit_code(), crate::exit::BAD_INPUT);
        let d = RunDir {
            path: tmp.path().join("absent"),
        };
        let e = d.write("run.json", "{}").unwrap_err();
        assert!(matches!(e, RunDirError::Io { .. }), "{e}");
        assert_eq!(Error::from(e).exit_code(), crate::exit::INFRASTRUCTURE);
    }

    #[test]
    fn stamps_are_utc_calendar_times() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        assert_eq!(utc_stamp(1_796_000_000), "20261130-005320");
        assert_eq!(utc_stamp(951_825_600), "20000229-120000");
    }

    #[test]
    fn a_file_is_replaced_whole_and_no_temporary_file_is_left() {
        let parent = std::env::temp_dir().join(format!("rundir-write-{}", new_run_id()));
        std::fs::create_dir_all(&parent).unwrap();
        let d = RunDir::create(&parent, "s", "r1").unwrap();
        d.write("run.json", "{\"a\": 1}\n").unwrap();
        d.write("run.json", "{\"a\": 2}\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(d.file("run.json")).unwrap(),
            "{\"a\": 2}\n"
        );
        let names: Vec<String> = std::fs::read_dir(&d.path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["run.json".to_string()]);
        std::fs::remove_dir_all(&parent).unwrap();
    }

    /// Issue 33: a damaged file is named, said to be not JSON (or not UTF-8) in words rather
    /// than the parser's, with what to do; it is bad input (exit 2), never exit 3.
    #[test]
    fn a_damaged_json_file_is_bad_input_named_with_what_to_do() {
        let parent = std::env::temp_dir().join(format!("rundir-damaged-{}", new_run_id()));
        std::fs::create_dir_all(&parent).unwrap();
        let d = RunDir::create(&parent, "s", "r1").unwrap();
        let cases: [(&str, &[u8], &str, &str); 4] = [
            (
                "verdict.json",
                b"{bad",
                "not valid JSON (line 1, column 2)",
                "`reproduce`",
            ),
            (
                "readback.json",
                b"{\"a\": \"\xff\xfe\"}",
                "not UTF-8 text (at byte 7)",
                "`recheck` cannot",
            ),
            (
                "plan.json",
                b"{\"a\": ",
                "not valid JSON: it ends early",
                "`reproduce`",
            ),
            (
                "run.json",
                b"{\"a\": 1}",
                "not the JSON this pulsar-chaos writes (missing field",
                "seed is in plan.json",
            ),
        ];
        for (name, bytes, what, remedy) in cases {
            std::fs::write(d.file(name), bytes).unwrap();
            let e = match name {
                "run.json" => d.read_json::<RunInfo>(name).unwrap_err(),
                _ => d.read_json::<crate::checker::Verdict>(name).unwrap_err(),
            };
            let t = e.to_string();
            assert_eq!(
                crate::error::Error::from(e).exit_code(),
                crate::exit::BAD_INPUT,
                "{t}"
            );
            assert!(
                t.starts_with(&format!("{}: ", d.file(name).display())),
                "{t}"
            );
            assert!(t.contains(what), "{name}: {t}");
            assert!(t.contains(remedy), "{name}: {t}");
            assert!(t.contains("the run directory is damaged"), "{t}");
            assert!(!t.contains("expected ident"), "{t}");
        }
        std::fs::remove_dir_all(&parent).unwrap();
    }
}
