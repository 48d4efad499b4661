//! `consumer_restart`: the harness closes one of the transform's consumers while it holds
//! inputs acknowledged in an open transaction, and subscribes it again at the heal.
//!
//! The nemesis asks (`Restarts::close`); the worker acts at its next attempt whose ACKs were
//! all answered in its still-open transaction, before it asks END_TXN: it sends CLOSE_CONSUMER
//! on each of its input partitions (awaiting the broker's answer), records `consumer_closed` in
//! the history and answers the nemesis. Nothing more is decided for the attempt: its
//! transaction is the client's, not the consumer's, so the worker hands it to its commit task
//! as it would have, and what the coordinator answers decides (committed: its inputs are
//! acknowledged; aborted: the broker hands them back; unknown: the subscription decides). The
//! inputs the closed consumer held are the broker's to redeliver to another consumer; another
//! transaction's ACK of an input this one holds must be refused (TransactionConflict) and
//! that attempt aborted, which the checker verifies by the output being exactly-once. The
//! worker takes no input until the heal (`reopen`); then it subscribes again.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{oneshot, Notify};

use crate::history::{EventBody, TxnId};

use super::source::Input;
use super::worker::{ranges, Worker};
use super::Transformer;

/// What a worker did when it closed its consumers for a restart.
#[derive(Debug, Clone)]
pub struct Closed {
    /// The worker (0-based, as `inputs_taken` numbers it).
    pub consumer: u32,
    pub attempt: u64,
    pub txn: TxnId,
    /// The inputs its open transaction held acknowledged.
    pub inputs: usize,
    /// CLOSE_CONSUMER's answer per input partition.
    pub answer: String,
}

type Request = (String, oneshot::Sender<Closed>);

#[derive(Default)]
struct Slot {
    /// A restart asked and not taken yet: the fault's name and where to answer.
    request: Option<Request>,
    /// Closed by a restart and not reopened yet.
    closed: bool,
}

/// The restart requests of one run, one slot per worker.
pub struct Restarts {
    slots: Vec<Mutex<Slot>>,
    reopened: Notify,
    /// The transform is over: requests fail at once.
    shut: Mutex<bool>,
}

impl Restarts {
    pub fn new(consumers: u32) -> Restarts {
        Restarts {
            slots: (0..consumers.max(1))
                .map(|_| Mutex::new(Slot::default()))
                .collect(),
            reopened: Notify::new(),
            shut: Mutex::new(false),
        }
    }

    /// Ask worker `consumer` (0-based) to close its consumers at its next attempt holding
    /// inputs acknowledged in an open transaction; wait for that at most `within`.
    pub async fn close(
        &self,
        consumer: u32,
        fault: &str,
        within: Duration,
    ) -> Result<Closed, String> {
        let slot = self
            .slots
            .get(consumer as usize)
            .ok_or_else(|| format!("the transform has no consumer {}", consumer + 1))?;
        let (tx, mut rx) = oneshot::channel();
        {
            if *self.shut.lock().expect("lock") {
                return Err("the transform is over".into());
            }
            let mut s = slot.lock().expect("lock");
            if s.closed {
                return Err(
                    "the consumer is closed already (an earlier restart not healed)".into(),
                );
            }
            // One request at a time: replacing a pending one would drop its answer, and that
            // fault would read as if the transform had ended.
            if let Some((pending, _)) = &s.request {
                return Err(format!(
                    "consumer {} has a restart pending already ({pending})",
                    consumer + 1
                ));
            }
            s.request = Some((fault.to_string(), tx));
        }
        if let Ok(r) = tokio::time::timeout(within, &mut rx).await {
            return r.map_err(|_| {
                "the transform ended before the consumer held inputs in an open transaction".into()
            });
        }
        let withdrawn = slot.lock().expect("lock").request.take().is_some();
        if withdrawn {
            return Err(format!(
                "consumer {} held no inputs acknowledged in an open transaction within {}s",
                consumer + 1,
                within.as_secs()
            ));
        }
        // Taken just now: the worker is closing; its answer follows.
        rx.await
            .map_err(|_| "the transform ended while the consumer closed".into())
    }

    /// The heal: worker `consumer` may subscribe again. False when it was not closed.
    pub fn reopen(&self, consumer: u32) -> bool {
        let Some(slot) = self.slots.get(consumer as usize) else {
            return false;
        };
        let was = std::mem::replace(&mut slot.lock().expect("lock").closed, false);
        self.reopened.notify_waiters();
        was
    }

