//! Everything Docker: image choice, the two topologies, labels, readiness of containers,
//! the primitives fault injectors use (stop, kill, start, pause, a command in a container's
//! network namespace), and teardown. Nothing outside this module sees bollard types.
//!
//! Every container and network carries `pulsar-chaos.managed=true` and
//! `pulsar-chaos.run=<run id>`; teardown and `clean` find what to remove by those labels only.

pub mod engine;
pub mod image;

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use engine::{
    ContainerSpec, Engine, LABEL_BINARY_PORT, LABEL_COORDINATORS, LABEL_HTTP_PORT, LABEL_IMAGE,
    LABEL_INDEX, LABEL_IP, LABEL_KEPT, LABEL_MANAGED, LABEL_ROLE, LABEL_RUN,
};

use crate::scenario::{DockerCluster, Topology};

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

/// Heap sizes for a 2-core machine, in the official `PULSAR_MEM` form.
const STANDALONE_MEM: &str = "-Xms256m -Xmx768m -XX:MaxDirectMemorySize=512m";
const BROKER_MEM: &str = "-Xms128m -Xmx256m -XX:MaxDirectMemorySize=256m";
const BOOKIE_MEM: &str = "-Xms128m -Xmx192m -XX:MaxDirectMemorySize=192m";
const ZK_MEM: &str = "-Xms64m -Xmx128m";
const GC: &str =
    "-XX:+UseG1GC -XX:MaxGCPauseMillis=10 -XX:+ParallelRefProcEnabled -XX:+PerfDisableSharedMem";
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

/// Addresses inside the run's subnet: base + offset.
fn addr(base: Ipv4Addr, offset: u32) -> String {
    Ipv4Addr::from(u32::from(base) + offset).to_string()
}

fn parse_subnet(subnet: &str) -> Option<(Ipv4Addr, u8)> {
    let (a, p) = subnet.split_once('/')?;
    Some((a.parse().ok()?, p.parse().ok()?))
}

impl Cluster {
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

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

