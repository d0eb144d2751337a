//! Named network namespaces, made and removed the way `ip netns` does (a bind mount of the
//! namespace on `/run/netns/<ns>`, per-namespace files in `/etc/netns/<ns>`), so `ip netns exec`
//! and every other iproute2 tool see them; and the processes that live inside them.
//!
//! It does not decide which namespaces are netloom's: callers pass names from the registry.

use crate::OsError;
use std::collections::HashMap;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const RUN_DIR: &str = "/run/netns";
const ETC_DIR: &str = "/etc/netns";

/// `/run/netns/<ns>`, the mount that keeps the namespace alive and names it.
pub(crate) fn path(ns: &str) -> PathBuf {
    Path::new(RUN_DIR).join(ns)
}

/// `/etc/netns/<ns>`, whose files `ip netns exec` bind-mounts over `/etc`.
pub(crate) fn etc_dir(ns: &str) -> PathBuf {
    Path::new(ETC_DIR).join(ns)
}

pub(crate) fn exists(ns: &str) -> bool {
    path(ns).exists()
}

/// The identity of namespace `ns` while it exists: the device and inode of `/run/netns/<ns>`,
/// which are the namespace's own once it is mounted there.
pub(crate) fn identity(ns: &str) -> Option<(u64, u64)> {
    std::fs::metadata(path(ns)).ok().map(|m| (m.dev(), m.ino()))
}

/// Makes `/run/netns` a shared mount, as `ip netns add` does, so namespace mounts made here show
/// up in other mount namespaces (and `ip netns exec` children) too.
pub(crate) fn prepare_run_dir() -> Result<(), OsError> {
    std::fs::create_dir_all(RUN_DIR).map_err(|e| OsError::io(format!("create {RUN_DIR}"), e))?;
    let dir = cstring(Path::new(RUN_DIR));
    let mut bound = false;
    loop {
        // SAFETY: all pointers are NUL-terminated strings that outlive the call; a propagation
        // change reads no data argument.
        let rc = unsafe {
            libc::mount(
                c"".as_ptr(),
                dir.as_ptr(),
                c"none".as_ptr(),
                libc::MS_SHARED | libc::MS_REC,
                std::ptr::null(),
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        // EINVAL: /run/netns is not a mount point yet; bind it onto itself once and retry.
        if err.raw_os_error() != Some(libc::EINVAL) || bound {
            return Err(OsError::io(format!("make {RUN_DIR} a shared mount"), err));
        }
        // SAFETY: as above; a bind mount reads no data argument.
        let rc = unsafe {
            libc::mount(
                dir.as_ptr(),
                dir.as_ptr(),
                c"none".as_ptr(),
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            return Err(OsError::last(format!("bind-mount {RUN_DIR} onto itself")));
        }
        bound = true;
    }
}

/// Creates namespace `ns` and moves the calling thread into it. Only this thread changes
/// namespace (setns and unshare of CLONE_NEWNET are per thread), so call it from a thread that
/// does nothing else afterwards. On error nothing is left behind.
pub(crate) fn create_and_enter(ns: &str) -> Result<(), OsError> {
    let target = path(ns);
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&target)
    {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(OsError::NamespaceExists { ns: ns.to_string() })
        }
        Err(e) => return Err(OsError::io(format!("create {}", target.display()), e)),
    }
    let result = unshare_and_mount(&target, ns);
    if result.is_err() {
        let _ = std::fs::remove_file(&target);
    }
    result
}

fn unshare_and_mount(target: &Path, ns: &str) -> Result<(), OsError> {
    // SAFETY: unshare has no memory preconditions; CLONE_NEWNET affects only this thread.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EPERM) {
            return Err(OsError::NotRoot {
                what: "creating a network namespace",
            });
        }
        return Err(OsError::io(format!("create network namespace {ns}"), err));
    }
    let source = c"/proc/thread-self/ns/net";
    let target = cstring(target);
    // SAFETY: both paths are NUL-terminated and outlive the call; a bind mount reads no data.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            c"none".as_ptr(),
            libc::MS_BIND,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(OsError::last(format!("bind-mount namespace {ns}")));
    }
    Ok(())
}