    /// The transform is over: pending and later requests fail at once.
    pub fn shut(&self) {
        *self.shut.lock().expect("lock") = true;
        for s in &self.slots {
            s.lock().expect("lock").request = None;
        }
        self.reopened.notify_waiters();
    }

    /// The request for worker `id`, taken; the worker is closed from now until `reopen`.
    fn take(&self, id: u32) -> Option<Request> {
        let mut s = self.slots.get(id as usize)?.lock().expect("lock");
        let r = s.request.take()?;
        s.closed = true;
        Some(r)
    }

    fn is_closed(&self, id: u32) -> bool {
        self.slots
            .get(id as usize)
            .is_some_and(|s| s.lock().expect("lock").closed)
    }
}

impl Transformer {
    /// At the restart point of an attempt (every ACK answered in its open transaction, no
    /// END_TXN asked): close the worker's consumers if a restart is asked for it.
    pub(super) async fn restart_point(
        &self,
        w: &mut Worker,
        attempt: u64,
        txn: TxnId,
        batch: &[Input],
    ) {
        let Some((fault, reply)) = self.restarts.take(w.id) else {
            return;
        };
        let mut answers = Vec::new();
        for (p, c) in w.consumers.iter_mut().enumerate() {
            if let Some(c) = c.take() {
                let words = c.closed_words();
                let r = c.close().await;
                answers.push(format!(
                    "{}: {}",
                    self.input_partitions[p],
                    match r {
                        Ok(()) => words.to_string(),
                        Err(e) => format!("no success answer ({e}); the consumer is dropped"),
                    }
                ));
            }
        }
        let answer = answers.join("; ");
        let inputs: Vec<u64> = batch.iter().map(|i| i.n).collect();
        self.history.record(EventBody::ConsumerClosed {
            fault,
            consumer: w.id,
            attempt,
            txn,
            inputs: ranges(&inputs),
            answer: answer.clone(),
        });
        let _ = reply.send(Closed {
            consumer: w.id,
            attempt,
            txn,
            inputs: batch.len(),
            answer,
        });
    }

    /// Before gathering: while a restart keeps the worker's consumers closed, wait for the
    /// heal (or the end of the run).
    pub(super) async fn wait_reopened(&self, w: &Worker) {
        while self.restarts.is_closed(w.id) && !self.is_over() {
            let reopened = self.restarts.reopened.notified();
            if !self.restarts.is_closed(w.id) {
                break;
            }
            // The end of the run notifies nobody here: look again now and then.
            let _ = tokio::time::timeout(Duration::from_millis(250), reopened).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (the 19814 run through Java, 2026-12-06): a second restart asked of a
    /// consumer whose first was still pending replaced it, and the first fault failed with
    /// "the transform ended before the consumer held inputs in an open transaction" 0.1 s into
    /// the transform. Now the second is refused, naming the first, and the first still waits.
    #[tokio::test]
    async fn a_second_restart_of_a_consumer_is_refused_while_the_first_waits() {
        let r = std::sync::Arc::new(Restarts::new(2));
        let first = {
            let r = r.clone();
            tokio::spawn(async move {
                r.close(1, "consumer_restart-0#1", Duration::from_secs(30))
                    .await
            })
        };
        // The first request is in its slot once `take` finds it; wait for that by condition.
        while r.slots[1].lock().expect("lock").request.is_none() {
            tokio::task::yield_now().await;
        }
        let second = r
            .close(1, "consumer_restart-0#2", Duration::from_secs(30))
            .await
            .unwrap_err();
        assert_eq!(
            second,
            "consumer 2 has a restart pending already (consumer_restart-0#1)"
        );
        assert!(!first.is_finished());
        // The worker takes the first; its answer reaches the first fault.
        let (fault, reply) = r.take(1).expect("the first request");
        assert_eq!(fault, "consumer_restart-0#1");
        reply
            .send(Closed {
                consumer: 1,
                attempt: 3,
                txn: TxnId { most: 0, least: 85 },
                inputs: 2,
                answer: "closed".into(),
            })
            .unwrap();
        let closed = first.await.unwrap().unwrap();
        assert_eq!((closed.consumer, closed.attempt), (1, 3));
        // Another consumer's slot is its own.
        assert!(r.slots[0].lock().expect("lock").request.is_none());
    }
}
