//! The driver's packet I/O over an experiment's TUN devices, one per host, watched by epoll
//! together with the control channel's waker, and whether the devices hand over GSO
//! super-packets.

use crate::driver::{Framing, PacketIo};
use netloom_os::{OsError, Poller, Tun};
use std::io::{self, IoSlice, Read};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// The poller token of the waker; host tokens are host indices.
const WAKE: u32 = u32::MAX;

pub struct TunIo<'a> {
    tuns: &'a [Tun],
    poller: Poller,
    waker: Option<UnixStream>,
    woken: bool,
    gso: bool,
}

impl<'a> TunIo<'a> {
    /// Watches `tuns` (host `i` is `tuns[i]`) and, if given, the read end of the control
    /// channel's waker, so a request interrupts a sleeping wait. Turns GSO on: hosts' TCP
    /// leaves them in super-packets of up to 64 KB (see `set_gso`).
    pub fn new(tuns: &'a [Tun], waker: Option<UnixStream>) -> Result<TunIo<'a>, OsError> {
        let mut poller = Poller::new()?;
        for (i, tun) in tuns.iter().enumerate() {
            poller.add(tun.fd(), i as u32)?;
            tun.set_offload(true)?;
        }
        if let Some(w) = &waker {
            w.set_nonblocking(true).map_err(|source| OsError::Io {
                what: "make the control waker non-blocking".into(),
                source,
            })?;
            poller.add(w.as_fd(), WAKE)?;
        }
        Ok(TunIo {
            tuns,
            poller,
            waker,
            woken: false,
            gso: true,
        })
    }

    /// Turns GSO on or off for every device. Off, the hosts' kernels segment TCP themselves and
    /// every read is one packet of at most the MTU. Call before handing the I/O to a `Driver`,
    /// which sizes its buffers by `framing()`.
    pub fn set_gso(&mut self, on: bool) -> Result<(), OsError> {
        for tun in self.tuns {
            tun.set_offload(on)?;
        }
        self.gso = on;
        Ok(())
    }
}

impl PacketIo for TunIo<'_> {
    fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<u32>) -> io::Result<()> {
        self.poller.wait(timeout, ready).map_err(io::Error::other)?;
        if let Some(i) = ready.iter().position(|&t| t == WAKE) {
            ready.swap_remove(i);
            self.woken = true;
            if let Some(mut w) = self.waker.as_ref() {
                let mut drain = [0u8; 64];
                while matches!(w.read(&mut drain), Ok(n) if n > 0) {}
            }
        }
        Ok(())
    }

    fn recv(&mut self, host: u32, buf: &mut [u8]) -> io::Result<usize> {
        self.tuns[host as usize].read(buf)
    }

    fn send(&mut self, host: u32, packet: &[u8]) -> io::Result<()> {
        self.tuns[host as usize].write(packet).map(|_| ())
    }

    fn send_vectored(&mut self, host: u32, parts: &[IoSlice<'_>]) -> io::Result<()> {
        self.tuns[host as usize].write_vectored(parts).map(|_| ())
    }

    fn framing(&self) -> Framing {
        Framing::Vnet { gso: self.gso }
    }

    fn take_wake(&mut self) -> bool {
        std::mem::take(&mut self.woken)
    }
}
