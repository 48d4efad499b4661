//! Waiting for a container's condition: polled with backoff until it holds, failing early
//! with the container's log when it exited and at the deadline with every container's log;
//! and the probes the start uses (ZooKeeper's `ruok`, an open TCP port).

use std::time::{Duration, Instant};

use crate::backoff::Backoff;

use super::{Cluster, ClusterError, Node};

impl Cluster {
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
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
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
            backoff.wait().await;
        }
    }
}

/// ZooKeeper's four-letter `ruok`.
pub async fn zk_ruok(ip: &str) -> bool {
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
