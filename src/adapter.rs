//! Adapter files: reading one from disk. The model, its validation, the templates and the
//! check against a scenario are the core crate's (`pulsar_chaos_core::adapter`).

use std::path::Path;

pub use pulsar_chaos_core::adapter::*;

/// Read and validate an adapter file.
pub fn load(path: &Path) -> Result<Adapter, AdapterError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| AdapterError::Read {
        file: file.clone(),
        source,
    })?;
    parse(&file, &text)
}

/// The absolute form of an adapter path (what the fault journal records, so `clean --adapter`
/// finds the changes of that file from any directory).
pub fn absolute(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}
