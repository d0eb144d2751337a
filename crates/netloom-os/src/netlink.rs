//! The netlink plumbing NFQUEUE, sock_diag and rtnetlink share: opening a socket of one netlink
//! family, building messages and their attributes, sending them, receiving into a buffer, and
//! walking the messages of what was received.

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

/// Sends `message` (one or more netlink messages, each with its length set) to the kernel.
pub(crate) fn send(fd: BorrowedFd, message: &[u8]) -> io::Result<()> {
    // SAFETY: an all-zero sockaddr_nl addresses the kernel.
    let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    // SAFETY: the message and the address are live for the call, with the lengths given.
    let rc = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            message.as_ptr().cast(),
            message.len(),
            0,
            (&kernel as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets the length of the message (or nested attribute) that starts at `at` and runs to the end
/// of `m`.
pub(crate) fn set_length(m: &mut [u8], at: usize) {
    let len = (m.len() - at) as u32;
    m[at..at + 4].copy_from_slice(&len.to_ne_bytes());
}

/// Appends a netlink attribute, padded to 4 bytes.
pub(crate) fn put_attr(m: &mut Vec<u8>, kind: u16, value: &[u8]) {
    m.extend_from_slice(&(4 + value.len() as u16).to_ne_bytes());
    m.extend_from_slice(&kind.to_ne_bytes());
    m.extend_from_slice(value);
    m.resize(m.len().next_multiple_of(4), 0);
}

/// Appends a nested attribute whose contents `inner` appends.
pub(crate) fn put_nested(m: &mut Vec<u8>, kind: u16, inner: impl FnOnce(&mut Vec<u8>)) {
    let at = m.len();
    m.extend_from_slice(&0u16.to_ne_bytes());
    m.extend_from_slice(&kind.to_ne_bytes());
    inner(m);
    let len = (m.len() - at) as u16;
    m[at..at + 2].copy_from_slice(&len.to_ne_bytes());
}

/// The netlink message at `at` in `buf`: its type, its body after the netlink header, and where
/// the next one starts; `None` at the end or on a malformed length.
pub(crate) fn message(buf: &[u8], at: usize) -> Option<(u16, &[u8], usize)> {
    let head = buf.get(at..at + 16)?;
    let len = u32::from_ne_bytes(head[..4].try_into().ok()?) as usize;
    let kind = u16::from_ne_bytes(head[4..6].try_into().ok()?);
    let body = buf.get(at + 16..at + len.max(16))?;
    Some((kind, body, at + len.next_multiple_of(4).max(16)))
}

/// The kernel's answer to a request sent with NLM_F_ACK, if message `kind` with `body` is one
/// (NLMSG_ERROR): success, or the error it reports.
pub(crate) fn acknowledgement(kind: u16, body: &[u8]) -> Option<io::Result<()>> {
    if kind != libc::NLMSG_ERROR as u16 || body.len() < 4 {
        return None;
    }
    let errno = -i32::from_ne_bytes(body[..4].try_into().expect("4 bytes"));
    Some(match errno {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    })
}
