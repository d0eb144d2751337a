//! Accuracy, measured and never hidden ("accuracy is binary", ModelNet): every release is
//! compared with its scheduled time, and every drop the model did not decide is counted. A run
//! whose lateness or physical drops pass the thresholds is marked inaccurate.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
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

/// The upper bounds (ns) of the fixed lateness buckets a report carries, for histograms that
/// need the same buckets from one look to the next (Prometheus'): 1 µs to 1 s, around the
/// default late threshold of 100 µs.
pub const LATENESS_BUCKETS_NS: [u64; 13] = [
    1_000,
    5_000,
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    5_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// How many released packets were at most `le_ns` late (a cumulative bucket).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatenessBucket {
    /// The bucket's upper bound, ns (one of `LATENESS_BUCKETS_NS`).
    pub le_ns: u64,
    /// Releases at most that late.
    pub count: u64,
}

/// Lateness of every release and hand-off, and losses outside the model, of one worker or a
/// whole run. It travels between the machines of a cluster as `AccuracyParts`, so the
/// coordinator merges the histograms themselves, not their percentiles.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(into = "AccuracyParts", from = "AccuracyParts")]
pub struct Accuracy {
    thresholds: Thresholds,
    lateness_ns: Histogram<u64>,
    late: u64,
    /// Packets taken over from another worker, those taken over later than the threshold
    /// after their intended time, and the latest: a late hand-off shifts the packet's whole
    /// remaining path, which its release alone cannot show.
    handoffs: u64,
    late_handoffs: u64,
    handoff_lateness_max: Duration,
    /// Hand-offs that reached the worker that handled them before a move and were passed on
    /// to the one that handles them now, and those of them already late when they reached it.
    forwarded_handoffs: u64,
    late_forwarded_handoffs: u64,
    /// Packets the model did not drop but that were lost: a write to a host failed, or no buffer
    /// was left to read into.
    physical_drops: u64,
    /// Scheduled link changes never in force: a later change of the same link fell due before
    /// the driver could apply them (a schedule finer than its turns).
    skipped_changes: u64,
}

/// `Accuracy` as plain data: the histogram as its recorded values and their counts.
#[derive(Serialize, Deserialize)]
struct AccuracyParts {
    late_threshold_ns: u64,
    max_late_fraction: f64,
    /// (lateness ns, releases) for each recorded value.
    lateness_ns: Vec<(u64, u64)>,
    late: u64,
    handoffs: u64,
    late_handoffs: u64,
    handoff_lateness_max_ns: u64,
    #[serde(default)]
    forwarded_handoffs: u64,
    #[serde(default)]
    late_forwarded_handoffs: u64,
    physical_drops: u64,
    skipped_changes: u64,
}

impl From<Accuracy> for AccuracyParts {
    fn from(a: Accuracy) -> AccuracyParts {
        AccuracyParts {
            late_threshold_ns: a.thresholds.late.as_nanos() as u64,
            max_late_fraction: a.thresholds.max_late_fraction,
            lateness_ns: a
                .lateness_ns
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect(),
            late: a.late,
            handoffs: a.handoffs,
            late_handoffs: a.late_handoffs,
            handoff_lateness_max_ns: a.handoff_lateness_max.as_nanos() as u64,
            forwarded_handoffs: a.forwarded_handoffs,
            late_forwarded_handoffs: a.late_forwarded_handoffs,
            physical_drops: a.physical_drops,
            skipped_changes: a.skipped_changes,
        }
    }
}

impl From<AccuracyParts> for Accuracy {
    fn from(p: AccuracyParts) -> Accuracy {
        let mut a = Accuracy::new(Thresholds {
            late: Duration::from_nanos(p.late_threshold_ns),
            max_late_fraction: p.max_late_fraction,
        });
        for (value, count) in p.lateness_ns {
            a.lateness_ns.saturating_record_n(value, count);
        }
        a.late = p.late;
        a.handoffs = p.handoffs;
        a.late_handoffs = p.late_handoffs;
        a.handoff_lateness_max = Duration::from_nanos(p.handoff_lateness_max_ns);
        a.forwarded_handoffs = p.forwarded_handoffs;
        a.late_forwarded_handoffs = p.late_forwarded_handoffs;
        a.physical_drops = p.physical_drops;
        a.skipped_changes = p.skipped_changes;
        a
    }
}

