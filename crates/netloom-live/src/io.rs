//! The hosts' side of the emulator as the driver sees it: one packet interface per host, to
//! wait on, read from and write to. TUN devices in namespaces in a run (`TunIo`), queues in
//! memory in tests.

use std::io::{self, IoSlice};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// One packet interface per host, indexed like `Topology::hosts`.
pub trait PacketIo {
    /// Waits up to `timeout` (`None`: indefinitely, `Some(ZERO)`: just look) until some host has
    /// a packet to read, and appends their indices to `ready`. May return early and empty (it
    /// should when the driver's mailbox waker is written). Returns true when it returned because
    /// the whole timeout passed with nothing to report, which is how the driver learns how late
    /// its timed wake-ups are.
    fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<u32>) -> io::Result<bool>;
    /// Reads one packet sent by `host`; `ErrorKind::WouldBlock` when there is none.
    fn recv(&mut self, host: u32, buf: &mut [u8]) -> io::Result<usize>;
    /// Hands `packet` to `host`.
    fn send(&mut self, host: u32, packet: &[u8]) -> io::Result<()>;
    /// Hands `host` the packet made of `parts` joined, as `send` would.
    fn send_vectored(&mut self, host: u32, parts: &[IoSlice<'_>]) -> io::Result<()> {
        let joined: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        self.send(host, &joined)
    }
    /// Starts (`on`) or stops reading `host`: `wait` reports it ready only while it is read. A
    /// repartitioning moves a host's reading from one worker's I/O to another's. An I/O that
    /// reports only what its test queued for it may ignore it.
    fn read_host(&mut self, host: u32, on: bool) -> io::Result<()> {
        let _ = (host, on);
        Ok(())
    }
    /// What the frames of `recv` and `send` are; the same for the I/O's whole life.
    fn framing(&self) -> Framing {
        Framing::Plain
    }
    /// Watches `waker` too: `wait` returns soon after a byte is written to its other end, and
    /// drains it. An I/O whose `wait` never blocks long (a test's) may ignore it.
    fn watch(&mut self, waker: UnixStream) -> io::Result<()> {
        drop(waker);
        Ok(())
    }
}

/// What a `PacketIo` reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// Bare IPv4 and IPv6 packets.
    Plain,
    /// Each packet behind a virtio_net_hdr (a TUN device with IFF_VNET_HDR). With `gso`, hosts
    /// may send TCP super-packets of up to 64 KB, and the driver may write some.
    Vnet {
        /// Whether the hosts hand over (and accept) TCP super-packets.
        gso: bool,
    },
}

impl Framing {
    /// Bytes in front of each packet.
    pub fn header_len(self) -> usize {
        match self {
            Framing::Plain => 0,
            Framing::Vnet { .. } => netloom_packet::segment::VNET_HDR_LEN,
        }
    }
}
