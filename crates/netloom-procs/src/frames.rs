//! A round's batch between two workers as frames: each a 4-byte big-endian length and a sealed
//! GENEVE batch datagram (docs/wire.md), parts in order, the last flagged. What every exchange
//! writes and reads, whatever carries the bytes.

use crate::exchange::ExchangeError;
use netloom_engine::{Handoff, HandoffBounds};
use netloom_wire::{decode, encode_batch, Header, Key, Payload, TAG_LEN};

/// The longest frame after its length, the tag included: 1 MiB, 16,383 hand-offs. A longer
/// length is refused before anything is read into memory for it.
pub const MAX_FRAME: usize = 1 << 20;
/// Bytes of a frame's length.
pub const LENGTH_LEN: usize = 4;

/// Whose frames these are: the run, and the two ends.
#[derive(Clone, Copy)]
pub(crate) struct Ends {
    /// The run's VNI.
    pub vni: u32,
    /// The sending worker.
    pub from: u16,
    /// The receiving worker.
    pub to: u16,
}

/// Appends the frames of `handoffs` for round `window` (with the sender's earliest time,
/// `next`) to `out`, sealed with `key`. An empty batch is one frame: it still carries `next`.
pub(crate) fn put(
    out: &mut Vec<u8>,
    ends: Ends,
    (window, next): (u64, u64),
    handoffs: &[Handoff],
    key: &Key,
) -> Result<(), netloom_wire::WireError> {
    let header = Header {
        vni: ends.vni,
        from: ends.from,
        to: ends.to,
        window,
        part: 0,
        last: true,
        next_ns: next,
    };
    for mut datagram in encode_batch(&header, handoffs, MAX_FRAME - TAG_LEN)? {
        key.seal(&mut datagram);
        out.extend_from_slice(&(datagram.len() as u32).to_be_bytes());
        out.extend_from_slice(&datagram);
    }
    Ok(())
}

/// Where a peer's batch of the round in progress stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Batch {
    /// The part awaited next.
    pub part: u16,
    /// The part flagged last came.
    pub done: bool,
    /// The sender's earliest time, from its parts.
    pub next: u64,
}

/// What a receiver checks a peer's frames against.
pub(crate) struct Check<'a> {
    /// The run's secret.
    pub key: &'a Key,
    /// The run, the peer and this worker.
    pub ends: Ends,
    /// The round in progress.
    pub window: u64,
    /// What the peer's hand-offs must stay below (this worker's engine's).
    pub bounds: &'a HandoffBounds,
}

