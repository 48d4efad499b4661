//! `reply_loss`: a TCP proxy in front of every broker the producer talks to, which understands
//! Pulsar's frames and, while a fault is armed, drops the broker's reply to one kind of
//! command and then closes that connection on both sides, as a network fault would after the
//! broker had acted.
//!
//! Only the producer's connections go through it; the read-back and the admin API do not.
//! One local listener on 127.0.0.1 per upstream address (the service URL's and every broker a
//! lookup names). It is reached in one of two ways ([`Addressing`]):
//! - the harness's own client dials through it ([`Dial`]): the client asks the proxy for the
//!   listener of each broker address it looked up;
//! - an official client in a driver process cannot be asked, so it is given the service URL's
//!   listener ([`ReplyLossProxy::service_url`]) and the proxy rewrites every broker address the
//!   brokers send it (the `brokerServiceUrl` of a LOOKUP_RESPONSE, whether `Connect` or
//!   `Redirect`) to that broker's listener, so that every connection the client opens after a
//!   lookup comes back through the proxy (`brokerServiceUrlTls` is cleared: a client told to
//!   use TLS would otherwise go around it). (Pulsar's own proxy answers with
//!   `proxyThroughServiceUrl` instead, but it follows redirects itself and answers only
//!   `Connect`, which a byte-level forwarder cannot.) Not rewritten: the broker URL a
//!   CLOSE_PRODUCER or CLOSE_CONSUMER carries under the extensible load manager (PIP-307), and
//!   TOPIC_MIGRATED (cluster migration); the harness's clusters run the default load manager
//!   and migrate nothing. A LOOKUP_RESPONSE whose command holds fields the protocol buffers
//!   here do not know (its size is not what they encode again) is forwarded unchanged.
//!
//! A frame is `[total size: u32 BE][command size: u32 BE][BaseCommand][metadata + payload]`;
//! the proxy decodes the command only and forwards the bytes it read unchanged. In the client
//! to broker direction it notes which transaction each SEND carries, so a dropped SEND_RECEIPT
//! (which names no transaction) can be recorded with its transaction, and the action of each
//! END_TXN, so that an `end_txn` fault drops the replies to commits only: an ABORT's reply
//! lost would make an abort's outcome unknown, which is not the ambiguous commit the fault is
//! for (and its closed connection would make other transactions' commits ambiguous by chance).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::BytesMut;
use prost::Message as _;
use pulsar::message::proto::{base_command::Type, BaseCommand};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::history::{EventBody, History, TxnId};
use crate::scenario::ReplyKind;
use crate::seed::Rng;
use crate::txn::{Dial, TxnError};

/// Frames larger than this are refused (Pulsar's default maxMessageSize is 5 MiB).
pub const MAX_FRAME: usize = 64 * 1024 * 1024;

/// A frame the proxy cannot make sense of.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame of {0} bytes is larger than {MAX_FRAME}")]
    TooLarge(usize),
    #[error("frame of {total} bytes declares a command of {command} bytes")]
    BadCommandSize { total: usize, command: usize },
    #[error("the command does not decode: {0}")]
    Decode(String),
}

/// The length of the complete frame at the start of `buf`, or `None` while it is incomplete.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, FrameError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let total = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if total > MAX_FRAME {
        return Err(FrameError::TooLarge(total));
    }
    if buf.len() < 4 + total {
        return Ok(None);
    }
    Ok(Some(4 + total))
}

/// The command of one complete frame (as [`frame_len`] delimits it).
pub fn command_of(frame: &[u8]) -> Result<BaseCommand, FrameError> {
    let total = frame.len().saturating_sub(4);
    if frame.len() < 8 {
        return Err(FrameError::BadCommandSize { total, command: 0 });
    }
    let command = u32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]) as usize;
    if command == 0 || 4 + command > total {
        return Err(FrameError::BadCommandSize { total, command });
    }
    BaseCommand::decode(&frame[8..8 + command]).map_err(|e| FrameError::Decode(e.to_string()))
}

