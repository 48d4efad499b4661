//! The transaction coordinator client: discovery, TC_CLIENT_CONNECT, NEW_TXN,
//! ADD_PARTITION_TO_TXN, ADD_SUBSCRIPTION_TO_TXN, END_TXN; and what an END_TXN reply means.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pulsar::message::proto::{self, base_command::Type, ServerError, TxnAction};
use tokio::sync::Mutex;

use super::conn::{base, server_error};
use super::{with_retry, Client, Connection, TxnError};
use crate::history::TxnId;
pub use crate::policy::CommitAnswer;

/// The topic whose partitions place the coordinators on brokers.
pub const TC_ASSIGN_TOPIC: &str = "persistent://pulsar/system/transaction_coordinator_assign";

/// Classify the result of one END_TXN COMMIT by what it proves about the transaction. Pure.
///
/// Only a request that provably never left the client is `NotSent`. Every other failure after
/// the END_TXN was handed to a connection is `Ambiguous`: Pulsar's `endTransaction` persists
/// COMMITTING and then looks the coordinator up again, so even TransactionCoordinatorNotFound
/// may come back for a commit that the coordinator's next owner finishes. TransactionNotFound
/// is `NotFound`; whether it is definitive depends on the earlier tries (`policy::next`).
pub fn classify_commit(result: &Result<(), TxnError>) -> CommitAnswer {
    match result {
        Ok(()) => CommitAnswer::Committed("END_TXN COMMIT answered success".into()),
        Err(TxnError::NotSent(m)) => CommitAnswer::NotSent(m.clone()),
        Err(TxnError::Timeout(m)) => CommitAnswer::Ambiguous(format!("timed out: {m}")),
        Err(TxnError::ConnectionLost(m)) => {
            CommitAnswer::Ambiguous(format!("connection lost: {m}"))
        }
        Err(TxnError::Protocol(m)) => CommitAnswer::Ambiguous(format!("protocol error: {m}")),
        Err(TxnError::Fatal(m)) => CommitAnswer::Fatal(m.clone()),
        // Sent, and the answer says nothing readable about the commit.
        Err(e @ (TxnError::DuplicateDropped(_) | TxnError::Client(_))) => {
            CommitAnswer::Ambiguous(e.to_string())
        }
        Err(TxnError::Server { code, message }) => match code {
            ServerError::InvalidTxnStatus => match state_named(message) {
                Some("COMMITTING") | Some("COMMITTED") => {
                    CommitAnswer::Committed(format!("InvalidTxnStatus: {message}"))
                }
                Some("ABORTING") | Some("ABORTED") | Some("TIME_OUT") => {
                    CommitAnswer::Aborted(format!("InvalidTxnStatus: {message}"))
                }
                _ => CommitAnswer::Ambiguous(format!("InvalidTxnStatus: {message}")),
            },
            ServerError::TransactionNotFound => {
                CommitAnswer::NotFound(format!("TransactionNotFound: {message}"))
            }
            ServerError::NotAllowedError if message.contains("not enabled") => CommitAnswer::Fatal(
                format!("transactions are not enabled on the broker: {message}"),
            ),
            other => CommitAnswer::Ambiguous(format!("{other:?}: {message}")),
        },
    }
}

