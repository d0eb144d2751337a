//! Time and rate as integers: `Instant` and `Duration` in nanoseconds, `Rate` in bits per second.
//!
//! The core never reads a clock; drivers hand it `Instant`s. Nothing here is `f64` so timing
//! arithmetic is exact and reproducible on every machine. Loops that run in real time take
//! the time from a `Clock` they are given (`clock`), so a test can drive them with its own.

pub mod clock;
pub use clock::{Clock, SystemClock, TestClock};

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A span of time in nanoseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Duration(pub u64);

/// A point in (virtual or real) time: nanoseconds since the driver's epoch.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Instant(pub u64);

/// A link rate in bits per second.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Rate(pub u64);

impl Duration {
    /// No time at all; also what `Duration::default()` gives.
    pub const ZERO: Duration = Duration(0);
    /// The longest span, `u64::MAX` ns (about 584 years). It stands for "never": a zero rate's
    /// `tx_time`, and the value the saturating additions stop at.
    pub const MAX: Duration = Duration(u64::MAX);

    /// `ns` nanoseconds, exactly.
    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    /// `us` microseconds. Unlike `+`, the conversion does not saturate: a product above
    /// `u64::MAX` ns overflows (a panic where overflow checks are on).
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    /// `ms` milliseconds; does not saturate, like `from_micros`.
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    /// `s` whole seconds; does not saturate, like `from_micros` (the limit is about 584 years).
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    /// The span in nanoseconds, the unit it is stored in.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds as a float, for reports only (never in timing arithmetic).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// `self − other`, or zero if `other` is the longer span.
    pub fn saturating_sub(self, other: Duration) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }
    /// Whether this is no time at all.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
}

impl Instant {
    /// The driver's epoch, time 0; a link's plan of changes (a `Timeline`) starts here.
    pub const ZERO: Instant = Instant(0);
    /// The last representable instant, `u64::MAX` ns after the epoch; `Instant + Duration`
    /// saturates here, so it also stands for "never".
    pub const MAX: Instant = Instant(u64::MAX);

    /// The instant `ns` nanoseconds after the driver's epoch.
    pub const fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }
    /// Nanoseconds since the driver's epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Time elapsed since `earlier`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Rate {
    /// A rate of `bits_per_second` bit/s (SI: 1 Mbit/s is 1 000 000). Zero is representable
    /// and means a link that never finishes sending (see `tx_time`).
    pub const fn bps(bits_per_second: u64) -> Self {
        Rate(bits_per_second)
    }
    /// The rate in bit/s.
    pub const fn as_bps(self) -> u64 {
        self.0
    }
    /// Time to serialize `bytes` at this rate, rounded up to the nanosecond:
    /// ceil(bytes × 8 × 10⁹ / rate). A zero rate never finishes (`Duration::MAX`).
    pub fn tx_time(self, bytes: u64) -> Duration {
        if self.0 == 0 {
            return Duration::MAX;
        }
        // Any packet (under 2.3 GB) fits 64 bits, whose division is several times cheaper
        // than 128 bits' (a library call on x86-64); it runs once per packet-hop.
        if let Some(bits) = bytes.checked_mul(8_000_000_000) {
            return Duration(bits.div_ceil(self.0));
        }
        let ns = (bytes as u128 * 8_000_000_000).div_ceil(self.0 as u128);
        Duration(u64::try_from(ns).unwrap_or(u64::MAX))
    }
    /// Bytes this rate carries in `d` (rounded down).
    pub fn bytes_in(self, d: Duration) -> u64 {
        let b = self.0 as u128 * d.0 as u128 / 8_000_000_000;
        u64::try_from(b).unwrap_or(u64::MAX)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Panics in debug builds if `rhs` is later; use `saturating_since` when that can happen.
    fn sub(self, rhs: Instant) -> Duration {
        debug_assert!(self.0 >= rhs.0, "instant subtraction went negative");
        Duration(self.0.wrapping_sub(rhs.0))
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}

impl AddAssign for Duration {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl fmt::Display for Duration {
    /// Human form in the largest unit not above it: `1.5ms`, `200us`, `30s` (at most 3
    /// decimals; for reports, not for re-parsing).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return write!(f, "0s");
        }
        let units = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")];
        let (div, unit) = units
            .into_iter()
            .find(|&(d, _)| self.0 >= d)
            .unwrap_or((1, "ns"));
        write_scaled(f, self.0, div, unit)
    }
}

impl fmt::Display for Rate {
    /// Human form in bit/s with SI prefixes: `10Mbit`, `1.5Gbit` (at most 3 decimals).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let units = [
            (1_000_000_000, "Gbit"),
            (1_000_000, "Mbit"),
            (1_000, "kbit"),
        ];
        let (div, unit) = units
            .into_iter()
            .find(|&(d, _)| self.0 >= d)
            .unwrap_or((1, "bit"));
        write_scaled(f, self.0, div, unit)
    }
}

/// Writes `value / div` with up to 3 decimals, trailing zeros trimmed, then `unit`.
fn write_scaled(f: &mut fmt::Formatter<'_>, value: u64, div: u64, unit: &str) -> fmt::Result {
    if value.is_multiple_of(div) {
        return write!(f, "{}{unit}", value / div);
    }
    let s = format!("{:.3}", value as f64 / div as f64);
    write!(f, "{}{unit}", s.trim_end_matches('0').trim_end_matches('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_is_exact_or_rounded_up() {
        assert_eq!(
            Rate::bps(10_000_000).tx_time(1500),
            Duration::from_micros(1200)
        );
        assert_eq!(Rate::bps(3_000_000).tx_time(1500), Duration::from_millis(4));
        // 1 byte at 3 bit/s: 8/3 s = 2.666..s, rounded up.
        assert_eq!(Rate::bps(3).tx_time(1), Duration(2_666_666_667));
        assert_eq!(Rate::bps(0).tx_time(1), Duration::MAX);
        // Past 64 bits of bit-nanoseconds: 2^62 bytes at 1 Gbit/s is 2^65 × 8 ns, over the top.
        assert_eq!(Rate::bps(1_000_000_000).tx_time(1 << 62), Duration::MAX);
        assert_eq!(
            Rate::bps(u64::MAX).tx_time(1 << 62),
            Duration(((1u128 << 62) * 8_000_000_000).div_ceil(u64::MAX as u128) as u64)
        );
    }

    #[test]
    fn display_is_short() {
        assert_eq!(Duration::from_millis(5).to_string(), "5ms");
        assert_eq!(Duration(1_500_000).to_string(), "1.5ms");
        assert_eq!(Duration::from_micros(200).to_string(), "200us");
        assert_eq!(Rate::bps(100_000_000).to_string(), "100Mbit");
        assert_eq!(Rate::bps(1_500_000_000).to_string(), "1.5Gbit");
    }
}
