//! pulsar-chaos: proves or disproves exactly-once delivery of Apache Pulsar's transactional
//! producer under chaos. See ARCHITECTURE.md for the map.

pub mod admin;
pub mod brokerlog;
pub mod checker;
pub mod cli;
pub mod cluster;
pub mod commands;
pub mod error;
pub mod exit;
pub mod history;
pub mod journal;
pub mod lifecycle;
pub mod matrix;
pub mod nemesis;
pub mod plan;
pub mod policy;
pub mod progress;
pub mod readback;
pub mod readlog;
pub mod ready;
pub mod report;
pub mod rundir;
pub mod runner;
pub mod scenario;
pub mod seed;
pub mod stall;
pub mod txn;
pub mod versions;
pub mod workload;
