//! A thin wrapper over the Docker Engine API (bollard). Only this module sees bollard types;
//! every object it creates carries the project's labels.

use std::collections::HashMap;
use std::time::Duration;

use bollard::models::{
    ContainerCreateBody, EndpointIpamConfig, EndpointSettings, HostConfig, Ipam, IpamConfig,
    NetworkCreateRequest, NetworkingConfig, PortBinding,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, CreateImageOptionsBuilder, KillContainerOptionsBuilder,
    ListContainersOptionsBuilder, ListNetworksOptionsBuilder, ListVolumesOptionsBuilder,
    LogsOptionsBuilder, RemoveContainerOptionsBuilder, RemoveVolumeOptionsBuilder,
    StopContainerOptionsBuilder, WaitContainerOptionsBuilder,
};
use bollard::Docker;
use bytes::Bytes;
use futures::{Stream, StreamExt};

use super::ClusterError;

/// Every object the harness creates has this label set to "true".
pub const LABEL_MANAGED: &str = "pulsar-chaos.managed";
/// The run id of the object.
pub const LABEL_RUN: &str = "pulsar-chaos.run";
/// standalone | broker | bookie | zookeeper | init | sidecar
pub const LABEL_ROLE: &str = "pulsar-chaos.role";
/// 1-based index of a broker or bookie.
pub const LABEL_INDEX: &str = "pulsar-chaos.index";
/// The container's address on the run's network.
pub const LABEL_IP: &str = "pulsar-chaos.ip";
/// Host ports of a standalone container.
pub const LABEL_BINARY_PORT: &str = "pulsar-chaos.binary-port";
pub const LABEL_HTTP_PORT: &str = "pulsar-chaos.http-port";
/// Set on clusters started by `cluster up` or kept with `--keep-cluster`.
pub const LABEL_KEPT: &str = "pulsar-chaos.kept";
/// The image a cluster container runs.
pub const LABEL_IMAGE: &str = "pulsar-chaos.image";
/// How many transaction coordinators the cluster was set up with.
pub const LABEL_COORDINATORS: &str = "pulsar-chaos.coordinators";
/// The image inputs' hash of a locally built image.
pub const LABEL_IMAGE_INPUTS: &str = "pulsar-chaos.image-inputs";

/// A container as listed by label.
#[derive(Debug, Clone)]
pub struct Listed {
    pub id: String,
    pub name: String,
    pub state: String,
    pub labels: HashMap<String, String>,
}

/// What a container looks like now.
#[derive(Debug, Clone)]
pub struct State {
    pub running: bool,
    pub paused: bool,
    pub exit_code: Option<i64>,
    pub status: String,
    /// The kernel's OOM killer ended it.
    pub oom_killed: bool,
}

/// What to create.
#[derive(Debug, Clone, Default)]
pub struct ContainerSpec {
    pub name: String,
    pub image: String,
    pub cmd: Vec<String>,
    pub env: Vec<String>,
    pub labels: HashMap<String, String>,
    /// (network, static address, aliases)
    pub network: Option<(String, Option<String>, Vec<String>)>,
    /// Share another container's network namespace (`container:<id>`).
    pub network_mode: Option<String>,
    /// (container port, host ip, host port)
    pub publish: Vec<(u16, String, u16)>,
    pub cap_add: Vec<String>,
    pub user: Option<String>,
}

/// A connection to the Docker engine.
#[derive(Clone)]
pub struct Engine {
    docker: Docker,
}

fn docker_err(op: impl Into<String>) -> impl FnOnce(bollard::errors::Error) -> ClusterError {
    let op = op.into();
    move |e| ClusterError::Docker {
        op,
        message: describe(&e),
    }
}

/// A one-line description of a Docker error (the message the daemon gave, when it gave one).
pub fn describe(e: &bollard::errors::Error) -> String {
    match e {
        bollard::errors::Error::DockerResponseServerError {
            status_code,
            message,
        } => format!("{message} (HTTP {status_code})"),
        other => other.to_string(),
    }
}

fn is_status(e: &bollard::errors::Error, code: u16) -> bool {
    matches!(e, bollard::errors::Error::DockerResponseServerError { status_code, .. } if *status_code == code)
}

fn label_filter(labels: &[(&str, &str)]) -> HashMap<String, Vec<String>> {
    let mut f = HashMap::new();
    f.insert(
        "label".to_string(),
        labels
            .iter()
            .map(|(k, v)| {
                if v.is_empty() {
                    k.to_string()
                } else {
                    format!("{k}={v}")
                }
            })
            .collect(),
    );
    f
}

