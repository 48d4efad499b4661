//! A consumer of the harness on one partition (or non-partitioned topic), for
//! consume-transform-produce: a durable subscription of a given type (Exclusive, Shared,
//! Failover, Key_Shared) from the earliest message, FLOW permits, messages split into their
//! batch members, ACKs in a transaction (or not), REDELIVER_UNACKNOWLEDGED_MESSAGES and
//! CLOSE_CONSUMER. The consumer lives on one connection; when the broker closes it or the
//! connection dies, `receive` says so and `reconnect` subscribes again.
//!
//! # What an ACK's answer proves
//!
//! An ACK carrying a request id is answered by an ACK_RESPONSE with that id (the broker's
//! `ServerCnx.handleAck`); an ACK without one is never answered (the Java client's default for
//! plain acks; `ack_unconfirmed` here). `classify_ack` sorts the answers, mirroring the
//! producer side (`coordinator::classify_commit`):
//!
//! | answer | `AckAnswer` | why |
//! |---|---|---|
//! | ACK_RESPONSE without error | `Acked` | in a transaction: the ack is in the subscription's pending-ack state and takes effect if and only if the transaction commits; plain: the cursor has it |
//! | nothing sent (closed connection, consumer gone, refused before sending) | `NotSent` / `Fatal` | it never left the harness |
//! | `TransactionConflict` | `Refused` | the message is already acknowledged, or held by another transaction's pending ack; this ack is not in the pending-ack state |
//! | `NotAllowedError` | `Refused` | checked before the pending-ack log is written (transactions off, replicated namespace, cumulative ack with several ids) |
//! | `InvalidTxnStatus` naming ABORTING, ABORTED or TIME_OUT | `Aborted` | the transaction is aborted: none of its acks take effect |
//! | timeout, connection lost, protocol error | `Ambiguous` | sent, no answer |
//! | any other server error (`TransactionNotFound`, `InvalidTxnStatus` naming another state, `PersistenceError`, `ServiceNotReady`, `UnknownError`, ...) | `Ambiguous` | the broker's pending-ack handle writes the ack to its log before it checks, and on a failed write still applies it in memory (`PendingAckHandleImpl.internalIndividualAcknowledgeMessage`); a transaction that is "not found" may have committed and been forgotten |
//!
//! A caveat kept visible, not guessed away: the pending-ack handle logs a conflicting ack
//! before its conflict check refuses it, and the in-memory apply that replay appears to use
//! (`handleIndividualAck`) has no conflict check. So after an unload or a restart a refused ack
//! may become part of its transaction (not verified against a broker yet); a chaos run that
//! finds it so has found a contradiction of a definitive answer.
//!
//! When a transaction with individual acks aborts, the broker itself redelivers the acked
//! positions (`PendingAckHandleImpl.internalAbortTxn`); `redeliver_unacknowledged` asks for
//! what this consumer holds unacknowledged besides.
//!
//! The broker answers success to acks it silently ignores: a cumulative ack on a Shared or
//! Key_Shared subscription, and a cumulative ack naming several messages
//! (`Consumer.messageAcked`). This consumer refuses both before sending (`Fatal`), so an
//! `Acked` is never one of them.
//!
//! Batch members: a member is acknowledged alone through the entry's `ack_set` (bits of the
//! members still unacknowledged, as the Java client builds it) with the entry's `batch_size`,
//! which the broker requires for a transactional batch-index ack. Plain (non-transactional)
//! member acks need `acknowledgmentAtBatchIndexLevelEnabled` on the broker; without it, ack
//! whole entries.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

pub use pulsar::message::proto::command_subscribe::SubType;
use pulsar::message::proto::{
    self, base_command::Type, command_ack::AckType, MessageIdData, MessageMetadata, ServerError,
};
use pulsar::message::Payload;
use tokio::sync::mpsc::UnboundedReceiver;

