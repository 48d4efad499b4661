//! Scenario files: YAML -> serde types (unknown keys refused) -> a validated [`Scenario`].
//!
//! Every error names the file, line and column. Nothing here touches Docker or the network.
//!
//! `file` holds the serde types of the file as written, `model` the validated scenario,
//! `validate` the checks and defaults that turn one into the other, `resolve` the way back
//! (the resolved scenario a run directory keeps), `locate` the line and column of a path.

mod file;
pub mod locate;
mod model;
mod resolve;
pub mod transform;
mod validate;

pub use file::*;
pub use model::*;
pub use transform::{SubscriptionType, Transform, TransformFunction, WorkloadKind};
pub use validate::{validate, DEFAULT_COMMITS_IN_FLIGHT};

use locate::{path_to_string, Locations};

/// Errors of reading or validating a scenario. Each is one paragraph a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{file}: cannot read the scenario file: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}:{line}:{column}: {message}")]
    Invalid {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{file}: {message}")]
    InvalidUnlocated { file: String, message: String },
}

/// Parse and validate scenario text; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    let raw = parse_file(file, text)?;
    let locations = Locations::index(text);
    validate(raw).map_err(|(path, message)| match locations.find(&path) {
        Some((line, column)) => ScenarioError::Invalid {
            file: file.to_string(),
            line,
            column,
            message: format!("{}: {message}", path_to_string(&path)),
        },
        None => ScenarioError::InvalidUnlocated {
            file: file.to_string(),
            message: format!("{}: {message}", path_to_string(&path)),
        },
    })
}

/// Parse scenario text into the file's serde types, unvalidated (what `shrink` edits); `file`
/// names it in errors.
pub fn parse_file(file: &str, text: &str) -> Result<ScenarioFile, ScenarioError> {
    serde_yaml_ng::from_str(text).map_err(|e| match e.location() {
        Some(loc) => ScenarioError::Invalid {
            file: file.to_string(),
            line: loc.line(),
            column: loc.column(),
            message: strip_location(&e.to_string()),
        },
        None => ScenarioError::InvalidUnlocated {
            file: file.to_string(),
            message: e.to_string(),
        },
    })
}

/// serde_yaml_ng appends " at line L column C" to its messages; the error names it already.
pub(crate) fn strip_location(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

#[cfg(test)]
mod consumer_restart_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod transform_tests;