fn txn_of(most: Option<u64>, least: Option<u64>) -> Option<TxnId> {
    match (most, least) {
        (Some(most), Some(least)) => Some(TxnId { most, least }),
        _ => None,
    }
}

/// A broker reply of a kind `reply_loss` can drop: its kind, the request id it answers (for
/// SEND_RECEIPT the sequence id) and the transaction it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub kind: ReplyKind,
    pub request_id: u64,
    pub txn: Option<TxnId>,
    /// For SEND_RECEIPT: (producer id, sequence id), to find the SEND's transaction.
    pub send_key: Option<(u64, u64)>,
}

/// What `c` is, when it is a reply `reply_loss` can drop.
pub fn reply_of(c: &BaseCommand) -> Option<Reply> {
    let t = Type::try_from(c.r#type).ok()?;
    match t {
        Type::EndTxnResponse => c.end_txn_response.as_ref().map(|r| Reply {
            kind: ReplyKind::EndTxn,
            request_id: r.request_id,
            txn: txn_of(r.txnid_most_bits, r.txnid_least_bits),
            send_key: None,
        }),
        Type::NewTxnResponse => c.new_txn_response.as_ref().map(|r| Reply {
            kind: ReplyKind::NewTxn,
            request_id: r.request_id,
            txn: txn_of(r.txnid_most_bits, r.txnid_least_bits),
            send_key: None,
        }),
        Type::AddPartitionToTxnResponse => {
            c.add_partition_to_txn_response.as_ref().map(|r| Reply {
                kind: ReplyKind::AddPartitionToTxn,
                request_id: r.request_id,
                txn: txn_of(r.txnid_most_bits, r.txnid_least_bits),
                send_key: None,
            })
        }
        Type::SendReceipt => c.send_receipt.as_ref().map(|r| Reply {
            kind: ReplyKind::SendReceipt,
            request_id: r.sequence_id,
            txn: None,
            send_key: Some((r.producer_id, r.sequence_id)),
        }),
        _ => None,
    }
}

/// The (producer id, sequence id) of a transactional SEND and the transaction it carries.
pub fn send_of(c: &BaseCommand) -> Option<((u64, u64), TxnId)> {
    let s = c.send.as_ref()?;
    Some((
        (s.producer_id, s.sequence_id),
        txn_of(s.txnid_most_bits, s.txnid_least_bits)?,
    ))
}

/// The request id and action (`TxnAction` as sent) of an END_TXN request.
pub fn end_txn_of(c: &BaseCommand) -> Option<(u64, Option<i32>)> {
    if Type::try_from(c.r#type).ok()? != Type::EndTxn {
        return None;
    }
    let e = c.end_txn.as_ref()?;
    Some((e.request_id, e.txn_action))
}

/// Whether a fault may drop `reply`: an END_TXN reply only when it answers a COMMIT
/// (`action`: what the END_TXN with the same request id asked, if the proxy saw it).
pub fn may_drop(reply: &Reply, action: Option<i32>) -> bool {
    reply.kind != ReplyKind::EndTxn
        || action == Some(pulsar::message::proto::TxnAction::Commit as i32)
}

/// The broker addresses ("host:port") a broker-to-client command names that a rewriting
/// proxy must route through itself: a LOOKUP_RESPONSE's `brokerServiceUrl`.
pub fn addresses_in(c: &BaseCommand) -> Vec<String> {
    if Type::try_from(c.r#type).ok() != Some(Type::LookupResponse) {
        return Vec::new();
    }
    c.lookup_topic_response
        .as_ref()
        .and_then(|r| r.broker_service_url.as_deref())
        .map(|u| vec![crate::txn::host_port(u)])
        .unwrap_or_default()
}

/// `c` with every address [`addresses_in`] names replaced by its route (`routes`: address to
/// the local "host:port" that forwards to it). `None` when nothing changed.
pub fn readdressed(c: &BaseCommand, routes: &HashMap<String, String>) -> Option<BaseCommand> {
    let mut c = c.clone();
    let r = c.lookup_topic_response.as_mut()?;
    let to = routes.get(&crate::txn::host_port(r.broker_service_url.as_deref()?))?;
    r.broker_service_url = Some(format!("pulsar://{to}"));
    r.broker_service_url_tls = None;
    Some(c)
}

/// Whether `c`, decoded from `frame`, encodes to as many bytes as the frame's command held:
/// not so when the command carried fields these protocol buffers do not know (decoding drops
/// them), and then it must not be encoded again.
pub fn encodes_as_read(frame: &[u8], c: &BaseCommand) -> bool {
    frame.len() >= 8
        && u32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]) as usize == c.encoded_len()
}

