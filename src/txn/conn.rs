//! One binary-protocol connection to a broker, owned by the harness: CONNECT, PING/PONG,
//! request-id matching (ACK_RESPONSE included), send receipts by (producer id, sequence id),
//! consumer messages by consumer id. Built on the `pulsar` crate's frame decoder and protocol types;
//! frames are written by `frame.rs`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use pulsar::error::ConnectionError;
use pulsar::message::proto::{self, base_command::Type, BaseCommand, MessageIdData, ServerError};
use pulsar::message::{Codec, Message, Payload};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{Decoder, Encoder, Framed};

use super::TxnError;

/// The protocol version we speak (v19 adds TC_CLIENT_CONNECT).
pub const PROTOCOL_VERSION: i32 = 19;
/// A PING goes out this often; a connection silent for KEEPALIVE_DEAD is closed.
const KEEPALIVE_EVERY: Duration = Duration::from_secs(10);
const KEEPALIVE_DEAD: Duration = Duration::from_secs(30);

/// What a consumer receives. A message is moved through its channel once; boxing it would cost
/// an allocation per message on the read-back's hot path, for an enum that is never stored.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum ConsumerEvent {
    Message {
        id: MessageIdData,
        payload: Payload,
        /// How often the broker delivered this entry before (0: first delivery).
        redelivery_count: u32,
        /// For a batched entry some of whose members the subscription has acknowledged already
        /// (batch-index acknowledgement): the members still unacknowledged, as bits (set =
        /// deliver). Empty: every member.
        ack_set: Vec<i64>,
    },
    /// The broker closed the consumer (unload), or the connection died.
    Closed(String),
}

type Receipt = Result<MessageIdData, TxnError>;

/// A SEND on its way: its receipt arrives here.
pub struct PendingReceipt {
    key: (u64, u64),
    rx: oneshot::Receiver<Receipt>,
}

/// What a SEND_RECEIPT says. Message id (-1, -1) is the broker's answer to a message its
/// deduplication dropped (Pulsar's `PersistentTopic.publishMessage`: on `Dup` it calls
/// `publishContext.completed(null, -1, -1)`, "Immediately acknowledge duplicated message"):
/// nothing was written, so the send failed. A receipt without a message id is a protocol
/// error, never success.
fn receipt_result(r: &proto::CommandSendReceipt) -> Receipt {
    match &r.message_id {
        Some(id) if id.ledger_id == u64::MAX && id.entry_id == u64::MAX => {
            Err(TxnError::DuplicateDropped(format!(
                "producer {} sequence id {}: the broker acknowledged the message as a duplicate \
                 (message id -1:-1) and did not write it",
                r.producer_id, r.sequence_id
            )))
        }
        Some(id) => Ok(id.clone()),
        None => Err(TxnError::Protocol(format!(
            "SEND_RECEIPT for producer {} sequence id {} without a message id",
            r.producer_id, r.sequence_id
        ))),
    }
}

struct Shared {
    addr: String,
    next_request: AtomicU64,
    next_handle: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Box<Message>>>>,
    receipts: Mutex<HashMap<(u64, u64), oneshot::Sender<Receipt>>>,
    closed_producers: Mutex<HashSet<u64>>,
    consumers: Mutex<HashMap<u64, mpsc::UnboundedSender<ConsumerEvent>>>,
    closed: AtomicBool,
    close_reason: Mutex<Option<String>>,
    last_frame: Mutex<Instant>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    max_message_size: Mutex<Option<i32>>,
}

impl Shared {
    /// Mark the connection dead and fail everything waiting on it.
    fn fail_all(&self, reason: &str) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        *self.close_reason.lock().expect("lock") = Some(reason.to_string());
        // Dropping the senders wakes every waiter with "closed".
        self.pending.lock().expect("lock").clear();
        for (_, tx) in self.receipts.lock().expect("lock").drain() {
            let _ = tx.send(Err(TxnError::ConnectionLost(reason.to_string())));
        }
        for (_, tx) in self.consumers.lock().expect("lock").drain() {
            let _ = tx.send(ConsumerEvent::Closed(reason.to_string()));
        }
    }
}

/// A connection; cheap to clone.
#[derive(Clone)]
pub struct Connection {
    out: mpsc::UnboundedSender<Box<Message>>,
    shared: Arc<Shared>,
}

