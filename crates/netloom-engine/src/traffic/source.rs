//! Open-loop sources (CBR, Poisson, on-off) that ignore the network; not window flows (`aimd`).

use super::{Segment, SenderStats, SourceKind};
use netloom_time::{Duration, Instant, Rate};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The sender of a CBR, Poisson or on-off flow.
///
/// The source process generates packets; with a cap, departures are then spaced at least
/// `cap.tx_time(size)` apart, as if a shaper with an unbounded buffer sat behind the source.
#[derive(Clone, Debug)]
pub struct OpenSender {
    process: Process,
    size: u32,
    /// Minimum spacing of departures; zero without a cap.
    pace: Duration,
    /// When the process generates packet `seq`; `Instant::MAX` if it never will.
    gen_at: Instant,
    /// When the previous packet left.
    last_departure: Option<Instant>,
    /// Sequence number of the next packet, which is also the number sent so far.
    seq: u64,
    rng: Xoshiro256PlusPlus,
}

#[derive(Clone, Debug)]
enum Process {
    /// Packet k is generated at `start` + ceil(k × bits / rate), so the long-run rate is exact
    /// and rounding never accumulates into drift.
    Cbr {
        start: Instant,
        bits: u64,
        rate: Rate,
    },
    /// Exponential gaps with mean `mean_ns`.
    Poisson { mean_ns: f64 },
    /// CBR on a clock that only runs while on: packet k is due at on-time ceil(k × bits / rate),
    /// mapped into the current on period. Carrying the phase across periods keeps the long-run
    /// rate at exactly rate × on / (on + off) instead of biasing every period by half a packet.
    OnOff {
        bits: u64,
        rate: Rate,
        on_mean_ns: f64,
        off_mean_ns: f64,
        /// Real time at which the current on period started.
        period_start: Instant,
        /// On-time elapsed before the current period.
        period_on_time: u64,
        /// Length of the current on period.
        period_len: u64,
    },
}

impl OpenSender {
    /// A sender for an open-loop `kind`. Panics on `SourceKind::Aimd` (a broken invariant:
    /// `Sender::new` dispatches that to `AimdSender`).
    pub(super) fn new(
        kind: SourceKind,
        cap: Option<Rate>,
        start: Instant,
        seed: u64,
    ) -> OpenSender {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let (process, size) = match kind {
            SourceKind::Cbr { rate, size } => (
                Process::Cbr {
                    start,
                    bits: size as u64 * 8,
                    rate,
                },
                size,
            ),
            SourceKind::Poisson { rate, size } => (
                Process::Poisson {
                    mean_ns: mean_gap_ns(rate, size),
                },
                size,
            ),
            SourceKind::OnOff {
                rate,
                size,
                on,
                off,
            } => {
                let on_mean_ns = on.as_nanos() as f64;
                let period_len = draw_on(&mut rng, on_mean_ns);
                (
                    Process::OnOff {
                        bits: size as u64 * 8,
                        rate,
                        on_mean_ns,
                        off_mean_ns: off.as_nanos() as f64,
                        period_start: start,
                        period_on_time: 0,
                        period_len,
                    },
                    size,
                )
            }
            SourceKind::Aimd { .. } => unreachable!("AIMD flows use AimdSender"),
        };
        let mut s = OpenSender {
            process,
            size,
            pace: cap.map_or(Duration::ZERO, |c| c.tx_time(size as u64)),
            gen_at: start,
            last_departure: None,
            seq: 0,
            rng,
        };
        s.gen_at = s.process.generate(0, start, &mut s.rng);
        s
    }

    fn departure(&self) -> Instant {
        match self.last_departure {
            Some(last) => self.gen_at.max(last + self.pace),
            None => self.gen_at,
        }
    }

    /// When the next packet departs: when the process generates it, or later if the cap holds
    /// it back. `None` if the process will generate no more.
    pub fn poll_at(&self) -> Option<Instant> {
        let t = self.departure();
        (t != Instant::MAX).then_some(t)
    }

    /// The next packet, if its departure is due at or before `now`; call until `None`. Never
    /// drops a packet: one held back by the cap leaves later instead.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        let t = self.departure();
        if t > now || t == Instant::MAX {
            return None;
        }
        let seg = Segment {
            seq: self.seq,
            bytes: self.size,
        };
        self.last_departure = Some(t);
        self.seq += 1;
        self.gen_at = self.process.generate(self.seq, self.gen_at, &mut self.rng);
        Some(seg)
    }

    /// Packets sent so far; retransmissions and timeouts are always 0.
    pub fn stats(&self) -> SenderStats {
        SenderStats {
            sent: self.seq,
            ..SenderStats::default()
        }
    }
}

