//! `shrink`: drive the core's [`Shrinker`] against real Pulsar. A failing run's scenario and
//! plan are pinned (one fault entry per firing); the pinned original is tried first (it must
//! still fail the same way, else there is nothing to shrink); then every candidate is written
//! to `shrink/NNN/scenario.yaml` and run with the ordinary runner, up to K times, each try on
//! a fresh topic of one kept cluster, until one try fails with the original's class. The best
//! so far is `shrink/minimal.yaml` at every moment (Ctrl-C and the budget keep it); every
//! candidate is a line of `shrink/log.jsonl`; `shrink/summary.json` and `shrink/report.html`
//! close it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use pulsar_chaos_core::shrink::*;

use crate::checker::{Status, Verdict};
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::rundir::{RunDir, RunInfo};
use crate::runner::{self, KeptCluster, Request, Reuse};
use crate::scenario::{self, ClusterSpec, ScenarioFile};

/// What a shrink is asked to do.
#[derive(Debug, Clone)]
pub struct Job {
    pub run_dir: PathBuf,
    /// Tries per candidate.
    pub times: u32,
    pub budget: Duration,
    pub keep_cluster: bool,
    pub progress: crate::progress::Mode,
}

/// A shrink in progress: where it writes, its cluster, its clock.
struct Session {
    job: Job,
    out: PathBuf,
    class: FailureClass,
    /// How the original run ended.
    original: Status,
    seed: u64,
    image: Option<String>,
    external: Option<ClusterSpec>,
    kept: Option<KeptCluster>,
    started: Instant,
    log: Vec<LogLine>,
    /// The latest run that failed the same way (the best candidate's, relative to `out`).
    failing_run: Option<String>,
}

/// The shrink directory of a run.
pub fn out_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("shrink")
}

/// Shrink the run; returns the summary (also written) once the search ends, the budget runs
/// out or Ctrl-C stops it.
pub async fn shrink(job: Job) -> Result<Summary> {
    let dir = RunDir::open(&job.run_dir)?;
    let info: RunInfo = dir.read_json("run.json")?;
    let verdict: Verdict = dir.read_json("verdict.json")?;
    let plan: Plan = dir.read_json("plan.json")?;
    let class = FailureClass::of(&verdict).ok_or_else(|| {
        Error::Usage(format!(
            "{}: the run ended {}, with no failure to preserve; shrink takes a run that ended with a violation, a stall or a stuck read",
            job.run_dir.display(),
            verdict.status
        ))
    })?;
    let path = dir.file("scenario.yaml");
    let text =
        std::fs::read_to_string(&path).map_err(Error::io(format!("read {}", path.display())))?;
    let file = scenario::parse_file(&path.display().to_string(), &text)?;
    let pinned = pin(&file, &plan);
    let out = out_dir(&job.run_dir);
    if out.join("log.jsonl").exists() {
        return Err(Error::Usage(format!(
            "{} holds a shrink already; move it away to shrink again",
            out.display()
        )));
    }
    std::fs::create_dir_all(&out).map_err(Error::io(format!("create {}", out.display())))?;
    let mut shrinker = Shrinker::new(pinned.clone(), info.seed)
        .map_err(|e| Error::Usage(format!("the pinned scenario: {e}")))?;
    let s = scenario::parse("pinned", &to_yaml(&pinned))?;
    let (kept, external) = match &s.cluster {
        ClusterSpec::Docker(spec) if info.topology != "external" => (
            Some(KeptCluster::new(
                spec,
                info.image.as_deref(),
                &format!("{}s", info.run_id),
                job.keep_cluster,
            )),
            None,
        ),
        _ => (
            None,
            Some(s.cluster.at_urls(&info.service_url, &info.admin_url)),
        ),
    };
    crate::errln!(
        "shrinking run {} (seed {}): preserving {class}; {} fault firing(s), {} tries per candidate, budget {}",
        info.run_id,
        info.seed,
        shrinker.original_size().faults,
        job.times,
        humantime::format_duration(job.budget)
    );
    let mut session = Session {
        job,
        out,
        class,
        original: verdict.status,
        seed: info.seed,
        image: info.image.clone(),
        external,
        kept,
        started: Instant::now(),
        log: Vec::new(),
        failing_run: None,
    };
    let result = session.search(&mut shrinker, &pinned).await;
    let summary = session.finish(&shrinker, &info, result.is_ok()).await;
    if let Some(k) = &mut session.kept {
        k.finish().await;
    }
    result?;
    Ok(summary)
}

