//! An exclusive lock on a file, shared by the builds that several processes may start at once
//! (an image, a driver): the first builds, the others wait and find its result.

use std::path::Path;

/// An exclusive lock on `path` (created if absent), held until the file is dropped. Waits,
/// off the runtime's threads, while another process holds it: a build shared by concurrent
/// runs (an image, a driver) happens once and the others find its result.
pub async fn exclusive(path: &Path) -> Result<std::fs::File, String> {
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    tokio::task::spawn_blocking(move || {
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive).map(|()| file)
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| format!("lock {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression guard for concurrent builds (they share the cache's staging directory): the
    /// lock excludes every other holder until it is dropped.
    #[tokio::test]
    async fn a_build_lock_excludes_others_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("build.lock");
        let held = exclusive(&path).await.unwrap();
        let other = std::fs::File::open(&path).unwrap();
        let try_lock = |f: &std::fs::File| {
            rustix::fs::flock(f, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        };
        assert_eq!(try_lock(&other), Err(rustix::io::Errno::WOULDBLOCK));
        drop(held);
        assert_eq!(try_lock(&other), Ok(()));
        rustix::fs::flock(&other, rustix::fs::FlockOperation::Unlock).unwrap();
        // Taken again by the next builder.
        let _again = exclusive(&path).await.unwrap();
        assert_eq!(try_lock(&other), Err(rustix::io::Errno::WOULDBLOCK));
    }
}
