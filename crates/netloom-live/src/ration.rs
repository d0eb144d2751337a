//! How many segments each host may hand the engine: a token bucket per host, all filling at one
//! rate that halves while the driver is overloaded and grows back while it is not, as TCP Reno
//! grows its window: fast up to half the rate where the driver was last overloaded, then slowly. A host that
//! sends little never meets its bucket's bottom; one that floods waits, its frames queued in its
//! TUN device (whose kernel drops what overflows), so its flood cannot make the other hosts'
//! packets late. Pure logic over the time it is given; the driver reads and reports.

use netloom_time::{Duration, Instant};

/// Most segments a host may take in one go (its bucket's size): eleven super-packets of a
/// host's TCP at MTU 1500. A frame is taken whole, so a host may go past it by one frame (up
/// to `MAX_GSO_SEGMENTS`), and then waits until its bucket is above zero again.
pub const BURST: u64 = 512;
/// The rate buckets fill at to begin with and at most, segments per millisecond per host (16
/// million a second: 196 Gbit/s of 1500-byte packets, several times what one driver moves, so a
/// driver that keeps up never holds a host back: TCP with GSO reaches 28 to 44 Gbit/s here,
/// docs/performance.md).
pub const MAX_RATE: u64 = 16_384;
/// The least rate, segments per millisecond per host (190 Mbit/s of 1500-byte packets).
pub const MIN_RATE: u64 = 16;
/// A release this late means the driver is overloaded, not merely jittery: its lateness p99 is
/// a few microseconds when it keeps up, and under TCP at tens of Gbit/s 20 to 83 us
/// (docs/live.md, docs/performance.md), so legitimate traffic rarely halves the rate.
pub const OVERLOADED: Duration = Duration::from_micros(500);
/// How often the rate changes: about the time a packet takes to cross a small topology, so
/// the lateness a change causes is seen before the next.
const PERIOD: Duration = Duration::from_millis(1);
/// A bucket's credit is kept in millionths of a segment, so a rate per millisecond times
/// nanoseconds needs no division.
const UNIT: i64 = 1_000_000;

/// One host's bucket, as it moves between workers (in a transfer's binary form too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    credit: i64,
    filled: Instant,
}

impl Bucket {
    /// Its credit (millionths of a segment) and when it was last filled, to send.
    pub(crate) fn parts(&self) -> (i64, Instant) {
        (self.credit, self.filled)
    }

    /// The bucket `parts` gave.
    pub(crate) fn from_parts(credit: i64, filled: Instant) -> Bucket {
        Bucket { credit, filled }
    }
}

/// The buckets of a driver's hosts and their shared rate.
#[derive(Clone, Debug)]
pub struct Ration {
    /// Credit per host, millionths of a segment; below zero after a frame larger than it.
    credit: Vec<i64>,
    /// When each bucket was last filled.
    filled: Vec<Instant>,
    /// Segments per millisecond per host.
    rate: u64,
    /// Half the rate at the last overload: the rate grows fast below it, slowly above.
    threshold: u64,
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
            threshold: MAX_RATE,
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

    /// Host `host`'s bucket (its credit and when it was last filled), for the worker that reads
    /// the host from now on (`set_bucket`): a host that moves at a repartitioning keeps its debt
    /// and its burst, so the move neither lets a flood through nor holds a quiet host back.
    pub fn bucket(&self, host: u32) -> Bucket {
        let h = host as usize;
        Bucket {
            credit: self.credit[h],
            filled: self.filled[h],
        }
    }

    /// Gives `host` the bucket another worker kept for it (`bucket`).
    pub fn set_bucket(&mut self, host: u32, bucket: Bucket) {
        let h = host as usize;
        self.credit[h] = bucket.credit;
        self.filled[h] = bucket.filled;
    }

    /// A packet was released `lateness` after its time.
    pub fn released(&mut self, lateness: Duration) {
        self.overloaded |= lateness > OVERLOADED;
    }

    /// Once a period: halves the rate if the driver was overloaded during it (and remembers
    /// that as the threshold), else grows it by a quarter up to the threshold and by `MIN_RATE`
    /// beyond. Growing by a quarter all the way, a flood's rate climbed back past what the
    /// driver could take every few milliseconds: the bystander test's round trip rose 3 to 8
    /// ms instead of less than 1.
    pub fn adapt(&mut self, now: Instant) {
        if now.saturating_since(self.changed) < PERIOD {
            return;
        }
        if self.overloaded {
            self.rate = (self.rate / 2).max(MIN_RATE);
            self.threshold = self.rate;
        } else if self.rate < self.threshold {
            self.rate = (self.rate + self.rate / 4).min(self.threshold);
        } else {
            self.rate = (self.rate + MIN_RATE).min(MAX_RATE);
        }
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
        // At 16,384 segments a millisecond, a microsecond gives 16.4 back.
        assert!(r.may_take(0, at_us(1)));
        r.took(0, 128);
        assert!(
            !r.may_take(0, at_us(7)),
            "112 segments of debt take 6.8 us more"
        );
        assert!(r.may_take(0, at_us(8)));
    }

    #[test]
    fn the_rate_halves_while_late_and_grows_back_fast_then_slowly() {
        let mut r = Ration::new(1);
        r.released(Duration::from_micros(600));
        r.adapt(at_us(500));
        assert_eq!(r.rate, MAX_RATE, "once a period at most");
        r.adapt(at_us(1_000));
        assert_eq!((r.rate, r.threshold), (MAX_RATE / 2, MAX_RATE / 2));
        r.released(OVERLOADED);
        r.adapt(at_us(2_000));
        assert_eq!(r.rate, MAX_RATE / 2 + MIN_RATE, "not late beyond the bound");
        for k in 0..20 {
            r.released(Duration::from_millis(1));
            r.adapt(at_us(3_000 + k * 1_000));
        }
        assert_eq!((r.rate, r.threshold), (MIN_RATE, MIN_RATE));
        r.adapt(at_us(30_000));
        assert_eq!(r.rate, 2 * MIN_RATE, "slowly above the threshold");
        // Overloaded at 1,024: fast up to 512 from 64, slowly beyond.
        r.rate = 1_024;
        r.released(Duration::from_millis(1));
        r.adapt(at_us(31_000));
        r.rate = 64;
        for k in 0..10 {
            r.adapt(at_us(32_000 + k * 1_000));
        }
        assert_eq!(r.rate, 512);
        r.adapt(at_us(42_000));
        assert_eq!(r.rate, 512 + MIN_RATE);
    }
}
