//! Text for people: counts with thousands separators, durations, offsets into the run,
//! wall-clock times in UTC, number ranges and outcomes, and [`esc`], the escaping that every
//! piece of outside text goes through before it enters a page. Pure functions, no markup
//! beyond `<code>` around ranges.

use std::time::{Duration, UNIX_EPOCH};

use crate::checker::Span;
use crate::history::Outcome;

/// `s` escaped for HTML text and for attribute values in double quotes.
pub(super) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// 1234567 -> "1,234,567".
pub(super) fn fmt_n(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration for people: "850 ms", "12.3 s", "4 min 05 s", "2 h 03 min".
pub(super) fn fmt_dur(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else if ms < 3_600_000 {
        format!("{} min {:02} s", ms / 60_000, (ms / 1000) % 60)
    } else {
        format!("{} h {:02} min", ms / 3_600_000, (ms / 60_000) % 60)
    }
}

/// An offset since the start of the run, in seconds.
pub(super) fn fmt_t(ms: u64) -> String {
    format!("{:.3} s", ms as f64 / 1000.0)
}

/// Unix milliseconds as "2026-11-30 00:53:20 UTC" (RFC 3339 by `humantime`, with a space
/// for the `T` and "UTC" for the `Z`). A time past the year 9999, which RFC 3339 cannot
/// write, is given in milliseconds since the epoch.
pub(super) fn fmt_utc(unix_ms: u64) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    match UNIX_EPOCH.checked_add(Duration::from_millis(unix_ms)) {
        Some(t) if write!(s, "{}", humantime::format_rfc3339_seconds(t)).is_ok() => {
            s.replacen('T', " ", 1).replacen('Z', " UTC", 1)
        }
        _ => format!("{unix_ms} ms after 1970-01-01 00:00:00 UTC"),
    }
}

/// Number ranges `[a, b)` as text, the first `cap` of them.
pub(super) fn fmt_ranges(r: &[(u64, u64)], cap: usize) -> String {
    ranges(r, cap, |span| span.to_string())
}

/// Number ranges as HTML, one unbreakable `<code>` each, the first `cap` of them.
pub(super) fn ranges_html(r: &[(u64, u64)], cap: usize) -> String {
    ranges(r, cap, |span| {
        format!("<code>{}</code>", esc(&span.to_string()))
    })
}

fn ranges(r: &[(u64, u64)], cap: usize, show: impl Fn(Span) -> String) -> String {
    let mut parts: Vec<String> = r
        .iter()
        .take(cap)
        .map(|(start, end)| {
            show(Span {
                start: *start,
                end: *end,
            })
        })
        .collect();
    if r.len() > cap {
        parts.push(format!("and {} more", r.len() - cap));
    }
    parts.join(", ")
}

/// What the producer learned of an attempt, in words.
pub(super) fn fmt_outcome(o: Option<Outcome>) -> &'static str {
    match o {
        Some(Outcome::Committed) => "committed",
        Some(Outcome::Aborted) => "aborted",
        Some(Outcome::Ambiguous) => "ambiguous",
        None => "never learned",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_times_are_civil_dates() {
        assert_eq!(fmt_utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(fmt_utc(1_796_000_000_000), "2026-11-30 00:53:20 UTC");
        // A leap day, and the milliseconds dropped rather than rounded.
        assert_eq!(fmt_utc(1_709_251_199_999), "2024-02-29 23:59:59 UTC");
        assert_eq!(fmt_utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(fmt_utc(253_402_300_799_000), "9999-12-31 23:59:59 UTC");
        assert_eq!(
            fmt_utc(253_402_300_800_000),
            "253402300800000 ms after 1970-01-01 00:00:00 UTC"
        );
        assert!(fmt_utc(u64::MAX).ends_with(" ms after 1970-01-01 00:00:00 UTC"));
    }

    #[test]
    fn counts_durations_and_ranges_read_as_words() {
        assert_eq!(fmt_n(0), "0");
        assert_eq!(fmt_n(999), "999");
        assert_eq!(fmt_n(1_234_567), "1,234,567");
        assert_eq!(fmt_dur(850), "850 ms");
        assert_eq!(fmt_dur(12_345), "12.3 s");
        assert_eq!(fmt_dur(245_000), "4 min 05 s");
        assert_eq!(fmt_dur(7_380_000), "2 h 03 min");
        assert_eq!(fmt_t(1500), "1.500 s");
        let r = [(0, 10), (20, 21), (30, 40)];
        assert_eq!(fmt_ranges(&r, 2), "[0, 10), 20, and 1 more");
        assert_eq!(
            ranges_html(&r[..1], 5),
            "<code>[0, 10)</code>",
            "one <code> per range"
        );
        assert_eq!(
            esc("<a href=\"x\">&</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;"
        );
    }
}
