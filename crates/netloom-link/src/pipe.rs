//! The pipe state machine: queue occupancy, AQM, serialization, delay and impairments.

use crate::config::PipeConfig;
use netloom_time::Instant;

/// Why a pipe dropped a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// The queue was full (drop-tail).
    Queue,
    /// RED decided to drop early.
    Red,
    /// The loss model (Bernoulli or Gilbert-Elliott) dropped it.
    Loss,
    /// The link was down when the packet arrived or went down while it was in flight.
    LinkDown,
}

/// Per-pipe counters. `*_in` counts every offered packet, `*_out` every released one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipeCounters {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    pub drops_queue: u64,
    pub drops_red: u64,
    pub drops_loss: u64,
    pub drops_down: u64,
    pub duplicates: u64,
    pub queue_hwm_packets: u64,
    pub queue_hwm_bytes: u64,
}

/// Proof that a packet was scheduled by a pipe; handed back to `release`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    epoch: u32,
}

/// When a scheduled packet leaves the far end of the pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    pub exit: Instant,
    pub ticket: Ticket,
}

/// The pipe's answer to an offered packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    Dropped(DropCause),
    Scheduled {
        first: Departure,
        /// Present when the pipe duplicated the packet: the copy's own departure.
        duplicate: Option<Departure>,
    },
}

/// One pipe. See the crate documentation for the protocol.
pub struct Pipe {
    config: PipeConfig,
    // implementation state goes here
}

impl Pipe {
    pub fn new(config: PipeConfig, seed: u64) -> Pipe {
        todo!()
    }

    pub fn config(&self) -> &PipeConfig {
        &self.config
    }

    /// Offer a packet of `bytes` arriving at `now`. `now` never goes backwards between calls.
    pub fn offer(&mut self, now: Instant, bytes: u32) -> Admission {
        todo!()
    }

    /// The packet scheduled with `ticket` leaves at `now` (its exit time). Returns false, and
    /// counts a link-down drop, if the pipe went down after the packet was scheduled.
    pub fn release(&mut self, now: Instant, ticket: Ticket, bytes: u32) -> bool {
        todo!()
    }

    /// Change parameters at `now` without flushing: packets already scheduled keep their exit
    /// times; later packets see the new configuration. Going down invalidates tickets in flight.
    pub fn set_config(&mut self, now: Instant, config: PipeConfig) {
        todo!()
    }

    /// Packets and bytes in the queue (waiting or being serialized) at `now`.
    pub fn queue_len(&mut self, now: Instant) -> (u64, u64) {
        todo!()
    }

    pub fn counters(&self) -> &PipeCounters {
        todo!()
    }
}
