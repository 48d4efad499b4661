//! The official Go client's answers to `Transaction.Commit` (github.com/apache/pulsar-client-go
//! v0.19.0, the version `drivers/go/go.mod` pins); a class not listed is ambiguous.
//!
//! The Go driver reports a `*pulsar.Error` as its `pulsar.Result` constant's name and any other
//! error as its Go type (`%T`, e.g. `*errors.errorString`); `message` is `err.Error()`, which for
//! a `*pulsar.Error` is `"<text>: <result>"` (error.go `newError`; the client's own result
//! names lack InvalidStatus and print it as `Result(40)`).
//!
//! What the Go client's Commit can tell (pulsar/transaction_impl.go `(*transaction).Commit`):
//! it first moves the transaction object's own state from TxnOpen to TxnCommitting and refuses
//! with InvalidStatus if it is not TxnOpen; it waits for the transaction's pending sends (at
//! most the operation timeout); only then does it send END_TXN
//! (transaction_coordinator_client.go `endTxn`), once: the handler puts an operation back on its
//! queue only for `internal.ErrConnectionClosed` (`checkRetriableError`), which the connection
//! gives a request it refused before writing it (connection.go `SendRequest`); a written request
//! whose connection closes is failed with another error value of the same text
//! (`failPendingRequests(errConnectionClosed)`, connection.go) and not sent again. After an
//! answer other than TransactionNotFound or InvalidStatus (a timeout, a closed connection,
//! another server error) the state stays TxnCommitting, so every later Commit or Abort on that
//! object is refused locally: the Go client never sends a second END_TXN for a transaction.
//!
//! No row is `CoordinatorState`: error.go `getErrorFromServerError` keeps only the server error
//! code (`ServerError.String()`) and drops the broker's message, so the state the coordinator
//! names in an InvalidTxnStatus answer never reaches the application.

use super::{Meaning, Row};

