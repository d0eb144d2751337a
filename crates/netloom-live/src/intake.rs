//! Owns how a frame a host sends gets a payload buffer: read into a large one where GSO may
//! bring a super-packet, moved into a small one when it fits, and read anyway (then kept or
//! counted lost) when every buffer is in flight, so a host is never stalled by a full pool.

use crate::accuracy::Accuracy;
use crate::io::{Framing, PacketIo};
use crate::pool::{Pool, Size};
use netloom_packet::ip::{endpoints, Malformed};
use netloom_packet::segment::{self, Frame, Gso};
use std::io;
use std::net::IpAddr;

/// One worker's reads from its hosts.
pub(crate) struct Intake {
    framing: Framing,
    /// Read buffer for packets that arrive when every pool buffer is in flight.
    overflow: Box<[u8]>,
}

impl Intake {
    /// Reads of frames in `framing`, the largest `largest` bytes.
    pub(crate) fn new(framing: Framing, largest: usize) -> Intake {
        Intake {
            framing,
            overflow: vec![0; largest].into_boxed_slice(),
        }
    }

    /// What a frame read is: a packet or a super-packet (`Gso`), and its source and destination
    /// addresses; `Malformed` when it is neither.
    pub(crate) fn parse(&self, frame: &[u8]) -> Result<(Option<Gso>, (IpAddr, IpAddr)), Malformed> {
        let gso = match self.framing {
            Framing::Plain => None,
            Framing::Vnet { .. } => match segment::parse(frame)? {
                Frame::Single => None,
                Frame::Super(g) => Some(g),
            },
        };
        Ok((gso, endpoints(&frame[self.framing.header_len()..])?))
    }

    /// Reads one frame from `host` into a pool buffer and returns the buffer and the frame's
    /// length; `None` when the host has nothing queued, or when a frame was dropped for want of
    /// a buffer (the others then get their turn).
    pub(crate) fn read(
        &mut self,
        io: &mut impl PacketIo,
        host: u32,
        pool: &mut Pool,
        accuracy: &mut Accuracy,
    ) -> io::Result<Option<(u32, usize)>> {
        // The size of a frame is known only once it is read, so with GSO it is read into a
        // large buffer; one that fits a small buffer moves there (a copy of at most the MTU), so
        // a small packet in flight never pins 64 KB.
        let size = if pool.bytes(Size::Large) > 0 {
            Size::Large
        } else {
            Size::Small
        };
        let Some(id) = pool.take(size) else {
            return self.read_without_buffer(io, host, pool, accuracy);
        };
        let len = match io.recv(host, pool.space(id)) {
            Ok(len) => len,
            Err(e) => {
                pool.put_back(id);
                return match e.kind() {
                    io::ErrorKind::WouldBlock => Ok(None),
                    _ => Err(e),
                };
            }
        };
        if size == Size::Large && len <= pool.bytes(Size::Small) {
            if let Some(small) = pool.take(Size::Small) {
                pool.copy(id, small, len);
                pool.put_back(id);
                return Ok(Some((small, len)));
            }
        }
        Ok(Some((id, len)))
    }

    /// Every buffer of the size a read needs is in flight: reads the frame anyway, so the host
    /// is not stalled, and keeps it if a small buffer is free and holds it; otherwise it is lost
    /// outside the model's say, each of its segments a physical drop.
    fn read_without_buffer(
        &mut self,
        io: &mut impl PacketIo,
        host: u32,
        pool: &mut Pool,
        accuracy: &mut Accuracy,
    ) -> io::Result<Option<(u32, usize)>> {
        let len = match io.recv(host, &mut self.overflow) {
            Ok(len) => len,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) => return Err(e),
        };
        if len <= pool.bytes(Size::Small) {
            if let Some(id) = pool.take(Size::Small) {
                pool.space(id)[..len].copy_from_slice(&self.overflow[..len]);
                return Ok(Some((id, len)));
            }
        }
        let segments = match (self.framing, segment::parse(&self.overflow[..len])) {
            (Framing::Vnet { .. }, Ok(Frame::Super(g))) => g.segments(),
            _ => 1,
        };
        for _ in 0..segments {
            accuracy.record_physical_drop();
        }
        Ok(None)
    }
}
