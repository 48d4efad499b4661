//! A driver process: started with its standard error as the run's `driver.log`, spoken to in
//! pipelined JSON lines (docs/drivers.md). Many requests are in flight at once; each waits for
//! the reply with its id, or for the driver's end, or for its own timeout.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pulsar::message::proto::MessageIdData;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};

use crate::history::TxnId;
use crate::txn::consumer::Received;

use super::{Built, ClientError, ClientKind, DriverError, Jit};

/// How one request ended.
#[derive(Debug, Clone)]
pub enum Answer {
    /// The client's own error, verbatim.
    Client(ClientError),
    /// No reply within the request's time (the driver is alive; the client has not answered).
    Timeout(Duration),
    /// The driver process ended (or its pipes broke) before replying: its exit and last lines.
    Gone(String),
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Answer::Client(e) => write!(f, "{e}"),
            Answer::Timeout(d) => {
                write!(f, "no answer from the client within {}s", d.as_secs_f64())
            }
            Answer::Gone(m) => write!(f, "the driver process ended: {m}"),
        }
    }
}

/// What the driver said about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub client: String,
    pub library: String,
    pub version: String,
    /// The driver serves the optional `register` request (registers a transaction's
    /// partitions ahead of its sends).
    pub register: bool,
    /// Its `register` takes `subscriptions` too (registers a transaction's acknowledged
    /// subscriptions ahead of its ACKs).
    pub register_acks: bool,
    /// Its `ack` takes `each` (one answer per id, in one reply).
    pub ack_each: bool,
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Map<String, Value>, Answer>>>>>;

/// A running driver.
pub struct Driver {
    pub kind: ClientKind,
    pub hello: Hello,
    pub log: PathBuf,
    lines: mpsc::UnboundedSender<String>,
    pending: Pending,
    gone: Arc<Mutex<Option<String>>>,
    next_id: AtomicU64,
    child: Arc<tokio::sync::Mutex<Option<Child>>>,
    pid: Option<u32>,
}

/// The last `n` lines of a log file.
pub fn tail(path: &Path, n: usize) -> Vec<String> {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let mut lines: Vec<String> = text.lines().rev().take(n).map(str::to_string).collect();
    lines.reverse();
    lines
}

/// How far up a driver log's end the crash line is looked for (a Go fatal error's goroutine
/// dump runs to hundreds of lines).
const CRASH_SEARCH_LINES: usize = 5000;

/// The line of a driver log's tail that says why the process died: the last Go panic or
/// fatal error, or Java's uncaught exception, or failing those the last non-empty line.
pub fn telling_line(lines: &[String]) -> Option<String> {
    const CRASH: [&str; 4] = ["panic:", "fatal error:", "Exception in thread", "Error:"];
    let crash = lines
        .iter()
        .rev()
        .find(|l| CRASH.iter().any(|c| l.trim_start().starts_with(c)));
    crash
        .or_else(|| lines.iter().rev().find(|l| !l.trim().is_empty()))
        .map(|l| {
            let l = l.trim();
            match l.char_indices().nth(300) {
                Some((i, _)) => format!("{}…", &l[..i]),
                None => l.to_string(),
            }
        })
}

