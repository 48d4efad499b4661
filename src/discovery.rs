//! Discovery over the admin API, for any cluster: its brokers (`/admin/v2/brokers/<cluster>`),
//! its bookies (`/admin/v2/bookies/all`), a topic's owner and a transaction coordinator's
//! owner (lookups), each named by the adapter (`Adapter::node_name`), so every target kind
//! resolves to a node name and an address on a cluster the harness did not start. ZooKeeper
//! nodes come from the adapter file (the admin API does not list them).

use crate::adapter::{host_of, Adapter, NodeRole};
use crate::admin::{Admin, AdminError};
use crate::plan::PlannedTarget;
use crate::txn::coordinator::TC_ASSIGN_TOPIC;

#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("{0}")]
    Admin(#[from] AdminError),
    #[error("{0}")]
    Cluster(String),
    #[error("cannot resolve the target {target}: {reason}")]
    Target { target: String, reason: String },
}

/// One node found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Found {
    pub role: NodeRole,
    /// 1-based, in the order of the sorted addresses (`broker-2` is the second).
    pub index: u32,
    /// The name commands use (`{node}`).
    pub name: String,
    /// `host:port` as the admin API gives it (`{address}`): a broker's web service address, a
    /// bookie's id; a ZooKeeper node's name.
    pub address: String,
}

impl Found {
    /// "broker-2 pulsar-broker-1 (10.0.0.5:8080)".
    pub fn label(&self) -> String {
        if self.name == host_of(&self.address) || self.name == self.address {
            format!("{}-{} {}", self.role, self.index, self.address)
        } else {
            format!(
                "{}-{} {} ({})",
                self.role, self.index, self.name, self.address
            )
        }
    }
}

/// The nodes of a cluster, as its admin API lists them now.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Nodes {
    pub cluster: String,
    pub brokers: Vec<Found>,
    pub bookies: Vec<Found>,
    pub zookeepers: Vec<Found>,
}

/// The cluster's name: the adapter's, else the only one the admin API lists (`global` aside).
async fn cluster_name(admin: &Admin, adapter: &Adapter) -> Result<String, DiscoveryError> {
    let listed = admin.clusters().await?;
    if let Some(c) = &adapter.cluster {
        if !listed.contains(c) {
            return Err(DiscoveryError::Cluster(format!(
                "the adapter names cluster `{c}`; the admin API lists {listed:?}"
            )));
        }
        return Ok(c.clone());
    }
    let real: Vec<&String> = listed.iter().filter(|c| *c != "global").collect();
    match real.as_slice() {
        [one] => Ok((*one).clone()),
        _ => Err(DiscoveryError::Cluster(format!(
            "the admin API lists the clusters {listed:?}; name one with `cluster:` in the adapter file"
        ))),
    }
}

/// Everything the admin API lists, named by the adapter.
pub async fn discover(admin: &Admin, adapter: &Adapter) -> Result<Nodes, DiscoveryError> {
    let cluster = cluster_name(admin, adapter).await?;
    let found = |role: NodeRole, mut addresses: Vec<String>| {
        addresses.sort();
        addresses.dedup();
        addresses
            .into_iter()
            .enumerate()
            .map(|(i, address)| Found {
                role,
                index: i as u32 + 1,
                name: adapter.node_name(&address),
                address,
            })
            .collect::<Vec<_>>()
    };
    let brokers = found(NodeRole::Broker, admin.active_brokers(&cluster).await?);
    let bookies = found(NodeRole::Bookie, admin.bookies().await.unwrap_or_default());
    let zookeepers = adapter
        .zookeepers
        .iter()
        .enumerate()
        .map(|(i, z)| Found {
            role: NodeRole::Zookeeper,
            index: i as u32 + 1,
            name: z.clone(),
            address: z.clone(),
        })
        .collect();
    Ok(Nodes {
        cluster,
        brokers,
        bookies,
        zookeepers,
    })
}

impl Nodes {
    /// Whether the cluster has at least the nodes the plan draws from; the first shortfall.
    pub fn covers(&self, brokers: u32, bookies: u32, needs_bookies: bool) -> Result<(), String> {
        if (self.brokers.len() as u32) < brokers {
            return Err(format!(
                "the scenario draws from {brokers} broker(s); the admin API lists {} in cluster `{}`: {}",
                self.brokers.len(),
                self.cluster,
                self.brokers.iter().map(|b| b.address.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
        if needs_bookies && (self.bookies.len() as u32) < bookies {
            return Err(format!(
                "the scenario draws from {bookies} bookie(s); the admin API lists {}",
                self.bookies.len()
            ));
        }
        Ok(())
    }

    /// The broker whose host is the host of `url` (a lookup's `pulsar://` or `http://` URL).
    fn broker_at(&self, url: &str, adapter: &Adapter) -> Found {
        let host = host_of(url);
        let hostport = url
            .split_once("://")
            .map_or(url, |(_, r)| r)
            .trim_end_matches('/');
        self.brokers
            .iter()
            .find(|b| b.address == hostport)
            .or_else(|| self.brokers.iter().find(|b| host_of(&b.address) == host))
            .cloned()
            .unwrap_or_else(|| {
                let address = url
                    .split_once("://")
                    .map_or(url, |(_, r)| r)
                    .trim_end_matches('/')
                    .to_string();
                Found {
                    role: NodeRole::Broker,
                    index: 0,
                    name: adapter.node_name(&address),
                    address,
                }
            })
    }

    /// The node a planned target names now (owners are looked up at this moment), and what
    /// makes it the target, for the label.
    pub async fn resolve(
        &self,
        admin: &Admin,
        adapter: &Adapter,
        target: &PlannedTarget,
        topic: &str,
        partitions: u32,
    ) -> Result<(Found, String), DiscoveryError> {
        let err = |reason: String| DiscoveryError::Target {
            target: target.to_string(),
            reason,
        };
        let owner = |t: String, what: String| async move {
            let l = admin.lookup(&t).await.map_err(|e| err(e.to_string()))?;
            let url = if l.http_url.is_empty() {
                l.broker_url
            } else {
                l.http_url
            };
            Ok::<_, DiscoveryError>((self.broker_at(&url, adapter), what))
        };
        let nth = |list: &[Found], i: u32, what: &str| {
            list.get(i.saturating_sub(1) as usize)
                .cloned()
                .map(|f| (f, String::new()))
                .ok_or_else(|| err(format!("the cluster lists {} {what}(s)", list.len())))
        };
        match target {
            PlannedTarget::Broker { index } => nth(&self.brokers, *index, "broker"),
            PlannedTarget::Bookie { index } => nth(&self.bookies, *index, "bookie"),
            PlannedTarget::Zookeeper => nth(&self.zookeepers, 1, "zookeeper"),
            PlannedTarget::OwnerOfTopic { partition } => {
                let t = match partition {
                    Some(p) if partitions > 1 => format!("{topic}-partition-{p}"),
                    _ => topic.to_string(),
                };
                let what = match partition {
                    Some(p) => format!("owns partition {p} of the topic"),
                    None => "owns the topic".to_string(),
                };
                owner(t, what).await
            }
            PlannedTarget::CoordinatorOwner { coordinator } => {
                owner(
                    format!("{TC_ASSIGN_TOPIC}-partition-{coordinator}"),
                    format!("serves transaction coordinator {coordinator}"),
                )
                .await
            }
            PlannedTarget::Cluster => Err(err("the admin API is not a node".into())),
            PlannedTarget::Consumer { .. } => {
                Err(err("a transform's consumer is not a node".into()))
            }
        }
    }
}