/// What the coordinator said about a transaction a resumed run found in its journal, asked
/// with END_TXN ABORT. Pure. `Some(Committed)` / `Some(Aborted)` only on the coordinator's
/// own words; everything else (TransactionNotFound included: a commit of the interrupted run
/// may have applied before the coordinator let go) is `None`, unknown.
pub fn classify_leftover_abort(
    result: &Result<(), TxnError>,
) -> (Option<crate::history::Outcome>, String) {
    use crate::history::Outcome;
    match result {
        Ok(()) => (
            Some(Outcome::Aborted),
            "END_TXN ABORT answered success".into(),
        ),
        Err(TxnError::Server {
            code: ServerError::InvalidTxnStatus,
            message,
        }) => match state_named(message) {
            Some("COMMITTING") | Some("COMMITTED") => (
                Some(Outcome::Committed),
                format!("the coordinator says it committed: InvalidTxnStatus: {message}"),
            ),
            Some("ABORTING") | Some("ABORTED") | Some("TIME_OUT") => (
                Some(Outcome::Aborted),
                format!("the coordinator says it aborted: InvalidTxnStatus: {message}"),
            ),
            _ => (
                None,
                format!("InvalidTxnStatus naming no known state: {message}"),
            ),
        },
        Err(TxnError::Server {
            code: ServerError::TransactionNotFound,
            message,
        }) => (None, format!("TransactionNotFound: {message}")),
        Err(other) => (None, format!("no answer to the abort: {other}")),
    }
}

pub use crate::policy::state_named;

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
            let kind = resp.r#type();
            let r = resp.new_txn_response.ok_or_else(|| {
                TxnError::Protocol(format!(
                    "NEW_TXN answered with a {:?} frame that has no new_txn_response",
                    kind
                ))
            })?;
            if let Some(e) = r.error {
                let err = TxnError::Server {
                    code: server_error(e),
                    message: r.message.unwrap_or_default(),
                };
                return Err(self.check_err(tc, err).await);
            }
            new_txn_id(&r)
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
            let kind = resp.r#type();
            let r = resp.add_partition_to_txn_response.ok_or_else(|| {
                TxnError::Protocol(format!(
                    "ADD_PARTITION_TO_TXN answered with a {:?} frame that has no add_partition_to_txn_response",
                    kind
                ))
            })?;
            if let Some(e) = r.error {
                let err = TxnError::Server {
                    code: server_error(e),
                    message: r.message.unwrap_or_default(),
                };
                return Err(self.check_err(txn.most, err).await);
            }
            Ok(())
        })
        .await
    }

    /// Register subscriptions, as (topic, subscription) pairs, with a transaction: before its
    /// first ACK on them, else END_TXN never reaches their pending acks and the acks stay
    /// pending until the broker's low-water mark clears them. Idempotent on the coordinator
    /// (a subscription already registered is not added twice), so retried until `deadline`
    /// like `add_partitions`.
    pub async fn add_subscriptions(
        &self,
        txn: TxnId,
        subscriptions: &[(String, String)],
        deadline: tokio::time::Instant,
    ) -> Result<(), TxnError> {
        with_retry(deadline, || async {
            let conn = self.conn(txn.most).await?;
            let rid = conn.new_request_id();
            let mut c = base(Type::AddSubscriptionToTxn);
            c.add_subscription_to_txn = Some(proto::CommandAddSubscriptionToTxn {
                request_id: rid,
                txnid_least_bits: Some(txn.least),
                txnid_most_bits: Some(txn.most),
                subscription: subscriptions
                    .iter()
                    .map(|(topic, subscription)| proto::Subscription {
                        topic: topic.clone(),
                        subscription: subscription.clone(),
                    })
                    .collect(),
            });
            let r = conn.request(rid, c, self.client.op_timeout).await;
            let resp = self.check(txn.most, r).await?;
            let kind = resp.r#type();
            let r = resp.add_subscription_to_txn_response.ok_or_else(|| {
                TxnError::Protocol(format!(
                    "ADD_SUBSCRIPTION_TO_TXN answered with a {:?} frame that has no add_subscription_to_txn_response",
                    kind
                ))
            })?;
            if let Some(e) = r.error {
                let err = TxnError::Server {
                    code: server_error(e),
                    message: r.message.unwrap_or_default(),
                };
                return Err(self.check_err(txn.most, err).await);
            }
            Ok(())
        })
        .await
    }

    /// One END_TXN, not retried: the caller decides what its answer means.
    pub async fn end_txn(&self, txn: TxnId, action: TxnAction) -> Result<(), TxnError> {
        // Anything that fails before the request is handed to a connection never left us.
        let conn = self.conn(txn.most).await.map_err(not_sent("END_TXN"))?;
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
        let kind = resp.r#type();
        let r = resp.end_txn_response.ok_or_else(|| {
            TxnError::Protocol(format!(
                "END_TXN answered with a {:?} frame that has no end_txn_response",
                kind
            ))
        })?;
        if let Some(e) = r.error {
            let err = TxnError::Server {
                code: server_error(e),
                message: r.message.unwrap_or_default(),
            };
            return Err(self.check_err(txn.most, err).await);
        }
        Ok(())
    }

    /// END_TXN ABORT of a transaction an interrupted run left in flight, asked again (with
    /// backoff) while it goes unanswered or is refused as retryable, for up to `patience`; then
    /// what the last answer says the transaction became (`classify_leftover_abort`: committed
    /// or aborted only on the coordinator's own words, else `None`). Err only when the client
    /// cannot go on at all (`TxnError::Fatal`).
    pub async fn abort_leftover(
        &self,
        txn: TxnId,
        patience: Duration,
    ) -> Result<(Option<crate::history::Outcome>, String), TxnError> {
        let deadline = tokio::time::Instant::now() + patience;
        let mut backoff =
            crate::backoff::Backoff::new(Duration::from_millis(250), Duration::from_secs(2));
        loop {
            let r = self.end_txn(txn, TxnAction::Abort).await;
            if let Err(TxnError::Fatal(m)) = &r {
                return Err(TxnError::Fatal(m.clone()));
            }
            let retry = matches!(&r, Err(e) if e.is_retryable());
            if retry && tokio::time::Instant::now() < deadline {
                tracing::info!("resume: abort of {txn} not answered ({r:?}); retrying");
                backoff.wait().await;
                continue;
            }
            return Ok(classify_leftover_abort(&r));
        }
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
            TxnError::Timeout(_)
            | TxnError::ConnectionLost(_)
            | TxnError::NotSent(_)
            | TxnError::Protocol(_)
            | TxnError::Client(_) => true,
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
            TxnError::Fatal(_) | TxnError::DuplicateDropped(_) => false,
        };
        if moved {
            self.forget(tc).await;
        }
        e
    }
}

