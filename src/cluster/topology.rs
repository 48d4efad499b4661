//! Starting a cluster: the run's network with a fixed subnet, the standalone topology, and
//! the cluster topology (ZooKeeper, the metadata job, bookies, brokers) at fixed addresses in
//! that subnet, each container labelled with its run, role and index; heap sizes for a
//! 2-core machine; everything created removed again when a start fails.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::Instant;

use super::engine::{
    ContainerSpec, Engine, LABEL_BINARY_PORT, LABEL_COORDINATORS, LABEL_HTTP_PORT, LABEL_IMAGE,
    LABEL_INDEX, LABEL_IP, LABEL_KEPT, LABEL_ROLE,
};
use super::readiness::{tcp_open, zk_ruok};
use super::{remove_run, run_labels, Cluster, ClusterError, Node, Role, PULSAR_CLUSTER_NAME};
use crate::scenario::{DockerCluster, Jvm, Topology};

/// Heap sizes for a 2-core machine, in the official `PULSAR_MEM` form.
const STANDALONE_MEM: &str = "-Xms256m -Xmx768m -XX:MaxDirectMemorySize=512m";
const BROKER_MEM: &str = "-Xms128m -Xmx256m -XX:MaxDirectMemorySize=256m";
const BOOKIE_MEM: &str = "-Xms128m -Xmx192m -XX:MaxDirectMemorySize=192m";
const ZK_MEM: &str = "-Xms64m -Xmx128m";
const GC: &str =
    "-XX:+UseG1GC -XX:MaxGCPauseMillis=10 -XX:+ParallelRefProcEnabled -XX:+PerfDisableSharedMem";
/// `cluster.jvm: quick`: the first JIT tier only and the serial collector (a standalone starts
/// on 12.5 s of CPU instead of 25.6 s, measured on the 4.2.4 image).
const GC_QUICK: &str = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:+PerfDisableSharedMem";

/// The `PULSAR_GC` value (collector and JIT options) for a cluster's JVMs.
fn jvm_options(jvm: Jvm) -> &'static str {
    match jvm {
        Jvm::Standard => GC,
        Jvm::Quick => GC_QUICK,
    }
}

/// The shell command that applies PULSAR_PREFIX_ settings and starts a component, the same
/// for the official image and the local one.
fn pulsar_cmd(conf: &str, component: &str) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("bin/apply-config-from-env.py conf/{conf} && exec bin/pulsar {component}"),
    ]
}

fn prefixed(kv: &[(&str, String)]) -> Vec<String> {
    kv.iter()
        .map(|(k, v)| format!("PULSAR_PREFIX_{k}={v}"))
        .collect()
}

/// A broker's settings: the harness's, then the scenario's `cluster.broker_config`, which
/// replaces a harness default of the same key (validation keeps it off the settings the harness
/// depends on), so no key is given twice.
fn broker_settings(harness: &[(&str, String)], spec: &DockerCluster) -> Vec<String> {
    let own: Vec<(&str, String)> = harness
        .iter()
        .filter(|(k, _)| !spec.broker_config.contains_key(*k))
        .cloned()
        .collect();
    let mut env = prefixed(&own);
    env.extend(
        spec.broker_config
            .iter()
            .map(|(k, v)| format!("PULSAR_PREFIX_{k}={v}")),
    );
    env
}

/// Addresses inside the run's subnet: base + offset.
fn addr(base: Ipv4Addr, offset: u32) -> String {
    Ipv4Addr::from(u32::from(base) + offset).to_string()
}

fn parse_subnet(subnet: &str) -> Option<(Ipv4Addr, u8)> {
    let (a, p) = subnet.split_once('/')?;
    Some((a.parse().ok()?, p.parse().ok()?))
}

/// One node to start: its role and index, fixed address, command, environment and published
/// ports (host address, host port).
struct NodeSpec {
    role: Role,
    index: u32,
    ip: Option<String>,
    cmd: Vec<String>,
    env: Vec<String>,
    publish: Vec<(u16, String, u16)>,
}

