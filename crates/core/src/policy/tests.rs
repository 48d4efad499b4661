use super::*;
use crate::seed::Rng;

const POLICIES: [ResendPolicy; 3] = [
    ResendPolicy::Naive,
    ResendPolicy::RetryCommit,
    ResendPolicy::Verify,
];

fn fresh() -> CommitState {
    CommitState::default()
}

fn after_ambiguity() -> CommitState {
    let mut s = fresh();
    next(
        &mut s,
        ResendPolicy::Verify,
        CommitAnswer::Ambiguous("timed out".into()),
        true,
    );
    s
}

// One row per answer of the error table in shared/notes/pulsar-transactions.md, first try.
#[test]
fn first_answers_per_policy() {
    for p in POLICIES {
        assert!(matches!(
            next(&mut fresh(), p, CommitAnswer::Committed("ok".into()), true),
            Step::Committed {
                after_ambiguity: false,
                ..
            }
        ));
        // InvalidTxnStatus naming ABORTING/ABORTED: definitive.
        assert!(matches!(
            next(
                &mut fresh(),
                p,
                CommitAnswer::Aborted("ABORTING".into()),
                true
            ),
            Step::Resend {
                after_ambiguity: false,
                ..
            }
        ));
        // TransactionNotFound to the first commit: timed out before any commit could apply.
        assert!(matches!(
            next(&mut fresh(), p, CommitAnswer::NotFound("gone".into()), true),
            Step::Resend {
                after_ambiguity: false,
                ..
            }
        ));
        // Never left the client: ask again while there is time ...
        assert_eq!(
            next(
                &mut fresh(),
                p,
                CommitAnswer::NotSent("no conn".into()),
                true
            ),
            Step::RetryCommit
        );
        // ... and when there is none, nothing can have committed it.
        assert!(matches!(
            next(
                &mut fresh(),
                p,
                CommitAnswer::NotSent("no conn".into()),
                false
            ),
            Step::Resend {
                after_ambiguity: false,
                ..
            }
        ));
        assert!(matches!(
            next(&mut fresh(), p, CommitAnswer::Fatal("off".into()), true),
            Step::Fatal(_)
        ));
    }
}

// Timeout, connection lost, TransactionCoordinatorNotFound, ServiceNotReady, an unparsed
// InvalidTxnStatus, a protocol error: all "ambiguous" once the request was handed over.
#[test]
fn an_unknown_outcome_is_never_a_resend_except_under_naive() {
    let a = || CommitAnswer::Ambiguous("TransactionCoordinatorNotFound: x".into());
    assert!(matches!(
        next(&mut fresh(), ResendPolicy::Naive, a(), true),
        Step::ResendAmbiguous { .. }
    ));
    assert_eq!(
        next(&mut fresh(), ResendPolicy::RetryCommit, a(), true),
        Step::RetryCommit
    );
    assert_eq!(
        next(&mut fresh(), ResendPolicy::Verify, a(), true),
        Step::RetryCommit
    );
    assert!(matches!(
        next(&mut fresh(), ResendPolicy::RetryCommit, a(), false),
        Step::Withhold { .. }
    ));
    assert!(matches!(
        next(&mut fresh(), ResendPolicy::Verify, a(), false),
        Step::Verify { .. }
    ));
}

#[test]
fn not_found_after_an_unknown_outcome_is_forgotten_not_aborted() {
    for (p, want) in [
        (ResendPolicy::RetryCommit, "withhold"),
        (ResendPolicy::Verify, "verify"),
    ] {
        let mut s = after_ambiguity();
        let step = next(&mut s, p, CommitAnswer::NotFound("gone".into()), true);
        match (want, &step) {
            ("withhold", Step::Withhold { why }) | ("verify", Step::Verify { why }) => {
                assert!(why.contains("forgotten by the coordinator"), "{why}")
            }
            _ => panic!("{p:?}: {step:?}"),
        }
    }
    // NotSent after an unknown outcome proves nothing about the earlier request.
    let mut s = after_ambiguity();
    assert!(matches!(
        next(
            &mut s,
            ResendPolicy::RetryCommit,
            CommitAnswer::NotSent("x".into()),
            false
        ),
        Step::Withhold { .. }
    ));
}

#[test]
fn definitive_answers_after_an_unknown_one_resolve_it() {
    let mut s = after_ambiguity();
    assert!(matches!(
        next(
            &mut s,
            ResendPolicy::RetryCommit,
            CommitAnswer::Committed("COMMITTED".into()),
            true
        ),
        Step::Committed {
            after_ambiguity: true,
            ..
        }
    ));
    let mut s = after_ambiguity();
    assert!(matches!(
        next(
            &mut s,
            ResendPolicy::Verify,
            CommitAnswer::Aborted("ABORTED".into()),
            true
        ),
        Step::Resend {
            after_ambiguity: true,
            ..
        }
    ));
}

