//! The binary the integration tests run and the repository's files, for every test crate of
//! this package.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// The release binary every test runs: `target/release/pulsar-chaos`, beside the directory this
/// test executable is in (`target/release/deps`). It lives in another package, so cargo does
/// not build it for this one: `cargo test --release` from the root does (the root's `examples`
/// test needs it), and the first use here refuses a binary older than the harness's sources
/// rather than test a stale one.
/// `PULSAR_CHAOS_TEST_BIN` names another binary (bench/it-times.sh runs a copy of the test
/// executable from elsewhere).
pub static BIN: LazyLock<PathBuf> = LazyLock::new(|| {
    let bin = match std::env::var_os("PULSAR_CHAOS_TEST_BIN") {
        Some(b) => PathBuf::from(b),
        None => std::env::current_exe()
            .expect("the test executable's path")
            .parent()
            .and_then(Path::parent)
            .expect("the test executable is in <target>/<profile>/deps")
            .join("pulsar-chaos"),
    };
    let built = std::fs::metadata(&bin)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| {
            panic!(
                "{} is not there ({e}): run `cargo build --release` or the README's test command",
                bin.display()
            )
        });
    if let Some(newer) = newer_source(&repo(""), built) {
        panic!(
            "{} is older than {}: run `cargo build --release` or the README's test command",
            bin.display(),
            newer.display()
        );
    }
    bin
});

/// A Rust source of the harness (under `src/` or `crates/core/src/`) changed after `built`, if
/// any. Manifests are not looked at: an edit cargo does not rebuild for (a comment, a new
/// workspace member) would condemn a fresh binary for good.
pub fn newer_source(root: &Path, built: std::time::SystemTime) -> Option<PathBuf> {
    fn walk(dir: &Path, built: std::time::SystemTime) -> Option<PathBuf> {
        for e in std::fs::read_dir(dir).ok()?.flatten() {
            let p = e.path();
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                if let Some(n) = walk(&p, built) {
                    return Some(n);
                }
            } else if p.extension().is_some_and(|x| x == "rs")
                && m.modified().is_ok_and(|t| t > built)
            {
                return Some(p);
            }
        }
        None
    }
    walk(&root.join("src"), built).or_else(|| walk(&root.join("crates/core/src"), built))
}

/// A file of the repository, by its path from the root (this package is its `tests/`).
pub fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
        .join(path)
}
