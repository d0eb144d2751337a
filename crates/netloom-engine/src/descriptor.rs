//! The stable byte form of a hand-off: 64 bytes, big-endian, for carrying one between processes
//! or machines (docs/wire.md draws the layout). Independent of the in-memory `Handoff`, whose
//! layout the compiler chooses.

use crate::packet::{Body, Handoff, Packet, DELIVER, NO_ROUTE};
use crate::traffic::{Ack, Segment};
use netloom_link::{Ecn, Ticket};
use netloom_time::Instant;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Bytes of one encoded hand-off.
pub const DESCRIPTOR_LEN: usize = 64;

/// `kind` byte of a data segment of a synthetic flow.
const KIND_DATA: u8 = 0;
/// `kind` byte of an ACK of a synthetic flow.
const KIND_ACK: u8 = 1;
/// `kind` byte of a packet from outside, whose payload a worker holds (a payload reference).
const KIND_EXTERNAL: u8 = 2;
/// Bits of the `flags` byte: the ECN codepoint, and an ACK's ECE.
const FLAG_ECN: u8 = 0b11;
const FLAG_ECE: u8 = 0b100;

/// Why 64 bytes are not a hand-off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DescriptorError {
    /// The kind byte (offset 16) is not 0 (data), 1 (ACK) or 2 (from outside).
    #[error("descriptor kind {0} is not 0 (data), 1 (ack) or 2 (external)")]
    Kind(u8),
    /// A bit that must be zero is set (in the flags byte, the reserved byte, or the unused high
    /// bits of a field narrower than its slot): the bytes come from something else, or a newer
    /// layout.
    #[error("descriptor has reserved bits set at byte {offset}")]
    Reserved {
        /// Where, from the descriptor's start.
        offset: usize,
    },
}

/// How many of each thing the receiving engine has: every number a hand-off carries must stay
/// below its bound before the engine takes it in (`Handoff::check`). A hand-off from another
/// process or machine is input: it is checked, never trusted (`Engine::handoff_bounds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandoffBounds {
    /// Pipes of the topology.
    pub pipes: u32,
    /// Nodes of the topology.
    pub nodes: u32,
    /// Hosts of the topology.
    pub hosts: u32,
    /// Synthetic flows of the run (none in a live run).
    pub flows: u32,
    /// Workers of the run.
    pub workers: u16,
}

/// Why a well-formed hand-off does not fit the engine that receives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OutOfBounds {
    /// A pipe number past the topology's pipes (the one left, or the next).
    #[error("pipe {0} is not a pipe of the topology")]
    Pipe(u32),
    /// A packet that enters a pipe names none (delivery or no route instead).
    #[error("a packet that enters a pipe must name it")]
    NoPipe,
    /// A node number past the topology's nodes.
    #[error("node {0} is not a node of the topology")]
    Node(u32),
    /// A host number past the topology's hosts.
    #[error("host {0} is not a host of the topology")]
    Host(u32),
    /// A synthetic flow the run does not have.
    #[error("flow {0} is not a flow of the run")]
    Flow(u32),
    /// A worker the run does not have holds the payload.
    #[error("worker {0} is not a worker of the run")]
    Home(u16),
}

impl Handoff {
    /// Checks every number the hand-off carries against `b`, so that taking it in can neither
    /// index past a table nor be handled by nobody.
    pub fn check(&self, b: &HandoffBounds) -> Result<(), OutOfBounds> {
        let p = &self.packet;
        let pipe = |q: u32| (q < b.pipes).then_some(()).ok_or(OutOfBounds::Pipe(q));
        if let Some((left, _)) = self.exit {
            pipe(left)?;
        }
        match (p.next, self.exit) {
            (DELIVER | NO_ROUTE, Some(_)) => {}
            (DELIVER | NO_ROUTE, None) => return Err(OutOfBounds::NoPipe),
            (next, _) => pipe(next)?,
        }
        if p.at >= b.nodes {
            return Err(OutOfBounds::Node(p.at));
        }
        if p.dst_host >= b.hosts {
            return Err(OutOfBounds::Host(p.dst_host));
        }
        match p.body {
            Body::Data { flow, .. } | Body::Ack { flow, .. } if flow >= b.flows => {
                Err(OutOfBounds::Flow(flow))
            }
            Body::External { home, .. } if home >= b.workers => Err(OutOfBounds::Home(home)),
            _ => Ok(()),
        }
    }
}

/// In a serialized message (a repartitioning's transfer) a hand-off is its byte form.
impl Serialize for Handoff {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.to_bytes())
    }
}