impl Driver {
    /// Start `built` (its JVM with `jit`) with its standard error appended to `log`, and ask
    /// its `hello`.
    pub async fn start(built: &Built, jit: Jit, log: &Path) -> Result<Driver, DriverError> {
        let command = built.command_with(jit);
        let client = built.spec.to_string();
        let start_err = |message: String| DriverError::Start {
            client: client.clone(),
            path: PathBuf::from(&command[0]),
            message,
        };
        let log_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| start_err(format!("{}: {e}", log.display())))?;
        let mut child = Command::new(&command[0])
            .args(&command[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file))
            // Its own process group: a Ctrl-C at the terminal reaches the harness, which ends
            // the driver itself (closing its input) after healing the faults.
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| start_err(e.to_string()))?;
        let pid = child.id();
        let mut stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let pid_text = pid.map_or("?".to_string(), |p| p.to_string());
        let child = Arc::new(tokio::sync::Mutex::new(Some(child)));
        let pending: Pending = Arc::default();
        let gone: Arc<Mutex<Option<String>>> = Arc::default();
        let (lines, mut rx) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            while let Some(mut line) = rx.recv().await {
                line.push('\n');
                if stdin.write_all(line.as_bytes()).await.is_err() {
                    break;
                }
                // Write whatever else is queued before flushing once.
                while let Ok(mut more) = rx.try_recv() {
                    more.push('\n');
                    if stdin.write_all(more.as_bytes()).await.is_err() {
                        return;
                    }
                }
                if stdin.flush().await.is_err() {
                    break;
                }
            }
        });
        {
            let pending = pending.clone();
            let gone = gone.clone();
            let log = log.to_path_buf();
            let child = child.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(stdout).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    deliver(&pending, &line);
                }
                // How it ended, if it did (a closed output of a live process says so too).
                let status = match child.lock().await.as_mut() {
                    Some(c) => match tokio::time::timeout(Duration::from_secs(2), c.wait()).await {
                        Ok(Ok(s)) => s.to_string(),
                        Ok(Err(e)) => format!("its status is unknown: {e}"),
                        Err(_) => "its output closed while it still runs".to_string(),
                    },
                    None => "closed by the harness".to_string(),
                };
                // The first line is what a verdict quotes: it names the crash when the log
                // shows one (a Go panic, a Java exception), the last lines follow for the
                // reader. A Go fatal error is followed by every goroutine's stack, so the
                // crash line is looked for further up than the lines shown.
                let searched = tail(&log, CRASH_SEARCH_LINES);
                let last = &searched[searched.len().saturating_sub(15)..];
                let cause = telling_line(&searched)
                    .map(|l| format!(" (driver.log: {l})"))
                    .unwrap_or_default();
                let why = format!(
                    "pid {pid_text}, {status}{cause}; last lines of {}:\n{}",
                    log.display(),
                    last.join("\n")
                );
                *gone.lock().expect("lock") = Some(why.clone());
                for (_, tx) in pending.lock().expect("lock").drain() {
                    let _ = tx.send(Err(Answer::Gone(why.clone())));
                }
            });
        }
        let mut driver = Driver {
            kind: built.spec.kind,
            hello: Hello {
                client: String::new(),
                library: String::new(),
                version: String::new(),
                register: false,
                register_acks: false,
                ack_each: false,
            },
            log: log.to_path_buf(),
            lines,
            pending,
            gone,
            next_id: AtomicU64::new(1),
            child,
            pid,
        };
        // A JVM starts in about a second; a minute covers a loaded machine.
        let hello = match driver
            .call("hello", Map::new(), Duration::from_secs(60))
            .await
        {
            Ok(hello) => hello,
            Err(a) => {
                // Not left behind: one that still runs (a hung JVM) is killed.
                driver.close(Duration::from_secs(2)).await;
                return Err(start_err(a.to_string()));
            }
        };
        let field = |k: &str| {
            hello
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        driver.hello = Hello {
            client: field("client"),
            library: field("library"),
            version: field("version"),
            register: hello.get("register").and_then(Value::as_bool) == Some(true),
            register_acks: hello.get("register_acks").and_then(Value::as_bool) == Some(true),
            ack_each: hello.get("ack_each").and_then(Value::as_bool) == Some(true),
        };
        Ok(driver)
    }

    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Why the driver ended, once it has.
    pub fn gone(&self) -> Option<String> {
        self.gone.lock().expect("lock").clone()
    }

    /// Send one request and wait for its reply.
    pub async fn call(
        &self,
        op: &str,
        mut fields: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Map<String, Value>, Answer> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        fields.insert("id".into(), json!(id));
        fields.insert("op".into(), json!(op));
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.pending.lock().expect("lock");
            if let Some(why) = self.gone() {
                return Err(Answer::Gone(why));
            }
            pending.insert(id, tx);
        }
        if self.lines.send(Value::Object(fields).to_string()).is_err() {
            self.pending.lock().expect("lock").remove(&id);
            return Err(Answer::Gone(
                self.gone().unwrap_or_else(|| "its input closed".into()),
            ));
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(Answer::Gone(self.gone().unwrap_or_default())),
            Err(_) => {
                self.pending.lock().expect("lock").remove(&id);
                Err(Answer::Timeout(timeout))
            }
        }
    }

    /// `connect`: the client and one producer per partition.
    pub async fn connect(&self, args: &ConnectArgs<'_>, timeout: Duration) -> Result<(), Answer> {
        let mut m = Map::new();
        m.insert("service_url".into(), json!(args.service_url));
        m.insert("topic".into(), json!(args.topic));
        m.insert("partitions".into(), json!(args.partitions));
        m.insert(
            "op_timeout_ms".into(),
            json!(args.op_timeout.as_millis() as u64),
        );
        m.insert("batch_size".into(), json!(args.batch_size));
        m.insert("message_size".into(), json!(args.message_size));
        m.insert("transactions".into(), json!(args.transactions));
        m.insert("producer_name".into(), json!(args.producer_name));
        self.call("connect", m, timeout).await.map(|_| ())
    }

    /// `new_txn`: the client's transaction id.
    pub async fn new_txn(&self, txn_timeout: Duration, timeout: Duration) -> Result<TxnId, Answer> {
        let mut m = Map::new();
        m.insert("timeout_ms".into(), json!(txn_timeout.as_millis() as u64));
        let r = self.call("new_txn", m, timeout).await?;
        let pair = r.get("txn").and_then(Value::as_array);
        match pair.map(|a| {
            (
                a.first().and_then(Value::as_u64),
                a.get(1).and_then(Value::as_u64),
            )
        }) {
            Some((Some(most), Some(least))) => Ok(TxnId { most, least }),
            _ => Err(bad_reply("new_txn", &r)),
        }
    }

    /// `register` (when `hello` offered it): the transaction's `partitions` registered with
    /// it by the client, ahead of the sends, and its `subscriptions` (topic, subscription),
    /// ahead of the ACKs (only when `hello` offered `register_acks`). Waited for until the
    /// operation's deadline and 10 s more: the client's own timeouts answer first.
    pub async fn register(
        &self,
        txn: TxnId,
        partitions: &[u32],
        subscriptions: &[(String, String)],
        op_deadline: tokio::time::Instant,
    ) -> Result<(), Answer> {
        let mut m = Map::new();
        m.insert("txn".into(), txn_json(Some(txn)));
        m.insert("partitions".into(), json!(partitions));
        if !subscriptions.is_empty() {
            let subs: Vec<Value> = subscriptions
                .iter()
                .map(|(topic, sub)| json!({ "topic": topic, "subscription": sub }))
                .collect();
            m.insert("subscriptions".into(), Value::Array(subs));
        }
        let patience = op_deadline.saturating_duration_since(tokio::time::Instant::now())
            + Duration::from_secs(10);
        self.call("register", m, patience).await.map(|_| ())
    }

    /// `send`: each number's receipt, in order.
    pub async fn send(
        &self,
        txn: Option<TxnId>,
        partition: u32,
        numbers: &[u64],
        timeout: Duration,
    ) -> Result<Vec<MessageIdData>, Answer> {
        let mut m = Map::new();
        m.insert("txn".into(), txn_json(txn));
        m.insert("partition".into(), json!(partition));
        m.insert("numbers".into(), json!(numbers));
        let r = self.call("send", m, timeout).await?;
        let ids = r
            .get("ids")
            .and_then(Value::as_array)
            .ok_or_else(|| bad_reply("send", &r))?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let a = id.as_array().ok_or_else(|| bad_reply("send", &r))?;
            let n = |i: usize| a.get(i).and_then(Value::as_i64);
            let (Some(ledger), Some(entry)) = (n(0), n(1)) else {
                return Err(bad_reply("send", &r));
            };
            let batch = n(2).unwrap_or(-1);
            out.push(MessageIdData {
                ledger_id: ledger as u64,
                entry_id: entry as u64,
                partition: Some(partition as i32),
                batch_index: (batch >= 0).then_some(batch as i32),
                ..Default::default()
            });
        }
        if out.len() != numbers.len() {
            return Err(bad_reply("send", &r));
        }
        Ok(out)
    }

    /// `commit` or `abort` of a transaction the driver opened.
    pub async fn end(&self, txn: TxnId, commit: bool, timeout: Duration) -> Result<(), Answer> {
        let mut m = Map::new();
        m.insert("txn".into(), txn_json(Some(txn)));
        self.call(if commit { "commit" } else { "abort" }, m, timeout)
            .await
            .map(|_| ())
    }

    /// `subscribe`: a consumer of `topic` (one partition topic) on `subscription`; the
    /// driver's handle on it.
    pub async fn subscribe(
        &self,
        args: &SubscribeArgs<'_>,
        timeout: Duration,
    ) -> Result<u64, Answer> {
        let mut m = Map::new();
        m.insert("topic".into(), json!(args.topic));
        m.insert("subscription".into(), json!(args.subscription));
        m.insert("sub_type".into(), json!(args.sub_type));
        m.insert("consumer_name".into(), json!(args.consumer_name));
        m.insert("receiver_queue".into(), json!(args.receiver_queue));
        let r = self.call("subscribe", m, timeout).await?;
        r.get("consumer")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad_reply("subscribe", &r))
    }

    /// `receive`: up to `max` messages, waiting at most `wait` for the first.
    pub async fn receive(
        &self,
        consumer: u64,
        max: usize,
        wait: Duration,
        timeout: Duration,
    ) -> Result<Vec<Received>, Answer> {
        let mut m = Map::new();
        m.insert("consumer".into(), json!(consumer));
        m.insert("max".into(), json!(max));
        m.insert("wait_ms".into(), json!(wait.as_millis() as u64));
        let r = self.call("receive", m, timeout + wait).await?;
        let msgs = r
            .get("messages")
            .and_then(Value::as_array)
            .ok_or_else(|| bad_reply("receive", &r))?;
        let mut out = Vec::with_capacity(msgs.len());
        for msg in msgs {
            let id = msg
                .get("id")
                .and_then(Value::as_array)
                .ok_or_else(|| bad_reply("receive", &r))?;
            let n = |i: usize| id.get(i).and_then(Value::as_i64);
            let (Some(ledger), Some(entry), Some(batch)) = (n(0), n(1), n(2)) else {
                return Err(bad_reply("receive", &r));
            };
            let batch_size = msg.get("batch_size").and_then(Value::as_i64).unwrap_or(0);
            out.push(Received {
                id: MessageIdData {
                    ledger_id: ledger as u64,
                    entry_id: entry as u64,
                    batch_index: (batch >= 0).then_some(batch as i32),
                    batch_size: (batch_size > 0).then_some(batch_size as i32),
                    ..Default::default()
                },
                payload: msg
                    .get("payload")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .as_bytes()
                    .to_vec(),
                redelivery_count: msg
                    .get("redelivery_count")
                    .and_then(Value::as_u64)
                    .unwrap_or(0) as u32,
            });
        }
        Ok(out)
    }

    /// `ack`: the messages `ids` of `consumer`, in `txn` when given.
    pub async fn ack(
        &self,
        consumer: u64,
        txn: Option<TxnId>,
        ids: &[MessageIdData],
        timeout: Duration,
    ) -> Result<(), Answer> {
        let mut m = Map::new();
        m.insert("consumer".into(), json!(consumer));
        m.insert("txn".into(), txn_json(txn));
        m.insert("ids".into(), ids_json(ids));
        self.call("ack", m, timeout).await.map(|_| ())
    }

    /// `ack` with `each` (only to a driver whose `hello` offered `ack_each`): the messages
    /// `ids` of `consumer`, in `txn` when given, all at once; Ok: the client's answer to each
    /// id, in order. Err: the request as a whole (the driver refused it, sent nothing for an
    /// id it does not hold, ended, or did not answer in time).
    pub async fn ack_each(
        &self,
        consumer: u64,
        txn: Option<TxnId>,
        ids: &[MessageIdData],
        timeout: Duration,
    ) -> Result<Vec<Result<(), ClientError>>, Answer> {
        let mut m = Map::new();
        m.insert("consumer".into(), json!(consumer));
        m.insert("txn".into(), txn_json(txn));
        m.insert("ids".into(), ids_json(ids));
        m.insert("each".into(), json!(true));
        let r = self.call("ack", m, timeout).await?;
        each_answers(&r, ids.len()).ok_or_else(|| bad_reply("ack", &r))
    }

    /// `nack`: hand `ids` back (none: every message the consumer holds unacknowledged).
    pub async fn nack(
        &self,
        consumer: u64,
        ids: &[MessageIdData],
        timeout: Duration,
    ) -> Result<(), Answer> {
        let mut m = Map::new();
        m.insert("consumer".into(), json!(consumer));
        m.insert("ids".into(), ids_json(ids));
        self.call("nack", m, timeout).await.map(|_| ())
    }

    /// `close_consumer`.
    pub async fn close_consumer(&self, consumer: u64, timeout: Duration) -> Result<(), Answer> {
        let mut m = Map::new();
        m.insert("consumer".into(), json!(consumer));
        self.call("close_consumer", m, timeout).await.map(|_| ())
    }

    /// Ask the driver to close its client and exit; killed if it has not within `grace`.
    pub async fn close(&self, grace: Duration) {
        let _ = self.call("close", Map::new(), grace).await;
        let Some(mut child) = self.child.lock().await.take() else {
            return;
        };
        if tokio::time::timeout(grace, child.wait()).await.is_err() {
            let _ = child.kill().await;
        }
    }
}

