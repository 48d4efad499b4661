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
    let mut s = parse(&file, &text)?;
    // The environment's JVM setting overrides the file's (and is kept in the resolved copy).
    if let Ok(v) = std::env::var(Jvm::ENV) {
        let jvm = Jvm::parse(&v).map_err(|message| ScenarioError::InvalidUnlocated {
            file: file.clone(),
            message,
        })?;
        s.set_jvm(jvm);
    }
    // An adapter file is named relative to the scenario file; runs keep its absolute path.
    if let Some(a) = s.adapter.clone() {
        let p = Path::new(&a);
        if p.is_relative() {
            let base = path.parent().unwrap_or(Path::new("."));
            s.set_adapter(&crate::adapter::absolute(&base.join(p)));
        }
    }
    Ok(s)
}
