use super::super::test_support::*;
use super::*;
use crate::checker::{Context, Status};
use crate::history::{Event, EventBody};

const DUE: &str = "the producer finished before the fault was due";

fn planned(names: &[&str]) -> Context {
    Context {
        planned_faults: Some(names.iter().map(|n| n.to_string()).collect()),
        ..Context::default()
    }
}

fn started(t: u64, fault: &str) -> Event {
    ev(
        t,
        EventBody::FaultStarted {
            fault: fault.into(),
            kind: "packet_loss".into(),
            target: "broker-1".into(),
            planned_ms: Some(t),
            action: "tc qdisc add".into(),
            detail: String::new(),
        },
    )
}

fn healed(t: u64, fault: &str) -> Event {
    ev(
        t,
        EventBody::FaultHealed {
            fault: fault.into(),
            action: "tc qdisc del".into(),
            ok: true,
            detail: String::new(),
        },
    )
}

fn skipped(t: u64, fault: &str, reason: &str) -> Event {
    ev(
        t,
        EventBody::FaultSkipped {
            fault: fault.into(),
            reason: reason.into(),
        },
    )
}

fn failed(t: u64, fault: &str, error: &str) -> Event {
    ev(
        t,
        EventBody::FaultFailed {
            fault: fault.into(),
            error: error.into(),
        },
    )
}

/// [0, 10) committed at 5 and the producer finished at 6, then `faults`' events.
fn clean_run(faults: Vec<Event>) -> Vec<Event> {
    let mut h = committed_0_to_10(5);
    h.push(finished(6, true));
    h.extend(faults);
    h
}

fn all_skipped() -> Vec<Event> {
    vec![
        skipped(6, "loss#1", DUE),
        skipped(6, "unload#1", DUE),
        skipped(6, "loss#2", DUE),
    ]
}

/// The issue's case: three faults planned, the producer done before the first was due, every
/// number read once. Today's checker said PASS; nothing was tested under faults.
#[test]
fn row_faults_planned_and_none_fired_is_inconclusive() {
    let ctx = planned(&["loss#1", "unload#1", "loss#2"]);
    let v = grade(&(0..10).collect::<Vec<_>>(), clean_run(all_skipped()), &ctx);
    assert_eq!(v.status, Status::Inconclusive, "{}", v.summary);
    assert_eq!(v.reasons.len(), 1, "{:?}", v.reasons);
    let r = &v.reasons[0];
    assert!(r.starts_with("none of the 3 planned faults fired"), "{r}");
    assert!(
        r.contains(&format!("skipped ({DUE}): loss#1, unload#1, loss#2")),
        "{r}"
    );
    assert!(v.summary.starts_with("INCONCLUSIVE:"), "{}", v.summary);
    assert!(v.summary.contains(r.as_str()), "{}", v.summary);
    assert!(
        v.summary.ends_with("Faults: 0 of 3 planned fired."),
        "{}",
        v.summary
    );
    let f = v.faults_summary.as_ref().unwrap();
    assert_eq!(
        (f.planned, f.fired, f.skipped, f.failed),
        (3, 0, 3, 0),
        "{f:?}"
    );
    let names: Vec<&str> = f.not_fired.iter().map(|n| n.fault.as_str()).collect();
    assert_eq!(names, ["loss#1", "unload#1", "loss#2"]);
    assert!(f
        .not_fired
        .iter()
        .all(|n| n.fate == "skipped" && n.reason == DUE));
    assert_eq!(f.cell(), "0/3");
    // In verdict.json, and back.
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["faults_summary"]["planned"], 3);
    assert_eq!(json["faults_summary"]["fired"], 0);
    let back: crate::checker::Verdict = serde_json::from_value(json).unwrap();
    assert_eq!(back, v);
}

#[test]
fn a_pass_that_fired_two_of_three_names_the_one_not_fired() {
    let ctx = planned(&["loss#1", "unload#1", "loss#2"]);
    let h = clean_run(vec![]);
    let mut h2 = vec![started(1, "loss#1"), healed(2, "loss#1")];
    h2.push(started(3, "unload#1"));
    h2.push(healed(3, "unload#1"));
    h2.extend(h);
    h2.push(skipped(6, "loss#2", DUE));
    let v = grade(&(0..10).collect::<Vec<_>>(), h2, &ctx);
    assert_eq!(v.status, Status::Pass, "{}", v.summary);
    assert!(v.reasons.is_empty(), "{:?}", v.reasons);
    assert!(
        v.summary.starts_with("PASS: all 10 numbers"),
        "{}",
        v.summary
    );
    assert!(
        v.summary.contains(&format!(
            "only 2 of 3 planned faults fired; not fired: skipped ({DUE}): loss#2"
        )),
        "{}",
        v.summary
    );
    assert!(
        v.summary.ends_with("Faults: 2 of 3 planned fired."),
        "{}",
        v.summary
    );
    let f = v.faults_summary.unwrap();
    assert_eq!((f.planned, f.fired, f.skipped, f.failed), (3, 2, 1, 0));
    assert_eq!(f.not_fired.len(), 1);
    assert_eq!(f.not_fired[0].fault, "loss#2");
}

#[test]
fn every_fault_fired_says_so_and_changes_nothing_else() {
    let ctx = planned(&["loss#1"]);
    let mut h = vec![started(1, "loss#1"), healed(2, "loss#1")];
    h.extend(clean_run(vec![]));
    let v = grade(&(0..10).collect::<Vec<_>>(), h.clone(), &ctx);
    let without = grade(&(0..10).collect::<Vec<_>>(), h, &Context::default());
    assert_eq!(v.status, Status::Pass);
    assert_eq!(v.notes, without.notes);
    assert_eq!(
        v.summary,
        format!("{} Faults: 1 of 1 planned fired.", without.summary)
    );
    assert_eq!(without.faults_summary, None);
}

