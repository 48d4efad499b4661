//! Integration tests: the command line, and end-to-end runs against a real Pulsar in Docker.
//! Each Docker test makes its own cluster (its own run id, free ports) and removes it.

#[path = "../support/bin.rs"]
mod bin;
mod common;
#[path = "../support/scratch.rs"]
mod scratch;

mod cli;
mod clients;
mod cluster;
mod consume;
mod durability;
mod external;
mod faults;
mod faults_fired;
mod findings;
mod produce;
mod readback;
mod recheck;
mod replyloss;
mod shrink;
mod soak;
mod stuck;
mod supervisor;
mod transform;
mod transform_resume;
mod versions;
