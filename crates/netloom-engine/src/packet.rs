//! Packet descriptors in flight, the slab that owns them (events refer to them by index), and the
//! hand-off that carries one to another worker.

use crate::traffic::{Ack, Segment};
use netloom_link::{Ecn, PacketMeta, Ticket};
use netloom_time::Instant;
use netloom_topo::{NodeId, PipeId};

/// Index of a packet in the slab.
pub type PacketId = u32;

/// What a packet carries, as far as the engine cares. Each kind has its `ttl`: the IPv4 TTL or
/// IPv6 hop limit left, of which each router that forwards the packet takes one and one that
/// would take the last drops it instead (`Output::Refused`). It sits in the padding after the
/// kind's tag, where a field of `Packet` would make the descriptor 8 bytes larger.
#[derive(Clone, Copy, Debug)]
pub enum Body {
    /// A data segment of synthetic flow `flow`, with its ECN field (AIMD flows send ECT(0)).
    Data {
        flow: u32,
        seg: Segment,
        ecn: Ecn,
        ttl: u8,
    },
    /// An acknowledgement travelling back to flow `flow`'s sender; `ece` echoes a CE mark on
    /// the data packet it acknowledges. ACKs are not ECN-capable (RFC 3168, section 6.1.4).
    Ack {
        flow: u32,
        ack: Ack,
        ece: bool,
        ttl: u8,
    },
    /// A packet handed in from outside (a TUN device, a test); `token` is the caller's handle.
    /// `home` is the worker that took it in and holds its payload; `ecn` its IP header's field.
    /// `flow` is a hash of its addresses and ports, for FQ-CoDel.
    External {
        token: u64,
        home: u16,
        ecn: Ecn,
        flow: u32,
        ttl: u8,
    },
}

impl Body {
    /// The TTL or hop limit left, to read or take one off.
    pub fn ttl(&mut self) -> &mut u8 {
        match self {
            Body::Data { ttl, .. } | Body::Ack { ttl, .. } | Body::External { ttl, .. } => ttl,
        }
    }

    /// What a pipe needs to know about the packet besides its size.
    pub(crate) fn meta(&self) -> PacketMeta {
        let ecn = match *self {
            Body::Data { ecn, .. } | Body::External { ecn, .. } => ecn,
            Body::Ack { .. } => Ecn::NotEct,
        };
        let flow = match *self {
            Body::Data { flow, .. } | Body::Ack { flow, .. } => flow,
            // Set by the live driver from the packet's addresses and ports.
            Body::External { flow, .. } => flow,
        };
        PacketMeta { ecn, flow }
    }

    /// A pipe marked the packet CE instead of dropping it.
    pub(crate) fn mark_ce(&mut self) {
        if let Body::Data { ecn, .. } | Body::External { ecn, .. } = self {
            *ecn = Ecn::Ce;
        }
    }
}

/// One packet in flight: a descriptor, never a payload. Laid out in declaration order, `body`
/// first, so that reading its tag and `next` loads both cache lines of a descriptor that
/// straddles two (half of them do: they are 48 bytes); see `warm` in the engine.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Packet {
    pub body: Body,
    /// Size on the wire, used for serialization and byte counters.
    pub bytes: u32,
    /// The node the packet is at, or will arrive at when it leaves its current pipe.
    pub at: NodeId,
    /// Destination host, as an index into the routing tables.
    pub dst_host: u32,
    /// What happens at `at`: the next pipe, `DELIVER` or `NO_ROUTE`. Chosen when the packet
    /// enters a pipe, by the routes of that instant, so the worker to hand it to is known a
    /// whole pipe's delay in advance.
    pub next: PipeId,
    pub sent_at: Instant,
}

/// The TTL a synthetic packet starts with: Linux's default (`net.ipv4.ip_default_ttl`).
pub const DEFAULT_TTL: u8 = 64;

/// `Packet::next` when `at` is the destination.
pub const DELIVER: PipeId = PipeId::MAX;
/// `Packet::next` when `at` has no route to the destination.
pub const NO_ROUTE: PipeId = PipeId::MAX - 1;

/// A packet crossing to the worker that handles its exit at `at` from a pipe (`exit`: the pipe
/// and its ticket): the owner of the next pipe, or of the destination host (of the packet's
/// home, for a packet from outside in a live run: `Ownership::live`). Or, with no exit, a packet
/// made at a router (an ICMP error, a fragment) whose first pipe, `packet.next`, another worker
/// owns: it enters that pipe at `at`. 64 bytes.
#[derive(Clone, Copy, Debug)]
pub struct Handoff {
    pub(crate) at: Instant,
    pub(crate) exit: Option<(PipeId, Ticket)>,
    pub(crate) packet: Packet,
}

impl Handoff {
    /// The packet's intended exit time: hand-off latency never changes it.
    pub fn at(&self) -> Instant {
        self.at
    }

    /// The destination host (by position in `Topology::hosts`) when the packet is delivered
    /// there as it leaves `pipe`, its last pipe; `None` when it has pipes to go.
    pub fn delivers_to(&self) -> Option<u32> {
        (self.packet.next == DELIVER).then_some(self.packet.dst_host)
    }

    /// The caller's handle, for a packet handed in with `Engine::inject`.
    pub fn token(&self) -> Option<u64> {
        match self.packet.body {
            Body::External { token, .. } => Some(token),
            _ => None,
        }
    }

    /// A packet from outside whose payload was shipped along gets its new holder: worker
    /// `home`, which knows it by `token` from now on. Other packets are left alone.
    pub fn rehome(&mut self, token: u64, home: u16) {
        if let Body::External {
            token: t, home: h, ..
        } = &mut self.packet.body
        {
            (*t, *h) = (token, home);
        }
    }
}

/// A free-list arena of packets so that steady-state forwarding never allocates.
#[derive(Default)]
pub struct Slab {
    slots: Vec<Packet>,
    free: Vec<PacketId>,
}

impl Slab {
    pub fn insert(&mut self, p: Packet) -> PacketId {
        match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = p;
                id
            }
            None => {
                self.slots.push(p);
                (self.slots.len() - 1) as PacketId
            }
        }
    }

    pub fn get(&self, id: PacketId) -> &Packet {
        &self.slots[id as usize]
    }

    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        &mut self.slots[id as usize]
    }

    pub fn remove(&mut self, id: PacketId) -> Packet {
        self.free.push(id);
        self.slots[id as usize]
    }

    /// Packets currently in flight.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// The most packets ever in flight at once (the slab never shrinks).
    pub fn capacity_used(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    /// The per-packet state quoted in docs/performance.md; a bigger descriptor is a choice to
    /// make on purpose, not by accident.
    #[test]
    fn a_packet_in_flight_is_small() {
        assert_eq!(std::mem::size_of::<super::Packet>(), 48);
    }

    /// What a cross-core hop carries besides a shipped payload (docs/partition.md).
    #[test]
    fn a_handoff_is_64_bytes() {
        assert_eq!(std::mem::size_of::<super::Handoff>(), 64);
    }
}