/// What `connect` gives the driver.
#[derive(Debug, Clone)]
pub struct ConnectArgs<'a> {
    pub service_url: &'a str,
    pub topic: &'a str,
    pub partitions: u32,
    pub op_timeout: Duration,
    pub batch_size: u32,
    pub message_size: usize,
    pub transactions: bool,
    pub producer_name: &'a str,
}

/// What `subscribe` gives the driver.
#[derive(Debug, Clone)]
pub struct SubscribeArgs<'a> {
    pub topic: &'a str,
    pub subscription: &'a str,
    /// `shared`, `failover` or `key_shared`.
    pub sub_type: &'a str,
    pub consumer_name: &'a str,
    pub receiver_queue: u32,
}

fn ids_json(ids: &[MessageIdData]) -> Value {
    Value::Array(
        ids.iter()
            .map(|i| json!([i.ledger_id, i.entry_id, i.batch_index.unwrap_or(-1)]))
            .collect(),
    )
}

/// The `answers` of an `ack` with `each`: one per id, `null` for success or an error object.
/// None: not that (missing, another length, or an entry that is neither).
fn each_answers(r: &Map<String, Value>, n: usize) -> Option<Vec<Result<(), ClientError>>> {
    let answers = r.get("answers")?.as_array()?;
    if answers.len() != n {
        return None;
    }
    answers
        .iter()
        .map(|a| match a {
            Value::Null => Some(Ok(())),
            e => serde_json::from_value::<ClientError>(e.clone())
                .ok()
                .map(Err),
        })
        .collect()
}