/// A frame holding `c` alone (no metadata, no payload), as the protocol delimits it.
pub fn frame_of(c: &BaseCommand) -> Vec<u8> {
    let command = c.encode_to_vec();
    let mut f = Vec::with_capacity(8 + command.len());
    f.extend_from_slice(&((4 + command.len()) as u32).to_be_bytes());
    f.extend_from_slice(&(command.len() as u32).to_be_bytes());
    f.extend_from_slice(&command);
    f
}

/// How a client's connections reach the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addressing {
    /// The client asks for each broker's listener ([`Dial`]): the harness's own client.
    Dialed,
    /// The client is given the service URL's listener and the proxy rewrites the broker
    /// addresses in the lookups it forwards: an official client in a driver.
    Rewritten,
}

/// How an armed fault picks the replies it drops.
#[derive(Debug, Clone)]
pub enum Pick {
    /// The next `n` matching replies.
    Count(u32),
    /// Each matching reply with this probability, drawn from the plan's stream.
    Probability { p: f64, rng: Rng },
}

/// One armed `reply_loss` fault.
struct Arming {
    fault: String,
    reply: ReplyKind,
    pick: Pick,
    matched: u64,
    dropped: u64,
    spent: watch::Sender<bool>,
}

impl Arming {
    /// Whether to drop the next matching reply. Pure but for the arming's own state.
    fn decide(&mut self) -> bool {
        self.matched += 1;
        let drop = match &mut self.pick {
            Pick::Count(0) => false,
            Pick::Count(n) => {
                *n -= 1;
                if *n == 0 {
                    let _ = self.spent.send(true);
                }
                true
            }
            Pick::Probability { p, rng } => unit(rng.next_u64()) < *p,
        };
        if drop {
            self.dropped += 1;
        }
        drop
    }
}

/// A u64 as a number in [0, 1).
fn unit(v: u64) -> f64 {
    (v >> 11) as f64 / (1u64 << 53) as f64
}

/// What the heal of an arming reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disarmed {
    pub matched: u64,
    pub dropped: u64,
}

/// The proxy. Cheap to share; one per run.
pub struct ReplyLossProxy {
    history: History,
    addressing: Addressing,
    routes: tokio::sync::Mutex<HashMap<String, String>>,
    armings: Mutex<Vec<Arming>>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    connections: AtomicU64,
}

/// Client to broker: forward every byte read, noting the SENDs and END_TXN actions of each
/// complete frame.
async fn forward_upstream(
    mut client_rd: OwnedReadHalf,
    mut server_wr: OwnedWriteHalf,
    noted: Arc<Mutex<HashMap<(u64, u64), TxnId>>>,
    noted_actions: Arc<Mutex<HashMap<u64, Option<i32>>>>,
) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    loop {
        match client_rd.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        // Note the SENDs of every complete frame; forward all bytes read.
        let mut at = 0;
        loop {
            match frame_len(&buf[at..]) {
                Ok(Some(len)) => {
                    if let Ok(c) = command_of(&buf[at..at + len]) {
                        if let Some((key, txn)) = send_of(&c) {
                            noted.lock().expect("lock").insert(key, txn);
                        }
                        if let Some((rid, action)) = end_txn_of(&c) {
                            noted_actions.lock().expect("lock").insert(rid, action);
                        }
                    }
                    at += len;
                }
                Ok(None) => break,
                Err(_) => {
                    // Not Pulsar frames: stop noting, keep forwarding.
                    at = buf.len();
                    break;
                }
            }
        }
        let forward = buf.split_to(at);
        if server_wr.write_all(&forward).await.is_err() {
            break;
        }
        // An incomplete frame stays in `buf` until the rest arrives; forward it then.
    }
    let _ = server_wr.shutdown().await;
}