impl Cluster {
    /// Create and start a cluster. Containers are started; readiness of Pulsar itself is
    /// checked by [`crate::ready`]. On error, everything created so far is removed.
    pub async fn up(
        engine: Engine,
        spec: &DockerCluster,
        run_id: &str,
        image: &str,
        kept: bool,
    ) -> Result<Cluster, ClusterError> {
        let mut cluster = Cluster {
            engine,
            run_id: run_id.to_string(),
            topology: spec.topology,
            image: image.to_string(),
            network: None,
            nodes: Vec::new(),
            service_url: String::new(),
            admin_url: String::new(),
            coordinators: spec.coordinators,
            binary_port: spec.binary_port,
            http_port: spec.http_port,
        };
        let r = match spec.topology {
            Topology::Standalone => cluster.start_standalone(spec, kept).await,
            Topology::Cluster => cluster.start_cluster(spec, kept).await,
            Topology::External => Err(ClusterError::Other(
                "an external cluster is not started by the harness".into(),
            )),
        };
        if let Err(e) = r {
            let _ = remove_run(&cluster.engine, run_id).await;
            return Err(e);
        }
        Ok(cluster)
    }

    fn labels(
        &self,
        role: Role,
        index: u32,
        ip: Option<&str>,
        kept: bool,
    ) -> HashMap<String, String> {
        let mut l = run_labels(&self.run_id);
        l.insert(LABEL_ROLE.into(), role.as_str().into());
        l.insert(LABEL_INDEX.into(), index.to_string());
        if let Some(ip) = ip {
            l.insert(LABEL_IP.into(), ip.into());
        }
        if kept {
            l.insert(LABEL_KEPT.into(), "true".into());
        }
        l.insert(LABEL_IMAGE.into(), self.image.clone());
        l.insert(LABEL_COORDINATORS.into(), self.coordinators.to_string());
        if role == Role::Standalone {
            l.insert(LABEL_BINARY_PORT.into(), self.binary_port.to_string());
            l.insert(LABEL_HTTP_PORT.into(), self.http_port.to_string());
        }
        l
    }

    /// A network of the run's own with a subnet Docker picked, recreated with that subnet
    /// named explicitly so that containers can have fixed addresses (kept across restarts).
    async fn create_network(&mut self, kept: bool) -> Result<Ipv4Addr, ClusterError> {
        let name = format!("pc-{}", self.run_id);
        let mut labels = run_labels(&self.run_id);
        if kept {
            labels.insert(LABEL_KEPT.into(), "true".into());
        }
        self.engine
            .create_network(&name, None, labels.clone())
            .await?;
        self.network = Some(name.clone());
        let (subnet, gateway) = self.engine.network_subnet(&name).await?.ok_or_else(|| {
            ClusterError::Other(format!("Docker gave the network {name} no subnet"))
        })?;
        self.engine.remove_network(&name).await?;
        self.engine
            .create_network(&name, Some((&subnet, &gateway)), labels)
            .await?;
        let (base, prefix) = parse_subnet(&subnet)
            .filter(|(_, p)| *p <= 26)
            .ok_or_else(|| ClusterError::Other(format!("unexpected subnet {subnet} for {name}")))?;
        let _ = prefix;
        Ok(base)
    }

    async fn add_node(&mut self, node: NodeSpec, kept: bool) -> Result<Node, ClusterError> {
        let NodeSpec {
            role,
            index,
            ip,
            cmd,
            env,
            publish,
        } = node;
        let label = match role {
            Role::Broker | Role::Bookie => format!("{}-{index}", role.as_str()),
            r => r.as_str().to_string(),
        };
        let name = format!("pc-{}-{label}", self.run_id);
        let spec = ContainerSpec {
            name: name.clone(),
            image: self.image.clone(),
            cmd,
            env,
            labels: self.labels(role, index, ip.as_deref(), kept),
            network: self
                .network
                .clone()
                .map(|n| (n, ip.clone(), vec![label.clone()])),
            network_mode: None,
            publish,
            cap_add: Vec::new(),
            user: None,
        };
        let id = self.engine.create_container(&spec).await?;
        let node = Node {
            role,
            index,
            name,
            id,
            ip,
        };
        self.nodes.push(node.clone());
        Ok(node)
    }

