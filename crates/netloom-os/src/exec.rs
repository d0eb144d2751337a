//! Running unmodified programs inside a host's namespace, through `ip netns exec`, which also
//! bind-mounts the host's `/etc/netns/<ns>/hosts` over `/etc/hosts` so host names resolve.

use crate::signal::Forwarding;
use crate::{netns, OsError};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus};

/// A `Command` that runs `argv` inside namespace `ns` (for callers that want to capture output or
/// run in the background), inside the host's CPU limit if it has one. Processes started this way
/// are killed when the experiment goes down.
pub fn command(ns: &str, argv: &[String]) -> Result<Command, OsError> {
    if argv.is_empty() {
        return Err(OsError::InvalidSpec {
            experiment: ns.to_string(),
            reason: "no command given; write the program and its arguments after `--`".to_string(),
        });
    }
    if !netns::exists(ns) {
        return Err(OsError::NoNamespace { ns: ns.to_string() });
    }
    let mut command = Command::new(ip_binary());
    command.args(["netns", "exec", ns]).args(argv);
    crate::host_cpu::join_at_exec(&mut command, ns)?;
    Ok(command)
}

/// Like `command`, and the program sees directory `source` at `target` (an existing directory):
/// it runs in a mount namespace of its own, a copy of this one that receives later mounts but
/// sends none back, where `source` is bind-mounted over `target`. A router's routing daemons
/// and the `vtysh` a user runs there meet at `/run/frr` this way, each router's sockets in its
/// own directory, without any path compiled into them changing.
pub fn command_with_bind(
    ns: &str,
    argv: &[String],
    source: &Path,
    target: &Path,
) -> Result<Command, OsError> {
    use std::os::unix::process::CommandExt;
    let mut command = command(ns, argv)?;
    let to_c = |path: &Path| {
        CString::new(path.as_os_str().as_bytes()).map_err(|_| OsError::InvalidSpec {
            experiment: ns.to_string(),
            reason: format!("{} contains a NUL byte", path.display()),
        })
    };
    let (source, target) = (to_c(source)?, to_c(target)?);
    // SAFETY: the closure runs between fork and exec and makes only async-signal-safe system
    // calls on strings allocated before the fork. The new mount namespace is the child's alone;
    // marking its copy of `/` a slave keeps the bind mount from reaching the parent's.
    unsafe {
        command.pre_exec(move || {
            let none = c"none".as_ptr();
            if libc::unshare(libc::CLONE_NEWNS) != 0
                || libc::mount(
                    none,
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_SLAVE | libc::MS_REC,
                    std::ptr::null(),
                ) != 0
                || libc::mount(
                    source.as_ptr(),
                    target.as_ptr(),
                    none,
                    libc::MS_BIND,
                    std::ptr::null(),
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(command)
}

/// Runs `argv` inside namespace `ns` with inherited stdio and returns its exit status, the
/// signals sent to this process passed on to the program while it runs (`wait_in_foreground`).
pub fn exec(ns: &str, argv: &[String]) -> Result<ExitStatus, OsError> {
    run(command(ns, argv)?, ns, argv)
}

/// `exec` with `source` seen at `target`, as `command_with_bind` makes it: `netloom exec` on a
/// router whose daemons keep their sockets in `source`.
pub fn exec_with_bind(
    ns: &str,
    argv: &[String],
    source: &Path,
    target: &Path,
) -> Result<ExitStatus, OsError> {
    run(command_with_bind(ns, argv, source, target)?, ns, argv)
}

fn run(mut command: Command, ns: &str, argv: &[String]) -> Result<ExitStatus, OsError> {
    let child = command
        .spawn()
        .map_err(|e| OsError::io("start `ip netns exec` (is iproute2 installed?)", e))?;
    wait_in_foreground(child, &format!("{:?} in {ns}", argv[0]))
}

/// Waits for `child` (named `what` in errors) and returns its exit status, standing in for it
/// the way a shell does for its foreground job: a signal that another process sends this one
/// (`kill`, `timeout`, a service manager's SIGTERM) is passed on to the child, which decides how
/// to end, and its status is what comes back; one the terminal raises (Ctrl-C, Ctrl-\, a
/// hang-up) has reached the child's process group already and is not sent twice. `ip netns
/// exec` replaces itself with the program, so its child is the program. The handlers are the
/// process's: one wait at a time.
pub fn wait_in_foreground(mut child: Child, what: &str) -> Result<ExitStatus, OsError> {
    let pid = child.id() as libc::pid_t;
    let forwarding = Forwarding::new(pid)?;
    // Wait without reaping first: until the handlers are restored the process id must stay the
    // child's, or a late signal could reach a process that took the id over.
    let exited = wait_without_reaping(pid);
    drop(forwarding);
    exited
        .and_then(|()| child.wait())
        .map_err(|e| OsError::io(format!("wait for {what}"), e))
}

/// Blocks until process `pid` has exited, leaving it to be reaped.
fn wait_without_reaping(pid: libc::pid_t) -> std::io::Result<()> {
    loop {
        // SAFETY: siginfo_t is plain old data; all-zero is a valid value for waitid to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a live siginfo_t; P_PID with our own child's id.
        let done = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if done == 0 {
            return Ok(());
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Makes `command`'s child close every descriptor it would inherit beyond stdin, stdout and
/// stderr when it executes: a background process (`run --detach`'s engine) must not keep its
/// launcher's files, locks and pipes open for its whole life. Needs Linux 5.11 (close_range
/// with CLOSE_RANGE_CLOEXEC); on an older kernel starting the command fails with that error.
pub fn close_inherited_fds(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs between fork and exec and makes one async-signal-safe system
    // call. Marking (CLOEXEC) rather than closing keeps open the pipe through which the
    // standard library reports a failed exec; the kernel closes everything at the exec itself.
    // The raw system call, not glibc's wrapper (2.34): the packages' binary links against glibc
    // 2.17 (manylinux2014), which has none.
    unsafe {
        command.pre_exec(|| {
            if libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_long,
                libc::c_uint::MAX as libc::c_long,
                libc::CLOSE_RANGE_CLOEXEC as libc::c_long,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// `ip` from iproute2: its usual place, else whatever `PATH` finds.
pub(crate) fn ip_binary() -> &'static str {
    ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("ip")
}
