//! How many segments each host may hand the engine: a token bucket per host, all filling at one
//! rate that halves while the driver is overloaded and grows back while it is not. A host that
//! sends little never meets its bucket's bottom; one that floods waits, its frames queued in its
//! TUN device (whose kernel drops what overflows), so its flood cannot make the other hosts'
//! packets late. Pure logic over the time it is given; the driver reads and reports.

use netloom_time::{Duration, Instant};

/// Most segments a host may take in one go (its bucket's size): eleven super-packets of a
/// host's TCP at MTU 1500. A frame is taken whole, so a host may go past it by one frame (up
/// to `MAX_GSO_SEGMENTS`), and then waits until its bucket is above zero again.
pub const BURST: u64 = 512;
/// The rate buckets fill at to begin with and at most, segments per millisecond per host (a
/// million a second: 12 Gbit/s of 1500-byte packets, above what one driver moves).
pub const MAX_RATE: u64 = 1024;
/// The least rate, segments per millisecond per host (190 Mbit/s of 1500-byte packets).
pub const MIN_RATE: u64 = 16;
/// A release this late means the driver is overloaded, not merely jittery (its lateness p99 is
/// a few microseconds when it keeps up, docs/live.md). Measured with the bystander test
/// (crates/netloom-live/tests/hostile.rs): a bound of 200 us with a rate growing by `MIN_RATE`
/// a period let the bystander's mean round trip rise more (0.6 to 1.4 ms in 3 runs) than this
/// one with a rate growing by a quarter (0.5 to 0.8 ms in 4 runs of 5, 2.3 ms in one).
pub const OVERLOADED: Duration = Duration::from_micros(500);
/// How often the rate changes: about the time a packet takes to cross a small topology, so
/// the lateness a change causes is seen before the next.
const PERIOD: Duration = Duration::from_millis(1);
/// A bucket's credit is kept in millionths of a segment, so a rate per millisecond times
/// nanoseconds needs no division.
const UNIT: i64 = 1_000_000;

/// The buckets of a driver's hosts and their shared rate.
#[derive(Clone, Debug)]
pub struct Ration {
    /// Credit per host, millionths of a segment; below zero after a frame larger than it.
    credit: Vec<i64>,
    /// When each bucket was last filled.
    filled: Vec<Instant>,
    /// Segments per millisecond per host.
    rate: u64,
    /// Whether a release was later than `OVERLOADED` since the rate last changed.
    overloaded: bool,
    /// When the rate last changed (or was confirmed).
    changed: Instant,
}

impl Ration {
    /// Full buckets for `hosts` hosts at `MAX_RATE`.
    pub fn new(hosts: usize) -> Ration {
        Ration {
            credit: vec![BURST as i64 * UNIT; hosts],
            filled: vec![Instant::ZERO; hosts],
            rate: MAX_RATE,
            overloaded: false,
            changed: Instant::ZERO,
        }
    }

    /// Whether `host` may hand over another frame at `now` (its bucket, filled up to now, is
    /// above zero).
    pub fn may_take(&mut self, host: u32, now: Instant) -> bool {
        let h = host as usize;
        let elapsed = now.saturating_since(self.filled[h]).as_nanos();
        let gain = i64::try_from(elapsed.saturating_mul(self.rate)).unwrap_or(i64::MAX);
        self.credit[h] = self.credit[h].saturating_add(gain).min(BURST as i64 * UNIT);
        self.filled[h] = now;
        self.credit[h] > 0
    }

    /// `host` handed over `segments`.
    pub fn took(&mut self, host: u32, segments: u16) {
        self.credit[host as usize] -= i64::from(segments) * UNIT;
    }

    /// A packet was released `lateness` after its time.
    pub fn released(&mut self, lateness: Duration) {
        self.overloaded |= lateness > OVERLOADED;
    }

    /// Once a period: halves the rate if the driver was overloaded during it, else grows it by
    /// a quarter.
    pub fn adapt(&mut self, now: Instant) {
        if now.saturating_since(self.changed) < PERIOD {
            return;
        }
        self.rate = if self.overloaded {
            (self.rate / 2).max(MIN_RATE)
        } else {
            (self.rate + self.rate / 4).min(MAX_RATE)
        };
        self.overloaded = false;
        self.changed = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_us(n: u64) -> Instant {
        Instant(n * 1_000)
    }

    #[test]
    fn a_bucket_holds_a_burst_and_refills_at_the_rate() {
        let mut r = Ration::new(2);
        let now = at_us(0);
        let mut taken = 0;
        while r.may_take(0, now) {
            r.took(0, 128);
            taken += 128;
        }
        assert_eq!(taken, BURST, "a full bucket, then empty");
        assert!(r.may_take(1, now), "the other host's bucket is its own");
        // At 1024 segments a millisecond, a microsecond gives one segment back.
        assert!(r.may_take(0, at_us(1)));
        r.took(0, 128);
        assert!(
            !r.may_take(0, at_us(100)),
            "127 segments of debt take 124 us more"
        );
        assert!(r.may_take(0, at_us(126)));
    }

    #[test]
    fn the_rate_halves_while_late_and_grows_back_while_not() {
        let mut r = Ration::new(1);
        r.released(Duration::from_micros(600));
        r.adapt(at_us(500));
        assert_eq!(r.rate, MAX_RATE, "once a period at most");
        r.adapt(at_us(1_000));
        assert_eq!(r.rate, MAX_RATE / 2);
        r.released(OVERLOADED);
        r.adapt(at_us(2_000));
        assert_eq!(
            r.rate,
            MAX_RATE / 2 + MAX_RATE / 8,
            "not late beyond the bound"
        );
        for k in 0..20 {
            r.released(Duration::from_millis(1));
            r.adapt(at_us(3_000 + k * 1_000));
        }
        assert_eq!(r.rate, MIN_RATE);
        for k in 0..40 {
            r.adapt(at_us(30_000 + k * 1_000));
        }
        assert_eq!(r.rate, MAX_RATE);
    }
}
