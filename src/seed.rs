//! Seeds: the streams and derivations are the core crate's (`pulsar_chaos_core::seed`); a
//! fresh seed's entropy (the clock and the process id) is gathered here.

pub use pulsar_chaos_core::seed::*;

/// Entropy for what must differ between runs: the clock and the process id.
pub fn entropy() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// A fresh seed for a run that names none. The caller prints it, so the run can be
/// reproduced.
pub fn fresh() -> u64 {
    fresh_seed(entropy())
}

/// The seed given (on the command line, else the scenario's), or a fresh one announced on
/// standard error: `run` and `plan` choose alike, so `plan` shows a plan `run` will execute.
pub fn given_or_drawn(given: Option<u64>) -> u64 {
    match given {
        Some(x) => x,
        None => {
            let x = fresh();
            crate::errln!("no seed given: drew {x}");
            x
        }
    }
}
