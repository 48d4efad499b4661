//! The transaction client: connections of our own (the `pulsar` crate's connections drop
//! transaction replies), topic lookups, the coordinator client (NEW_TXN, ADD_PARTITION_TO_TXN,
//! ADD_SUBSCRIPTION_TO_TXN, END_TXN), transactional producers, a consumer that acknowledges in
//! transactions, and a reader for the read-back.
//!
//! Every reply maps to a definite success, a definite failure, or an ambiguous outcome; this
//! module reports which, and never decides what to resend (that is the workload's job).

pub mod conn;
pub mod consumer;
pub mod coordinator;
pub mod entry;
pub mod frame;
pub mod producer;
pub mod reader;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use pulsar::message::proto::{self, base_command::Type, ServerError};
use tokio::sync::Mutex;

pub use conn::Connection;
use conn::{base, server_error};

/// Errors of a protocol operation, sorted by what they say about the request's effect.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TxnError {
    /// The request never left the harness (no connection, lookup failed): it had no effect.
    #[error("not sent: {0}")]
    NotSent(String),
    /// Sent, and no answer came in time: it may or may not have taken effect.
    #[error("timed out: {0}")]
    Timeout(String),
    /// Sent, and the connection died before the answer: it may or may not have taken effect.
    #[error("connection lost: {0}")]
    ConnectionLost(String),
    /// The broker answered with an error.
    #[error("{code:?}: {message}")]
    Server { code: ServerError, message: String },
    /// The broker's answer broke the protocol (a reply without the response it must carry, a
    /// receipt without a message id): the request's effect is unknown, never taken as success.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// Nothing to retry: e.g. transactions are disabled on the broker.
    #[error("{0}")]
    Fatal(String),
    /// A SEND_RECEIPT with message id (-1, -1): the broker's deduplication dropped the message
    /// (its sequence id was not above the last one persisted for the producer name). Nothing
    /// was written: the send failed, and a transaction must not commit on it.
    #[error("dropped as a duplicate: {0}")]
    DuplicateDropped(String),
    /// An official client (through its driver, docs/drivers.md) answered with an error, or
    /// did not answer: its effect is unknown.
    #[error("{0}")]
    Client(String),
}