impl ReplyLossProxy {
    pub fn new(history: History, addressing: Addressing) -> Arc<ReplyLossProxy> {
        Arc::new(ReplyLossProxy {
            history,
            addressing,
            routes: tokio::sync::Mutex::new(HashMap::new()),
            armings: Mutex::new(Vec::new()),
            tasks: Mutex::new(Vec::new()),
            connections: AtomicU64::new(0),
        })
    }

    /// Arm `fault`: from now on drop the replies `pick` chooses among those of kind `reply`.
    /// The receiver turns true once a count is used up.
    pub fn arm(&self, fault: &str, reply: ReplyKind, pick: Pick) -> watch::Receiver<bool> {
        let (spent, rx) = watch::channel(false);
        self.armings.lock().expect("lock").push(Arming {
            fault: fault.to_string(),
            reply,
            pick,
            matched: 0,
            dropped: 0,
            spent,
        });
        rx
    }

    /// Disarm `fault`; what it matched and dropped.
    pub fn disarm(&self, fault: &str) -> Option<Disarmed> {
        let mut a = self.armings.lock().expect("lock");
        let i = a.iter().position(|x| x.fault == fault)?;
        let x = a.remove(i);
        Some(Disarmed {
            matched: x.matched,
            dropped: x.dropped,
        })
    }

    /// A receiver that turns true when `fault`'s count is used up (never for a probability).
    pub fn spent(&self, fault: &str) -> Option<watch::Receiver<bool>> {
        let a = self.armings.lock().expect("lock");
        a.iter()
            .find(|x| x.fault == fault)
            .map(|x| x.spent.subscribe())
    }

    /// Which armed fault, if any, drops this reply.
    fn should_drop(&self, kind: ReplyKind) -> Option<String> {
        let mut a = self.armings.lock().expect("lock");
        for x in a.iter_mut().filter(|x| x.reply == kind) {
            if x.decide() {
                return Some(x.fault.clone());
            }
        }
        None
    }

    /// Stop listening (the run is over); open connections end with their sockets.
    pub fn shutdown(&self) {
        for t in self.tasks.lock().expect("lock").drain(..) {
            t.abort();
        }
    }

    /// The service URL to give a client that cannot dial through the proxy (an official
    /// client): `service_url`'s listener, as a pulsar:// URL.
    pub async fn service_url(self: &Arc<Self>, service_url: &str) -> Result<String, TxnError> {
        let local = self
            .listener_for(&crate::txn::host_port(service_url))
            .await?;
        Ok(format!("pulsar://{local}"))
    }

