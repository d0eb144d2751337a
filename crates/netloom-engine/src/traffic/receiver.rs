//! Flow receivers: goodput, duplicates and AIMD's cumulative ACKs; not latency (the engine's).

use super::{Ack, FlowSpec, Segment, SourceKind};
use netloom_time::Instant;
use std::collections::BTreeSet;

/// Counters of a receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    /// Distinct packets delivered (goodput in packets).
    pub packets: u64,
    /// Wire bytes of those distinct packets (goodput in bytes).
    pub bytes: u64,
    /// Packets that had already arrived (retransmitted twice over, duplicated by a pipe, or, for
    /// open-loop flows, older than the duplicate-detection window).
    pub duplicates: u64,
}

/// A flow's receiver, enum-dispatched like `Sender`.
#[derive(Clone, Debug)]
pub enum Receiver {
    /// The receiver of an open-loop flow: counts distinct packets and sends nothing back.
    Counting(CountingReceiver),
    /// The receiver of an AIMD flow: answers every data packet with a cumulative ACK.
    Ack(AckReceiver),
}

impl Receiver {
    /// An ACKing receiver for AIMD flows, a counting one for open-loop flows.
    pub fn new(flow: &FlowSpec) -> Receiver {
        match flow.kind {
            SourceKind::Aimd { .. } => Receiver::Ack(AckReceiver::default()),
            _ => Receiver::Counting(CountingReceiver::default()),
        }
    }

    /// A data packet arrived; returns the ACK to send back, if the flow uses ACKs.
    pub fn on_data(&mut self, now: Instant, seg: Segment) -> Option<Ack> {
        match self {
            Receiver::Counting(r) => {
                r.on_data(now, seg);
                None
            }
            Receiver::Ack(r) => Some(r.on_data(now, seg)),
        }
    }

    /// Distinct packets and bytes received, and duplicates, so far.
    pub fn stats(&self) -> ReceiverStats {
        match self {
            Receiver::Counting(r) => r.stats(),
            Receiver::Ack(r) => r.stats(),
        }
    }
}

/// Sequence numbers an open-loop receiver remembers behind the newest one. Lost packets are never
/// resent, so a cumulative "next expected" would stall at the first loss; a sliding bitmap
/// bounds the memory instead (512 bytes per flow).
const WINDOW: u64 = 4096;

/// Receiver of an open-loop flow: counts distinct packets over a sliding window of sequence
/// numbers. A packet more than `WINDOW` behind the newest counts as a duplicate, since it can no
/// longer be told apart from one.
#[derive(Clone, Debug)]
pub struct CountingReceiver {
    /// One past the highest sequence number seen.
    top: u64,
    /// Bit `seq % WINDOW` is set if `seq` in [top − WINDOW, top) has arrived.
    seen: Box<[u64; (WINDOW / 64) as usize]>,
    stats: ReceiverStats,
}

impl Default for CountingReceiver {
    fn default() -> Self {
        CountingReceiver {
            top: 0,
            seen: Box::new([0; (WINDOW / 64) as usize]),
            stats: ReceiverStats::default(),
        }
    }
}

impl CountingReceiver {
    /// Counts a data packet as new or as a duplicate; `now` is not used.
    pub fn on_data(&mut self, _now: Instant, seg: Segment) {
        let seq = seg.seq;
        if seq >= self.top {
            // Forget the slots the window slides over.
            if seq + 1 - self.top >= WINDOW {
                self.seen.fill(0);
            } else {
                for s in self.top..seq {
                    self.clear(s);
                }
            }
            self.top = seq + 1;
        } else if self.top - seq > WINDOW || self.is_set(seq) {
            self.stats.duplicates += 1;
            return;
        }
        let (word, bit) = slot(seq);
        self.seen[word] |= bit;
        self.stats.packets += 1;
        self.stats.bytes += seg.bytes as u64;
    }

    fn is_set(&self, seq: u64) -> bool {
        let (word, bit) = slot(seq);
        self.seen[word] & bit != 0
    }

    fn clear(&mut self, seq: u64) {
        let (word, bit) = slot(seq);
        self.seen[word] &= !bit;
    }