impl<'de> Deserialize<'de> for Handoff {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Handoff, D::Error> {
        let bytes = Vec::<u8>::deserialize(d)?;
        let bytes: &[u8; DESCRIPTOR_LEN] = bytes.as_slice().try_into().map_err(|_| {
            serde::de::Error::invalid_length(bytes.len(), &"a 64-byte hand-off descriptor")
        })?;
        Handoff::from_bytes(bytes).map_err(serde::de::Error::custom)
    }
}

impl Handoff {
    /// The hand-off in its stable byte form.
    pub fn to_bytes(&self) -> [u8; DESCRIPTOR_LEN] {
        let mut b = [0u8; DESCRIPTOR_LEN];
        let p = &self.packet;
        put(&mut b, 0, &self.at.as_nanos().to_be_bytes());
        if let Some((pipe, ticket)) = self.exit {
            put(&mut b, 8, &pipe.to_be_bytes());
            put(&mut b, 12, &ticket.to_bits().to_be_bytes());
        }
        let (kind, flow, ttl, flags, first, second) = match p.body {
            Body::Data {
                flow,
                seg,
                ecn,
                ttl,
            } => (
                KIND_DATA,
                flow,
                ttl,
                ecn_bits(ecn),
                seg.seq,
                u64::from(seg.bytes),
            ),
            Body::Ack {
                flow,
                ack,
                ece,
                ttl,
            } => (
                KIND_ACK,
                flow,
                ttl,
                if ece { FLAG_ECE } else { 0 },
                ack.next,
                ack.echo,
            ),
            Body::External {
                token,
                home,
                ecn,
                flow,
                ttl,
            } => (
                KIND_EXTERNAL,
                flow,
                ttl,
                ecn_bits(ecn),
                token,
                u64::from(home),
            ),
        };
        b[16] = kind;
        b[17] = flags;
        b[18] = ttl;
        put(&mut b, 20, &flow.to_be_bytes());
        put(&mut b, 24, &first.to_be_bytes());
        put(&mut b, 32, &second.to_be_bytes());
        put(&mut b, 40, &p.bytes.to_be_bytes());
        put(&mut b, 44, &p.at.to_be_bytes());
        put(&mut b, 48, &p.dst_host.to_be_bytes());
        put(&mut b, 52, &p.next.to_be_bytes());
        put(&mut b, 56, &p.sent_at.as_nanos().to_be_bytes());
        b
    }

    /// A hand-off from its byte form. Checks the layout only: pipe, node and host numbers are
    /// the receiver's to check against its topology.
    pub fn from_bytes(b: &[u8; DESCRIPTOR_LEN]) -> Result<Handoff, DescriptorError> {
        let ticket = Ticket::from_bits(u32_at(b, 12));
        let exit = match ticket {
            Some(ticket) => Some((u32_at(b, 8), ticket)),
            None if u32_at(b, 8) != 0 => return Err(DescriptorError::Reserved { offset: 8 }),
            None => None,
        };
        let (kind, flags, ttl) = (b[16], b[17], b[18]);
        if b[19] != 0 {
            return Err(DescriptorError::Reserved { offset: 19 });
        }
        let (flow, first, second) = (u32_at(b, 20), u64_at(b, 24), u64_at(b, 32));
        let narrow = |max: u64| {
            (second <= max)
                .then_some(second)
                .ok_or(DescriptorError::Reserved { offset: 32 })
        };
        let body = match kind {
            KIND_DATA | KIND_EXTERNAL if flags & !FLAG_ECN != 0 => {
                return Err(DescriptorError::Reserved { offset: 17 })
            }
            KIND_ACK if flags & !FLAG_ECE != 0 => {
                return Err(DescriptorError::Reserved { offset: 17 })
            }
            KIND_DATA => Body::Data {
                flow,
                seg: Segment {
                    seq: first,
                    bytes: narrow(u64::from(u32::MAX))? as u32,
                },
                ecn: Ecn::from_bits(flags),
                ttl,
            },
            KIND_ACK => Body::Ack {
                flow,
                ack: Ack {
                    next: first,
                    echo: second,
                },
                ece: flags & FLAG_ECE != 0,
                ttl,
            },
            KIND_EXTERNAL => Body::External {
                token: first,
                home: narrow(u64::from(u16::MAX))? as u16,
                ecn: Ecn::from_bits(flags),
                flow,
                ttl,
            },
            other => return Err(DescriptorError::Kind(other)),
        };
        Ok(Handoff {
            at: Instant::from_nanos(u64_at(b, 0)),
            exit,
            packet: Packet {
                body,
                bytes: u32_at(b, 40),
                at: u32_at(b, 44),
                dst_host: u32_at(b, 48),
                next: u32_at(b, 52),
                sent_at: Instant::from_nanos(u64_at(b, 56)),
            },
        })
    }
}