use super::conn::{base, server_error, ConsumerEvent};
use super::coordinator::state_named;
use super::entry::{decompress, split_batch};
use super::{Client, Connection, TxnError};
use crate::history::TxnId;

/// Individual or cumulative acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckKind {
    Individual,
    Cumulative,
}

/// How a consumer subscribes.
#[derive(Debug, Clone)]
pub struct ConsumerOptions {
    pub sub_type: SubType,
    /// FLOW permits asked at subscription and refilled once half are used; 0: only `flow`.
    pub permits: u32,
    /// Consumer name (Failover orders consumers by it); None: the broker picks one.
    pub consumer_name: Option<String>,
}

impl Default for ConsumerOptions {
    fn default() -> Self {
        ConsumerOptions {
            sub_type: SubType::Shared,
            permits: 1000,
            consumer_name: None,
        }
    }
}

/// One message received: a whole entry, or one member of a batched entry.
#[derive(Debug, Clone)]
pub struct Received {
    /// Ledger, entry and partition as the broker sent them; for a batch member also
    /// `batch_index` and `batch_size` (what an ACK of the member needs).
    pub id: MessageIdData,
    pub payload: Vec<u8>,
    /// How often the broker delivered this entry before (0: first delivery).
    pub redelivery_count: u32,
}

/// What an ACK's result proves (see the module's doc). Pure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AckAnswer {
    /// The broker took the ack (in a transaction: pending until the transaction ends).
    Acked(String),
    /// The broker refused this ack; it is not recorded.
    Refused(String),
    /// The transaction is aborted: none of its acks take effect.
    Aborted(String),
    /// The request never left the harness.
    NotSent(String),
    /// Not sent, and retrying cannot help (a misuse or a configuration error).
    Fatal(String),
    /// Sent, and the answer does not tell whether the ack was recorded.
    Ambiguous(String),
}

/// Classify the result of one ACK that asked for a response. Pure.
pub fn classify_ack(result: &Result<(), TxnError>) -> AckAnswer {
    match result {
        Ok(()) => AckAnswer::Acked("ACK_RESPONSE without error".into()),
        Err(TxnError::NotSent(m)) => AckAnswer::NotSent(m.clone()),
        Err(TxnError::Fatal(m)) => AckAnswer::Fatal(m.clone()),
        Err(TxnError::Server { code, message }) => match code {
            ServerError::TransactionConflict | ServerError::NotAllowedError => {
                AckAnswer::Refused(format!("{code:?}: {message}"))
            }
            ServerError::InvalidTxnStatus => match state_named(message) {
                Some("ABORTING") | Some("ABORTED") | Some("TIME_OUT") => {
                    AckAnswer::Aborted(format!("InvalidTxnStatus: {message}"))
                }
                _ => AckAnswer::Ambiguous(format!("InvalidTxnStatus: {message}")),
            },
            other => AckAnswer::Ambiguous(format!("{other:?}: {message}")),
        },
        Err(e) => AckAnswer::Ambiguous(e.to_string()),
    }
}

/// Whether bit `i` is set in a Java `BitSet.toLongArray()` (word i/64, bit i%64).
fn bit(words: &[i64], i: usize) -> bool {
    words
        .get(i / 64)
        .map(|w| (*w as u64 >> (i % 64)) & 1 == 1)
        .unwrap_or(false)
}

/// Bits `[0, n)` set except those in `acked`, as Java's `BitSet.toLongArray()` gives them
/// (trailing zero words dropped: a batch with nothing left has an empty set).
fn unacked_bits(n: usize, acked: impl Fn(usize) -> bool) -> Vec<i64> {
    let mut words = vec![0u64; n.div_ceil(64)];
    for i in (0..n).filter(|i| !acked(*i)) {
        words[i / 64] |= 1 << (i % 64);
    }
    while words.last() == Some(&0) {
        words.pop();
    }
    words.into_iter().map(|w| w as i64).collect()
}