/// The crate's codec with its frames boxed. A `Message` is 4.8 KB (prost keeps every optional
/// command of `BaseCommand` inline), and by value each frame was copied through the framed
/// stream's layers, the writer's channel and a response's oneshot: `memmove` was 17 % of the
/// harness's samples in a transform, 12 % boxed (perf, BENCHMARKS section 5).
struct BoxedCodec;

impl Decoder for BoxedCodec {
    type Item = Box<Message>;
    type Error = ConnectionError;

    fn decode(
        &mut self,
        src: &mut bytes::BytesMut,
    ) -> Result<Option<Box<Message>>, ConnectionError> {
        Ok(Codec.decode(src)?.map(Box::new))
    }
}

impl Encoder<Box<Message>> for BoxedCodec {
    type Error = ConnectionError;

    fn encode(
        &mut self,
        m: Box<Message>,
        dst: &mut bytes::BytesMut,
    ) -> Result<(), ConnectionError> {
        super::frame::encode(&m, dst)
    }
}

/// The connection's writer: every frame queued by the time one is taken goes out with it, in
/// one flush. A transform's attempt queues its T ACKs (and the producer a burst of SENDs) at
/// once; flushed one by one they reached the broker as T segments, each read on its own.
/// Ends when the channel closes (Ok) or a write fails.
async fn write_bursts<S>(
    sink: &mut S,
    rx: &mut mpsc::UnboundedReceiver<Box<Message>>,
) -> Result<(), S::Error>
where
    S: futures::Sink<Box<Message>> + Unpin,
{
    while let Some(m) = rx.recv().await {
        sink.feed(m).await?;
        while let Ok(m) = rx.try_recv() {
            sink.feed(m).await?;
        }
        sink.flush().await?;
    }
    Ok(())
}

/// `BaseCommand` of type `t` with nothing set.
pub fn base(t: Type) -> BaseCommand {
    BaseCommand {
        r#type: t as i32,
        ..Default::default()
    }
}

/// The request id a broker response answers, if it is a response.
fn response_request_id(c: &BaseCommand) -> Option<u64> {
    c.success
        .as_ref()
        .map(|x| x.request_id)
        .or_else(|| c.error.as_ref().map(|x| x.request_id))
        .or_else(|| c.producer_success.as_ref().map(|x| x.request_id))
        .or_else(|| c.lookup_topic_response.as_ref().map(|x| x.request_id))
        .or_else(|| c.partition_metadata_response.as_ref().map(|x| x.request_id))
        .or_else(|| {
            c.get_last_message_id_response
                .as_ref()
                .map(|x| x.request_id)
        })
        .or_else(|| c.tc_client_connect_response.as_ref().map(|x| x.request_id))
        .or_else(|| c.new_txn_response.as_ref().map(|x| x.request_id))
        .or_else(|| {
            c.add_partition_to_txn_response
                .as_ref()
                .map(|x| x.request_id)
        })
        .or_else(|| c.end_txn_response.as_ref().map(|x| x.request_id))
        .or_else(|| {
            c.add_subscription_to_txn_response
                .as_ref()
                .map(|x| x.request_id)
        })
        // Only an ACK sent with a request id is answered; an answer without one matches nothing.
        .or_else(|| c.ack_response.as_ref().and_then(|x| x.request_id))
}

/// A server error code as the enum (UnknownError for codes this crate does not know).
pub fn server_error(code: i32) -> ServerError {
    ServerError::try_from(code).unwrap_or(ServerError::UnknownError)
}

/// Open a TCP connection to `addr` and complete the CONNECT handshake (no timeout of its own).
async fn handshake(
    addr: &str,
) -> Result<(Framed<TcpStream, BoxedCodec>, proto::CommandConnected), TxnError> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| TxnError::NotSent(format!("connect to {addr}: {e}")))?;
    let _ = stream.set_nodelay(true);
    let mut framed = Framed::new(stream, BoxedCodec);
    let mut c = base(Type::Connect);
    c.connect = Some(proto::CommandConnect {
        client_version: format!("pulsar-chaos/{}", env!("CARGO_PKG_VERSION")),
        protocol_version: Some(PROTOCOL_VERSION),
        ..Default::default()
    });
    framed
        .send(Box::new(Message {
            command: c,
            payload: None,
        }))
        .await
        .map_err(|e| TxnError::NotSent(format!("CONNECT to {addr}: {e}")))?;
    loop {
        match framed.next().await {
            Some(Ok(m)) => {
                if let Some(c) = m.command.connected {
                    return Ok((framed, c));
                }
                if let Some(e) = m.command.error {
                    return Err(TxnError::NotSent(format!(
                        "CONNECT to {addr} refused: {:?} {}",
                        server_error(e.error),
                        e.message
                    )));
                }
            }
            Some(Err(e)) => return Err(TxnError::NotSent(format!("CONNECT to {addr}: {e}"))),
            None => {
                return Err(TxnError::NotSent(format!(
                    "CONNECT to {addr}: connection closed"
                )))
            }
        }
    }
}

