//! The Faults section of `report.html`: how many faults were planned, fired, skipped and
//! failed; one row per fault that fired with its action, planned and actual start, duration,
//! recovery, commit gap, heal and the replies it dropped; the skipped and failed faults with
//! their reasons; and the planned faults the history never mentions.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use super::fmt::{esc, fmt_dur, fmt_n, fmt_t};
use super::scan::{FaultSpan, Scan};
use super::TABLE_CAP;
use crate::checker::Verdict;
use crate::plan::{Plan, Trigger};

/// The section.
pub(super) fn faults_section(h: &mut String, scan: &Scan, plan: &Plan, v: &Verdict) {
    h.push_str("<h2 id=\"faults\">Faults</h2>\n");
    let fired = scan.faults.len() + scan.faults_dropped as usize;
    w!(
        h,
        "<p class=\"note\">{} planned, {} fired, {} skipped, {} failed to inject.</p>",
        plan.faults.len(),
        fired,
        scan.skipped.len(),
        scan.failed.len()
    );
    if !scan.faults.is_empty() {
        fired_table(h, scan, plan, v);
    }
    if scan.faults_dropped > 0 {
        w!(
            h,
            "<p class=\"note\">{} more fault(s) fired and are not listed.</p>",
            fmt_n(scan.faults_dropped)
        );
    }
    if !scan.skipped.is_empty() || !scan.failed.is_empty() {
        skipped_table(h, scan);
    }
    if scan.faults_dropped == 0 {
        unseen_note(h, scan, plan);
    }
}

/// One row per fault that fired, and what the columns mean.
fn fired_table(h: &mut String, scan: &Scan, plan: &Plan, v: &Verdict) {
    let planned: HashMap<&str, Trigger> = plan
        .faults
        .iter()
        .map(|f| (f.name.as_str(), f.trigger))
        .collect();
    let recovery: HashMap<&str, (Option<u64>, Option<u64>)> = v
        .faults
        .iter()
        .map(|f| (f.fault.as_str(), (f.recovery_ms, f.commit_gap_ms)))
        .collect();
    h.push_str("<table><thead><tr><th>fault</th><th>kind</th><th>target</th><th>action</th><th class=\"num\">planned</th><th class=\"num\">started</th><th class=\"num\">duration</th><th class=\"num\">recovery</th><th class=\"num\">commit gap</th><th>heal</th></tr></thead><tbody>");
    for f in &scan.faults {
        let plan_text = match (f.planned_ms, planned.get(f.name.as_str())) {
            (Some(ms), _) => fmt_t(ms),
            (None, Some(Trigger::AtMs(ms))) => fmt_t(*ms),
            (None, Some(Trigger::AfterCommits(n))) => format!("after {} commits", fmt_n(*n)),
            (None, None) => "-".to_string(),
        };
        let duration = match f.healed_ms {
            Some(hl) => fmt_dur(hl.saturating_sub(f.started_ms)),
            None => "never healed".to_string(),
        };
        let (rec, gap) = recovery.get(f.name.as_str()).copied().unwrap_or_default();
        w!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"wrap\"><code>{}</code>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"wrap\">{}</td></tr>",
            esc(&f.name),
            esc(&f.kind),
            esc(&f.target),
            esc(&f.action),
            detail_html(f),
            esc(&plan_text),
            esc(&fmt_t(f.started_ms)),
            esc(&duration),
            rec.map(fmt_dur).unwrap_or_else(|| "-".into()),
            gap.map(fmt_dur).unwrap_or_else(|| "-".into()),
            heal_html(f),
        );
    }
    h.push_str("</tbody></table>\n<p class=\"note\">planned: the plan's offset, counted from when fault scheduling began (as the producer starts); started: offset from the start of the run, as every time in this report; recovery: from the heal to the first commit confirmed after it; commit gap: from the last commit before the fault to the first after its heal.</p>\n");
}

/// The lines under a fault's action: its detail and the replies it dropped (escaped).
fn detail_html(f: &FaultSpan) -> String {
    let mut detail = if f.detail.is_empty() {
        String::new()
    } else {
        format!("<br>{}", esc(&f.detail))
    };
    for d in &f.drops {
        w!(detail, "<br>{}", esc(d));
    }
    if f.drops_n > f.drops.len() as u64 {
        w!(
            detail,
            "<br>... and {} more dropped replies",
            f.drops_n - f.drops.len() as u64
        );
    }
    detail
}

/// The heal cell: whether the heal worked, its action and its detail (escaped).
fn heal_html(f: &FaultSpan) -> String {
    let mut heal = match f.heal_ok {
        Some(true) => "<span class=\"pill ok\">ok</span>".to_string(),
        Some(false) => "<span class=\"pill bad\">failed</span>".to_string(),
        None => "<span class=\"pill warn\">not healed</span>".to_string(),
    };
    if !f.heal_action.is_empty() {
        w!(heal, "<br><code>{}</code>", esc(&f.heal_action));
    }
    if !f.heal_detail.is_empty() {
        w!(heal, "<br>{}", esc(&f.heal_detail));
    }
    heal
}

/// The faults that were skipped or failed to inject, with the reason.
fn skipped_table(h: &mut String, scan: &Scan) {
    h.push_str("<h3>Skipped and failed faults</h3><table><thead><tr><th>fault</th><th></th><th class=\"num\">at</th><th>reason</th></tr></thead><tbody>");
    for (notes, pill) in [
        (&scan.skipped, "<span class=\"pill aborted\">skipped</span>"),
        (&scan.failed, "<span class=\"pill bad\">failed</span>"),
    ] {
        for n in notes.iter().take(TABLE_CAP) {
            w!(
                h,
                "<tr><td>{}</td><td>{pill}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                esc(&n.fault),
                esc(&fmt_t(n.t_ms)),
                esc(&n.why)
            );
        }
    }
    h.push_str("</tbody></table>\n");
}

/// Planned faults the history never mentions: the run ended (or stopped) first.
fn unseen_note(h: &mut String, scan: &Scan, plan: &Plan) {
    let mut seen: BTreeSet<&str> = scan.faults.iter().map(|f| f.name.as_str()).collect();
    seen.extend(scan.skipped.iter().map(|n| n.fault.as_str()));
    seen.extend(scan.failed.iter().map(|n| n.fault.as_str()));
    let unseen: Vec<&str> = plan
        .faults
        .iter()
        .map(|f| f.name.as_str())
        .filter(|n| !seen.contains(n))
        .collect();
    if unseen.is_empty() {
        return;
    }
    let shown: Vec<String> = unseen.iter().take(50).map(|n| esc(n)).collect();
    w!(
        h,
        "<p class=\"note\">Planned but not in the history ({}): {}{}</p>",
        unseen.len(),
        shown.join(", "),
        if unseen.len() > 50 { ", ..." } else { "" }
    );
}