pub const COMMIT_ROWS: &[Row] = &[
    Row {
        class: "InvalidStatus",
        message_contains: Some("Expected transaction state"),
        meaning: Meaning::NotSentForGood,
        source: "pulsar/transaction_impl.go (*transaction).Commit: the first statement, \
                 state.CompareAndSwap(TxnOpen, TxnCommitting), failed and Commit returned \
                 newError(InvalidStatus, txnStateErrorMessage(TxnOpen, actual)) before the \
                 operations wait and before tcClient.endTxn: this call sent nothing. The object \
                 is not TxnOpen because an earlier Commit/Abort on it left it TxnCommitting \
                 (ambiguous answer), TxnCommitted, TxnAborted or TxnError (TransactionNotFound / \
                 InvalidTxnStatus from the coordinator), because a send in it failed \
                 (endSendOrAckOp sets TxnError), or because the client's own timer \
                 (newTransaction: time.After(timeout)) or the operations wait set TxnTimeout",
    },
    Row {
        class: "TimeoutError",
        message_contains: Some(
            "There are some operations that are not completed after the timeout",
        ),
        meaning: Meaning::NotSent,
        source: "pulsar/transaction_impl.go (*transaction).Commit: the wait for the \
                 transaction's pending sends (select on opsFlow) ran past the operation timeout; \
                 Commit set TxnTimeout and returned this error before tcClient.endTxn",
    },
    Row {
        class: "MaxConcurrentOperationsReached",
        message_contains: None,
        meaning: Meaning::NotSent,
        source: "pulsar/transaction_coordinator_client.go (*transactionCoordinatorClient).endTxn: \
                 canSendRequest failed (ErrMaxConcurrentOpsReached) before the END_TXN op was \
                 handed to the handler's event loop (in v0.19.0 semaphore.Acquire with \
                 context.Background never fails, so this is not expected at all)",
    },
    Row {
        class: "TransactionNoFoundError",
        message_contains: None,
        meaning: Meaning::NotFound,
        source: "pulsar/error.go getErrorFromServerError: the coordinator's EndTxnResponse \
                 carried ServerError_TransactionNotFound (transaction_coordinator_client.go \
                 (*transactionHandler).endTxn); no other path of Commit yields this Result. It \
                 answers the only END_TXN of the transaction that reached the coordinator: \
                 checkRetriableError re-queues an END_TXN only on internal.ErrConnectionClosed, \
                 given to a request refused before it was written (connection.go SendRequest); \
                 a written one whose connection closed fails with errConnectionClosed \
                 (failPendingRequests) and is not resent",
    },
    Row {
        class: "InvalidStatus",
        message_contains: Some("InvalidTxnStatus"),
        meaning: Meaning::Ambiguous,
        source: "pulsar/error.go getErrorFromServerError: the coordinator's EndTxnResponse \
                 carried ServerError_InvalidTxnStatus, but the client keeps only the code's name \
                 (newError(InvalidStatus, serverError.String())) and drops the broker's message \
                 naming the state, so committed and aborted cannot be told apart",
    },
    Row {
        class: "UnknownError",
        message_contains: None,
        meaning: Meaning::Ambiguous,
        source: "pulsar/error.go getErrorFromServerError: any other server error in the \
                 EndTxnResponse (TransactionCoordinatorNotFound, ServiceNotReady, NotAllowed, ...) \
                 becomes UnknownError with only the code's name; the request reached a broker and \
                 the client says nothing more",
    },
    Row {
        class: "*errors.errorString",
        message_contains: Some("request timed out"),
        meaning: Meaning::Ambiguous,
        source: "pulsar/internal/rpc_client.go (*rpcClient).RequestOnCnx: ErrRequestTimeOut after \
                 the operation timeout; the END_TXN had been handed to the connection and may have \
                 been written and applied (a late answer is dropped)",
    },
    Row {
        class: "*errors.errorString",
        message_contains: Some("connection closed"),
        meaning: Meaning::Ambiguous,
        source: "pulsar/internal/connection.go (*connection).run: failPendingRequests(\
                 errConnectionClosed) for requests written and still unanswered when the \
                 connection closed. (The exported internal.ErrConnectionClosed, same text, for a \
                 request refused before it was written, is caught by \
                 transaction_coordinator_client.go checkRetriableError, which re-queues the op, \
                 so it never reaches Commit; the two cannot be told apart by text anyway)",
    },
    Row {
        class: "*errors.errorString",
        message_contains: Some("server error:"),
        meaning: Meaning::Ambiguous,
        source: "pulsar/internal/connection.go (*connection).handleResponseError: the broker \
                 answered the END_TXN with a generic CommandError (\"server error: <code>: \
                 <message>\"); the request reached the broker",
    },
    Row {
        class: "TransactionCoordinatorNotEnabled",
        message_contains: None,
        meaning: Meaning::Fatal,
        source: "pulsar/transaction_coordinator_client.go (*transactionCoordinatorClient).start: \
                 ErrTransactionCoordinatorNotEnabled when the broker has no transaction \
                 coordinator (pulsar/system/transaction_coordinator_assign has no partitions). In \
                 v0.19.0 it comes from pulsar.NewClient (the driver's connect), never from \
                 Commit; listed so the class is fatal wherever it shows",
    },
];

#[cfg(test)]
mod tests {
    use super::super::{classify_commit, row_for, ClientError, ClientKind, Meaning};
    use crate::policy::CommitAnswer;

    fn err(class: &str, message: &str) -> ClientError {
        ClientError {
            class: class.into(),
            message: message.into(),
            causes: vec![],
        }
    }

    fn meaning(class: &str, message: &str) -> Option<Meaning> {
        row_for(ClientKind::Go, &err(class, message)).map(|r| r.meaning)
    }

    // Messages below are the ones the Go driver printed against Pulsar 4.2.4 where one was
    // provoked (local state checks, TransactionNotFound, request timeout), else built the way
    // the cited source builds them.

