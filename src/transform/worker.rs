//! A worker of the transform: its loop, and one transaction over the inputs it gathered
//! (`gather.rs`) up to its commit, which it hands to a task of its own (up to
//! `COMMITS_IN_FLIGHT` at once) before it gathers the next batch (see the module above for
//! what becomes of each ending); the spare transactions it opens ahead.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use pulsar::message::proto::MessageIdData;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::history::{EventBody, Ranges, TxnId};
use crate::journal::Record;
use crate::scenario::transform::{ConflictProbe, SUBSCRIPTION};
use crate::txn::consumer::AckAnswer;

use super::source::{answer_class, Hand, Input, Source};
use super::Transformer;

/// Spare transactions a worker keeps opened ahead. One was not enough: a spare's NEW_TXN and
/// registrations are three writes to the coordinator's log (about 6 ms on 2 cores), longer
/// than an attempt's own work at T=10 (about 5 ms), so each attempt waited about 4 ms for its
/// spare (measured: 15.5 s of 37 s of workers' time in a 40,000-input run).
const SPARES: usize = 2;

/// Commits a worker has under way at once, each in a task of its own (as the producer's
/// default `commits_in_flight`): while they wait for END_TXN the worker gathers and processes
/// the next batch. A fixed number, not a scenario key.
const COMMITS_IN_FLIGHT: usize = crate::scenario::DEFAULT_COMMITS_IN_FLIGHT as usize;

/// A worker's own state.
pub(super) struct Worker {
    pub(super) id: u32,
    /// One consumer per input partition; `None` while it cannot subscribe.
    pub(super) consumers: Vec<Option<Source>>,
    pub(super) next_partition: usize,
    pub(super) nudge: u64,
    /// Its commit tasks; each holds one of `slots` until it has finished.
    commits: JoinSet<()>,
    slots: Arc<Semaphore>,
    /// Transactions opened ahead for the next attempts (`SPARES` of them, oldest first): their
    /// NEW_TXN and, with the own client, their registrations overlap the attempts before.
    spares: std::collections::VecDeque<SpareTxn>,
}

/// What a transaction has registered with its coordinator: the subscription on these input
/// partitions, and these output partitions (an official client registers the subscription
/// itself, at its ACK: through a driver only outputs, and only when it offers `register`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Registered {
    pub(super) inputs: BTreeSet<usize>,
    pub(super) outputs: BTreeSet<usize>,
}

impl Registered {
    /// What an attempt that needs `needs` must still register in a transaction that already
    /// holds `self`.
    pub(super) fn missing(&self, needs: &Registered) -> Registered {
        Registered {
            inputs: needs.inputs.difference(&self.inputs).copied().collect(),
            outputs: needs.outputs.difference(&self.outputs).copied().collect(),
        }
    }
}

/// A transaction opened ahead: NEW_TXN, then (own client) the registrations the last attempt
/// needed, in a task of its own.
struct SpareTxn {
    handle: tokio::task::JoinHandle<Result<(TxnId, Registered), String>>,
    /// Taken before its NEW_TXN was asked (the transaction's age, as `Ready::asked`).
    asked: Instant,
}

impl Worker {
    /// A handle on each input partition's consumer as it is now (for a hand-back).
    pub(super) fn handles(&self) -> Vec<Option<Hand>> {
        self.consumers
            .iter()
            .map(|c| c.as_ref().map(Source::handle))
            .collect()
    }
}

/// An attempt ready to commit: every SEND of its transaction has its receipt and every ACK of
/// its inputs was answered in it (the restart point passed). The worker hands it to a commit
/// task of its own and goes on gathering.
pub(super) struct Ready {
    pub(super) attempt: u64,
    pub(super) txn: TxnId,
    pub(super) batch: Vec<Input>,
    /// The consumer of each input partition when the attempt was handed off (`None`: none
    /// then), for the hand-back.
    pub(super) hands: Vec<Option<Hand>>,
    /// Taken before its NEW_TXN was first asked: the transaction's age, bounded from above,
    /// for `policy::not_found_with_age`.
    pub(super) asked: Instant,
}

