//! Live progress of a run: on a terminal a status line that redraws itself, elsewhere a plain
//! log line every few seconds (no control codes).

use std::io::{IsTerminal, Write};
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
                let mut err = std::io::stderr().lock();
                if mode == Mode::Bar {
                    let _ = write!(err, "\r\x1b[2K{text}");
                } else {
                    let _ = writeln!(err, "progress: {text}");
                }
                let _ = err.flush();
            }
            if mode == Mode::Bar {
                let _ = write!(std::io::stderr(), "\r\x1b[2K");
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