/// PING every KEEPALIVE_EVERY; fail the connection once it has been silent for KEEPALIVE_DEAD.
async fn keepalive(sh: Arc<Shared>, ping_out: mpsc::UnboundedSender<Box<Message>>) {
    loop {
        tokio::time::sleep(KEEPALIVE_EVERY).await;
        if sh.closed.load(Ordering::SeqCst) {
            break;
        }
        let silent = sh.last_frame.lock().expect("lock").elapsed();
        if silent > KEEPALIVE_DEAD {
            sh.fail_all(&format!(
                "{} silent for {}s (keepalive)",
                sh.addr,
                silent.as_secs()
            ));
            break;
        }
        let mut p = base(Type::Ping);
        p.ping = Some(proto::CommandPing {});
        let _ = ping_out.send(Box::new(Message {
            command: p,
            payload: None,
        }));
    }
}

impl Connection {
    /// Connect to `addr` ("host:port") and complete the CONNECT handshake.
    pub async fn connect(addr: &str, timeout: Duration) -> Result<Connection, TxnError> {
        let fut = handshake(addr);
        let (framed, connected) = tokio::time::timeout(timeout, fut).await.map_err(|_| {
            TxnError::NotSent(format!(
                "connect to {addr}: no answer within {}ms",
                timeout.as_millis()
            ))
        })??;
        let (mut sink, mut stream) = framed.split();
        let (out, mut rx) = mpsc::unbounded_channel::<Box<Message>>();
        let shared = Arc::new(Shared {
            addr: addr.to_string(),
            next_request: AtomicU64::new(1),
            next_handle: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            receipts: Mutex::new(HashMap::new()),
            closed_producers: Mutex::new(HashSet::new()),
            consumers: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            close_reason: Mutex::new(None),
            last_frame: Mutex::new(Instant::now()),
            tasks: Mutex::new(Vec::new()),
            max_message_size: Mutex::new(connected.max_message_size),
        });
        // Writer.
        let sh = shared.clone();
        let writer = tokio::spawn(async move {
            if let Err(e) = write_bursts(&mut sink, &mut rx).await {
                sh.fail_all(&format!("write to {}: {e}", sh.addr));
            }
        });
        // Reader.
        let sh = shared.clone();
        let pong_out = out.clone();
        let reader = tokio::spawn(async move {
            loop {
                match stream.next().await {
                    Some(Ok(m)) => {
                        *sh.last_frame.lock().expect("lock") = Instant::now();
                        dispatch(&sh, &pong_out, m);
                    }
                    Some(Err(e)) => {
                        sh.fail_all(&format!("read from {}: {e}", sh.addr));
                        break;
                    }
                    None => {
                        sh.fail_all(&format!("{} closed the connection", sh.addr));
                        break;
                    }
                }
            }
        });
        // Keepalive.
        let sh = shared.clone();
        let ping_out = out.clone();
        let keepalive = tokio::spawn(keepalive(sh, ping_out));
        shared
            .tasks
            .lock()
            .expect("lock")
            .extend([writer, reader, keepalive]);
        Ok(Connection { out, shared })
    }

    pub fn addr(&self) -> &str {
        &self.shared.addr
    }

    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    pub fn close_reason(&self) -> Option<String> {
        self.shared.close_reason.lock().expect("lock").clone()
    }

    /// Close the connection and stop its tasks.
    pub fn close(&self) {
        self.shared.fail_all("closed by the harness");
        for t in self.shared.tasks.lock().expect("lock").drain(..) {
            t.abort();
        }
    }

    pub fn new_request_id(&self) -> u64 {
        self.shared.next_request.fetch_add(1, Ordering::Relaxed)
    }

    /// A fresh producer or consumer id on this connection.
    pub fn new_handle(&self) -> u64 {
        self.shared.next_handle.fetch_add(1, Ordering::Relaxed)
    }

    pub fn max_message_size(&self) -> Option<i32> {
        *self.shared.max_message_size.lock().expect("lock")
    }

    fn closed_error(&self) -> TxnError {
        TxnError::ConnectionLost(
            self.close_reason()
                .unwrap_or_else(|| format!("connection to {} closed", self.addr())),
        )
    }

