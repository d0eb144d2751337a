//! The driver's packet I/O over an experiment's TUN devices, one per host, watched by epoll.

use crate::driver::PacketIo;
use netloom_os::{OsError, Poller, Tun};
use std::io;
use std::time::Duration;

pub struct TunIo<'a> {
    tuns: &'a [Tun],
    poller: Poller,
}

impl<'a> TunIo<'a> {
    /// Watches `tuns`; host `i` is `tuns[i]`.
    pub fn new(tuns: &'a [Tun]) -> Result<TunIo<'a>, OsError> {
        let mut poller = Poller::new()?;
        for (i, tun) in tuns.iter().enumerate() {
            poller.add(tun.fd(), i as u32)?;
        }
        Ok(TunIo { tuns, poller })
    }
}

impl PacketIo for TunIo<'_> {
    fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<u32>) -> io::Result<()> {
        self.poller.wait(timeout, ready).map_err(io::Error::other)
    }

    fn recv(&mut self, host: u32, buf: &mut [u8]) -> io::Result<usize> {
        self.tuns[host as usize].read(buf)
    }

    fn send(&mut self, host: u32, packet: &[u8]) -> io::Result<()> {
        self.tuns[host as usize].write(packet).map(|_| ())
    }
}
