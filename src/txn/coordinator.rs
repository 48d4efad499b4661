//! The transaction coordinator client: discovery, TC_CLIENT_CONNECT, NEW_TXN,
//! ADD_PARTITION_TO_TXN, END_TXN; and what an END_TXN reply means.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pulsar::message::proto::{self, base_command::Type, ServerError, TxnAction};
use tokio::sync::Mutex;

use super::conn::{base, server_error};
use super::{with_retry, Client, Connection, TxnError};
use crate::history::TxnId;

/// The topic whose partitions place the coordinators on brokers.
pub const TC_ASSIGN_TOPIC: &str = "persistent://pulsar/system/transaction_coordinator_assign";

/// What the harness knows after an END_TXN COMMIT attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitAnswer {
    /// The coordinator confirmed it, or says the transaction is committing/committed.
    Committed,
    /// The coordinator says it is aborting/aborted, or never saw this commit and the
    /// transaction is gone (timed out) before any commit could have applied.
    Aborted(String),
    /// The request may have applied; the outcome is unknown.
    Ambiguous(String),
    /// The request certainly had no effect (not sent, coordinator not loaded): try again.
    NotApplied(String),
    /// Transactions do not work here at all.
    Fatal(String),
}

/// Classify the result of an END_TXN COMMIT on one transaction. Pure.
///
/// `earlier_may_have_applied`: an earlier commit try on this transaction was sent and got no
/// definite answer. TransactionNotFound is definite only without one: the coordinator did not
/// know the transaction when our commit arrived, so nothing of ours committed it (it had timed
/// out). After an uncertain try it may mean "that try committed it and it was removed".
pub fn classify_commit(
    result: &Result<(), TxnError>,
    earlier_may_have_applied: bool,
) -> CommitAnswer {
    match result {
        Ok(()) => CommitAnswer::Committed,
        Err(TxnError::NotSent(m)) => CommitAnswer::NotApplied(m.clone()),
        Err(TxnError::Timeout(m)) => CommitAnswer::Ambiguous(format!("timed out: {m}")),
        Err(TxnError::ConnectionLost(m)) => CommitAnswer::Ambiguous(format!("connection lost: {m}")),
        Err(TxnError::Fatal(m)) => CommitAnswer::Fatal(m.clone()),
        // Sent, and the answer says nothing readable about the commit.
        Err(e @ (TxnError::DuplicateDropped(_) | TxnError::Protocol(_))) => {
            CommitAnswer::Ambiguous(e.to_string())
        }
        Err(TxnError::Server { code, message }) => match code {
            ServerError::InvalidTxnStatus => match state_named(message) {
                Some("COMMITTING") | Some("COMMITTED") => CommitAnswer::Committed,
                Some("ABORTING") | Some("ABORTED") => CommitAnswer::Aborted(format!("InvalidTxnStatus: {message}")),
                _ => CommitAnswer::Ambiguous(format!("InvalidTxnStatus: {message}")),
            },
            ServerError::TransactionNotFound if !earlier_may_have_applied => {
                CommitAnswer::Aborted(format!("TransactionNotFound before any commit of ours could apply (timed out): {message}"))
            }
            ServerError::TransactionNotFound => {
                CommitAnswer::Ambiguous(format!("TransactionNotFound after an earlier commit try: {message}"))
            }
            ServerError::TransactionCoordinatorNotFound => {
                CommitAnswer::NotApplied(format!("TransactionCoordinatorNotFound: {message}"))
            }
            ServerError::UnknownError if message.contains("to be in Ready status") => {
                CommitAnswer::NotApplied(format!("coordinator not ready: {message}"))
            }
            ServerError::NotAllowedError if message.contains("not enabled") => {
                CommitAnswer::Fatal(format!("transactions are not enabled on the broker: {message}"))
            }
            other => CommitAnswer::Ambiguous(format!("{other:?}: {message}")),
        },
    }
}

