//! What a shrink records, as data: every candidate and its tries (a line of `log.jsonl`),
//! and what the shrink found (`summary.json`). The root crate's `shrink` writes them and its
//! report reads them.

use serde::{Deserialize, Serialize};

use super::Size;
use crate::checker::Status;

/// One try of a candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Try {
    /// pass, violation, inconclusive, stuck, or error.
    pub status: String,
    /// Its failure class, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Whether that class matches the original's.
    pub same: bool,
    pub seconds: f64,
    /// Relative to the shrink directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_dir: Option<String>,
    pub summary: String,
}

/// One line of `log.jsonl`: a candidate and what its tries gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogLine {
    /// 0: the pinned original.
    pub id: u32,
    pub phase: String,
    pub description: String,
    pub size: Size,
    pub tries: Vec<Try>,
    pub still_fails: bool,
    /// The best size after this candidate.
    pub best: Size,
    /// Seconds since the shrink began, when this candidate was done.
    pub at_s: f64,
}

/// `summary.json`: what the shrink found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub original_run: String,
    /// How the original run ended (the shrink's exit code when the minimal case still fails).
    pub original_status: Status,
    pub seed: u64,
    /// The class preserved, in words.
    pub preserving: String,
    pub times: u32,
    pub budget_s: u64,
    pub elapsed_s: f64,
    pub candidates: u32,
    pub original: Size,
    pub minimal: Size,
    /// Whether the search ran to its end (false: the budget or Ctrl-C stopped it, so the
    /// answer may not be minimal).
    pub complete: bool,
    pub interrupted: bool,
    /// The original reproduced (pinned) at all; when not, nothing was shrunk.
    pub reproduced: bool,
    /// The minimal scenario's reproduction rate over fresh tries: (failed the same way, tries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<(u32, u32)>,
    /// A run of the minimal scenario that failed the same way (relative to `shrink/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimal_run: Option<String>,
    pub reproduce: String,
}