impl Engine {
    /// Connect to the local engine (DOCKER_HOST or the default socket) and agree on an API
    /// version with it.
    pub async fn connect() -> Result<Engine, ClusterError> {
        let endpoint = std::env::var("DOCKER_HOST")
            .unwrap_or_else(|_| "unix:///var/run/docker.sock".to_string());
        let docker = Docker::connect_with_defaults()
            .map_err(|e| ClusterError::DockerUnreachable {
                endpoint: endpoint.clone(),
                message: describe(&e),
            })?
            .with_timeout(Duration::from_secs(300));
        let docker =
            docker
                .negotiate_version()
                .await
                .map_err(|e| ClusterError::DockerUnreachable {
                    endpoint: endpoint.clone(),
                    message: describe(&e),
                })?;
        docker
            .ping()
            .await
            .map_err(|e| ClusterError::DockerUnreachable {
                endpoint,
                message: describe(&e),
            })?;
        Ok(Engine { docker })
    }

    pub async fn image_exists(&self, image: &str) -> Result<bool, ClusterError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => Ok(true),
            Err(e) if is_status(&e, 404) => Ok(false),
            Err(e) => Err(docker_err(format!("inspect image {image}"))(e)),
        }
    }

    /// The labels of a local image (None: no such image).
    pub async fn image_labels(
        &self,
        image: &str,
    ) -> Result<Option<HashMap<String, String>>, ClusterError> {
        match self.docker.inspect_image(image).await {
            Ok(i) => Ok(Some(i.config.and_then(|c| c.labels).unwrap_or_default())),
            Err(e) if is_status(&e, 404) => Ok(None),
            Err(e) => Err(docker_err(format!("inspect image {image}"))(e)),
        }
    }

    /// Pull an image, giving up after `timeout`. Err carries the daemon's reason.
    pub async fn pull(&self, image: &str, timeout: Duration) -> Result<(), String> {
        let (repo, tag) = split_image(image);
        let opts = CreateImageOptionsBuilder::default()
            .from_image(&repo)
            .tag(&tag)
            .build();
        let fut = async {
            let mut s = self.docker.create_image(Some(opts), None, None);
            while let Some(item) = s.next().await {
                if let Err(e) = item {
                    return Err(describe(&e));
                }
            }
            Ok(())
        };
        match tokio::time::timeout(timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(format!("no answer within {}s", timeout.as_secs())),
        }
    }

    /// `docker import`: make an image from a root filesystem tar stream.
    pub async fn import_rootfs<S>(
        &self,
        tar: S,
        repo: &str,
        tag: &str,
        changes: Vec<String>,
    ) -> Result<(), ClusterError>
    where
        S: Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
    {
        let mut opts = CreateImageOptionsBuilder::default()
            .from_src("-")
            .repo(repo)
            .tag(tag)
            .message("pulsar-chaos image build")
            .build();
        opts.changes = changes;
        let mut s = self
            .docker
            .create_image(Some(opts), Some(bollard::body_try_stream(tar)), None);
        while let Some(item) = s.next().await {
            item.map_err(docker_err(format!("import image {repo}:{tag}")))?;
        }
        Ok(())
    }

    pub async fn create_network(
        &self,
        name: &str,
        subnet: Option<(&str, &str)>,
        labels: HashMap<String, String>,
    ) -> Result<String, ClusterError> {
        let ipam = subnet.map(|(subnet, gateway)| Ipam {
            driver: Some("default".into()),
            config: Some(vec![IpamConfig {
                subnet: Some(subnet.into()),
                gateway: Some(gateway.into()),
                ..Default::default()
            }]),
            options: None,
        });
        let r = self
            .docker
            .create_network(NetworkCreateRequest {
                name: name.into(),
                driver: Some("bridge".into()),
                ipam,
                labels: Some(labels),
                ..Default::default()
            })
            .await
            .map_err(docker_err(format!("create network {name}")))?;
        Ok(r.id)
    }

    /// The subnet and gateway Docker gave a network.
    pub async fn network_subnet(
        &self,
        name: &str,
    ) -> Result<Option<(String, String)>, ClusterError> {
        let n = self
            .docker
            .inspect_network(
                name,
                None::<bollard::query_parameters::InspectNetworkOptions>,
            )
            .await
            .map_err(docker_err(format!("inspect network {name}")))?;
        Ok(n.ipam
            .and_then(|i| i.config)
            .and_then(|c| c.into_iter().next())
            .and_then(|c| Some((c.subnet?, c.gateway?))))
    }

    pub async fn remove_network(&self, name: &str) -> Result<(), ClusterError> {
        match self.docker.remove_network(name).await {
            Ok(()) => Ok(()),
            Err(e) if is_status(&e, 404) => Ok(()),
            Err(e) => Err(docker_err(format!("remove network {name}"))(e)),
        }
    }

    pub async fn create_container(&self, spec: &ContainerSpec) -> Result<String, ClusterError> {
        let mut port_bindings: HashMap<String, Option<Vec<PortBinding>>> = HashMap::new();
        let mut exposed = Vec::new();
        for (cport, hip, hport) in &spec.publish {
            let key = format!("{cport}/tcp");
            exposed.push(key.clone());
            port_bindings.insert(
                key,
                Some(vec![PortBinding {
                    host_ip: Some(hip.clone()),
                    host_port: Some(hport.to_string()),
                }]),
            );
        }
        let networking_config = spec.network.as_ref().map(|(net, ip, aliases)| {
            let mut endpoints = HashMap::new();
            endpoints.insert(
                net.clone(),
                EndpointSettings {
                    ipam_config: ip.as_ref().map(|ip| EndpointIpamConfig {
                        ipv4_address: Some(ip.clone()),
                        ..Default::default()
                    }),
                    aliases: Some(aliases.clone()),
                    ..Default::default()
                },
            );
            NetworkingConfig {
                endpoints_config: Some(endpoints),
            }
        });
        let network_mode = spec
            .network_mode
            .clone()
            .or_else(|| spec.network.as_ref().map(|(n, _, _)| n.clone()));
        let body = ContainerCreateBody {
            image: Some(spec.image.clone()),
            cmd: Some(spec.cmd.clone()),
            env: Some(spec.env.clone()),
            labels: Some(spec.labels.clone()),
            user: spec.user.clone(),
            exposed_ports: if exposed.is_empty() {
                None
            } else {
                Some(exposed)
            },
            host_config: Some(HostConfig {
                network_mode,
                port_bindings: if port_bindings.is_empty() {
                    None
                } else {
                    Some(port_bindings)
                },
                cap_add: if spec.cap_add.is_empty() {
                    None
                } else {
                    Some(spec.cap_add.clone())
                },
                init: Some(false),
                ..Default::default()
            }),
            networking_config,
            ..Default::default()
        };
        let opts = CreateContainerOptionsBuilder::default()
            .name(&spec.name)
            .build();
        let r = self
            .docker
            .create_container(Some(opts), body)
            .await
            .map_err(docker_err(format!("create container {}", spec.name)))?;
        Ok(r.id)
    }

    /// Start a container. A port already in use is reported as such.
    pub async fn start(&self, id: &str) -> Result<(), ClusterError> {
        match self
            .docker
            .start_container(id, None::<bollard::query_parameters::StartContainerOptions>)
            .await
        {
            Ok(()) => Ok(()),
            Err(e) if is_status(&e, 304) => Ok(()),
            Err(e) => {
                let msg = describe(&e);
                if msg.contains("address already in use")
                    || msg.contains("port is already allocated")
                {
                    Err(ClusterError::PortTaken { message: msg })
                } else {
                    Err(ClusterError::Docker {
                        op: format!("start container {id}"),
                        message: msg,
                    })
                }
            }
        }
    }

    /// SIGTERM, then SIGKILL after `timeout`.
    pub async fn stop(&self, id: &str, timeout: Duration) -> Result<(), ClusterError> {
        let opts = StopContainerOptionsBuilder::default()
            .t(timeout.as_secs() as i32)
            .build();
        match self.docker.stop_container(id, Some(opts)).await {
            Ok(()) => Ok(()),
            Err(e) if is_status(&e, 304) => Ok(()),
            Err(e) => Err(docker_err(format!("stop container {id}"))(e)),
        }
    }

    pub async fn kill(&self, id: &str) -> Result<(), ClusterError> {
        let opts = KillContainerOptionsBuilder::default()
            .signal("SIGKILL")
            .build();
        match self.docker.kill_container(id, Some(opts)).await {
            Ok(()) => Ok(()),
            // Not running: nothing to kill.
            Err(e) if is_status(&e, 409) => Ok(()),
            Err(e) => Err(docker_err(format!("kill container {id}"))(e)),
        }
    }

    /// Freeze a container. Tried up to three times, 1 s then 2 s apart, while the engine
    /// answers "unable to freeze" (runc, when the kernel's freezer does not settle on a loaded
    /// machine: nothing is frozen then, and freezing is idempotent).
    pub async fn pause(&self, id: &str) -> Result<(), ClusterError> {
        let mut attempt = 1;
        loop {
            match self.docker.pause_container(id).await {
                Ok(()) => return Ok(()),
                Err(e) if attempt < 3 && describe(&e).contains("unable to freeze") => {
                    tokio::time::sleep(std::time::Duration::from_secs(attempt)).await;
                    attempt += 1;
                }
                Err(e) => return Err(docker_err(format!("pause container {id}"))(e)),
            }
        }
    }

    pub async fn unpause(&self, id: &str) -> Result<(), ClusterError> {
        match self.docker.unpause_container(id).await {
            Ok(()) => Ok(()),
            Err(e) if describe(&e).contains("is not paused") => Ok(()),
            Err(e) => Err(docker_err(format!("unpause container {id}"))(e)),
        }
    }

    pub async fn state(&self, id: &str) -> Result<Option<State>, ClusterError> {
        match self
            .docker
            .inspect_container(
                id,
                None::<bollard::query_parameters::InspectContainerOptions>,
            )
            .await
        {
            Ok(c) => {
                let s = c.state.unwrap_or_default();
                Ok(Some(State {
                    running: s.running.unwrap_or(false),
                    paused: s.paused.unwrap_or(false),
                    exit_code: s.exit_code,
                    status: s.status.map(|s| s.to_string()).unwrap_or_default(),
                    oom_killed: s.oom_killed.unwrap_or(false),
                }))
            }
            Err(e) if is_status(&e, 404) => Ok(None),
            Err(e) => Err(docker_err(format!("inspect container {id}"))(e)),
        }
    }

    /// The PID of a running container's main process (for diagnostics).
    pub async fn pid(&self, id: &str) -> Result<Option<i64>, ClusterError> {
        let c = self
            .docker
            .inspect_container(
                id,
                None::<bollard::query_parameters::InspectContainerOptions>,
            )
            .await
            .map_err(docker_err(format!("inspect container {id}")))?;
        Ok(c.state.and_then(|s| s.pid).filter(|p| *p > 0))
    }

    /// The last `lines` lines of a container's output.
    pub async fn logs_tail(&self, id: &str, lines: usize) -> String {
        self.logs(id, &lines.to_string(), 0).await
    }

    /// A container's output from `since_unix_s` on (every start of it).
    pub async fn logs_since(&self, id: &str, since_unix_s: i32) -> String {
        self.logs(id, "all", since_unix_s).await
    }

    async fn logs(&self, id: &str, tail: &str, since_unix_s: i32) -> String {
        let opts = LogsOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .tail(tail)
            .since(since_unix_s)
            .build();
        let mut s = self.docker.logs(id, Some(opts));
        let mut out = String::new();
        while let Some(item) = s.next().await {
            match item {
                Ok(chunk) => out.push_str(&String::from_utf8_lossy(&chunk.into_bytes())),
                Err(e) => {
                    out.push_str(&format!("<logs unavailable: {}>", describe(&e)));
                    break;
                }
            }
        }
        out
    }

    /// Wait until a container exits; its exit code.
    pub async fn wait_exit(&self, id: &str, timeout: Duration) -> Result<i64, ClusterError> {
        let opts = WaitContainerOptionsBuilder::default()
            .condition("not-running")
            .build();
        let fut = async {
            let mut s = self.docker.wait_container(id, Some(opts));
            let mut code = 0;
            while let Some(item) = s.next().await {
                match item {
                    Ok(r) => code = r.status_code,
                    // bollard reports a non-zero exit as an error carrying the code.
                    Err(bollard::errors::Error::DockerContainerWaitError { code: c, .. }) => {
                        code = c
                    }
                    Err(e) => return Err(docker_err(format!("wait for container {id}"))(e)),
                }
            }
            Ok(code)
        };
        match tokio::time::timeout(timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(ClusterError::Docker {
                op: format!("wait for container {id}"),
                message: format!("still running after {}s", timeout.as_secs()),
            }),
        }
    }

    /// Remove a container (forced, with its anonymous volumes).
    pub async fn remove(&self, id: &str) -> Result<(), ClusterError> {
        let opts = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        match self.docker.remove_container(id, Some(opts)).await {
            Ok(()) => Ok(()),
            Err(e) if is_status(&e, 404) => Ok(()),
            // Removal already in progress.
            Err(e) if is_status(&e, 409) => Ok(()),
            Err(e) => Err(docker_err(format!("remove container {id}"))(e)),
        }
    }

    /// Memory a running container uses now, in bytes (None when not running).
    pub async fn memory_usage(&self, id: &str) -> Result<Option<u64>, ClusterError> {
        let opts = bollard::query_parameters::StatsOptionsBuilder::default()
            .stream(false)
            .one_shot(true)
            .build();
        let mut s = self.docker.stats(id, Some(opts));
        match s.next().await {
            Some(Ok(st)) => Ok(st.memory_stats.and_then(|m| m.usage)),
            Some(Err(e)) => Err(docker_err(format!("stats of {id}"))(e)),
            None => Ok(None),
        }
    }

    /// Containers carrying every given label (value "" matches any value).
    pub async fn list_containers(
        &self,
        labels: &[(&str, &str)],
    ) -> Result<Vec<Listed>, ClusterError> {
        let filters = label_filter(labels);
        let opts = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        let list = self
            .docker
            .list_containers(Some(opts))
            .await
            .map_err(docker_err("list containers"))?;
        Ok(list
            .into_iter()
            .map(|c| Listed {
                id: c.id.unwrap_or_default(),
                name: c
                    .names
                    .and_then(|n| n.into_iter().next())
                    .unwrap_or_default()
                    .trim_start_matches('/')
                    .to_string(),
                state: c.state.map(|s| s.to_string()).unwrap_or_default(),
                labels: c.labels.unwrap_or_default(),
            })
            .collect())
    }

    /// Networks carrying every given label: (id, name, labels).
    pub async fn list_networks(
        &self,
        labels: &[(&str, &str)],
    ) -> Result<Vec<(String, String, HashMap<String, String>)>, ClusterError> {
        let filters = label_filter(labels);
        let opts = ListNetworksOptionsBuilder::default()
            .filters(&filters)
            .build();
        let list = self
            .docker
            .list_networks(Some(opts))
            .await
            .map_err(docker_err("list networks"))?;
        Ok(list
            .into_iter()
            .map(|n| {
                (
                    n.id.unwrap_or_default(),
                    n.name.unwrap_or_default(),
                    n.labels.unwrap_or_default(),
                )
            })
            .collect())
    }

    /// Volumes carrying every given label: names.
    pub async fn list_volumes(&self, labels: &[(&str, &str)]) -> Result<Vec<String>, ClusterError> {
        let filters = label_filter(labels);
        let opts = ListVolumesOptionsBuilder::default()
            .filters(&filters)
            .build();
        let r = self
            .docker
            .list_volumes(Some(opts))
            .await
            .map_err(docker_err("list volumes"))?;
        Ok(r.volumes
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.name)
            .collect())
    }

    pub async fn remove_volume(&self, name: &str) -> Result<(), ClusterError> {
        let opts = RemoveVolumeOptionsBuilder::default().force(true).build();
        match self.docker.remove_volume(name, Some(opts)).await {
            Ok(()) => Ok(()),
            Err(e) if is_status(&e, 404) => Ok(()),
            Err(e) => Err(docker_err(format!("remove volume {name}"))(e)),
        }
    }
}

/// "repo:tag" -> (repo, tag); "latest" when no tag is given.
pub fn split_image(image: &str) -> (String, String) {
    // A ':' after the last '/' separates the tag (a registry port comes before a '/').
    match image.rfind(':') {
        Some(i) if !image[i..].contains('/') => {
            (image[..i].to_string(), image[i + 1..].to_string())
        }
        _ => (image.to_string(), "latest".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_names_split_into_repo_and_tag() {
        assert_eq!(
            split_image("apachepulsar/pulsar:4.0.7"),
            ("apachepulsar/pulsar".into(), "4.0.7".into())
        );
        assert_eq!(
            split_image("localhost:5000/pulsar"),
            ("localhost:5000/pulsar".into(), "latest".into())
        );
        assert_eq!(
            split_image("localhost:5000/pulsar:x"),
            ("localhost:5000/pulsar".into(), "x".into())
        );
    }
}
