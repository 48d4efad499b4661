//! pulsar-chaos: proves or disproves exactly-once delivery of Apache Pulsar's transactional
//! producer under chaos. See ARCHITECTURE.md for the map.

pub mod checker;
pub mod exit;
pub mod history;
pub mod plan;
pub mod scenario;
pub mod seed;
