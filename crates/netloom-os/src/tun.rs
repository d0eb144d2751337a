//! `Tun`: one host's TUN device, opened inside its namespace; IP packets in and out, each behind a
//! virtio_net_hdr, and the offloads (GSO) the device accepts. What the header means and how a
//! super-packet is split is netloom-live's business, not this module's.
//!
//! The device is persistent: it outlives the descriptor and goes with its namespace, whose removal
//! unregisters all the namespaces' devices removed at once in one batch.

use crate::OsError;
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// The name of the TUN device inside every host's namespace.
pub const TUN_NAME: &str = "nl0";
pub(crate) const TUN_NAME_C: &CStr = c"nl0";

/// Bytes of the `struct virtio_net_hdr` in front of every packet read from or written to a `Tun`.
pub const VNET_HDR_LEN: usize = 10;

/// A non-blocking TUN device without packet information, with IFF_VNET_HDR: each read returns a
/// virtio_net_hdr ([`VNET_HDR_LEN`] bytes) and one IPv4 or IPv6 packet, each write takes the same.
/// Until [`Tun::set_offload`] turns GSO on, the kernel hands over only packets of at most the MTU
/// with a zeroed header.
#[derive(Debug)]
pub struct Tun {
    fd: OwnedFd,
}

impl Tun {
    /// Creates device `name` (a host's `nl0`, a kernel router's link) in the calling thread's
    /// network namespace (IFF_TUN | IFF_NO_PI | IFF_VNET_HDR, O_NONBLOCK), with offloads off.
    pub(crate) fn create_here(name: &CStr) -> Result<Tun, OsError> {
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
        let mut req = crate::interface::ifreq_for(name);
        req.ifr_ifru.ifru_flags =
            (libc::IFF_TUN | libc::IFF_NO_PI | libc::IFF_VNET_HDR) as libc::c_short;
        // SAFETY: TUNSETIFF reads and writes one `ifreq`, which `req` is and outlives the call.
        if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) } < 0 {
            return Err(OsError::last(format!(
                "create TUN device {name:?} (TUNSETIFF)"
            )));
        }
        // The kernel's default is this size already; setting it pins what VNET_HDR_LEN promises.
        let size = VNET_HDR_LEN as libc::c_int;
        // SAFETY: TUNSETVNETHDRSZ reads one `int` through the pointer, which outlives the call.
        if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETVNETHDRSZ, &size) } < 0 {
            return Err(OsError::last(format!(
                "set the virtio_net_hdr size of {name:?} (TUNSETVNETHDRSZ)"
            )));
        }
        // Closing a non-persistent device's last descriptor unregisters it there and then, one
        // device at a time under the RTNL lock (7.8 s of a 10,000-host stop); a persistent one
        // is unregistered with its namespace, together with every other namespace's that the
        // kernel cleans up at once (docs/performance.md, "10,000 hosts"). Every caller makes its
        // devices in a namespace of its own, which its teardown removes.
        // SAFETY: TUNSETPERSIST takes its argument by value; no memory is passed.
        if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETPERSIST, 1 as libc::c_ulong) } < 0 {
            return Err(OsError::last(format!(
                "make TUN device {name:?} persistent (TUNSETPERSIST)"
            )));
        }
        Ok(Tun { fd })
    }

    /// With `gso`, lets the kernel hand over TCP super-packets of up to 64 KB (TSO over IPv4 and
    /// IPv6) and packets whose checksum is left to finish (the header's NEEDS_CSUM flag), instead
    /// of segmenting and checksumming them in software before the read; without, turns that off.
    pub fn set_offload(&self, gso: bool) -> Result<(), OsError> {
        let flags = if gso {
            libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6
        } else {
            0
        };
        // SAFETY: TUNSETOFFLOAD takes its argument by value and touches no memory of ours.
        if unsafe {
            libc::ioctl(
                self.fd.as_raw_fd(),
                libc::TUNSETOFFLOAD,
                flags as libc::c_ulong,
            )
        } < 0
        {
            return Err(OsError::last(
                "set the offloads of a TUN device (TUNSETOFFLOAD)",
            ));
        }
        Ok(())
    }

    /// Reads one virtio_net_hdr and packet into `buf`; `WouldBlock` when none is queued. Give it
    /// room for the header and the MTU, or for 64 KB and more with GSO on.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the duration of the call.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Writes one virtio_net_hdr and whole IP packet; the kernel receives it as if it arrived on
    /// `nl0`. Fails with `EINVAL` when the first nibble is neither 4 nor 6 or the header does not
    /// fit the packet.
    pub fn write(&self, packet: &[u8]) -> io::Result<usize> {
        // SAFETY: `packet` is valid for reads of `packet.len()` bytes for the duration of the call.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Writes one virtio_net_hdr and packet gathered from `parts`, as `write` does with them
    /// joined (so the payload of a super-packet can be written from where it lies).
    pub fn write_vectored(&self, parts: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let count = libc::c_int::try_from(parts.len())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `IoSlice` is ABI-compatible with `struct iovec` on Unix, and every slice is
        // valid for reads of its length for the duration of the call.
        let n = unsafe { libc::writev(self.fd.as_raw_fd(), parts.as_ptr().cast(), count) };
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