/// Accuracy figures of a run, for `netloom run` and `stats` (JSON as documented in docs/live.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccuracyReport {
    /// Packets written to hosts.
    pub released: u64,
    /// Lateness of released packets (ns, 3 significant digits): median ...
    pub lateness_ns_p50: u64,
    /// ... 99th percentile ...
    pub lateness_ns_p99: u64,
    /// ... 99.9th percentile ...
    pub lateness_ns_p999: u64,
    /// ... and the latest.
    pub lateness_ns_max: u64,
    /// The lateness of every release added up, ns (with `released`, the mean).
    #[serde(default)]
    pub lateness_ns_sum: u64,
    /// Releases at most so late, for each of `LATENESS_BUCKETS_NS` (to 3 significant digits,
    /// the histogram's resolution).
    #[serde(default)]
    pub lateness_buckets: Vec<LatenessBucket>,
    /// A release later than this after its scheduled time is late.
    pub late_threshold_ns: u64,
    /// Packets released later than the threshold.
    pub late: u64,
    /// Packets lost outside the model: a write to a host failed, no buffer was left, or a
    /// host's TUN queue was full (`tun_queue_drops`).
    pub physical_drops: u64,
    /// Of `physical_drops`, packets hosts sent that the kernel dropped because their TUN queue
    /// was full: the engine did not read them in time.
    #[serde(default)]
    pub tun_queue_drops: u64,
    /// Of `physical_drops`, in a run over several machines: hand-offs lost between machines,
    /// found by the gaps in each channel's sequence numbers (docs/cluster.md).
    #[serde(default)]
    pub lost_handoffs: u64,
    /// With several workers: packets handed from one to another, how many of them arrived later
    /// than the threshold after their intended time, and the latest (0 with one worker).
    pub handoffs: u64,
    /// Hand-offs that arrived later than the threshold after their intended time.
    pub late_handoffs: u64,
    /// The latest hand-off, ns after its intended time.
    pub handoff_lateness_ns_max: u64,
    /// With `--repartition`: hand-offs that reached the worker that handled them before a
    /// move and were passed on to the one that handles them now (their arrival there counts
    /// among `handoffs` and `late_handoffs`, and so in the verdict, as any other) ...
    #[serde(default)]
    pub forwarded_handoffs: u64,
    /// ... and of them, those already later than the threshold when they reached the first.
    #[serde(default)]
    pub late_forwarded_handoffs: u64,
    /// Scheduled link changes never in force because a later change of the same link fell due
    /// before the driver could apply them: the schedule is finer than the driver's turns, and
    /// was coarsened to them.
    #[serde(default)]
    pub skipped_changes: u64,
    /// Whether the run stayed within the thresholds (releases and hand-offs), lost nothing
    /// outside the model and kept every scheduled change.
    pub accurate: bool,
}

