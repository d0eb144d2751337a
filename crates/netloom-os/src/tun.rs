//! `Tun`: one host's TUN device, opened inside its namespace; raw IP packets in and out.
//!
//! The device lives as long as the descriptor: dropping the `Tun` removes `nl0` from its namespace.

use crate::OsError;
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// The name of the TUN device inside every host's namespace.
pub const TUN_NAME: &str = "nl0";
pub(crate) const TUN_NAME_C: &CStr = c"nl0";

/// A non-blocking TUN device without packet information: each read returns one IPv4 or IPv6
/// packet, each write injects one.
#[derive(Debug)]
pub struct Tun {
    fd: OwnedFd,
}

impl Tun {
    /// Creates `nl0` in the calling thread's network namespace (IFF_TUN | IFF_NO_PI, O_NONBLOCK).
    pub(crate) fn create_here() -> Result<Tun, OsError> {
        // SAFETY: the path is a NUL-terminated literal; open has no other preconditions.
        let raw = unsafe {
            libc::open(
                c"/dev/net/tun".as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::NotFound {
                return Err(OsError::NoTun);
            }
            return Err(OsError::io("open /dev/net/tun", err));
        }
        // SAFETY: `raw` was just returned by open and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut req = crate::interface::ifreq_for(TUN_NAME_C);
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads and writes one `ifreq`, which `req` is and outlives the call.
        if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) } < 0 {
            return Err(OsError::last(format!(
                "create TUN device {TUN_NAME} (TUNSETIFF)"
            )));
        }
        Ok(Tun { fd })
    }

    /// Reads one packet into `buf`; `WouldBlock` when none is queued. A packet longer than `buf`
    /// is truncated, so give it at least the MTU.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the duration of the call.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Writes one whole IP packet; the kernel receives it as if it arrived on `nl0`. Fails with
    /// `EINVAL` when the first nibble is neither 4 nor 6.
    pub fn write(&self, packet: &[u8]) -> io::Result<usize> {
        // SAFETY: `packet` is valid for reads of `packet.len()` bytes for the duration of the call.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// The descriptor, for a `Poller`.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