/// Sorted numbers as half-open ranges.
pub(super) fn ranges(numbers: &[u64]) -> Ranges {
    let sorted: BTreeSet<u64> = numbers.iter().copied().collect();
    let mut out: Ranges = Vec::new();
    for n in sorted {
        match out.last_mut() {
            Some((_, end)) if *end == n => *end = n + 1,
            _ => out.push((n, n + 1)),
        }
    }
    out
}

impl Transformer {
    /// Gather a batch, carry its transaction up to the commit, hand the commit to a task and
    /// gather the next, until the run is over; then wait for the commit tasks before closing
    /// the consumers (a hand-back of theirs may still need them).
    pub(super) async fn worker(self: Arc<Self>, id: u32, deadline: Instant) {
        let mut w = Worker {
            id,
            consumers: (0..self.input_partitions.len()).map(|_| None).collect(),
            next_partition: 0,
            nudge: self.nudge.load(Ordering::SeqCst),
            commits: JoinSet::new(),
            slots: Arc::new(Semaphore::new(COMMITS_IN_FLIGHT)),
            spares: std::collections::VecDeque::new(),
        };
        while !self.is_over() && Instant::now() < deadline {
            self.wait_reopened(&w).await;
            while let Some(done) = w.commits.try_join_next() {
                self.task_ended(done);
            }
            let batch = self.gather(&mut w, deadline).await;
            if batch.is_empty() {
                continue;
            }
            match self.transact(&mut w, batch, deadline).await {
                Some(ready) => self.hand_off(&mut w, ready, deadline).await,
                None => {
                    self.busy.fetch_sub(1, Ordering::SeqCst);
                }
            }
        }
        while let Some(s) = w.spares.pop_front() {
            self.discard(s).await;
        }
        while let Some(done) = w.commits.join_next().await {
            self.task_ended(done);
        }
        for c in w.consumers.into_iter().flatten() {
            let _ = c.close().await;
        }
    }

    /// Commit `ready` in a task of its own once one of the worker's commit slots is free. The
    /// batch counts busy until the task has finished (its hand-back included), so the
    /// completion watch never sees a worker idle while one of its commits is under way.
    async fn hand_off(self: &Arc<Self>, w: &mut Worker, ready: Ready, deadline: Instant) {
        let slot = w
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("the commit slots are never closed");
        let me = Arc::clone(self);
        w.commits.spawn(async move {
            me.commit(&ready, deadline).await;
            me.busy.fetch_sub(1, Ordering::SeqCst);
            drop(slot);
        });
    }

    /// A commit task has ended: a panic stops the run (its batch stays counted busy, so the
    /// run cannot pass on it).
    fn task_ended(&self, r: Result<(), tokio::task::JoinError>) {
        if let Err(e) = r {
            self.stop(&format!("a transform commit task panicked: {e}"));
        }
    }

