//! Taps on pipes, for packet capture: the engine reports every packet that enters, leaves or is
//! dropped by a tapped pipe, with the instant, so that a capture sees the emulated times. Pipes
//! that no one taps cost one flag test per packet.

use netloom_link::DropCause;
use netloom_time::Instant;
use netloom_topo::PipeId;

/// What a tapped pipe did with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// The pipe took the packet in (its queue, or straight onto the wire).
    Entered,
    /// The packet left the pipe at its far end.
    Left,
    /// The pipe dropped the packet, for this cause.
    Dropped(DropCause),
}

/// Which packet it was, as the engine knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carried {
    /// A packet handed in from outside, by the caller's handle (`Engine::inject`).
    External {
        /// The caller's handle.
        token: u64,
    },
    /// Data segment `seq` of synthetic flow `flow`.
    Data {
        /// The flow, in the order flows were added.
        flow: u32,
        /// Its sequence number, in packets.
        seq: u64,
    },
    /// An acknowledgement to flow `flow`'s sender, of every packet below `next`.
    Ack {
        /// The flow.
        flow: u32,
        /// The next sequence number the receiver expects.
        next: u64,
    },
}

/// One packet seen by a tapped pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tapped {
    /// The pipe.
    pub pipe: PipeId,
    /// When (the emulated instant: entry, exit or drop).
    pub at: Instant,
    /// What happened.
    pub seen: Seen,
    /// Which packet.
    pub carried: Carried,
    /// Its size on the wire, bytes.
    pub bytes: u32,
}

/// A drop cause as captures name it, live or in virtual time: a pcapng packet's comment says
/// "dropped: red".
pub fn cause_name(cause: DropCause) -> &'static str {
    match cause {
        DropCause::Queue => "queue",
        DropCause::Red => "red",
        DropCause::Codel => "codel",
        DropCause::Loss => "loss",
        DropCause::LinkDown => "link-down",
        DropCause::TxFail => "tx-fail",
    }
}