    /// The local listener for `upstream`, started on first use.
    async fn listener_for(self: &Arc<Self>, upstream: &str) -> Result<String, TxnError> {
        let mut routes = self.routes.lock().await;
        if let Some(l) = routes.get(upstream) {
            return Ok(l.clone());
        }
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| TxnError::NotSent(format!("reply_loss proxy: cannot listen: {e}")))?;
        let local = listener
            .local_addr()
            .map_err(|e| TxnError::NotSent(format!("reply_loss proxy: {e}")))?
            .to_string();
        tracing::debug!("reply_loss proxy: {local} -> {upstream}");
        let me = self.clone();
        let up = upstream.to_string();
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                let me = me.clone();
                let up = up.clone();
                tokio::spawn(async move { me.serve(client, &up).await });
            }
        });
        self.tasks.lock().expect("lock").push(task);
        routes.insert(upstream.to_string(), local.clone());
        Ok(local)
    }

    /// One proxied connection.
    async fn serve(self: Arc<Self>, client: TcpStream, upstream: &str) {
        let server = match TcpStream::connect(upstream).await {
            Ok(s) => s,
            Err(e) => {
                // The client sees its CONNECT fail: nothing was sent.
                tracing::debug!("reply_loss proxy: cannot reach {upstream}: {e}");
                return;
            }
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let n = self.connections.fetch_add(1, Ordering::Relaxed) + 1;
        let (client_rd, mut client_wr) = client.into_split();
        let (mut server_rd, server_wr) = server.into_split();
        let sends: Arc<Mutex<HashMap<(u64, u64), TxnId>>> = Arc::new(Mutex::new(HashMap::new()));
        let actions: Arc<Mutex<HashMap<u64, Option<i32>>>> = Arc::new(Mutex::new(HashMap::new()));
        // Client to broker: forwarded as read, SENDs and END_TXN actions noted.
        let noted = sends.clone();
        let noted_actions = actions.clone();
        let upstream_task =
            tokio::spawn(forward_upstream(client_rd, server_wr, noted, noted_actions));
        // Broker to client: frame by frame, each inspected before it is forwarded.
        let mut buf = BytesMut::with_capacity(64 * 1024);
        'conn: loop {
            match server_rd.read_buf(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            loop {
                let len = match frame_len(&buf) {
                    Ok(Some(len)) => len,
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!("reply_loss proxy: from {upstream}: {e}; closing");
                        break 'conn;
                    }
                };
                let mut frame = buf.split_to(len);
                let command = command_of(&frame).ok();
                if let Some(c) = command.as_ref().filter(|c| {
                    self.addressing == Addressing::Rewritten && encodes_as_read(&frame, c)
                }) {
                    match self.readdress(c).await {
                        Ok(Some(f)) => frame = BytesMut::from(&f[..]),
                        Ok(None) => {}
                        Err(e) => {
                            tracing::warn!("reply_loss proxy: {e}; closing");
                            break 'conn;
                        }
                    }
                }
                if let Some(reply) = command.as_ref().and_then(reply_of) {
                    if let Some(key) = reply.send_key {
                        let txn = sends.lock().expect("lock").remove(&key);
                        if let Some(fault) = self.should_drop(reply.kind) {
                            self.record_drop(&fault, &reply, txn, upstream, n);
                            break 'conn;
                        }
                    } else {
                        let action = if reply.kind == ReplyKind::EndTxn {
                            actions
                                .lock()
                                .expect("lock")
                                .remove(&reply.request_id)
                                .flatten()
                        } else {
                            None
                        };
                        if may_drop(&reply, action) {
                            if let Some(fault) = self.should_drop(reply.kind) {
                                self.record_drop(&fault, &reply, reply.txn, upstream, n);
                                break 'conn;
                            }
                        }
                    }
                }
                if client_wr.write_all(&frame).await.is_err() {
                    break 'conn;
                }
            }
        }
        // Close both sides: the client sees its connection end without the reply.
        upstream_task.abort();
        let _ = upstream_task.await;
        let _ = client_wr.shutdown().await;
    }

    /// The frame of `c` with its broker addresses routed through this proxy, when it names any.
    async fn readdress(self: &Arc<Self>, c: &BaseCommand) -> Result<Option<Vec<u8>>, TxnError> {
        let mut routes = HashMap::new();
        for a in addresses_in(c) {
            // Through the boxed `Dial` future: a listener's connections call this, so awaiting
            // `listener_for` itself would make its future contain itself.
            let local = Dial::route(self, &a).await?;
            routes.insert(a, local);
        }
        Ok(readdressed(c, &routes).map(|c| frame_of(&c)))
    }

    fn record_drop(
        &self,
        fault: &str,
        reply: &Reply,
        txn: Option<TxnId>,
        upstream: &str,
        conn: u64,
    ) {
        tracing::info!(
            "reply_loss {fault}: dropped {} (request {}) from {upstream} on proxied connection {conn}, closing it",
            reply.kind.command(),
            reply.request_id
        );
        self.history.record(EventBody::ReplyDropped {
            fault: fault.to_string(),
            command: reply.kind.command().to_string(),
            request_id: reply.request_id,
            txn,
        });
    }
}