    async fn start_standalone(
        &mut self,
        spec: &DockerCluster,
        kept: bool,
    ) -> Result<(), ClusterError> {
        self.create_network(kept).await?;
        let (bp, hp) = (spec.binary_port, spec.http_port);
        let mut env = broker_settings(
            &[
                ("advertisedAddress", "127.0.0.1".into()),
                ("brokerServicePort", bp.to_string()),
                ("webServicePort", hp.to_string()),
                ("transactionCoordinatorEnabled", "true".into()),
                ("systemTopicEnabled", "true".into()),
                ("brokerDeleteInactiveTopicsEnabled", "false".into()),
                ("defaultRetentionTimeInMinutes", "-1".into()),
                ("defaultRetentionSizeInMB", "-1".into()),
                ("brokerShutdownTimeoutMs", "5000".into()),
                // The standalone's bookie reads its settings from this file too. A killed
                // container keeps what was written to the OS; only a host crash would lose it.
                ("journalSyncData", "false".into()),
            ],
            spec,
        );
        env.push(format!("PULSAR_MEM={STANDALONE_MEM}"));
        env.push(format!("PULSAR_GC={}", jvm_options(spec.jvm)));
        let node_spec_labels = vec![
            (bp, "127.0.0.1".to_string(), bp),
            (hp, "127.0.0.1".to_string(), hp),
        ];
        let node = self
            .add_node(
                NodeSpec {
                    role: Role::Standalone,
                    index: 1,
                    ip: None,
                    cmd: pulsar_cmd("standalone.conf", "standalone -nfw -nss"),
                    env,
                    publish: node_spec_labels,
                },
                kept,
            )
            .await?;
        self.engine.start(&node.id).await?;
        self.service_url = format!("pulsar://127.0.0.1:{bp}");
        self.admin_url = format!("http://127.0.0.1:{hp}");
        Ok(())
    }

    async fn start_cluster(
        &mut self,
        spec: &DockerCluster,
        kept: bool,
    ) -> Result<(), ClusterError> {
        let base = self.create_network(kept).await?;
        let deadline = Instant::now() + spec.ready_timeout;
        self.start_zookeeper(spec, base, deadline, kept).await?;
        // Cluster metadata (a job that exits).
        let broker_ips: Vec<String> = (1..=spec.brokers).map(|i| addr(base, 30 + i)).collect();
        self.init_metadata(spec, base, &broker_ips, deadline, kept)
            .await?;
        self.start_bookies(spec, base, deadline, kept).await?;
        self.start_brokers(spec, &broker_ips, kept).await?;
        self.service_url = format!("pulsar://{}:6650", broker_ips[0]);
        self.admin_url = format!("http://{}:8080", broker_ips[0]);
        Ok(())
    }

    /// ZooKeeper at base + 10, started and answering `ruok`.
    async fn start_zookeeper(
        &mut self,
        spec: &DockerCluster,
        base: Ipv4Addr,
        deadline: Instant,
        kept: bool,
    ) -> Result<(), ClusterError> {
        let zk_ip = addr(base, 10);
        let mut env = vec![
            format!("PULSAR_MEM={ZK_MEM}"),
            format!("PULSAR_GC={}", jvm_options(spec.jvm)),
        ];
        env.extend(prefixed(&[("clientPort", "2181".into())]));
        let zk = self
            .add_node(
                NodeSpec {
                    role: Role::Zookeeper,
                    index: 1,
                    ip: Some(zk_ip.clone()),
                    cmd: pulsar_cmd("zookeeper.conf", "zookeeper"),
                    env,
                    publish: vec![],
                },
                kept,
            )
            .await?;
        self.engine.start(&zk.id).await?;
        self.wait_until(deadline, &zk, "ZooKeeper answers ruok", || {
            let ip = zk_ip.clone();
            async move { zk_ruok(&ip).await }
        })
        .await?;
        Ok(())
    }

