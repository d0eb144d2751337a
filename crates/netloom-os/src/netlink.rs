//! The netlink plumbing NFQUEUE and sock_diag share: opening a socket of one netlink family,
//! receiving into a buffer, and walking the messages of what was received.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// A raw netlink socket of `protocol` (`NETLINK_NETFILTER`, `NETLINK_SOCK_DIAG`), close-on-exec,
/// with the extra socket `flags` (`SOCK_NONBLOCK` or 0).
pub(crate) fn socket(protocol: libc::c_int, flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: socket(2) has no memory preconditions.
    let raw = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC | flags,
            protocol,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` was just returned by socket(2) and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Receives one datagram from `fd` into `buffer`; its length.
pub(crate) fn recv(fd: BorrowedFd, buffer: &mut [u8]) -> io::Result<usize> {
    // SAFETY: the buffer is live and writable for its whole length.
    let n = unsafe { libc::recv(fd.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}