impl TxnError {
    pub fn server_code(&self) -> Option<ServerError> {
        match self {
            TxnError::Server { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The error's class as the verdict's table of client answers names it: the variant, or
    /// for a broker error its `ServerError` code (`TransactionNotFound`).
    pub fn class(&self) -> String {
        match self {
            TxnError::NotSent(_) => "NotSent".into(),
            TxnError::Timeout(_) => "Timeout".into(),
            TxnError::ConnectionLost(_) => "ConnectionLost".into(),
            TxnError::Server { code, .. } => format!("{code:?}"),
            TxnError::Protocol(_) => "Protocol".into(),
            TxnError::Fatal(_) => "Fatal".into(),
            TxnError::DuplicateDropped(_) => "DuplicateDropped".into(),
            TxnError::Client(_) => "Client".into(),
        }
    }

    /// The error's text without its class.
    pub fn message(&self) -> &str {
        match self {
            TxnError::NotSent(m)
            | TxnError::Timeout(m)
            | TxnError::ConnectionLost(m)
            | TxnError::Protocol(m)
            | TxnError::Fatal(m)
            | TxnError::DuplicateDropped(m)
            | TxnError::Client(m) => m,
            TxnError::Server { message, .. } => message,
        }
    }

    /// The broker may be on its way back: worth another try after a re-lookup.
    pub fn is_retryable(&self) -> bool {
        match self {
            TxnError::NotSent(_)
            | TxnError::Timeout(_)
            | TxnError::ConnectionLost(_)
            | TxnError::Protocol(_)
            | TxnError::Client(_) => true,
            TxnError::Server { code, .. } => matches!(
                code,
                ServerError::ServiceNotReady
                    | ServerError::TransactionCoordinatorNotFound
                    | ServerError::MetadataError
                    | ServerError::TooManyRequests
                    | ServerError::PersistenceError
                    | ServerError::UnknownError
                    | ServerError::ProducerBusy
            ),
            TxnError::Fatal(_) | TxnError::DuplicateDropped(_) => false,
        }
    }
}

/// "host:port" of a pulsar:// URL.
pub fn host_port(url: &str) -> String {
    url.trim_start_matches("pulsar://")
        .trim_end_matches('/')
        .to_string()
}

/// Where a connection to a broker address really goes: e.g. a fault's proxy in front of it.
pub trait Dial: Send + Sync {
    /// The "host:port" to connect to for the broker at `addr` ("host:port").
    fn route<'a>(
        &'a self,
        addr: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, TxnError>> + Send + 'a>>;
}

/// Connections by broker address, and lookups.
pub struct Client {
    service: String,
    conns: Mutex<HashMap<String, Connection>>,
    pub op_timeout: Duration,
    dial: Option<Arc<dyn Dial>>,
}

impl Client {
    pub fn new(service_url: &str, op_timeout: Duration) -> Arc<Client> {
        Client::with_dial(service_url, op_timeout, None)
    }

    /// A client whose every connection (the service URL's and every looked-up broker's) is
    /// opened where `dial` routes it.
    pub fn with_dial(
        service_url: &str,
        op_timeout: Duration,
        dial: Option<Arc<dyn Dial>>,
    ) -> Arc<Client> {
        Arc::new(Client {
            service: host_port(service_url),
            conns: Mutex::new(HashMap::new()),
            op_timeout,
            dial,
        })
    }

    /// The connection to `addr`, opened (again) if needed.
    pub async fn conn(&self, addr: &str) -> Result<Connection, TxnError> {
        let mut conns = self.conns.lock().await;
        if let Some(c) = conns.get(addr) {
            if !c.is_closed() {
                return Ok(c.clone());
            }
        }
        let to = match &self.dial {
            Some(d) => d.route(addr).await?,
            None => addr.to_string(),
        };
        let c = Connection::connect(&to, self.op_timeout.min(Duration::from_secs(10))).await?;
        conns.insert(addr.to_string(), c.clone());
        Ok(c)
    }

    pub async fn service_conn(&self) -> Result<Connection, TxnError> {
        let s = self.service.clone();
        self.conn(&s).await
    }

    /// Close every connection (e.g. after a broker restart, to start afresh).
    pub async fn close_all(&self) {
        for (_, c) in self.conns.lock().await.drain() {
            c.close();
        }
    }

    /// The broker ("host:port") that serves `topic`, following redirects.
    pub async fn lookup(&self, topic: &str) -> Result<String, TxnError> {
        let mut addr = self.service.clone();
        let mut authoritative = false;
        for _ in 0..8 {
            let conn = self.conn(&addr).await?;
            let rid = conn.new_request_id();
            let mut c = base(Type::Lookup);
            c.lookup_topic = Some(proto::CommandLookupTopic {
                topic: topic.to_string(),
                request_id: rid,
                authoritative: Some(authoritative),
                ..Default::default()
            });
            let resp = conn
                .request(rid, c, self.op_timeout)
                .await
                .map_err(as_not_sent)?;
            let r = resp
                .lookup_topic_response
                .ok_or_else(|| TxnError::NotSent("lookup: unexpected answer".into()))?;
            use proto::command_lookup_topic_response::LookupType;
            match LookupType::try_from(r.response.unwrap_or(2)) {
                Ok(LookupType::Connect) => {
                    return Ok(host_port(&r.broker_service_url.unwrap_or_default()));
                }
                Ok(LookupType::Redirect) => {
                    addr = host_port(&r.broker_service_url.unwrap_or_default());
                    authoritative = r.authoritative.unwrap_or(false);
                }
                _ => {
                    return Err(TxnError::NotSent(format!(
                        "lookup of {topic} failed: {:?} {}",
                        r.error.map(server_error),
                        r.message.unwrap_or_default()
                    )))
                }
            }
        }
        Err(TxnError::NotSent(format!(
            "lookup of {topic}: too many redirects"
        )))
    }

    /// Partitions of a topic (0: not partitioned).
    pub async fn partitions(&self, topic: &str) -> Result<u32, TxnError> {
        let conn = self.service_conn().await?;
        let rid = conn.new_request_id();
        let mut c = base(Type::PartitionedMetadata);
        c.partition_metadata = Some(proto::CommandPartitionedTopicMetadata {
            topic: topic.to_string(),
            request_id: rid,
            ..Default::default()
        });
        let resp = conn
            .request(rid, c, self.op_timeout)
            .await
            .map_err(as_not_sent)?;
        let r = resp
            .partition_metadata_response
            .ok_or_else(|| TxnError::NotSent("partitioned metadata: unexpected answer".into()))?;
        if let Some(e) = r.error {
            return Err(TxnError::NotSent(format!(
                "partitioned metadata of {topic}: {:?} {}",
                server_error(e),
                r.message.unwrap_or_default()
            )));
        }
        Ok(r.partitions.unwrap_or(0))
    }
}

/// A lookup has no effect: any failure of one is "not sent" for the operation behind it.
fn as_not_sent(e: TxnError) -> TxnError {
    match e {
        TxnError::Fatal(m) => TxnError::Fatal(m),
        TxnError::NotSent(m) => TxnError::NotSent(m),
        other => TxnError::NotSent(other.to_string()),
    }
}

/// The partitions a workload topic has, as full names: `[topic]` when not partitioned.
pub fn partition_names(topic: &str, partitions: u32) -> Vec<String> {
    if partitions <= 1 {
        vec![topic.to_string()]
    } else {
        (0..partitions)
            .map(|p| format!("{topic}-partition-{p}"))
            .collect()
    }
}

/// Retry `op` with backoff while its error is retryable and time is left.
pub async fn with_retry<T, F, Fut>(deadline: tokio::time::Instant, mut op: F) -> Result<T, TxnError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, TxnError>>,
{
    let mut backoff =
        crate::backoff::Backoff::new(Duration::from_millis(50), Duration::from_secs(2));
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e)
                if e.is_retryable() && tokio::time::Instant::now() + backoff.peek() < deadline =>
            {
                tracing::debug!("retrying after {e}");
                backoff.wait().await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// What the producer and the transform each start from: a client, its transaction
/// coordinators, and one producer per partition of the topic they write, each ready.
pub struct Producers {
    pub client: Arc<Client>,
    pub tcs: coordinator::Coordinators,
    /// The partitions' topic names (`partition_names`).
    pub topics: Vec<String>,
    pub producers: Vec<Arc<producer::PartitionProducer>>,
}

/// The producers `Producers::connect` makes ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProducerMode {
    /// One per partition, for sends in transactions.
    Transactional,
    /// One per partition, for plain sends.
    Plain,
    /// None: the coordinators and reads only.
    None,
}

impl Producers {
    /// Connect to `service_url` (through `dial` when given), discover the coordinators and
    /// make producer `<name>-p<i>` ready on partition i of `topic` (unless `producers` is
    /// `None`: an official client's driver sends), each retried until twice `op_timeout` (at
    /// least 30 s) has passed.
    pub async fn connect(
        service_url: &str,
        op_timeout: Duration,
        dial: Option<Arc<dyn Dial>>,
        topic: &str,
        partitions: u32,
        name: &str,
        producers: ProducerMode,
    ) -> Result<Producers, TxnError> {
        let transactional = producers == ProducerMode::Transactional;
        let with_producers = producers != ProducerMode::None;
        let client = Client::with_dial(service_url, op_timeout, dial);
        let deadline = tokio::time::Instant::now() + op_timeout.max(Duration::from_secs(30)) * 2;
        let tcs = with_retry(deadline, || {
            coordinator::Coordinators::discover(client.clone())
        })
        .await?;
        let topics = partition_names(topic, partitions);
        let mut producers = Vec::new();
        for (i, t) in topics.iter().enumerate().filter(|_| with_producers) {
            let p = Arc::new(producer::PartitionProducer::new(
                client.clone(),
                t,
                &format!("{name}-p{i}"),
                transactional,
            ));
            with_retry(deadline, || p.ready()).await?;
            producers.push(p);
        }
        Ok(Producers {
            client,
            tcs,
            topics,
            producers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_names_follow_pulsar() {
        assert_eq!(
            partition_names("persistent://a/b/t", 1),
            vec!["persistent://a/b/t"]
        );
        assert_eq!(
            partition_names("persistent://a/b/t", 2),
            vec![
                "persistent://a/b/t-partition-0",
                "persistent://a/b/t-partition-1"
            ]
        );
    }

    #[test]
    fn retryable_errors() {
        assert!(TxnError::Timeout("x".into()).is_retryable());
        assert!(TxnError::Server {
            code: ServerError::TransactionCoordinatorNotFound,
            message: String::new()
        }
        .is_retryable());
        assert!(!TxnError::Server {
            code: ServerError::TransactionNotFound,
            message: String::new()
        }
        .is_retryable());
        assert!(!TxnError::Fatal("x".into()).is_retryable());
    }
}
