//! Reading a partition back from a position (the earliest by default) to its last message:
//! an exclusive, non-durable subscription on a connection of our own. Batches are split and
//! decompressed here. After a reconnect the read resumes after the last message seen, so no
//! message is counted twice and memory stays constant.

use std::sync::Arc;
use std::time::Duration;

use pulsar::message::proto::{self, base_command::Type, MessageIdData, MessageMetadata};
use pulsar::message::Payload;

use super::conn::{base, ConsumerEvent};
use super::entry::{decompress, split_batch};
use super::{Client, TxnError};

/// How a read went.
#[derive(Debug, Clone, Default)]
pub struct ReadStats {
    /// Messages handed to the callback (batch members count one each).
    pub messages: u64,
    /// The read reached the partition's last message (else it stopped on idle timeout).
    pub reached_end: bool,
    pub reconnects: u32,
    /// Why the read stopped short, when it did.
    pub incomplete: Option<String>,
    /// GET_LAST_MESSAGE_ID answered a position before the first entry (`-1:-1`, or `L:-1`),
    /// as (ledger, entry) with -1 as `u64::MAX`: the partition looked empty to the reader.
    /// Cross-checked against the admin API by the read-back.
    pub empty_answer: Option<(u64, u64)>,
}

/// Where a read stops and how patient it is.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Start at this entry (inclusive); None: the earliest message.
    pub start: Option<MessageIdData>,
    /// Stop after this entry, or at the last message (at subscribe time) if that comes first.
    pub stop: Option<MessageIdData>,
    /// Stop (incomplete) after this long without a message.
    pub idle_timeout: Duration,
    /// Flow permits asked at a time.
    pub permits: u32,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            start: None,
            stop: None,
            idle_timeout: Duration::from_secs(60),
            permits: 2000,
        }
    }
}

/// (ledger, entry, batch index) for ordering.
fn key(id: &MessageIdData) -> (u64, u64, i32) {
    (id.ledger_id, id.entry_id, id.batch_index.unwrap_or(-1))
}

fn entry_key(id: &MessageIdData) -> (u64, u64) {
    (id.ledger_id, id.entry_id)
}

struct Sub {
    conn: super::Connection,
    consumer_id: u64,
    events: tokio::sync::mpsc::UnboundedReceiver<ConsumerEvent>,
}

async fn subscribe(
    client: &Client,
    topic: &str,
    start: Option<MessageIdData>,
) -> Result<Sub, TxnError> {
    let (conn, consumer_id, events) = super::consumer::subscribe_with(
        client,
        topic,
        client.op_timeout,
        |consumer_id, request_id| proto::CommandSubscribe {
            topic: topic.to_string(),
            subscription: format!("pulsar-chaos-reader-{consumer_id}-{}", std::process::id()),
            sub_type: proto::command_subscribe::SubType::Exclusive as i32,
            consumer_id,
            request_id,
            durable: Some(false),
            start_message_id: start,
            initial_position: Some(proto::command_subscribe::InitialPosition::Earliest as i32),
            read_compacted: Some(false),
            ..Default::default()
        },
    )
    .await?;
    Ok(Sub {
        conn,
        consumer_id,
        events,
    })
}

async fn last_message_id(client: &Client, sub: &Sub) -> Result<MessageIdData, TxnError> {
    let rid = sub.conn.new_request_id();
    let mut c = base(Type::GetLastMessageId);
    c.get_last_message_id = Some(proto::CommandGetLastMessageId {
        consumer_id: sub.consumer_id,
        request_id: rid,
    });
    let resp = sub.conn.request(rid, c, client.op_timeout).await?;
    resp.get_last_message_id_response
        .map(|r| r.last_message_id)
        .ok_or_else(|| TxnError::NotSent("GET_LAST_MESSAGE_ID: unexpected answer".into()))
}

fn flow(sub: &Sub, permits: u32) -> Result<(), TxnError> {
    let mut c = base(Type::Flow);
    c.flow = Some(proto::CommandFlow {
        consumer_id: sub.consumer_id,
        message_permits: permits,
    });
    sub.conn.send_frame(c, None)
}

async fn close(client: &Client, sub: &Sub) {
    let rid = sub.conn.new_request_id();
    let mut c = base(Type::CloseConsumer);
    c.close_consumer = Some(proto::CommandCloseConsumer {
        consumer_id: sub.consumer_id,
        request_id: rid,
    });
    let _ = sub
        .conn
        .request(rid, c, client.op_timeout.min(Duration::from_secs(5)))
        .await;
    sub.conn.unregister_consumer(sub.consumer_id);
}

/// Where a (re)subscription starts: the entry of the last message seen, or the start asked.
fn resume_point(last_seen: &Option<MessageIdData>, opts: &ReadOptions) -> Option<MessageIdData> {
    last_seen
        .as_ref()
        .map(|id| MessageIdData {
            ledger_id: id.ledger_id,
            entry_id: id.entry_id,
            ..Default::default()
        })
        .or_else(|| opts.start.clone())
}

