//! The one exponential backoff of the polling and retry loops: a first delay that doubles
//! after each wait, capped at a maximum. It only computes and sleeps; each loop keeps its own
//! deadline and decides itself whether to wait again.

use std::time::Duration;

/// Delays of `first`, then twice the previous one, at most `max` (the first delay is used as
/// given even when it exceeds `max`).
#[derive(Debug, Clone)]
pub struct Backoff {
    delay: Duration,
    max: Duration,
}

impl Backoff {
    pub fn new(first: Duration, max: Duration) -> Backoff {
        Backoff { delay: first, max }
    }

    /// The delay the next wait takes, without taking it.
    pub fn peek(&self) -> Duration {
        self.delay
    }

    /// The delay to wait now; the following one doubles, up to the maximum.
    pub fn next_delay(&mut self) -> Duration {
        let now = self.delay;
        self.delay = (self.delay * 2).min(self.max);
        now
    }

    /// Sleep for [`Backoff::next_delay`].
    pub async fn wait(&mut self) {
        tokio::time::sleep(self.next_delay()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn doubles_from_the_first_delay_up_to_the_cap() {
        let mut b = Backoff::new(ms(100), Duration::from_secs(1));
        let delays: Vec<Duration> = (0..7).map(|_| b.next_delay()).collect();
        assert_eq!(
            delays,
            vec![
                ms(100),
                ms(200),
                ms(400),
                ms(800),
                ms(1000),
                ms(1000),
                ms(1000)
            ]
        );
    }

    #[test]
    fn peek_shows_the_next_delay_without_advancing() {
        let mut b = Backoff::new(ms(50), Duration::from_secs(2));
        assert_eq!(b.peek(), ms(50));
        assert_eq!(b.peek(), ms(50));
        assert_eq!(b.next_delay(), ms(50));
        assert_eq!(b.peek(), ms(100));
    }

    #[test]
    fn a_first_delay_above_the_cap_is_used_once_then_capped() {
        let mut b = Backoff::new(ms(500), ms(300));
        assert_eq!(b.next_delay(), ms(500));
        assert_eq!(b.next_delay(), ms(300));
        assert_eq!(b.next_delay(), ms(300));
    }

    #[test]
    fn the_same_sequence_as_the_loops_it_replaced() {
        // The inline form each call site had: delay = (delay * 2).min(max) after each sleep.
        for (first, max) in [(ms(100), ms(1000)), (ms(100), ms(2000)), (ms(50), ms(2000))] {
            let mut b = Backoff::new(first, max);
            let mut delay = first;
            for _ in 0..12 {
                assert_eq!(b.next_delay(), delay);
                delay = (delay * 2).min(max);
            }
        }
    }

    #[tokio::test]
    async fn wait_sleeps_the_next_delay() {
        let mut b = Backoff::new(ms(20), ms(30));
        let t = tokio::time::Instant::now();
        b.wait().await;
        assert!(t.elapsed() >= ms(20));
        b.wait().await;
        assert!(t.elapsed() >= ms(50));
        assert_eq!(b.peek(), ms(30));
    }
}
