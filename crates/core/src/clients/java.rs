//! The official Java client's answers to `Transaction.commit()` (org.apache.pulsar:pulsar-client).
//! Read from the client's source, 4.0.7 and 4.2.4 (the commit path is the same in both:
//! `TransactionImpl`, `TransactionCoordinatorClientImpl`, `TransactionMetaStoreHandler`,
//! `TransactionCoordinatorClientException` differ only in how backoffs are built). A class not
//! listed is ambiguous.
//!
//! The commit path: `TransactionImpl.commit()` checks the client's local state (`checkState`,
//! OPEN or COMMITTING), waits for the transaction's sends, aborts instead if one failed, else
//! `TransactionCoordinatorClientImpl.commitAsync` picks the handler of the transaction's
//! coordinator and `TransactionMetaStoreHandler.endTxnAsync` writes END_TXN (or queues it while
//! reconnecting and writes it on `connectionOpened`). A broker error is turned into a class by
//! `TransactionMetaStoreHandler.getExceptionByServerError`; TransactionCoordinatorNotFound is
//! never surfaced (`checkIfNeedRetryByError` resends until the operation timeout).
//!
//! Rows are full binary class names (the driver reports `getClass().getName()`), so that e.g.
//! `java.util.concurrent.TimeoutException` is not taken for the client's own.

use super::{Meaning, Row};

const INVALID_TXN_STATUS: &str =
    "org.apache.pulsar.client.api.transaction.TransactionCoordinatorClientException$InvalidTxnStatusException";

