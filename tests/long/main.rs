//! The long tests: runs against a real Pulsar whose outcome depends on a race, so they are
//! judged by a rate over several runs, and take minutes. Not part of `cargo test` (or CI);
//! run them with `cargo build --release && cargo test --release --test long -- --test-threads=1`
//! (README, "Long tests": `--test long` alone does not build the binary they run).
//! They share the integration tests' helpers.

#[allow(dead_code)]
#[path = "../support/bin.rs"]
mod bin;
#[path = "../it/common.rs"]
mod common;
#[allow(dead_code)]
#[path = "../support/scratch.rs"]
mod scratch;

mod findings;