impl Check<'_> {
    fn frame(&self, what: impl Into<String>) -> ExchangeError {
        ExchangeError::Frame {
            me: self.ends.to,
            peer: self.ends.from,
            what: what.into(),
        }
    }

    /// Takes the whole frames of `bytes[*at..]` into `batch` (their hand-offs into `into`) until
    /// its last part, moving `at` past them; a frame not all there yet is left for later.
    pub(crate) fn take(
        &self,
        bytes: &[u8],
        at: &mut usize,
        batch: &mut Batch,
        into: &mut Vec<Handoff>,
    ) -> Result<(), ExchangeError> {
        while !batch.done {
            let Some(frame) = self.whole(&bytes[*at..])? else {
                return Ok(());
            };
            *at += LENGTH_LEN + frame.len();
            let header = self.open(frame, batch.part, into)?;
            batch.part = batch.part.wrapping_add(1);
            batch.next = header.next_ns;
            batch.done = header.last;
        }
        Ok(())
    }

    /// The frame at the start of `bytes` if all of it is there.
    fn whole<'b>(&self, bytes: &'b [u8]) -> Result<Option<&'b [u8]>, ExchangeError> {
        let Some(length) = bytes.get(..LENGTH_LEN) else {
            return Ok(None);
        };
        let length = u32::from_be_bytes(length.try_into().expect("4 bytes")) as usize;
        if length > MAX_FRAME {
            return Err(self.frame(format!(
                "{length} bytes long, more than the {MAX_FRAME} a frame may be"
            )));
        }
        Ok(bytes.get(LENGTH_LEN..LENGTH_LEN + length))
    }

    /// Opens, decodes and checks `frame`, part `part` of the round's batch; its hand-offs go
    /// into `into`.
    fn open(
        &self,
        frame: &[u8],
        part: u16,
        into: &mut Vec<Handoff>,
    ) -> Result<Header, ExchangeError> {
        let opened = self
            .key
            .open(frame)
            .map_err(|e| self.frame(e.to_string()))?;
        let datagram = decode(opened).map_err(|e| self.frame(e.to_string()))?;
        let h = datagram.header;
        let Ends { vni, from, to } = self.ends;
        if (h.vni, h.from, h.to) != (vni, from, to) {
            return Err(self.frame(format!(
                "run {} from worker {} to worker {}, where run {vni} from worker {from} to \
                 worker {to} was awaited",
                h.vni, h.from, h.to
            )));
        }
        if (h.window, h.part) != (self.window, part) {
            return Err(self.frame(format!(
                "round {} part {}, where round {} part {part} was awaited",
                h.window, h.part, self.window
            )));
        }
        let Payload::Descriptors(handoffs) = datagram.payload else {
            return Err(self.frame("an IP packet, where a batch of hand-offs was awaited"));
        };
        for handoff in &handoffs {
            handoff
                .check(self.bounds)
                .map_err(|error| ExchangeError::OutOfBounds {
                    me: to,
                    peer: from,
                    error,
                })?;
        }
        into.extend(handoffs);
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        Key::from_hex(&"07".repeat(32)).unwrap()
    }

    const ENDS: Ends = Ends {
        vni: 7,
        from: 1,
        to: 0,
    };
    const BOUNDS: HandoffBounds = HandoffBounds {
        pipes: 1,
        nodes: 1,
        hosts: 1,
        flows: 1,
        workers: 2,
    };

    fn check(window: u64) -> Check<'static> {
        static KEY: std::sync::OnceLock<Key> = std::sync::OnceLock::new();
        Check {
            key: KEY.get_or_init(key),
            ends: ENDS,
            window,
            bounds: &BOUNDS,
        }
    }

    fn zeros() -> Handoff {
        Handoff::from_bytes(&[0; netloom_engine::DESCRIPTOR_LEN]).unwrap()
    }

    #[test]
    fn a_batch_taken_a_byte_at_a_time_is_the_batch_sent_and_leaves_the_next_rounds_bytes() {
        // 20,000 hand-offs: two frames (16,383 fit in one).
        let sent = vec![zeros(); 20_000];
        let mut bytes = Vec::new();
        put(&mut bytes, ENDS, (3, 42), &sent, &key()).unwrap();
        let round = bytes.len();
        put(&mut bytes, ENDS, (4, 50), &[], &key()).unwrap();
        let (mut at, mut batch, mut into) = (0, Batch::default(), Vec::new());
        for end in 0..=round {
            check(3)
                .take(&bytes[..end], &mut at, &mut batch, &mut into)
                .unwrap();
            assert_eq!(batch.done, end == round, "after {end} bytes");
        }
        assert_eq!((batch.part, batch.next, into.len()), (2, 42, 20_000));
        // The next round's frame is still there, whole.
        let mut next = Batch::default();
        check(4)
            .take(&bytes, &mut at, &mut next, &mut into)
            .unwrap();
        assert_eq!((next.done, next.next, at), (true, 50, bytes.len()));
    }

    #[test]
    fn frames_not_of_this_round_run_or_secret_are_refused_saying_why() {
        let refused = |bytes: &[u8], window: u64| {
            let (mut at, mut batch) = (0, Batch::default());
            check(window)
                .take(bytes, &mut at, &mut batch, &mut Vec::new())
                .unwrap_err()
                .to_string()
        };
        let mut ours = Vec::new();
        put(&mut ours, ENDS, (3, 0), &[], &key()).unwrap();
        assert_eq!(
            refused(&ours, 4),
            "worker 0: a frame from worker 1: round 3 part 0, where round 4 part 0 was awaited"
        );
        let mut other_run = Vec::new();
        put(&mut other_run, Ends { vni: 8, ..ENDS }, (3, 0), &[], &key()).unwrap();
        assert!(refused(&other_run, 3).contains("run 8 from worker 1 to worker 0, where run 7"));
        let mut forged = Vec::new();
        let stranger = Key::from_hex(&"08".repeat(32)).unwrap();
        put(&mut forged, ENDS, (3, 0), &[], &stranger).unwrap();
        assert!(refused(&forged, 3).ends_with("the tag does not match the run's secret"));
        // A length past the limit is refused before its bytes come.
        let long = ((MAX_FRAME + 1) as u32).to_be_bytes();
        assert!(refused(&long, 3).contains("1048577 bytes long, more than the 1048576"));
    }
}
