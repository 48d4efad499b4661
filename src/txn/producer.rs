//! A transactional producer on one partition (or non-partitioned topic), recreated after the
//! broker closes it (unload) or its connection dies. Sequence ids keep increasing across
//! re-creations. A sequence id is handed out and its SEND queued on the connection under one
//! lock, so a producer's SENDs leave in sequence order (with broker-side deduplication the
//! broker drops a SEND whose sequence id is not above the last one it persisted).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pulsar::message::proto::{self, base_command::Type, MessageIdData, MessageMetadata};
use pulsar::message::Payload;
use tokio::sync::{Mutex, Semaphore};

use super::conn::base;
use super::{Client, Connection, TxnError};
use crate::history::TxnId;

/// At most this many SENDs of one producer wait for receipts at once.
pub const MAX_IN_FLIGHT: usize = 1000;

#[derive(Clone)]
struct Attached {
    conn: Connection,
    producer_id: u64,
    name: String,
}

/// A producer of the harness on one partition.
pub struct PartitionProducer {
    client: Arc<Client>,
    topic: String,
    name_prefix: String,
    txn_enabled: bool,
    attached: Mutex<Option<Attached>>,
    /// The next sequence id; held while a SEND is queued (see the module's doc).
    next_seq: std::sync::Mutex<u64>,
    generation: AtomicU32,
    in_flight: Semaphore,
}

/// What a SEND returned.
#[derive(Debug, Clone)]
pub struct Sent {
    pub id: MessageIdData,
    pub sequence_id: u64,
}

