//! How long hybrid precision keeps spinning after a packet of a host: as long as that host's
//! next packet lately took to come, when catching it awake is worth the spin (`Lingers`).
//!
//! A packet that comes while the driver sleeps waits for its wake-up, 35–150 µs on the
//! development VM, before it is read and stamped (docs/live.md, "Precision and accuracy"). A
//! spin after a packet saves that when the next packet comes within it, and is wasted otherwise.
//! A fixed linger after every packet spun about 0.5 ms per packet at 5 Mbit/s (half a CPU on a
//! loaded VM) to catch answers that came within microseconds, or not at all. So each host
//! keeps two short records: how soon it sent after a packet was written to it (its answer: an
//! echo reply, a server's response, a TCP sender's next segments after an ACK) and after it
//! last sent (its stream: a UDP flow's next datagram). After a packet, the driver spins for the
//! time that maximises, over the record, the answers caught times `CATCH_WORTH` minus the time
//! spun; each caught answer is given half again its time, as jitter. An exchange that answers
//! within a few tens of microseconds is caught as before; a TCP flow at a few Mbit/s, whose
//! next segment comes milliseconds later, no longer costs a spin per packet.
//!
//! A follow-up is timed by when it came, not when it was read: one that came while the driver
//! slept is read only after its wake-up, and timing it by the read made a 40 µs answer look
//! like one of 150 µs or more, not worth a spin; the driver then slept through every answer, so
//! every later sample was as inflated, and the linger never came back (wake-ups of 150 µs, the
//! slow end on the development VM, are enough). The driver tells when a packet read after a
//! sleep likely came (`Lingers::read`'s `came`).

use netloom_time::{Duration, Instant};

/// What catching one packet awake is worth, in time spun: the latency a wake-up adds to it on
/// the development VM (35–150 µs) at most. Spinning longer per caught packet costs more CPU
/// than the latency it saves.
pub const CATCH_WORTH: Duration = Duration::from_micros(150);
/// How many of a host's recent follow-ups each record holds: enough to see a pattern, few
/// enough to follow a change within a few packets.
const SAMPLES: usize = 8;
/// A follow-up that did not come within the bound.
const MISSED: u64 = u64::MAX;

/// How soon one kind of packet of a host was followed by the host's next one.
#[derive(Clone, Debug)]
struct Record {
    /// When the packet that awaits its follow-up was read or written.
    pending: Option<Instant>,
    /// Recent follow-up times, ns, `MISSED` for none within the bound; a ring.
    samples: [u64; SAMPLES],
    count: usize,
    /// The spin this record calls for (`best_linger`).
    linger: Duration,
}

impl Record {
    fn new(bound: Duration) -> Record {
        Record {
            pending: None,
            samples: [MISSED; SAMPLES],
            count: 0,
            // Nothing seen yet: the whole bound, as a fixed linger would.
            linger: bound,
        }
    }

    /// The host sent at `now`: the follow-up of the pending packet, if one awaits it.
    fn followed(&mut self, now: Instant, bound: Duration) {
        if let Some(since) = self.pending.take() {
            let gap = now.saturating_since(since);
            self.record(if gap <= bound { gap.as_nanos() } else { MISSED }, bound);
        }
    }

    /// A new packet awaits its follow-up from `now`. One still awaiting it since longer than
    /// the bound is recorded as missed; a younger one gives way (its follow-up would be the
    /// new one's too).
    fn start(&mut self, now: Instant, bound: Duration) {
        if self
            .pending
            .is_some_and(|since| now.saturating_since(since) > bound)
        {
            self.record(MISSED, bound);
        }
        self.pending = Some(now);
    }

    fn record(&mut self, sample: u64, bound: Duration) {
        self.samples[self.count % SAMPLES] = sample;
        self.count += 1;
        let seen = &self.samples[..self.count.min(SAMPLES)];
        self.linger = best_linger(seen, bound);
    }
}

/// The spin after a packet that pays best over `seen` follow-up times (ns, `MISSED` for none):
/// of zero and each follow-up's time plus half again (within `bound`), the one with the most
/// `CATCH_WORTH` per follow-up caught, less the time spun waiting for all of them; the shorter
/// of equals.
fn best_linger(seen: &[u64], bound: Duration) -> Duration {
    let mut sorted = [MISSED; SAMPLES];
    let sorted = &mut sorted[..seen.len()];
    sorted.copy_from_slice(seen);
    sorted.sort_unstable();
    let worth = CATCH_WORTH.as_nanos() as i128;
    let (mut best, mut best_net) = (0u64, 0i128);
    for &gap in sorted.iter().filter(|&&g| g != MISSED) {
        let linger = gap.saturating_add(gap / 2).min(bound.as_nanos());
        let net: i128 = sorted
            .iter()
            .map(|&g| match g <= linger {
                true => worth - g as i128,
                false => -(linger as i128),
            })
            .sum();
        if net > best_net {
            (best, best_net) = (linger, net);
        }
    }
    Duration::from_nanos(best)
}

/// What one host's packets were followed by.
#[derive(Clone, Debug)]
struct Host {
    /// After a packet was written to the host: its answer.
    written: Record,
    /// After the host sent: its next packet.
    sent: Record,
}

/// The records of every host a driver reads or writes, and the spin they call for.
#[derive(Clone, Debug)]
pub struct Lingers {
    /// The longest spin after a packet (the `linger` setting).
    bound: Duration,
    /// By host index, grown as hosts are seen.
    hosts: Vec<Host>,
}

