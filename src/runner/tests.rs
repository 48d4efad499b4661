use super::*;

/// A fresh scratch directory for a test (shared with the submodules' tests).
pub(super) fn scratch(name: &str) -> crate::scratch::Scratch {
    crate::scratch::Scratch::new(&format!("pc-runner-{name}"))
}

/// Regression: the read-back gave up after `txn_timeout + 30s` while the coordinator was
/// still ending transactions after restarts, which made healthy runs inconclusive.
#[test]
fn the_settle_cap_leaves_the_coordinator_minutes_after_the_timeout() {
    assert!(settle_cap(Duration::from_secs(20)) >= Duration::from_secs(240));
    assert!(settle_cap(Duration::from_secs(300)) > Duration::from_secs(300));
}
