//! A cluster's nodes: the cluster of a run found again by its containers' labels (for
//! `cluster status/down` and `--resume`), its brokers and the addresses the harness and the
//! clients reach them at, and its nodes by role and index.

use super::engine::{
    Engine, LABEL_BINARY_PORT, LABEL_COORDINATORS, LABEL_HTTP_PORT, LABEL_IMAGE, LABEL_INDEX,
    LABEL_IP, LABEL_MANAGED, LABEL_ROLE, LABEL_RUN,
};
use super::{Broker, Cluster, ClusterError, Node, Role};
use crate::scenario::Topology;

impl Cluster {
    /// Find the cluster of a run by its labels (for `cluster status/down`, `--resume`).
    pub async fn attach(engine: Engine, run_id: &str) -> Result<Cluster, ClusterError> {
        let listed = engine
            .list_containers(&[(LABEL_MANAGED, "true"), (LABEL_RUN, run_id)])
            .await?;
        if listed.is_empty() {
            return Err(ClusterError::NoSuchRun {
                run_id: run_id.to_string(),
            });
        }
        let mut nodes = Vec::new();
        let mut topology = Topology::Cluster;
        let mut image = String::new();
        let (mut bp, mut hp) = (6650, 8080);
        let mut coordinators = 1;
        for c in &listed {
            let Some(role) = c.labels.get(LABEL_ROLE).and_then(|r| Role::parse(r)) else {
                continue;
            };
            if role == Role::Sidecar {
                continue;
            }
            if role == Role::Standalone {
                topology = Topology::Standalone;
                bp = c
                    .labels
                    .get(LABEL_BINARY_PORT)
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(6650);
                hp = c
                    .labels
                    .get(LABEL_HTTP_PORT)
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(8080);
            }
            if image.is_empty() {
                image = c.labels.get(LABEL_IMAGE).cloned().unwrap_or_default();
            }
            if let Some(n) = c
                .labels
                .get(LABEL_COORDINATORS)
                .and_then(|n| n.parse().ok())
            {
                coordinators = n;
            }
            nodes.push(Node {
                role,
                index: c
                    .labels
                    .get(LABEL_INDEX)
                    .and_then(|i| i.parse().ok())
                    .unwrap_or(1),
                name: c.name.clone(),
                id: c.id.clone(),
                ip: c.labels.get(LABEL_IP).cloned(),
            });
        }
        nodes.sort_by_key(|n| (n.role.as_str(), n.index));
        let (service_url, admin_url) = match topology {
            Topology::Standalone => (
                format!("pulsar://127.0.0.1:{bp}"),
                format!("http://127.0.0.1:{hp}"),
            ),
            _ => {
                let b1 = nodes
                    .iter()
                    .find(|n| n.role == Role::Broker && n.index == 1)
                    .and_then(|n| n.ip.clone())
                    .unwrap_or_default();
                (format!("pulsar://{b1}:6650"), format!("http://{b1}:8080"))
            }
        };
        Ok(Cluster {
            engine,
            run_id: run_id.to_string(),
            topology,
            image,
            network: Some(format!("pc-{run_id}")),
            nodes,
            service_url,
            admin_url,
            coordinators,
            binary_port: bp,
            http_port: hp,
        })
    }

    /// The brokers, in index order. In standalone, the standalone container is broker 1.
    pub fn brokers(&self) -> Vec<Broker> {
        let mut out = Vec::new();
        for n in &self.nodes {
            match n.role {
                Role::Standalone => out.push(Broker {
                    index: 1,
                    node: n.clone(),
                    service_url: format!("pulsar://127.0.0.1:{}", self.binary_port),
                    admin_url: format!("http://127.0.0.1:{}", self.http_port),
                    advertised: format!("127.0.0.1:{}", self.binary_port),
                }),
                Role::Broker => {
                    let ip = n.ip.clone().unwrap_or_default();
                    out.push(Broker {
                        index: n.index,
                        node: n.clone(),
                        service_url: format!("pulsar://{ip}:6650"),
                        admin_url: format!("http://{ip}:8080"),
                        advertised: format!("{ip}:6650"),
                    })
                }
                _ => {}
            }
        }
        out.sort_by_key(|b| b.index);
        out
    }

    pub fn broker(&self, index: u32) -> Option<Broker> {
        self.brokers().into_iter().find(|b| b.index == index)
    }

    /// The broker whose advertised address is in `url` (a lookup result).
    pub fn broker_by_url(&self, url: &str) -> Option<Broker> {
        let hostport = url
            .trim_start_matches("pulsar://")
            .trim_start_matches("http://")
            .trim_end_matches('/');
        let host = hostport.split(':').next().unwrap_or(hostport);
        self.brokers().into_iter().find(|b| {
            b.advertised == hostport
                || b.advertised.split(':').next() == Some(host)
                    && self.topology == Topology::Cluster
                || b.admin_url.trim_start_matches("http://") == hostport
        })
    }

    pub fn node(&self, role: Role, index: u32) -> Option<&Node> {
        self.nodes
            .iter()
            .find(|n| n.role == role && n.index == index)
    }

    pub fn nodes_of(&self, role: Role) -> Vec<&Node> {
        self.nodes.iter().filter(|n| n.role == role).collect()
    }
}
