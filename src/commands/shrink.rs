//! `shrink`: the arguments into a job, the job run (`crate::shrink`), the outcome printed.

use crate::cli::ShrinkArgs;
use crate::error::{Error, Result};
use crate::exit;
use crate::shrink::{self, Job, Summary};

pub async fn shrink(args: ShrinkArgs) -> Result<i32> {
    if args.times == 0 {
        return Err(Error::Usage("--times must be at least 1".into()));
    }
    let job = Job {
        run_dir: args.run_dir.clone(),
        times: args.times,
        budget: args.budget,
        keep_cluster: args.keep_cluster,
        progress: args.progress.into(),
    };
    let s = shrink::shrink(job).await?;
    crate::out!("{}", text(&s));
    crate::outln!(
        "shrink directory: {} (minimal.yaml, log.jsonl, report.html)",
        shrink::out_dir(&args.run_dir).display()
    );
    if s.interrupted {
        return Err(Error::Interrupted);
    }
    Ok(if s.reproduced {
        super::run::status_code(s.original_status)
    } else {
        exit::INCONCLUSIVE
    })
}

/// The outcome, for people.
pub fn text(s: &Summary) -> String {
    let mut t = format!(
        "shrink of {} (seed {}), preserving {}: {} candidate(s) in {:.0}s\n",
        s.original_run, s.seed, s.preserving, s.candidates, s.elapsed_s
    );
    if !s.reproduced {
        t.push_str(&format!(
            "  the pinned original did not fail that way in {} tries: nothing to shrink\n",
            s.times
        ));
        return t;
    }
    t.push_str(&format!(
        "  before: {}\n  after:  {}\n",
        s.original, s.minimal
    ));
    if !s.complete {
        t.push_str("  the search did not finish (budget or Ctrl-C): this may not be minimal\n");
    }
    match s.rate {
        Some((x, k)) => t.push_str(&format!("  reproduction rate: {x} of {k} fresh tries\n")),
        None => t.push_str("  reproduction rate: not measured (no time left)\n"),
    }
    t.push_str(&format!("reproduce with: {}\n", s.reproduce));
    t
}
