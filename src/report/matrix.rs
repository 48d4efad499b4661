//! `matrix.html`: the version matrix as one page, a row per version (and client, with
//! `--clients`) and a link to every run's report. Pure: the matrix in, the page out.

use std::fmt::Write as _;

use super::fmt::esc;
use super::page::page_start;
use crate::matrix::{expectation_text, faults_text, throughput_text, Matrix, Outcome};

fn outcome_class(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Violation => "violation",
        Outcome::Inconclusive | Outcome::Stalled => "inconclusive",
        Outcome::Stuck => "stuck",
        Outcome::Error => "other",
    }
}

/// The page.
pub fn page(m: &Matrix) -> String {
    let mut h = String::with_capacity(8 * 1024 + m.runs.len() * 600);
    let by_client = m.compares_clients();
    // The client's cell, when the matrix compares clients.
    let client_td = |c: &Option<String>| {
        if by_client {
            format!("<td>{}</td>", esc(c.as_deref().unwrap_or("-")))
        } else {
            String::new()
        }
    };
    let client_th = if by_client { "<th>client</th>" } else { "" };
    let mut title = format!("matrix of {} on {}", m.scenario, m.versions.join(", "));
    if !m.clients.is_empty() {
        title.push_str(&format!(" through {}", m.clients.join(", ")));
    }
    page_start(&mut h, &title);
    w!(h, "<h1 class=\"title\">{}</h1>\n", esc(&title));
    w!(
        h,
        "<p class=\"summary\">Scenario <code>{}</code>, {} run(s) per version{}, {:.0}s in all{}.</p>\n",
        esc(&m.scenario_file),
        m.times,
        if m.clients.is_empty() { "" } else { " and client" },
        m.elapsed_s,
        if m.interrupted { " (interrupted)" } else { "" }
    );
    w!(
        h,
        "<h2>Per version{}</h2>\n<table><thead><tr><th>version</th>{client_th}",
        if by_client { " and client" } else { "" }
    );
    h.push_str("<th class=\"num\">runs</th><th class=\"num\">pass</th><th class=\"num\">violation</th><th class=\"num\">inconclusive</th><th class=\"num\">stalled</th><th class=\"num\">stuck</th><th class=\"num\">error</th><th class=\"num\">ambiguous commits</th><th class=\"num\">duplicate copies</th><th class=\"num\">missing</th><th class=\"num\">msg/s (median)</th><th class=\"num\">faults fired / planned</th><th>recovery after heal (median / max)</th><th>expected</th></tr></thead><tbody>\n");
    for r in &m.rows {
        let recovery: Vec<String> = r
            .recovery
            .iter()
            .map(|(k, s)| format!("{} {}", esc(k), s.text()))
            .collect();
        let exp_class = match r.as_expected {
            Some(n) if n == r.runs => "pass",
            Some(_) => "violation",
            None => "other",
        };
        w!(
            h,
            "<tr><td><b>{}</b></td>{}<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td><span class=\"pill {exp_class}\">{}</span></td></tr>\n",
            esc(&r.version),
            client_td(&r.client),
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
            recovery.join("<br>"),
            esc(&expectation_text(r))
        );
    }
    h.push_str("</tbody></table>\n");
    for r in &m.rows {
        for (cause, n) in &r.likely_causes {
            w!(
                h,
                "<p class=\"note\">{}: known cause named in {n} stalled or stuck run(s): {}</p>\n",
                esc(&r.label()),
                esc(cause)
            );
        }
    }
    w!(
        h,
        "<h2>Runs</h2>\n<table><thead><tr><th>version</th>{client_th}"
    );
    h.push_str("<th class=\"num\">#</th><th class=\"num\">seed</th><th>outcome</th><th class=\"num\">faults fired / planned</th><th class=\"num\">seconds</th><th>summary</th><th>reproduce</th></tr></thead><tbody>\n");
    for r in &m.runs {
        let link = match &r.run_dir {
            Some(d) => format!(
                "<a href=\"{}/report.html\">{}</a>",
                esc(d),
                esc(r.outcome.as_str())
            ),
            None => esc(r.outcome.as_str()),
        };
        let expectation = match r.as_expected {
            Some(true) => " <span class=\"note\">as expected</span>",
            Some(false) => " <span class=\"pill bad\">not as expected</span>",
            None => "",
        };
        w!(
            h,
            "<tr id=\"{}-{}\"><td>{}</td>{}<td class=\"num\">{}</td><td class=\"num\">{}</td><td><span class=\"pill {}\">{link}</span>{expectation}</td><td class=\"num\">{}</td><td class=\"num\">{:.0}</td><td class=\"wrap\">{}</td><td class=\"wrap\"><code>{}</code></td></tr>\n",
            esc(&r.label().replace(' ', "-")),
            r.index,
            esc(&r.version),
            client_td(&r.client),
            r.index,
            r.seed,
            outcome_class(r.outcome),
            r.faults
                .as_ref()
                .map_or_else(|| "-".into(), crate::checker::FaultsSummary::cell),
            r.seconds,
            esc(&r.summary),
            esc(&r.reproduce)
        );
    }
    h.push_str(
        "</tbody></table>\n<footer>pulsar-chaos matrix</footer>\n</main>\n</body>\n</html>\n",
    );
    h
}

