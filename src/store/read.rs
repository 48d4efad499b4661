//! A finished run directory read into a [`Record`]: `run.json` (required), `scenario.yaml`
//! (its hash and Pulsar version), `verdict.json` and `producer.json` (when the run left them).

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::StoreError;
use crate::results::Record;
use crate::rundir::RunInfo;
use crate::scenario::ClusterSpec;

/// Which command ran a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Run,
    Soak,
    Matrix,
    Replay,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Run => "run",
            Source::Soak => "soak",
            Source::Matrix => "matrix",
            Source::Replay => "replay",
        }
    }
}

/// The content hash a record keeps of a run's resolved `scenario.yaml`: SHA-256, hex, the
/// first 16 digits.
pub fn scenario_hash(resolved_yaml: &[u8]) -> String {
    let hash = Sha256::digest(resolved_yaml);
    hash[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The record of a finished run directory. A missing or damaged `run.json` is an error (the
/// run's identity is in it); a run without `verdict.json` is recorded with status `none`.
pub fn read_record(run_dir: &Path, source: Source) -> Result<Record, StoreError> {
    let dir = std::path::absolute(run_dir).unwrap_or_else(|_| run_dir.to_path_buf());
    let fail = |detail: String| StoreError::RunDir {
        dir: dir.display().to_string(),
        detail,
    };
    let read = |name: &str| std::fs::read(dir.join(name));
    let info_bytes = read("run.json").map_err(|e| fail(format!("run.json: {e}")))?;
    let info: RunInfo = crate::rundir::parse_json(&dir.join("run.json"), &info_bytes)
        .map_err(|e| fail(e.to_string()))?;
    let scenario_text = read("scenario.yaml").unwrap_or_default();
    let scenario_hash = scenario_hash(&scenario_text);
    let pulsar_version = std::str::from_utf8(&scenario_text)
        .ok()
        .and_then(|t| crate::scenario::parse("scenario.yaml", t).ok())
        .map(|s| match s.cluster {
            ClusterSpec::Docker(d) => d.pulsar_version,
            ClusterSpec::External { .. } => "external".to_string(),
        })
        .unwrap_or_else(|| "unknown".to_string());
    let throughput = read("producer.json")
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("messages_per_s").and_then(|x| x.as_f64()));
    let mut r = Record {
        run_id: info.run_id,
        started_ms: info.started_ms,
        source: source.as_str().to_string(),
        scenario: info.scenario,
        scenario_hash,
        seed: info.seed,
        pulsar_version,
        image: info.image,
        client: info.client.unwrap_or_else(|| "own".to_string()),
        harness_version: env!("CARGO_PKG_VERSION").to_string(),
        status: "none".to_string(),
        causes: Vec::new(),
        expected: info.messages,
        received: 0,
        missing: 0,
        duplicate_values: 0,
        duplicate_copies: 0,
        unexpected: 0,
        ambiguous: 0,
        throughput,
        recovery_ms: BTreeMap::new(),
        findings: Vec::new(),
        run_dir: dir.display().to_string(),
    };
    if let Ok(bytes) = read("verdict.json") {
        let v: crate::checker::Verdict =
            crate::rundir::parse_json(&dir.join("verdict.json"), &bytes)
                .map_err(|e| fail(e.to_string()))?;
        r.set_verdict(&v);
    }
    Ok(r)
}
