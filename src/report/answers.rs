//! The "What each error meant" section: per error class the client answered on a commit or a
//! send, how many of those transactions the evidence found committed, aborted, or could not
//! tell (`checker::client_answers`; docs/grading.md, "What each error meant").

use std::fmt::Write as _;

use super::fmt::{esc, fmt_n};
use crate::checker::Verdict;

/// Nothing when the history holds no failed answer.
pub(super) fn answers_section(h: &mut String, v: &Verdict) {
    let Some(t) = v.client_answers.as_ref().filter(|t| !t.rows.is_empty()) else {
        return;
    };
    h.push_str("<h2 id=\"client-answers\">What each error meant</h2>\n");
    w!(
        h,
        "<p>The {} client's failed answers, per operation and error class: the transactions that got one, and what the evidence (a later answer, a resolution, the read-back's copies of their numbers) found became of them. Committed after an error on <code>commit</code> is what a naive resend duplicates.</p>\n",
        esc(&t.client)
    );
    h.push_str("<table class=\"client-answers\"><thead><tr><th>operation</th><th>error class</th><th class=\"num\">transactions</th><th class=\"num\">committed</th><th class=\"num\">aborted</th><th class=\"num\">unknown</th></tr></thead><tbody>");
    for r in &t.rows {
        w!(
            h,
            "<tr><td>{}</td><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(&r.op),
            esc(&r.class),
            fmt_n(r.transactions),
            fmt_n(r.committed),
            fmt_n(r.aborted),
            fmt_n(r.unknown)
        );
    }
    h.push_str("</tbody></table>\n");
}