impl Accuracy {
    /// Nothing recorded yet, judged by `thresholds`.
    pub fn new(thresholds: Thresholds) -> Accuracy {
        Accuracy {
            thresholds,
            lateness_ns: Histogram::new_with_bounds(1, MAX_LATENESS_NS, 3)
                .expect("bounds and 3 significant digits are valid"),
            late: 0,
            physical_drops: 0,
            skipped_changes: 0,
            handoffs: 0,
            late_handoffs: 0,
            handoff_lateness_max: Duration::ZERO,
            forwarded_handoffs: 0,
            late_forwarded_handoffs: 0,
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

    /// A packet was lost outside the model.
    pub fn record_physical_drop(&mut self) {
        self.physical_drops += 1;
    }

    /// `n` more scheduled link changes were skipped, never in force.
    pub fn record_skipped_changes(&mut self, n: u64) {
        self.skipped_changes += n;
    }

    /// A packet from another worker arrived `lateness` after its intended time (zero if
    /// before): it continues from when it arrived.
    pub fn record_handoff(&mut self, lateness: Duration) {
        self.handoffs += 1;
        if lateness > self.thresholds.late {
            self.late_handoffs += 1;
        }
        self.handoff_lateness_max = self.handoff_lateness_max.max(lateness);
    }

    /// A hand-off for a worker that no longer handles it (it moved) reached this one
    /// `lateness` after its intended time, and was passed on.
    pub fn record_forwarded_handoff(&mut self, lateness: Duration) {
        self.forwarded_handoffs += 1;
        if lateness > self.thresholds.late {
            self.late_forwarded_handoffs += 1;
        }
    }

    /// Adds another worker's figures (same thresholds) to these.
    pub fn merge(&mut self, other: &Accuracy) {
        self.lateness_ns
            .add(&other.lateness_ns)
            .expect("histograms of the same bounds add up");
        self.late += other.late;
        self.physical_drops += other.physical_drops;
        self.skipped_changes += other.skipped_changes;
        self.handoffs += other.handoffs;
        self.late_handoffs += other.late_handoffs;
        self.forwarded_handoffs += other.forwarded_handoffs;
        self.late_forwarded_handoffs += other.late_forwarded_handoffs;
        self.handoff_lateness_max = self.handoff_lateness_max.max(other.handoff_lateness_max);
    }

    /// The figures so far, and the verdict.
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
        let fraction = |part: u64, whole: u64| {
            if whole == 0 {
                0.0
            } else {
                part as f64 / whole as f64
            }
        };
        let within = |f: f64| f <= self.thresholds.max_late_fraction;
        let (lateness_ns_sum, lateness_buckets) = self.lateness_buckets();
        AccuracyReport {
            released,
            lateness_ns_p50: q(0.5),
            lateness_ns_p99: q(0.99),
            lateness_ns_p999: q(0.999),
            lateness_ns_max: if h.is_empty() { 0 } else { h.max() },
            lateness_ns_sum,
            lateness_buckets,
            late_threshold_ns: self.thresholds.late.as_nanos() as u64,
            late: self.late,
            physical_drops: self.physical_drops,
            tun_queue_drops: 0,
            lost_handoffs: 0,
            handoffs: self.handoffs,
            late_handoffs: self.late_handoffs,
            handoff_lateness_ns_max: self.handoff_lateness_max.as_nanos() as u64,
            forwarded_handoffs: self.forwarded_handoffs,
            late_forwarded_handoffs: self.late_forwarded_handoffs,
            skipped_changes: self.skipped_changes,
            accurate: within(fraction(self.late, released))
                && within(fraction(self.late_handoffs, self.handoffs))
                && self.physical_drops == 0
                && self.skipped_changes == 0,
        }
    }
}

impl Accuracy {
    /// The sum of all lateness and the cumulative fixed buckets, in one pass over the recorded
    /// values (a snapshot or a monitor's look costs one walk of the histogram, not one a bucket).
    fn lateness_buckets(&self) -> (u64, Vec<LatenessBucket>) {
        let mut sum = 0;
        let mut counts = [0u64; LATENESS_BUCKETS_NS.len()];
        for v in self.lateness_ns.iter_recorded() {
            let (value, count) = (v.value_iterated_to(), v.count_at_value());
            sum += value * count;
            if let Some(k) = LATENESS_BUCKETS_NS.iter().position(|&le| value <= le) {
                counts[k] += count;
            }
        }
        let mut below = 0;
        let buckets = LATENESS_BUCKETS_NS
            .iter()
            .zip(counts)
            .map(|(&le_ns, count)| {
                below += count;
                LatenessBucket {
                    le_ns,
                    count: below,
                }
            })
            .collect();
        (sum, buckets)
    }
}

impl AccuracyReport {
    /// Adds `dropped` packets that hosts' TUN queues lost (which only the kernel counts, not a
    /// worker) to the physical drops; any makes the run inaccurate.
    pub fn add_tun_queue_drops(&mut self, dropped: u64) {
        self.tun_queue_drops += dropped;
        self.add_physical_drops(dropped);
    }

    /// Adds `lost` hand-offs that never reached the machine they were sent to (which only the
    /// receiving machine's count of sequence numbers finds) to the physical drops; any makes
    /// the run inaccurate.
    pub fn add_lost_handoffs(&mut self, lost: u64) {
        self.lost_handoffs += lost;
        self.add_physical_drops(lost);
    }

