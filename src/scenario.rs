//! Scenario files: reading one from disk. The model, its validation and `parse` are the core
//! crate's (`pulsar_chaos_core::scenario`), which never touches the file system.

use std::path::Path;

pub use pulsar_chaos_core::scenario::*;

/// Read and validate a scenario file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
        file: file.clone(),
        source,
    })?;
    parse(&file, &text)
}
