//! The terminal's standard error, shared by the live status line and everything else that
//! prints while a run is in progress. While a status line is drawn, a line printed through
//! [`say`] or the tracing writer ([`Stderr`]) clears it, prints, and lets it redraw, so log
//! lines and the status line never trample each other.

use std::io::Write;
use std::sync::Mutex;

use indicatif::ProgressBar;

/// The status line being drawn, if any (at most one at a time: one run per process).
static BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Draw `bar` as the status line until [`release`].
pub fn hold(bar: ProgressBar) {
    *BAR.lock().unwrap_or_else(|e| e.into_inner()) = Some(bar);
}

/// Stop drawing the status line and clear it.
pub fn release() {
    if let Some(bar) = BAR.lock().unwrap_or_else(|e| e.into_inner()).take() {
        bar.finish_and_clear();
    }
}

/// Run `f` with the status line (if any) cleared from the screen.
fn above<R>(f: impl FnOnce() -> R) -> R {
    let bar = BAR.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match bar {
        Some(bar) => bar.suspend(f),
        None => f(),
    }
}

/// Print one line on standard error, above the status line when one is drawn.
pub fn say(line: &str) {
    above(|| {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}");
    });
}

/// Standard error for the tracing subscriber: each write goes above the status line.
pub struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        above(|| std::io::stderr().lock().write_all(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Stderr {
    type Writer = Stderr;

    fn make_writer(&'a self) -> Stderr {
        Stderr
    }
}