    fn add_physical_drops(&mut self, dropped: u64) {
        self.physical_drops += dropped;
        self.accurate &= dropped == 0;
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
        let r = a.report();
        let bucket = |le_ns: u64| {
            r.lateness_buckets
                .iter()
                .find(|b| b.le_ns == le_ns)
                .unwrap()
                .count
        };
        assert_eq!(
            (bucket(1_000), bucket(5_000), bucket(1_000_000)),
            (0, 999, 999)
        );
        assert_eq!(
            bucket(5_000_000),
            1001,
            "the 2 ms releases fall in the 5 ms bucket"
        );
        assert_eq!(r.lateness_buckets.len(), LATENESS_BUCKETS_NS.len());
        let exact = 999 * 3_000 + 2 * 2_000_000;
        assert!(
            r.lateness_ns_sum.abs_diff(exact) < exact / 1000,
            "{}",
            r.lateness_ns_sum
        );
        let mut b = Accuracy::new(Thresholds::default());
        b.record_physical_drop();
        assert!(!b.report().accurate);
    }

    #[test]
    fn tun_queue_drops_are_physical_drops_and_make_a_run_inaccurate() {
        let mut a = Accuracy::new(Thresholds::default());
        a.record_physical_drop();
        let mut r = a.report();
        assert!(!r.accurate);
        r.add_tun_queue_drops(7);
        assert_eq!((r.physical_drops, r.tun_queue_drops), (8, 7));
        let mut clean = Accuracy::new(Thresholds::default()).report();
        clean.add_tun_queue_drops(0);
        assert!(clean.accurate, "no drop, no verdict change");
        clean.add_tun_queue_drops(1);
        assert!(!clean.accurate);
        let mut lost = Accuracy::new(Thresholds::default()).report();
        lost.add_lost_handoffs(3);
        assert_eq!((lost.physical_drops, lost.lost_handoffs), (3, 3));
        assert!(!lost.accurate);
    }

    #[test]
    fn hand_offs_passed_on_after_a_move_are_counted_with_those_already_late() {
        // The old owner passes on one on time and one 2 ms late; the new owner takes both.
        let mut old = Accuracy::new(Thresholds::default());
        old.record_forwarded_handoff(Duration::from_micros(10));
        old.record_forwarded_handoff(Duration::from_millis(2));
        let mut new = Accuracy::new(Thresholds::default());
        new.record_handoff(Duration::from_micros(40));
        new.record_handoff(Duration::from_millis(2));
        // Between machines the old owner's figures travel as bytes.
        let old: Accuracy = serde_json::from_str(&serde_json::to_string(&old).unwrap()).unwrap();
        new.merge(&old);
        let r = new.report();
        assert_eq!((r.forwarded_handoffs, r.late_forwarded_handoffs), (2, 1));
        // Counted once among hand-offs, where they arrived: the late one makes it inaccurate.
        assert_eq!((r.handoffs, r.late_handoffs), (2, 1));
        assert!(!r.accurate);
    }

    #[test]
    fn workers_figures_merge_and_late_handoffs_count() {
        let mut a = Accuracy::new(Thresholds::default());
        let mut b = Accuracy::new(Thresholds::default());
        for _ in 0..500 {
            a.record_release(Duration::from_micros(1));
            b.record_release(Duration::from_micros(5));
            b.record_handoff(Duration::ZERO);
        }
        let mut merged = a.clone();
        merged.merge(&b);
        // As the machines of a cluster send it: the same figures on arrival.
        let sent: Accuracy = serde_json::from_str(&serde_json::to_string(&b).unwrap()).unwrap();
        assert_eq!(sent.report(), b.report());
        let r = merged.report();
        assert_eq!((r.released, r.handoffs, r.late_handoffs), (1000, 500, 0));
        assert!(r.lateness_ns_p99 >= 5_000 && r.lateness_ns_p50 < 1_010);
        assert!(r.accurate);
        b.record_handoff(Duration::from_millis(1));
        a.merge(&b);
        let r = a.report();
        assert_eq!((r.handoffs, r.late_handoffs), (501, 1));
        assert_eq!(r.handoff_lateness_ns_max, 1_000_000);
        assert!(!r.accurate, "1 late hand-off in 501 is beyond 0.1 %");
    }
}
