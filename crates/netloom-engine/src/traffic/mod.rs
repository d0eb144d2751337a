//! Synthetic traffic, sans-I/O: flows, their senders and receivers, patterns, the `--traffic` spec.
//!
//! It never reads a clock and knows nothing of pipes or routes: the engine carries the segments
//! and ACKs these state machines produce, and asks each sender when it next needs to be polled.

mod aimd;
mod error;
mod pattern;
mod receiver;
mod source;
mod spec;

pub use aimd::AimdSender;
pub use error::TrafficError;
pub use pattern::{expand, Pattern};
pub use receiver::{AckReceiver, CountingReceiver, Receiver, ReceiverStats};
pub use source::OpenSender;
pub use spec::{parse_spec, TrafficSpec};

use netloom_link::Ecn;
use netloom_time::{Duration, Instant, Rate};
use netloom_topo::NodeId;

/// Size on the wire of an ACK, in bytes (an IPv4 + TCP header without options).
pub const ACK_BYTES: u32 = 40;
/// Most flows a pattern may expand to: each keeps a latency histogram of about 30 kB, so the
/// limit holds a run's flows to about 6 GB at worst (and `all-to-all` to about 450 hosts).
pub const MAX_FLOWS: u128 = 200_000;
/// Header bytes in every AIMD data packet: its wire size is `mss + HEADER_BYTES`.
pub const HEADER_BYTES: u32 = 40;

/// What a flow's sender does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// Constant bit rate: packets of `size` bytes, evenly spaced so the long-run rate is `rate`.
    Cbr {
        /// Long-run sending rate, in bit/s of wire bytes.
        rate: Rate,
        /// Size of every packet on the wire, in bytes.
        size: u32,
    },
    /// Poisson arrivals: exponentially distributed gaps with mean `size`×8/`rate`.
    Poisson {
        /// Mean sending rate, in bit/s of wire bytes.
        rate: Rate,
        /// Size of every packet on the wire, in bytes.
        size: u32,
    },
    /// Exponentially distributed on and off periods with means `on` and `off`; CBR at `rate` while on.
    OnOff {
        /// Sending rate while on, in bit/s of wire bytes; the long-run rate is
        /// rate × on / (on + off).
        rate: Rate,
        /// Size of every packet on the wire, in bytes.
        size: u32,
        /// Mean length of an on period (each at least 1 ns).
        on: Duration,
        /// Mean length of an off period; zero means the source never pauses.
        off: Duration,
    },
    /// A Reno-like window flow with an infinite backlog; `mss` payload bytes per packet, so each
    /// data packet is `mss + HEADER_BYTES` on the wire.
    Aimd {
        /// Payload bytes per data packet: the spec's `size=` less `HEADER_BYTES` (1460 by
        /// default).
        mss: u32,
    },
}

impl SourceKind {
    /// The size on the wire of the flow's data packets, in bytes.
    pub fn packet_bytes(&self) -> u32 {
        match *self {
            SourceKind::Cbr { size, .. }
            | SourceKind::Poisson { size, .. }
            | SourceKind::OnOff { size, .. } => size,
            SourceKind::Aimd { mss } => mss + HEADER_BYTES,
        }
    }
}

/// One synthetic flow between two hosts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    /// The sending host (`Engine::add_flow` refuses a router).
    pub src: NodeId,
    /// The receiving host, which sends the ACKs of an AIMD flow back to `src`.
    pub dst: NodeId,
    /// What the sender sends, and so which receiver the flow gets.
    pub kind: SourceKind,
    /// Per-flow rate cap: the sender never sends faster than this (for AIMD, a pacing limit).
    pub cap: Option<Rate>,
    /// When the sender first wants to transmit.
    pub start: Instant,
    /// When the sender stops for good: it sends nothing at or after this instant (an AIMD flow
    /// not even retransmissions); `None` sends until the run ends.
    pub stop: Option<Instant>,
}

/// A data packet of a flow, as the sender hands it to the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Packet sequence number (0, 1, 2, … in packets, not bytes); a retransmission repeats one.
    pub seq: u64,
    /// Size on the wire.
    pub bytes: u32,
}

/// A cumulative acknowledgement travelling back to an AIMD sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// The next sequence number the receiver expects: every packet below it has arrived. The
    /// same value twice, with data outstanding, is a duplicate ACK.
    pub next: u64,
    /// The sequence number of the packet that triggered this ACK, so the sender times exactly
    /// that packet (and, by Karn's rule, skips it if it was sent more than once).
    pub echo: u64,
}

/// Counters of a sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Data packets handed to the network, retransmissions included.
    pub sent: u64,
    /// Packets sent again (always 0 for open-loop sources).
    pub retransmits: u64,
    /// Retransmission timeouts (always 0 for open-loop sources).
    pub timeouts: u64,
}

/// A flow's sender, enum-dispatched so the engine's hot path has no virtual calls.
///
/// The engine asks `poll_at` when to call next, calls `poll_transmit` at that time until it
/// returns `None`, and passes every ACK to `on_ack`. `poll_at` never returns a time earlier than
/// the latest `now` the sender was given, except before its first poll (then it is `start`).
#[derive(Clone, Debug)]
pub enum Sender {
    /// A CBR, Poisson or on-off source: sends on its own schedule and ignores ACKs.
    Open(OpenSender),
    /// An AIMD window flow, clocked by its ACKs.
    Aimd(AimdSender),
}

impl Sender {
    /// A sender for `flow`, its randomness (Poisson gaps, on-off periods) drawn from `seed`.
    pub fn new(flow: &FlowSpec, seed: u64) -> Sender {
        match flow.kind {
            SourceKind::Aimd { mss } => Sender::Aimd(AimdSender::new(mss, flow.cap, flow.start)),
            kind => Sender::Open(OpenSender::new(kind, flow.cap, flow.start, seed)),
        }
    }

    /// When the sender next needs the engine: to transmit, or (AIMD) when its retransmission
    /// timer expires. `None` means never again without an ACK.
    pub fn poll_at(&self) -> Option<Instant> {
        match self {
            Sender::Open(s) => s.poll_at(),
            Sender::Aimd(s) => s.poll_at(),
        }
    }

    /// The next packet to send at `now`, if one is due; call repeatedly until `None`.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        match self {
            Sender::Open(s) => s.poll_transmit(now),
            Sender::Aimd(s) => s.poll_transmit(now),
        }
    }

    /// An ACK reached the sender, echoing a CE mark if `ece`. Open-loop sources ignore ACKs.
    pub fn on_ack(&mut self, now: Instant, ack: &Ack, ece: bool) {
        if let Sender::Aimd(s) = self {
            s.on_ack(now, ack, ece);
        }
    }

    /// The ECN field of the sender's data packets: an AIMD flow is ECN-capable (ECT(0)) and
    /// halves its window at a CE mark; an open-loop source does not react, so it is not.
    pub fn ecn(&self) -> Ecn {
        match self {
            Sender::Open(_) => Ecn::NotEct,
            Sender::Aimd(_) => Ecn::Ect0,
        }
    }

    /// Packets sent, retransmissions and timeouts so far.
    pub fn stats(&self) -> SenderStats {
        match self {
            Sender::Open(s) => s.stats(),
            Sender::Aimd(s) => s.stats(),
        }
    }
}