#[cfg(test)]
mod tests {
    use crate::checker::{self, Context, Status, Tally};
    use crate::history::Event;

    #[test]
    fn the_matrix_page_links_every_run_and_shows_each_versions_line() {
        use crate::matrix::{Matrix, RunAt, RunRecord};
        use crate::scenario::Expected;
        use std::collections::BTreeMap;
        let mut t = Tally::new(3);
        for (i, v) in ["0", "1", "2"].iter().enumerate() {
            t.observe(
                v.as_bytes(),
                checker::MsgId {
                    partition: -1,
                    ledger: 1,
                    entry: i as u64,
                    batch: -1,
                },
            );
        }
        let mut pass = checker::verdict(
            t.finish().unwrap(),
            None::<Vec<std::result::Result<Event, String>>>,
            &Context::default(),
        );
        pass.faults_summary = Some(checker::FaultsSummary {
            planned: 2,
            fired: 1,
            skipped: 1,
            ..Default::default()
        });
        let mut stalled = pass.clone();
        stalled.status = Status::Inconclusive;
        stalled.stall = Some(checker::StallFinding {
            since_ms: 1,
            detected_ms: 2,
            failed_attempts: 3,
            failures: vec![],
            broker_log: vec![],
            partitions: vec![],
            likely_cause: Some("the chain apache/pulsar#24945 replaced".into()),
        });
        let at = |version: &str, index: u32| RunAt {
            version: version.into(),
            client: None,
            index,
            seed: 7,
            seconds: 60.0,
            run_dir: Some(format!("{version}/run-{index}")),
            reproduce: format!("pulsar-chaos run s.yaml --seed 7 --pulsar-version {version}"),
        };
        let expect = [Expected::Stalled];
        let mut m = Matrix {
            scenario: "s".into(),
            scenario_file: "s.yaml".into(),
            versions: vec!["4.0.7".into()],
            clients: vec![],
            times: 3,
            seeds: vec![7, 7, 7],
            started_ms: 0,
            elapsed_s: 1.0,
            interrupted: false,
            rows: vec![],
            runs: vec![
                RunRecord::from_verdict(at("4.0.7", 1), &stalled, Some(1000.0), Some(&expect)),
                RunRecord::from_verdict(at("4.0.7", 2), &pass, Some(1000.0), Some(&expect)),
                RunRecord::from_verdict(at("4.0.7", 3), &stalled, Some(1000.0), Some(&expect)),
            ],
        };
        m.summarize(&BTreeMap::from([("4.0.7".to_string(), expect.to_vec())]));
        let page = crate::report::matrix::page(&m);
        assert!(page.contains("href=\"4.0.7/run-1/report.html\""), "{page}");
        assert!(page.contains("stalled: 2/3"), "{page}");
        assert!(page.contains("not as expected"), "{page}");
        // Faults fired of planned: the version's sum, and each run's.
        assert!(
            page.contains("<th class=\"num\">faults fired / planned</th>"),
            "{page}"
        );
        assert!(
            page.contains("<td class=\"num\">1000</td><td class=\"num\">3/6</td>"),
            "{page}"
        );
        assert_eq!(
            page.matches("<td class=\"num\">1/2</td>").count(),
            3,
            "{page}"
        );
    }

