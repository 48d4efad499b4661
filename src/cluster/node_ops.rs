//! The primitives fault injectors use on a node: graceful stop, kill (through the engine, or
//! kill(2) on the container's main process), start, restart, pause and unpause, the running
//! state, and a command in the node's network namespace (through `sidecar`).

use std::time::Duration;

use super::{exec_in_netns, Cluster, ClusterError, Node, STOP_TIMEOUT};

impl Cluster {
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
}
