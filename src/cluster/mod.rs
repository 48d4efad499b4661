//! Everything Docker: image choice, the two topologies, labels, readiness of containers,
//! the primitives fault injectors use (stop, kill, start, pause, a command in a container's
//! network namespace), and teardown. Nothing outside this module sees bollard types.
//!
//! Every container and network carries `pulsar-chaos.managed=true` and
//! `pulsar-chaos.run=<run id>`; teardown and `clean` find what to remove by those labels only.
//!
//! The parts: `topology` (starting the standalone and the cluster topology, with fixed
//! addresses), `nodes` (a run's cluster found again by its labels, and its brokers and nodes
//! looked up), `readiness` (waiting for a container's condition), `node_ops` (the primitives
//! for faults), `sidecar` (a command in a container's network namespace), `supervise` (nodes that
//! exited on their own, started again unless a fault holds them down), `logs` (what the
//! containers print and use) and `cleanup` (teardown and listing by label). Only `engine`
//! imports bollard.

pub mod engine;
pub mod image;

mod cleanup;
mod logs;
mod node_ops;
mod nodes;
mod readiness;
mod sidecar;
mod supervise;
mod topology;

use std::collections::HashMap;
use std::time::Duration;

use engine::{Engine, LABEL_MANAGED, LABEL_RUN};

use crate::scenario::Topology;

pub use cleanup::{list_networks, list_runs, remove_labelled, remove_run, Removed, RunInfo};
pub use readiness::{tcp_open, zk_ruok};
pub use sidecar::exec_in_netns;
pub use supervise::{has_exited, last_lines, Exited, Holds, NodeDown};

/// Errors of the Docker side. Each renders as one paragraph a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("cannot reach the Docker engine at {endpoint}: {message}. Is dockerd running (start it with `dockerd &` or `systemctl start docker`) and may this user use its socket? Set DOCKER_HOST to use another engine.")]
    DockerUnreachable { endpoint: String, message: String },
    #[error("the Pulsar image {image} is not available: {reason}. Build the local image with `pulsar-chaos image build`, or name an image you have with --image / cluster.image.")]
    ImageMissing { image: String, reason: String },
    #[error("a port the cluster needs is already taken: {message}. Stop whatever listens there (a cluster left running? see `pulsar-chaos cluster status`), or choose other ports (cluster.binary_port / cluster.http_port, or --binary-port / --http-port).")]
    PortTaken { message: String },
    #[error("the cluster did not become ready (readiness timeout {timeout_s}s): {what}.\n{logs}")]
    NotReady {
        what: String,
        timeout_s: u64,
        logs: String,
    },
    #[error("Docker call failed: {op}: {message}")]
    Docker { op: String, message: String },
    #[error("building the image failed: {step}: {message}")]
    ImageBuild { step: String, message: String },
    #[error("no cluster with run id {run_id} is running (see `pulsar-chaos cluster status`)")]
    NoSuchRun { run_id: String },
    #[error("{0}")]
    Other(String),
}

/// What a container is in the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Standalone,
    Broker,
    Bookie,
    Zookeeper,
    Init,
    Sidecar,
}

impl Role {
    pub fn as_str(&self) -> &'static str {
        match self {
            Role::Standalone => "standalone",
            Role::Broker => "broker",
            Role::Bookie => "bookie",
            Role::Zookeeper => "zookeeper",
            Role::Init => "init",
            Role::Sidecar => "sidecar",
        }
    }

    fn parse(s: &str) -> Option<Role> {
        Some(match s {
            "standalone" => Role::Standalone,
            "broker" => Role::Broker,
            "bookie" => Role::Bookie,
            "zookeeper" => Role::Zookeeper,
            "init" => Role::Init,
            "sidecar" => Role::Sidecar,
            _ => return None,
        })
    }
}

/// One container of the cluster.
#[derive(Debug, Clone)]
pub struct Node {
    pub role: Role,
    /// 1-based for brokers and bookies, 1 otherwise.
    pub index: u32,
    pub name: String,
    pub id: String,
    /// The address on the run's network.
    pub ip: Option<String>,
}

impl Node {
    /// "broker-2", "bookie-1", "zookeeper", "standalone".
    pub fn label(&self) -> String {
        match self.role {
            Role::Broker | Role::Bookie => format!("{}-{}", self.role.as_str(), self.index),
            r => r.as_str().to_string(),
        }
    }
}

/// A broker as the harness reaches it.
#[derive(Debug, Clone)]
pub struct Broker {
    pub index: u32,
    pub node: Node,
    /// pulsar://host:port as the host reaches it.
    pub service_url: String,
    /// http://host:port as the host reaches it.
    pub admin_url: String,
    /// "host:port" the broker advertises (what lookups return).
    pub advertised: String,
}

/// A running cluster of the harness.
pub struct Cluster {
    engine: Engine,
    pub run_id: String,
    pub topology: Topology,
    pub image: String,
    pub network: Option<String>,
    pub nodes: Vec<Node>,
    pub service_url: String,
    pub admin_url: String,
    pub coordinators: u32,
    binary_port: u16,
    http_port: u16,
}

/// The cluster name inside Pulsar (cluster topology).
pub const PULSAR_CLUSTER_NAME: &str = "pulsar-chaos";
/// How long a graceful stop waits before SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(15);

fn run_labels(run_id: &str) -> HashMap<String, String> {
    let mut l = HashMap::new();
    l.insert(LABEL_MANAGED.to_string(), "true".to_string());
    l.insert(LABEL_RUN.to_string(), run_id.to_string());
    l
}

impl Cluster {
    pub fn engine(&self) -> &Engine {
        &self.engine
    }
}