#[test]
fn no_faults_planned_passes_unchanged() {
    let read: Vec<u64> = (0..10).collect();
    let v = grade(&read, clean_run(vec![]), &planned(&[]));
    let without = grade(&read, clean_run(vec![]), &Context::default());
    assert_eq!(v.status, Status::Pass);
    assert_eq!(v.summary, without.summary);
    assert_eq!(v.faults_summary, Some(FaultsSummary::default()));
    assert!(v.reasons.is_empty() && v.notes.is_empty());
}

#[test]
fn a_violation_with_no_fault_fired_stays_a_violation_with_a_note() {
    // history_19629: [0, 10) resent by `naive` after an ambiguous commit, both copies read.
    let mut h = history_19629();
    h.push(skipped(41, "loss#1", DUE));
    let ctx = planned(&["loss#1"]);
    let v = grade(&twice(), h, &ctx);
    assert_eq!(v.status, Status::Violation, "{}", v.summary);
    assert!(v.reasons.is_empty(), "{:?}", v.reasons);
    assert!(
        v.notes
            .iter()
            .any(|n| n.starts_with("none of the 1 planned faults fired")),
        "{:?}",
        v.notes
    );
    assert!(v.summary.starts_with("VIOLATION:"), "{}", v.summary);
}

#[test]
fn an_inconclusive_run_with_no_fault_fired_gets_the_reason_too() {
    let ctx = planned(&["loss#1"]);
    let mut h = committed_0_to_10(5);
    h.push(finished(6, false));
    h.push(skipped(6, "loss#1", DUE));
    let v = grade(&(0..10).collect::<Vec<_>>(), h, &ctx);
    assert_eq!(v.status, Status::Inconclusive);
    assert_eq!(v.reasons.len(), 2, "{:?}", v.reasons);
    assert!(v.reasons[1].starts_with("none of the 1 planned faults fired"));
}

/// `consumer_restart` (a transform's) and `reply_loss` are faults like any other: by name.
/// A failed injection is not a firing, a firing the history never mentions neither.
#[test]
fn failed_and_unrecorded_firings_do_not_count_and_every_kind_counts_by_name() {
    let ctx = planned(&["consumer_restart#1", "reply_loss#1", "pause#1", "pause#2"]);
    let mut h = vec![
        started(1, "consumer_restart#1"),
        failed(
            2,
            "consumer_restart#1",
            "no attempt held its inputs within 30s",
        ),
        failed(3, "pause#1", "no container broker-3"),
    ];
    h.extend(clean_run(vec![skipped(
        6,
        "reply_loss#1",
        "the run was stopping",
    )]));
    let v = grade(&(0..10).collect::<Vec<_>>(), h, &ctx);
    assert_eq!(v.status, Status::Inconclusive, "{}", v.summary);
    let f = v.faults_summary.as_ref().unwrap();
    assert_eq!((f.planned, f.fired, f.skipped, f.failed), (4, 0, 1, 2));
    let fates: Vec<(&str, &str)> = f
        .not_fired
        .iter()
        .map(|n| (n.fault.as_str(), n.fate.as_str()))
        .collect();
    assert_eq!(
        fates,
        [
            ("consumer_restart#1", "failed"),
            ("reply_loss#1", "skipped"),
            ("pause#1", "failed"),
            ("pause#2", "unrecorded"),
        ]
    );
    let r = &v.reasons[0];
    assert!(
        r.contains("failed (no attempt held its inputs within 30s): consumer_restart#1"),
        "{r}"
    );
    assert!(
        r.contains("unrecorded (the history does not mention it): pause#2"),
        "{r}"
    );
    // A reply_loss that started is a firing.
    let mut h = vec![started(1, "reply_loss#1"), healed(2, "reply_loss#1")];
    h.extend(clean_run(vec![]));
    let v = grade(&(0..10).collect::<Vec<_>>(), h, &planned(&["reply_loss#1"]));
    assert_eq!(v.status, Status::Pass, "{}", v.summary);
}

/// A resumed run's history holds the interrupted run's events: a fault that started before
/// the interruption fired (the resume does not fire it again), one skipped as the run was
/// stopping and fired after the resume fired too.
#[test]
fn a_resumed_run_counts_the_faults_fired_before_the_interruption() {
    let ctx = planned(&["loss#1", "loss#2"]);
    let mut h = vec![
        started(1, "loss#1"),
        healed(2, "loss#1"),
        skipped(3, "loss#2", "the run was stopping"),
        started(10, "loss#2"),
        healed(11, "loss#2"),
    ];
    h.extend(clean_run(vec![]));
    let v = grade(&(0..10).collect::<Vec<_>>(), h, &ctx);
    assert_eq!(v.status, Status::Pass, "{}", v.summary);
    let f = v.faults_summary.unwrap();
    assert_eq!((f.fired, f.skipped, f.failed), (2, 0, 0));
}

/// A read-back stored before `planned_faults` existed loads without it: no summary, the
/// grade as before (`recheck` reproduces the old verdict).
#[test]
fn an_old_context_without_planned_faults_loads_and_grades_as_before() {
    let old: Context = serde_json::from_str(r#"{"seed": 3}"#).unwrap();
    assert_eq!(old.planned_faults, None);
    let v = grade(&(0..10).collect::<Vec<_>>(), clean_run(all_skipped()), &old);
    assert_eq!(v.status, Status::Pass);
    assert_eq!(v.faults_summary, None);
    assert!(!serde_json::to_string(&v)
        .unwrap()
        .contains("faults_summary"));
}
