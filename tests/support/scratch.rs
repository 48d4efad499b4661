//! A test's scratch directory: removed when the test passes, kept (and its path printed) when
//! it fails, so a failed run's directory can be read afterwards. Shared by the unit tests
//! (`src/scratch.rs` includes this file) and the integration tests.

use std::ops::Deref;
use std::path::{Path, PathBuf};

/// A fresh directory named `<prefix>-<random>` under `parent`.
pub struct Scratch {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
}

impl Scratch {
    #[allow(dead_code)]
    pub fn new_in(parent: &Path, prefix: &str) -> Scratch {
        std::fs::create_dir_all(parent).unwrap();
        let dir = tempfile::Builder::new()
            .prefix(&format!("{prefix}-"))
            .tempdir_in(parent)
            .unwrap();
        let path = dir.path().to_path_buf();
        Scratch {
            dir: Some(dir),
            path,
        }
    }

    /// Under the system's temporary directory.
    #[allow(dead_code)] // each crate that includes this file uses its own subset
    pub fn new(prefix: &str) -> Scratch {
        Scratch::new_in(&std::env::temp_dir(), prefix)
    }
}

impl Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            if let Some(dir) = self.dir.take() {
                let kept = dir.keep();
                eprintln!("scratch directory kept: {}", kept.display());
            }
        }
    }
}

#[cfg(test)]
mod scratch_tests {
    use super::*;

    #[test]
    fn a_scratch_directory_is_removed_on_success_and_kept_on_failure() {
        let kept = std::thread::spawn(|| {
            let s = Scratch::new("pc-scratch-kept");
            std::panic::panic_any(s.to_path_buf())
        })
        .join()
        .unwrap_err()
        .downcast::<PathBuf>()
        .unwrap();
        assert!(kept.is_dir(), "{}", kept.display());
        std::fs::remove_dir_all(&*kept).unwrap();
        let s = Scratch::new("pc-scratch-removed");
        let path = s.to_path_buf();
        assert!(path.is_dir());
        drop(s);
        assert!(!path.exists(), "{}", path.display());
    }
}
