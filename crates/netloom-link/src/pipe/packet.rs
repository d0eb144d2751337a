//! What a pipe and its caller say to each other about a packet: its metadata in (`PacketMeta`,
//! `Ecn`), the pipe's answers out (`Admission`, `Departure`, `Dequeued`, `Hold`, `Ticket`), why
//! it dropped one (`DropCause`), and what it counts (`PipeCounters`). Plain data; the state
//! machine is `pipe`'s.

use netloom_time::Instant;
use serde::{Deserialize, Serialize};
use std::num::NonZeroU32;

/// Why a pipe dropped a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// The queue was full (drop-tail).
    Queue,
    /// RED decided to drop early.
    Red,
    /// CoDel dropped it as it reached the head of the queue.
    Codel,
    /// The loss model (Bernoulli or Gilbert-Elliott) dropped it.
    Loss,
    /// The link was down when the packet arrived or went down while it was in flight.
    LinkDown,
    /// A wireless transmission failed on every attempt up to the retry limit.
    TxFail,
}

/// Per-pipe counters. `*_in` counts every offered packet, `*_out` every released one.
///
/// A duplicate is not offered but is released, so `packets_out` may exceed `packets_in` minus the
/// drops by `duplicates`. `drops_down` counts both packets offered while down and packets whose
/// release came after the pipe went down. The queue high-water marks include the packet being
/// serialized.
///
/// The fields every packet changes come first, in this order (`repr(C)`), so that they share
/// the pipe's first cache line with its epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[repr(C)]
pub struct PipeCounters {
    /// Packets offered (`offer` and `offer_following`), dropped or not; duplicates excluded.
    pub packets_in: u64,
    /// Bytes of the packets counted in `packets_in`, as the caller gave them.
    pub bytes_in: u64,
    /// Packets released while their ticket was still valid, duplicates included.
    pub packets_out: u64,
    /// Bytes of the packets counted in `packets_out`.
    pub bytes_out: u64,
    /// ECN-capable packets marked CE where the AQM (RED or CoDel) would have dropped them.
    pub marks: u64,
    /// The most packets the queue held (waiting or being serialized), sampled each time a
    /// packet was scheduled.
    pub queue_hwm_packets: u64,
    /// The most bytes the queue held, sampled like `queue_hwm_packets`.
    pub queue_hwm_bytes: u64,
    /// Packets refused by the queue limit (drop-tail), including later segments of a
    /// super-packet whose first segment was refused.
    pub drops_queue: u64,
    /// Packets RED dropped early, before the queue limit was checked.
    pub drops_red: u64,
    /// Packets CoDel dropped at the head of the queue.
    pub drops_codel: u64,
    /// Packets lost by the loss model (Bernoulli or Gilbert-Elliott) as they entered.
    pub drops_loss: u64,
    /// Packets offered while the link was down, plus packets whose release came after it went
    /// down.
    pub drops_down: u64,
    /// Wireless packets given up after the retry limit.
    pub drops_tx_fail: u64,
    /// Wireless transmission attempts after the first (link-level retransmissions).
    pub retries: u64,
    /// Copies made by duplication (each also scheduled, and counted out when released); a
    /// copy whose wireless transmission fails is counted here and in `drops_tx_fail`.
    pub duplicates: u64,
}

/// The ECN field of a packet's IP header (RFC 3168), as the AQM needs it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ecn {
    /// Not-ECT (0b00): the transport does not understand marks; the AQM drops.
    #[default]
    NotEct,
    /// ECT(1) (0b01).
    Ect1,
    /// ECT(0) (0b10).
    Ect0,
    /// CE (0b11): already marked on the way.
    Ce,
}

impl Ecn {
    /// The codepoint in the two low bits of `bits` (the IPv4 TOS byte or IPv6 traffic class).
    pub fn from_bits(bits: u8) -> Ecn {
        match bits & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// Can the packet carry a CE mark instead of being dropped? True for ECT(0), ECT(1) and
    /// CE (marking a CE packet again changes nothing, and RFC 3168 forbids dropping it instead).
    pub fn is_capable(self) -> bool {
        self != Ecn::NotEct
    }
}

/// What a pipe needs to know about a packet besides its size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketMeta {
    /// The packet's ECN field.
    pub ecn: Ecn,
    /// Its flow, for FQ-CoDel (which queues it in flow queue `flow` modulo its number of
    /// queues): the synthetic flow's number in `sim`, a hash of the 5-tuple in a live run.
    pub flow: u32,
}

/// Proof that a packet was scheduled by a pipe; handed back to `release`. Never zero, so an
/// optional ticket is as small as a ticket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    pub(super) epoch: NonZeroU32,
}

impl Ticket {
    /// The ticket as a number, never 0, for carrying it to another process (a hand-off's byte
    /// form).
    pub fn to_bits(self) -> u32 {
        self.epoch.get()
    }

    /// The ticket `to_bits` gave; `None` for 0, which no ticket is.
    pub fn from_bits(bits: u32) -> Option<Ticket> {
        NonZeroU32::new(bits).map(|epoch| Ticket { epoch })
    }
}

/// When a scheduled packet leaves the far end of the pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    /// When the packet leaves the far end: the end of its serialization (or trace opportunity,
    /// or last wireless attempt), plus delay ± jitter, plus `ooo_delay` if picked out of order.
    /// The caller calls `release` at this instant.
    pub exit: Instant,
    /// To hand back to `release` with the packet; it tells the pipe whether it went down since.
    pub ticket: Ticket,
}

/// The pipe's answer to an offered packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The pipe refused the packet for this cause (already counted in `PipeCounters`); the
    /// caller discards it.
    Dropped(DropCause),
    /// The pipe accepted the packet; the caller holds it until its exit.
    Scheduled {
        /// The offered packet's own departure.
        first: Departure,
        /// Present when the pipe duplicated the packet: the copy's own departure.
        duplicate: Option<Departure>,
        /// The AQM marked the packet (and its copy) CE instead of dropping it: the caller sets
        /// the packet's ECN field to CE. Counted in `PipeCounters::marks`.
        marked: bool,
    },
}

/// What became of a packet a deferred pipe held, as `Pipe::dequeue` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dequeued {
    /// The packet left the queue: it leaves the far end at `departure.exit`, marked CE if
    /// `marked`.
    Departed {
        /// The caller's handle, as given to `hold`.
        handle: u32,
        /// When it leaves the far end; the caller calls `release` then.
        departure: Departure,
        /// The AQM marked it CE instead of dropping it.
        marked: bool,
    },
    /// The pipe dropped the held packet (CoDel at the head, the link went down, or a wireless
    /// transmission failed); already counted.
    Dropped {
        /// The caller's handle, as given to `hold`.
        handle: u32,
        /// Why.
        cause: DropCause,
    },
}

/// The pipe's answer to a packet given to `hold`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// Refused on arrival (link down, random loss); already counted.
    Dropped(DropCause),
    /// Waiting in the pipe until `dequeue` reports it; `hold` has put in its `evicted` the
    /// packets dropped to make room (perhaps this very one), which the caller discards.
    Held,
}