/// The `ack_set` acknowledging member `index` of a batch of `size` (Individual), or members
/// `0..=index` (Cumulative): set bits are the members left unacknowledged. Pure.
pub fn ack_set(size: i32, index: i32, kind: AckKind) -> Vec<i64> {
    let (n, idx) = (size.max(0) as usize, index.max(0) as usize);
    match kind {
        AckKind::Individual => unacked_bits(n, |i| i == idx),
        AckKind::Cumulative => unacked_bits(n, |i| i <= idx),
    }
}

/// The message ids of one ACK frame for the messages `ids` (as `Received::id`). Individual:
/// one id per message, in order, as the Java client's multi-message transactional ack builds
/// them: a batch member carries its batch size and an ack set with only its own bit cleared
/// (members of one entry are never merged: an all-members merge has an empty ack set, which the
/// broker takes for a whole-entry ack). Cumulative: exactly one message. Pure; an error is a
/// misuse, nothing is sent.
pub fn ack_ids(ids: &[MessageIdData], kind: AckKind) -> Result<Vec<MessageIdData>, String> {
    if ids.is_empty() {
        return Err("an ACK needs at least one message id".into());
    }
    if kind == AckKind::Cumulative && ids.len() != 1 {
        return Err(format!(
            "a cumulative ACK names exactly one message, not {} (the broker ignores it)",
            ids.len()
        ));
    }
    Ok(ids
        .iter()
        .map(|id| {
            let mut out = entry_id(id);
            if let (Some(index), Some(size)) = (id.batch_index, id.batch_size) {
                if index >= 0 {
                    out.ack_set = ack_set(size, index, kind);
                }
            }
            out
        })
        .collect())
}

/// Ledger and entry of `id`, with its batch size when it is a batch member (the broker needs
/// it for a transactional ack of a batch).
fn entry_id(id: &MessageIdData) -> MessageIdData {
    MessageIdData {
        ledger_id: id.ledger_id,
        entry_id: id.entry_id,
        batch_size: id.batch_index.and(id.batch_size),
        ..Default::default()
    }
}

/// The messages of one delivered entry: the entry itself, or its batch members still
/// unacknowledged (`ack_set`, empty: all). Pure.
pub fn entry_messages(
    id: &MessageIdData,
    metadata: &MessageMetadata,
    data: Vec<u8>,
    redelivery_count: u32,
    unacked: &[i64],
) -> Result<Vec<Received>, String> {
    let body = decompress(metadata, data)?;
    let base_id = MessageIdData {
        ledger_id: id.ledger_id,
        entry_id: id.entry_id,
        partition: id.partition,
        ..Default::default()
    };
    let Some(n) = metadata.num_messages_in_batch else {
        return Ok(vec![Received {
            id: base_id,
            payload: body,
            redelivery_count,
        }]);
    };
    let parts = split_batch(&body, n)?;
    Ok(parts
        .into_iter()
        .enumerate()
        .filter(|(i, _)| unacked.is_empty() || bit(unacked, *i))
        .map(|(i, part)| Received {
            id: MessageIdData {
                batch_index: Some(i as i32),
                batch_size: Some(n),
                ..base_id.clone()
            },
            payload: part.to_vec(),
            redelivery_count,
        })
        .collect())
}

/// A consumer of the harness on one partition.
pub struct TxnConsumer {
    client: Arc<Client>,
    topic: String,
    subscription: String,
    opts: ConsumerOptions,
    conn: Connection,
    consumer_id: u64,
    events: UnboundedReceiver<ConsumerEvent>,
    queue: VecDeque<Received>,
    since_flow: u32,
    closed: Option<String>,
}

