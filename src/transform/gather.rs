//! A worker's consumers (one per input partition, subscribed again when lost) and the inputs
//! it gathers for its next transaction: once one has come, what the consumers hold, and what
//! comes within `LINGER` of the first while the batch is short.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use crate::drivers::SubscribeArgs;
use crate::history::EventBody;
use crate::scenario::transform::SUBSCRIPTION;
use crate::scenario::SubscriptionType;
use crate::txn::consumer::{ConsumerOptions, SubType, TxnConsumer};

use super::source::{key, Driven, Input, Key, Source};
use super::worker::Worker;
use super::Transformer;

/// How long a short batch waits for more inputs after its first. Taking only what the
/// consumers held made transactions of 30 inputs on average at T=100 (3,329 for 100,000
/// inputs), and the broker's work per transaction (its coordinator's log writes, a marker per
/// partition) made the run broker-bound at 1.35-1.55 cores.
const LINGER: Duration = Duration::from_millis(20);

/// How long `gather` waits on the first partition of a round: for a first input when none is
/// in hand (`linger_until` unset), for the rest of the linger after a round that found the
/// consumers empty, else not at all (what they hold is taken as it is).
pub(super) fn round_wait(
    linger_until: Option<Instant>,
    idle_round: bool,
    now: Instant,
) -> Duration {
    match linger_until {
        None => Duration::from_millis(100),
        Some(until) if idle_round => until.saturating_duration_since(now),
        Some(_) => Duration::ZERO,
    }
}

/// Whether `gather` returns its batch after a round: full, or short with nothing more come in
/// that round once the linger has run out.
pub(super) fn batch_ready(
    len: usize,
    want: usize,
    got: bool,
    linger_until: Option<Instant>,
    now: Instant,
) -> bool {
    len >= want || (len > 0 && !got && linger_until.is_some_and(|until| now >= until))
}

/// Messages a consumer may have on their way to it (FLOW permits; the official clients'
/// receiver queue): ten transactions' worth, 100 to 1,000. Two transactions' worth (until
/// 2026-12-04) starved the consumers at T=10: a FLOW goes out once half are taken, and the
/// broker's next messages came after the worker had gathered what it held (measured: workers
/// waiting in `gather` 5.7 s of 30 s; 1.1 s with 100).
pub(super) fn receiver_queue(txn_size: u32) -> u32 {
    (txn_size * 10).clamp(100, 1000)
}

/// The subscription type as the driver protocol names it.
fn sub_type(t: SubscriptionType) -> SubType {
    match t {
        SubscriptionType::Shared => SubType::Shared,
        SubscriptionType::Failover => SubType::Failover,
        SubscriptionType::KeyShared => SubType::KeyShared,
    }
}