impl Lingers {
    /// Lingers of at most `bound`.
    pub fn new(bound: Duration) -> Lingers {
        Lingers {
            bound,
            hosts: Vec::new(),
        }
    }

    fn host(&mut self, host: u32) -> &mut Host {
        let i = host as usize;
        if i >= self.hosts.len() {
            let fresh = Host {
                written: Record::new(self.bound),
                sent: Record::new(self.bound),
            };
            self.hosts.resize(i + 1, fresh);
        }
        &mut self.hosts[i]
    }

    /// A packet of `host` that came at `came` was read: how long to spin, from `came`, for
    /// the host's next one. `came` is when the driver read it, or when it likely came if the
    /// driver read it after a sleep (the read less the wake-up's usual time).
    pub fn read(&mut self, came: Instant, host: u32) -> Duration {
        let bound = self.bound;
        let h = self.host(host);
        h.written.followed(came, bound);
        h.sent.followed(came, bound);
        h.sent.start(came, bound);
        h.sent.linger
    }

    /// A packet was written to `host` at `now`: how long to spin for its answer.
    pub fn wrote(&mut self, now: Instant, host: u32) -> Duration {
        let bound = self.bound;
        let h = self.host(host);
        h.written.start(now, bound);
        h.written.linger
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    fn at_us(n: u64) -> Instant {
        Instant(n * 1_000)
    }

    const BOUND: Duration = Duration::from_micros(500);

    #[test]
    fn an_unknown_host_gets_the_whole_bound() {
        let mut l = Lingers::new(BOUND);
        assert_eq!(l.wrote(at_us(0), 3), BOUND);
        assert_eq!(l.read(at_us(0), 7), BOUND);
    }

    #[test]
    fn a_server_that_answers_in_60_us_is_waited_for_half_again_that() {
        // A request written to the server every millisecond, its answer read 60 us later; the
        // client (host 0) sends its next request a millisecond after its answer.
        let mut l = Lingers::new(BOUND);
        let (mut to_server, mut to_client) = (Duration::ZERO, Duration::ZERO);
        for k in 0..20 {
            let t = k * 1_000;
            l.read(at_us(t), 0);
            to_server = l.wrote(at_us(t + 5), 1);
            l.read(at_us(t + 65), 1);
            to_client = l.wrote(at_us(t + 70), 0);
        }
        assert_eq!(to_server, us(90), "the answer's 60 us and half again");
        assert_eq!(
            to_client,
            Duration::ZERO,
            "the client's next request is too far"
        );
        // After the server's answer nothing follows it for a millisecond: no spin there.
        assert_eq!(l.read(at_us(20_065), 1), Duration::ZERO);
    }

    #[test]
    fn a_tcp_flow_at_a_few_mbits_is_not_spun_for() {
        // 5 Mbit/s: a segment read from the sender every 2.4 ms; the receiver's ACK comes at
        // once for every other segment written to it (the kernel answers within the write),
        // the other ACK is delayed past the bound. The old fixed linger spun 500 us after each.
        let mut l = Lingers::new(BOUND);
        let mut spins = Vec::new();
        for k in 0..40u64 {
            let t = k * 2_400;
            spins.push(l.read(at_us(t), 1));
            spins.push(l.wrote(at_us(t + 1_000), 0));
            if k % 2 == 1 {
                spins.push(l.read(at_us(t + 1_002), 0));
            }
        }
        // Once learned: no spin after the sender's segments, 3 us after a write (the ACK's
        // 2 us and half again), where the fixed linger spun 500 us after each.
        let learned = &spins[spins.len() - 10..];
        assert!(learned.iter().all(|&d| d <= us(3)), "{spins:?}");
    }

    #[test]
    fn a_datagram_stream_every_20_us_keeps_the_driver_awake() {
        let mut l = Lingers::new(BOUND);
        let mut linger = Duration::ZERO;
        for k in 0..20 {
            linger = l.read(at_us(k * 20), 2);
        }
        assert_eq!(linger, us(30));
    }

    #[test]
    fn follow_ups_mostly_missed_are_not_worth_a_long_spin() {
        // One answer in eight at 140 us, the rest never: 150 - 140 caught, 7 x 210 spun.
        let seen = [
            140_000, MISSED, MISSED, MISSED, MISSED, MISSED, MISSED, MISSED,
        ];
        assert_eq!(best_linger(&seen, BOUND), Duration::ZERO);
        // Half of them at 10 us: worth 15 us.
        let seen = [
            10_000, MISSED, 10_000, MISSED, 10_000, MISSED, 10_000, MISSED,
        ];
        assert_eq!(best_linger(&seen, BOUND), us(15));
        // A slow answer is not worth its wait even when it always comes...
        assert_eq!(best_linger(&[200_000; 8], BOUND), Duration::ZERO);
        // ...and the bound caps any.
        assert_eq!(best_linger(&[100_000; 8], us(120)), us(120));
    }

    #[test]
    fn the_record_follows_a_change_within_its_samples() {
        let mut l = Lingers::new(BOUND);
        for k in 0..SAMPLES as u64 {
            l.wrote(at_us(k * 1_000), 1);
            l.read(at_us(k * 1_000 + 40), 1);
        }
        assert_eq!(l.wrote(at_us(10_000), 1), us(60));
        // The host stops answering: once its record is all misses, no spin.
        for k in 11..11 + SAMPLES as u64 {
            l.wrote(at_us(k * 1_000), 1);
        }
        assert_eq!(l.wrote(at_us(30_000), 1), Duration::ZERO);
    }
}
