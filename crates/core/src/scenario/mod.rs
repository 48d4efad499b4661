//! Scenario files: YAML -> serde types (unknown keys refused) -> a validated [`Scenario`].
//!
//! Every error names the file, line and column. Nothing here touches Docker or the network.
//!
//! `kinds` holds the small closed sets both name, `file` the serde types of the file as
//! written, `model` the validated scenario,
//! `validate` the checks and defaults that turn one into the other, `resolve` the way back
//! (the resolved scenario a run directory keeps), `locate` the line and column of a path.

mod file;
mod kinds;
pub mod locate;
mod model;
mod resolve;
pub mod transform;
mod validate;

pub use file::*;
pub use kinds::*;
pub use model::*;
pub use transform::{ConflictProbe, SubscriptionType, Transform, TransformFunction, WorkloadKind};
pub use validate::{
    check_broker_setting, validate, DEFAULT_COMMITS_IN_FLIGHT, HARNESS_BROKER_SETTINGS,
};

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
    serde_yaml_ng::from_str(text).map_err(|e| {
        let message = in_users_words(&strip_location(&e.to_string()));
        // Inside a fault, serde has buffered the item to read its `kind` first and reports
        // only `faults` at the list's start: find the item and the key itself.
        if let Some((path, inner)) = within_a_fault(text, &message) {
            if let Some((line, column)) = Locations::index(text).find(&path) {
                return ScenarioError::Invalid {
                    file: file.to_string(),
                    line,
                    column,
                    message: format!("{}: {inner}", path_to_string(&path)),
                };
            }
        }
        match e.location() {
            Some(loc) => ScenarioError::Invalid {
                file: file.to_string(),
                line: loc.line(),
                column: loc.column(),
                message,
            },
            None => ScenarioError::InvalidUnlocated {
                file: file.to_string(),
                message,
            },
        }
    })
}

/// serde's words for an enum's value ("unknown variant") in the words of a scenario file.
fn in_users_words(message: &str) -> String {
    message.replace("unknown variant `", "unknown value `")
}

/// For an error serde located only at `faults`: the path of the key in the first fault that
/// does not read (`faults[1].duration`, or `faults[1]` when no key is to blame), and the
/// error's own message.
fn within_a_fault(text: &str, message: &str) -> Option<(locate::Path, String)> {
    use locate::Seg;
    if !message.starts_with("faults: ") {
        return None;
    }
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).ok()?;
    let items = doc.get("faults")?.as_sequence()?;
    let (i, e) = items.iter().enumerate().find_map(|(i, item)| {
        serde_yaml_ng::from_value::<FaultFile>(item.clone())
            .err()
            .map(|e| (i, e))
    })?;
    let inner = in_users_words(&strip_location(&e.to_string()));
    let mut path = vec![Seg::Key("faults".into()), Seg::Index(i)];
    // The key or value the message quotes first: `wat` of "unknown field `wat`", `5` of
    // "a duration needs a unit ... `5`".
    if let Some(quoted) = inner.split('`').nth(1) {
        if inner.starts_with("unknown field `") {
            path.push(Seg::Key(quoted.to_string()));
        } else {
            let holding = Locations::index(text).holding(&path, quoted);
            if let [one] = holding.as_slice() {
                path = one.clone();
            }
        }
    }
    Some((path, inner))
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
