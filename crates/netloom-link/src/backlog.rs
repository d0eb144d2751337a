//! The queue's occupancy: when each accepted packet finishes serialization, not the packets themselves.

use crate::config::QueueLimit;
use netloom_time::Instant;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Packets accepted whose serialization has not finished yet, as (tx_end, bytes) in FIFO order.
/// The ring buffer keeps its capacity, so steady-state operation does not allocate.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Backlog {
    entries: VecDeque<(Instant, u32)>,
    bytes: u64,
    /// The latest `tx_end` pushed: once `now` reaches it every entry is done, and `drain`
    /// forgets them without reading the ring buffer, a cache miss per packet offered on large
    /// topologies, where most pipes' queues are empty again by their next packet.
    last_end: Instant,
}

impl Backlog {
    /// Forgets packets whose serialization finished by `now`.
    #[inline]
    pub(crate) fn drain(&mut self, now: Instant) {
        if now >= self.last_end {
            self.clear();
            return;
        }
        while let Some(&(tx_end, bytes)) = self.entries.front() {
            if tx_end > now {
                break;
            }
            self.entries.pop_front();
            self.bytes -= u64::from(bytes);
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, tx_end: Instant, bytes: u32) {
        self.entries.push_back((tx_end, bytes));
        self.bytes += u64::from(bytes);
        self.last_end = self.last_end.max(tx_end);
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }

    #[inline]
    pub(crate) fn packets(&self) -> u64 {
        self.entries.len() as u64
    }

    #[inline]
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Occupancy in the limit's unit (packets or bytes), as RED measures it.
    #[inline]
    pub(crate) fn level(&self, limit: QueueLimit) -> f64 {
        match limit {
            QueueLimit::Packets(_) => self.packets() as f64,
            QueueLimit::Bytes(_) => self.bytes as f64,
        }
    }

    /// Drop-tail: would the queue still be within `limit` after adding a packet of `bytes`?
    #[inline]
    pub(crate) fn fits(&self, limit: QueueLimit, bytes: u32) -> bool {
        match limit {
            QueueLimit::Packets(n) => self.packets() < u64::from(n),
            QueueLimit::Bytes(b) => self.bytes + u64::from(bytes) <= b,
        }
    }
}
