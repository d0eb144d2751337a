//! The AIMD sender: a Reno-like window flow (ModelNet's "maximizing TCP flow"); not its receiver.
//!
//! Slow start, congestion avoidance, NewReno fast retransmit and recovery, and an RFC 6298
//! retransmission timer with Karn's rule, all in whole packets and integer nanoseconds.

use super::{Ack, Segment, SenderStats, HEADER_BYTES};
use netloom_time::{Duration, Instant, Rate};
use std::collections::VecDeque;

/// Congestion window at start, in packets.
const INITIAL_CWND: u64 = 2;
/// Duplicate ACKs that signal a loss.
const DUPACK_THRESHOLD: u64 = 3;
/// Floor of the retransmission timeout (RFC 6298 allows 1 s; 200 ms is what Linux uses).
const MIN_RTO: Duration = Duration::from_millis(200);
/// Timeout before the first RTT sample (RFC 6298).
const INITIAL_RTO: Duration = Duration::from_secs(1);
/// Ceiling of the backed-off timeout.
const MAX_RTO: Duration = Duration::from_secs(60);
/// Doublings beyond which the timeout is at its ceiling anyway (200 ms × 2⁹ > 60 s).
const MAX_BACKOFF: u32 = 9;

/// What the sender remembers about a packet it has not yet seen acknowledged.
#[derive(Clone, Copy, Debug)]
struct Sent {
    at: Instant,
    /// Sent more than once: its ACK cannot be timed (Karn).
    retransmitted: bool,
}

/// The sender of an AIMD flow.
///
/// Windows count packets of `mss + HEADER_BYTES` bytes. The retransmission timer is folded into
/// `poll_at`/`poll_transmit`: when the window is full, `poll_at` is the timer's deadline, and
/// `poll_transmit` at or after it handles the timeout before sending.
#[derive(Clone, Debug)]
pub struct AimdSender {
    wire: u32,
    /// Minimum spacing of departures (the flow's cap); zero without a cap.
    pace: Duration,
    /// Earliest next departure: the start, then the pacing; never before the latest `now` seen.
    send_at: Instant,
    /// Oldest unacknowledged packet.
    una: u64,
    /// Next packet to send (moved back to `una` by a timeout: go-back-N).
    next: u64,
    /// One past the highest packet ever sent.
    high: u64,
    /// Packets `una..high`, oldest first.
    sent: VecDeque<Sent>,
    cwnd: u64,
    /// ACKs counted towards the next +1 in congestion avoidance (+1/cwnd per ACK, in integers).
    cwnd_acks: u64,
    ssthresh: u64,
    dupacks: u64,
    /// In NewReno fast recovery until `una` reaches `recover`.
    recovery: bool,
    /// `next` when the last loss was detected: losses below it belong to the same event and do
    /// not shrink the window again.
    recover: u64,
    /// `una` is to be resent at the next opportunity (fast retransmit or partial ACK).
    resend_una: bool,
    srtt: Option<Duration>,
    rttvar: Duration,
    backoff: u32,
    /// Deadline of the retransmission timer, running while packets are outstanding.
    rto_at: Option<Instant>,
    stats: SenderStats,
}

impl AimdSender {
    /// A sender of `mss` payload bytes per packet (`mss + HEADER_BYTES` on the wire), its
    /// departures spaced to `cap` if there is one, first wanting to transmit at `start`. It
    /// begins in slow start with a window of 2 packets and a 1 s timeout.
    pub fn new(mss: u32, cap: Option<Rate>, start: Instant) -> AimdSender {
        let wire = mss.saturating_add(HEADER_BYTES);
        AimdSender {
            wire,
            pace: cap.map_or(Duration::ZERO, |c| c.tx_time(wire as u64)),
            send_at: start,
            una: 0,
            next: 0,
            high: 0,
            sent: VecDeque::new(),
            cwnd: INITIAL_CWND,
            cwnd_acks: 0,
            ssthresh: u64::MAX,
            dupacks: 0,
            recovery: false,
            recover: 0,
            resend_una: false,
            srtt: None,
            rttvar: Duration::ZERO,
            backoff: 0,
            rto_at: None,
            stats: SenderStats::default(),
        }
    }

