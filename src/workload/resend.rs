//! Numbers carried again or not: the resend of an attempt's numbers (recorded, then queued
//! or returned to the worker), and the numbers the policy withholds (recorded, journal entry
//! cleared).

use std::sync::atomic::Ordering;

use crate::history::{EventBody, Ranges};
use crate::journal::{Entry, JournalError};

use super::queue::{Chunk, End};
use super::Producer;

impl Producer {
    /// What `carry` returns to send an attempt's numbers again, recorded.
    pub(super) fn again<'a>(
        &'a self,
        attempt: u64,
        chunk: &'a Chunk,
    ) -> impl Fn(String) -> End + 'a {
        move |reason: String| {
            self.history.record(EventBody::ResendScheduled {
                attempt,
                numbers: chunk.numbers.clone(),
                reason,
            });
            End::Resend(Chunk {
                numbers: chunk.numbers.clone(),
                previous: Some(attempt),
                index: u64::MAX,
            })
        }
    }

    pub(super) fn requeue(&self, e: &Entry, reason: &str) {
        self.history.record(EventBody::ResendScheduled {
            attempt: e.attempt,
            numbers: e.numbers.clone(),
            reason: reason.to_string(),
        });
        self.queue.lock().expect("lock").resend.push_back(Chunk {
            numbers: e.numbers.clone(),
            previous: Some(e.attempt),
            index: u64::MAX,
        });
    }

    pub(super) async fn withhold(
        &self,
        attempt: u64,
        numbers: &Ranges,
        reason: &str,
    ) -> Result<(), JournalError> {
        self.stats.withheld.fetch_add(1, Ordering::Relaxed);
        self.history.record(EventBody::ResendWithheld {
            attempt,
            numbers: numbers.clone(),
            reason: reason.to_string(),
        });
        self.journal.clear(attempt).await
    }
}