    /// Send a frame without waiting for anything.
    pub fn send_frame(
        &self,
        command: BaseCommand,
        payload: Option<Payload>,
    ) -> Result<(), TxnError> {
        if self.is_closed() {
            return Err(TxnError::NotSent(format!(
                "connection to {} is closed: {}",
                self.addr(),
                self.close_reason().unwrap_or_default()
            )));
        }
        self.out
            .send(Box::new(Message { command, payload }))
            .map_err(|_| TxnError::NotSent(format!("connection to {} is closed", self.addr())))
    }

    /// Send a request and wait for the response with the same request id. A generic ERROR
    /// reply is returned as `TxnError::Server`.
    pub async fn request(
        &self,
        request_id: u64,
        command: BaseCommand,
        timeout: Duration,
    ) -> Result<BaseCommand, TxnError> {
        let (tx, rx) = oneshot::channel();
        self.shared
            .pending
            .lock()
            .expect("lock")
            .insert(request_id, tx);
        if let Err(e) = self.send_frame(command, None) {
            self.shared
                .pending
                .lock()
                .expect("lock")
                .remove(&request_id);
            return Err(e);
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(resp)) => {
                if let Some(e) = &resp.command.error {
                    return Err(TxnError::Server {
                        code: server_error(e.error),
                        message: e.message.clone(),
                    });
                }
                Ok(resp.command)
            }
            Ok(Err(_)) => Err(self.closed_error()),
            Err(_) => {
                self.shared
                    .pending
                    .lock()
                    .expect("lock")
                    .remove(&request_id);
                Err(TxnError::Timeout(format!(
                    "no answer from {} within {}ms",
                    self.addr(),
                    timeout.as_millis()
                )))
            }
        }
    }

    /// Register a SEND's receipt and queue its frame, without waiting: frames leave in the
    /// order of these calls (a producer queues under the lock that hands out its sequence
    /// ids, so its SENDs go out in sequence order). Then wait with `receipt`.
    pub fn start_send(
        &self,
        producer_id: u64,
        sequence_id: u64,
        command: BaseCommand,
        payload: Payload,
    ) -> Result<PendingReceipt, TxnError> {
        let (tx, rx) = oneshot::channel();
        if self.is_producer_closed(producer_id) {
            return Err(TxnError::NotSent(format!(
                "producer {producer_id} was closed by the broker"
            )));
        }
        self.shared
            .receipts
            .lock()
            .expect("lock")
            .insert((producer_id, sequence_id), tx);
        if let Err(e) = self.send_frame(command, Some(payload)) {
            self.shared
                .receipts
                .lock()
                .expect("lock")
                .remove(&(producer_id, sequence_id));
            return Err(e);
        }
        Ok(PendingReceipt {
            key: (producer_id, sequence_id),
            rx,
        })
    }

    /// Wait for the receipt of a SEND queued by `start_send`.
    pub async fn receipt(
        &self,
        pending: PendingReceipt,
        timeout: Duration,
    ) -> Result<MessageIdData, TxnError> {
        match tokio::time::timeout(timeout, pending.rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(self.closed_error()),
            Err(_) => {
                self.shared
                    .receipts
                    .lock()
                    .expect("lock")
                    .remove(&pending.key);
                Err(TxnError::Timeout(format!(
                    "no receipt from {} within {}ms",
                    self.addr(),
                    timeout.as_millis()
                )))
            }
        }
    }

    pub fn is_producer_closed(&self, producer_id: u64) -> bool {
        self.shared
            .closed_producers
            .lock()
            .expect("lock")
            .contains(&producer_id)
    }

    /// Register a consumer id; its messages arrive on the returned channel.
    pub fn register_consumer(&self, consumer_id: u64) -> mpsc::UnboundedReceiver<ConsumerEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        if self.is_closed() {
            let _ = tx.send(ConsumerEvent::Closed(
                self.close_reason().unwrap_or_default(),
            ));
        } else {
            self.shared
                .consumers
                .lock()
                .expect("lock")
                .insert(consumer_id, tx);
        }
        rx
    }

    /// Whether `consumer_id` is still registered: false once the broker closed it, the
    /// connection died, or the harness unregistered it.
    pub fn has_consumer(&self, consumer_id: u64) -> bool {
        self.shared
            .consumers
            .lock()
            .expect("lock")
            .contains_key(&consumer_id)
    }

    pub fn unregister_consumer(&self, consumer_id: u64) {
        self.shared
            .consumers
            .lock()
            .expect("lock")
            .remove(&consumer_id);
    }
}