fn txn_json(txn: Option<TxnId>) -> Value {
    match txn {
        Some(t) => json!([t.most, t.least]),
        None => Value::Null,
    }
}

fn bad_reply(op: &str, r: &Map<String, Value>) -> Answer {
    Answer::Client(ClientError {
        class: "BadReply".into(),
        message: format!(
            "the driver's reply to {op} is not as docs/drivers.md says: {}",
            Value::Object(r.clone())
        ),
        causes: vec![],
    })
}

/// Hand one reply line to the request waiting for it (a line that is not a reply is ignored:
/// the driver's stray output belongs in its log, but must not stop the run).
fn deliver(pending: &Pending, line: &str) {
    let Ok(Value::Object(mut m)) = serde_json::from_str::<Value>(line) else {
        tracing::warn!("the driver wrote a line that is not a reply: {line}");
        return;
    };
    let Some(id) = m.get("id").and_then(Value::as_u64) else {
        tracing::warn!("the driver wrote a reply without an id: {line}");
        return;
    };
    let Some(tx) = pending.lock().expect("lock").remove(&id) else {
        return; // its request timed out meanwhile
    };
    let ok = m.get("ok").and_then(Value::as_bool).unwrap_or(false);
    let r = if ok {
        Ok(m)
    } else {
        let e = m
            .remove("error")
            .and_then(|e| serde_json::from_value::<ClientError>(e).ok())
            .unwrap_or_else(|| ClientError {
                class: "BadReply".into(),
                message: format!("a failure without an error object: {line}"),
                causes: vec![],
            });
        Err(Answer::Client(e))
    };
    let _ = tx.send(r);
}

