//! The pure core of pulsar-chaos: everything that decides, and nothing that acts.
//!
//! The scenario model and its validation, the seed and the plan drawn from it, the history's
//! event types, the resend policy, the checker and its grading, the stall and broker-log
//! rules, the version matrix. None of it depends on Docker, tokio, the network or the clock:
//! this crate's dependencies are the proof (see ARCHITECTURE.md, "Invariants"), and
//! `crates/core/clippy.toml` forbids reading the clock or the file system.

pub mod adapter;
pub mod brokerlog;
pub mod checker;
pub mod clients;
pub mod exit;
pub mod history;
pub mod matrix;
pub mod plan;
pub mod policy;
pub mod readlog;
pub mod regress;
pub mod results;
pub mod scenario;
pub mod seed;
pub mod shrink;
pub mod stall;
pub mod stuck;
pub mod txnlog;
pub mod versions;
