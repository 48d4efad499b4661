//! The JUnit XML file of `run --junit` and `soak --junit`: one `<testsuite>` named after the
//! scenario, one `<testcase>` per run or soak iteration, and a `<failure>` (type = the
//! verdict's status, message = its summary, text = seed, reproduce command and run
//! directory) for each that did not pass; when the run was given its plan, the properties
//! `faults_planned` and `faults_fired` and, if faults were planned, a `<system-out>` saying
//! how many fired and which did not. `soak` adds properties to the test suite: `regressions`
//! (how many, or `not compared: why`) and `regression.1`, `regression.2`, ... (each one's kind
//! and line, most severe first). Written by the `quick-junit` crate, which escapes
//! the markup and strips ANSI colour codes and the C0 control characters but the newline; the
//! characters it leaves that XML 1.0 forbids (U+FFFE, U+FFFF) are taken out here, so text
//! quoted from broker logs cannot make the file unreadable. Tabs and carriage returns, which
//! it would drop, become a space and a newline first.

use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use crate::checker::FaultsSummary;

use crate::error::{Error, Result};

/// One JUnit test case: a run or a soak iteration.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub seconds: f64,
    /// None: passed. Some((kind, message, details)): failed.
    pub failure: Option<(String, String, String)>,
    /// How many of the planned faults fired (None: not known, e.g. the run could not run).
    pub faults: Option<FaultsSummary>,
}

/// Write a JUnit XML file with one test suite.
pub fn write_junit(path: &Path, suite: &str, cases: &[Case]) -> Result<()> {
    write_junit_with(path, suite, cases, &[])
}

/// [`write_junit`] with properties of the test suite (`soak`: the regressions named).
pub fn write_junit_with(
    path: &Path,
    suite: &str,
    cases: &[Case],
    properties: &[(String, String)],
) -> Result<()> {
    let context = format!("write {}", path.display());
    let xml = junit_xml(suite, cases, properties)
        .map_err(|e| Error::io(context.clone())(std::io::Error::other(e.to_string())))?;
    std::fs::write(path, xml).map_err(Error::io(context))
}

/// The file's text.
fn junit_xml(
    suite: &str,
    cases: &[Case],
    properties: &[(String, String)],
) -> std::result::Result<String, quick_junit::SerializeError> {
    let mut s = TestSuite::new(xml_text(suite));
    for (name, value) in properties {
        s.add_property(Property::new(xml_text(name), xml_text(value)));
    }
    let mut total = Duration::ZERO;
    for c in cases {
        let status = match &c.failure {
            None => TestCaseStatus::success(),
            Some((kind, message, details)) => {
                let mut f = TestCaseStatus::non_success(NonSuccessKind::Failure);
                f.set_type(xml_text(kind))
                    .set_message(xml_text(message))
                    .set_description(xml_text(details));
                f
            }
        };
        let time = seconds(c.seconds);
        total += time;
        let mut case = TestCase::new(xml_text(&c.name), status);
        case.set_classname(xml_text(&format!("pulsar-chaos.{suite}")))
            .set_time(time);
        if let Some(f) = &c.faults {
            add_faults(&mut case, f);
        }
        s.add_test_case(case);
    }
    s.set_time(total);
    let mut report = Report::unnamed();
    report.set_time(total).add_test_suite(s);
    report.to_string()
}

/// The faults' properties, and with faults planned a line saying how many fired.
fn add_faults(case: &mut TestCase, f: &FaultsSummary) {
    case.add_property(Property::new("faults_planned", f.planned.to_string()))
        .add_property(Property::new("faults_fired", f.fired.to_string()));
    if f.planned > 0 {
        let mut out = format!("faults: {}", f.count_text());
        if !f.not_fired.is_empty() {
            out.push_str(&format!("; not fired: {}", f.not_fired_text()));
        }
        case.set_system_out(xml_text(&out));
    }
}

/// A time in seconds as a duration; a negative or not-a-number time is zero.
fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or_default()
}

/// `s` ready for `quick_junit::XmlString`, which takes out ANSI escape sequences and every C0
/// control but the newline: without U+FFFE and U+FFFF, which XML 1.0 forbids and `XmlString`
/// keeps; a tab as a space and a carriage return as a newline (as an XML parser would read
/// it), where `XmlString` would drop them and join words or lines.
fn xml_text(s: &str) -> String {
    s.replace("\r\n", "\n")
        .chars()
        .filter(|c| !matches!(c, '\u{fffe}' | '\u{ffff}'))
        .map(|c| match c {
            '\t' => ' ',
            '\r' => '\n',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests;
