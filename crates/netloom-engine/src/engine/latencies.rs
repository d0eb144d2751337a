//! A flow's one-way latencies: a histogram filled a few values at a time, not one per packet.

use hdrhistogram::Histogram;
use std::borrow::Cow;

/// Per-flow latency histograms: 3 significant digits with a resolution of 1 us, 32-bit
/// counters, sized for 10 ms at first and grown only as far as the flow's largest latency (up
/// to 100 s; larger values are recorded as 100 s). A flow with latencies under 100 ms costs about
/// 30 kB; a fixed range of 1 ns to an hour with 64-bit counters cost 260 kB per flow.
const MIN_LATENCY_NS: u64 = 1_000;
const INITIAL_MAX_LATENCY_NS: u64 = 10_000_000;
const MAX_LATENCY_NS: u64 = 100_000_000_000;

fn latency_histogram() -> Histogram<u32> {
    let mut h = Histogram::new_with_bounds(MIN_LATENCY_NS, INITIAL_MAX_LATENCY_NS, 3)
        .expect("bounds and 3 significant digits are valid");
    h.auto(true);
    h
}

/// Latencies kept back before they go into the histogram together: as many as fit a cache line
/// with their count.
const BATCH: usize = 15;

/// The histogram of a flow's latencies in nanoseconds, with the last few not yet in it. A
/// flow's histogram is about 30 kB, and recording a packet's latency reads a bucket of it: on a
/// large topology (inet's 1,600 flows) that was a cache miss per delivered packet, a tenth of
/// the run's time (docs/performance.md). A flow's latencies sit in few buckets, so a batch of
/// them costs about one miss. The values kept back share a cache line; a latency past 4.3 s,
/// which does not fit their 32 bits, goes into the histogram at once.
#[derive(Clone)]
#[repr(C, align(64))]
pub struct Latencies {
    pending: [u32; BATCH],
    len: u8,
    histogram: Histogram<u32>,
}

impl Latencies {
    /// None recorded yet.
    pub(crate) fn new() -> Latencies {
        Latencies {
            pending: [0; BATCH],
            len: 0,
            histogram: latency_histogram(),
        }
    }

    /// Records one latency (larger than `MAX_LATENCY_NS` counts as that).
    pub(crate) fn record(&mut self, ns: u64) {
        let Ok(short) = u32::try_from(ns) else {
            Self::fill(&mut self.histogram, &[ns.min(MAX_LATENCY_NS)]);
            return;
        };
        self.pending[usize::from(self.len)] = short;
        self.len += 1;
        if usize::from(self.len) == BATCH {
            Self::fill(&mut self.histogram, &self.pending);
            self.len = 0;
        }
    }

    /// Every latency recorded so far.
    pub fn histogram(&self) -> Cow<'_, Histogram<u32>> {
        let pending = &self.pending[..usize::from(self.len)];
        if pending.is_empty() {
            return Cow::Borrowed(&self.histogram);
        }
        let mut h = self.histogram.clone();
        Self::fill(&mut h, pending);
        Cow::Owned(h)
    }

    fn fill(h: &mut Histogram<u32>, values: &[impl Copy + Into<u64>]) {
        for &ns in values {
            let ns: u64 = ns.into();
            // The histogram resizes itself up to `MAX_LATENCY_NS`, and a 32-bit counter would
            // need 4e9 packets of the same latency to overflow, so recording cannot fail.
            let _ = h.record(ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a plain histogram holds after recording `values` one by one.
    fn plain(values: &[u64]) -> Histogram<u32> {
        let mut h = latency_histogram();
        for &v in values {
            h.record(v.min(MAX_LATENCY_NS)).unwrap();
        }
        h
    }

    #[test]
    fn every_value_recorded_is_in_the_histogram_batch_or_not() {
        let values: Vec<u64> = (0..2 * BATCH as u64 + 2)
            .map(|i| 1_000 + i * 7_919_993)
            .chain([5_000_000_000, 200_000_000_000, 3_000])
            .collect();
        let mut l = Latencies::new();
        for (n, &v) in values.iter().enumerate() {
            l.record(v);
            let (seen, want) = (l.histogram(), plain(&values[..=n]));
            assert_eq!(seen.len(), want.len(), "after {} values", n + 1);
            assert_eq!(seen.max(), want.max());
            assert_eq!(seen.value_at_quantile(0.5), want.value_at_quantile(0.5));
            assert!(seen.iter_recorded().eq(want.iter_recorded()));
        }
    }

    #[test]
    fn values_past_the_range_count_as_its_top() {
        let mut l = Latencies::new();
        l.record(u64::MAX);
        assert_eq!(l.histogram().len(), 1);
        assert!(l
            .histogram()
            .equivalent(l.histogram().max(), MAX_LATENCY_NS));
    }
}
