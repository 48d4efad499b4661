//! `replay`: run a recorded run again with the same scenario and seed (so the same plan) K
//! times, and say how many replays ended with the same verdict class as the original.

use crate::checker::{Status, Verdict};
use crate::error::{Error, Result};
use crate::exit;
use crate::rundir::{RunDir, RunInfo};
use crate::runner::{self, Request};
use crate::scenario;
use crate::store::{self, Source};

/// The exit code for several verdicts: the most severe one (`exit::SEVERITY`).
pub fn worst(statuses: &[Status]) -> i32 {
    exit::of_runs(statuses.iter().map(|s| exit::of_status(*s)), 0)
}

pub async fn replay(args: &crate::cli::ReplayArgs) -> Result<i32> {
    let crate::cli::ReplayArgs {
        run_dir,
        times,
        out,
        progress,
        overrides,
        external,
        store: store_args,
    } = args;
    let (run_dir, times, progress) = (
        run_dir.as_path(),
        *times,
        crate::progress::Mode::from(*progress),
    );
    if times == 0 {
        return Err(Error::Usage("--times must be at least 1".into()));
    }
    let dir = RunDir::open(run_dir)?;
    let info: RunInfo = dir.read_json("run.json")?;
    let original: Option<Verdict> = dir.read_json("verdict.json").ok();
    let mut s = scenario::load(&dir.file("scenario.yaml"))?;
    super::run::apply_overrides(overrides, &mut s)?;
    if info.topology == "external" {
        s.cluster = s.cluster.at_urls(&info.service_url, &info.admin_url);
    }
    // A cluster named on the command line wins over the original's.
    super::run::apply_external(external, &mut s)?;
    let out = out.clone().unwrap_or_else(|| {
        run_dir
            .parent()
            .map(|p| p.to_path_buf())
            .unwrap_or_default()
    });
    let mut store = store::open_for(store_args).await?;
    let mut store_failed = None;
    let plan_before = std::fs::read_to_string(dir.file("plan.json")).unwrap_or_default();
    let want = original.as_ref().map(|v| v.status);
    crate::errln!(
        "replaying run {} (scenario {}, seed {}) {times} time(s); the original ended: {}",
        info.run_id,
        info.scenario,
        info.seed,
        want.map(|s| s.to_string())
            .unwrap_or_else(|| "without a verdict".into())
    );
    let mut statuses = Vec::new();
    for i in 1..=times {
        let req = Request {
            scenario: s.clone(),
            scenario_path: Some(dir.file("scenario.yaml")),
            seed: info.seed,
            out: out.clone(),
            keep_cluster: false,
            image: if overrides.pulsar_version.is_some() {
                None
            } else {
                info.image.clone()
            },
            progress,
            json: false,
            reuse: None,
            announce_reproduce: true,
        };
        let o = runner::run(req).await?;
        store_failed = store::record_or_report(&mut store, &o.run_dir, Source::Replay)
            .await
            .or(store_failed);
        let plan_now = std::fs::read_to_string(o.run_dir.join("plan.json")).unwrap_or_default();
        let same_plan = plan_now == plan_before;
        crate::outln!(
            "replay {i}/{times}: {} ({}){}  {}",
            o.verdict.status,
            o.verdict.summary,
            if same_plan {
                ""
            } else {
                "  [plan differs from the original!]"
            },
            o.run_dir.display()
        );
        statuses.push(o.verdict.status);
    }
    if let Some(w) = want {
        let same = statuses.iter().filter(|s| **s == w).count();
        crate::outln!("{same} of {times} replay(s) ended with the original verdict ({w})");
    }
    Ok(store::exit_with(worst(&statuses), store_failed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_verdict_decides_the_exit_code() {
        assert_eq!(worst(&[Status::Pass, Status::Pass]), exit::PASS);
        assert_eq!(
            worst(&[Status::Pass, Status::Inconclusive]),
            exit::INCONCLUSIVE
        );
        assert_eq!(
            worst(&[Status::Inconclusive, Status::Violation]),
            exit::VIOLATION
        );
    }
}