fn dispatch(sh: &Shared, out: &mpsc::UnboundedSender<Box<Message>>, m: Box<Message>) {
    let c = &m.command;
    if c.ping.is_some() {
        let mut p = base(Type::Pong);
        p.pong = Some(proto::CommandPong {});
        let _ = out.send(Box::new(Message {
            command: p,
            payload: None,
        }));
        return;
    }
    if c.pong.is_some() {
        return;
    }
    if let Some(r) = &c.send_receipt {
        if let Some(tx) = sh
            .receipts
            .lock()
            .expect("lock")
            .remove(&(r.producer_id, r.sequence_id))
        {
            let _ = tx.send(receipt_result(r));
        }
        return;
    }
    if let Some(e) = &c.send_error {
        if let Some(tx) = sh
            .receipts
            .lock()
            .expect("lock")
            .remove(&(e.producer_id, e.sequence_id))
        {
            let _ = tx.send(Err(TxnError::Server {
                code: server_error(e.error),
                message: e.message.clone(),
            }));
        }
        return;
    }
    if let Some(cp) = &c.close_producer {
        let pid = cp.producer_id;
        sh.closed_producers.lock().expect("lock").insert(pid);
        let mut receipts = sh.receipts.lock().expect("lock");
        let keys: Vec<(u64, u64)> = receipts
            .keys()
            .filter(|(p, _)| *p == pid)
            .cloned()
            .collect();
        for k in keys {
            if let Some(tx) = receipts.remove(&k) {
                let _ = tx.send(Err(TxnError::ConnectionLost(format!(
                    "the broker closed producer {pid} (topic unloaded or moved)"
                ))));
            }
        }
        return;
    }
    if let Some(msg) = &c.message {
        let cid = msg.consumer_id;
        let id = msg.message_id.clone();
        if let Some(payload) = m.payload {
            if let Some(tx) = sh.consumers.lock().expect("lock").get(&cid) {
                let _ = tx.send(ConsumerEvent::Message {
                    id,
                    payload,
                    redelivery_count: msg.redelivery_count.unwrap_or(0),
                    ack_set: msg.ack_set.clone(),
                });
            }
        }
        return;
    }
    if let Some(cc) = &c.close_consumer {
        if let Some(tx) = sh.consumers.lock().expect("lock").remove(&cc.consumer_id) {
            let _ = tx.send(ConsumerEvent::Closed(
                "the broker closed the consumer (topic unloaded or moved)".into(),
            ));
        }
        return;
    }
    if let Some(rid) = response_request_id(c) {
        // A producer that is not ready yet answers twice; wait for the ready one.
        if let Some(ps) = &c.producer_success {
            if ps.producer_ready == Some(false) {
                return;
            }
        }
        if let Some(tx) = sh.pending.lock().expect("lock").remove(&rid) {
            let _ = tx.send(m);
        }
        return;
    }
    tracing::debug!("{}: ignoring frame of type {}", sh.addr, c.r#type);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt(id: Option<(u64, u64)>) -> proto::CommandSendReceipt {
        proto::CommandSendReceipt {
            producer_id: 3,
            sequence_id: 41,
            message_id: id.map(|(ledger_id, entry_id)| MessageIdData {
                ledger_id,
                entry_id,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Regression (issue 10, point 5): a receipt naming message id (-1, -1) was taken as a
    /// successful send, and the transaction committed without the dropped message.
    #[test]
    fn a_receipt_for_a_dropped_duplicate_fails_the_send() {
        // -1 as the protocol's uint64.
        let r = receipt_result(&receipt(Some((u64::MAX, u64::MAX))));
        match r {
            Err(e @ TxnError::DuplicateDropped(_)) => {
                assert!(!e.is_retryable(), "{e}");
                assert!(e.to_string().contains("sequence id 41"), "{e}");
            }
            other => panic!("expected DuplicateDropped, got {other:?}"),
        }
    }

    #[test]
    fn ack_and_add_subscription_responses_are_matched_by_request_id() {
        let mut c = base(Type::AckResponse);
        c.ack_response = Some(proto::CommandAckResponse {
            consumer_id: 4,
            request_id: Some(17),
            ..Default::default()
        });
        assert_eq!(response_request_id(&c), Some(17));
        // An ACK_RESPONSE without a request id answers no request of ours.
        c.ack_response.as_mut().unwrap().request_id = None;
        assert_eq!(response_request_id(&c), None);
        let mut c = base(Type::AddSubscriptionToTxnResponse);
        c.add_subscription_to_txn_response = Some(proto::CommandAddSubscriptionToTxnResponse {
            request_id: 9,
            ..Default::default()
        });
        assert_eq!(response_request_id(&c), Some(9));
    }

    #[test]
    fn a_receipt_with_a_real_id_succeeds_and_one_without_an_id_is_a_protocol_error() {
        let id = receipt_result(&receipt(Some((12, 7)))).unwrap();
        assert_eq!((id.ledger_id, id.entry_id), (12, 7));
        // Only both -1 is the duplicate answer.
        assert!(receipt_result(&receipt(Some((u64::MAX, 0)))).is_ok());
        assert!(matches!(
            receipt_result(&receipt(None)),
            Err(TxnError::Protocol(_))
        ));
    }

    /// The boxed codec writes the crate's frames and reads them back whole, in order, with
    /// their payloads; a partial frame waits for the rest.
    #[test]
    fn the_boxed_codec_round_trips_frames_and_waits_for_a_whole_one() {
        let mut buf = bytes::BytesMut::new();
        let mut ping = base(Type::Ping);
        ping.ping = Some(proto::CommandPing {});
        BoxedCodec
            .encode(
                Box::new(Message {
                    command: ping,
                    payload: None,
                }),
                &mut buf,
            )
            .unwrap();
        let mut send = base(Type::Send);
        send.send = Some(proto::CommandSend {
            producer_id: 2,
            sequence_id: 5,
            ..Default::default()
        });
        let payload = Payload {
            metadata: proto::MessageMetadata {
                producer_name: "p".into(),
                sequence_id: 5,
                publish_time: 1,
                ..Default::default()
            },
            data: b"42".to_vec(),
        };
        BoxedCodec
            .encode(
                Box::new(Message {
                    command: send,
                    payload: Some(payload),
                }),
                &mut buf,
            )
            .unwrap();
        let whole = buf.clone();
        let mut part = bytes::BytesMut::from(&whole[..whole.len() - 1]);
        let first = BoxedCodec.decode(&mut part).unwrap().unwrap();
        assert!(first.command.ping.is_some());
        assert!(
            BoxedCodec.decode(&mut part).unwrap().is_none(),
            "a partial frame"
        );
        let mut rest = bytes::BytesMut::from(&whole[..]);
        BoxedCodec.decode(&mut rest).unwrap().unwrap();
        let second = BoxedCodec.decode(&mut rest).unwrap().unwrap();
        assert_eq!(second.command.send.as_ref().unwrap().sequence_id, 5);
        assert_eq!(second.payload.as_ref().unwrap().data, b"42");
        assert!(rest.is_empty());
    }

    /// What reaches a sink: each frame's type, and each flush.
    #[derive(Default)]
    struct Recorder(Vec<String>);

    impl futures::Sink<Box<Message>> for Recorder {
        type Error = std::convert::Infallible;

        fn poll_ready(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), Self::Error>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn start_send(self: std::pin::Pin<&mut Self>, m: Box<Message>) -> Result<(), Self::Error> {
            let t = m.command.r#type();
            self.get_mut().0.push(format!("{t:?}"));
            Ok(())
        }

        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), Self::Error>> {
            self.get_mut().0.push("flush".into());
            std::task::Poll::Ready(Ok(()))
        }

        fn poll_close(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), Self::Error>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    /// Frames queued together leave in their order with one flush after the last (an
    /// attempt's ACKs reach the broker in one read, not one each), and a frame queued after
    /// that flush starts a burst of its own.
    #[tokio::test]
    async fn the_writer_flushes_once_per_burst_of_queued_frames() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        for t in [Type::Ack, Type::Ack, Type::Send] {
            tx.send(Box::new(Message {
                command: base(t),
                payload: None,
            }))
            .unwrap();
        }
        let mut sink = Recorder::default();
        let writer = async {
            write_bursts(&mut sink, &mut rx).await.unwrap();
        };
        let later = async {
            // The writer has taken the first burst by the time it waits on the empty channel.
            tokio::task::yield_now().await;
            tx.send(Box::new(Message {
                command: base(Type::EndTxn),
                payload: None,
            }))
            .unwrap();
            drop(tx);
        };
        tokio::join!(writer, later);
        assert_eq!(
            sink.0,
            ["Ack", "Ack", "Send", "flush", "EndTxn", "flush"],
            "frames and flushes in the order the sink saw them"
        );
    }
}
