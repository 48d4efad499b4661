//! Human-readable reports of a run directory. Computes no verdict: it renders the verdict
//! the checker gave, with the run's facts.

use crate::checker::Verdict;
use crate::error::Result;
use crate::plan::Plan;
use crate::rundir::{RunDir, RunInfo};

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Write `report.html`: the verdict in plain words, the anomalies, the faults, the seed and
/// the command that reproduces the run.
pub fn write_html(dir: &RunDir, info: &RunInfo, plan: &Plan, v: &Verdict) -> Result<()> {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    h.push_str(&esc(&format!(
        "{} {} - {}",
        info.scenario, info.run_id, v.status
    )));
    h.push_str("</title></head><body>");
    h.push_str(&format!(
        "<h1>{}</h1><p>{}</p>",
        esc(&v.status.to_string().to_uppercase()),
        esc(&v.summary)
    ));
    h.push_str(&format!(
        "<p>seed {} &middot; {} faults planned &middot; reproduce: <code>{}</code></p>",
        info.seed,
        plan.faults.len(),
        esc(&info.reproduce)
    ));
    h.push_str("</body></html>\n");
    dir.write("report.html", &h)
}

/// One JUnit test case: a run or a soak iteration.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub seconds: f64,
    /// None: passed. Some((kind, message, details)): failed.
    pub failure: Option<(String, String, String)>,
}

impl Case {
    pub fn from_outcome(o: &crate::runner::Outcome) -> Case {
        let failure = match o.verdict.status {
            crate::checker::Status::Pass => None,
            s => Some((
                s.to_string(),
                o.verdict.summary.clone(),
                format!(
                    "seed {}\nreproduce: {}\nrun directory: {}",
                    o.info.seed,
                    o.info.reproduce,
                    o.run_dir.display()
                ),
            )),
        };
        Case {
            name: format!("{} seed {}", o.info.scenario, o.info.seed),
            seconds: o.elapsed.as_secs_f64(),
            failure,
        }
    }
}

/// Write a JUnit XML file with one test suite.
pub fn write_junit(path: &std::path::Path, suite: &str, cases: &[Case]) -> Result<()> {
    let failures = cases.iter().filter(|c| c.failure.is_some()).count();
    let total: f64 = cases.iter().map(|c| c.seconds).sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(&format!(
        "<testsuites tests=\"{}\" failures=\"{failures}\" time=\"{total:.3}\">\n  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{total:.3}\">\n",
        cases.len(),
        esc(suite),
        cases.len()
    ));
    for c in cases {
        x.push_str(&format!(
            "    <testcase classname=\"pulsar-chaos.{}\" name=\"{}\" time=\"{:.3}\"",
            esc(suite),
            esc(&c.name),
            c.seconds
        ));
        match &c.failure {
            None => x.push_str("/>\n"),
            Some((kind, msg, details)) => x.push_str(&format!(
                ">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n",
                esc(kind),
                esc(msg),
                esc(details)
            )),
        }
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    std::fs::write(path, x).map_err(crate::error::Error::io(format!("write {}", path.display())))
}
