//! A cgroup without real-time budget, for the tests of the fallback to normal priority.

use std::path::{Path, PathBuf};

/// A cgroup v1 `cpu` group made for a test, with no real-time budget (`cpu.rt_runtime_us` 0, as
/// every new group has); its processes are moved out and it is removed on drop.
pub struct NoRealtimeGroup {
    pub dir: PathBuf,
}

impl NoRealtimeGroup {
    pub const ROOT: &'static str = "/sys/fs/cgroup/cpu";

    /// `None` where the kernel has no cgroup v1 `cpu` controller with real-time budgets.
    pub fn make(tag: &str) -> Option<NoRealtimeGroup> {
        let root = Path::new(Self::ROOT);
        if !root.join("cpu.rt_runtime_us").exists() {
            return None;
        }
        let dir = root.join(format!("netloom-test-{tag}-{}", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        let group = NoRealtimeGroup { dir };
        std::fs::write(group.dir.join("cpu.rt_runtime_us"), "0").unwrap();
        Some(group)
    }
}

impl Drop for NoRealtimeGroup {
    fn drop(&mut self) {
        let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines() {
            let _ = std::fs::write(Path::new(Self::ROOT).join("cgroup.procs"), pid);
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}
