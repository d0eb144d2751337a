//! Accuracy, measured and never hidden ("accuracy is binary", ModelNet): every release is
//! compared with its scheduled time, and every drop the model did not decide is counted. A run
//! whose lateness or physical drops pass the thresholds is marked inaccurate.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::time::Duration;

/// When a run stops being accurate.
#[derive(Clone, Copy, Debug)]
pub struct Thresholds {
    /// A release later than this is late.
    pub late: Duration,
    /// The run is inaccurate when more than this fraction of releases is late.
    pub max_late_fraction: f64,
}

impl Default for Thresholds {
    /// 100 µs late, for more than 0.1 % of packets: a busy-polling driver stays far inside this;
    /// the sleeping modes may not, and say so.
    fn default() -> Self {
        Thresholds {
            late: Duration::from_micros(100),
            max_late_fraction: 0.001,
        }
    }
}

/// Lateness in nanoseconds of released packets; resolution 1 ns, 3 significant digits, up to
/// 100 s (later is recorded as 100 s).
const MAX_LATENESS_NS: u64 = 100_000_000_000;

pub struct Accuracy {
    thresholds: Thresholds,
    lateness_ns: Histogram<u64>,
    late: u64,
    /// Packets the model did not drop but that were lost: a write to a host failed, or no buffer
    /// was left to read into.
    physical_drops: u64,
}

/// Accuracy figures of a run, for `netloom run` and `stats` (JSON as documented in docs/live.md).
#[derive(Clone, Debug, Serialize)]
pub struct AccuracyReport {
    pub released: u64,
    pub lateness_ns_p50: u64,
    pub lateness_ns_p99: u64,
    pub lateness_ns_p999: u64,
    pub lateness_ns_max: u64,
    pub late_threshold_ns: u64,
    pub late: u64,
    pub physical_drops: u64,
    pub accurate: bool,
}

impl Accuracy {
    pub fn new(thresholds: Thresholds) -> Accuracy {
        Accuracy {
            thresholds,
            lateness_ns: Histogram::new_with_bounds(1, MAX_LATENESS_NS, 3)
                .expect("bounds and 3 significant digits are valid"),
            late: 0,
            physical_drops: 0,
        }
    }

    /// A packet was released `lateness` after its scheduled time.
    pub fn record_release(&mut self, lateness: Duration) {
        let ns = (lateness.as_nanos() as u64).min(MAX_LATENESS_NS);
        self.lateness_ns.saturating_record(ns);
        if lateness > self.thresholds.late {
            self.late += 1;
        }
    }

    pub fn record_physical_drop(&mut self) {
        self.physical_drops += 1;
    }

    pub fn report(&self) -> AccuracyReport {
        let h = &self.lateness_ns;
        let q = |q| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(q)
            }
        };
        let released = h.len();
        let late_fraction = if released == 0 {
            0.0
        } else {
            self.late as f64 / released as f64
        };
        AccuracyReport {
            released,
            lateness_ns_p50: q(0.5),
            lateness_ns_p99: q(0.99),
            lateness_ns_p999: q(0.999),
            lateness_ns_max: if h.is_empty() { 0 } else { h.max() },
            late_threshold_ns: self.thresholds.late.as_nanos() as u64,
            late: self.late,
            physical_drops: self.physical_drops,
            accurate: late_fraction <= self.thresholds.max_late_fraction
                && self.physical_drops == 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_releases_and_physical_drops_make_a_run_inaccurate() {
        let mut a = Accuracy::new(Thresholds::default());
        for _ in 0..999 {
            a.record_release(Duration::from_micros(3));
        }
        a.record_release(Duration::from_millis(2));
        let r = a.report();
        assert_eq!((r.released, r.late), (1000, 1));
        assert!(r.accurate, "0.1 % late is within the default threshold");
        assert!(r.lateness_ns_p50 >= 3_000 && r.lateness_ns_p50 < 3_010);
        a.record_release(Duration::from_millis(2));
        assert!(!a.report().accurate, "2 of 1001 late is beyond it");
        let mut b = Accuracy::new(Thresholds::default());
        b.record_physical_drop();
        assert!(!b.report().accurate);
    }
}