/// Where the read ends: the last message, or `stop` where that comes earlier.
fn read_end(stop: &Option<MessageIdData>, last: MessageIdData) -> MessageIdData {
    match stop {
        Some(s) if last.ledger_id != u64::MAX && entry_key(s) < entry_key(&last) => s.clone(),
        _ => last,
    }
}

/// Why the read stopped when no message came for the idle timeout.
fn idle_incomplete(
    topic: &str,
    opts: &ReadOptions,
    last_seen: &Option<MessageIdData>,
    stop: &MessageIdData,
) -> String {
    format!(
        "no message from {topic} for {}s; stopped at {:?}, the last message is {:?}",
        opts.idle_timeout.as_secs(),
        last_seen.as_ref().map(key),
        key(stop)
    )
}

/// Hand the message(s) of one entry not seen yet to `on` (splitting a batch); false when `on`
/// asked to stop.
#[allow(clippy::too_many_arguments)]
fn deliver<F>(
    id: &MessageIdData,
    metadata: &MessageMetadata,
    data: Vec<u8>,
    batch: Option<i32>,
    partition: i32,
    opts: &ReadOptions,
    topic: &str,
    last_seen: &mut Option<MessageIdData>,
    stats: &mut ReadStats,
    on: &mut F,
) -> Result<bool, TxnError>
where
    F: FnMut(&MessageIdData, &MessageMetadata, &[u8]) -> bool,
{
    let mut keep_going = true;
    match batch {
        None => {
            let mut mid = id.clone();
            mid.partition = Some(partition);
            mid.batch_index = Some(-1);
            if last_seen
                .as_ref()
                .map(|s| key(&mid) > key(s))
                .unwrap_or(true)
            {
                if opts
                    .start
                    .as_ref()
                    .map(|s| entry_key(&mid) >= entry_key(s))
                    .unwrap_or(true)
                {
                    stats.messages += 1;
                    keep_going = on(&mid, metadata, &data);
                }
                *last_seen = Some(mid);
            }
        }
        Some(n) => {
            let body = decompress(metadata, data).map_err(|e| {
                TxnError::Fatal(format!(
                    "{topic} entry {}:{}: {e}",
                    id.ledger_id, id.entry_id
                ))
            })?;
            let parts = split_batch(&body, n).map_err(|e| {
                TxnError::Fatal(format!(
                    "{topic} entry {}:{}: {e}",
                    id.ledger_id, id.entry_id
                ))
            })?;
            for (i, part) in parts.into_iter().enumerate() {
                let mut mid = id.clone();
                mid.partition = Some(partition);
                mid.batch_index = Some(i as i32);
                if last_seen
                    .as_ref()
                    .map(|s| key(&mid) > key(s))
                    .unwrap_or(true)
                {
                    stats.messages += 1;
                    keep_going = on(&mid, metadata, part) && keep_going;
                    *last_seen = Some(mid);
                }
            }
        }
    }
    Ok(keep_going)
}

/// True when there is nothing (more) to read before `stop`.
fn nothing_left(
    stop: &MessageIdData,
    opts: &ReadOptions,
    last_seen: &Option<MessageIdData>,
) -> bool {
    // An empty partition answers ledger and entry -1.
    if stop.ledger_id == u64::MAX || stop.entry_id == u64::MAX {
        return true;
    }
    if let Some(start) = &opts.start {
        if last_seen.is_none() && entry_key(stop) < entry_key(start) {
            return true;
        }
    }
    if let Some(seen) = last_seen {
        if entry_key(seen) >= entry_key(stop) {
            return true;
        }
    }
    false
}

/// Ask for more messages once half of the permits have been used.
fn refill(sub: &Sub, since_flow: &mut u32, permits: u32, topic: &str) {
    if *since_flow >= permits / 2 {
        if let Err(e) = flow(sub, *since_flow) {
            tracing::debug!("flow on {topic}: {e}");
        }
        *since_flow = 0;
    }
}