    /// One transaction over `batch` up to its commit: `Ready` to be committed, or `None` when
    /// it ended here (aborted, its inputs handed back). The batch counts busy; the caller ends
    /// that (for a `Ready` one, its commit task).
    async fn transact(
        self: &Arc<Self>,
        w: &mut Worker,
        batch: Vec<Input>,
        deadline: Instant,
    ) -> Option<Ready> {
        let attempt = self.next_attempt.fetch_add(1, Ordering::Relaxed);
        let inputs: Vec<u64> = batch.iter().map(|i| i.n).collect();
        let outputs: Vec<u64> = inputs.iter().map(|n| self.cfg.function.apply(*n)).collect();
        self.stats.attempts.fetch_add(1, Ordering::Relaxed);
        let needs = Registered {
            inputs: batch.iter().map(|i| i.partition).collect(),
            outputs: outputs.iter().map(|n| self.output_partition(*n)).collect(),
        };
        let (txn, have, asked) = match self.take_txn(w, &needs, deadline).await {
            Ok(t) => t,
            Err(why) => {
                self.hand_back(w, attempt, &batch, &[], why);
                return None;
            }
        };
        self.history.record(EventBody::TxnOpened {
            attempt,
            txn,
            numbers: ranges(&outputs),
            resend_of: None,
        });
        self.history.record(EventBody::InputsTaken {
            attempt,
            consumer: w.id,
            inputs: ranges(&inputs),
            redelivered: batch.iter().filter(|i| i.msg.redelivery_count > 0).count() as u64,
        });
        let op_deadline = (Instant::now() + self.cfg.txn_timeout)
            .min(deadline.max(Instant::now() + self.cfg.op_timeout));
        // The journal's sync runs beside the registrations, SENDs and ACKs: the attempt asks to
        // commit only once its entry is on disk (`run --resume` settles it from there), and a
        // harness killed before that leaves `txn_opened` in the history, which a resumed run
        // settles too. An official client registers the subscription itself at its ACK, and
        // an output partition at its first send unless its driver registers it ahead.
        let missing = have.missing(&needs);
        let work = async {
            match &self.driver {
                None => self
                    .register_in(txn, &missing, op_deadline)
                    .await
                    .map_err(|why| (why, Vec::new()))?,
                Some(d) => {
                    self.register_through(d, txn, &missing, op_deadline)
                        .await
                        .map_err(|a| {
                            (self.driver_failed(attempt, txn, "register", &a), Vec::new())
                        })?;
                }
            }
            self.send_and_ack(w, attempt, txn, &batch, &outputs, op_deadline)
                .await
        };
        let (journaled, done) = tokio::join!(self.journal_opened(attempt, txn, &outputs), work);
        let done = match (journaled, done) {
            (Ok(()), done) | (Err(_), done @ Err(_)) => done,
            // Every ACK was answered in it: the abort hands them all back.
            (Err(why), Ok(())) => Err((why, (0..batch.len()).collect())),
        };
        if let Err((why, acked)) = done {
            // The broker hands back the acks of an aborted transaction itself; only the
            // others are asked for (asking for all makes copies that conflict later).
            let confirmed = self.abort(attempt, txn, why.clone()).await;
            let skip = if confirmed { acked } else { Vec::new() };
            self.hand_back(w, attempt, &batch, &skip, why);
            return None;
        }
        // A consumer_restart asked for this worker closes its consumers here.
        self.restart_point(w, attempt, txn, &batch).await;
        if let Some(k) = self.cfg.abort_every {
            if attempt % u64::from(k) == 0 {
                let why = format!("deliberate: every {k}th attempt is aborted (abort_every)");
                let skip: Vec<usize> = if self.abort(attempt, txn, why.clone()).await {
                    (0..batch.len()).collect()
                } else {
                    Vec::new()
                };
                self.hand_back(w, attempt, &batch, &skip, why);
                return None;
            }
        }
        Some(Ready {
            attempt,
            txn,
            batch,
            hands: w.handles(),
            asked,
        })
    }

    /// `redeliver` by the worker itself, through its consumers as they are now; one that
    /// could not be asked is dropped (the next use subscribes again), as after a failed ACK.
    fn hand_back(
        &self,
        w: &mut Worker,
        attempt: u64,
        batch: &[Input],
        skip: &[usize],
        reason: String,
    ) {
        for (p, e) in self.redeliver(&w.handles(), attempt, batch, skip, reason) {
            self.lost(w, p, &e);
        }
    }

    /// Journal the attempt, synced. Err: why the attempt must be aborted (a journal that fails
    /// also stops the run).
    async fn journal_opened(
        &self,
        attempt: u64,
        txn: TxnId,
        outputs: &[u64],
    ) -> Result<(), String> {
        let entry = crate::journal::Entry {
            attempt,
            txn,
            numbers: ranges(outputs),
            resend_of: None,
        };
        if let Err(e) = self
            .journal
            .submit(vec![Record::Opened(entry)])
            .synced()
            .await
        {
            self.stop(&format!("the journal failed: {e}"));
            return Err(format!("the journal failed: {e}"));
        }
        Ok(())
    }

