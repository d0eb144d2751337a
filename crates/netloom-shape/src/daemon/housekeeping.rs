//! Housekeeping of shaping processes: what dead ones left (rules, sockets, pid files) is removed
//! by `clean`, at start and every second by a running one (`sweeper`).

use super::DaemonError;
use crate::kernel;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// Removes what shaping processes left (their rules, sockets and pid files), ending each that
/// still runs (which removes its rules, in its namespace); the rules of one killed with SIGKILL
/// in another namespace are removed there (`sweep_dead`). Returns what was removed, for
/// `netloom clean`.
pub fn clean() -> Vec<String> {
    let mut removed = sweep_dead();
    let dir = netloom_os::registry_dir();
    let pids: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("shape") && name.ends_with(".pid")
        })
        .collect();
    for pid_file in pids {
        end_process(&pid_file, &mut removed);
        let socket = pid_file.with_extension("sock");
        for path in [socket, pid_file] {
            if std::fs::remove_file(&path).is_ok() {
                removed.push(path.display().to_string());
            }
        }
    }
    if kernel::remove() {
        removed.push(format!(
            "iptables chains {} and {}",
            kernel::CHAIN_IN,
            kernel::CHAIN_OUT
        ));
    }
    removed
}

/// Removes what the shaping processes of other namespaces that died without cleaning up (`kill
/// -9`) left: for each `shape-netns-INODE.pid` whose process is gone, the namespace with that
/// inode is found (a name in `/run/netns`, or any process's `/proc/PID/ns/net`), its chains
/// are removed inside it (from a thread that enters it, so the iptables it runs are the
/// namespace's), and the pid and socket files go. A namespace no longer found has gone, and
/// its rules with it. Every shaping process does this as it starts and then every
/// `SWEEP_EVERY` while it runs, and `netloom clean`.
pub fn sweep_dead() -> Vec<String> {
    let mut removed = Vec::new();
    let dir = netloom_os::registry_dir();
    let dead: Vec<(PathBuf, u64, String)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let inode = name.strip_prefix("shape-netns-")?.strip_suffix(".pid")?;
            let pid = std::fs::read_to_string(e.path()).ok()?;
            Some((e.path(), inode.parse().ok()?, pid))
        })
        .filter(|(_, _, pid)| !pid.trim().parse::<u32>().is_ok_and(alive))
        .collect();
    for (pid_file, inode, pid) in dead {
        // A new shaping process of that namespace may have started meanwhile: its file, its
        // rules.
        if std::fs::read_to_string(&pid_file).ok().as_ref() != Some(&pid) {
            continue;
        }
        if let Some(file) = namespace_file(inode) {
            let name = file.display().to_string();
            let swept = std::thread::spawn(move || {
                netloom_os::enter_namespace_file(&file, &name).is_ok() && kernel::remove()
            })
            .join()
            .unwrap_or(false);
            if swept {
                removed.push(format!(
                    "iptables chains {} and {} in namespace {inode}",
                    kernel::CHAIN_IN,
                    kernel::CHAIN_OUT
                ));
            }
        }
        for path in [pid_file.with_extension("sock"), pid_file] {
            if std::fs::remove_file(&path).is_ok() {
                removed.push(path.display().to_string());
            }
        }
    }
    removed
}

/// Does process `pid` run? A zombie does not: a shaping process started by a request outlives
/// its launcher, and once killed it may wait unreaped under a parent that does not reap.
pub(super) fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command's closing parenthesis.
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// A file of the network namespace whose nsfs inode is `inode`: a name of `ip netns`, else a
/// process in it.
pub(super) fn namespace_file(inode: u64) -> Option<PathBuf> {
    let named = std::fs::read_dir("/run/netns")
        .into_iter()
        .flatten()
        .flatten();
    let processes = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .map(|e| e.path().join("ns/net"));
    named
        .map(|e| e.path())
        .chain(processes)
        .find(|f| std::fs::metadata(f).is_ok_and(|m| m.ino() == inode))
}

/// Ends the shaping process `pid_file` names, if it runs, and waits a moment for it to go.
pub(super) fn end_process(pid_file: &std::path::Path, removed: &mut Vec<String>) {
    if let Some(pid) = std::fs::read_to_string(pid_file)
        .ok()
        .and_then(|p| p.trim().parse::<u32>().ok())
    {
        if std::path::Path::new(&format!("/proc/{pid}")).exists()
            && netloom_os::terminate(pid).is_ok()
        {
            removed.push(format!("shaping process {pid}"));
            // It removes its own rules as it ends; give it a moment before doing so here.
            for _ in 0..50 {
                if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

/// How often a running shaping process looks for other namespaces' processes that were killed
/// (`sweep_dead`), so their rules go soon after, not at the next start.
pub(super) const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Starts the thread that runs `sweep_dead` every `SWEEP_EVERY`, for the process's life.
pub(super) fn sweeper() -> Result<(), DaemonError> {
    std::thread::Builder::new()
        .name("shape-sweeper".to_string())
        .spawn(|| loop {
            std::thread::sleep(SWEEP_EVERY);
            for what in sweep_dead() {
                eprintln!("netloom shape: removed {what} (its shaping process was killed)");
            }
        })
        .map(drop)
        .map_err(|e| DaemonError::Io(format!("start the sweeping thread: {e}")))
}