    /// The one-shot `initialize-cluster-metadata` job at base + 11, run to a zero exit.
    async fn init_metadata(
        &mut self,
        spec: &DockerCluster,
        base: Ipv4Addr,
        broker_ips: &[String],
        deadline: Instant,
        kept: bool,
    ) -> Result<(), ClusterError> {
        let init_cmd = vec![
            "sh".into(),
            "-c".into(),
            format!(
                "exec bin/pulsar initialize-cluster-metadata --cluster {PULSAR_CLUSTER_NAME} \
                 --metadata-store zk:zookeeper:2181 --configuration-metadata-store zk:zookeeper:2181 \
                 --web-service-url http://{b}:8080 --broker-service-url pulsar://{b}:6650 \
                 --initial-num-transaction-coordinators {n}",
                b = broker_ips[0],
                n = spec.coordinators
            ),
        ];
        let init = self
            .add_node(
                NodeSpec {
                    role: Role::Init,
                    index: 1,
                    ip: Some(addr(base, 11)),
                    cmd: init_cmd,
                    env: vec![format!("PULSAR_GC={}", jvm_options(spec.jvm))],
                    publish: vec![],
                },
                kept,
            )
            .await?;
        self.engine.start(&init.id).await?;
        let left = deadline.saturating_duration_since(Instant::now());
        let code = self.engine.wait_exit(&init.id, left).await?;
        if code != 0 {
            let logs = self.engine.logs_tail(&init.id, 40).await;
            return Err(ClusterError::NotReady {
                what: format!("initialize-cluster-metadata exited with {code}"),
                timeout_s: spec.ready_timeout.as_secs(),
                logs: format!("--- {} ---\n{logs}", init.name),
            });
        }
        Ok(())
    }

    /// The bookies at base + 20 + i, started, then each accepting connections.
    async fn start_bookies(
        &mut self,
        spec: &DockerCluster,
        base: Ipv4Addr,
        deadline: Instant,
        kept: bool,
    ) -> Result<(), ClusterError> {
        for i in 1..=spec.bookies {
            let ip = addr(base, 20 + i);
            let mut env = vec![
                format!("PULSAR_MEM={BOOKIE_MEM}"),
                format!("BOOKIE_MEM={BOOKIE_MEM}"),
                format!("PULSAR_GC={}", jvm_options(spec.jvm)),
            ];
            env.extend(prefixed(&[
                (
                    "metadataServiceUri",
                    "metadata-store:zk:zookeeper:2181".into(),
                ),
                ("zkServers", "zookeeper:2181".into()),
                ("advertisedAddress", ip.clone()),
                ("bookiePort", "3181".into()),
                ("useHostNameAsBookieID", "false".into()),
                ("journalSyncData", "false".into()),
                ("dbStorage_writeCacheMaxSizeMb", "16".into()),
                ("dbStorage_readAheadCacheMaxSizeMb", "16".into()),
                ("diskUsageThreshold", "0.99".into()),
                ("diskUsageWarnThreshold", "0.98".into()),
                ("httpServerEnabled", "false".into()),
            ]));
            let node = self
                .add_node(
                    NodeSpec {
                        role: Role::Bookie,
                        index: i,
                        ip: Some(ip),
                        cmd: pulsar_cmd("bookkeeper.conf", "bookie"),
                        env,
                        publish: vec![],
                    },
                    kept,
                )
                .await?;
            self.engine.start(&node.id).await?;
        }
        for node in self.nodes.clone().iter().filter(|n| n.role == Role::Bookie) {
            let ip = node.ip.clone().unwrap_or_default();
            self.wait_until(
                deadline,
                node,
                "the bookie accepts connections on 3181",
                || {
                    let ip = ip.clone();
                    async move { tcp_open(&ip, 3181).await }
                },
            )
            .await?;
        }
        Ok(())
    }

