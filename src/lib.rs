//! pulsar-chaos: proves or disproves exactly-once delivery of Apache Pulsar's transactional
//! producer under chaos. See ARCHITECTURE.md for the map.

pub use pulsar_chaos_core::{
    brokerlog, checker, clients, exit, matrix, plan, policy, readlog, regress, results, stall,
    txnlog, versions,
};

/// `println!` on standard output that never panics: see [`term::out`].
#[macro_export]
macro_rules! outln {
    () => {
        $crate::term::out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::term::out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` on standard error that never panics: see [`term::out`].
#[macro_export]
macro_rules! errln {
    () => {
        $crate::term::err(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::term::err(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` on standard error that never panics: see [`term::out`].
#[macro_export]
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::term::err(format_args!($($arg)*))
    };
}

/// `print!` on standard output that never panics: see [`term::out`].
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::term::out(format_args!($($arg)*))
    };
}

pub mod adapter;
pub mod admin;
pub mod backoff;
pub mod cli;
pub mod cluster;
pub mod commands;
pub mod discovery;
pub mod drivers;
pub mod error;
pub mod history;
pub mod journal;
pub mod lifecycle;
pub mod lock;
pub mod nemesis;
pub mod progress;
pub mod readback;
pub mod ready;
pub mod report;
pub mod rundir;
pub mod runner;
pub mod scenario;
pub mod seed;
pub mod shrink;
pub mod store;
pub mod stuck;

/// Test scratch directories (removed on success, kept on failure); shared with tests/.
#[cfg(test)]
#[path = "../tests/support/scratch.rs"]
pub(crate) mod scratch;
pub mod term;
pub mod transform;
pub mod txn;
pub mod workload;
