//! Helpers for worker processes and their sockets: a child that dies with its parent, and a
//! UDP socket with room for a whole window of hand-offs.

use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes the child `command` starts get SIGKILL when the thread that started it exits, so no
/// worker outlives a coordinator that was killed (PR_SET_PDEATHSIG). A parent that died before
/// the child set this up is caught too: the child then exits at once.
pub fn die_with_parent(command: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: between fork and exec only async-signal-safe calls: prctl, getppid, _exit.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// Sets `socket`'s receive buffer to `bytes`: beyond `net.core.rmem_max` when allowed
/// (SO_RCVBUFFORCE, root), else as far as that limit lets SO_RCVBUF go. Returns the size the
/// kernel granted (it doubles the request for its bookkeeping).
pub fn set_receive_buffer(socket: &impl AsRawFd, bytes: usize) -> std::io::Result<usize> {
    let fd = socket.as_raw_fd();
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    let set = |name: libc::c_int| {
        // SAFETY: `value` is a live c_int of the size given.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                name,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        }
    };
    if set(libc::SO_RCVBUFFORCE) != 0 && set(libc::SO_RCVBUF) != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut granted: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `granted` and `len` are live and `len` is `granted`'s size.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&mut granted as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(granted.max(0) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receive_buffer_grows() {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let before = set_receive_buffer(&socket, 4096).unwrap();
        let after = set_receive_buffer(&socket, 1 << 20).unwrap();
        assert!(after > before, "{before} -> {after}");
    }

    #[test]
    fn a_child_dies_with_the_thread_that_started_it() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut command = Command::new("sleep");
            command.arg("30");
            die_with_parent(&mut command);
            tx.send(command.spawn().unwrap()).unwrap();
        })
        .join()
        .unwrap();
        let mut child = rx.recv().unwrap();
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }
}
