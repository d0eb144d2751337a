//! The AIMD sender: a Reno-like window flow with an infinite backlog, standing in for ModelNet's
//! "maximizing TCP flows". Slow start, congestion avoidance, NewReno fast retransmit and
//! recovery, and an RFC 6298 retransmission timer with Karn's rule, all in whole packets and
//! integer nanoseconds. Not here: the receiver's side (`receiver`).

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

    pub fn poll_at(&self) -> Option<Instant> {
        let send = self.can_send().then_some(self.send_at);
        match (send, self.rto_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

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

    pub fn on_ack(&mut self, now: Instant, ack: &Ack) {
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
