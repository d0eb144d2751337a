//! Shared by the tests: the skip check, a per-process registry directory, unique names, a guard
//! that removes namespaces by name even when a test fails half-way, and the signal handlers' lock.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// Held by each test that waits in the foreground (`wait_in_foreground`, `exec`) for the whole
/// wait: the wait installs the process's handlers for the stop signals and passes what they catch
/// to its one child, so two waits at once would take each other's handlers and signals.
pub static SIGNAL_HANDLERS: Mutex<()> = Mutex::new(());

/// Whether these tests can run here; prints why not. Also points NETLOOM_RUN_DIR at a directory
/// of this test process, so tests never see or touch real experiments' registry entries.
pub fn can_run(test: &str) -> bool {
    let root = std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false);
    let reason = if !root {
        Some("needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN)")
    } else if !std::path::Path::new("/dev/net/tun").exists() {
        Some("needs /dev/net/tun")
    } else if Command::new("ip").arg("-V").output().is_err() {
        Some("needs `ip` from iproute2")
    } else {
        None
    };
    if let Some(reason) = reason {
        // Written to stderr directly, past the test harness's capture, so the skip is seen.
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
        return false;
    }
    run_dir();
    true
}

/// This process's registry directory (set once, before any test creates anything).
pub fn run_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("netloom-os-test-{}", std::process::id()));
        std::env::set_var("NETLOOM_RUN_DIR", &dir);
        dir
    })
}

/// An experiment name unique to this test and process, so concurrent runs do not collide.
pub fn unique(tag: &str) -> String {
    format!("t{}-{tag}", std::process::id())
}

/// Removes the named namespaces and their /etc/netns directories on drop, whatever happened,
/// then the registry directory once the last test is done with it. Declare it before the
/// experiment, so that the experiment's own teardown runs first.
pub struct Leftovers(pub Vec<String>);

impl Drop for Leftovers {
    fn drop(&mut self) {
        for ns in &self.0 {
            if std::path::Path::new("/run/netns").join(ns).exists() {
                let _ = Command::new("ip").args(["netns", "del", ns]).status();
            }
            let _ = std::fs::remove_dir_all(std::path::Path::new("/etc/netns").join(ns));
        }
        // Fails while other tests still have entries; the last one removes it.
        let _ = std::fs::remove_dir(run_dir());
    }
}

pub fn netns_exists(ns: &str) -> bool {
    std::path::Path::new("/run/netns").join(ns).exists()
}

/// Whether `/etc/netns/<ns>` is there, as a directory or as a link (a link whose directory is
/// gone still counts: it is left behind all the same).
pub fn etc_entry_exists(ns: &str) -> bool {
    std::fs::symlink_metadata(std::path::Path::new("/etc/netns").join(ns)).is_ok()
}
