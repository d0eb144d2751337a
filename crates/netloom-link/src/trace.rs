//! Mahimahi delivery traces: the file format (one millisecond timestamp per line, each a chance
//! to deliver up to 1500 bytes, the trace looping at its end) and the earliest delivery of each
//! packet given the opportunities earlier packets used.

use netloom_time::Instant;
use serde::{Deserialize, Serialize};

/// Bytes one delivery opportunity carries (Mahimahi's MTU-sized opportunity).
pub const OPPORTUNITY_BYTES: u32 = 1500;

const NS_PER_MS: u64 = 1_000_000;

/// A parsed trace: opportunity times in milliseconds, repeating every `period_ms` (the last
/// timestamp), as Mahimahi replays it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    ms: Vec<u64>,
    period_ms: u64,
}

/// What is wrong with a trace file, and on which line (1-based).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// A non-blank line is not a whole number of milliseconds that fits in u64 (a sign, a
    /// decimal point or a unit all make it fail). The line is not quoted: the file may be
    /// anything (`trace = "/etc/shadow"`), so the error says where and what was expected.
    #[error("line {line}: not a whole number of milliseconds (a trace has one per line)")]
    NotANumber {
        /// Line number, from 1.
        line: usize,
    },
    /// A timestamp is smaller than the one before it.
    #[error("line {line}: {ms} ms is before the line above; timestamps must not decrease")]
    Decreasing {
        /// Line number, from 1.
        line: usize,
        /// The timestamp on that line, in milliseconds.
        ms: u64,
    },
    /// The file has no timestamps (empty or only blank lines).
    #[error("the trace has no timestamps")]
    Empty,
    /// Every timestamp is 0, so the loop would have no length.
    #[error("the last timestamp is 0 ms; a trace must end after 0 to loop")]
    ZeroPeriod,
}

impl Trace {
    /// Reads a trace: one non-negative integer per line, non-decreasing; blank lines are skipped.
    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        let mut ms = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let t = raw.trim();
            if t.is_empty() {
                continue;
            }
            let v: u64 = t.parse().map_err(|_| TraceError::NotANumber { line })?;
            if ms.last().is_some_and(|&last| v < last) {
                return Err(TraceError::Decreasing { line, ms: v });
            }
            ms.push(v);
        }
        let period_ms = *ms.last().ok_or(TraceError::Empty)?;
        if period_ms == 0 {
            return Err(TraceError::ZeroPeriod);
        }
        Ok(Trace { ms, period_ms })
    }

    /// Opportunities per loop.
    pub fn len(&self) -> usize {
        self.ms.len()
    }

    /// Always false: a parsed trace has at least one opportunity.
    pub fn is_empty(&self) -> bool {
        self.ms.is_empty()
    }

    /// The loop's length in milliseconds.
    pub fn period_ms(&self) -> u64 {
        self.period_ms
    }

    /// The average rate the trace offers, in bit/s (for default queue sizes and reports).
    pub fn mean_rate_bps(&self) -> u64 {
        let bits = self.ms.len() as u128 * u128::from(OPPORTUNITY_BYTES) * 8 * 1000;
        (bits / u128::from(self.period_ms)) as u64
    }

    /// When opportunity `n` (counted over all loops from 0) happens.
    pub fn time_of(&self, n: u64) -> Instant {
        let len = self.ms.len() as u64;
        let ms = (n / len)
            .saturating_mul(self.period_ms)
            .saturating_add(self.ms[(n % len) as usize]);
        Instant::from_nanos(ms.saturating_mul(NS_PER_MS))
    }

    /// The first opportunity at or after `t`.
    pub fn first_at_or_after(&self, t: Instant) -> u64 {
        let ms = t.as_nanos().div_ceil(NS_PER_MS);
        let loops = ms / self.period_ms;
        let offset = ms % self.period_ms;
        let len = self.ms.len() as u64;
        if offset == 0 && loops > 0 {
            // The previous loop's last timestamps fall exactly on t.
            let i = self.ms.partition_point(|&m| m < self.period_ms) as u64;
            return (loops - 1).saturating_mul(len).saturating_add(i);
        }
        // Within a loop the timestamps are sorted; past the last, the next loop's first one.
        let i = self.ms.partition_point(|&m| m < offset) as u64;
        loops.saturating_mul(len).saturating_add(i)
    }
}

