//! Where a worker's inputs come from: the own client's consumer (`TxnConsumer`), or a
//! consumer of the official client in the run's driver (`subscribe`, `receive`, `ack`, `nack`,
//! `close_consumer` of docs/drivers.md). The worker asks both the same things; what an answer
//! of the official client's ACK proves is `driven_ack` below.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use pulsar::message::proto::MessageIdData;

use crate::drivers::{Answer, Driver, SubscribeArgs};
use crate::history::TxnId;
use crate::txn::consumer::{
    classify_ack, AckAnswer, AckKind, ConsumerHandle, Received, TxnConsumer,
};

/// A message's place: input partition, ledger, entry, batch index (-1: not batched).
pub(super) type Key = (usize, u64, u64, i32);

pub(super) fn key(p: usize, id: &MessageIdData) -> Key {
    (p, id.ledger_id, id.entry_id, id.batch_index.unwrap_or(-1))
}

/// One input in hand: its partition, the message, its number.
pub(super) struct Input {
    pub(super) partition: usize,
    pub(super) msg: Received,
    pub(super) n: u64,
}

/// One input partition's consumer of a worker.
pub(super) enum Source {
    Own(TxnConsumer),
    Driven(Driven),
}

/// A consumer in the driver: its handle there, and the messages one `receive` brought that
/// the worker has not taken yet.
pub(super) struct Driven {
    driver: Arc<Driver>,
    id: u64,
    /// At most this many messages per `receive`.
    max: usize,
    buffer: VecDeque<Received>,
    op_timeout: Duration,
    /// Closed by `close`: nothing to close when dropped.
    closed: bool,
}

/// A handle on a worker's consumer for a hand-back from a commit task.
#[derive(Clone)]
pub(super) enum Hand {
    Own(ConsumerHandle),
    Driven { driver: Arc<Driver>, id: u64 },
}

impl Driven {
    pub(super) async fn subscribe(
        driver: &Arc<Driver>,
        args: &SubscribeArgs<'_>,
        op_timeout: Duration,
    ) -> Result<Driven, Answer> {
        let id = driver
            .subscribe(args, op_timeout * 2 + Duration::from_secs(10))
            .await?;
        Ok(Driven {
            driver: driver.clone(),
            id,
            max: args.receiver_queue.max(1) as usize,
            buffer: VecDeque::new(),
            op_timeout,
            closed: false,
        })
    }
}

impl Drop for Driven {
    /// A consumer the worker drops (lost) is closed in the driver, so the broker hands what it
    /// held to the subscription again, as for the own client's.
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        let (driver, id, t) = (self.driver.clone(), self.id, self.op_timeout);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = driver.close_consumer(id, t).await;
            });
        }
    }
}

impl Source {
    /// The next input, waiting at most `wait` for one.
    pub(super) async fn receive(&mut self, wait: Duration) -> Result<Option<Received>, String> {
        match self {
            Source::Own(c) => c.receive(wait).await.map_err(|e| e.to_string()),
            Source::Driven(d) => {
                if let Some(m) = d.buffer.pop_front() {
                    return Ok(Some(m));
                }
                let got = d
                    .driver
                    .receive(d.id, d.max, wait, d.op_timeout + Duration::from_secs(10))
                    .await
                    .map_err(|a| format!("{} client: receive: {a}", d.driver.kind))?;
                d.buffer.extend(got);
                Ok(d.buffer.pop_front())
            }
        }
    }

    /// Acknowledge one input in `txn`, and what the answer proves.
    pub(super) async fn ack(&self, txn: TxnId, id: &MessageIdData) -> AckAnswer {
        match self {
            Source::Own(c) => classify_ack(
                &c.ack(Some(txn), std::slice::from_ref(id), AckKind::Individual)
                    .await,
            ),
            Source::Driven(d) => {
                let r = d
                    .driver
                    .ack(
                        d.id,
                        Some(txn),
                        std::slice::from_ref(id),
                        d.op_timeout + Duration::from_secs(10),
                    )
                    .await;
                driven_ack(d.driver.kind.name(), &r)
            }
        }
    }

    /// A driver's consumer whose `ack` answers each id on its own (`ack_each`): `ack_all`
    /// asks it once for all.
    pub(super) fn acks_in_one_request(&self) -> bool {
        matches!(self, Source::Driven(d) if d.driver.hello.ack_each)
    }

    /// Acknowledge `ids` (inputs of this partition) in `txn`: in one request when
    /// `acks_in_one_request`, otherwise one ACK each, all at once. What each answer proves, in
    /// the ids' order.
    pub(super) async fn ack_all(&self, txn: TxnId, ids: &[MessageIdData]) -> Vec<AckAnswer> {
        match self {
            Source::Driven(d) if self.acks_in_one_request() => {
                let name = d.driver.kind.name();
                let timeout = d.op_timeout + Duration::from_secs(10);
                match d.driver.ack_each(d.id, Some(txn), ids, timeout).await {
                    Ok(answers) => answers
                        .into_iter()
                        .map(|a| driven_ack(name, &a.map_err(Answer::Client)))
                        .collect(),
                    Err(a) => vec![driven_ack(name, &Err(a)); ids.len()],
                }
            }
            _ => futures::future::join_all(ids.iter().map(|id| self.ack(txn, id))).await,
        }
    }

    pub(super) fn handle(&self) -> Hand {
        match self {
            Source::Own(c) => Hand::Own(c.handle()),
            Source::Driven(d) => Hand::Driven {
                driver: d.driver.clone(),
                id: d.id,
            },
        }
    }

