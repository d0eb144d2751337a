//! Random Early Detection (gentle): the average queue estimator and the drop-probability curve.

use crate::config::RedParams;
use netloom_time::{Duration, Instant};
use serde::{Deserialize, Serialize};

/// RED's exponentially weighted average of the queue, in the queue's unit (packets or bytes).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub(crate) struct RedAverage {
    avg: f64,
    /// When the average was last updated: the idle time before it is already folded in.
    sampled_at: Instant,
}

impl RedAverage {
    /// Folds in the instantaneous queue `q` seen by a packet arriving at `now` and returns the new
    /// average.
    ///
    /// `idle` is `Some((since, full_packet))` when the queue has been empty since `since`, and
    /// `full_packet` is the time to send a 1500 B packet. Floyd & Jacobson's idle correction
    /// decays the average as if m = idle time / `full_packet` empty-queue samples had arrived,
    /// (1−w)^m, so a queue that drained long ago does not keep dropping. Idle time before the
    /// last update (an arrival dropped while the queue was empty) is not counted twice. Then the
    /// regular sample is folded in (as ns-2 does), which makes weight 1 track the instantaneous
    /// queue exactly.
    #[inline]
    pub(crate) fn update(
        &mut self,
        weight: f64,
        q: f64,
        now: Instant,
        idle: Option<(Instant, Duration)>,
    ) -> f64 {
        if let Some((since, full_packet)) = idle {
            let idle = now.saturating_since(since.max(self.sampled_at));
            let m = idle.as_nanos() as f64 / full_packet.as_nanos() as f64;
            self.avg *= (1.0 - weight).powf(m);
        }
        self.sampled_at = now;
        self.avg = (1.0 - weight) * self.avg + weight * q;
        self.avg
    }

    #[cfg(test)]
    pub(crate) fn value(&self) -> f64 {
        self.avg
    }
}

/// Gentle RED's drop probability for an average queue `avg`: 0 below `min_th`, rising linearly to
/// `max_p` at `max_th`, then linearly to 1 at `2 × max_th`, and 1 beyond.
#[inline]
pub(crate) fn drop_probability(params: &RedParams, avg: f64) -> f64 {
    let RedParams {
        min_th,
        max_th,
        max_p,
        ..
    } = *params;
    if avg < min_th {
        0.0
    } else if avg < max_th {
        // Here min_th ≤ avg < max_th, so the span is positive.
        max_p * (avg - min_th) / (max_th - min_th)
    } else if avg < 2.0 * max_th {
        // Here 0 ≤ max_th ≤ avg < 2·max_th, so max_th > 0.
        max_p + (1.0 - max_p) * (avg - max_th) / max_th
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARAMS: RedParams = RedParams {
        min_th: 5.0,
        max_th: 15.0,
        max_p: 0.1,
        weight: 0.002,
    };

    #[test]
    fn curve_is_piecewise_linear_and_gentle() {
        let cases = [
            (0.0, 0.0),
            (4.99, 0.0),
            (5.0, 0.0),
            (10.0, 0.05),
            (15.0, 0.1),
            (22.5, 0.55),
            (29.99, 0.1 + 0.9 * 14.99 / 15.0),
            (30.0, 1.0),
            (1e9, 1.0),
        ];
        for (avg, want) in cases {
            let got = drop_probability(&PARAMS, avg);
            assert!((got - want).abs() < 1e-12, "avg {avg}: {got} != {want}");
        }
    }

    #[test]
    fn equal_thresholds_do_not_divide_by_zero() {
        let p = RedParams {
            min_th: 10.0,
            max_th: 10.0,
            ..PARAMS
        };
        assert_eq!(drop_probability(&p, 9.0), 0.0);
        assert!((drop_probability(&p, 10.0) - 0.1).abs() < 1e-12);
        let zero = RedParams {
            min_th: 0.0,
            max_th: 0.0,
            ..PARAMS
        };
        assert_eq!(drop_probability(&zero, 0.0), 1.0);
    }

    #[test]
    fn average_is_an_ewma_with_idle_decay() {
        let ms = |n: u64| Instant::from_nanos(n * 1_000_000);
        let full = Some((ms(10), Duration::from_millis(1)));
        let mut a = RedAverage::default();
        // Busy queue of 8 with w = 0.5: 4, then 6.
        assert_eq!(a.update(0.5, 8.0, ms(0), None), 4.0);
        assert_eq!(a.update(0.5, 8.0, ms(1), None), 6.0);
        // Empty since 10 ms, so three idle full-size packet times at 13 ms: 6 · 0.5³ = 0.75, then
        // the empty sample halves it.
        assert_eq!(a.update(0.5, 0.0, ms(13), full), 0.375);
        // Still empty since 10 ms, but only 14 − 13 ms are new idle time.
        assert_eq!(a.update(0.5, 0.0, ms(14), full), 0.375 / 4.0);
        // Weight 1 follows the instantaneous queue whatever came before.
        assert_eq!(a.update(1.0, 17.0, ms(20), full), 17.0);
    }
}
