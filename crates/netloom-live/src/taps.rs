//! Owns the captures running on one worker: which of its pipes are tapped, and the copy of each
//! packet they see offered to every capture that wants it. Not the stream: a capture's queue is
//! drained into pcapng on its client's thread (`capture`).

use crate::payload::untoken;
use crate::pool::Pool;
use crate::tap::{Record, Tap};
use netloom_engine::tap::{Carried, Seen};
use netloom_engine::Engine;
use netloom_packet::segment::{MAX_HEAD, VNET_HDR_LEN};
use netloom_topo::PipeId;

/// The captures of one worker.
pub(crate) struct Taps {
    taps: Vec<Tap>,
    /// Where a segment's headers are rebuilt before they are copied.
    head: [u8; MAX_HEAD],
}

impl Taps {
    /// No capture.
    pub(crate) fn new() -> Taps {
        Taps {
            taps: Vec::new(),
            head: [0; MAX_HEAD],
        }
    }

    /// Whether no capture runs (the loop then has nothing to copy).
    pub(crate) fn is_empty(&self) -> bool {
        self.taps.is_empty()
    }

    /// Starts `tap`: taps the pipes it wants that this worker owns.
    pub(crate) fn add(&mut self, tap: Tap, engine: &mut Engine) {
        for &pipe in &tap.pipes {
            if engine.owns_pipe(pipe) {
                engine.set_tap(pipe, true);
            }
        }
        self.taps.push(tap);
    }

    /// Copies what tapped pipes saw into their captures' queues (the packets' bytes from `pool`,
    /// their IP headers `header_len` into a buffer); forgets captures whose client is gone, and
    /// stops tapping pipes no capture wants any more. Called before the outputs are written: a
    /// packet dropped or delivered gives its buffer back there.
    pub(crate) fn copy(&mut self, engine: &mut Engine, pool: &Pool, header_len: usize) {
        let mut ended = false;
        for t in engine.drain_tapped() {
            let Carried::External { token } = t.carried else {
                continue;
            };
            for tap in &mut self.taps {
                let Some(iface) = tap.wants(&t) else {
                    continue;
                };
                let (_, id, k) = untoken(token);
                let frame = pool.frame(id);
                let mut data = Vec::with_capacity((t.bytes.min(tap.snaplen)) as usize);
                match pool.gso(id) {
                    None => data.extend_from_slice(&frame[header_len..]),
                    Some(g) => {
                        let (head, payload) = g.build(frame, k..k + 1, &mut self.head);
                        data.extend_from_slice(&self.head[VNET_HDR_LEN..head]);
                        data.extend_from_slice(&frame[payload]);
                    }
                }
                data.truncate(tap.snaplen as usize);
                ended |= !tap.offer(Record {
                    iface,
                    at: t.at,
                    original_len: t.bytes,
                    data,
                    dropped: match t.seen {
                        Seen::Dropped(cause) => Some(cause),
                        Seen::Entered | Seen::Left => None,
                    },
                });
            }
        }
        if ended {
            self.taps.retain(|tap| !tap.gone);
            self.retap(engine);
        }
    }

    /// Taps the pipes that this worker owns and some capture wants, and only those (after a
    /// move changed what it owns, or a capture ended).
    pub(crate) fn retap(&self, engine: &mut Engine) {
        for pipe in 0..engine.topology().pipes.len() as PipeId {
            let wanted = self.taps.iter().any(|tap| tap.pipes.contains(&pipe));
            engine.set_tap(pipe, wanted && engine.owns_pipe(pipe));
        }
    }
}