    /// Register in `txn` the subscription on `r.inputs` and the partitions `r.outputs`, the
    /// two requests at once (none for an empty set). Err: which failed, and why.
    async fn register_in(
        &self,
        txn: TxnId,
        r: &Registered,
        op_deadline: Instant,
    ) -> Result<(), String> {
        let subs: Vec<(String, String)> = r
            .inputs
            .iter()
            .map(|p| (self.input_partitions[*p].clone(), SUBSCRIPTION.to_string()))
            .collect();
        let names: Vec<String> = r
            .outputs
            .iter()
            .map(|q| self.output_partitions[*q].clone())
            .collect();
        let (subscribed, added) = tokio::join!(
            async {
                if subs.is_empty() {
                    return Ok(());
                }
                self.tcs.add_subscriptions(txn, &subs, op_deadline).await
            },
            async {
                if names.is_empty() {
                    return Ok(());
                }
                self.tcs.add_partitions(txn, &names, op_deadline).await
            },
        );
        subscribed.map_err(|e| format!("ADD_SUBSCRIPTION_TO_TXN failed: {e}"))?;
        added.map_err(|e| format!("ADD_PARTITION_TO_TXN failed: {e}"))?;
        Ok(())
    }

    /// Register `r` in `txn` through the official client, ahead of its sends and ACKs, as far
    /// as its driver offers: the output partitions when it serves `register`, the input
    /// subscription on its partitions when it serves `register_acks` too (otherwise the client
    /// registers each at its first send or ACK, holding that operation until the coordinator
    /// answers). Ok: what was registered. Err: the client's answer.
    async fn register_through(
        &self,
        d: &crate::drivers::Driver,
        txn: TxnId,
        r: &Registered,
        op_deadline: Instant,
    ) -> Result<Registered, crate::drivers::Answer> {
        let done = Registered {
            inputs: if d.hello.register && d.hello.register_acks {
                r.inputs.clone()
            } else {
                BTreeSet::new()
            },
            outputs: if d.hello.register {
                r.outputs.clone()
            } else {
                BTreeSet::new()
            },
        };
        if done.inputs.is_empty() && done.outputs.is_empty() {
            return Ok(done);
        }
        let ps: Vec<u32> = done.outputs.iter().map(|q| *q as u32).collect();
        let subs: Vec<(String, String)> = done
            .inputs
            .iter()
            .map(|p| (self.input_partitions[*p].clone(), SUBSCRIPTION.to_string()))
            .collect();
        d.register(txn, &ps, &subs, op_deadline).await?;
        if !ps.is_empty() {
            self.counts.registered_ahead.fetch_add(1, Ordering::Relaxed);
        }
        if !subs.is_empty() {
            self.counts
                .inputs_registered_ahead
                .fetch_add(1, Ordering::Relaxed);
        }
        Ok(done)
    }

