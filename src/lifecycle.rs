//! Cleanup on Ctrl-C and SIGTERM: what is active is registered here, and a signal removes it
//! (heals faults first, then removes the run's containers and networks) before the process
//! exits. Normal success and error paths clean up on their own and deregister.

use std::sync::Mutex;

use crate::cluster::{self, engine::Engine};

static ACTIVE_RUNS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Registers a run whose cluster must go if the process is interrupted.
pub struct RunGuard {
    run_id: String,
}

impl RunGuard {
    pub fn new(run_id: &str) -> RunGuard {
        ACTIVE_RUNS.lock().expect("lock").push(run_id.to_string());
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
            .retain(|r| r != &self.run_id);
    }
}

/// Waits for Ctrl-C or SIGTERM; returns the signal's name.
pub async fn signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return "SIGINT";
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    }
}

/// Heal and remove everything registered. Called once, after a signal.
pub async fn cleanup_after_signal() {
    let runs: Vec<String> = ACTIVE_RUNS.lock().expect("lock").clone();
    if runs.is_empty() {
        return;
    }
    let engine = match Engine::connect().await {
        Ok(e) => e,
        Err(e) => {
            eprintln!("cleanup: {e}; run `pulsar-chaos clean` later");
            return;
        }
    };
    for run in runs {
        crate::nemesis::heal_run(&engine, &run).await;
        match cluster::remove_run(&engine, &run).await {
            Ok(r) => eprintln!(
                "cleanup: removed run {run}: {} container(s), {} network(s)",
                r.containers.len(),
                r.networks.len()
            ),
            Err(e) => eprintln!("cleanup of run {run} failed: {e}; run `pulsar-chaos clean`"),
        }
    }
}