impl Session {
    fn time_left(&self) -> Duration {
        self.job.budget.saturating_sub(self.started.elapsed())
    }

    fn stopped(&self) -> bool {
        crate::lifecycle::is_stopping() || self.time_left().is_zero()
    }

    /// The pinned original first, then every candidate until the search, the budget or Ctrl-C
    /// ends.
    async fn search(&mut self, shrinker: &mut Shrinker, pinned: &ScenarioFile) -> Result<()> {
        let original = shrinker.original_size();
        let fails = self
            .candidate(0, "original", "the pinned original", pinned, original)
            .await?;
        self.write_minimal(pinned)?;
        if !fails {
            crate::errln!(
                "shrink: the pinned original did not fail as the run did in {} tries; nothing to shrink",
                self.job.times
            );
            return Ok(());
        }
        while let Some(c) = shrinker.next_candidate() {
            if self.stopped() {
                break;
            }
            crate::errln!(
                "shrink: candidate {} ({}: {}); best so far: {}; {} left",
                c.id,
                c.phase,
                c.description,
                shrinker.best_size(),
                humantime::format_duration(Duration::from_secs(self.time_left().as_secs()))
            );
            let phase = c.phase.to_string();
            let fails = self
                .candidate(c.id, &phase, &c.description, &c.scenario, c.size)
                .await?;
            if self.stopped() && !fails {
                // Stopped mid-candidate (Ctrl-C, or the budget between tries): tries cut
                // short say nothing about it.
                break;
            }
            shrinker
                .report(c.id, fails)
                .map_err(|e| Error::Usage(e.to_string()))?;
            if let Some(last) = self.log.last_mut() {
                last.best = shrinker.best_size();
            }
            self.append_log()?;
            if fails {
                self.write_minimal(shrinker.best())?;
            }
        }
        Ok(())
    }

    /// Write the candidate, try it up to K times; true when a try failed the original's way.
    async fn candidate(
        &mut self,
        id: u32,
        phase: &str,
        description: &str,
        file: &ScenarioFile,
        size: Size,
    ) -> Result<bool> {
        let cdir = self.out.join(format!("{id:03}"));
        std::fs::create_dir_all(&cdir).map_err(Error::io(format!("create {}", cdir.display())))?;
        let yaml = to_yaml(file);
        let path = cdir.join("scenario.yaml");
        std::fs::write(&path, &yaml).map_err(Error::io(format!("write {}", path.display())))?;
        let mut s = scenario::parse(&path.display().to_string(), &yaml)?;
        s.workload.unique_topic = true;
        if let Some(e) = &self.external {
            s.cluster = e.clone();
        }
        let mut tries = Vec::new();
        let mut fails = false;
        for _ in 0..self.job.times {
            if self.stopped() && !(id == 0 && tries.is_empty()) {
                break;
            }
            let t = self.try_once(&s, &path, &cdir).await?;
            fails = t.same;
            if let (true, Some(d)) = (t.same, &t.run_dir) {
                self.failing_run = Some(d.clone());
            }
            tries.push(t);
            if fails {
                break;
            }
        }
        self.log.push(LogLine {
            id,
            phase: phase.to_string(),
            description: description.to_string(),
            size,
            tries,
            still_fails: fails,
            best: size,
            at_s: self.started.elapsed().as_secs_f64(),
        });
        if id == 0 {
            self.append_log()?;
        }
        Ok(fails)
    }

    /// One ordinary run of the candidate on the kept cluster (re-created when broken).
    async fn try_once(
        &mut self,
        s: &crate::scenario::Scenario,
        path: &Path,
        cdir: &Path,
    ) -> Result<Try> {
        let t = Instant::now();
        let reuse = match &mut self.kept {
            Some(k) => Some(Reuse {
                cluster: k.ensure().await?,
            }),
            None => None,
        };
        let req = Request {
            scenario: s.clone(),
            scenario_path: Some(path.to_path_buf()),
            seed: self.seed,
            out: cdir.to_path_buf(),
            keep_cluster: false,
            image: self.image.clone(),
            progress: self.job.progress,
            json: false,
            reuse,
            announce_reproduce: true,
        };
        let rel = |p: &Path| p.strip_prefix(&self.out).unwrap_or(p).display().to_string();
        Ok(match runner::run(req).await {
            Ok(o) => {
                let got = FailureClass::of(&o.verdict);
                let same = got.as_ref().is_some_and(|g| self.class.matches(g));
                crate::errln!(
                    "shrink:   try: {}{}",
                    o.verdict.status,
                    match (&got, same) {
                        (Some(_), true) => " (the same failure)".to_string(),
                        (Some(g), false) => format!(" (another failure: {g})"),
                        (None, _) => String::new(),
                    }
                );
                Try {
                    status: o.verdict.status.to_string(),
                    class: got.map(|g| g.to_string()),
                    same,
                    seconds: t.elapsed().as_secs_f64(),
                    run_dir: Some(rel(&o.run_dir)),
                    summary: o.verdict.summary.clone(),
                }
            }
            Err(Error::Interrupted) => Try {
                status: "interrupted".into(),
                class: None,
                same: false,
                seconds: t.elapsed().as_secs_f64(),
                run_dir: None,
                summary: "interrupted".into(),
            },
            Err(e) => {
                crate::errln!("shrink:   try could not run: {e}");
                Try {
                    status: "error".into(),
                    class: None,
                    same: false,
                    seconds: t.elapsed().as_secs_f64(),
                    run_dir: None,
                    summary: e.to_string(),
                }
            }
        })
    }