impl TxnConsumer {
    /// Subscribe to `topic` (one partition) with the durable `subscription` from the earliest
    /// message, and ask for `opts.permits` messages.
    pub async fn subscribe(
        client: &Arc<Client>,
        topic: &str,
        subscription: &str,
        opts: ConsumerOptions,
    ) -> Result<TxnConsumer, TxnError> {
        let (conn, consumer_id, events) = attach(client, topic, subscription, &opts).await?;
        let c = TxnConsumer {
            client: client.clone(),
            topic: topic.to_string(),
            subscription: subscription.to_string(),
            opts,
            conn,
            consumer_id,
            events,
            queue: VecDeque::new(),
            since_flow: 0,
            closed: None,
        };
        if c.opts.permits > 0 {
            c.flow(c.opts.permits)?;
        }
        Ok(c)
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }

    pub fn subscription(&self) -> &str {
        &self.subscription
    }

    pub fn sub_type(&self) -> SubType {
        self.opts.sub_type
    }

    /// Ask the broker for `permits` more messages.
    pub fn flow(&self, permits: u32) -> Result<(), TxnError> {
        let mut c = base(Type::Flow);
        c.flow = Some(proto::CommandFlow {
            consumer_id: self.consumer_id,
            message_permits: permits,
        });
        self.conn.send_frame(c, None)
    }