    /// Distinct packets and bytes received, and duplicates, so far.
    pub fn stats(&self) -> ReceiverStats {
        self.stats
    }
}

fn slot(seq: u64) -> (usize, u64) {
    let i = seq % WINDOW;
    ((i / 64) as usize, 1 << (i % 64))
}

/// Receiver of an AIMD flow: buffers out-of-order packets and ACKs every packet cumulatively,
/// duplicates included (as TCP does, so the sender sees duplicate ACKs).
#[derive(Clone, Debug, Default)]
pub struct AckReceiver {
    /// Next sequence number expected in order.
    next: u64,
    /// Packets above `next` that have arrived; bounded by the sender's window.
    above: BTreeSet<u64>,
    stats: ReceiverStats,
}

impl AckReceiver {
    /// Takes in a data packet and returns the cumulative ACK to send back, echoing its sequence
    /// number (a duplicate is counted and acknowledged too); `now` is not used.
    pub fn on_data(&mut self, _now: Instant, seg: Segment) -> Ack {
        let seq = seg.seq;
        if seq < self.next || self.above.contains(&seq) {
            self.stats.duplicates += 1;
        } else {
            self.stats.packets += 1;
            self.stats.bytes += seg.bytes as u64;
            if seq == self.next {
                self.next += 1;
                while self.above.remove(&self.next) {
                    self.next += 1;
                }
            } else {
                self.above.insert(seq);
            }
        }
        Ack {
            next: self.next,
            echo: seq,
        }
    }

    /// Distinct packets and bytes received, and duplicates, so far.
    pub fn stats(&self) -> ReceiverStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(seq: u64) -> Segment {
        Segment { seq, bytes: 100 }
    }

    #[test]
    fn ack_receiver_acks_cumulatively_and_counts_each_packet_once() {
        let mut r = AckReceiver::default();
        let now = Instant::ZERO;
        let acks: Vec<(u64, u64)> = [0, 1, 3, 4, 2, 3, 5]
            .into_iter()
            .map(|s| {
                let a = r.on_data(now, seg(s));
                (a.next, a.echo)
            })
            .collect();
        // 3 and 4 arrive before 2: duplicate ACKs of 2; 2 fills the hole; 3 again is a duplicate.
        assert_eq!(
            acks,
            [(1, 0), (2, 1), (2, 3), (2, 4), (5, 2), (5, 3), (6, 5)]
        );
        let st = r.stats();
        assert_eq!((st.packets, st.bytes, st.duplicates), (6, 600, 1));
    }

    #[test]
    fn counting_receiver_detects_duplicates_across_reordering() {
        let mut r = CountingReceiver::default();
        for s in [0, 2, 1, 2, 7, 5, 0, 7, 6] {
            r.on_data(Instant::ZERO, seg(s));
        }
        let st = r.stats();
        assert_eq!((st.packets, st.duplicates), (6, 3));
        assert_eq!(st.bytes, 600);
    }

    #[test]
    fn counting_receiver_forgets_beyond_its_window() {
        let mut r = CountingReceiver::default();
        let mut feed = |s| r.on_data(Instant::ZERO, seg(s));
        feed(10); // new
        feed(10 + WINDOW); // new: the window slides, 10 drops out of it
        feed(10); // more than WINDOW behind the newest: a duplicate, as far as anyone can tell
        feed(11); // never seen and just inside the window: new
        feed(11); // seen: a duplicate
        let st = r.stats();
        assert_eq!((st.packets, st.duplicates), (3, 2));
    }

    #[test]
    fn receiver_kind_follows_the_flow() {
        let mut flow = FlowSpec {
            src: 0,
            dst: 1,
            kind: SourceKind::Aimd { mss: 1460 },
            cap: None,
            start: Instant::ZERO,
            stop: None,
        };
        assert!(Receiver::new(&flow)
            .on_data(Instant::ZERO, seg(0))
            .is_some());
        flow.kind = SourceKind::Cbr {
            rate: netloom_time::Rate::bps(1_000_000),
            size: 100,
        };
        let mut r = Receiver::new(&flow);
        assert_eq!(r.on_data(Instant::ZERO, seg(0)), None);
        assert_eq!(r.stats().packets, 1);
    }
}