/// The state an InvalidTxnStatus message says the transaction is in: the last status word
/// ("Expect Txn `(0,5)` to be in ABORTING status but it is in COMMITTING status").
pub fn state_named(message: &str) -> Option<&'static str> {
    let tail = message.rsplit("it is in").next()?;
    [
        "COMMITTING",
        "COMMITTED",
        "ABORTING",
        "ABORTED",
        "OPEN",
        "TIME_OUT",
    ]
    .into_iter()
    .find(|s| tail.contains(s))
}

/// Clients of every coordinator, with connections kept per coordinator.
pub struct Coordinators {
    client: Arc<Client>,
    count: u32,
    conns: Vec<Mutex<Option<Connection>>>,
    next: AtomicU32,
}

impl Coordinators {
    /// Find how many coordinators there are. Fails when transactions are not set up.
    pub async fn discover(client: Arc<Client>) -> Result<Coordinators, TxnError> {
        let n = client.partitions(TC_ASSIGN_TOPIC).await?;
        if n == 0 {
            return Err(TxnError::Fatal(format!(
                "{TC_ASSIGN_TOPIC} has no partitions: transactions are not enabled on this cluster (transactionCoordinatorEnabled=true, and cluster metadata initialized with coordinators)"
            )));
        }
        Ok(Coordinators {
            client,
            count: n,
            conns: (0..n).map(|_| Mutex::new(None)).collect(),
            next: AtomicU32::new(0),
        })
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    fn slot(&self, tc: u64) -> Result<&Mutex<Option<Connection>>, TxnError> {
        self.conns.get(tc as usize).ok_or_else(|| {
            TxnError::Fatal(format!("no coordinator {tc} (there are {})", self.count))
        })
    }

    /// The connection to coordinator `tc`, connected with TC_CLIENT_CONNECT.
    async fn conn(&self, tc: u64) -> Result<Connection, TxnError> {
        let slot = self.slot(tc)?;
        let mut guard = slot.lock().await;
        if let Some(c) = guard.as_ref() {
            if !c.is_closed() {
                return Ok(c.clone());
            }
        }
        let addr = self
            .client
            .lookup(&format!("{TC_ASSIGN_TOPIC}-partition-{tc}"))
            .await?;
        let conn = self.client.conn(&addr).await?;
        let rid = conn.new_request_id();
        let mut c = base(Type::TcClientConnectRequest);
        c.tc_client_connect_request = Some(proto::CommandTcClientConnectRequest {
            request_id: rid,
            tc_id: tc,
        });
        let resp = conn
            .request(rid, c, self.client.op_timeout)
            .await
            .map_err(not_sent("TC_CLIENT_CONNECT"))?;
        if let Some(r) = resp.tc_client_connect_response {
            if let Some(e) = r.error {
                return Err(not_sent("TC_CLIENT_CONNECT")(TxnError::Server {
                    code: server_error(e),
                    message: r.message.unwrap_or_default(),
                }));
            }
        }
        *guard = Some(conn.clone());
        Ok(conn)
    }

    async fn forget(&self, tc: u64) {
        if let Ok(slot) = self.slot(tc) {
            *slot.lock().await = None;
        }
    }

    /// Connect to every coordinator (readiness: this makes brokers load them).
    pub async fn connect_all(&self, deadline: tokio::time::Instant) -> Result<(), TxnError> {
        for tc in 0..u64::from(self.count) {
            with_retry(deadline, || async {
                let r = self.conn(tc).await;
                if r.is_err() {
                    self.forget(tc).await;
                }
                r
            })
            .await?;
        }
        Ok(())
    }

    /// Open a transaction with a timeout of `ttl`, on the coordinators in turn. Retried until
    /// `deadline`: a NEW_TXN whose reply was lost only leaves an unused transaction behind,
    /// which its timeout ends.
    pub async fn new_txn(
        &self,
        ttl: Duration,
        deadline: tokio::time::Instant,
    ) -> Result<TxnId, TxnError> {
        let tc = u64::from(self.next.fetch_add(1, Ordering::Relaxed) % self.count);
        with_retry(deadline, || async {
            let conn = self.conn(tc).await?;
            let rid = conn.new_request_id();
            let mut c = base(Type::NewTxn);
            c.new_txn = Some(proto::CommandNewTxn {
                request_id: rid,
                // The broker reads this field as milliseconds despite its name.
                txn_ttl_seconds: Some(ttl.as_millis() as u64),
                tc_id: Some(tc),
            });
            let r = conn.request(rid, c, self.client.op_timeout).await;
            let resp = self.check(tc, r).await?;
            let r = resp
                .new_txn_response
                .ok_or_else(|| TxnError::NotSent("NEW_TXN: unexpected answer".into()))?;
            if let Some(e) = r.error {
                let err = TxnError::Server {
                    code: server_error(e),
                    message: r.message.unwrap_or_default(),
                };
                return Err(self.check_err(tc, err).await);
            }
            Ok(TxnId {
                most: r.txnid_most_bits.unwrap_or(tc),
                least: r.txnid_least_bits.unwrap_or(0),
            })
        })
        .await
    }

    /// Register partitions with a transaction (before its first SEND to them). Idempotent, so
    /// retried until `deadline`.
    pub async fn add_partitions(
        &self,
        txn: TxnId,
        partitions: &[String],
        deadline: tokio::time::Instant,
    ) -> Result<(), TxnError> {
        with_retry(deadline, || async {
            let conn = self.conn(txn.most).await?;
            let rid = conn.new_request_id();
            let mut c = base(Type::AddPartitionToTxn);
            c.add_partition_to_txn = Some(proto::CommandAddPartitionToTxn {
                request_id: rid,
                txnid_least_bits: Some(txn.least),
                txnid_most_bits: Some(txn.most),
                partitions: partitions.to_vec(),
            });
            let r = conn.request(rid, c, self.client.op_timeout).await;
            let resp = self.check(txn.most, r).await?;
            if let Some(r) = resp.add_partition_to_txn_response {
                if let Some(e) = r.error {
                    let err = TxnError::Server {
                        code: server_error(e),
                        message: r.message.unwrap_or_default(),
                    };
                    return Err(self.check_err(txn.most, err).await);
                }
            }
            Ok(())
        })
        .await
    }

    /// One END_TXN, not retried: the caller decides what its answer means.
    pub async fn end_txn(&self, txn: TxnId, action: TxnAction) -> Result<(), TxnError> {
        let conn = self.conn(txn.most).await?;
        let rid = conn.new_request_id();
        let mut c = base(Type::EndTxn);
        c.end_txn = Some(proto::CommandEndTxn {
            request_id: rid,
            txnid_least_bits: Some(txn.least),
            txnid_most_bits: Some(txn.most),
            txn_action: Some(action as i32),
        });
        let r = conn.request(rid, c, self.client.op_timeout).await;
        let resp = self.check(txn.most, r).await?;
        if let Some(r) = resp.end_txn_response {
            if let Some(e) = r.error {
                let err = TxnError::Server {
                    code: server_error(e),
                    message: r.message.unwrap_or_default(),
                };
                return Err(self.check_err(txn.most, err).await);
            }
        }
        Ok(())
    }

    /// Drop the coordinator's connection after errors that mean it moved or died.
    async fn check(
        &self,
        tc: u64,
        r: Result<pulsar::message::proto::BaseCommand, TxnError>,
    ) -> Result<pulsar::message::proto::BaseCommand, TxnError> {
        match r {
            Ok(v) => Ok(v),
            Err(e) => Err(self.check_err(tc, e).await),
        }
    }

    async fn check_err(&self, tc: u64, e: TxnError) -> TxnError {
        let moved = match &e {
            TxnError::Timeout(_) | TxnError::ConnectionLost(_) | TxnError::NotSent(_) => true,
            TxnError::Server { code, message } => {
                if *code == ServerError::NotAllowedError && message.contains("not enabled") {
                    return TxnError::Fatal(format!(
                        "transactions are not enabled on the broker: {message}"
                    ));
                }
                matches!(
                    code,
                    ServerError::TransactionCoordinatorNotFound | ServerError::ServiceNotReady
                )
            }
            TxnError::Fatal(_) | TxnError::DuplicateDropped(_) | TxnError::Protocol(_) => false,
        };
        if moved {
            self.forget(tc).await;
        }
        e
    }
}

fn not_sent(what: &'static str) -> impl Fn(TxnError) -> TxnError {
    move |e| match e {
        TxnError::Fatal(m) => TxnError::Fatal(m),
        TxnError::Server {
            code: ServerError::NotAllowedError,
            message,
        } if message.contains("not enabled") => TxnError::Fatal(format!(
            "transactions are not enabled on the broker: {message}"
        )),
        other => TxnError::NotSent(format!("{what}: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(code: ServerError, m: &str) -> Result<(), TxnError> {
        Err(TxnError::Server {
            code,
            message: m.to_string(),
        })
    }

    #[test]
    fn states_in_invalid_status_messages() {
        assert_eq!(
            state_named(
                "Expect Txn `(0,5)` to be in ABORTING status but it is in COMMITTING status"
            ),
            Some("COMMITTING")
        );
        assert_eq!(
            state_named(
                "Expect Txn `(0,5)` to be in COMMITTING status but it is in ABORTING status"
            ),
            Some("ABORTING")
        );
        assert_eq!(state_named("something else"), None);
    }

    #[test]
    fn commit_answers() {
        assert_eq!(classify_commit(&Ok(()), false), CommitAnswer::Committed);
        assert!(matches!(
            classify_commit(
                &server(
                    ServerError::InvalidTxnStatus,
                    "Expect Txn `(0,5)` to be in COMMITTING status but it is in ABORTING status"
                ),
                true
            ),
            CommitAnswer::Aborted(_)
        ));
        assert_eq!(
            classify_commit(
                &server(
                    ServerError::InvalidTxnStatus,
                    "Expect Txn `(0,5)` to be in ABORTING status but it is in COMMITTING status"
                ),
                false
            ),
            CommitAnswer::Committed
        );
        assert!(matches!(
            classify_commit(&server(ServerError::TransactionNotFound, "gone"), false),
            CommitAnswer::Aborted(_)
        ));
        assert!(matches!(
            classify_commit(&server(ServerError::TransactionNotFound, "gone"), true),
            CommitAnswer::Ambiguous(_)
        ));
        assert!(matches!(
            classify_commit(&Err(TxnError::Timeout("t".into())), false),
            CommitAnswer::Ambiguous(_)
        ));
        assert!(matches!(
            classify_commit(&Err(TxnError::ConnectionLost("c".into())), false),
            CommitAnswer::Ambiguous(_)
        ));
        assert!(matches!(
            classify_commit(&Err(TxnError::NotSent("n".into())), true),
            CommitAnswer::NotApplied(_)
        ));
        assert!(matches!(
            classify_commit(
                &server(ServerError::TransactionCoordinatorNotFound, "x"),
                false
            ),
            CommitAnswer::NotApplied(_)
        ));
        assert!(matches!(
            classify_commit(&server(ServerError::UnknownError, "Expect Transaction Coordinator `0` to be in Ready status but it is in Initializing state"), false),
            CommitAnswer::NotApplied(_)
        ));
        assert!(matches!(
            classify_commit(&server(ServerError::PersistenceError, "x"), false),
            CommitAnswer::Ambiguous(_)
        ));
        assert!(matches!(
            classify_commit(
                &server(
                    ServerError::NotAllowedError,
                    "Transactions are not enabled."
                ),
                false
            ),
            CommitAnswer::Fatal(_)
        ));
    }
}