    /// The next message, or None when none came within `timeout`. An error means the consumer
    /// is gone (closed by the broker, connection lost, or an entry that cannot be read):
    /// `reconnect` to go on.
    pub async fn receive(&mut self, timeout: Duration) -> Result<Option<Received>, TxnError> {
        let until = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(m) = self.queue.pop_front() {
                return Ok(Some(m));
            }
            if let Some(reason) = &self.closed {
                return Err(TxnError::ConnectionLost(reason.clone()));
            }
            let ev = match tokio::time::timeout_at(until, self.events.recv()).await {
                Err(_) => return Ok(None),
                Ok(None) => ConsumerEvent::Closed("consumer channel closed".into()),
                Ok(Some(ev)) => ev,
            };
            match ev {
                ConsumerEvent::Closed(reason) => {
                    self.conn.unregister_consumer(self.consumer_id);
                    self.closed = Some(format!(
                        "consumer of {} on {}: {reason}",
                        self.subscription, self.topic
                    ));
                }
                ConsumerEvent::Message {
                    id,
                    payload,
                    redelivery_count,
                    ack_set,
                } => self.take_entry(&id, payload, redelivery_count, &ack_set)?,
            }
        }
    }

    /// Queue the messages of one entry and refill permits once half are used.
    fn take_entry(
        &mut self,
        id: &MessageIdData,
        payload: Payload,
        redelivery_count: u32,
        ack_set: &[i64],
    ) -> Result<(), TxnError> {
        let Payload { metadata, data } = payload;
        let msgs = entry_messages(id, &metadata, data, redelivery_count, ack_set).map_err(|e| {
            TxnError::Fatal(format!(
                "{} entry {}:{}: {e}",
                self.topic, id.ledger_id, id.entry_id
            ))
        })?;
        self.since_flow += msgs.len() as u32;
        self.queue.extend(msgs);
        if self.opts.permits > 0 && self.since_flow >= self.opts.permits.div_ceil(2) {
            // A lost FLOW shows as a consumer that receives nothing; the next receive tells.
            if let Err(e) = self.flow(self.since_flow) {
                tracing::debug!("flow on {}: {e}", self.topic);
            }
            self.since_flow = 0;
        }
        Ok(())
    }

    /// Acknowledge `ids` (as `Received::id`) in `txn`, or plainly when None, and wait for the
    /// broker's ACK_RESPONSE. Classify the result with `classify_ack`. In a transaction the
    /// subscription must have been added to it first (`Coordinators::add_subscriptions`).
    pub async fn ack(
        &self,
        txn: Option<TxnId>,
        ids: &[MessageIdData],
        kind: AckKind,
    ) -> Result<(), TxnError> {
        let rid = self.conn.new_request_id();
        let c = self.ack_command(txn, ids, kind, Some(rid))?;
        let resp = self.conn.request(rid, c, self.client.op_timeout).await?;
        let kind = resp.r#type();
        let r = resp.ack_response.ok_or_else(|| {
            TxnError::Protocol(format!(
                "ACK answered with a {kind:?} frame that has no ack_response"
            ))
        })?;
        match r.error {
            Some(e) => Err(TxnError::Server {
                code: server_error(e),
                message: r.message.unwrap_or_default(),
            }),
            None => Ok(()),
        }
    }

    /// A plain ACK without a request id, as the Java client sends by default: the broker never
    /// answers it, so whether it applied is unknown until the backlog or a redelivery shows.
    pub fn ack_unconfirmed(&self, ids: &[MessageIdData], kind: AckKind) -> Result<(), TxnError> {
        let c = self.ack_command(None, ids, kind, None)?;
        self.conn.send_frame(c, None)
    }

    fn ack_command(
        &self,
        txn: Option<TxnId>,
        ids: &[MessageIdData],
        kind: AckKind,
        request_id: Option<u64>,
    ) -> Result<proto::BaseCommand, TxnError> {
        if let Some(reason) = &self.closed {
            return Err(TxnError::NotSent(reason.clone()));
        }
        if !self.conn.has_consumer(self.consumer_id) {
            return Err(TxnError::NotSent(format!(
                "consumer of {} on {} was closed",
                self.subscription, self.topic
            )));
        }
        if kind == AckKind::Cumulative
            && matches!(self.opts.sub_type, SubType::Shared | SubType::KeyShared)
        {
            return Err(TxnError::Fatal(format!(
                "a cumulative ACK on a {:?} subscription is ignored by the broker (and answered success)",
                self.opts.sub_type
            )));
        }
        let message_id = ack_ids(ids, kind).map_err(TxnError::Fatal)?;
        let mut c = base(Type::Ack);
        c.ack = Some(proto::CommandAck {
            consumer_id: self.consumer_id,
            ack_type: match kind {
                AckKind::Individual => AckType::Individual,
                AckKind::Cumulative => AckType::Cumulative,
            } as i32,
            message_id,
            txnid_least_bits: txn.map(|t| t.least),
            txnid_most_bits: txn.map(|t| t.most),
            request_id,
            ..Default::default()
        });
        Ok(c)
    }

    /// Ask the broker to deliver again the messages it sent this consumer that are not
    /// acknowledged (nor pending in a transaction): `ids` on Shared and Key_Shared, every one
    /// when `ids` is empty or on Exclusive and Failover (the broker ignores the ids there). No
    /// answer comes. Messages already queued here stay queued (a copy may come again).
    pub fn redeliver_unacknowledged(&self, ids: &[MessageIdData]) -> Result<(), TxnError> {
        redeliver_frame(&self.conn, self.consumer_id, ids)
    }

    /// A handle on this consumer for a task that does not own it (the transform's commit
    /// task hands inputs back while the worker goes on receiving).
    pub fn handle(&self) -> ConsumerHandle {
        ConsumerHandle {
            conn: self.conn.clone(),
            consumer_id: self.consumer_id,
        }
    }

    /// Close this consumer (its unacknowledged messages go back to the subscription) and
    /// subscribe again with the same options.
    pub async fn reconnect(&mut self) -> Result<(), TxnError> {
        let _ = self.close_consumer().await;
        let (conn, consumer_id, events) =
            attach(&self.client, &self.topic, &self.subscription, &self.opts).await?;
        self.conn = conn;
        self.consumer_id = consumer_id;
        self.events = events;
        self.queue.clear();
        self.since_flow = 0;
        self.closed = None;
        if self.opts.permits > 0 {
            self.flow(self.opts.permits)?;
        }
        Ok(())
    }

    /// CLOSE_CONSUMER, waiting for the broker's answer.
    pub async fn close(mut self) -> Result<(), TxnError> {
        self.close_consumer().await
    }

    async fn close_consumer(&mut self) -> Result<(), TxnError> {
        if self.closed.is_some() || !self.conn.has_consumer(self.consumer_id) {
            return Ok(());
        }
        let rid = self.conn.new_request_id();
        let mut c = base(Type::CloseConsumer);
        c.close_consumer = Some(proto::CommandCloseConsumer {
            consumer_id: self.consumer_id,
            request_id: rid,
        });
        let r = self.conn.request(rid, c, self.client.op_timeout).await;
        self.conn.unregister_consumer(self.consumer_id);
        self.closed = Some("closed by the harness".into());
        r.map(|_| ())
    }
}