impl Process {
    /// When packet `k` is generated, given that packet k−1 was generated at `prev` (for k = 0,
    /// `prev` is the flow's start).
    fn generate(&mut self, k: u64, prev: Instant, rng: &mut Xoshiro256PlusPlus) -> Instant {
        match self {
            Process::Cbr { start, bits, rate } => *start + Duration(cbr_offset_ns(k, *bits, *rate)),
            Process::Poisson { mean_ns } => prev + Duration(draw_exp_ns(rng, *mean_ns)),
            Process::OnOff {
                bits,
                rate,
                on_mean_ns,
                off_mean_ns,
                period_start,
                period_on_time,
                period_len,
            } => {
                let due = cbr_offset_ns(k, *bits, *rate);
                if due == u64::MAX {
                    return Instant::MAX;
                }
                while due >= *period_on_time + *period_len {
                    let off = draw_exp_ns(rng, *off_mean_ns);
                    *period_start = *period_start + Duration(*period_len) + Duration(off);
                    *period_on_time += *period_len;
                    *period_len = draw_on(rng, *on_mean_ns);
                }
                *period_start + Duration(due - *period_on_time)
            }
        }
    }
}

/// ceil(k × bits × 10⁹ / rate) in ns; `u64::MAX` (never) at rate zero.
fn cbr_offset_ns(k: u64, bits: u64, rate: Rate) -> u64 {
    if rate.as_bps() == 0 {
        return u64::MAX;
    }
    let ns = (k as u128 * bits as u128 * 1_000_000_000).div_ceil(rate.as_bps() as u128);
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// Mean gap of a Poisson source: size × 8 / rate in ns, unrounded (infinite at rate zero).
fn mean_gap_ns(rate: Rate, size: u32) -> f64 {
    size as f64 * 8e9 / rate.as_bps() as f64
}

/// An exponentially distributed duration with mean `mean_ns`, by inversion. Floating point is
/// confined to this draw; the result is whole nanoseconds (saturating, so an infinite mean is
/// "never").
fn draw_exp_ns(rng: &mut Xoshiro256PlusPlus, mean_ns: f64) -> u64 {
    let u: f64 = rng.gen();
    if !mean_ns.is_finite() {
        return u64::MAX;
    }
    // 1 − u lies in (0, 1], so the logarithm is finite.
    (-mean_ns * (1.0 - u).ln()).round() as u64
}

/// An on period: at least 1 ns so the on-off schedule always advances.
fn draw_on(rng: &mut Xoshiro256PlusPlus, mean_ns: f64) -> u64 {
    draw_exp_ns(rng, mean_ns).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn sender(kind: SourceKind, cap: Option<Rate>, start: Instant, seed: u64) -> OpenSender {
        OpenSender::new(kind, cap, start, seed)
    }

    /// Departure times before `until`, polling exactly when the sender asks.
    fn departures(s: &mut OpenSender, until: Instant) -> Vec<Instant> {
        let mut out = Vec::new();
        while let Some(t) = s.poll_at().filter(|&t| t < until) {
            let seg = s.poll_transmit(t).expect("a packet is due at poll_at");
            assert_eq!(seg.seq, out.len() as u64);
            out.push(t);
        }
        out
    }

    fn gaps(times: &[Instant]) -> Vec<u64> {
        times.windows(2).map(|w| (w[1] - w[0]).as_nanos()).collect()
    }

    #[test]
    fn cbr_sends_rate_times_duration_evenly_spaced() {
        let rate = Rate::bps(6_000_000);
        let start = Instant(3 * MS);
        let mut s = sender(SourceKind::Cbr { rate, size: 1500 }, None, start, 1);
        assert_eq!(
            s.poll_transmit(Instant(start.0 - 1)),
            None,
            "nothing before start"
        );
        let t = departures(&mut s, start + Duration::from_secs(1));
        // 6 Mbit/s × 1 s / (1500 × 8 bit) = 500 packets, one every 2 ms from the start.
        assert_eq!(t.len(), 500);
        assert_eq!(t[0], start);
        assert!(gaps(&t).iter().all(|&g| Duration(g) == rate.tx_time(1500)));
        assert_eq!(s.stats().sent, 500);
    }

    #[test]
    fn cbr_at_an_uneven_rate_does_not_drift() {
        // 1500 B at 7 Mbit/s is 1 714 285.7 ns: gaps round to either neighbour, yet 3 s hold
        // exactly 7e6 × 3 / 12 000 = 1750 packets.
        let rate = Rate::bps(7_000_000);
        let mut s = sender(SourceKind::Cbr { rate, size: 1500 }, None, Instant::ZERO, 1);
        let t = departures(&mut s, Instant::ZERO + Duration::from_secs(3));
        assert_eq!(t.len(), 1750);
        assert!(gaps(&t).iter().all(|&g| g == 1_714_285 || g == 1_714_286));
    }

    #[test]
    fn poisson_count_and_gaps_are_exponential() {
        // 1500 B at 1.2 Mbit/s: λ = 100 packets/s, mean gap 10 ms. Over 100 s the count is
        // Poisson(10 000): sd 100, bound ±4 sd. The mean of ~10 000 gaps has sd 0.1 ms: ±4 sd.
        // P(gap > mean) = e⁻¹ for an exponential; binomial sd √(p(1−p)/n) ≈ 0.0048: ±4 sd.
        let kind = SourceKind::Poisson {
            rate: Rate::bps(1_200_000),
            size: 1500,
        };
        let mut s = sender(kind, None, Instant::ZERO, 7);
        let t = departures(&mut s, Instant::ZERO + Duration::from_secs(100));
        let n = t.len() as f64;
        assert!((n - 10_000.0).abs() <= 400.0, "count {n}");
        let g = gaps(&t);
        let mean = g.iter().sum::<u64>() as f64 / g.len() as f64;
        assert!(
            (mean - 10.0 * MS as f64).abs() <= 0.4 * MS as f64,
            "mean gap {mean}"
        );
        let above = g.iter().filter(|&&x| x as f64 > 10.0 * MS as f64).count() as f64;
        let p = above / g.len() as f64;
        assert!(
            (p - (-1f64).exp()).abs() <= 4.0 * 0.0048,
            "P(gap > mean) = {p}"
        );
    }

    #[test]
    fn poisson_is_deterministic_per_seed() {
        let kind = SourceKind::Poisson {
            rate: Rate::bps(1_200_000),
            size: 1500,
        };
        let until = Instant::ZERO + Duration::from_secs(1);
        let run = |seed| departures(&mut sender(kind, None, Instant::ZERO, seed), until);
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    #[test]
    fn onoff_long_run_rate_is_rate_times_duty_cycle() {
        // 2 Mbit/s while on (one 1500 B packet per 6 ms), on 100 ms, off 400 ms on average:
        // 2 Mbit/s × 100/500 = 0.4 Mbit/s, 33.3 packets/s. Per on-off cycle, packets − rate ×
        // cycle length = (4·on − off)/30 ms has sd √(16·100² + 400²)/30 ≈ 18.9 packets; over
        // 4000 s (8000 cycles) the total's sd is ≈ 1690 packets: bound ±4 sd.
        let kind = SourceKind::OnOff {
            rate: Rate::bps(2_000_000),
            size: 1500,
            on: Duration::from_millis(100),
            off: Duration::from_millis(400),
        };
        let mut s = sender(kind, None, Instant::ZERO, 11);
        let t = departures(&mut s, Instant::ZERO + Duration::from_secs(4000));
        let expected = 4000.0 * 100.0 / 3.0;
        let sd = 18.9 * 8000f64.sqrt();
        let n = t.len() as f64;
        assert!(
            (n - expected).abs() <= 4.0 * sd,
            "{n} packets, expected {expected}"
        );
        // While on it is CBR: every gap is 6 ms, plus any off periods in between.
        let g = gaps(&t);
        assert!(g.iter().all(|&x| x >= 6 * MS));
        let exact = g.iter().filter(|&&x| x == 6 * MS).count() as f64;
        assert!(exact / g.len() as f64 > 0.8, "mostly back-to-back while on");
    }

    #[test]
    fn cap_spaces_departures() {
        // CBR at 12 Mbit/s capped at 6 Mbit/s: 500 packets in 1 s, 2 ms apart.
        let cbr = SourceKind::Cbr {
            rate: Rate::bps(12_000_000),
            size: 1500,
        };
        let cap = Some(Rate::bps(6_000_000));
        let mut s = sender(cbr, cap, Instant::ZERO, 1);
        let t = departures(&mut s, Instant::ZERO + Duration::from_secs(1));
        assert_eq!(t.len(), 500);
        assert!(gaps(&t).iter().all(|&g| g == 2 * MS));
        // Poisson at 1.2 Mbit/s capped at 2.4 Mbit/s: no two departures closer than 5 ms.
        let poisson = SourceKind::Poisson {
            rate: Rate::bps(1_200_000),
            size: 1500,
        };
        let mut s = sender(poisson, Some(Rate::bps(2_400_000)), Instant::ZERO, 1);
        let t = departures(&mut s, Instant::ZERO + Duration::from_secs(10));
        assert!(t.len() > 500);
        assert!(gaps(&t).iter().all(|&g| g >= 5 * MS));
    }

    #[test]
    fn zero_rate_never_sends() {
        let kind = SourceKind::Cbr {
            rate: Rate::bps(0),
            size: 1500,
        };
        let mut s = sender(kind, None, Instant::ZERO, 1);
        assert_eq!(s.poll_at(), None);
        assert_eq!(s.poll_transmit(Instant::MAX), None);
    }
}