    /// Send the outputs and acknowledge the inputs, all in `txn` (registered); probe
    /// a conflict now and then. Err: why the attempt must be aborted.
    async fn send_and_ack(
        &self,
        w: &mut Worker,
        attempt: u64,
        txn: TxnId,
        batch: &[Input],
        outputs: &[u64],
        op_deadline: Instant,
    ) -> Result<(), (String, Vec<usize>)> {
        let mut by_output: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
        for n in outputs {
            by_output
                .entry(self.output_partition(*n))
                .or_default()
                .push(*n);
        }
        let batch_size = self.cfg.batch_size.max(1) as usize;
        let sends: Vec<_> = by_output
            .iter()
            .flat_map(|(q, numbers)| {
                numbers.chunks(batch_size).map(move |group| async move {
                    if let Some(d) = &self.driver {
                        // The client's own operation timeout should answer first.
                        let patience = self.cfg.op_timeout + Duration::from_secs(10);
                        return d
                            .send(Some(txn), *q as u32, group, patience)
                            .await
                            .map(|ids| ids.len())
                            .map_err(|a| self.driver_failed(attempt, txn, "send", &a));
                    }
                    let data = group
                        .iter()
                        .map(|n| crate::workload::payload(*n, self.cfg.message_size))
                        .collect();
                    self.producers[*q]
                        .send_batch(Some(txn), data, self.cfg.op_timeout)
                        .await
                        .map(|ids| ids.len())
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        // The SENDs and the ACKs go out together (as the Java client's users, and
        // `pulsar-perf transaction`, do): both only need the transaction registered, and the
        // commit waits for both. `sends_acked` is recorded when the last receipt came,
        // `inputs_acked` once both are done, so the ACK latency the verdict quotes is what the
        // ACKs added after the receipts.
        let sends_done = async {
            let mut sent = 0u64;
            let mut failed: Option<String> = None;
            for r in futures::future::join_all(sends).await {
                match r {
                    Ok(n) => sent += n as u64,
                    Err(e) => {
                        failed.get_or_insert(e);
                    }
                }
            }
            if failed.is_none() {
                self.history.record(EventBody::SendsAcked {
                    attempt,
                    messages: sent,
                });
            }
            (sent, failed)
        };
        // One ACK per input, all at once: a refusal names one input (an ACK of several that
        // is refused leaves the others out of the consumer's unacknowledged set on 4.2.4, so
        // no redelivery brings them back). Through a driver that answers each id of an `ack`
        // on its own, one request per input partition carries them (the client still sends
        // one ACK per input): at T=100, 100 requests an attempt became one.
        let acks_done = async {
            let consumers = &w.consumers;
            let mut by_partition: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
            for (k, i) in batch.iter().enumerate() {
                by_partition.entry(i.partition).or_default().push(k);
            }
            let groups = by_partition.into_iter().map(|(p, ks)| async move {
                let answers = match consumers[p].as_ref() {
                    Some(c) => {
                        let ids: Vec<MessageIdData> =
                            ks.iter().map(|k| batch[*k].msg.id.clone()).collect();
                        if c.acks_in_one_request() {
                            self.counts
                                .ack_requests_grouped
                                .fetch_add(1, Ordering::Relaxed);
                        }
                        c.ack_all(txn, &ids).await
                    }
                    None => vec![AckAnswer::NotSent("the consumer was lost".into()); ks.len()],
                };
                ks.into_iter().zip(answers)
            });
            // Back in the batch's order.
            let mut answers: Vec<(usize, AckAnswer)> = futures::future::join_all(groups)
                .await
                .into_iter()
                .flatten()
                .collect();
            answers.sort_unstable_by_key(|(k, _)| *k);
            answers.into_iter().map(|(_, a)| a).collect::<Vec<_>>()
        };
        let ((sent, send_failed), answers) = tokio::join!(sends_done, acks_done);
        self.stats.messages_sent.fetch_add(sent, Ordering::Relaxed);
        let mut acked = Vec::new();
        let mut failed: Vec<(usize, AckAnswer)> = Vec::new();
        for (k, r) in answers.into_iter().enumerate() {
            match r {
                AckAnswer::Acked(_) => acked.push(k),
                AckAnswer::Fatal(m) if self.driver.is_some() => {
                    self.stop(&m);
                    failed.push((k, AckAnswer::Fatal(m)));
                }
                other => failed.push((k, other)),
            }
        }
        if let Some((_, answer)) = failed.first() {
            let (name, detail) = answer_words(answer);
            self.history.record(EventBody::InputsAcked {
                attempt,
                txn,
                messages: failed.len() as u64,
                answer: name.into(),
                detail,
            });
            for (k, a) in &failed {
                if !matches!(a, AckAnswer::Refused(_) | AckAnswer::Aborted(_)) {
                    self.lost(w, batch[*k].partition, &answer_words(a).1);
                }
            }
        } else {
            self.history.record(EventBody::InputsAcked {
                attempt,
                txn,
                messages: batch.len() as u64,
                answer: "acked".into(),
                detail: match &self.driver {
                    None => "ACK_RESPONSE without error".into(),
                    Some(d) => format!(
                        "{} client: every acknowledgement completed normally",
                        d.kind
                    ),
                },
            });
        }
        if let Some(e) = send_failed {
            return Err((
                format!("a SEND failed ({e}); {sent} of {} receipts", outputs.len()),
                acked,
            ));
        }
        if let Some((k, answer)) = failed.first() {
            let (name, detail) = answer_words(answer);
            return Err((
                format!(
                    "the ACK of {} of {} input(s) failed, the first ({} on {}): {name}: {detail}",
                    failed.len(),
                    batch.len(),
                    batch[*k].n,
                    self.input_partitions[batch[*k].partition]
                ),
                acked,
            ));
        }
        if attempt % super::PROBE_EVERY == 1 && self.driver.is_none() {
            let whole_first = self.cfg.conflict_probe == ConflictProbe::Commit;
            if let Some(k) = probe_target(batch, whole_first) {
                self.probe(w, attempt, txn, &batch[k], op_deadline).await;
            }
        }
        Ok(())
    }
}

impl Transformer {
    /// The transaction for an attempt that needs `needs` registered: the spare opened ahead
    /// when there is one young enough (under half the transaction timeout), else one opened
    /// now; with what it already holds registered, and when its NEW_TXN was asked. Unless the
    /// run is over, a spare for the next attempt is then opened in a task of its own,
    /// registering what this one needs (the next batch's partitions are most often the same),
    /// so that its round trips overlap this attempt's sends and acks rather than precede the
    /// next one's. Err: why no transaction could be had.
    async fn take_txn(
        self: &Arc<Self>,
        w: &mut Worker,
        needs: &Registered,
        deadline: Instant,
    ) -> Result<(TxnId, Registered, Instant), String> {
        let mut taken = None;
        while let Some(s) = w.spares.pop_front() {
            if s.asked.elapsed() >= self.cfg.txn_timeout / 2 {
                self.discard(s).await;
                continue;
            }
            let asked = s.asked;
            match s.handle.await {
                Ok(Ok((txn, have))) => {
                    taken = Some((txn, have, asked));
                    break;
                }
                Ok(Err(why)) => {
                    tracing::debug!("transform: a spare transaction failed: {why}");
                }
                Err(e) => {
                    self.stop(&format!("a transform spare task panicked: {e}"));
                    break;
                }
            }
        }
        let taken = match taken {
            Some(t) => t,
            None => {
                let asked = Instant::now();
                (self.new_txn(deadline).await?, Registered::default(), asked)
            }
        };
        while !self.is_over() && w.spares.len() < SPARES {
            let me = Arc::clone(self);
            let needs = needs.clone();
            w.spares.push_back(SpareTxn {
                handle: tokio::spawn(async move { me.open_ahead(needs, deadline).await }),
                asked: Instant::now(),
            });
        }
        Ok(taken)
    }

    /// A spare: NEW_TXN, then the registrations of `needs` (through a driver, its output
    /// partitions when it offers `register`; a failed registration leaves the spare with none:
    /// the attempt registers them itself).
    async fn open_ahead(
        &self,
        needs: Registered,
        deadline: Instant,
    ) -> Result<(TxnId, Registered), String> {
        let txn = self.new_txn(deadline).await?;
        let op_deadline = Instant::now() + self.cfg.op_timeout;
        if let Some(d) = &self.driver {
            return match self.register_through(d, txn, &needs, op_deadline).await {
                Ok(done) => Ok((txn, done)),
                Err(a) => {
                    if let crate::drivers::Answer::Gone(why) = &a {
                        self.stop(&format!("the {} driver ended: {why}", d.kind));
                    }
                    tracing::debug!("transform: spare {txn}: registering its outputs: {a}");
                    Ok((txn, Registered::default()))
                }
            };
        }
        match self.register_in(txn, &needs, op_deadline).await {
            Ok(()) => Ok((txn, needs)),
            Err(why) => {
                tracing::debug!("transform: spare {txn}: {why}");
                Ok((txn, Registered::default()))
            }
        }
    }

    /// End a spare no attempt will use: END_TXN ABORT (it holds no message and no ack).
    /// Once the run is over a NEW_TXN still under way is cancelled; after a stop the abort is
    /// not waited for either (the cluster may be gone; an unanswered spare ends by the
    /// coordinator's timeout, holding nothing).
    async fn discard(&self, s: SpareTxn) {
        if self.is_over() && !s.handle.is_finished() {
            s.handle.abort();
            return;
        }
        let stopped = self.stopped.lock().expect("lock").is_some();
        let Ok(Ok((txn, _))) = s.handle.await else {
            return;
        };
        let abort = crate::drivers::abort_through(
            self.driver.clone(),
            self.tcs.clone(),
            txn,
            self.cfg.op_timeout + Duration::from_secs(10),
        );
        if stopped {
            tokio::spawn(abort);
        } else if let Err(e) = abort.await {
            tracing::debug!("transform: the abort of spare {txn}: {e}");
        }
    }

    /// The output partition of the output `n` (its number modulo the partitions).
    pub(super) fn output_partition(&self, n: u64) -> usize {
        (n % u64::from(self.cfg.partitions)) as usize
    }

    /// A new transaction, through the driver when there is one. Err: why not.
    async fn new_txn(&self, deadline: Instant) -> Result<TxnId, String> {
        let Some(d) = &self.driver else {
            return self
                .tcs
                .new_txn(self.cfg.txn_timeout, deadline)
                .await
                .map_err(|e| format!("NEW_TXN failed: {e}"));
        };
        let patience = self.cfg.op_timeout + Duration::from_secs(10);
        d.new_txn(self.cfg.txn_timeout, patience)
            .await
            .map_err(|a| {
                if let crate::drivers::Answer::Gone(why) = &a {
                    self.stop(&format!("the {} driver ended: {why}", d.kind));
                }
                format!("{} client: newTransaction failed: {a}", d.kind)
            })
    }

    /// A failed answer of the driver to `op` of an attempt: recorded (`client_answer`); the
    /// driver's end stops the run. Returns the words for the attempt's abort reason.
    pub(super) fn driver_failed(
        &self,
        attempt: u64,
        txn: TxnId,
        op: &str,
        a: &crate::drivers::Answer,
    ) -> String {
        let Some(d) = &self.driver else {
            return a.to_string();
        };
        let (class, message) = answer_class(a);
        self.history.record(EventBody::ClientAnswer {
            attempt,
            txn,
            op: op.into(),
            client: d.kind.name().into(),
            class,
            message,
        });
        if let crate::drivers::Answer::Gone(why) = a {
            self.stop(&format!("the {} driver ended: {why}", d.kind));
        }
        format!("{} client: {op}: {a}", d.kind)
    }
}

/// The input a conflict probe acknowledges again (its index in `batch`). With `whole_first`
/// (`conflict_probe: commit`): a member of a batched entry the transaction holds whole, one
/// ACK per member (the broker's shared ack set of that entry is then empty, and an empty set
/// never overlaps: the acceptance this setting shows in the output). Otherwise, or when there
/// is none: one whose batched entry the transaction holds only in part, else one that is not
/// batched, else the first. (An ACK of a member of an entry another transaction held whole
/// in ONE ack went unanswered on 4.2.4; the harness no longer acknowledges so.)
pub(super) fn probe_target(batch: &[Input], whole_first: bool) -> Option<usize> {
    let mut members: BTreeMap<(usize, u64, u64), i32> = BTreeMap::new();
    for i in batch {
        *members
            .entry((i.partition, i.msg.id.ledger_id, i.msg.id.entry_id))
            .or_default() += 1;
    }
    let held = |i: &Input| members[&(i.partition, i.msg.id.ledger_id, i.msg.id.entry_id)];
    let whole = |i: &Input| i.msg.id.batch_size.is_some_and(|n| n > 1 && held(i) >= n);
    let partial = |i: &Input| i.msg.id.batch_size.is_some_and(|n| held(i) < n);
    let plain = |i: &Input| i.msg.id.batch_size.is_none_or(|n| n <= 1);
    let find = |f: &dyn Fn(&Input) -> bool| batch.iter().position(f);
    whole_first
        .then(|| find(&whole))
        .flatten()
        .or_else(|| find(&partial))
        .or_else(|| find(&plain))
        .or_else(|| (!batch.is_empty()).then_some(0))
}

/// An ACK answer's name (as `inputs_acked` records it) and its words.
pub(super) fn answer_words(a: &AckAnswer) -> (&'static str, String) {
    match a {
        AckAnswer::Acked(m) => ("acked", m.clone()),
        AckAnswer::Refused(m) => ("refused", m.clone()),
        AckAnswer::Aborted(m) => ("aborted", m.clone()),
        AckAnswer::NotSent(m) => ("not_sent", m.clone()),
        AckAnswer::Fatal(m) => ("fatal", m.clone()),
        AckAnswer::Ambiguous(m) => ("ambiguous", m.clone()),
    }
}
