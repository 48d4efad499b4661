/// A fresh scratch directory for a test (shared with the submodules' tests).
pub(super) fn scratch(name: &str) -> crate::scratch::Scratch {
    crate::scratch::Scratch::new(&format!("pc-runner-{name}"))
}