    async fn add_node(
        &mut self,
        role: Role,
        index: u32,
        ip: Option<String>,
        cmd: Vec<String>,
        env: Vec<String>,
        publish: Vec<(u16, String, u16)>,
        kept: bool,
    ) -> Result<Node, ClusterError> {
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
        let mut env = prefixed(&[
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
        ]);
        env.push(format!("PULSAR_MEM={STANDALONE_MEM}"));
        env.push(format!("PULSAR_GC={GC}"));
        let node_spec_labels = vec![
            (bp, "127.0.0.1".to_string(), bp),
            (hp, "127.0.0.1".to_string(), hp),
        ];
        let node = self
            .add_node(
                Role::Standalone,
                1,
                None,
                pulsar_cmd("standalone.conf", "standalone -nfw -nss"),
                env,
                node_spec_labels,
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
        let zk_ip = addr(base, 10);
        let mut env = vec![format!("PULSAR_MEM={ZK_MEM}"), format!("PULSAR_GC={GC}")];
        env.extend(prefixed(&[("clientPort", "2181".into())]));
        let zk = self
            .add_node(
                Role::Zookeeper,
                1,
                Some(zk_ip.clone()),
                pulsar_cmd("zookeeper.conf", "zookeeper"),
                env,
                vec![],
                kept,
            )
            .await?;
        self.engine.start(&zk.id).await?;
        self.wait_until(deadline, &zk, "ZooKeeper answers ruok", || {
            let ip = zk_ip.clone();
            async move { zk_ruok(&ip).await }
        })
        .await?;

        // Cluster metadata (a job that exits).
        let broker_ips: Vec<String> = (1..=spec.brokers).map(|i| addr(base, 30 + i)).collect();
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
                Role::Init,
                1,
                Some(addr(base, 11)),
                init_cmd,
                vec![format!("PULSAR_GC={GC}")],
                vec![],
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

        for i in 1..=spec.bookies {
            let ip = addr(base, 20 + i);
            let mut env = vec![
                format!("PULSAR_MEM={BOOKIE_MEM}"),
                format!("BOOKIE_MEM={BOOKIE_MEM}"),
                format!("PULSAR_GC={GC}"),
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
                    Role::Bookie,
                    i,
                    Some(ip),
                    pulsar_cmd("bookkeeper.conf", "bookie"),
                    env,
                    vec![],
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

        let ensemble = spec.bookies.min(2);
        for (i, ip) in (1..=spec.brokers).zip(broker_ips.iter()) {
            let mut env = vec![
                format!("PULSAR_MEM={BROKER_MEM}"),
                format!("PULSAR_GC={GC}"),
            ];
            env.extend(prefixed(&[
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
            ]));
            let node = self
                .add_node(
                    Role::Broker,
                    i,
                    Some(ip.clone()),
                    pulsar_cmd("broker.conf", "broker"),
                    env,
                    vec![],
                    kept,
                )
                .await?;
            self.engine.start(&node.id).await?;
        }
        self.service_url = format!("pulsar://{}:6650", broker_ips[0]);
        self.admin_url = format!("http://{}:8080", broker_ips[0]);
        Ok(())
    }

    /// Poll `cond` until it holds or the deadline passes; the error carries the node's log.
    pub async fn wait_until<F, Fut>(
        &self,
        deadline: Instant,
        node: &Node,
        what: &str,
        mut cond: F,
    ) -> Result<(), ClusterError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let started = Instant::now();
        let mut delay = Duration::from_millis(100);
        loop {
            if cond().await {
                return Ok(());
            }
            if let Some(st) = self.engine.state(&node.id).await? {
                if !st.running && !st.paused && st.status != "created" && st.status != "restarting"
                {
                    let logs = self.engine.logs_tail(&node.id, 40).await;
                    return Err(ClusterError::NotReady {
                        what: format!(
                            "{} exited (code {:?}) before {what}",
                            node.label(),
                            st.exit_code
                        ),
                        timeout_s: deadline.saturating_duration_since(started).as_secs()
                            + started.elapsed().as_secs(),
                        logs: format!("--- {} ---\n{logs}", node.name),
                    });
                }
            }
            if Instant::now() >= deadline {
                return Err(ClusterError::NotReady {
                    what: format!("{}: {what}", node.label()),
                    timeout_s: deadline.saturating_duration_since(started).as_secs(),
                    logs: self.logs_of_all(30).await,
                });
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(1));
        }
    }

    /// The last `lines` lines of every container, for error messages.
    pub async fn logs_of_all(&self, lines: usize) -> String {
        let mut out = String::new();
        for n in &self.nodes {
            if n.role == Role::Init || n.role == Role::Sidecar {
                continue;
            }
            let logs = self.engine.logs_tail(&n.id, lines).await;
            out.push_str(&format!(
                "--- last {lines} lines of {} ---\n{logs}\n",
                n.name
            ));
        }
        out
    }

    /// The log of every Pulsar container (not the init or sidecar ones) from `since_unix_s`
    /// on: (role, name, log).
    pub async fn logs_since(&self, since_unix_s: i32) -> Vec<(Role, String, String)> {
        let mut out = Vec::new();
        for n in &self.nodes {
            if n.role == Role::Init || n.role == Role::Sidecar {
                continue;
            }
            let log = self.engine.logs_since(&n.id, since_unix_s).await;
            out.push((n.role, n.label(), log));
        }
        out
    }

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

    // ---- primitives for the fault injectors ----

    /// Graceful stop: SIGTERM, SIGKILL after `timeout`.
    pub async fn stop(&self, node: &Node, timeout: Duration) -> Result<(), ClusterError> {
        self.engine.stop(&node.id, timeout).await
    }

    pub async fn kill(&self, node: &Node) -> Result<(), ClusterError> {
        self.engine.kill(&node.id).await
    }

    /// The host PID of a running container's main process (None when not running, or when
    /// the engine is not on this host).
    pub async fn host_pid(&self, node: &Node) -> Option<i64> {
        if std::env::var("DOCKER_HOST")
            .map(|h| !h.starts_with("unix://"))
            .unwrap_or(false)
        {
            return None;
        }
        self.engine.pid(&node.id).await.ok().flatten()
    }

    /// SIGKILL a container's main process directly (microseconds, where `docker kill` takes
    /// hundreds of milliseconds): the container exits as with `docker kill`. Falls back to the
    /// engine when the signal cannot be sent.
    pub async fn kill_now(
        &self,
        node: &Node,
        pid: Option<i64>,
    ) -> Result<&'static str, ClusterError> {
        let pid = pid
            .filter(|p| *p > 1)
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw);
        if let Some(pid) = pid {
            if rustix::process::kill_process(pid, rustix::process::Signal::KILL).is_ok() {
                return Ok("kill(2)");
            }
        }
        self.engine.kill(&node.id).await.map(|_| "docker kill")
    }

