//! A run whose official client's driver could not start (it ended before answering `hello`)
//! or whose client could not `connect`, once the cluster was up: the harness's gap, never a
//! finding about Pulsar. Nothing is produced and no fault fires; the workload's end is
//! recorded as a driver's end mid-run is (`producer_finished`, not complete, with why and
//! the driver's last log lines), and the run is read back and judged as any other, so it
//! ends INCONCLUSIVE with every number it never sent the harness's, and the cluster is torn
//! down by the caller as after any run.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::drivers::DriverError;
use crate::error::Result;
use crate::history::{EventBody, History};
use crate::nemesis::reply_loss::ReplyLossProxy;
use crate::plan::Plan;
use crate::rundir::{RunDir, RunInfo};
use crate::workload::{self, Stats};

use super::driver::consumer_evidence;
use super::ending::{
    judge, print_producer, settle_and_read, topic_partitions, write_producer_json, Read,
};
use super::env::Env;
use super::logs::stall_logs;
use super::{Outcome, Request};

/// How many of the driver's last log lines the verdict's reason quotes.
const LOG_LINES: usize = 5;

/// The run as far as it got when its driver could not start or connect.
pub(super) struct Unstarted<'a> {
    pub(super) req: &'a Request,
    pub(super) dir: &'a RunDir,
    pub(super) info: &'a RunInfo,
    pub(super) env: &'a Env,
    pub(super) plan: &'a Plan,
    pub(super) history: &'a History,
    pub(super) history_path: &'a Path,
    pub(super) proxy: &'a Option<Arc<ReplyLossProxy>>,
    pub(super) started: Instant,
}

/// What the verdict says of the driver's failure in one line: the error's first line (its
/// own tail of the log cut, the lines are quoted once, joined) and the driver's last lines.
pub(super) fn why(error: &DriverError, last_lines: &[String]) -> String {
    let text = error.to_string();
    let first = text.lines().next().unwrap_or_default();
    let first = first
        .split_once("; last lines of ")
        .map_or(first, |(head, _)| head);
    let lines: Vec<&str> = last_lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        format!("{first}; driver.log is empty")
    } else {
        format!(
            "{first}; the last lines of driver.log: {}",
            lines.join(" | ")
        )
    }
}

impl Unstarted<'_> {
    /// Close what was started for the workload (a driver that answered `hello` is asked to
    /// exit, and killed if it does not), record the end, read back and judge.
    pub(super) async fn finish(
        self,
        error: DriverError,
        driver: Option<workload::DriverHandle>,
    ) -> Result<Outcome> {
        let log = self.dir.file("driver.log");
        let last = crate::drivers::tail(&log, LOG_LINES);
        if let Some(d) = driver {
            d.0.close(std::time::Duration::from_secs(10)).await;
        }
        if let Some(p) = self.proxy {
            p.shutdown();
        }
        crate::errln!("{error}");
        let why = why(&error, &last);
        self.history.record(EventBody::Note {
            message: format!("the workload did not start: {error}"),
        });
        let stats = Stats::default();
        let report = workload::Report::finish(
            self.history,
            &stats,
            false,
            format!("stopped: {why}"),
            self.started.elapsed(),
        );
        write_producer_json(self.dir, &report, &stats, Default::default())?;
        print_producer(&report);
        let (req, dir, info, env) = (self.req, self.dir, self.info, self.env);
        let admin = crate::admin::Admin::new(&env.admin_url);
        let parts = topic_partitions(env, info).await?;
        let (rb, incomplete, stuck_reads) =
            settle_and_read(dir, env, &admin, info, &parts, &req.scenario, self.history).await?;
        let consumer =
            consumer_evidence(&admin, &req.scenario, &info.topic, self.history, &dir.path).await;
        let stall = stall_logs(dir, env, info, self.history, None, Vec::new()).await;
        let read = Read {
            rb,
            incomplete,
            stuck_reads,
            consumer,
            // No fault fired in this run: no transaction log was watched.
            txnlog_steps: Vec::new(),
        };
        let verdict = judge(
            req,
            dir,
            info,
            env,
            self.plan,
            read,
            stall,
            self.history_path,
        )
        .await?;
        dir.write_json("verdict.json", &verdict)?;
        crate::report::write_html(dir, info, self.plan, &verdict)?;
        Ok(Outcome {
            verdict,
            run_dir: dir.path.clone(),
            info: info.clone(),
            elapsed: self.started.elapsed(),
            producer: report,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_quotes_the_error_once_and_the_last_lines_joined() {
        let e = DriverError::Start {
            client: "java 4.2.4".into(),
            path: "java".into(),
            message: "the driver process ended: pid 7, exit status: 1; last lines of /r/driver.log:\nUnrecognized VM option 'X'\nError: Could not create the Java Virtual Machine.".into(),
        };
        let lines = vec![
            "Unrecognized VM option 'X'".to_string(),
            String::new(),
            "Error: Could not create the Java Virtual Machine.".to_string(),
        ];
        assert_eq!(
            why(&e, &lines),
            "cannot start the java 4.2.4 driver (java): the driver process ended: pid 7, exit status: 1; the last lines of driver.log: Unrecognized VM option 'X' | Error: Could not create the Java Virtual Machine."
        );
        let c = DriverError::Connect {
            message: "go client: connect failed: connection refused".into(),
        };
        assert_eq!(
            why(&c, &[]),
            "go client: connect failed: connection refused; driver.log is empty"
        );
    }
}
