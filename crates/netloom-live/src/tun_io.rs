//! The driver's packet I/O over an experiment's TUN devices, one per host: it reads the hosts
//! of one worker, watched by epoll together with the worker's mailbox waker, writes to any host,
//! and says whether the devices it reads hand over GSO super-packets. On one machine of a
//! cluster the devices are only that machine's hosts' (`TunIo::part`).

use crate::io::{Framing, PacketIo};
use netloom_os::{OsError, Poller, Tun};
use std::io::{self, IoSlice, Read};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

// The frames a `Tun` exchanges are the ones netloom_packet's `segment` parses.
const _: () = assert!(netloom_packet::segment::VNET_HDR_LEN == netloom_os::VNET_HDR_LEN);

/// The poller token of the waker; host tokens are host indices.
const WAKE: u32 = u32::MAX;
/// The device of a host on another machine.
const NOT_HERE: u32 = u32::MAX;

/// The TUN devices of a testbed as one worker's `PacketIo`.
pub struct TunIo {
    tuns: Arc<Vec<Tun>>,
    /// On one machine of a cluster: the device of each host (by host index), `NOT_HERE` for the
    /// hosts of other machines; `None` when every host's device is here, in host order.
    devices: Option<Arc<Vec<u32>>>,
    /// The hosts this I/O reads.
    reads: Vec<u32>,
    poller: Poller,
    waker: Option<UnixStream>,
    gso: bool,
}

impl TunIo {
    /// Reads the hosts `reads` of `tuns` (host `i` is `tuns[i]`) and writes to any. Turns GSO
    /// on for the hosts it reads: their TCP leaves them in super-packets of up to 64 KB (see
    /// `set_gso`).
    pub fn new(tuns: Arc<Vec<Tun>>, reads: Vec<u32>) -> Result<TunIo, OsError> {
        TunIo::with_devices(tuns, None, reads)
    }

    /// The I/O of one machine of a cluster: `tuns[j]` is host `here[j]`'s device (host indices
    /// of the whole topology), and it reads all of them. Hosts elsewhere are never written to
    /// here: their machines deliver their packets.
    pub fn part(tuns: Arc<Vec<Tun>>, here: &[u32], hosts: usize) -> Result<TunIo, OsError> {
        let mut devices = vec![NOT_HERE; hosts];
        for (j, &h) in here.iter().enumerate() {
            devices[h as usize] = j as u32;
        }
        TunIo::with_devices(tuns, Some(Arc::new(devices)), here.to_vec())
    }

    fn with_devices(
        tuns: Arc<Vec<Tun>>,
        devices: Option<Arc<Vec<u32>>>,
        reads: Vec<u32>,
    ) -> Result<TunIo, OsError> {
        let mut io = TunIo {
            tuns,
            devices,
            reads: Vec::new(),
            poller: Poller::new()?,
            waker: None,
            gso: true,
        };
        let tuns = io.tuns.clone();
        for &i in &reads {
            let tun = &tuns[io.tun_index(i).expect("a host it reads is here")];
            io.poller.add(tun.fd(), i)?;
            tun.set_offload(true)?;
        }
        io.reads = reads;
        Ok(io)
    }

    /// Where host `host`'s device is in `tuns`, if it is on this machine.
    fn tun_index(&self, host: u32) -> Option<usize> {
        let device = match &self.devices {
            Some(devices) => devices[host as usize],
            None => host,
        };
        (device != NOT_HERE).then_some(device as usize)
    }

    /// Host `host`'s device, if it is on this machine.
    fn tun(&self, host: u32) -> io::Result<&Tun> {
        self.tun_index(host).map(|i| &self.tuns[i]).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("host {host} is on another machine"),
            )
        })
    }

    /// Turns GSO on or off for the devices this I/O reads. Off, the hosts' kernels segment TCP
    /// themselves and every read is one packet of at most the MTU. Call before handing the I/O
    /// to a `Driver`, which sizes its buffers by `framing()`.
    pub fn set_gso(&mut self, on: bool) -> Result<(), OsError> {
        for &i in &self.reads {
            self.tun(i)
                .expect("a host it reads is here")
                .set_offload(on)?;
        }
        self.gso = on;
        Ok(())
    }
}

impl PacketIo for TunIo {
    fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<u32>) -> io::Result<bool> {
        let before = ready.len();
        self.poller.wait(timeout, ready).map_err(io::Error::other)?;
        let timed_out = ready.len() == before;
        if let Some(i) = ready.iter().position(|&t| t == WAKE) {
            ready.swap_remove(i);
            if let Some(mut w) = self.waker.as_ref() {
                let mut drain = [0u8; 64];
                while matches!(w.read(&mut drain), Ok(n) if n > 0) {}
            }
        }
        Ok(timed_out)
    }

    fn recv(&mut self, host: u32, buf: &mut [u8]) -> io::Result<usize> {
        self.tun(host)?.read(buf)
    }

    fn send(&mut self, host: u32, packet: &[u8]) -> io::Result<()> {
        self.tun(host)?.write(packet).map(|_| ())
    }

    fn send_vectored(&mut self, host: u32, parts: &[IoSlice<'_>]) -> io::Result<()> {
        self.tun(host)?.write_vectored(parts).map(|_| ())
    }

    fn framing(&self) -> Framing {
        Framing::Vnet { gso: self.gso }
    }

    fn read_host(&mut self, host: u32, on: bool) -> io::Result<()> {
        if self.reads.contains(&host) == on {
            return Ok(());
        }
        self.tun(host)?;
        let tuns = self.tuns.clone();
        let tun = &tuns[self.tun_index(host).expect("checked by `tun`")];
        match on {
            true => {
                self.poller.add(tun.fd(), host).map_err(io::Error::other)?;
                tun.set_offload(self.gso).map_err(io::Error::other)?;
                self.reads.push(host);
            }
            false => {
                self.poller.remove(tun.fd()).map_err(io::Error::other)?;
                self.reads.retain(|&h| h != host);
            }
        }
        Ok(())
    }

    fn watch(&mut self, waker: UnixStream) -> io::Result<()> {
        waker.set_nonblocking(true)?;
        self.poller
            .add(waker.as_fd(), WAKE)
            .map_err(io::Error::other)?;
        self.waker = Some(waker);
        Ok(())
    }
}