#[cfg(test)]
mod tests {
    use super::{each_answers, telling_line};
    use serde_json::{json, Map, Value};

    fn reply(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn an_ack_with_each_answers_every_id_in_order() {
        let r = reply(
            json!({"id": 3, "ok": true, "answers": [null, {"class": "org.apache.pulsar.client.api.PulsarClientException$TransactionConflictException", "message": "m", "causes": []}, null]}),
        );
        let a = each_answers(&r, 3).expect("three answers");
        assert!(a[0].is_ok() && a[2].is_ok());
        assert_eq!(
            a[1].as_ref().unwrap_err().short_class(),
            "TransactionConflictException"
        );
        // Not one answer per id, or an entry that is neither: not the protocol.
        assert!(each_answers(&r, 2).is_none());
        assert!(each_answers(&reply(json!({"id": 3, "ok": true})), 0).is_none());
        assert!(each_answers(&reply(json!({"id": 3, "ok": true, "answers": [7]})), 1).is_none());
    }

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(str::to_string).collect()
    }

    #[test]
    fn a_go_panic_is_the_telling_line_even_with_a_stack_below_it() {
        let log = lines(
            "time=... level=INFO msg=subscribed\npanic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV]\n\ngoroutine 7 [running]:\nmain.(*driver).ack(...)\n\t/src/main.go:612 +0x1f\n",
        );
        assert_eq!(
            telling_line(&log).as_deref(),
            Some("panic: runtime error: invalid memory address or nil pointer dereference")
        );
        let dump = "\tmain.go:1 +0x1\n".repeat(400);
        let fatal = lines(&format!(
            "x\nfatal error: concurrent map writes\n\ngoroutine 1:\n{dump}"
        ));
        assert_eq!(
            telling_line(&fatal).as_deref(),
            Some("fatal error: concurrent map writes")
        );
    }

    #[test]
    fn without_a_crash_the_last_non_empty_line_speaks_and_an_empty_log_says_nothing() {
        assert_eq!(
            telling_line(&lines("a\nstdin closed; exiting\n\n")).as_deref(),
            Some("stdin closed; exiting")
        );
        assert_eq!(telling_line(&[]), None);
        let long = "x".repeat(400);
        assert_eq!(telling_line(&[long]).unwrap().chars().count(), 301);
    }
}