/// The transaction id of a NEW_TXN reply; a reply without both id halves is a protocol error
/// (never an invented id: a wrong id would commit or abort somebody else's transaction).
pub fn new_txn_id(r: &proto::CommandNewTxnResponse) -> Result<TxnId, TxnError> {
    match (r.txnid_most_bits, r.txnid_least_bits) {
        (Some(most), Some(least)) => Ok(TxnId { most, least }),
        (most, least) => Err(TxnError::Protocol(format!(
            "NEW_TXN answered success without a whole transaction id (most bits {most:?}, least bits {least:?})"
        ))),
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

    fn is<F: Fn(&CommitAnswer) -> bool>(r: &Result<(), TxnError>, f: F) -> bool {
        f(&classify_commit(r))
    }

    // One row per reply in the error table (shared notes): only a request that never left the
    // client is NotSent; everything else after END_TXN was handed over is at best ambiguous.
    #[test]
    fn commit_answers() {
        use CommitAnswer as A;
        assert!(is(&Ok(()), |a| matches!(a, A::Committed(_))));
        let invalid = |state: &str| {
            server(
                ServerError::InvalidTxnStatus,
                &format!("Expect Txn `(0,5)` to be in OPEN status but it is in {state} status"),
            )
        };
        assert!(is(&invalid("COMMITTING"), |a| matches!(a, A::Committed(_))));
        assert!(is(&invalid("COMMITTED"), |a| matches!(a, A::Committed(_))));
        assert!(is(&invalid("ABORTING"), |a| matches!(a, A::Aborted(_))));
        assert!(is(&invalid("ABORTED"), |a| matches!(a, A::Aborted(_))));
        assert!(is(
            &server(ServerError::InvalidTxnStatus, "garbled"),
            |a| matches!(a, A::Ambiguous(_))
        ));
        assert!(is(
            &server(ServerError::TransactionNotFound, "gone"),
            |a| matches!(a, A::NotFound(_))
        ));
        // Regression: the broker persists COMMITTING, then looks the coordinator up again; a
        // TransactionCoordinatorNotFound may come back for a commit its next owner finishes.
        assert!(is(
            &server(ServerError::TransactionCoordinatorNotFound, "x"),
            |a| matches!(a, A::Ambiguous(_))
        ));
        assert!(is(
            &server(ServerError::UnknownError, "Expect Transaction Coordinator `0` to be in Ready status but it is in Initializing state"),
            |a| matches!(a, A::Ambiguous(_))
        ));
        assert!(is(
            &server(ServerError::ServiceNotReady, "x"),
            |a| matches!(a, A::Ambiguous(_))
        ));
        assert!(is(
            &server(ServerError::PersistenceError, "x"),
            |a| matches!(a, A::Ambiguous(_))
        ));
        assert!(is(&Err(TxnError::Timeout("t".into())), |a| matches!(
            a,
            A::Ambiguous(_)
        )));
        assert!(is(
            &Err(TxnError::ConnectionLost("c".into())),
            |a| matches!(a, A::Ambiguous(_))
        ));
        assert!(is(&Err(TxnError::Protocol("p".into())), |a| matches!(
            a,
            A::Ambiguous(_)
        )));
        assert!(is(&Err(TxnError::NotSent("n".into())), |a| matches!(
            a,
            A::NotSent(_)
        )));
        assert!(is(
            &server(
                ServerError::NotAllowedError,
                "Transactions are not enabled."
            ),
            |a| matches!(a, A::Fatal(_))
        ));
    }

    #[test]
    fn leftover_aborts_are_known_only_on_the_coordinators_words() {
        use crate::history::Outcome;
        assert_eq!(classify_leftover_abort(&Ok(())).0, Some(Outcome::Aborted));
        assert_eq!(
            classify_leftover_abort(&server(
                ServerError::InvalidTxnStatus,
                "Expect Txn `(0,5)` to be in OPEN status but it is in COMMITTED status"
            ))
            .0,
            Some(Outcome::Committed)
        );
        assert_eq!(
            classify_leftover_abort(&server(
                ServerError::InvalidTxnStatus,
                "Expect Txn `(0,5)` to be in OPEN status but it is in ABORTING status"
            ))
            .0,
            Some(Outcome::Aborted)
        );
        // Regression: an InvalidTxnStatus naming no state was taken as "aborted".
        assert_eq!(
            classify_leftover_abort(&server(ServerError::InvalidTxnStatus, "odd")).0,
            None
        );
        assert_eq!(
            classify_leftover_abort(&server(ServerError::TransactionNotFound, "gone")).0,
            None
        );
        assert_eq!(
            classify_leftover_abort(&Err(TxnError::Timeout("t".into()))).0,
            None
        );
    }

    #[test]
    fn a_new_txn_reply_without_its_id_is_a_protocol_error() {
        let mut r = proto::CommandNewTxnResponse {
            request_id: 1,
            txnid_least_bits: Some(7),
            txnid_most_bits: Some(0),
            ..Default::default()
        };
        assert_eq!(new_txn_id(&r).unwrap(), TxnId { most: 0, least: 7 });
        r.txnid_least_bits = None;
        assert!(matches!(new_txn_id(&r), Err(TxnError::Protocol(_))));
        r.txnid_least_bits = Some(7);
        r.txnid_most_bits = None;
        assert!(matches!(new_txn_id(&r), Err(TxnError::Protocol(_))));
    }
}
