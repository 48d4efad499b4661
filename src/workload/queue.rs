//! The numbers to send and the workers' jobs: the chunks of fresh numbers (`take_chunk`),
//! the queue of chunks to send again, what a worker does next, how a job ends, and the stop
//! that ends every worker.

use std::collections::{BTreeSet, VecDeque};

use crate::history::{Ranges, TxnId};

use super::{Producer, WorkloadError};

/// A unit of work: numbers to carry in one transaction.
#[derive(Debug, Clone)]
pub(super) struct Chunk {
    pub(super) numbers: Ranges,
    /// The attempt that carried these numbers before (and whose journal entry names them).
    pub(super) previous: Option<u64>,
    /// Sequence number of a fresh chunk (for `abort_every`).
    pub(super) index: u64,
}

pub(super) struct Queue {
    pub(super) cursor: u64,
    pub(super) fresh_index: u64,
    pub(super) resend: VecDeque<Chunk>,
    pub(super) in_flight: usize,
    pub(super) fatal: Option<String>,
}

/// What a worker does next.
pub(super) enum Job {
    Resend(Chunk),
    Fresh,
    Wait,
    Exit,
}

/// How one attempt ended.
pub(super) enum End {
    Done,
    Resend(Chunk),
    /// Its sends are done and its commit goes on in a task of its own, which ends the job
    /// (see `job_done`); the worker moves on to the next transaction meanwhile.
    Detached,
}

/// A transaction a worker opened ahead for its next attempt (`Producer::take_txn`): the
/// NEW_TXN under way in a task of its own, and when it was asked for.
pub(super) struct Spare {
    pub(super) handle: tokio::task::JoinHandle<Result<Option<TxnId>, WorkloadError>>,
    pub(super) asked: tokio::time::Instant,
}

/// The next chunk of fresh numbers from `cursor`: up to `size` numbers below `limit`, leaving
/// out `skip`. Returns the ranges and the new cursor.
pub fn take_chunk(cursor: u64, limit: u64, size: u32, skip: &BTreeSet<u64>) -> (Ranges, u64) {
    let mut ranges: Ranges = Vec::new();
    let mut n = cursor;
    let mut taken = 0u32;
    while n < limit && taken < size {
        if skip.contains(&n) {
            n += 1;
            continue;
        }
        match ranges.last_mut() {
            Some((_, e)) if *e == n => *e = n + 1,
            _ => ranges.push((n, n + 1)),
        }
        taken += 1;
        n += 1;
    }
    // Skipped numbers right after the chunk belong to no chunk: move past them too.
    while n < limit && skip.contains(&n) {
        n += 1;
    }
    (ranges, n)
}

pub(super) fn count(r: &Ranges) -> u64 {
    r.iter().map(|(a, b)| b - a).sum()
}

impl Producer {
    /// Stop: workers finish the step they are in and return.
    pub fn stop(&self, reason: &str) {
        self.fail(reason.to_string());
    }

    /// Whether the producer was stopped (a stall, a signal, a fatal error).
    pub(super) fn is_stopped(&self) -> bool {
        self.queue.lock().expect("lock").fatal.is_some()
    }

    /// Returns once the producer is stopped.
    pub(super) async fn until_stopped(&self) {
        loop {
            let changed = self.changed.notified();
            if self.is_stopped() {
                return;
            }
            changed.await;
        }
    }

    pub(super) fn fail(&self, reason: String) {
        let mut q = self.queue.lock().expect("lock");
        if q.fatal.is_none() {
            q.fatal = Some(reason);
        }
        drop(q);
        self.changed.notify_waiters();
    }

    /// What a worker does next: resends first, then fresh numbers; a job taken counts as in
    /// flight until `job_done`.
    pub(super) fn next_job(&self) -> Job {
        let mut q = self.queue.lock().expect("lock");
        if q.fatal.is_some() {
            Job::Exit
        } else if let Some(c) = q.resend.pop_front() {
            q.in_flight += 1;
            Job::Resend(c)
        } else if q.cursor < self.cfg.messages {
            q.in_flight += 1;
            Job::Fresh
        } else if q.in_flight > 0 {
            Job::Wait
        } else {
            Job::Exit
        }
    }

    /// A job ended: its numbers are final, to be resent, or the producer must stop.
    pub(super) fn job_done(&self, r: Result<End, WorkloadError>) {
        {
            let mut q = self.queue.lock().expect("lock");
            q.in_flight -= 1;
            match r {
                Ok(End::Done | End::Detached) => {}
                Ok(End::Resend(c)) => q.resend.push_back(c),
                Err(e) => {
                    if q.fatal.is_none() {
                        q.fatal = Some(e.to_string());
                    }
                }
            }
        }
        self.changed.notify_waiters();
    }
}
