//! Owns the driver's side of a live capture (`Tap`, its `Record`s, `When`); not the stream.
//!
//! Plain data, a leaf: `Order::Capture` carries a `Tap` to the driver, which offers it copies of
//! what its pipes do with packets; `capture` makes it with the `CaptureStream` that drains its
//! queue into pcapng on a client's thread.

use netloom_engine::tap::{Seen, Tapped};
use netloom_link::DropCause;
use netloom_time::Instant;
use netloom_topo::PipeId;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::Arc;

/// Bytes of a packet kept by default (tcpdump's default snap length).
pub const SNAPLEN: u32 = 262_144;

/// Which instant of a packet's passage a capture records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum When {
    /// When it entered the pipe.
    Enter,
    /// When it left the pipe (default): what the far end sees.
    #[default]
    Exit,
}

/// The figures of one capture, shared by its tap and its stream.
#[derive(Debug, Default)]
pub struct CaptureStats {
    /// Packets copied into the queue.
    pub captured: AtomicU64,
    /// Packets not copied because the queue was full (the writer fell behind).
    pub dropped: AtomicU64,
}

/// One packet copy: the index of its pipe in the capture, when, its length, the bytes kept,
/// and why the pipe dropped it if it did.
#[derive(Debug)]
pub(crate) struct Record {
    pub iface: u32,
    pub at: Instant,
    pub original_len: u32,
    pub data: Vec<u8>,
    pub dropped: Option<DropCause>,
}

/// The driver's side of a capture: which pipes, which instant, how many bytes, and the queue.
#[derive(Clone, Debug)]
pub(crate) struct Tap {
    /// The captured pipes; a pipe's index here is its interface in the file.
    pub pipes: Vec<PipeId>,
    pub when: When,
    pub snaplen: u32,
    pub queue: SyncSender<Record>,
    pub stats: Arc<CaptureStats>,
    /// Set once the stream is found gone.
    pub gone: bool,
}

impl Tap {
    /// The interface of `t`'s pipe, if this capture records what happened.
    pub fn wants(&self, t: &Tapped) -> Option<u32> {
        let recorded = match (t.seen, self.when) {
            (Seen::Dropped(_), _) | (Seen::Entered, When::Enter) | (Seen::Left, When::Exit) => true,
            (Seen::Entered, When::Exit) | (Seen::Left, When::Enter) => false,
        };
        if !recorded {
            return None;
        }
        self.pipes
            .iter()
            .position(|&p| p == t.pipe)
            .map(|i| i as u32)
    }

    /// Queues `record`, or counts it dropped when the queue is full. False, and `gone` set, once
    /// the capture's stream is gone: the tap is then removed.
    pub fn offer(&mut self, record: Record) -> bool {
        match self.queue.try_send(record) {
            Ok(()) => {
                self.stats.captured.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Full(_)) => {
                self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Disconnected(_)) => {
                self.gone = true;
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netloom_engine::tap::Carried;

    #[test]
    fn a_tap_takes_the_instant_asked_for_and_drops_always() {
        let (queue, _rx) = std::sync::mpsc::sync_channel(1);
        let tap = Tap {
            pipes: vec![4],
            when: When::Exit,
            snaplen: SNAPLEN,
            queue,
            stats: Arc::default(),
            gone: false,
        };
        let seen = |pipe, seen| Tapped {
            pipe,
            at: Instant(1),
            seen,
            carried: Carried::External { token: 0 },
            bytes: 60,
        };
        assert_eq!(tap.wants(&seen(4, Seen::Left)), Some(0));
        assert_eq!(tap.wants(&seen(4, Seen::Entered)), None);
        assert_eq!(tap.wants(&seen(4, Seen::Dropped(DropCause::Red))), Some(0));
        assert_eq!(tap.wants(&seen(5, Seen::Left)), None, "not its pipe");
    }
}
