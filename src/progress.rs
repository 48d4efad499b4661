//! Live progress of a run: on a terminal a status line that redraws itself (indicatif, cut to
//! the terminal's width; other output goes above it through `term`), elsewhere a plain log
//! line every few seconds (no control codes).

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use crate::history::History;
use crate::workload::Stats;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Auto,
    Bar,
    Plain,
    None,
}

pub struct Progress {
    task: Option<tokio::task::JoinHandle<()>>,
    stop: Arc<tokio::sync::Notify>,
}

/// One status line (shared by both displays).
pub fn line(
    stats: &Stats,
    active: &[String],
    messages: u64,
    elapsed: Duration,
    deadline: Duration,
    rate: f64,
) -> String {
    let s = stats.snapshot();
    let fault = if active.is_empty() {
        "none".to_string()
    } else {
        active.join(", ")
    };
    format!(
        "{:>5}s  committed {} txns / {} of {} msgs ({:.0} msg/s)  aborted {}  ambiguous {}  in commit {}  fault: {}  deadline in {}s",
        elapsed.as_secs(),
        s.committed,
        s.messages_committed,
        messages,
        rate,
        s.aborted,
        s.ambiguous,
        s.commits_in_flight.max(0),
        fault,
        deadline.saturating_sub(elapsed).as_secs()
    )
}

/// The status line: the message alone, cut to the terminal's width (a line wider than the
/// terminal would wrap, and the redraw would then clear only its last row).
fn status_bar(target: indicatif::ProgressDrawTarget) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(None, target);
    if let Ok(style) = indicatif::ProgressStyle::with_template("{wide_msg}") {
        bar.set_style(style);
    }
    bar
}

impl Progress {
    pub fn start(
        mode: Mode,
        stats: Arc<Stats>,
        active: Arc<Mutex<Vec<String>>>,
        messages: u64,
        deadline: Duration,
        _history: History,
    ) -> Progress {
        let stop = Arc::new(tokio::sync::Notify::new());
        let tty = std::io::stderr().is_terminal();
        let mode = match mode {
            Mode::Auto if tty => Mode::Bar,
            Mode::Auto => Mode::Plain,
            m => m,
        };
        if mode == Mode::None {
            return Progress { task: None, stop };
        }
        let every = if mode == Mode::Bar {
            Duration::from_millis(500)
        } else {
            Duration::from_secs(5)
        };
        let bar = (mode == Mode::Bar).then(|| {
            let bar = status_bar(indicatif::ProgressDrawTarget::stderr_with_hz(4));
            crate::term::hold(bar.clone());
            bar
        });
        let s = stop.clone();
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let mut last = (Instant::now(), 0u64);
            loop {
                tokio::select! {
                    _ = s.notified() => break,
                    _ = tokio::time::sleep(every) => {}
                }
                let now = Instant::now();
                let committed = stats
                    .messages_committed
                    .load(std::sync::atomic::Ordering::Relaxed);
                let rate = (committed.saturating_sub(last.1)) as f64
                    / now.duration_since(last.0).as_secs_f64().max(0.001);
                last = (now, committed);
                let a = active.lock().await.clone();
                let text = line(&stats, &a, messages, started.elapsed(), deadline, rate);
                match &bar {
                    Some(bar) => bar.set_message(text),
                    None => crate::term::say(&format!("progress: {text}")),
                }
            }
            if bar.is_some() {
                crate::term::release();
            }
        });
        Progress {
            task: Some(task),
            stop,
        }
    }

    pub async fn stop(self) {
        self.stop.notify_one();
        if let Some(t) = self.task {
            let _ = t.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indicatif::{InMemoryTerm, ProgressDrawTarget, TermLike};

    #[test]
    fn a_status_line_wider_than_the_terminal_is_cut_to_one_row() {
        let term = InMemoryTerm::new(10, 80);
        let bar = status_bar(ProgressDrawTarget::term_like(Box::new(term.clone())));
        let text = format!("{}end", "x".repeat(130));
        bar.set_message(text.clone());
        bar.tick();
        let shown = term.contents();
        assert_eq!(shown.lines().count(), 1, "{shown:?}");
        assert!(shown.len() <= 80 && shown.starts_with("xxxx"), "{shown:?}");
        // A line printed meanwhile goes above it, and the status line comes back below.
        bar.suspend(|| term.write_line("heal: broker-1").unwrap());
        bar.set_message("short".to_string());
        bar.tick();
        let shown = term.contents();
        assert_eq!(
            shown.lines().collect::<Vec<_>>(),
            ["heal: broker-1", "short"],
            "{shown:?}"
        );
    }
}
