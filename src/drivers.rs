//! The official clients under the harness: a driver process per run (docs/drivers.md).
//!
//! `build` makes the driver of a client and version when first needed (cached by its inputs,
//! like the image); `process` starts it, speaks the pipelined JSON-lines protocol and turns
//! its answers into `Answer`s. What an answer *means* (committed, definitively not, or
//! ambiguous) is decided in the core crate (`clients`), never here.

mod build;
mod process;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pulsar::message::proto::TxnAction;

use crate::history::TxnId;
use crate::txn::coordinator::Coordinators;

pub use build::{build, Built, Jit};
pub use process::{tail, Answer, ConnectArgs, Driver, Hello, SubscribeArgs};

pub use crate::clients::{ClientError, ClientKind};

/// Which client and library version a run's driver is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub kind: ClientKind,
    /// The library version (Java: the `pulsar-client` version; Go: the module version).
    pub version: String,
}

impl Spec {
    /// The driver a workload asks for: `None` for the harness's own client.
    pub fn for_workload(
        kind: ClientKind,
        client_version: Option<&str>,
        broker_version: Option<&str>,
    ) -> Option<Spec> {
        match kind {
            ClientKind::Own => None,
            ClientKind::Java => Some(Spec {
                kind,
                version: crate::clients::java_version_for(client_version, broker_version),
            }),
            ClientKind::Go => Some(Spec {
                kind,
                version: crate::clients::GO_VERSION.to_string(),
            }),
        }
    }
}

impl std::fmt::Display for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind, self.version)
    }
}

/// Why a driver could not be built or started, or stopped answering.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error("cannot build the {client} driver: {message}")]
    Build { client: String, message: String },
    #[error("cannot start the {client} driver ({path}): {message}")]
    Start {
        client: String,
        path: PathBuf,
        message: String,
    },
    #[error("the {client} driver ended: {message}")]
    Gone { client: String, message: String },
    /// The driver answered `hello`, but its client could not `connect`: the workload's words
    /// (`<client> client: connect failed: <its answer>`).
    #[error("{message}")]
    Connect { message: String },
}

/// END_TXN ABORT of `txn` through the client a run's attempts use: its official client's
/// driver when it has one, else the own client's coordinators. The future owns its handles,
/// so a caller may spawn it instead of waiting (a spare's abort after a stop).
pub async fn abort_through(
    driver: Option<Arc<Driver>>,
    tcs: Arc<Coordinators>,
    txn: TxnId,
    timeout: Duration,
) -> Result<(), String> {
    match driver {
        Some(d) => d.end(txn, false, timeout).await.map_err(|a| a.to_string()),
        None => tcs
            .end_txn(txn, TxnAction::Abort)
            .await
            .map_err(|e| e.to_string()),
    }
}
