//! Who is at the other end of a Unix socket (`SO_PEERCRED`), who this process is, and a user's
//! primary group: the shaping daemon serves unprivileged users and must know each caller without
//! trusting what it says, and the group of an arriving packet's socket's owner.

use crate::OsError;
use std::os::fd::{AsRawFd, BorrowedFd};

/// The process that connected a Unix socket, as the kernel recorded it at `connect`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerCredentials {
    /// Its process id.
    pub pid: u32,
    /// Its effective user id.
    pub uid: u32,
    /// Its effective group id.
    pub gid: u32,
}

/// The credentials of the peer of the connected Unix socket `socket` (std's
/// `UnixStream::peer_cred` is not stable).
pub fn peer_credentials(socket: BorrowedFd<'_>) -> Result<PeerCredentials, OsError> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are live, writable and `len` is `cred`'s size; the kernel writes
    // at most that many bytes.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(OsError::io(
            "read a Unix socket's peer (SO_PEERCRED)",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(PeerCredentials {
        pid: cred.pid as u32,
        uid: cred.uid,
        gid: cred.gid,
    })
}

/// This process's effective user id.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The primary group of user `uid`'s account (the passwd entry, through NSS), or `None` if no
/// account has that uid.
pub fn primary_group(uid: u32) -> Option<u32> {
    // SAFETY: an all-zero passwd is a valid value for getpwuid_r to fill.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    let mut buffer = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: `entry`, `buffer` (of the length given) and `found` are live and writable for the
    // call; the strings it points `entry` at live in `buffer`, which outlives the read below.
    let rc = unsafe {
        libc::getpwuid_r(
            uid,
            &mut entry,
            buffer.as_mut_ptr(),
            buffer.len(),
            &mut found,
        )
    };
    (rc == 0 && !found.is_null()).then_some(entry.pw_gid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn a_socket_pair_names_this_process_as_the_peer() {
        let (a, _b) = UnixStream::pair().unwrap();
        let cred = peer_credentials(a.as_fd()).unwrap();
        assert_eq!(cred.pid, std::process::id());
        assert_eq!(cred.uid, effective_uid());
    }

    #[test]
    fn root_s_primary_group_is_0_and_an_unused_uid_has_none() {
        assert_eq!(primary_group(0), Some(0));
        assert_eq!(primary_group(4_000_000_123), None);
    }
}