/// How far a pipe has used its trace: the next opportunity nobody used, and the bytes left in
/// the one before it (which only a packet already waiting at that instant may use).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub(crate) struct TraceCursor {
    next: u64,
    left: u32,
}

impl TraceCursor {
    /// Delivers a packet of `bytes` that joins the queue at `now`, behind the packets already
    /// scheduled: it takes what is left of the last used opportunity if that is not in the
    /// past, then whole opportunities of 1500 bytes, and is delivered at the one that carries
    /// its last byte. Unused bytes of an opportunity are lost, as in Mahimahi.
    pub(crate) fn deliver(&mut self, trace: &Trace, now: Instant, bytes: u32) -> Instant {
        let mut remaining = bytes.max(1);
        if self.left > 0 && self.next > 0 && trace.time_of(self.next - 1) >= now {
            let take = remaining.min(self.left);
            remaining -= take;
            self.left -= take;
            if remaining == 0 {
                return trace.time_of(self.next - 1);
            }
        }
        let mut k = self.next.max(trace.first_at_or_after(now));
        loop {
            let take = remaining.min(OPPORTUNITY_BYTES);
            remaining -= take;
            if remaining == 0 {
                self.next = k + 1;
                self.left = OPPORTUNITY_BYTES - take;
                return trace.time_of(k);
            }
            k += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = NS_PER_MS;

    #[test]
    fn parses_and_loops() {
        let t = Trace::parse("1\n1\n3\n\n5\n").unwrap();
        assert_eq!((t.len(), t.period_ms()), (4, 5));
        let times: Vec<u64> = (0..8).map(|n| t.time_of(n).as_nanos() / MS).collect();
        assert_eq!(times, [1, 1, 3, 5, 6, 6, 8, 10]);
        assert_eq!(t.first_at_or_after(Instant::from_nanos(0)), 0);
        assert_eq!(t.first_at_or_after(Instant::from_nanos(MS + 1)), 2);
        assert_eq!(t.first_at_or_after(Instant::from_nanos(5 * MS)), 3);
        assert_eq!(t.first_at_or_after(Instant::from_nanos(5 * MS + 1)), 4);
        // 4 opportunities of 1500 bytes every 5 ms: 9.6 Mbit/s.
        assert_eq!(t.mean_rate_bps(), 9_600_000);
    }

    #[test]
    fn bad_traces_name_the_line() {
        assert_eq!(
            Trace::parse("1\nx\n"),
            Err(TraceError::NotANumber { line: 2 })
        );
        assert_eq!(
            Trace::parse("5\n3\n"),
            Err(TraceError::Decreasing { line: 2, ms: 3 })
        );
        assert_eq!(Trace::parse("\n"), Err(TraceError::Empty));
        assert_eq!(Trace::parse("0\n0\n"), Err(TraceError::ZeroPeriod));
    }

    #[test]
    fn small_packets_share_an_opportunity_and_big_ones_span_several() {
        let t = Trace::parse("10\n20\n30\n40\n").unwrap();
        let mut c = TraceCursor::default();
        let at = |ms: u64| Instant::from_nanos(ms * MS);
        // Three 500-byte packets waiting at 0 fill the opportunity at 10 ms.
        for _ in 0..3 {
            assert_eq!(c.deliver(&t, at(0), 500), at(10));
        }
        // A fourth needs the next one.
        assert_eq!(c.deliver(&t, at(0), 100), at(20));
        // A packet arriving after 20 ms cannot use what 20 ms left over.
        assert_eq!(c.deliver(&t, at(21), 100), at(30));
        // 3000 bytes take the rest of 30 ms (1400), then 40 ms (1500), then 50 ms (100).
        assert_eq!(c.deliver(&t, at(25), 3000), at(50));
    }
}
