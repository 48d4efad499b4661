//! The section of `report.html` on Pulsar's own exits: the nodes that exited while no fault of
//! the harness held them down (`node_exited`), each with its exit code, its last log lines and
//! what the supervisor's restart came to (`node_restarted`). Placed right after the faults: an
//! own exit hurts the run like a fault, but it is Pulsar's, not the plan's.

use std::fmt::Write as _;

use super::fmt::{esc, fmt_dur, fmt_t};
use super::scan::{OwnExit, Scan};
use super::TABLE_CAP;

/// The section; nothing when no node exited on its own.
pub(super) fn exits_section(h: &mut String, scan: &Scan) {
    if scan.exits.is_empty() {
        return;
    }
    h.push_str("<h2 id=\"own-exits\">Pulsar's own exits</h2>\n");
    w!(
        h,
        "<p class=\"note\">{} time(s) a node exited while no fault of the harness held it down (for example a broker whose ZooKeeper session expired: Pulsar shuts it down by design). The harness started it again, as a supervisor (Kubernetes, systemd) would in production, and waited until it served.</p>",
        scan.exits.len()
    );
    h.push_str("<table><thead><tr><th>node</th><th class=\"num\">exited</th><th>exit</th><th>restart</th><th>last log lines</th></tr></thead><tbody>");
    for e in scan.exits.iter().take(TABLE_CAP) {
        w!(
            h,
            "<tr><td>{}<br><code>{}</code></td><td class=\"num\">{}</td><td>{}</td><td class=\"wrap\">{}</td><td class=\"wrap\">{}</td></tr>",
            esc(&e.node),
            esc(&e.container),
            esc(&fmt_t(e.t_ms)),
            exit_text(e),
            restart_html(e),
            log_html(&e.log)
        );
    }
    h.push_str("</tbody></table>\n");
}

/// "exit code 1", "exit code 137, OOM-killed", "unknown".
fn exit_text(e: &OwnExit) -> String {
    let code = match e.exit_code {
        Some(c) => format!("exit code {c}"),
        None => "exit code unknown".into(),
    };
    if e.oom_killed {
        format!("{code}, OOM-killed")
    } else {
        code
    }
}

fn restart_html(e: &OwnExit) -> String {
    match &e.restarted {
        Some((t, true, ready_ms, detail)) => format!(
            "<span class=\"pill ok\">serving again</span> at {} ({} after the start)<br>{}",
            esc(&fmt_t(*t)),
            esc(&fmt_dur(*ready_ms)),
            esc(detail)
        ),
        Some((t, false, _, detail)) => format!(
            "<span class=\"pill bad\">not serving</span> at {}<br>{}",
            esc(&fmt_t(*t)),
            esc(detail)
        ),
        None => "<span class=\"pill warn\">no restart recorded</span>".into(),
    }
}

fn log_html(log: &[String]) -> String {
    if log.is_empty() {
        return "-".into();
    }
    let mut s = String::from("<pre class=\"log\">");
    for l in log {
        w!(s, "<span>{}</span>", esc(l));
    }
    s.push_str("</pre>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::EventBody;

    fn exited(node: &str, code: i64, log: &[&str]) -> EventBody {
        EventBody::NodeExited {
            node: node.into(),
            container: format!("pc-r-{node}"),
            exit_code: Some(code),
            oom_killed: false,
            log: log.iter().map(|l| l.to_string()).collect(),
        }
    }

    #[test]
    fn an_own_exit_is_listed_with_its_restart_and_its_escaped_log_lines() {
        let mut scan = Scan::default();
        scan.add(
            12_000,
            exited(
                "broker-2",
                1,
                &["ZooKeeper session expired", "<shutting down> & bye"],
            ),
        );
        scan.add(
            19_500,
            EventBody::NodeRestarted {
                node: "broker-2".into(),
                ok: true,
                ready_ms: 7_400,
                detail: "docker start pc-r-broker-2".into(),
            },
        );
        scan.add(30_000, exited("bookie-1", 137, &[]));
        let mut h = String::new();
        exits_section(&mut h, &scan);
        assert!(
            h.contains("<h2 id=\"own-exits\">Pulsar's own exits</h2>"),
            "{h}"
        );
        assert!(h.contains("2 time(s) a node exited"), "{h}");
        assert!(
            h.contains("exit code 1") && h.contains("exit code 137"),
            "{h}"
        );
        assert!(
            h.contains("<span>&lt;shutting down&gt; &amp; bye</span>"),
            "{h}"
        );
        assert!(
            h.contains("<span class=\"pill ok\">serving again</span>"),
            "{h}"
        );
        assert!(h.contains("no restart recorded"), "{h}");
    }

    #[test]
    fn a_run_without_an_own_exit_has_no_section() {
        let mut h = String::new();
        exits_section(&mut h, &Scan::default());
        assert!(h.is_empty());
    }
}