    /// Congestion window in packets.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// Slow-start threshold in packets (`u64::MAX` until the first loss).
    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    /// Smoothed round-trip time, once measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// The current retransmission timeout, backoff included:
    /// max(200 ms, srtt + 4·rttvar) × 2^backoff, at most 60 s (1 s before the first sample).
    pub fn rto(&self) -> Duration {
        let base = match self.srtt {
            Some(srtt) => MIN_RTO.max(srtt + Duration(self.rttvar.0.saturating_mul(4))),
            None => INITIAL_RTO,
        };
        Duration(base.0.saturating_mul(1 << self.backoff)).min(MAX_RTO)
    }

    /// Packets sent, retransmissions and timeouts so far.
    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    /// Packets believed in the network: outstanding ones, less those that duplicate ACKs
    /// during recovery report as having left it (Reno's window inflation, counted the other way).
    fn in_flight(&self) -> u64 {
        let left = if self.recovery { self.dupacks } else { 0 };
        (self.next - self.una).saturating_sub(left)
    }

    fn can_send(&self) -> bool {
        self.resend_una || self.in_flight() < self.cwnd
    }

    /// When to call `poll_transmit` next: the earlier of the next departure the pacing allows,
    /// if the window has room or a packet is to be resent, and the retransmission timer's
    /// deadline. `None` when neither applies.
    pub fn poll_at(&self) -> Option<Instant> {
        let send = self.can_send().then_some(self.send_at);
        match (send, self.rto_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Handles a retransmission timeout due by `now`, then returns the packet to send at `now`,
    /// if the pacing and the window allow one: the oldest unacknowledged packet when it is to be
    /// resent, otherwise the next in sequence. Call until `None`.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        if self.rto_at.is_some_and(|t| now >= t) {
            self.on_timeout();
        }
        if self.send_at > now {
            return None;
        }
        let seq = if self.resend_una {
            self.resend_una = false;
            self.una
        } else if self.in_flight() < self.cwnd {
            self.next += 1;
            self.next - 1
        } else {
            return None;
        };
        if seq < self.high {
            self.stats.retransmits += 1;
            self.sent[(seq - self.una) as usize] = Sent {
                at: now,
                retransmitted: true,
            };
        } else {
            self.sent.push_back(Sent {
                at: now,
                retransmitted: false,
            });
            self.high = seq + 1;
        }
        self.stats.sent += 1;
        self.send_at = now + self.pace;
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rto());
        }
        Some(Segment {
            seq,
            bytes: self.wire,
        })
    }

    /// Takes in an ACK that reached the sender at `now`: times the echoed packet (unless it was
    /// retransmitted), and either slides and grows the window on new data acknowledged, or
    /// counts a duplicate ACK, the third of which starts fast retransmit and recovery. `ece`:
    /// the acknowledged packet arrived marked CE, which halves the window as a loss would, at
    /// most once per window of data and without retransmitting anything (RFC 3168, 6.1.2).
    pub fn on_ack(&mut self, now: Instant, ack: &Ack, ece: bool) {
        self.send_at = self.send_at.max(now);
        if ack.next > self.high {
            debug_assert!(
                false,
                "ACK {} beyond anything sent ({})",
                ack.next, self.high
            );
            return;
        }
        if (self.una..self.high).contains(&ack.echo) {
            let s = self.sent[(ack.echo - self.una) as usize];
            if !s.retransmitted {
                self.sample_rtt(now.saturating_since(s.at));
            }
        }
        if ack.next > self.una {
            let acked = ack.next - self.una;
            // Grow only a window that is being used (a paced flow would otherwise inflate it
            // without bound): Linux's "cwnd limited" test, in slow start and avoidance alike.
            let window_limited = 2 * (self.next - self.una) >= self.cwnd;
            self.sent.drain(..acked as usize);
            self.una = ack.next;
            self.next = self.next.max(self.una);
            self.backoff = 0;
            if self.recovery {
                if self.una >= self.recover {
                    self.recovery = false;
                    self.cwnd = self.ssthresh;
                    self.cwnd_acks = 0;
                    self.dupacks = 0;
                } else {
                    // A partial ACK: the packet now at `una` was lost in the same event. Resend
                    // it at once; the acked packets above the first hole had each produced a
                    // duplicate ACK already, so they stop counting as having left the network.
                    self.resend_una = true;
                    self.dupacks = self.dupacks.saturating_sub(acked - 1);
                }
            } else {
                self.dupacks = 0;
                if window_limited {
                    self.grow();
                }
            }
            self.rto_at = (self.next > self.una).then(|| now + self.rto());
        } else if ack.next == self.una && self.next > self.una {
            self.dupacks += 1;
            // After a timeout `recover` is the highest packet sent, so the duplicate ACKs of the
            // go-back-N resend do not trigger a second reduction.
            if !self.recovery && self.dupacks == DUPACK_THRESHOLD && self.una >= self.recover {
                self.ssthresh = ((self.next - self.una) / 2).max(2);
                self.cwnd = self.ssthresh;
                self.cwnd_acks = 0;
                self.recovery = true;
                self.recover = self.next;
                self.resend_una = true;
            }
        }
        // A mark on a packet sent before the last reduction belongs to the congestion it
        // already answered.
        if ece && !self.recovery && ack.echo >= self.recover {
            self.ssthresh = ((self.next - self.una) / 2).max(2);
            self.cwnd = self.ssthresh;
            self.cwnd_acks = 0;
            self.recover = self.next;
        }
    }

    /// Slow start: +1 per ACK; congestion avoidance: +1 per cwnd ACKs.
    fn grow(&mut self) {
        if self.cwnd < self.ssthresh {
            self.cwnd += 1;
        } else {
            self.cwnd_acks += 1;
            if self.cwnd_acks >= self.cwnd {
                self.cwnd += 1;
                self.cwnd_acks = 0;
            }
        }
    }

    /// The timer expired with the window unacknowledged: halve the threshold, restart from one
    /// packet, resend from the oldest unacknowledged packet and double the timeout.
    fn on_timeout(&mut self) {
        self.stats.timeouts += 1;
        self.ssthresh = ((self.next - self.una) / 2).max(2);
        self.cwnd = 1;
        self.cwnd_acks = 0;
        self.recovery = false;
        self.dupacks = 0;
        self.resend_una = false;
        self.recover = self.high;
        self.next = self.una;
        self.backoff = (self.backoff + 1).min(MAX_BACKOFF);
        self.rto_at = None;
    }

    /// RFC 6298: srtt ← 7/8 srtt + 1/8 r, rttvar ← 3/4 rttvar + 1/4 |srtt − r|.
    fn sample_rtt(&mut self, r: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = Duration(r.0 / 2);
            }
            Some(s) => {
                self.rttvar = Duration((3 * self.rttvar.0 + s.0.abs_diff(r.0)) / 4);
                self.srtt = Some(Duration((7 * s.0 + r.0) / 8));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::AckReceiver;
    use std::collections::{BTreeMap, BTreeSet};

    const MS: u64 = 1_000_000;
    const MSS: u32 = 1460;

    /// A fake network: a single bottleneck (drop-tail buffer, fixed service time per packet)
    /// followed by a fixed one-way delay, and an uncongested reverse path of the same delay.
    struct Path {
        /// Service time per packet at the bottleneck; zero for unlimited capacity.
        service: Duration,
        /// Packets the bottleneck holds, the one in service included (unused if unlimited).
        buffer: usize,
        one_way: Duration,
        /// Departure times of the packets in the bottleneck.
        queue: VecDeque<Instant>,
        /// Decides, before the queue, whether a data packet is lost.
        lose: Box<dyn FnMut(Instant, Segment) -> bool>,
    }

    impl Path {
        fn new(service_ms: u64, buffer: usize, one_way_ms: u64) -> Path {
            Path {
                service: Duration::from_millis(service_ms),
                buffer,
                one_way: Duration::from_millis(one_way_ms),
                queue: VecDeque::new(),
                lose: Box::new(|_, _| false),
            }
        }

        fn losing(mut self, lose: impl FnMut(Instant, Segment) -> bool + 'static) -> Path {
            self.lose = Box::new(lose);
            self
        }

        /// When `seg`, sent at `now`, reaches the receiver; `None` if it is lost.
        fn offer(&mut self, now: Instant, seg: Segment) -> Option<Instant> {
            while self.queue.front().is_some_and(|&t| t <= now) {
                self.queue.pop_front();
            }
            let full = self.service > Duration::ZERO && self.queue.len() >= self.buffer;
            if (self.lose)(now, seg) || full {
                return None;
            }
            let done = self.queue.back().map_or(now, |&t| t.max(now)) + self.service;
            if self.service > Duration::ZERO {
                self.queue.push_back(done);
            }
            Some(done + self.one_way)
        }
    }

    /// An event of the fake network, for flow `.0`.
    enum Ev {
        Data(usize, Segment),
        Ack(usize, Ack),
    }

    /// What happened in a run.
    struct Run {
        sender: AimdSender,
        receiver: AckReceiver,
        /// Packets of this flow the path dropped.
        lost: u64,
        /// (time, seq) of every transmission.
        sent: Vec<(Instant, u64)>,
        /// (time, seq) of every arrival at the receiver.
        arrived: Vec<(Instant, u64)>,
        /// (cwnd before, cwnd after) for every ACK that shrank the window.
        reductions: Vec<(u64, u64)>,
        /// cwnd after each ACK and each round of transmissions.
        cwnds: Vec<(Instant, u64)>,
    }

    impl Run {
        /// Distinct packets delivered in [from, to), as a fraction of what `per_ms` packets
        /// per millisecond would carry.
        fn utilization(&self, from_ms: u64, to_ms: u64, per_ms: f64) -> f64 {
            let first = |limit: u64| {
                let mut s = BTreeSet::new();
                for &(t, seq) in &self.arrived {
                    if t.0 < limit * MS {
                        s.insert(seq);
                    }
                }
                s.len()
            };
            (first(to_ms) - first(from_ms)) as f64 / ((to_ms - from_ms) as f64 * per_ms)
        }

        /// Sequence numbers transmitted more than once.
        fn resent(&self) -> Vec<u64> {
            let mut count = BTreeMap::new();
            for &(_, seq) in &self.sent {
                *count.entry(seq).or_insert(0) += 1;
            }
            count
                .into_iter()
                .filter(|&(_, n)| n > 1)
                .map(|(s, _)| s)
                .collect()
        }
    }

    /// Drives one AIMD flow over `path` until `until_ms`, in virtual time.
    fn run(cap: Option<Rate>, path: Path, until_ms: u64) -> Run {
        let sender = AimdSender::new(MSS, cap, Instant::ZERO);
        run_flows(vec![sender], path, until_ms).pop().unwrap()
    }

    /// Drives AIMD flows sharing `path` until `until_ms`, in virtual time.
    fn run_flows(senders: Vec<AimdSender>, mut path: Path, until_ms: u64) -> Vec<Run> {
        let until = Instant(until_ms * MS);
        let mut flows: Vec<Run> = senders
            .into_iter()
            .map(|sender| Run {
                sender,
                receiver: AckReceiver::default(),
                lost: 0,
                sent: vec![],
                arrived: vec![],
                reductions: vec![],
                cwnds: vec![],
            })
            .collect();
        let mut events: BTreeMap<(Instant, u64), Ev> = BTreeMap::new();
        let mut order = 0;
        let mut now = Instant::ZERO;
        loop {
            let next_event = events.first_key_value().map(|(k, _)| k.0);
            let wake = (0..flows.len())
                .filter_map(|i| flows[i].sender.poll_at().map(|t| (t, i)))
                .min();
            let Some(t) = [next_event, wake.map(|w| w.0)].into_iter().flatten().min() else {
                break;
            };
            if t >= until {
                break;
            }
            assert!(t >= now, "time went back from {now:?} to {t:?}");
            now = t;
            if let Some((_, i)) = wake.filter(|w| w.0 == t) {
                let f = &mut flows[i];
                while let Some(seg) = f.sender.poll_transmit(now) {
                    assert_eq!(seg.bytes, MSS + HEADER_BYTES);
                    f.sent.push((now, seg.seq));
                    match path.offer(now, seg) {
                        Some(at) => {
                            order += 1;
                            events.insert((at, order), Ev::Data(i, seg));
                        }
                        None => f.lost += 1,
                    }
                }
                f.cwnds.push((now, f.sender.cwnd()));
                assert_ne!(
                    f.sender.poll_at(),
                    Some(now),
                    "wants the same instant again"
                );
                continue;
            }
            let (_, ev) = events.pop_first().expect("an event is due");
            match ev {
                Ev::Data(i, seg) => {
                    flows[i].arrived.push((now, seg.seq));
                    let ack = flows[i].receiver.on_data(now, seg);
                    order += 1;
                    events.insert((now + path.one_way, order), Ev::Ack(i, ack));
                }
                Ev::Ack(i, ack) => {
                    let f = &mut flows[i];
                    let cwnd = f.sender.cwnd();
                    f.sender.on_ack(now, &ack, false);
                    if f.sender.cwnd() < cwnd {
                        f.reductions.push((cwnd, f.sender.cwnd()));
                    }
                    f.cwnds.push((now, f.sender.cwnd()));
                }
            }
        }
        flows
    }

    #[test]
    fn fills_a_bottleneck_and_holds_it() {
        // RTT 100 ms, one packet per ms (12 Mbit/s of 1500 B): 100 packets per RTT, buffer of
        // half that. Reno's window saws between ~(100+50)/2 and 150, never far below the
        // bandwidth-delay product, so goodput stays near capacity once slow start is over.
        let r = run(None, Path::new(1, 50, 50), 60_000);
        let u = r.utilization(10_000, 60_000, 1.0);
        assert!(u >= 0.75, "utilization {u}");
        assert!(r.lost > 0, "the buffer overflowed, so AIMD had to back off");
        assert!(
            r.reductions.len() >= 5,
            "sawtooth: {} reductions",
            r.reductions.len()
        );
        let st = r.sender.stats();
        assert_eq!(st.sent, r.sent.len() as u64);
        assert_eq!(
            st.timeouts, 0,
            "drop-tail losses are repaired by fast retransmit"
        );
        // Goodput counts each packet once however often it arrived.
        let distinct: BTreeSet<u64> = r.arrived.iter().map(|&(_, s)| s).collect();
        let rs = r.receiver.stats();
        assert_eq!(rs.packets, distinct.len() as u64);
        assert_eq!(rs.packets + rs.duplicates, r.arrived.len() as u64);
        assert_eq!(rs.bytes, rs.packets * (MSS + HEADER_BYTES) as u64);
    }

    #[test]
    fn flows_sharing_a_bottleneck_share_it_fairly() {
        // Four flows, same 100 ms RTT, through the bottleneck above, starting a few ms apart.
        // Jain's index (Σx)² / (n·Σx²) of their goodputs is 1 for a perfectly fair share.
        let senders = [0, 3, 7, 11]
            .map(|ms| AimdSender::new(MSS, None, Instant(ms * MS)))
            .to_vec();
        let flows = run_flows(senders, Path::new(1, 50, 50), 100_000);
        let x: Vec<f64> = flows
            .iter()
            .map(|f| f.utilization(20_000, 100_000, 1.0))
            .collect();
        let total: f64 = x.iter().sum();
        let jain = total * total / (4.0 * x.iter().map(|v| v * v).sum::<f64>());
        assert!(total >= 0.85, "utilization {total} ({x:?})");
        assert!(jain >= 0.9, "Jain's index {jain} ({x:?})");
    }

    #[test]
    fn one_loss_halves_the_window_and_resends_exactly_that_packet() {
        // Unlimited capacity, RTT 100 ms; packet 300 is lost the first time it is sent.
        let mut first = true;
        let path = Path::new(0, 0, 50).losing(move |_, seg| {
            let lose = seg.seq == 300 && first;
            first &= !lose;
            lose
        });
        let r = run(None, path, 5_000);
        assert_eq!(r.resent(), vec![300]);
        let st = r.sender.stats();
        assert_eq!((st.retransmits, st.timeouts), (1, 0));
        assert_eq!(r.reductions.len(), 1);
        let (before, after) = r.reductions[0];
        assert!(before >= 16, "the window had grown: {before}");
        assert_eq!(after, before / 2);
        assert_eq!(r.receiver.stats().duplicates, 0);
        assert_eq!(r.receiver.stats().packets, r.sent.len() as u64 - 1);
    }

    #[test]
    fn losses_in_one_window_halve_once() {
        // Packets 300 and 310 lost in the same window: NewReno resends both (the second on the
        // partial ACK) and reduces the window once.
        let mut lost = BTreeSet::new();
        let path = Path::new(0, 0, 50)
            .losing(move |_, seg| [300, 310].contains(&seg.seq) && lost.insert(seg.seq));
        let r = run(None, path, 5_000);
        assert_eq!(r.resent(), vec![300, 310]);
        assert_eq!(r.reductions.len(), 1);
        assert_eq!(r.sender.stats().timeouts, 0);
        assert_eq!(r.receiver.stats().duplicates, 0);
    }

    #[test]
    fn a_ce_echo_halves_the_window_once_per_window_and_resends_nothing() {
        let mut s = AimdSender::new(MSS, None, Instant(0));
        // Rounds of 100 ms: send the whole window, then acknowledge it packet by packet, the
        // round's packets echoing CE when `ce` says so.
        let round = |s: &mut AimdSender, k: u64, ce: &dyn Fn(u64) -> bool| {
            let sent: Vec<u64> = std::iter::from_fn(|| s.poll_transmit(Instant(k * 100 * MS)))
                .map(|seg| seg.seq)
                .collect();
            for &seq in &sent {
                let ack = Ack {
                    next: seq + 1,
                    echo: seq,
                };
                s.on_ack(Instant((k * 100 + 50) * MS), &ack, ce(seq));
            }
            sent.len() as u64
        };
        let mut k = 0;
        while s.cwnd() < 16 {
            round(&mut s, k, &|_| false);
            k += 1;
        }
        let window = s.cwnd();
        // Marks on three packets of one window: the first (the window's second packet) halves
        // what is in flight when its ACK comes (window − 2), the others belong to the same
        // congestion.
        let first = s.next;
        let sent = round(&mut s, k, &|seq| (first + 1..first + 4).contains(&seq));
        assert_eq!(sent, window);
        let halved = (window - 2) / 2;
        // Congestion avoidance grows +1 over the window's remaining ACKs at most.
        assert!(
            (halved..=halved + 1).contains(&s.cwnd()),
            "cwnd {}",
            s.cwnd()
        );
        assert_eq!(s.ssthresh(), halved);
        // A mark in the next window is new congestion.
        let before = s.cwnd();
        let first = s.next;
        round(&mut s, k + 1, &|seq| seq == first);
        assert!(s.cwnd() < before, "{} then {}", before, s.cwnd());
        assert_eq!(s.stats().retransmits, 0);
    }

    #[test]
    fn recovers_from_a_timeout_when_a_whole_window_is_lost() {
        // Everything sent in [5 s, 5.5 s) is lost: no ACK comes back, only the timer can restart
        // the flow, from a window of one packet.
        let path = Path::new(1, 50, 50).losing(|t, _| (5_000 * MS..5_500 * MS).contains(&t.0));
        let r = run(None, path, 40_000);
        let st = r.sender.stats();
        assert!(st.timeouts >= 1);
        let after_loss = r.cwnds.iter().filter(|(t, _)| t.0 >= 5_000 * MS);
        assert_eq!(after_loss.map(|&(_, c)| c).min(), Some(1));
        let u = r.utilization(20_000, 40_000, 1.0);
        assert!(u >= 0.75, "utilization after recovery {u}");
        let distinct: BTreeSet<u64> = r.arrived.iter().map(|&(_, s)| s).collect();
        assert_eq!(r.receiver.stats().packets, distinct.len() as u64);
    }

    #[test]
    fn timeouts_back_off_exponentially() {
        // From 2 s on everything is lost: the oldest packet is resent at RTO, 2·RTO, 4·RTO, ...
        let path = Path::new(0, 0, 50).losing(|t, _| t.0 >= 2_000 * MS);
        let r = run(None, path, 30_000);
        let una = r.sent.iter().find(|&&(t, _)| t.0 >= 2_000 * MS).unwrap().1;
        let times: Vec<u64> = r
            .sent
            .iter()
            .filter(|&&(_, s)| s == una)
            .map(|&(t, _)| t.0)
            .collect();
        // The first resend is one RTO after the timer's last restart (at the last ACK), not
        // after the original send; the gaps between resends are the backed-off timeouts.
        let gaps: Vec<u64> = times[1..].windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.len() >= 4, "resends at {times:?}");
        assert!(
            gaps[0] >= 2 * 200 * MS,
            "first backed-off timeout at least 2 × 200 ms"
        );
        for w in gaps.windows(2) {
            assert_eq!(w[1], 2 * w[0]);
        }
    }

    #[test]
    fn rtt_and_rto_follow_rfc_6298() {
        // A fixed RTT of 400 ms (paced below an unlimited path, so nothing queues): srtt is
        // exactly that, rttvar decays to zero, and the timeout is then srtt itself (above the
        // 200 ms floor). At 100 ms it is the floor.
        let cap = Some(Rate::bps(6_000_000));
        let r = run(cap, Path::new(0, 0, 200), 20_000);
        assert_eq!(r.sender.srtt(), Some(Duration::from_millis(400)));
        assert_eq!(r.sender.rto(), Duration::from_millis(400));
        let r = run(cap, Path::new(0, 0, 50), 20_000);
        assert_eq!(r.sender.rto(), MIN_RTO);
        assert_eq!(AimdSender::new(MSS, None, Instant::ZERO).rto(), INITIAL_RTO);
    }

    #[test]
    fn cap_paces_the_flow() {
        // Capped at 6 Mbit/s (one 1500 B packet per 2 ms) on an unlimited path: never faster,
        // and close to the cap once the window has opened.
        let r = run(Some(Rate::bps(6_000_000)), Path::new(0, 0, 50), 20_000);
        assert!(r
            .sent
            .windows(2)
            .all(|w| w[1].0 - w[0].0 >= Duration::from_millis(2)));
        let u = r.utilization(5_000, 20_000, 0.5);
        assert!(u >= 0.95, "utilization of the cap {u}");
        // The window stops growing at about twice what is in flight (100 ms / 2 ms = 50).
        assert!(r.sender.cwnd() <= 110, "cwnd {}", r.sender.cwnd());
    }
}
