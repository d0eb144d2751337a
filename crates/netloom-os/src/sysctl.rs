//! Sysctls written in many network namespaces at a cost that does not grow with their number:
//! through private instances of procfs instead of the machine's `/proc/sys`.
//!
//! In the machine's procfs every network namespace has its own `/proc/sys/net` directory entry,
//! all with the same parent and name, so they share one dcache hash chain, and opening any
//! `/proc/sys/net/...` file compares against every namespace's that was ever looked up
//! (`proc_sys_compare`, under a global spinlock): at 10,000 hosts a write cost milliseconds and
//! start-up became quadratic (docs/performance.md, "10,000 hosts"). A private procfs instance
//! (`fsopen` and `fsmount`: a mount attached nowhere, seen by no other process) has directory
//! entries of its own, so its chain holds only the namespaces written through it.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

/// Writes through one private instance before a fresh one replaces it. Its chain grows by one
/// entry per namespace written in, and dropping an instance waits for an RCU grace period (about
/// 0.3 ms here: the detached mount is dissolved), so 64 keeps both the walk and the drop's share
/// per host small (about 5 µs).
const WRITES_PER_INSTANCE: usize = 64;

/// `fsopen`'s and `fsmount`'s close-on-exec flags and `fsconfig`'s command that creates the
/// superblock (`FSOPEN_CLOEXEC`, `FSMOUNT_CLOEXEC`, `FSCONFIG_CMD_CREATE` of linux/mount.h; the
/// libc crate has the system calls' numbers but not these).
const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;

/// A writer of the calling thread's sysctls, for a thread that moves from namespace to namespace
/// (one per thread: an instance is opened by, and only used from, the thread that holds it).
#[derive(Debug)]
pub(crate) struct Sysctls {
    /// The root of the current private procfs instance, made at the first write; `None` before,
    /// and for good where the kernel cannot make one (before Linux 5.2, or where mounting procfs
    /// is not allowed), writes then going through `/proc/sys`.
    instance: Option<OwnedFd>,
    /// Writes made through `instance`.
    writes: usize,
    /// Whether a private instance could be made the last time one was tried.
    private: bool,
}

impl Sysctls {
    pub(crate) fn new() -> Self {
        Sysctls {
            instance: None,
            writes: 0,
            private: true,
        }
    }

    /// Writes `value` to sysctl `path` (relative to `/proc/sys`, such as
    /// `net/ipv4/tcp_congestion_control`) of the calling thread's network namespace.
    pub(crate) fn write(&mut self, path: &str, value: &str) -> io::Result<()> {
        if self.writes == WRITES_PER_INSTANCE {
            self.instance = None;
        }
        if self.instance.is_none() && self.private {
            match private_procfs() {
                Ok(root) => {
                    self.instance = Some(root);
                    self.writes = 0;
                }
                Err(_) => self.private = false,
            }
        }
        let mut file = match &self.instance {
            Some(root) => {
                self.writes += 1;
                open_for_writing(root, &format!("sys/{path}"))?
            }
            None => File::options()
                .write(true)
                .open(Path::new("/proc/sys").join(path))?,
        };
        file.write_all(value.as_bytes())
    }
}

/// A new procfs instance mounted nowhere: the descriptor of its root.
fn private_procfs() -> io::Result<OwnedFd> {
    // SAFETY: the file system's name is a NUL-terminated literal; fsopen has no other
    // preconditions.
    let context = unsafe { libc::syscall(libc::SYS_fsopen, c"proc".as_ptr(), FSOPEN_CLOEXEC) };
    let context = owned(context)?;
    // SAFETY: CMD_CREATE reads no key, value or auxiliary argument.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            context.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_void>(),
            0,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fsmount takes the context's descriptor and flags by value and touches no memory of
    // ours.
    let root = unsafe { libc::syscall(libc::SYS_fsmount, context.as_raw_fd(), FSMOUNT_CLOEXEC, 0) };
    owned(root)
}

/// The descriptor a system call returned, or its error.
fn owned(rc: libc::c_long) -> io::Result<OwnedFd> {
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = libc::c_int::try_from(rc).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
    // SAFETY: the kernel just returned this descriptor, which nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens `path` under directory `dir` for writing.
fn open_for_writing(dir: &OwnedFd, path: &str) -> io::Result<File> {
    let path = CString::new(path).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: the path is NUL-terminated and outlives the call; `dir` is an open descriptor.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            path.as_ptr(),
            libc::O_WRONLY | libc::O_CLOEXEC,
        )
    };
    Ok(File::from(owned(fd.into())?))
}