pub const COMMIT_ROWS: &[Row] = &[
    // Must precede the CoordinatorState row: this message names the client's local state and
    // lists "expect: [OPEN, COMMITTING]", which policy::state_named would read as COMMITTING.
    Row {
        class: INVALID_TXN_STATUS,
        message_contains: Some("with unexpected state"),
        meaning: Meaning::NotSentForGood,
        source: "TransactionImpl.commit → checkState(OPEN, COMMITTING): when the client's local \
                 state is neither, commit() returns a failed future with \"[most:least] with \
                 unexpected state: S, expect: [OPEN, COMMITTING]\" before anything else \
                 (tcClient.commitAsync is only reached in the thenCompose after it). The states \
                 that fail it: TIME_OUT (the client's own timer, only from OPEN, so no commit ever \
                 passed checkState), ERROR (set after a broker's TransactionNotFound or \
                 InvalidTxnStatus to an earlier END_TXN), ABORTING/ABORTED (its own abort). No \
                 END_TXN left the client for this call; what earlier calls sent is the policy's \
                 record. (checkIfOpen's \"with unexpected state : S, expect OPEN state!\" is the \
                 same client-side refusal, from sends, not from commit.)",
    },
    Row {
        class: INVALID_TXN_STATUS,
        message_contains: Some("it is in"),
        meaning: Meaning::CoordinatorState,
        source: "TransactionMetaStoreHandler.handleEndTxnResponse → checkIfNeedRetryByError → \
                 getExceptionByServerError(InvalidTxnStatus, msg): the broker's message verbatim, \
                 the coordinator's CoordinatorException.InvalidTxnStatusException \"Expect Txn `x` \
                 to be in S status but it is in T status\"; T is the coordinator's own state of \
                 the transaction.",
    },
    Row {
        class: "org.apache.pulsar.client.api.transaction.TransactionCoordinatorClientException$TransactionNotFoundException",
        message_contains: None,
        meaning: Meaning::Ambiguous,
        source: "TransactionMetaStoreHandler.getExceptionByServerError(TransactionNotFound, msg): \
                 the only place the client creates it: the coordinator answered an END_TXN that \
                 it does not know the transaction (timed out and aborted, or already ended and \
                 forgotten). Not proof that no commit applied, because one commit() may send \
                 END_TXN more than once: the handler sends a pending request again on its next \
                 connection. Seen through the reply_loss proxy on 4.2.4: one commit() of (0,6), \
                 three END_TXN replies (a `count: 3` fault) dropped in 0.2 s with their connections, one request id, the first commit \
                 applied, and commit() failed with this; an application that resends then \
                 duplicates (#19629's pattern). Also seen: a commit timed out while the broker \
                 was paused, the second commit() got this, the messages were committed.",
    },
    Row {
        class: "org.apache.pulsar.client.api.PulsarClientException$TransactionHasOperationFailedException",
        message_contains: None,
        meaning: Meaning::NotSent,
        source: "TransactionImpl.commit: after the transaction's sends complete, if any failed \
                 (hasOpsFailed, set in registerSendOp) it calls internalAbort() instead of \
                 tcClient.commitAsync and fails the commit with this exception whatever the abort \
                 answered. No END_TXN COMMIT left the client for this call (an END_TXN ABORT may \
                 have); the transaction ends aborted, by that abort or the coordinator's timeout.",
    },
    Row {
        class: "org.apache.pulsar.client.api.transaction.TransactionCoordinatorClientException$MetaStoreHandlerNotExistsException",
        message_contains: None,
        meaning: Meaning::NotSent,
        source: "TransactionCoordinatorClientImpl.commitAsync: no handler for the transaction's \
                 coordinator (txnID most bits) in handlerMap → a failed future before \
                 endTxnAsync; nothing written.",
    },
    Row {
        class: "org.apache.pulsar.client.api.transaction.TransactionCoordinatorClientException$MetaStoreHandlerNotReadyException",
        message_contains: None,
        meaning: Meaning::Ambiguous,
        source: "TransactionMetaStoreHandler.checkStateAndSendRequest, handler Closing/Closed/\
                 Failed/Uninitialized: on the first attempt nothing is written, but the same \
                 method resends after a TransactionCoordinatorNotFound answer \
                 (handleEndTxnResponse's retry timer), when a copy of the request already reached \
                 a broker; the message does not tell the two apart.",
    },
    Row {
        class: "org.apache.pulsar.client.api.PulsarClientException$TimeoutException",
        message_contains: None,
        meaning: Meaning::Ambiguous,
        source: "TransactionMetaStoreHandler.run: the operation timeout expired for a pending \
                 END_TXN (\"End [COMMIT] TXN (m,l) failed due to timeout\"); the request was \
                 written, or queued while Connecting and written on connectionOpened, and may have \
                 been applied.",
    },
    Row {
        class: "org.apache.pulsar.client.api.PulsarClientException$AlreadyClosedException",
        message_contains: None,
        meaning: Meaning::Ambiguous,
        source: "TransactionMetaStoreHandler.failPendingRequest (connectionOpened on a closing \
                 handler): fails every pending request, including ones already written on an \
                 earlier connection.",
    },
    Row {
        class: "org.apache.pulsar.client.api.transaction.TransactionCoordinatorClientException",
        message_contains: None,
        meaning: Meaning::Ambiguous,
        source: "TransactionMetaStoreHandler.getExceptionByServerError default branch: any other \
                 broker error to END_TXN (e.g. a failure after the coordinator logged COMMITTING); \
                 also canSendRequest's InterruptedException wrapper. The base class says nothing \
                 about how far the commit got.",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::{classify_commit, row_for, ClientError, ClientKind};
    use crate::policy::CommitAnswer;

    fn answer(class: &str, message: &str) -> CommitAnswer {
        classify_commit(
            ClientKind::Java,
            &Err(ClientError {
                class: class.into(),
                message: message.into(),
                causes: vec![],
            }),
        )
    }

    fn row_index(class: &str, message: &str) -> Option<usize> {
        let e = ClientError {
            class: class.into(),
            message: message.into(),
            causes: vec![],
        };
        row_for(ClientKind::Java, &e).map(|r| {
            COMMIT_ROWS
                .iter()
                .position(|x| x.class == r.class && x.message_contains == r.message_contains)
                .unwrap()
        })
    }

    #[test]
    fn local_check_state_is_not_sent_not_committing() {
        // Verbatim from the driver against 4.2.4 (client timer had moved the txn to TIME_OUT).
        let m = "[0:256] with unexpected state: TIME_OUT, expect: [OPEN, COMMITTING]";
        assert_eq!(row_index(INVALID_TXN_STATUS, m), Some(0));
        assert!(matches!(
            answer(INVALID_TXN_STATUS, m),
            CommitAnswer::NotSent(_)
        ));
        let m = "[0:660] with unexpected state: ERROR, expect: [OPEN, COMMITTING]";
        assert!(matches!(
            answer(INVALID_TXN_STATUS, m),
            CommitAnswer::NotSent(_)
        ));
    }

    #[test]
    fn broker_invalid_txn_status_reads_the_coordinator_state() {
        let committing = "Expect Txn `(0,32)` to be in OPEN status but it is in COMMITTING status";
        assert_eq!(row_index(INVALID_TXN_STATUS, committing), Some(1));
        assert!(matches!(
            answer(INVALID_TXN_STATUS, committing),
            CommitAnswer::Committed(_)
        ));
        let aborted = "Expect Txn `(0,7)` to be in COMMITTING status but it is in ABORTED status";
        assert!(matches!(
            answer(INVALID_TXN_STATUS, aborted),
            CommitAnswer::Aborted(_)
        ));
        // Neither form: no row, ambiguous.
        assert!(matches!(
            answer(INVALID_TXN_STATUS, "something else"),
            CommitAnswer::Ambiguous(_)
        ));
    }

    #[test]
    fn transaction_not_found_is_ambiguous_because_the_client_resends_end_txn_itself() {
        // Regression: graded "aborted on Pulsar's word" while the commit had applied (a
        // dropped END_TXN reply, the client's own second END_TXN answered TransactionNotFound),
        // which turned a resend's duplicate into a violation blamed on Pulsar.
        let c = "org.apache.pulsar.client.api.transaction.TransactionCoordinatorClientException$TransactionNotFoundException";
        assert_eq!(row_index(c, "x"), Some(2));
        assert!(matches!(
            answer(c, "The transaction with this txdID `(0,660)`not found "),
            CommitAnswer::Ambiguous(_)
        ));
    }

    #[test]
    fn operation_failed_is_not_sent() {
        let c = "org.apache.pulsar.client.api.PulsarClientException$TransactionHasOperationFailedException";
        assert_eq!(row_index(c, "x"), Some(3));
        assert!(matches!(
            answer(
                c,
                "Now allowed to commit the transaction due to failed operations of producing or acknowledgment"
            ),
            CommitAnswer::NotSent(_)
        ));
    }

    #[test]
    fn handler_not_exists_is_not_sent() {
        let c = "org.apache.pulsar.client.api.transaction.TransactionCoordinatorClientException$MetaStoreHandlerNotExistsException";
        assert_eq!(row_index(c, "x"), Some(4));
        assert!(matches!(answer(c, "x"), CommitAnswer::NotSent(_)));
    }

    #[test]
    fn handler_not_ready_is_ambiguous() {
        let c = "org.apache.pulsar.client.api.transaction.TransactionCoordinatorClientException$MetaStoreHandlerNotReadyException";
        assert_eq!(row_index(c, "x"), Some(5));
        assert!(matches!(
            answer(
                c,
                "Transaction meta store handler for tcId 0 is closing or closed."
            ),
            CommitAnswer::Ambiguous(_)
        ));
    }

    #[test]
    fn client_timeout_is_ambiguous_but_not_javas_own_timeout_class() {
        let c = "org.apache.pulsar.client.api.PulsarClientException$TimeoutException";
        assert_eq!(row_index(c, "x"), Some(6));
        assert!(matches!(
            answer(
                c,
                "End [COMMIT] TXN (0,660) failed due to timeout. connection: x. pending-queue: 0"
            ),
            CommitAnswer::Ambiguous(_)
        ));
        // Full names: java.util.concurrent.TimeoutException is no row of this table.
        assert_eq!(
            row_index("java.util.concurrent.TimeoutException", "x"),
            None
        );
    }

    #[test]
    fn already_closed_is_ambiguous() {
        let c = "org.apache.pulsar.client.api.PulsarClientException$AlreadyClosedException";
        assert_eq!(row_index(c, "x"), Some(7));
        assert!(matches!(answer(c, "x"), CommitAnswer::Ambiguous(_)));
    }

    #[test]
    fn base_coordinator_exception_is_ambiguous() {
        let c = "org.apache.pulsar.client.api.transaction.TransactionCoordinatorClientException";
        assert_eq!(row_index(c, "x"), Some(8));
        assert!(matches!(answer(c, "x"), CommitAnswer::Ambiguous(_)));
    }

    #[test]
    fn every_row_is_tested_and_cites_a_source() {
        assert_eq!(COMMIT_ROWS.len(), 9);
        for r in COMMIT_ROWS {
            assert!(r.source.len() > 40, "{}", r.class);
            assert!(r.class.starts_with("org.apache.pulsar."), "{}", r.class);
        }
    }
}
