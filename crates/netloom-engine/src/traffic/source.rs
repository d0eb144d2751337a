//! Open-loop sources (CBR, Poisson, on-off): packets leave on a schedule of their own, whatever
//! the network does with them. Not here: window flows (`aimd`) and what receivers count.

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
    pub fn new(kind: SourceKind, cap: Option<Rate>, start: Instant, seed: u64) -> OpenSender {
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

    pub fn poll_at(&self) -> Option<Instant> {
        let t = self.departure();
        (t != Instant::MAX).then_some(t)
    }

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
