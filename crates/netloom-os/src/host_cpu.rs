//! Per-host CPU limits: a cgroup for each limited host (cgroup v2's `cpu.max`, or v1's CFS quota
//! where v2 has no cpu controller, as on hybrid layouts), which every program started in the
//! host joins as it starts (`command`), and which goes with the host.

use crate::cgroup::{cgroup1_cpu_mount, cgroup2_mount};
use crate::OsError;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The CFS period of every limit: Linux's default, 100 ms; a host with `cpu` CPUs may run
/// `cpu` × 100 ms in each.
pub const CPU_PERIOD_US: u64 = 100_000;
/// Linux's smallest CFS quota, 1 ms.
const MIN_QUOTA_US: u64 = 1_000;
/// The directory under the hierarchy's root that holds netloom's hosts' cgroups, one per host
/// namespace, named as the namespace.
const TOP: &str = "netloom";
/// How long removing a cgroup waits for its last processes to finish exiting.
const REMOVE_WAIT: Duration = Duration::from_secs(5);

/// Which cgroup hierarchy limits CPU here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavor {
    /// cgroup v2 with the cpu controller: `cpu.max`.
    V2,
    /// cgroup v1's `cpu` controller: `cpu.cfs_period_us` and `cpu.cfs_quota_us`.
    V1,
}

/// The hierarchy that can limit CPU on this machine and its mount, or `None`.
fn hierarchy() -> Option<(PathBuf, Flavor)> {
    if let Some(mount) = cgroup2_mount() {
        let controllers = std::fs::read_to_string(mount.join("cgroup.controllers"));
        if controllers.is_ok_and(|c| c.split_whitespace().any(|w| w == "cpu")) {
            return Some((mount, Flavor::V2));
        }
    }
    cgroup1_cpu_mount().map(|mount| (mount, Flavor::V1))
}

/// The cgroup of the host whose namespace is `ns`, if netloom made one (the host has a limit).
pub fn host_cgroup(ns: &str) -> Option<PathBuf> {
    let (mount, _) = hierarchy()?;
    Some(mount.join(TOP).join(ns)).filter(|dir| dir.is_dir())
}

/// Makes the cgroup of the host whose namespace is `ns` (`host` names it in errors), limited to
/// `cpus` CPUs, and returns its directory. An existing one (a leftover of the same name) is
/// reused with the new limit.
pub(crate) fn create(ns: &str, host: &str, cpus: f64) -> Result<PathBuf, OsError> {
    let quota = (cpus * CPU_PERIOD_US as f64).round() as u64;
    let invalid = |reason: String| OsError::InvalidSpec {
        experiment: ns.to_string(),
        reason,
    };
    if !cpus.is_finite() || quota < MIN_QUOTA_US {
        return Err(invalid(format!(
            "host {host}: cpu = {cpus} is {quota} us of CPU time per {CPU_PERIOD_US} us, below \
             Linux's smallest quota of {MIN_QUOTA_US} us"
        )));
    }
    let Some((mount, flavor)) = hierarchy() else {
        return Err(invalid(format!(
            "host {host} has cpu = {cpus}, and this machine offers no cgroup cpu controller \
             (cgroup v2's cpu.max, or v1's cpu mounted); run it without cpu, or mount one"
        )));
    };
    let top = mount.join(TOP);
    let dir = top.join(ns);
    let write = |path: PathBuf, text: &str| {
        std::fs::write(&path, text)
            .map_err(|e| OsError::io(format!("write {text:?} to {}", path.display()), e))
    };
    let make = |path: &Path| {
        std::fs::create_dir_all(path)
            .map_err(|e| OsError::io(format!("make cgroup {}", path.display()), e))
    };
    match flavor {
        Flavor::V2 => {
            // The controller must be on for the children of the root and of netloom's directory.
            enable_v2_cpu(&mount)?;
            make(&top)?;
            enable_v2_cpu(&top)?;
            make(&dir)?;
            write(dir.join("cpu.max"), &format!("{quota} {CPU_PERIOD_US}"))?;
        }
        Flavor::V1 => {
            make(&dir)?;
            write(dir.join("cpu.cfs_period_us"), &CPU_PERIOD_US.to_string())?;
            write(dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
        }
    }
    Ok(dir)
}

fn enable_v2_cpu(dir: &Path) -> Result<(), OsError> {
    let control = dir.join("cgroup.subtree_control");
    let on = std::fs::read_to_string(&control)
        .is_ok_and(|text| text.split_whitespace().any(|w| w == "cpu"));
    if on {
        return Ok(());
    }
    std::fs::write(&control, "+cpu").map_err(|e| {
        OsError::io(
            format!("enable the cpu controller in {}", control.display()),
            e,
        )
    })
}

/// Removes the cgroup of the host whose namespace is `ns`, if there is one, waiting up to
/// `REMOVE_WAIT` for processes that are still exiting; then netloom's directory if no other
/// host uses it. Returns whether a cgroup was removed.
pub(crate) fn remove(ns: &str) -> Result<bool, OsError> {
    let Some((mount, _)) = hierarchy() else {
        return Ok(false);
    };
    let top = mount.join(TOP);
    let dir = top.join(ns);
    let deadline = Instant::now() + REMOVE_WAIT;
    loop {
        match std::fs::remove_dir(&dir) {
            Ok(()) => break,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                return Err(OsError::io(
                    format!(
                        "remove cgroup {} (processes still in it: {})",
                        dir.display(),
                        std::fs::read_to_string(dir.join("cgroup.procs"))
                            .unwrap_or_default()
                            .split_whitespace()
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                    e,
                ))
            }
        }
    }
    // Fails while another run's hosts have cgroups there, which is as it should be.
    let _ = std::fs::remove_dir(&top);
    Ok(true)
}

/// Makes `command`'s child join the cgroup of the host whose namespace is `ns`, if it has one,
/// before it executes: so does everything the program starts, and no process of the host escapes
/// the limit (joining after the start would let a quick fork through).
pub(crate) fn join_at_exec(command: &mut Command, ns: &str) -> Result<(), OsError> {
    use std::os::unix::process::CommandExt;
    let Some(dir) = host_cgroup(ns) else {
        return Ok(());
    };
    let procs = dir.join("cgroup.procs");
    let path = CString::new(procs.as_os_str().as_bytes()).map_err(|_| OsError::InvalidSpec {
        experiment: ns.to_string(),
        reason: format!("{} contains a NUL byte", procs.display()),
    })?;
    // SAFETY: the closure runs between fork and exec and makes only async-signal-safe system
    // calls (open, write, close) on a string allocated before the fork. Writing 0 to
    // cgroup.procs moves the writing process (v1 and v2 alike).
    unsafe {
        command.pre_exec(move || {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let written = libc::write(fd, b"0".as_ptr().cast(), 1);
            let error = std::io::Error::last_os_error();
            libc::close(fd);
            if written != 1 {
                return Err(error);
            }
            Ok(())
        });
    }
    Ok(())
}