/// Moves the calling thread into the existing namespace `ns` (for a helper thread that opens a
/// socket there).
pub fn enter(ns: &str) -> Result<(), OsError> {
    enter_file(&path(ns), ns)
}

/// Moves the calling thread into the network namespace `file` refers to (`/run/netns/NAME`,
/// `/proc/PID/ns/net`), called `name` in errors. Processes it starts afterwards are there too.
pub fn enter_file(file: &Path, name: &str) -> Result<(), OsError> {
    let file = std::fs::File::open(file).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => OsError::NoNamespace {
            ns: name.to_string(),
        },
        _ => OsError::io(format!("open namespace {name}"), e),
    })?;
    // SAFETY: the descriptor is open for the duration of the call; CLONE_NEWNET checks that it
    // refers to a network namespace.
    if unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&file), libc::CLONE_NEWNET) } != 0 {
        return Err(OsError::last(format!("enter namespace {name}")));
    }
    Ok(())
}

/// Unmounts and removes `/run/netns/<ns>`; the kernel frees the namespace once nothing else
/// holds it. Returns whether there was something to remove.
pub(crate) fn remove(ns: &str) -> Result<bool, OsError> {
    let target = path(ns);
    if !target.exists() {
        return Ok(false);
    }
    let c_target = cstring(&target);
    // SAFETY: the path is NUL-terminated and outlives the call. MNT_DETACH as `ip netns del`:
    // the mount goes now even if a process still has it open.
    let rc = unsafe { libc::umount2(c_target.as_ptr(), libc::MNT_DETACH) };
    if rc != 0 {
        let err = io::Error::last_os_error();
        // EINVAL: the file exists but was never mounted (a creation that died half-way).
        if err.raw_os_error() != Some(libc::EINVAL) {
            return Err(OsError::io(format!("unmount {}", target.display()), err));
        }
    }
    match std::fs::remove_file(&target) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(OsError::io(format!("remove {}", target.display()), e)),
    }
}

/// Writes `/etc/netns/<ns>/hosts` (mounted over `/etc/hosts` in the namespace) with `contents`.
pub(crate) fn write_hosts(ns: &str, contents: &str) -> Result<(), OsError> {
    let file = make_etc_dir(ns)?.join("hosts");
    std::fs::write(&file, contents).map_err(|e| hosts_failed(ns, &file, e))
}

/// Makes `/etc/netns/<ns>` lead to namespace `first`'s directory: the hosts of an experiment share
/// one hosts file, where a copy each (every copy naming every host) made N hosts write N² lines
/// (10,000 hosts: 7 GB, most of a start-up). The entry is a symbolic link, and after the first
/// such link a hard link to `previous`'s (the link itself, not what it leads to): a directory
/// or a link of its own is a new inode, 0.7–2 ms each on this VM's loaded disk, and removing a
/// directory waits for its block to be discarded (`discard` mount), where a hard link costs
/// about 20 µs to make or remove (docs/performance.md, "10,000 hosts"). `ip netns exec` and
/// `exec` follow the link. A file system's limit on links per inode (65,000 on ext4) starts a
/// new symbolic link.
pub(crate) fn link_hosts(ns: &str, first: &str, previous: Option<&str>) -> Result<(), OsError> {
    let entry = etc_dir(ns);
    if let Some(previous) = previous {
        // `hard_link` does not follow a symbolic link on Linux: it links the link.
        match std::fs::hard_link(etc_dir(previous), &entry) {
            Err(e) if e.raw_os_error() == Some(libc::EMLINK) => {}
            done => return done.map_err(|e| etc_failed(&entry, e)),
        }
    }
    std::os::unix::fs::symlink(first, &entry).map_err(|e| etc_failed(&entry, e))
}

/// Creates `/etc/netns/<ns>`; fails if it exists already: that directory would not be ours to
/// remove.
fn make_etc_dir(ns: &str) -> Result<PathBuf, OsError> {
    std::fs::create_dir_all(ETC_DIR).map_err(|e| OsError::io(format!("create {ETC_DIR}"), e))?;
    let dir = etc_dir(ns);
    std::fs::create_dir(&dir).map_err(|e| etc_failed(&dir, e))?;
    Ok(dir)
}