impl Dial for Arc<ReplyLossProxy> {
    fn route<'a>(
        &'a self,
        addr: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, TxnError>> + Send + 'a>>
    {
        Box::pin(self.listener_for(addr))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pulsar::message::proto;
    use pulsar::message::{Codec, Message};
    use tokio_util::codec::Encoder;

    fn encode(command: BaseCommand, payload: Option<&[u8]>) -> Vec<u8> {
        let mut out = BytesMut::new();
        let payload = payload.map(|p| pulsar::message::Payload {
            metadata: proto::MessageMetadata {
                producer_name: "p".into(),
                sequence_id: 9,
                publish_time: 1,
                txnid_most_bits: Some(0),
                txnid_least_bits: Some(5),
                ..Default::default()
            },
            data: p.to_vec(),
        });
        Codec
            .encode(Message { command, payload }, &mut out)
            .expect("encodes");
        out.to_vec()
    }

    fn end_txn_response(rid: u64) -> BaseCommand {
        BaseCommand {
            r#type: Type::EndTxnResponse as i32,
            end_txn_response: Some(proto::CommandEndTxnResponse {
                request_id: rid,
                txnid_least_bits: Some(17),
                txnid_most_bits: Some(1),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_frame_is_delimited_by_its_total_size() {
        let f = encode(end_txn_response(3), None);
        assert_eq!(frame_len(&f), Ok(Some(f.len())));
        for cut in 0..f.len() {
            assert_eq!(frame_len(&f[..cut]), Ok(None), "cut at {cut}");
        }
        let mut two = f.clone();
        two.extend_from_slice(&f);
        assert_eq!(frame_len(&two), Ok(Some(f.len())));
    }

    #[test]
    fn an_oversized_frame_is_refused() {
        let mut f = ((MAX_FRAME + 1) as u32).to_be_bytes().to_vec();
        f.extend_from_slice(&[0; 8]);
        assert_eq!(frame_len(&f), Err(FrameError::TooLarge(MAX_FRAME + 1)));
    }

    #[test]
    fn replies_are_recognised_with_request_and_txn() {
        let f = encode(end_txn_response(3), None);
        let r = reply_of(&command_of(&f).unwrap()).unwrap();
        assert_eq!(
            r,
            Reply {
                kind: ReplyKind::EndTxn,
                request_id: 3,
                txn: Some(TxnId { most: 1, least: 17 }),
                send_key: None,
            }
        );
        let new_txn = BaseCommand {
            r#type: Type::NewTxnResponse as i32,
            new_txn_response: Some(proto::CommandNewTxnResponse {
                request_id: 8,
                txnid_least_bits: Some(4),
                txnid_most_bits: Some(0),
                ..Default::default()
            }),
            ..Default::default()
        };
        let r = reply_of(&command_of(&encode(new_txn, None)).unwrap()).unwrap();
        assert_eq!((r.kind, r.request_id), (ReplyKind::NewTxn, 8));
        assert_eq!(r.txn, Some(TxnId { most: 0, least: 4 }));
        let add = BaseCommand {
            r#type: Type::AddPartitionToTxnResponse as i32,
            add_partition_to_txn_response: Some(proto::CommandAddPartitionToTxnResponse {
                request_id: 2,
                txnid_least_bits: Some(4),
                txnid_most_bits: Some(0),
                ..Default::default()
            }),
            ..Default::default()
        };
        let r = reply_of(&command_of(&encode(add, None)).unwrap()).unwrap();
        assert_eq!(r.kind, ReplyKind::AddPartitionToTxn);
        let receipt = BaseCommand {
            r#type: Type::SendReceipt as i32,
            send_receipt: Some(proto::CommandSendReceipt {
                producer_id: 1,
                sequence_id: 40,
                ..Default::default()
            }),
            ..Default::default()
        };
        let r = reply_of(&command_of(&encode(receipt, None)).unwrap()).unwrap();
        assert_eq!(
            (r.kind, r.request_id, r.txn, r.send_key),
            (ReplyKind::SendReceipt, 40, None, Some((1, 40)))
        );
        let pong = BaseCommand {
            r#type: Type::Pong as i32,
            pong: Some(proto::CommandPong {}),
            ..Default::default()
        };
        assert_eq!(reply_of(&command_of(&encode(pong, None)).unwrap()), None);
    }

    #[test]
    fn a_send_with_payload_names_its_transaction() {
        let send = BaseCommand {
            r#type: Type::Send as i32,
            send: Some(proto::CommandSend {
                producer_id: 2,
                sequence_id: 9,
                txnid_least_bits: Some(5),
                txnid_most_bits: Some(0),
                ..Default::default()
            }),
            ..Default::default()
        };
        let f = encode(send, Some(b"12345"));
        assert_eq!(frame_len(&f), Ok(Some(f.len())));
        let c = command_of(&f).unwrap();
        assert_eq!(send_of(&c), Some(((2, 9), TxnId { most: 0, least: 5 })));
        // A send outside a transaction names none.
        let plain = BaseCommand {
            r#type: Type::Send as i32,
            send: Some(proto::CommandSend {
                producer_id: 2,
                sequence_id: 10,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            send_of(&command_of(&encode(plain, Some(b"1"))).unwrap()),
            None
        );
    }

    #[test]
    fn only_the_replies_to_commits_are_droppable_end_txn_replies() {
        let end_txn = |rid: u64, action: proto::TxnAction| BaseCommand {
            r#type: Type::EndTxn as i32,
            end_txn: Some(proto::CommandEndTxn {
                request_id: rid,
                txnid_least_bits: Some(4),
                txnid_most_bits: Some(0),
                txn_action: Some(action as i32),
            }),
            ..Default::default()
        };
        let c = command_of(&encode(end_txn(7, proto::TxnAction::Commit), None)).unwrap();
        assert_eq!(
            end_txn_of(&c),
            Some((7, Some(proto::TxnAction::Commit as i32)))
        );
        let a = command_of(&encode(end_txn(8, proto::TxnAction::Abort), None)).unwrap();
        assert_eq!(
            end_txn_of(&a),
            Some((8, Some(proto::TxnAction::Abort as i32)))
        );
        assert_eq!(
            end_txn_of(&command_of(&encode(end_txn_response(3), None)).unwrap()),
            None
        );
        let reply = reply_of(&command_of(&encode(end_txn_response(7), None)).unwrap()).unwrap();
        assert!(may_drop(&reply, Some(proto::TxnAction::Commit as i32)));
        // The reply to an abort, or to an END_TXN the proxy did not see, is forwarded.
        assert!(!may_drop(&reply, Some(proto::TxnAction::Abort as i32)));
        assert!(!may_drop(&reply, None));
        // Other kinds do not depend on an END_TXN.
        let receipt = Reply {
            kind: ReplyKind::SendReceipt,
            request_id: 1,
            txn: None,
            send_key: Some((1, 1)),
        };
        assert!(may_drop(&receipt, None));
    }

    #[test]
    fn a_bad_command_size_or_garbage_is_an_error() {
        let mut f = encode(end_txn_response(3), None);
        // Command size beyond the frame.
        f[4..8].copy_from_slice(&10_000u32.to_be_bytes());
        assert!(matches!(
            command_of(&f),
            Err(FrameError::BadCommandSize { .. })
        ));
        let garbage = [0, 0, 0, 6, 0, 0, 0, 2, 0xff, 0xff];
        assert!(matches!(command_of(&garbage), Err(FrameError::Decode(_))));
    }

    #[test]
    fn a_count_drops_that_many_then_is_spent() {
        let (spent, rx) = watch::channel(false);
        let mut a = Arming {
            fault: "f".into(),
            reply: ReplyKind::EndTxn,
            pick: Pick::Count(2),
            matched: 0,
            dropped: 0,
            spent,
        };
        assert!(a.decide());
        assert!(!*rx.borrow());
        assert!(a.decide());
        assert!(*rx.borrow());
        assert!(!a.decide());
        assert_eq!((a.matched, a.dropped), (3, 2));
    }

    #[test]
    fn a_probability_draws_from_its_seed() {
        let run = |seed: u64| -> Vec<bool> {
            let (spent, _rx) = watch::channel(false);
            let mut a = Arming {
                fault: "f".into(),
                reply: ReplyKind::EndTxn,
                pick: Pick::Probability {
                    p: 0.3,
                    rng: Rng::new(seed),
                },
                matched: 0,
                dropped: 0,
                spent,
            };
            (0..2000).map(|_| a.decide()).collect()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        let dropped = run(7).iter().filter(|d| **d).count();
        assert!((500..700).contains(&dropped), "{dropped}");
    }

    fn lookup_response(
        url: &str,
        kind: proto::command_lookup_topic_response::LookupType,
    ) -> BaseCommand {
        BaseCommand {
            r#type: Type::LookupResponse as i32,
            lookup_topic_response: Some(proto::CommandLookupTopicResponse {
                broker_service_url: Some(url.into()),
                response: Some(kind as i32),
                request_id: 4,
                authoritative: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_rewriting_proxy_routes_the_brokers_a_lookup_names_connect_or_redirect() {
        use proto::command_lookup_topic_response::LookupType;
        let routes: HashMap<String, String> =
            [("10.0.0.7:6650".to_string(), "127.0.0.1:41000".to_string())].into();
        for kind in [LookupType::Connect, LookupType::Redirect] {
            let c = lookup_response("pulsar://10.0.0.7:6650", kind);
            assert_eq!(addresses_in(&c), vec!["10.0.0.7:6650".to_string()]);
            let f = frame_of(&readdressed(&c, &routes).expect("rewritten"));
            // The rewritten frame is a well-formed frame the client decodes, and only the
            // address changed.
            assert_eq!(frame_len(&f), Ok(Some(f.len())));
            let back = command_of(&f).unwrap();
            let r = back.lookup_topic_response.as_ref().unwrap();
            assert_eq!(
                r.broker_service_url.as_deref(),
                Some("pulsar://127.0.0.1:41000")
            );
            assert_eq!(r.broker_service_url_tls, None);
            assert_eq!(
                (r.response, r.request_id, r.authoritative),
                (Some(kind as i32), 4, Some(true))
            );
        }
        // An address without a route, and commands naming none, are left alone.
        let other = lookup_response("pulsar://10.0.0.8:6650", LookupType::Connect);
        assert_eq!(readdressed(&other, &routes), None);
        assert!(addresses_in(&end_txn_response(3)).is_empty());
        assert_eq!(readdressed(&end_txn_response(3), &routes), None);
    }

    #[test]
    fn a_command_only_frame_matches_the_codec() {
        let c = end_txn_response(9);
        assert_eq!(frame_of(&c), encode(c, None));
    }

    #[test]
    fn a_command_with_fields_unknown_here_is_not_encoded_again() {
        let c = lookup_response(
            "pulsar://10.0.0.7:6650",
            proto::command_lookup_topic_response::LookupType::Connect,
        );
        let f = frame_of(&c);
        assert!(encodes_as_read(&f, &command_of(&f).unwrap()));
        // The same command followed by an unknown field (number 99, varint 1) inside the
        // command: decoding drops it, so the size read is not the size encoded.
        let mut body = c.encode_to_vec();
        body.extend_from_slice(&[0x98, 0x06, 0x01]);
        let mut g = ((4 + body.len()) as u32).to_be_bytes().to_vec();
        g.extend_from_slice(&(body.len() as u32).to_be_bytes());
        g.extend_from_slice(&body);
        let back = command_of(&g).unwrap();
        assert!(!encodes_as_read(&g, &back));
    }
}