impl Transformer {
    /// The consumer of partition `p`, subscribed (again) when it has none.
    pub(super) async fn consumer<'a>(&self, w: &'a mut Worker, p: usize) -> Option<&'a mut Source> {
        if w.consumers[p].is_none() {
            if let Some(d) = &self.driver {
                let name = format!("{}-c{}", self.cfg.name, w.id);
                let args = SubscribeArgs {
                    topic: &self.input_partitions[p],
                    subscription: SUBSCRIPTION,
                    sub_type: self.cfg.sub_type.as_str(),
                    consumer_name: &name,
                    receiver_queue: receiver_queue(self.cfg.txn_size),
                };
                match Driven::subscribe(d, &args, self.cfg.op_timeout).await {
                    Ok(c) => w.consumers[p] = Some(Source::Driven(c)),
                    Err(a) => {
                        if let crate::drivers::Answer::Gone(why) = &a {
                            self.stop(&format!("the {} driver ended: {why}", d.kind));
                        }
                        tracing::debug!("subscribe to {}: {a}", self.input_partitions[p]);
                        return None;
                    }
                }
                return w.consumers[p].as_mut();
            }
            let opts = ConsumerOptions {
                sub_type: sub_type(self.cfg.sub_type),
                permits: receiver_queue(self.cfg.txn_size),
                consumer_name: Some(format!("{}-c{}", self.cfg.name, w.id)),
            };
            match TxnConsumer::subscribe(
                &self.client,
                &self.input_partitions[p],
                SUBSCRIPTION,
                opts,
            )
            .await
            {
                Ok(c) => w.consumers[p] = Some(Source::Own(c)),
                Err(e) => {
                    tracing::debug!("subscribe to {}: {e}", self.input_partitions[p]);
                    return None;
                }
            }
        }
        w.consumers[p].as_mut()
    }

    /// Drop partition `p`'s consumer (its unacknowledged messages go back to the subscription
    /// when the broker sees it gone); the next use subscribes again.
    pub(super) fn lost(&self, w: &mut Worker, p: usize, why: &str) {
        if w.consumers[p].take().is_some() {
            self.counts.reconnects.fetch_add(1, Ordering::Relaxed);
            self.history.record(EventBody::Note {
                message: format!(
                    "transform: consumer {} of {} lost ({why}); subscribing again",
                    w.id, self.input_partitions[p]
                ),
            });
        }
    }

    /// Up to `txn_size` inputs: once one has come, what the consumers have, and what comes
    /// within `LINGER` of the first while the batch is short. Empty when the run is over.
    /// Counts the worker busy from its first input on.
    pub(super) async fn gather(&self, w: &mut Worker, deadline: Instant) -> Vec<Input> {
        let parts = self.input_partitions.len();
        let want = self.cfg.txn_size as usize;
        let mut batch: Vec<Input> = Vec::new();
        let mut seen: HashSet<Key> = HashSet::new();
        // Set at the first input: until then a short batch may wait for more.
        let mut linger_until: Option<Instant> = None;
        // The last round over the partitions found nothing in hand.
        let mut idle_round = false;
        loop {
            if self.is_over() || Instant::now() >= deadline {
                if !batch.is_empty() {
                    self.busy.fetch_sub(1, Ordering::SeqCst);
                }
                return Vec::new();
            }
            let nudge = self.nudge.load(Ordering::SeqCst);
            if nudge != w.nudge {
                w.nudge = nudge;
                for c in w.consumers.iter_mut().flatten() {
                    c.redeliver_all();
                }
            }
            let mut got = false;
            for i in 0..parts {
                let p = (w.next_partition + i) % parts;
                // Waiting on one partition per round.
                let wait = if i == 0 {
                    round_wait(linger_until, idle_round, Instant::now())
                } else {
                    Duration::ZERO
                };
                while batch.len() < want {
                    let Some(c) = self.consumer(w, p).await else {
                        break;
                    };
                    match c.receive(wait).await {
                        Ok(Some(m)) => {
                            let k = key(p, &m.id);
                            if self.done.lock().expect("lock").contains(&k) || !seen.insert(k) {
                                self.counts.stale_copies.fetch_add(1, Ordering::Relaxed);
                                continue;
                            }
                            let Some(n) = crate::checker::parse_number(&m.payload) else {
                                self.stop(&format!(
                                    "an input of {} is not a number: {:?}",
                                    self.input_partitions[p],
                                    String::from_utf8_lossy(&m.payload)
                                ));
                                break;
                            };
                            if m.redelivery_count > 0 {
                                self.counts.received_again.fetch_add(1, Ordering::Relaxed);
                            }
                            if batch.is_empty() {
                                self.busy.fetch_add(1, Ordering::SeqCst);
                                linger_until = Some(Instant::now() + LINGER);
                            }
                            self.activity.fetch_add(1, Ordering::SeqCst);
                            batch.push(Input {
                                partition: p,
                                msg: m,
                                n,
                            });
                            got = true;
                            if wait > Duration::ZERO {
                                break;
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            // What it held goes back to the subscription.
                            batch.retain(|x| x.partition != p);
                            if batch.is_empty() {
                                linger_until = None;
                            }
                            self.lost(w, p, &e);
                            if batch.is_empty() && got {
                                self.busy.fetch_sub(1, Ordering::SeqCst);
                                got = false;
                            }
                            break;
                        }
                    }
                }
            }
            w.next_partition = (w.next_partition + 1) % parts;
            if batch_ready(batch.len(), want, got, linger_until, Instant::now()) {
                return batch;
            }
            idle_round = !got;
        }
    }
}