/// The error of `/etc/netns/<ns>` that could not be made, saying so when something else has
/// that name already.
fn etc_failed(path: &Path, e: io::Error) -> OsError {
    let what = match e.kind() {
        io::ErrorKind::AlreadyExists => format!(
            "create {} (it exists but is not this experiment's: remove it if it is a leftover)",
            path.display()
        ),
        _ => format!("create {}", path.display()),
    };
    OsError::io(what, e)
}

/// The error of a hosts file that could not be made; its directory (ours: `make_etc_dir`
/// created it) goes with the failure.
fn hosts_failed(ns: &str, file: &Path, e: io::Error) -> OsError {
    let _ = std::fs::remove_dir_all(etc_dir(ns));
    OsError::io(format!("write {}", file.display()), e)
}

/// Removes `/etc/netns/<ns>`, a directory or a link to another host's (never what it leads to);
/// returns whether it existed.
pub(crate) fn remove_etc(ns: &str) -> Result<bool, OsError> {
    let dir = etc_dir(ns);
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(OsError::io(format!("remove {}", dir.display()), e)),
    }
}

/// Kills (SIGKILL) every process whose network namespace is one of `namespaces`, except this
/// process, and waits up to a second for them to exit. Returns the pids killed.
pub(crate) fn kill_processes(namespaces: &[String]) -> Result<Vec<u32>, OsError> {
    let mut ids = HashMap::new();
    for ns in namespaces {
        if let Ok(meta) = std::fs::metadata(path(ns)) {
            ids.insert((meta.dev(), meta.ino()), ns.as_str());
        }
    }
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let own = std::process::id();
    let mut killed = Vec::new();
    let entries = std::fs::read_dir("/proc").map_err(|e| OsError::io("list /proc", e))?;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == own {
            continue;
        }
        // Processes may exit while we look; a missing entry is not an error.
        let Ok(meta) = std::fs::metadata(entry.path().join("ns/net")) else {
            continue;
        };
        if ids.contains_key(&(meta.dev(), meta.ino())) {
            // SAFETY: kill has no memory preconditions.
            if unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) } == 0 {
                killed.push(pid);
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    while killed.iter().any(|&pid| is_running(pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(killed)
}

/// Whether `pid` exists and has not exited (a zombie has exited; only its parent's wait is
/// missing).
pub(crate) fn is_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat_field(&stat, 3).is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// The start time of `pid` in clock ticks since boot (field 22 of `/proc/<pid>/stat`), which
/// tells a process from a later one that reused its pid.
pub(crate) fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat_field(&stat, 22)?.parse().ok()
}

/// Whether process `pid` has `path` open (one of its `/proc/<pid>/fd` entries leads there).
pub(crate) fn holds_open(pid: u32, path: &Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == path))
}

/// Field `n` (1-based, as in proc(5)) of a `/proc/<pid>/stat` line; the command name (field 2)
/// may contain spaces and parentheses, so fields are counted from its closing parenthesis.
fn stat_field(stat: &str, n: usize) -> Option<&str> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(n.checked_sub(3)?)
}

fn cstring(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).expect("netloom's paths contain no NUL byte")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_skip_the_command_name() {
        let stat = "42 (a) b (c)) S 1 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12345 0";
        assert_eq!(stat_field(stat, 3), Some("S"));
        assert_eq!(stat_field(stat, 22), Some("12345"));
        assert_eq!(stat_field(stat, 2), None);
    }

    #[test]
    fn this_process_is_running() {
        assert!(is_running(std::process::id()));
        assert!(start_ticks(std::process::id()).is_some());
    }

    #[test]
    fn open_files_are_seen_and_others_are_not() {
        let dir = std::env::temp_dir();
        let own = std::process::id();
        assert!(!holds_open(own, &dir));
        let held = std::fs::File::open(&dir).unwrap();
        assert!(holds_open(own, &dir));
        drop(held);
        assert!(!holds_open(own, &dir));
    }
}