#[test]
fn reads_decide_only_when_complete() {
    assert!(matches!(
        after_read(ReadEvidence::Read {
            found: 0,
            total: 10
        }),
        Step::Resend { .. }
    ));
    assert!(matches!(
        after_read(ReadEvidence::Read {
            found: 10,
            total: 10
        }),
        Step::Committed { .. }
    ));
    assert!(matches!(
        after_read(ReadEvidence::Read {
            found: 3,
            total: 10
        }),
        Step::Committed { .. }
    ));
    assert!(matches!(
        after_read(ReadEvidence::Unknown("coordinator not loaded".into())),
        Step::Withhold { .. }
    ));
}

fn random_answer(rng: &mut Rng) -> CommitAnswer {
    match rng.below(6) {
        0 => CommitAnswer::Committed("c".into()),
        1 => CommitAnswer::Aborted("a".into()),
        2 => CommitAnswer::NotFound("nf".into()),
        3 | 4 => CommitAnswer::Ambiguous("amb".into()),
        _ => CommitAnswer::NotSent("ns".into()),
    }
}

fn random_read(rng: &mut Rng) -> ReadEvidence {
    match rng.below(3) {
        0 => ReadEvidence::Unknown("u".into()),
        1 => ReadEvidence::Read { found: 0, total: 5 },
        _ => ReadEvidence::Read { found: 5, total: 5 },
    }
}

/// The invariant over random answer sequences: under `retry-commit` and `verify` a number is
/// resent only after a definitive abort (the last answer, with no unknown outcome before it
/// for TransactionNotFound and NotSent), or after a read proved its messages invisible; under
/// `naive`, a resend after an unknown outcome is always marked as such.
#[test]
fn property_resend_only_after_a_definitive_abort_or_an_invisible_read() {
    let mut rng = Rng::new(0x5eed_0001);
    for case in 0..20_000u32 {
        let policy = POLICIES[rng.below(3) as usize];
        let mut s = fresh();
        for _ in 0..12 {
            let answer = random_answer(&mut rng);
            let may_retry = rng.below(4) != 0;
            let ambiguous_before = s.ever_ambiguous;
            let mut step = next(&mut s, policy, answer.clone(), may_retry);
            let mut read = None;
            if let Step::Verify { .. } = step {
                assert_eq!(policy, ResendPolicy::Verify, "case {case}");
                let r = random_read(&mut rng);
                step = after_read(r.clone());
                read = Some(r);
            }
            match &step {
                Step::Resend { .. } => {
                    let definitive = match (&answer, &read) {
                        (_, Some(ReadEvidence::Read { found: 0, .. })) => true,
                        (CommitAnswer::Aborted(_), None) => true,
                        (CommitAnswer::NotFound(_), None) => !ambiguous_before,
                        (CommitAnswer::NotSent(_), None) => !ambiguous_before && !may_retry,
                        _ => false,
                    };
                    assert!(definitive, "case {case}: {policy:?} resent after {answer:?} / {read:?} (ambiguous before: {ambiguous_before})");
                }
                Step::ResendAmbiguous { .. } => {
                    assert_eq!(policy, ResendPolicy::Naive, "case {case}");
                    assert!(s.ever_ambiguous, "case {case}");
                }
                Step::Committed { .. } => assert!(
                    matches!(answer, CommitAnswer::Committed(_))
                        || matches!(read, Some(ReadEvidence::Read { found, .. }) if found > 0),
                    "case {case}: committed without evidence"
                ),
                Step::Withhold { .. } => assert!(
                    s.ever_ambiguous,
                    "case {case}: withheld without an unknown outcome"
                ),
                Step::RetryCommit => {
                    assert!(may_retry, "case {case}: retried with no time left");
                    continue;
                }
                Step::Fatal(_) | Step::Verify { .. } => {}
            }
            break;
        }
    }
}

#[test]
fn not_found_for_a_transaction_younger_than_its_timeout_is_ambiguous() {
    // Regression (coordinator-chaos under naive, 4.2.4): a NotFound to the only commit of a
    // 1.6-s-old transaction was taken for a timeout's abort; the commit had applied.
    use std::time::Duration;
    let t = Duration::from_secs(20);
    let nf = || CommitAnswer::NotFound("gone".into());
    assert!(matches!(
        not_found_with_age(nf(), Some(Duration::from_millis(1600)), t),
        CommitAnswer::Ambiguous(ref m) if m.contains("younger than its 20s timeout") && m.contains("gone")
    ));
    // Old enough to have timed out, or of unknown age: as before.
    assert_eq!(not_found_with_age(nf(), Some(t), t), nf());
    assert_eq!(
        not_found_with_age(nf(), Some(Duration::from_secs(25)), t),
        nf()
    );
    assert_eq!(not_found_with_age(nf(), None, t), nf());
    // Other answers pass through.
    let c = CommitAnswer::Committed("ok".into());
    assert_eq!(not_found_with_age(c.clone(), Some(Duration::ZERO), t), c);
    // The ambiguous answer then goes the policy's way for an unknown outcome.
    let mut s = CommitState::default();
    let a = not_found_with_age(nf(), Some(Duration::from_secs(1)), t);
    assert!(matches!(
        next(&mut s, ResendPolicy::Verify, a, false),
        Step::Verify { .. }
    ));
}