    #[test]
    fn local_state_check_is_not_sent() {
        for actual in [
            "TxnCommitting",
            "TxnCommitted",
            "TxnAborted",
            "TxnTimeout",
            "TxnError",
        ] {
            let m = format!("Expected transaction state: TxnOpen, actual: {actual}: Result(40)");
            assert_eq!(
                meaning("InvalidStatus", &m),
                Some(Meaning::NotSentForGood),
                "{m}"
            );
            assert!(matches!(
                classify_commit(ClientKind::Go, &Err(err("InvalidStatus", &m))),
                CommitAnswer::NotSent(_)
            ));
        }
    }

    #[test]
    fn pending_operations_timeout_is_not_sent() {
        let m = "There are some operations that are not completed after the timeout.: TimeoutError";
        assert_eq!(meaning("TimeoutError", m), Some(Meaning::NotSent));
        // Any other TimeoutError is not this row.
        assert_eq!(
            meaning("TimeoutError", "message send timeout: TimeoutError"),
            None
        );
    }

    #[test]
    fn max_concurrent_operations_is_not_sent() {
        assert_eq!(
            meaning(
                "MaxConcurrentOperationsReached",
                "Max concurrent operations reached: Result(44)"
            ),
            Some(Meaning::NotSent)
        );
    }

    #[test]
    fn transaction_not_found_is_not_found_the_go_client_sends_end_txn_once() {
        // Unlike the Java client's, which sends a pending END_TXN again on reconnect.
        let m = "TransactionNotFound: TransactionNoFoundError";
        assert_eq!(
            meaning("TransactionNoFoundError", m),
            Some(Meaning::NotFound)
        );
        assert!(matches!(
            classify_commit(ClientKind::Go, &Err(err("TransactionNoFoundError", m))),
            CommitAnswer::NotFound(_)
        ));
    }

    #[test]
    fn coordinator_invalid_txn_status_is_ambiguous() {
        let m = "InvalidTxnStatus: Result(40)";
        assert_eq!(meaning("InvalidStatus", m), Some(Meaning::Ambiguous));
        assert!(matches!(
            classify_commit(ClientKind::Go, &Err(err("InvalidStatus", m))),
            CommitAnswer::Ambiguous(_)
        ));
    }

    #[test]
    fn other_server_errors_are_ambiguous() {
        assert_eq!(
            meaning(
                "UnknownError",
                "TransactionCoordinatorNotFound: UnknownError"
            ),
            Some(Meaning::Ambiguous)
        );
    }

    #[test]
    fn request_timeout_is_ambiguous() {
        assert_eq!(
            meaning("*errors.errorString", "request timed out"),
            Some(Meaning::Ambiguous)
        );
    }

    #[test]
    fn connection_closed_is_ambiguous() {
        assert_eq!(
            meaning("*errors.errorString", "connection closed"),
            Some(Meaning::Ambiguous)
        );
    }

    #[test]
    fn command_error_is_ambiguous() {
        assert_eq!(
            meaning(
                "*errors.errorString",
                "server error: ServiceNotReady: Namespace is being unloaded"
            ),
            Some(Meaning::Ambiguous)
        );
    }

    #[test]
    fn coordinator_not_enabled_is_fatal() {
        let m = "The broker doesn't enable the transaction coordinator, or the transaction \
                 coordinator has not initialized: Result(45)";
        assert!(matches!(
            classify_commit(
                ClientKind::Go,
                &Err(err("TransactionCoordinatorNotEnabled", m))
            ),
            CommitAnswer::Fatal(_)
        ));
    }

    #[test]
    fn every_row_cites_a_go_source_file() {
        for r in super::COMMIT_ROWS {
            assert!(
                r.source.starts_with("pulsar/") && r.source.contains(".go "),
                "{r:?}"
            );
        }
    }
}