/// The payload of a batched entry: each message as [u32 size][SingleMessageMetadata][bytes].
pub fn encode_batch(first_sequence: u64, messages: &[Vec<u8>]) -> Vec<u8> {
    use prost::Message as _;
    let mut out = Vec::with_capacity(messages.iter().map(|m| m.len() + 16).sum());
    for (i, m) in messages.iter().enumerate() {
        let smd = proto::SingleMessageMetadata {
            payload_size: m.len() as i32,
            sequence_id: Some(first_sequence + i as u64),
            ..Default::default()
        };
        let len = smd.encoded_len() as u32;
        out.extend_from_slice(&len.to_be_bytes());
        smd.encode(&mut out).expect("a Vec has room");
        out.extend_from_slice(m);
    }
    out
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl PartitionProducer {
    pub fn new(
        client: Arc<Client>,
        topic: &str,
        name_prefix: &str,
        txn_enabled: bool,
    ) -> PartitionProducer {
        PartitionProducer {
            client,
            topic: topic.to_string(),
            name_prefix: name_prefix.to_string(),
            txn_enabled,
            attached: Mutex::new(None),
            next_seq: std::sync::Mutex::new(0),
            generation: AtomicU32::new(0),
            in_flight: Semaphore::new(MAX_IN_FLIGHT),
        }
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The producer, created (again) if needed: lookup, connect, PRODUCER.
    async fn attach(&self) -> Result<Attached, TxnError> {
        let mut guard = self.attached.lock().await;
        if let Some(a) = guard.as_ref() {
            if !a.conn.is_closed() && !a.conn.is_producer_closed(a.producer_id) {
                return Ok(a.clone());
            }
        }
        *guard = None;
        let addr = self.client.lookup(&self.topic).await?;
        let conn = self.client.conn(&addr).await?;
        let producer_id = conn.new_handle();
        let g = self.generation.fetch_add(1, Ordering::Relaxed);
        let name = format!("{}-g{g}", self.name_prefix);
        let rid = conn.new_request_id();
        let mut c = base(Type::Producer);
        c.producer = Some(proto::CommandProducer {
            topic: self.topic.clone(),
            producer_id,
            request_id: rid,
            producer_name: Some(name.clone()),
            user_provided_producer_name: Some(true),
            txn_enabled: Some(self.txn_enabled),
            ..Default::default()
        });
        // The broker holds the reply until the partition's transaction buffer has recovered.
        let resp = conn
            .request(rid, c, self.client.op_timeout.max(Duration::from_secs(30)))
            .await
            .map_err(|e| match e {
                TxnError::Fatal(m) => TxnError::Fatal(m),
                other => TxnError::NotSent(format!("create producer on {}: {other}", self.topic)),
            })?;
        if let Some(ps) = resp.producer_success {
            if let Some(last) = ps.last_sequence_id {
                if last >= 0 {
                    let mut next = self.next_seq.lock().expect("lock");
                    *next = (*next).max(last as u64 + 1);
                }
            }
        }
        let a = Attached {
            conn,
            producer_id,
            name,
        };
        *guard = Some(a.clone());
        Ok(a)
    }

    /// Make sure the producer exists (e.g. before the workload starts).
    pub async fn ready(&self) -> Result<(), TxnError> {
        self.attach().await.map(|_| ())
    }

    /// Send one message, in `txn` when given, and wait for its receipt.
    pub async fn send(
        &self,
        txn: Option<TxnId>,
        data: Vec<u8>,
        timeout: Duration,
    ) -> Result<Sent, TxnError> {
        self.send_one(txn, data, None, timeout).await
    }

    /// Send one message with the given sequence id instead of the next one (the counter is
    /// not moved back): the lower-level call the tests of the broker's deduplication use.
    pub async fn send_with_sequence_id(
        &self,
        txn: Option<TxnId>,
        data: Vec<u8>,
        sequence_id: u64,
        timeout: Duration,
    ) -> Result<Sent, TxnError> {
        self.send_one(txn, data, Some(sequence_id), timeout).await
    }

    async fn send_one(
        &self,
        txn: Option<TxnId>,
        data: Vec<u8>,
        fixed: Option<u64>,
        timeout: Duration,
    ) -> Result<Sent, TxnError> {
        let _permit = self
            .in_flight
            .acquire()
            .await
            .map_err(|_| TxnError::NotSent("producer closed".into()))?;
        let a = self.attach().await?;
        let (sequence_id, pending) = {
            let mut next = self.next_seq.lock().expect("lock");
            let sequence_id = fixed.unwrap_or(*next);
            let mut c = base(Type::Send);
            c.send = Some(proto::CommandSend {
                producer_id: a.producer_id,
                sequence_id,
                num_messages: None,
                txnid_least_bits: txn.map(|t| t.least),
                txnid_most_bits: txn.map(|t| t.most),
                ..Default::default()
            });
            // The transaction id goes in the metadata too: the broker filters aborted messages
            // and rebuilds open transactions from it.
            let metadata = MessageMetadata {
                producer_name: a.name.clone(),
                sequence_id,
                publish_time: now_ms(),
                txnid_least_bits: txn.map(|t| t.least),
                txnid_most_bits: txn.map(|t| t.most),
                ..Default::default()
            };
            let pending =
                a.conn
                    .start_send(a.producer_id, sequence_id, c, Payload { metadata, data })?;
            *next = (*next).max(sequence_id + 1);
            (sequence_id, pending)
        };
        let id = a.conn.receipt(pending, timeout).await?;
        Ok(Sent { id, sequence_id })
    }

    /// Send several messages as one batched entry (one receipt), in `txn` when given. The
    /// message ids are the entry's with batch indexes 0..n.
    pub async fn send_batch(
        &self,
        txn: Option<TxnId>,
        messages: Vec<Vec<u8>>,
        timeout: Duration,
    ) -> Result<Vec<MessageIdData>, TxnError> {
        if messages.len() == 1 {
            let data = messages.into_iter().next().expect("one message");
            return self.send(txn, data, timeout).await.map(|s| vec![s.id]);
        }
        let _permit = self
            .in_flight
            .acquire()
            .await
            .map_err(|_| TxnError::NotSent("producer closed".into()))?;
        let a = self.attach().await?;
        let n = messages.len() as u64;
        let pending = {
            let mut next = self.next_seq.lock().expect("lock");
            let first = *next;
            let data = encode_batch(first, &messages);
            let mut c = base(Type::Send);
            c.send = Some(proto::CommandSend {
                producer_id: a.producer_id,
                sequence_id: first,
                num_messages: Some(n as i32),
                txnid_least_bits: txn.map(|t| t.least),
                txnid_most_bits: txn.map(|t| t.most),
                highest_sequence_id: Some(first + n - 1),
                ..Default::default()
            });
            let metadata = MessageMetadata {
                producer_name: a.name.clone(),
                sequence_id: first,
                publish_time: now_ms(),
                num_messages_in_batch: Some(n as i32),
                highest_sequence_id: Some(first + n - 1),
                txnid_least_bits: txn.map(|t| t.least),
                txnid_most_bits: txn.map(|t| t.most),
                ..Default::default()
            };
            let pending = a
                .conn
                .start_send(a.producer_id, first, c, Payload { metadata, data })?;
            *next = first + n;
            pending
        };
        let id = a.conn.receipt(pending, timeout).await?;
        Ok((0..n as i32)
            .map(|i| MessageIdData {
                batch_index: Some(i),
                batch_size: Some(n as i32),
                ..id.clone()
            })
            .collect())
    }

    /// Forget the producer (it is recreated on the next send).
    pub async fn detach(&self) {
        *self.attached.lock().await = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_encode_what_the_reader_splits() {
        let msgs = vec![b"7".to_vec(), b"8  ".to_vec(), b"9".to_vec()];
        let bytes = encode_batch(40, &msgs);
        let parts = crate::txn::entry::split_batch(&bytes, 3).unwrap();
        assert_eq!(parts, vec![&b"7"[..], &b"8  "[..], &b"9"[..]]);
    }
}