    /// Issue 17: stuck runs have their own column next to "stalled" and their own colour.
    #[test]
    fn the_matrix_page_counts_stuck_runs_in_their_own_column() {
        use crate::matrix::{Matrix, Outcome, RunAt, RunRecord};
        use std::collections::BTreeMap;
        let base = checker::verdict(
            Tally::new(0).finish().unwrap(),
            None::<Vec<std::result::Result<Event, String>>>,
            &Context::default(),
        );
        let mut stalled = base.clone();
        stalled.status = Status::Inconclusive;
        stalled.stall = Some(checker::StallFinding {
            since_ms: 1,
            detected_ms: 2,
            failed_attempts: 3,
            failures: vec![],
            broker_log: vec![],
            partitions: vec![],
            likely_cause: None,
        });
        let mut stuck = base.clone();
        stuck.status = Status::Stuck;
        let at = |index: u32| RunAt {
            version: "4.0.7".into(),
            client: None,
            index,
            seed: 7,
            seconds: 60.0,
            run_dir: Some(format!("4.0.7/run-{index}")),
            reproduce: "pulsar-chaos run s.yaml --seed 7".into(),
        };
        let mut m = Matrix {
            scenario: "s".into(),
            scenario_file: "s.yaml".into(),
            versions: vec!["4.0.7".into()],
            clients: vec![],
            times: 4,
            seeds: vec![7; 4],
            started_ms: 0,
            elapsed_s: 1.0,
            interrupted: false,
            rows: vec![],
            runs: vec![
                RunRecord::from_verdict(at(1), &stuck, None, None),
                RunRecord::from_verdict(at(2), &stalled, None, None),
                RunRecord::from_verdict(at(3), &stuck, None, None),
                RunRecord::from_verdict(at(4), &base, None, None),
            ],
        };
        m.summarize(&BTreeMap::new());
        assert_eq!(m.runs[0].outcome, Outcome::Stuck);
        let page = crate::report::matrix::page(&m);
        assert!(
            page.contains("<th class=\"num\">stalled</th><th class=\"num\">stuck</th><th class=\"num\">error</th>"),
            "{page}"
        );
        // runs, pass, violation, inconclusive, stalled, stuck, error.
        assert!(
            page.contains("<tr><td><b>4.0.7</b></td><td class=\"num\">4</td><td class=\"num\">1</td><td class=\"num\">0</td><td class=\"num\">0</td><td class=\"num\">1</td><td class=\"num\">2</td><td class=\"num\">0</td>"),
            "{page}"
        );
        assert!(
            page.contains(
                "<span class=\"pill stuck\"><a href=\"4.0.7/run-1/report.html\">stuck</a></span>"
            ),
            "{page}"
        );
        assert!(
            page.contains(".pill.stuck,.pill.held{"),
            "CSS for the stuck class"
        );
    }

    /// `--clients`: a client column in both tables only when the matrix compares clients, the
    /// client's text escaped, and each run's row id naming its client.
    #[test]
    fn the_matrix_page_has_a_client_column_only_when_clients_are_compared() {
        use crate::matrix::{Matrix, RunAt, RunRecord};
        use std::collections::BTreeMap;
        let pass = checker::verdict(
            Tally::new(0).finish().unwrap(),
            None::<Vec<std::result::Result<Event, String>>>,
            &Context::default(),
        );
        let at = |client: &str| RunAt {
            version: "4.2.4".into(),
            client: Some(client.into()),
            index: 1,
            seed: 7,
            seconds: 60.0,
            run_dir: Some(format!("4.2.4/{client}/run-1")),
            reproduce: format!(
                "pulsar-chaos run s.yaml --seed 7 --pulsar-version 4.2.4 --client {client}"
            ),
        };
        let mut m = Matrix {
            scenario: "s".into(),
            scenario_file: "s.yaml".into(),
            versions: vec!["4.2.4".into()],
            clients: vec!["own".into(), "<j>".into()],
            times: 1,
            seeds: vec![7],
            started_ms: 0,
            elapsed_s: 1.0,
            interrupted: false,
            rows: vec![],
            runs: vec![
                RunRecord::from_verdict(at("own"), &pass, None, None),
                RunRecord::from_verdict(at("<j>"), &pass, None, None),
            ],
        };
        m.summarize(&BTreeMap::new());
        let page = crate::report::matrix::page(&m);
        assert!(
            page.contains("<h2>Per version and client</h2>\n<table><thead><tr><th>version</th><th>client</th><th class=\"num\">runs</th>"),
            "{page}"
        );
        assert!(
            page.contains("<tr><td><b>4.2.4</b></td><td>own</td><td class=\"num\">1</td>"),
            "{page}"
        );
        assert!(
            page.contains("<tr><td><b>4.2.4</b></td><td>&lt;j&gt;</td><td class=\"num\">1</td>"),
            "{page}"
        );
        assert!(
            page.contains("<h2>Runs</h2>\n<table><thead><tr><th>version</th><th>client</th><th class=\"num\">#</th>"),
            "{page}"
        );
        assert!(
            page.contains(
                "<tr id=\"4.2.4-own-1\"><td>4.2.4</td><td>own</td><td class=\"num\">1</td>"
            ),
            "{page}"
        );
        assert!(page.contains("--client &lt;j&gt;"), "{page}");
        assert!(!page.contains("<j>"), "{page}");
        assert!(page.contains("through own, &lt;j&gt;"), "{page}");
        // One client: no column.
        m.clients = vec!["own".into()];
        m.runs.truncate(1);
        m.summarize(&BTreeMap::new());
        let page = crate::report::matrix::page(&m);
        assert!(!page.contains("<th>client</th>"), "{page}");
        assert!(
            page.contains("<tr><td><b>4.2.4</b></td><td class=\"num\">1</td>"),
            "{page}"
        );
    }
}
