//! `report`: write report.html of a run directory again from the files the run left.

use std::path::Path;

use crate::checker::Verdict;
use crate::error::{Error, Result};
use crate::exit;
use crate::plan::Plan;
use crate::rundir::{RunDir, RunInfo};

/// Regenerate `report.html` of `run_dir` from its run.json, plan.json, history.jsonl and
/// verdict.json, and print where it is. Computes no verdict: a run without verdict.json (it
/// never reached the check) is a usage error.
pub fn report(run_dir: &Path) -> Result<i32> {
    let dir = RunDir::open(run_dir)?;
    let info: RunInfo = dir.read_json("run.json")?;
    let plan: Plan = dir.read_json("plan.json")?;
    if !dir.file("verdict.json").is_file() {
        return Err(Error::Usage(format!(
            "{} has no verdict.json: the run never reached its check (resume it with `run --resume`)",
            run_dir.display()
        )));
    }
    let verdict: Verdict = dir.read_json("verdict.json")?;
    if let Some(w) = readback_warning(&dir) {
        crate::errln!("warning: {w}");
    }
    crate::report::write_html(&dir, &info, &plan, &verdict)?;
    crate::outln!("{}", dir.file("report.html").display());
    Ok(exit::PASS)
}

/// What `report` says when the run's stored read-back (readback.json) is there but cannot be
/// read: the report renders verdict.json alone, and `recheck` cannot check it again.
fn readback_warning(dir: &RunDir) -> Option<String> {
    let path = dir.file(crate::readlog::FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        // Absent: a run that never stored it (older pulsar-chaos); nothing to say.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(format!("{}: cannot read: {e}", path.display())),
    };
    crate::rundir::parse_json::<serde::de::IgnoredAny>(&path, &bytes)
        .err()
        .map(|e| format!("{e}; report.html is rendered from verdict.json alone"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::{Context, Tally};
    use crate::history::{Event, EventBody};

    fn run_dir() -> RunDir {
        let path = std::env::temp_dir().join(format!(
            "pc-report-cmd-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&path).unwrap();
        let dir = RunDir { path };
        let scenario = crate::scenario::parse(
            "cmd.yaml",
            "name: cmd\nworkload: { topic: persistent://public/default/cmd, messages: 10 }\nfaults:\n  - kind: pause\n    duration: 2s\n    schedule: { at: [1s] }\n  - kind: topic_unload\n    schedule: { after_commits: [3] }\n",
        )
        .unwrap();
        let plan = crate::plan::make(&scenario, 7);
        let info = RunInfo {
            run_id: "c0ffee".into(),
            scenario: "cmd".into(),
            seed: 7,
            topic: "persistent://public/default/cmd".into(),
            partitions: 1,
            messages: 10,
            topology: "standalone".into(),
            service_url: "pulsar://127.0.0.1:6650".into(),
            admin_url: "http://127.0.0.1:8080".into(),
            image: None,
            started_ms: 0,
            reproduce: "pulsar-chaos run cmd.yaml --seed 7".into(),
            kept_cluster: false,
            client: None,
        };
        let history = vec![Event {
            t_ms: 5,
            body: EventBody::Note {
                message: "hello".into(),
            },
        }];
        let mut text = serde_json::to_string(&history[0]).unwrap();
        text.push('\n');
        dir.write("history.jsonl", &text).unwrap();
        let mut tally = Tally::new(10);
        for v in 0..10 {
            tally.observe_value(v);
        }
        let verdict = crate::checker::verdict(
            tally.finish().unwrap(),
            Some(history.into_iter().map(Ok::<_, String>)),
            &Context::default(),
        );
        dir.write_json("run.json", &info).unwrap();
        dir.write("plan.json", &plan.to_json()).unwrap();
        dir.write_json("verdict.json", &verdict).unwrap();
        dir
    }

    #[test]
    fn regenerates_the_report_from_the_run_directory() {
        let dir = run_dir();
        assert_eq!(report(&dir.path).unwrap(), exit::PASS);
        let html = std::fs::read_to_string(dir.file("report.html")).unwrap();
        assert!(html.contains("<dt>faults planned</dt><dd>2</dd>"), "{html}");
        assert!(html.contains("pulsar-chaos run cmd.yaml --seed 7"));
        // Every planned fault is named: none fired in this history.
        assert!(
            html.contains("Planned but not in the history (2)"),
            "{html}"
        );
        let _ = std::fs::remove_dir_all(&dir.path);
    }

    /// Issue 33: a run whose readback.json is damaged is still reported from verdict.json,
    /// and `report` says the read-back is unreadable instead of rendering silently.
    #[test]
    fn a_damaged_readback_is_named_and_the_report_still_written() {
        let dir = run_dir();
        assert_eq!(
            readback_warning(&dir),
            None,
            "no readback.json: nothing to say"
        );
        dir.write(crate::readlog::FILE, "{\"format\": 1}\n")
            .unwrap();
        assert_eq!(readback_warning(&dir), None);
        std::fs::write(dir.file(crate::readlog::FILE), b"{\"format\": \"\xff\"}").unwrap();
        let w = readback_warning(&dir).expect("a warning");
        assert!(w.contains("readback.json: not UTF-8 text"), "{w}");
        assert!(w.contains("rendered from verdict.json alone"), "{w}");
        std::fs::write(dir.file(crate::readlog::FILE), b"{\"format\": 1, ").unwrap();
        let w = readback_warning(&dir).expect("a warning");
        assert!(w.contains("readback.json: not valid JSON"), "{w}");
        assert_eq!(report(&dir.path).unwrap(), exit::PASS);
        assert!(dir.file("report.html").is_file());
        let _ = std::fs::remove_dir_all(&dir.path);
    }

    #[test]
    fn a_run_without_a_verdict_is_refused() {
        let dir = run_dir();
        std::fs::remove_file(dir.file("verdict.json")).unwrap();
        let err = report(&dir.path).unwrap_err();
        assert_eq!(err.exit_code(), exit::BAD_INPUT);
        assert!(err.to_string().contains("no verdict.json"), "{err}");
        assert!(!dir.file("report.html").exists());
        let _ = std::fs::remove_dir_all(&dir.path);
    }

    #[test]
    fn a_directory_that_is_not_a_run_is_refused() {
        let err = report(Path::new("/nonexistent/run")).unwrap_err();
        assert_eq!(err.exit_code(), exit::BAD_INPUT);
    }
}
