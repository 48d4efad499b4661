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
        if writeln!(err, "{line}").is_err() {
            gone();
        }
    });
}

/// Set once standard output or standard error is gone (a reader that stopped reading:
/// `run … | head`, `run … 2>&1 | head`).
static STDOUT_GONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Wakes [`stdout_gone`] when standard output goes.
static STDOUT_GONE_NOTIFY: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Print on standard output, above the status line when one is drawn; what `outln!` and
/// `out!` call (`errln!` and `err!` call [`err`], its twin on standard error). A write that
/// fails (the reader closed the pipe) is not a panic, as `println!`'s is: output is dropped
/// from then on and [`stdout_gone`] fires, so the command stops as after Ctrl-C (faults
/// healed, what it created removed) instead of dying with its cluster left behind.
pub fn out(args: std::fmt::Arguments<'_>) {
    put(|| std::io::stdout().lock(), args);
}

/// [`out`] on standard error.
pub fn err(args: std::fmt::Arguments<'_>) {
    put(|| std::io::stderr().lock(), args);
}

fn put<W: Write>(lock: impl FnOnce() -> W, args: std::fmt::Arguments<'_>) {
    if STDOUT_GONE.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let failed = above(|| {
        let mut w = lock();
        w.write_fmt(args).and_then(|()| w.flush()).is_err()
    });
    if failed {
        gone();
    }
}

fn gone() {
    if !STDOUT_GONE.swap(true, std::sync::atomic::Ordering::Relaxed) {
        STDOUT_GONE_NOTIFY.notify_waiters();
        STDOUT_GONE_NOTIFY.notify_one();
    }
}

/// Completes once standard output or standard error is gone.
pub async fn stdout_gone() {
    loop {
        let notified = STDOUT_GONE_NOTIFY.notified();
        if STDOUT_GONE.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        notified.await;
    }
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

#[cfg(test)]
mod stdout_tests {
    /// `println!`, `print!`, `eprintln!` and `eprint!` panic when their stream is a closed
    /// pipe, and a panic skips the run's cleanup: `src/` prints through `outln!`, `out!`,
    /// `errln!` and `err!` only .
    #[test]
    fn nothing_in_src_prints_through_println() {
        fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, found);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    for (i, line) in text.lines().enumerate() {
                        let code = line.split("//").next().unwrap_or_default();
                        for m in ["println!(", "print!(", "eprintln!(", "eprint!("] {
                            for (at, _) in code.match_indices(m) {
                                let before = code[..at].chars().last();
                                if !before.is_some_and(|c| {
                                    matches!(c, ':' | '"' | '_') || c.is_alphanumeric()
                                }) {
                                    found.push(format!(
                                        "{}:{}: {}",
                                        p.display(),
                                        i + 1,
                                        line.trim()
                                    ));
                                }
                            }
                        }
                    }
                }
            }
        }
        let mut found = Vec::new();
        walk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut found,
        );
        assert!(found.is_empty(), "use outln!/out!:\n{}", found.join("\n"));
    }
}