    pub async fn start(&self, node: &Node) -> Result<(), ClusterError> {
        self.engine.start(&node.id).await
    }

    /// Wait until Docker no longer reports the container running. After `kill_now` the process
    /// is gone at once but the engine notices a little later; a `start` before then is a
    /// no-op (the container still counts as running) and the container then stays exited.
    pub async fn wait_not_running(
        &self,
        node: &Node,
        timeout: Duration,
    ) -> Result<(), ClusterError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match self.engine.state(&node.id).await? {
                Some(s) if s.running => {}
                _ => return Ok(()),
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ClusterError::Docker {
                    op: format!("wait for {} to stop", node.name),
                    message: format!("still running after {}s", timeout.as_secs()),
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn pause(&self, node: &Node) -> Result<(), ClusterError> {
        self.engine.pause(&node.id).await
    }

    pub async fn unpause(&self, node: &Node) -> Result<(), ClusterError> {
        self.engine.unpause(&node.id).await
    }

    pub async fn is_running(&self, node: &Node) -> Result<bool, ClusterError> {
        Ok(self
            .engine
            .state(&node.id)
            .await?
            .map(|s| s.running && !s.paused)
            .unwrap_or(false))
    }

    pub async fn is_paused(&self, node: &Node) -> Result<bool, ClusterError> {
        Ok(self
            .engine
            .state(&node.id)
            .await?
            .map(|s| s.paused)
            .unwrap_or(false))
    }

    /// Restart: graceful stop or kill, then start.
    pub async fn restart(&self, node: &Node, kill: bool) -> Result<(), ClusterError> {
        if kill {
            self.kill(node).await?;
        } else {
            self.stop(node, STOP_TIMEOUT).await?;
        }
        self.start(node).await
    }

    /// Run `script` with `sh -c` as root with NET_ADMIN in `node`'s network namespace, in a
    /// short-lived sidecar container of `tools_image` (it needs tc and nft). Returns the exit
    /// code and the output.
    pub async fn exec_in_netns(
        &self,
        node: &Node,
        tools_image: &str,
        script: &str,
    ) -> Result<(i64, String), ClusterError> {
        exec_in_netns(
            &self.engine,
            &self.run_id,
            &node.id,
            &node.label(),
            tools_image,
            script,
        )
        .await
    }

    /// Remove everything of this run.
    pub async fn down(&self) -> Result<Removed, ClusterError> {
        remove_run(&self.engine, &self.run_id).await
    }

    /// Memory used by each container now (bytes), for reports.
    pub async fn memory_usage(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for n in &self.nodes {
            if let Ok(Some(b)) = self.engine.memory_usage(&n.id).await {
                out.push((n.label(), b));
            }
        }
        out
    }
}

/// What a removal removed.
#[derive(Debug, Default, Clone)]
pub struct Removed {
    pub containers: Vec<String>,
    pub networks: Vec<String>,
    pub volumes: Vec<String>,
}

impl Removed {
    pub fn is_empty(&self) -> bool {
        self.containers.is_empty() && self.networks.is_empty() && self.volumes.is_empty()
    }
}

/// Remove every container, network and volume labelled with `run_id`.
pub async fn remove_run(engine: &Engine, run_id: &str) -> Result<Removed, ClusterError> {
    remove_labelled(engine, &[(LABEL_MANAGED, "true"), (LABEL_RUN, run_id)]).await
}

/// Remove every container, network and volume carrying all of `labels`.
pub async fn remove_labelled(
    engine: &Engine,
    labels: &[(&str, &str)],
) -> Result<Removed, ClusterError> {
    let mut removed = Removed::default();
    let containers = engine.list_containers(labels).await?;
    // Unpause first: a paused container cannot be killed cleanly on every engine.
    for c in &containers {
        if c.state == "paused" {
            let _ = engine.unpause(&c.id).await;
        }
    }
    let results = futures::future::join_all(containers.iter().map(|c| engine.remove(&c.id))).await;
    for (c, r) in containers.iter().zip(results) {
        r?;
        removed.containers.push(c.name.clone());
    }
    for (id, name, _) in engine.list_networks(labels).await? {
        engine.remove_network(&id).await?;
        removed.networks.push(name);
    }
    for v in engine.list_volumes(labels).await? {
        engine.remove_volume(&v).await?;
        removed.volumes.push(v);
    }
    Ok(removed)
}

/// A run known to Docker by its labels.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub run_id: String,
    pub kept: bool,
    pub containers: Vec<(String, String)>,
}

/// Every run with labelled containers.
pub async fn list_runs(engine: &Engine) -> Result<Vec<RunInfo>, ClusterError> {
    let listed = engine.list_containers(&[(LABEL_MANAGED, "true")]).await?;
    let mut runs: Vec<RunInfo> = Vec::new();
    for c in listed {
        let run = c.labels.get(LABEL_RUN).cloned().unwrap_or_default();
        let kept = c
            .labels
            .get(LABEL_KEPT)
            .map(|v| v == "true")
            .unwrap_or(false);
        match runs.iter_mut().find(|r| r.run_id == run) {
            Some(r) => {
                r.kept |= kept;
                r.containers.push((c.name, c.state));
            }
            None => runs.push(RunInfo {
                run_id: run,
                kept,
                containers: vec![(c.name, c.state)],
            }),
        }
    }
    for r in runs.iter_mut() {
        r.containers.sort();
    }
    runs.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    Ok(runs)
}

/// Networks labelled as ours whose run has no container left (leftovers).
pub async fn list_networks(engine: &Engine) -> Result<Vec<String>, ClusterError> {
    Ok(engine
        .list_networks(&[(LABEL_MANAGED, "true")])
        .await?
        .into_iter()
        .map(|(_, n, _)| n)
        .collect())
}

/// Run `script` as root with NET_ADMIN in the network namespace of container `target_id`,
/// in a sidecar labelled with the run (removed afterwards).
pub async fn exec_in_netns(
    engine: &Engine,
    run_id: &str,
    target_id: &str,
    target_label: &str,
    tools_image: &str,
    script: &str,
) -> Result<(i64, String), ClusterError> {
    let name = format!(
        "pc-{run_id}-sidecar-{target_label}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros())
            .unwrap_or(0)
    );
    let mut labels = run_labels(run_id);
    labels.insert(LABEL_ROLE.into(), Role::Sidecar.as_str().into());
    let spec = ContainerSpec {
        name,
        image: tools_image.to_string(),
        cmd: vec!["sh".into(), "-c".into(), script.to_string()],
        env: vec![],
        labels,
        network: None,
        network_mode: Some(format!("container:{target_id}")),
        publish: vec![],
        cap_add: vec!["NET_ADMIN".into()],
        user: Some("0".into()),
    };
    let id = engine.create_container(&spec).await?;
    let result = async {
        engine.start(&id).await?;
        let code = engine.wait_exit(&id, Duration::from_secs(60)).await?;
        let out = engine.logs_tail(&id, 200).await;
        Ok::<_, ClusterError>((code, out))
    }
    .await;
    let _ = engine.remove(&id).await;
    result
}

/// ZooKeeper's four-letter `ruok`.
async fn zk_ruok(ip: &str) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let fut = async {
        let mut s = tokio::net::TcpStream::connect((ip, 2181)).await.ok()?;
        s.write_all(b"ruok").await.ok()?;
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).await.ok()?;
        Some(&buf == b"imok")
    };
    tokio::time::timeout(Duration::from_secs(2), fut)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// Something accepts TCP connections on ip:port.
pub async fn tcp_open(ip: &str, port: u16) -> bool {
    matches!(
        tokio::time::timeout(
            Duration::from_secs(2),
            tokio::net::TcpStream::connect((ip, port))
        )
        .await,
        Ok(Ok(_))
    )
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
}