    /// The brokers at `broker_ips`, started (their readiness is checked by `crate::ready`).
    async fn start_brokers(
        &mut self,
        spec: &DockerCluster,
        broker_ips: &[String],
        kept: bool,
    ) -> Result<(), ClusterError> {
        let ensemble = spec.bookies.min(2);
        for (i, ip) in (1..=spec.brokers).zip(broker_ips.iter()) {
            let mut env = vec![
                format!("PULSAR_MEM={BROKER_MEM}"),
                format!("PULSAR_GC={}", jvm_options(spec.jvm)),
            ];
            env.extend(broker_settings(
                &[
                    ("metadataStoreUrl", "zk:zookeeper:2181".into()),
                    ("configurationMetadataStoreUrl", "zk:zookeeper:2181".into()),
                    ("clusterName", PULSAR_CLUSTER_NAME.into()),
                    ("advertisedAddress", ip.clone()),
                    ("brokerServicePort", "6650".into()),
                    ("webServicePort", "8080".into()),
                    ("transactionCoordinatorEnabled", "true".into()),
                    ("systemTopicEnabled", "true".into()),
                    ("managedLedgerDefaultEnsembleSize", ensemble.to_string()),
                    ("managedLedgerDefaultWriteQuorum", ensemble.to_string()),
                    ("managedLedgerDefaultAckQuorum", ensemble.to_string()),
                    ("brokerDeleteInactiveTopicsEnabled", "false".into()),
                    ("defaultRetentionTimeInMinutes", "-1".into()),
                    ("defaultRetentionSizeInMB", "-1".into()),
                    ("loadBalancerSheddingEnabled", "false".into()),
                    ("brokerShutdownTimeoutMs", "5000".into()),
                ],
                spec,
            ));
            let node = self
                .add_node(
                    NodeSpec {
                        role: Role::Broker,
                        index: i,
                        ip: Some(ip.clone()),
                        cmd: pulsar_cmd("broker.conf", "broker"),
                        env,
                        publish: vec![],
                    },
                    kept,
                )
                .await?;
            self.engine.start(&node.id).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_in_the_subnet() {
        let (base, p) = parse_subnet("172.18.0.0/16").unwrap();
        assert_eq!(p, 16);
        assert_eq!(addr(base, 31), "172.18.0.31");
        assert_eq!(addr("10.0.0.0".parse().unwrap(), 300), "10.0.1.44");
    }

    #[test]
    fn the_command_is_the_same_for_every_image() {
        let c = pulsar_cmd("broker.conf", "broker");
        assert_eq!(
            c[2],
            "bin/apply-config-from-env.py conf/broker.conf && exec bin/pulsar broker"
        );
    }

    /// A scenario's broker setting replaces the harness's default of the same key (one
    /// PULSAR_PREFIX_ per key) and comes after the harness's others.
    #[test]
    fn a_scenario_setting_replaces_the_harness_default_of_its_key() {
        let spec = DockerCluster {
            topology: Topology::Standalone,
            image: None,
            pulsar_version: "4.2.4".into(),
            brokers: 1,
            bookies: 1,
            coordinators: 1,
            binary_port: 6650,
            http_port: 8080,
            ready_timeout: std::time::Duration::from_secs(1),
            jvm: Jvm::Quick,
            broker_config: [
                ("brokerShutdownTimeoutMs".to_string(), "9000".to_string()),
                (
                    "acknowledgmentAtBatchIndexLevelEnabled".to_string(),
                    "false".to_string(),
                ),
            ]
            .into(),
        };
        let env = broker_settings(
            &[
                ("advertisedAddress", "127.0.0.1".into()),
                ("brokerShutdownTimeoutMs", "5000".into()),
            ],
            &spec,
        );
        assert_eq!(
            env,
            [
                "PULSAR_PREFIX_advertisedAddress=127.0.0.1",
                "PULSAR_PREFIX_acknowledgmentAtBatchIndexLevelEnabled=false",
                "PULSAR_PREFIX_brokerShutdownTimeoutMs=9000",
            ]
        );
    }
}