/// The ECN codepoint as the two low bits of the IP header's field.
fn ecn_bits(ecn: Ecn) -> u8 {
    match ecn {
        Ecn::NotEct => 0b00,
        Ecn::Ect1 => 0b01,
        Ecn::Ect0 => 0b10,
        Ecn::Ce => 0b11,
    }
}

fn put(b: &mut [u8; DESCRIPTOR_LEN], at: usize, bytes: &[u8]) {
    b[at..at + bytes.len()].copy_from_slice(bytes);
}

fn u32_at(b: &[u8; DESCRIPTOR_LEN], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8; DESCRIPTOR_LEN], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A hand-off of every kind with fields drawn from `rng`, exit or not.
    fn random_handoff(rng: &mut impl Rng) -> Handoff {
        let ecn = Ecn::from_bits(rng.gen());
        let ttl = rng.gen();
        let body = match rng.gen_range(0..3) {
            0 => Body::Data {
                flow: rng.gen(),
                seg: Segment {
                    seq: rng.gen(),
                    bytes: rng.gen(),
                },
                ecn,
                ttl,
            },
            1 => Body::Ack {
                flow: rng.gen(),
                ack: Ack {
                    next: rng.gen(),
                    echo: rng.gen(),
                },
                ece: rng.gen(),
                ttl,
            },
            _ => Body::External {
                token: rng.gen(),
                home: rng.gen(),
                ecn,
                flow: rng.gen(),
                ttl,
            },
        };
        Handoff {
            at: Instant::from_nanos(rng.gen()),
            exit: rng.gen::<bool>().then(|| {
                (
                    rng.gen(),
                    Ticket::from_bits(rng.gen_range(1..=u32::MAX)).unwrap(),
                )
            }),
            packet: Packet {
                body,
                bytes: rng.gen(),
                at: rng.gen(),
                dst_host: rng.gen(),
                next: rng.gen(),
                sent_at: Instant::from_nanos(rng.gen()),
            },
        }
    }

    #[test]
    fn every_kind_of_handoff_survives_its_bytes() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(16);
        for _ in 0..10_000 {
            let h = random_handoff(&mut rng);
            let bytes = h.to_bytes();
            let back = Handoff::from_bytes(&bytes).unwrap();
            // Debug shows every field, and `Handoff` has no `PartialEq` to keep it that way.
            assert_eq!(format!("{back:?}"), format!("{h:?}"));
            assert_eq!(back.to_bytes(), bytes);
        }
    }

    #[test]
    fn random_bytes_decode_or_are_refused_without_panicking() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(61);
        let mut refused = 0;
        for _ in 0..100_000 {
            let mut b = [0u8; DESCRIPTOR_LEN];
            rng.fill(&mut b[..]);
            // Half of them with a valid kind, so the checks past the kind are reached too.
            if rng.gen() {
                b[16] = rng.gen_range(0..3);
            }
            match Handoff::from_bytes(&b) {
                Ok(h) => assert_eq!(h.to_bytes(), b, "what decodes, encodes back the same"),
                Err(_) => refused += 1,
            }
        }
        assert!(refused > 0);
    }

    #[test]
    fn reserved_bits_and_unknown_kinds_are_refused() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let h = loop {
            let h = random_handoff(&mut rng);
            if matches!(h.packet.body, Body::Data { .. }) && h.exit.is_none() {
                break h;
            }
        };
        let good = h.to_bytes();
        let with = |at: usize, v: u8| {
            let mut b = good;
            b[at] = v;
            Handoff::from_bytes(&b)
        };
        assert_eq!(with(16, 3).unwrap_err(), DescriptorError::Kind(3));
        assert_eq!(
            with(19, 1).unwrap_err(),
            DescriptorError::Reserved { offset: 19 }
        );
        assert_eq!(
            with(17, FLAG_ECE).unwrap_err(),
            DescriptorError::Reserved { offset: 17 }
        );
        // A pipe without a ticket: an exit half written.
        assert_eq!(
            with(11, 1).unwrap_err(),
            DescriptorError::Reserved { offset: 8 }
        );
        // A segment size wider than 32 bits.
        assert_eq!(
            with(32, 1).unwrap_err(),
            DescriptorError::Reserved { offset: 32 }
        );
    }
}