/// What a task that does not own a consumer may ask on its behalf: REDELIVER_UNACKNOWLEDGED_
/// MESSAGES. It names the consumer as it was when the handle was taken: once that consumer is
/// gone (closed by the harness or the broker, its connection dead), the handle refuses rather
/// than ask for a consumer id the broker no longer knows. It does not keep the consumer
/// subscribed. Cheap to clone.
#[derive(Clone)]
pub struct ConsumerHandle {
    conn: Connection,
    consumer_id: u64,
}

impl ConsumerHandle {
    /// As `TxnConsumer::redeliver_unacknowledged`; `NotSent` when the consumer is gone.
    pub fn redeliver_unacknowledged(&self, ids: &[MessageIdData]) -> Result<(), TxnError> {
        if !self.conn.has_consumer(self.consumer_id) {
            return Err(TxnError::NotSent(format!(
                "consumer {} is gone (closed, or its connection died)",
                self.consumer_id
            )));
        }
        redeliver_frame(&self.conn, self.consumer_id, ids)
    }
}

/// Send REDELIVER_UNACKNOWLEDGED_MESSAGES for `consumer_id` (`ids` as `Received::id`).
fn redeliver_frame(
    conn: &Connection,
    consumer_id: u64,
    ids: &[MessageIdData],
) -> Result<(), TxnError> {
    let mut c = base(Type::RedeliverUnacknowledgedMessages);
    c.redeliver_unacknowledged_messages = Some(proto::CommandRedeliverUnacknowledgedMessages {
        consumer_id,
        message_ids: ids.iter().map(entry_id).collect(),
        ..Default::default()
    });
    conn.send_frame(c, None)
}

/// Lookup, connect, SUBSCRIBE; the connection, consumer id and event channel.
async fn attach(
    client: &Client,
    topic: &str,
    subscription: &str,
    opts: &ConsumerOptions,
) -> Result<(Connection, u64, UnboundedReceiver<ConsumerEvent>), TxnError> {
    // A subscription on a transactional broker may wait for its pending-ack state to load.
    let timeout = client.op_timeout.max(Duration::from_secs(30));
    subscribe_with(client, topic, timeout, |consumer_id, request_id| {
        proto::CommandSubscribe {
            topic: topic.to_string(),
            subscription: subscription.to_string(),
            sub_type: opts.sub_type as i32,
            consumer_id,
            request_id,
            consumer_name: opts.consumer_name.clone(),
            durable: Some(true),
            initial_position: Some(proto::command_subscribe::InitialPosition::Earliest as i32),
            read_compacted: Some(false),
            ..Default::default()
        }
    })
    .await
}

