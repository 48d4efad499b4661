//! The top-level error of a command, and the exit code each kind maps to. Modules have their
//! own typed errors; this only gathers them.

use crate::adapter::AdapterError;
use crate::admin::AdminError;
use crate::checker::CheckerError;
use crate::cluster::ClusterError;
use crate::discovery::DiscoveryError;
use crate::exit;
use crate::history::HistoryError;
use crate::rundir::RunDirError;
use crate::scenario::ScenarioError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    #[error("{0}")]
    Adapter(#[from] AdapterError),
    #[error("{0}")]
    Usage(String),
    #[error("discovery over the admin API: {0}")]
    Discovery(#[from] DiscoveryError),
    #[error("{0}")]
    Cluster(#[from] ClusterError),
    #[error("the Pulsar admin API failed: {0}")]
    Admin(#[from] AdminError),
    #[error("{0}")]
    Pulsar(String),
    #[error("{0}")]
    History(#[from] HistoryError),
    #[error("{0}")]
    Checker(#[from] CheckerError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("interrupted; everything the run created was removed")]
    Interrupted,
    #[error("{0}")]
    Transform(#[from] crate::transform::TransformError),
    #[error("{0}")]
    Driver(#[from] crate::drivers::DriverError),
    /// A run directory that is not one or is damaged (its I/O failures are `Io`).
    #[error("{0}")]
    RunDir(RunDirError),
    #[error("{0}")]
    Store(#[from] crate::store::StoreError),
}

impl Error {
    /// The documented exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Scenario(_) | Error::Adapter(_) | Error::Usage(_) | Error::RunDir(_) => {
                exit::BAD_INPUT
            }
            Error::History(h) if h.is_damaged() => exit::BAD_INPUT,
            Error::Interrupted => exit::INTERRUPTED,
            Error::Checker(_) => exit::CHECKER_FAULT,
            Error::Store(s) => s.exit_code(),
            _ => exit::INFRASTRUCTURE,
        }
    }

    pub fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let context = context.into();
        move |source| Error::Io { context, source }
    }
}

impl From<RunDirError> for Error {
    fn from(e: RunDirError) -> Error {
        match e {
            RunDirError::Io { context, source } => Error::Io { context, source },
            other => Error::RunDir(other),
        }
    }
}

impl From<crate::readback::ReadbackError> for Error {
    fn from(e: crate::readback::ReadbackError) -> Error {
        match e {
            crate::readback::ReadbackError::Checker(c) => Error::Checker(c),
            other => Error::Pulsar(other.to_string()),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