    /// Hand back everything the consumer holds unacknowledged (the idle nudge).
    pub(super) fn redeliver_all(&mut self) {
        match self {
            Source::Own(c) => {
                let _ = c.redeliver_unacknowledged(&[]);
            }
            Source::Driven(d) => {
                // The driver hands back what it holds, these included.
                d.buffer.clear();
                let _ = Hand::Driven {
                    driver: d.driver.clone(),
                    id: d.id,
                }
                .redeliver_unacknowledged(&[]);
            }
        }
    }

    /// Close the consumer (a `consumer_restart`), awaiting the client's answer.
    pub(super) async fn close(self) -> Result<(), String> {
        match self {
            Source::Own(c) => c.close().await.map_err(|e| e.to_string()),
            Source::Driven(mut d) => {
                d.closed = true;
                d.driver
                    .close_consumer(d.id, d.op_timeout + Duration::from_secs(10))
                    .await
                    .map_err(|a| a.to_string())
            }
        }
    }

    /// The own client's consumer (the conflict probe needs it).
    pub(super) fn own(&self) -> Option<&TxnConsumer> {
        match self {
            Source::Own(c) => Some(c),
            Source::Driven(_) => None,
        }
    }

    /// What `close` answered, in the words `consumer_closed` records.
    pub(super) fn closed_words(&self) -> &'static str {
        match self {
            Source::Own(_) => "closed (CLOSE_CONSUMER answered success)",
            Source::Driven(_) => "closed (the client's close() completed normally)",
        }
    }
}

impl Hand {
    /// Hand `ids` back to the subscription (none: everything the consumer holds). The own
    /// client sends REDELIVER_UNACKNOWLEDGED_MESSAGES now; a driver's consumer is asked to
    /// `nack` them (the client's negative acknowledgement) in a task of its own, its failure
    /// only logged: the consumer is gone, and the broker took back what it held.
    pub(super) fn redeliver_unacknowledged(&self, ids: &[MessageIdData]) -> Result<(), String> {
        match self {
            Hand::Own(h) => h.redeliver_unacknowledged(ids).map_err(|e| e.to_string()),
            Hand::Driven { driver, id } => {
                let (driver, id, ids) = (driver.clone(), *id, ids.to_vec());
                tokio::spawn(async move {
                    if let Err(a) = driver.nack(id, &ids, Duration::from_secs(30)).await {
                        tracing::debug!("nack of {} input(s) on consumer {id}: {a}", ids.len());
                    }
                });
                Ok(())
            }
        }
    }
}

/// What an official client's answer to an ACK in a transaction proves. Success: the broker
/// took it (the clients send a transactional ACK with a request id and wait for its response).
/// The broker's TransactionConflict is refused for certain (the Java client's
/// `PulsarClientException$TransactionConflictException`, mapped from the server error in
/// `ClientCnx.getPulsarClientException`); the driver's own refusals (`UnknownMessage`,
/// `UnknownConsumer`, `UnknownTxn`, `BadRequest`) sent nothing; the driver's end is fatal;
/// anything else may or may not have reached the broker.
pub(super) fn driven_ack(client: &str, r: &Result<(), Answer>) -> AckAnswer {
    match r {
        Ok(()) => AckAnswer::Acked(format!(
            "{client} client: the acknowledgement completed normally"
        )),
        Err(Answer::Client(e)) if e.short_class().contains("TransactionConflict") => {
            AckAnswer::Refused(format!("{client} client: {e}"))
        }
        Err(Answer::Client(e))
            if matches!(
                e.class.as_str(),
                "UnknownMessage" | "UnknownConsumer" | "UnknownTxn" | "BadRequest"
            ) =>
        {
            AckAnswer::NotSent(format!("{client} driver: {e}"))
        }
        Err(Answer::Gone(why)) => AckAnswer::Fatal(format!("the {client} driver ended: {why}")),
        Err(a) => AckAnswer::Ambiguous(format!("{client} client: {a}")),
    }
}

/// A driver's failed answer as `EventBody::ClientAnswer` names it (as the producer's).
pub(super) fn answer_class(a: &Answer) -> (String, String) {
    match a {
        Answer::Client(e) => (e.short_class().to_string(), e.message.clone()),
        Answer::Timeout(_) => ("NoAnswer".into(), a.to_string()),
        Answer::Gone(why) => ("DriverGone".into(), why.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::ClientError;

    fn err(class: &str) -> Result<(), Answer> {
        Err(Answer::Client(ClientError {
            class: class.into(),
            message: "m".into(),
            causes: vec![],
        }))
    }

    #[test]
    fn driven_acks() {
        assert!(matches!(driven_ack("java", &Ok(())), AckAnswer::Acked(_)));
        assert!(matches!(
            driven_ack(
                "java",
                &err("org.apache.pulsar.client.api.PulsarClientException$TransactionConflictException")
            ),
            AckAnswer::Refused(_)
        ));
        assert!(matches!(
            driven_ack("go", &err("UnknownMessage")),
            AckAnswer::NotSent(_)
        ));
        assert!(matches!(
            driven_ack("go", &err("TimeoutError")),
            AckAnswer::Ambiguous(_)
        ));
        assert!(matches!(
            driven_ack("go", &Err(Answer::Timeout(Duration::from_secs(1)))),
            AckAnswer::Ambiguous(_)
        ));
        assert!(matches!(
            driven_ack("go", &Err(Answer::Gone("x".into()))),
            AckAnswer::Fatal(_)
        ));
    }
}