/// Read `topic` (one partition, or a non-partitioned topic) and hand every message to `on`:
/// its id (with the partition index given, and the batch index), the entry's metadata, and
/// the message's payload. `on` returns false to stop early.
pub async fn read_partition<F>(
    client: &Arc<Client>,
    topic: &str,
    partition: i32,
    opts: &ReadOptions,
    mut on: F,
) -> Result<ReadStats, TxnError>
where
    F: FnMut(&MessageIdData, &MessageMetadata, &[u8]) -> bool,
{
    let mut stats = ReadStats::default();
    let mut last_seen: Option<MessageIdData> = None;
    let mut end: Option<MessageIdData> = None;
    let give_up = tokio::time::Instant::now() + opts.idle_timeout.max(Duration::from_secs(5)) * 4;
    'session: loop {
        // (Re)subscribe from the last message seen, or the start.
        let start = resume_point(&last_seen, opts);
        let mut sub =
            match super::with_retry(give_up, || subscribe(client, topic, start.clone())).await {
                Ok(s) => s,
                Err(e) => {
                    stats.incomplete = Some(format!("cannot subscribe to {topic}: {e}"));
                    return Ok(stats);
                }
            };
        if end.is_none() {
            match last_message_id(client, &sub).await {
                // Stop at the last message, or earlier where asked.
                Ok(last) => end = Some(read_end(&opts.stop, last)),
                Err(e) => {
                    close(client, &sub).await;
                    stats.reconnects += 1;
                    if tokio::time::Instant::now() > give_up {
                        stats.incomplete =
                            Some(format!("cannot get the last message id of {topic}: {e}"));
                        return Ok(stats);
                    }
                    continue 'session;
                }
            }
        }
        let stop = end.clone().expect("set above");
        if last_seen.is_none() && (stop.ledger_id == u64::MAX || stop.entry_id == u64::MAX) {
            stats.empty_answer = Some((stop.ledger_id, stop.entry_id));
        }
        if nothing_left(&stop, opts, &last_seen) {
            stats.reached_end = true;
            close(client, &sub).await;
            return Ok(stats);
        }
        let permits = opts.permits.max(10);
        if let Err(e) = flow(&sub, permits) {
            tracing::debug!("flow on {topic}: {e}");
            stats.reconnects += 1;
            continue 'session;
        }
        let mut since_flow: u32 = 0;
        loop {
            let ev = match tokio::time::timeout(opts.idle_timeout, sub.events.recv()).await {
                Ok(Some(ev)) => ev,
                Ok(None) => ConsumerEvent::Closed("consumer channel closed".into()),
                Err(_) => {
                    stats.incomplete = Some(idle_incomplete(topic, opts, &last_seen, &stop));
                    close(client, &sub).await;
                    return Ok(stats);
                }
            };
            match ev {
                ConsumerEvent::Closed(reason) => {
                    tracing::info!("reader of {topic} lost its subscription ({reason}); resuming");
                    sub.conn.unregister_consumer(sub.consumer_id);
                    stats.reconnects += 1;
                    if tokio::time::Instant::now() > give_up + opts.idle_timeout * 4 {
                        stats.incomplete = Some(format!(
                            "reader of {topic} kept losing its subscription: {reason}"
                        ));
                        return Ok(stats);
                    }
                    continue 'session;
                }
                ConsumerEvent::Message { id, payload, .. } => {
                    let Payload { metadata, data } = payload;
                    let batch = metadata.num_messages_in_batch;
                    let members = batch.unwrap_or(1).max(1) as u32;
                    since_flow += members;
                    let keep_going = deliver(
                        &id,
                        &metadata,
                        data,
                        batch,
                        partition,
                        opts,
                        topic,
                        &mut last_seen,
                        &mut stats,
                        &mut on,
                    )?;
                    if !keep_going || entry_key(&id) >= entry_key(&stop) {
                        stats.reached_end = keep_going;
                        close(client, &sub).await;
                        return Ok(stats);
                    }
                    refill(&sub, &mut since_flow, permits, topic);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;
    use pulsar::message::proto::CompressionType;

    #[test]
    fn batches_split_into_their_members() {
        let mut buf = Vec::new();
        for p in [&b"10"[..], &b"11"[..], &b"12 padding"[..]] {
            let smd = proto::SingleMessageMetadata {
                payload_size: p.len() as i32,
                ..Default::default()
            };
            let m = smd.encode_to_vec();
            buf.extend_from_slice(&(m.len() as u32).to_be_bytes());
            buf.extend_from_slice(&m);
            buf.extend_from_slice(p);
        }
        let parts = split_batch(&buf, 3).unwrap();
        assert_eq!(parts, vec![&b"10"[..], &b"11"[..], &b"12 padding"[..]]);
        assert!(split_batch(&buf, 4).is_err());
    }

    #[test]
    #[cfg(feature = "compression")]
    fn uncompressed_passes_through_and_lz4_round_trips() {
        let md = MessageMetadata::default();
        assert_eq!(decompress(&md, b"abc".to_vec()).unwrap(), b"abc");
        let raw = b"12345 12345 12345 12345".to_vec();
        let packed = lz4::block::compress(&raw, None, false).unwrap();
        let md = MessageMetadata {
            compression: Some(CompressionType::Lz4 as i32),
            uncompressed_size: Some(raw.len() as u32),
            ..Default::default()
        };
        assert_eq!(decompress(&md, packed).unwrap(), raw);
    }
}