    fn append_log(&self) -> Result<()> {
        use std::io::Write as _;
        let Some(last) = self.log.last() else {
            return Ok(());
        };
        let path = self.out.join("log.jsonl");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(Error::io(format!("open {}", path.display())))?;
        let line = serde_json::to_string(last).expect("log lines serialize") + "\n";
        f.write_all(line.as_bytes())
            .map_err(Error::io(format!("write {}", path.display())))
    }

    fn write_minimal(&self, best: &ScenarioFile) -> Result<()> {
        let path = self.out.join("minimal.yaml");
        let text = format!(
            "# The smallest schedule found so far that still fails as the original did ({}).\n# Reproduce: pulsar-chaos run {}\n{}",
            self.class,
            path.display(),
            to_yaml(best)
        );
        std::fs::write(&path, text).map_err(Error::io(format!("write {}", path.display())))
    }

    /// The minimal scenario's reproduction rate over K fresh tries (when time is left), then
    /// `summary.json` and `report.html`.
    async fn finish(&mut self, shrinker: &Shrinker, info: &RunInfo, ok: bool) -> Summary {
        let reproduced = self.log.first().is_some_and(|l| l.still_fails);
        let complete = ok && shrinker.is_done();
        let mut rate = None;
        if reproduced && !self.stopped() {
            rate = self.rate(shrinker.best()).await;
        }
        let minimal = self.out.join("minimal.yaml");
        let summary = Summary {
            original_run: self.job.run_dir.display().to_string(),
            original_status: self.original,
            seed: self.seed,
            preserving: self.class.to_string(),
            times: self.job.times,
            budget_s: self.job.budget.as_secs(),
            elapsed_s: self.started.elapsed().as_secs_f64(),
            candidates: shrinker.proposed(),
            original: shrinker.original_size(),
            minimal: shrinker.best_size(),
            complete,
            interrupted: crate::lifecycle::is_stopping(),
            reproduced,
            rate,
            minimal_run: self.failing_run.clone(),
            reproduce: format!("pulsar-chaos run {}", minimal.display()),
        };
        let text = serde_json::to_string_pretty(&summary).expect("summaries serialize") + "\n";
        if let Err(e) = std::fs::write(self.out.join("summary.json"), text) {
            crate::errln!("shrink: could not write summary.json: {e}");
        }
        if let Err(e) =
            crate::report::write_shrink(&self.out, &self.job.run_dir, info, &summary, &self.log)
        {
            crate::errln!("shrink: could not write report.html: {e}");
        }
        summary
    }

    /// K fresh tries of the minimal scenario, each counted (not stopping at the first failure).
    async fn rate(&mut self, best: &ScenarioFile) -> Option<(u32, u32)> {
        let rdir = self.out.join("rate");
        let path = self.out.join("minimal.yaml");
        let yaml = to_yaml(best);
        let mut s = scenario::parse(&path.display().to_string(), &yaml).ok()?;
        s.workload.unique_topic = true;
        if let Some(e) = &self.external {
            s.cluster = e.clone();
        }
        std::fs::create_dir_all(&rdir).ok()?;
        let (mut failed, mut tried) = (0, 0);
        for i in 1..=self.job.times {
            if crate::lifecycle::is_stopping() {
                break;
            }
            crate::errln!(
                "shrink: reproduction rate of the minimal scenario, try {i} of {}",
                self.job.times
            );
            let t = self.try_once(&s, &path, &rdir).await.ok()?;
            if t.status == "interrupted" {
                break;
            }
            tried += 1;
            if t.same {
                failed += 1;
            }
        }
        (tried > 0).then_some((failed, tried))
    }
}