/// Lookup, connect, register a consumer, SUBSCRIBE with the command `make(consumer_id,
/// request_id)` builds (the reader's and the consumer's differ only there); unregistered again
/// when the broker refuses.
pub(super) async fn subscribe_with(
    client: &Client,
    topic: &str,
    timeout: Duration,
    make: impl FnOnce(u64, u64) -> proto::CommandSubscribe,
) -> Result<(Connection, u64, UnboundedReceiver<ConsumerEvent>), TxnError> {
    let addr = client.lookup(topic).await?;
    let conn = client.conn(&addr).await?;
    let consumer_id = conn.new_handle();
    let events = conn.register_consumer(consumer_id);
    let rid = conn.new_request_id();
    let mut c = base(Type::Subscribe);
    c.subscribe = Some(make(consumer_id, rid));
    if let Err(e) = conn.request(rid, c, timeout).await {
        conn.unregister_consumer(consumer_id);
        return Err(e);
    }
    Ok((conn, consumer_id, events))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ledger: u64, entry: u64, member: Option<(i32, i32)>) -> MessageIdData {
        MessageIdData {
            ledger_id: ledger,
            entry_id: entry,
            partition: Some(-1),
            batch_index: member.map(|m| m.0),
            batch_size: member.map(|m| m.1),
            ..Default::default()
        }
    }

    #[test]
    fn ack_sets_keep_the_unacknowledged_members_as_java_builds_them() {
        // Member 2 of 5: members 0, 1, 3, 4 stay.
        assert_eq!(ack_set(5, 2, AckKind::Individual), vec![0b11011]);
        // Cumulative up to member 2 of 5: members 3 and 4 stay.
        assert_eq!(ack_set(5, 2, AckKind::Cumulative), vec![0b11000]);
        // Nothing left: Java's toLongArray drops trailing zero words.
        assert_eq!(ack_set(1, 0, AckKind::Individual), Vec::<i64>::new());
        assert_eq!(ack_set(3, 2, AckKind::Cumulative), Vec::<i64>::new());
        // Past 64 members the second word carries the rest; bit 63 is the sign bit.
        let s = ack_set(66, 64, AckKind::Individual);
        assert_eq!(s, vec![-1, 0b10]);
        assert!(bit(&s, 63) && !bit(&s, 64) && bit(&s, 65) && !bit(&s, 66));
    }

    /// Regression: members of one entry were merged into one id; naming every member gave an
    /// empty ack set, which the broker reads as a whole-entry ack (not what Java sends).
    #[test]
    fn individual_acks_name_each_message_with_its_own_ack_set() {
        let ids = [
            id(7, 1, None),
            id(7, 2, Some((0, 4))),
            id(7, 2, Some((3, 4))),
            id(7, 3, Some((1, 2))),
        ];
        let out = ack_ids(&ids, AckKind::Individual).unwrap();
        assert_eq!(out.len(), 4);
        // A plain entry: no ack set, no batch size, no batch index.
        assert_eq!((out[0].ledger_id, out[0].entry_id), (7, 1));
        assert!(out[0].ack_set.is_empty() && out[0].batch_size.is_none());
        assert!(out[0].batch_index.is_none() && out[0].partition.is_none());
        // Members 0 and 3 of 4, each in its own id with only its own bit cleared.
        assert_eq!(out[1].ack_set, vec![0b1110]);
        assert_eq!(out[2].ack_set, vec![0b0111]);
        assert_eq!(out[1].batch_size, Some(4));
        assert!(out[1].batch_index.is_none());
        assert_eq!(out[3].ack_set, vec![0b01]);
        // Both members of a 2-member entry: two ids, neither with an empty ack set.
        let out = ack_ids(
            &[id(7, 4, Some((0, 2))), id(7, 4, Some((1, 2)))],
            AckKind::Individual,
        )
        .unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(
            (out[0].ack_set.clone(), out[1].ack_set.clone()),
            (vec![0b10], vec![0b01])
        );
    }

    #[test]
    fn cumulative_acks_name_exactly_one_message() {
        assert!(ack_ids(&[], AckKind::Individual).is_err());
        assert!(ack_ids(&[id(1, 1, None), id(1, 2, None)], AckKind::Cumulative).is_err());
        let out = ack_ids(&[id(1, 2, Some((1, 3)))], AckKind::Cumulative).unwrap();
        assert_eq!(out[0].ack_set, vec![0b100]);
        assert_eq!(out[0].batch_size, Some(3));
    }

    #[test]
    fn entries_split_into_members_and_skip_those_already_acknowledged() {
        let msgs = vec![b"10".to_vec(), b"11".to_vec(), b"12".to_vec()];
        let data = crate::txn::producer::encode_batch(0, &msgs);
        let md = MessageMetadata {
            num_messages_in_batch: Some(3),
            ..Default::default()
        };
        let got = entry_messages(&id(5, 9, None), &md, data.clone(), 2, &[]).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[1].payload, b"11");
        assert_eq!(
            (got[1].id.batch_index, got[1].id.batch_size),
            (Some(1), Some(3))
        );
        assert_eq!(got[1].redelivery_count, 2);
        // Member 1 acknowledged already: the broker's ack set keeps 0 and 2.
        let got = entry_messages(&id(5, 9, None), &md, data, 0, &[0b101]).unwrap();
        let payloads: Vec<_> = got.iter().map(|r| r.payload.clone()).collect();
        assert_eq!(payloads, vec![b"10".to_vec(), b"12".to_vec()]);
        // A plain entry is one message without batch fields.
        let got = entry_messages(
            &id(5, 10, None),
            &MessageMetadata::default(),
            b"7".to_vec(),
            0,
            &[],
        )
        .unwrap();
        assert_eq!(got.len(), 1);
        assert!(got[0].id.batch_index.is_none() && got[0].id.batch_size.is_none());
    }

    fn server(code: ServerError, m: &str) -> Result<(), TxnError> {
        Err(TxnError::Server {
            code,
            message: m.to_string(),
        })
    }

    // One row per line of the module's table.
    #[test]
    fn ack_answers() {
        use AckAnswer as A;
        let is = |r: Result<(), TxnError>, f: fn(&A) -> bool| f(&classify_ack(&r));
        assert!(is(Ok(()), |a| matches!(a, A::Acked(_))));
        assert!(is(
            server(ServerError::TransactionConflict, "in pending ack status"),
            |a| matches!(a, A::Refused(_))
        ));
        assert!(is(
            server(
                ServerError::NotAllowedError,
                "Server don't support transaction ack!"
            ),
            |a| matches!(a, A::Refused(_))
        ));
        let invalid = |state: &str| {
            server(
                ServerError::InvalidTxnStatus,
                &format!("Expect Txn `(0,5)` to be in OPEN status but it is in {state} status"),
            )
        };
        assert!(is(invalid("ABORTED"), |a| matches!(a, A::Aborted(_))));
        assert!(is(invalid("ABORTING"), |a| matches!(a, A::Aborted(_))));
        assert!(is(invalid("TIME_OUT"), |a| matches!(a, A::Aborted(_))));
        // A commit may be under way or done: whether this ack is in it is unknown.
        assert!(is(invalid("COMMITTING"), |a| matches!(a, A::Ambiguous(_))));
        assert!(is(
            server(ServerError::TransactionNotFound, "gone"),
            |a| matches!(a, A::Ambiguous(_))
        ));
        // The pending-ack log write failed: the broker applied the ack in memory anyway.
        assert!(is(
            server(ServerError::PersistenceError, "x"),
            |a| matches!(a, A::Ambiguous(_))
        ));
        assert!(is(server(ServerError::ServiceNotReady, "x"), |a| matches!(
            a,
            A::Ambiguous(_)
        )));
        assert!(is(Err(TxnError::Timeout("t".into())), |a| matches!(
            a,
            A::Ambiguous(_)
        )));
        assert!(is(Err(TxnError::ConnectionLost("c".into())), |a| matches!(
            a,
            A::Ambiguous(_)
        )));
        assert!(is(Err(TxnError::Protocol("p".into())), |a| matches!(
            a,
            A::Ambiguous(_)
        )));
        assert!(is(Err(TxnError::NotSent("n".into())), |a| matches!(
            a,
            A::NotSent(_)
        )));
        assert!(is(Err(TxnError::Fatal("f".into())), |a| matches!(
            a,
            A::Fatal(_)
        )));
    }
}
