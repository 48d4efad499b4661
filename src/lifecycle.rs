//! Cleanup on Ctrl-C and SIGTERM: what is active is registered here, and a signal heals its
//! faults and removes its containers and networks (unless the cluster is to be kept) before
//! the process exits. Normal success and error paths clean up on their own and deregister.

use std::sync::Mutex;

use crate::cluster::{self, engine::Engine};

static STOP: std::sync::OnceLock<tokio::sync::watch::Sender<bool>> = std::sync::OnceLock::new();

fn stop_sender() -> &'static tokio::sync::watch::Sender<bool> {
    STOP.get_or_init(|| tokio::sync::watch::channel(false).0)
}

/// Ask everything running to stop (heal, tear down, return): the first step after a signal.
pub fn request_stop() {
    stop_sender().send_replace(true);
}

/// Becomes true when a stop was requested.
pub fn stopping() -> tokio::sync::watch::Receiver<bool> {
    stop_sender().subscribe()
}

pub fn is_stopping() -> bool {
    *stop_sender().borrow()
}

/// Active runs: (run id, keep the cluster).
static ACTIVE_RUNS: Mutex<Vec<(String, bool)>> = Mutex::new(Vec::new());

/// Registers a run whose faults must be healed, and whose cluster must go unless it is to be
/// kept, if the process is interrupted.
pub struct RunGuard {
    run_id: String,
}

impl RunGuard {
    pub fn new(run_id: &str) -> RunGuard {
        RunGuard::with_keep(run_id, false)
    }

    pub fn with_keep(run_id: &str, keep: bool) -> RunGuard {
        ACTIVE_RUNS
            .lock()
            .expect("lock")
            .push((run_id.to_string(), keep));
        RunGuard {
            run_id: run_id.to_string(),
        }
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        ACTIVE_RUNS
            .lock()
            .expect("lock")
            .retain(|(r, _)| r != &self.run_id);
    }
}

/// How long a command may take to stop on its own after a signal before the remaining cleanup
/// is done for it.
pub const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// Waits for Ctrl-C or SIGTERM, or for standard output to close (its reader is gone:
/// `run … | head`); returns the signal's name, or "output closed".
pub async fn signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => return "SIGINT",
                () = crate::term::stdout_gone() => return "output closed",
            }
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = term.recv() => "SIGTERM",
        () = crate::term::stdout_gone() => "output closed",
    }
}

/// Heal and remove everything registered. Called once, after a signal.
pub async fn cleanup_after_signal() {
    let runs: Vec<(String, bool)> = ACTIVE_RUNS.lock().expect("lock").clone();
    if runs.is_empty() {
        return;
    }
    let engine = match Engine::connect().await {
        Ok(e) => Some(e),
        Err(e) => {
            // An exec adapter's faults heal without Docker.
            crate::errln!("cleanup: {e}; run `pulsar-chaos clean` later for Docker's part");
            None
        }
    };
    for (run, keep) in runs {
        crate::nemesis::heal_run(engine.as_ref(), &run).await;
        let Some(engine) = &engine else { continue };
        if keep {
            crate::errln!(
                "cleanup: run {run}: faults healed; the cluster is kept (--keep-cluster)"
            );
            continue;
        }
        match cluster::remove_run(engine, &run).await {
            Ok(r) => crate::errln!(
                "cleanup: removed run {run}: {} container(s), {} network(s)",
                r.containers.len(),
                r.networks.len()
            ),
            Err(e) => crate::errln!("cleanup of run {run} failed: {e}; run `pulsar-chaos clean`"),
        }
    }
}
