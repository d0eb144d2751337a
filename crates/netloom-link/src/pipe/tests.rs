//! Tests of the pipe against hand-worked timings and statistical bounds.
//!
//! Statistical checks use 99.9% two-sided bounds (3.29 standard deviations), so with fixed seeds
//! they are deterministic, and a wrong probability by more than the bound fails.

use super::*;
use crate::config::{CodelParams, FqCodelParams, LossModel, QueueLimit, RedParams};
use crate::trace::Trace;
use netloom_time::Rate;

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// 12 Mbit/s carries a 1500-byte packet in exactly 1 ms.
const RATE_1MS: Rate = Rate::bps(12_000_000);
/// 1 Gbit/s carries a 1500-byte packet in 12 µs.
const GBIT: Rate = Rate::bps(1_000_000_000);

/// A packet of a transport that does not understand ECN.
const NOT_ECT: PacketMeta = PacketMeta {
    ecn: Ecn::NotEct,
    flow: 0,
};
/// A packet of an ECN-capable transport.
const ECT0: PacketMeta = PacketMeta {
    ecn: Ecn::Ect0,
    flow: 0,
};

fn at(ns: u64) -> Instant {
    Instant::from_nanos(ns)
}

fn plain(rate: Rate, delay_ms: u64, queue: QueueLimit) -> PipeConfig {
    PipeConfig {
        queue,
        ..PipeConfig::new(rate, Duration::from_millis(delay_ms))
    }
}

fn scheduled(a: Admission) -> (Departure, Option<Departure>) {
    match a {
        Admission::Scheduled {
            first, duplicate, ..
        } => (first, duplicate),
        Admission::Dropped(cause) => panic!("unexpected drop: {cause:?}"),
    }
}

/// Asserts `k` successes out of `n` trials is within the 99.9% normal bound of Binomial(n, p):
/// |k − np| ≤ 3.29·sqrt(np(1−p)).
fn assert_binomial(k: u64, n: u64, p: f64, what: &str) {
    let mean = n as f64 * p;
    let bound = 3.29 * (mean * (1.0 - p)).sqrt();
    assert!(
        (k as f64 - mean).abs() <= bound,
        "{what}: {k} of {n}, expected {mean:.1} ± {bound:.1}"
    );
}

#[test]
fn one_packet_exits_after_serialization_and_delay() {
    // 1000 B at 3 Mbit/s: 8·10¹² / 3·10⁶ = 2 666 666.67 ns, rounded up.
    let tx = 2_666_667;
    let mut cfg = plain(Rate::bps(3_000_000), 0, QueueLimit::Packets(10));
    cfg.delay = Duration::from_nanos(7_000_003);
    let mut pipe = Pipe::new(cfg, 1);
    let now = at(123_456_789);
    let (d, dup) = scheduled(pipe.offer(now, 1000, NOT_ECT));
    assert_eq!(d.exit, at(123_456_789 + tx + 7_000_003));
    assert_eq!(dup, None);
    assert_eq!(pipe.queue_len(now), (1, 1000));
    assert_eq!(pipe.queue_len(at(123_456_789 + tx - 1)), (1, 1000));
    assert_eq!(pipe.queue_len(at(123_456_789 + tx)), (0, 0));
    assert!(pipe.release(d.exit, d.ticket, 1000));
    let c = *pipe.counters();
    assert_eq!(
        (c.packets_in, c.bytes_in, c.packets_out, c.bytes_out),
        (1, 1000, 1, 1000)
    );
}

#[test]
fn back_to_back_packets_are_spaced_by_tx_time() {
    let mut pipe = Pipe::new(plain(Rate::bps(3_000_000), 5, QueueLimit::Packets(10)), 1);
    let tx = 2_666_667;
    let exits: Vec<_> = (0..5)
        .map(|_| scheduled(pipe.offer(at(0), 1000, NOT_ECT)).0.exit)
        .collect();
    for (i, e) in exits.iter().enumerate() {
        assert_eq!(*e, at((i as u64 + 1) * tx + 5 * MS));
    }
    assert_eq!(pipe.counters().queue_hwm_packets, 5);
    assert_eq!(pipe.counters().queue_hwm_bytes, 5000);
}

#[test]
fn arrivals_at_or_below_the_rate_are_never_queued_or_dropped() {
    // One 1500 B packet per 1 ms on a 1 ms/packet link: each finishes exactly as the next arrives,
    // so the queue never holds more than the packet being serialized.
    for gap in [2 * MS, MS] {
        let mut pipe = Pipe::new(plain(RATE_1MS, 10, QueueLimit::Packets(1)), 1);
        for k in 0..1000 {
            let (d, _) = scheduled(pipe.offer(at(k * gap), 1500, NOT_ECT));
            assert_eq!(d.exit, at(k * gap + MS + 10 * MS));
        }
        let c = pipe.counters();
        assert_eq!(c.drops_queue, 0);
        assert_eq!(c.queue_hwm_packets, 1);
    }
}

/// Offers 2000 packets of 1500 B every 0.5 ms (twice the rate of a 1 ms/packet link) to a queue
/// that holds `cap` packets; checks the hand-derived outcome and returns the pipe.
///
/// Derivation: the link is busy from t = 0, so by arrival k (at k/2 ms) floor(k/2) packets have
/// finished. While nothing is dropped the queue after arrival k holds (k+1) − floor(k/2), which
/// first reaches `cap` at k = 2·cap − 2 (and again at 2·cap − 1 − 1 = even k). From then on an odd
/// arrival (half-way through a transmission) finds the queue full and is dropped, an even one
/// arrives as a packet finishes and is accepted: exactly the link rate, 1 packet per ms.
/// Drops are the odd k in [2·cap − 1, 1999]: 1000 − (cap − 1) = 1001 − cap.
fn overload(limit: QueueLimit, cap: u64) -> Pipe {
    let mut pipe = Pipe::new(plain(RATE_1MS, 10, limit), 1);
    let mut accepted = 0u64;
    for k in 0..2000u64 {
        let a = pipe.offer(at(k * MS / 2), 1500, NOT_ECT);
        let should_drop = k >= 2 * cap - 1 && k % 2 == 1;
        if should_drop {
            assert_eq!(a, Admission::Dropped(DropCause::Queue), "arrival {k}");
        } else {
            let (d, _) = scheduled(a);
            // Accepted packets leave back to back, one per ms: throughput equals the rate.
            accepted += 1;
            assert_eq!(d.exit, at(accepted * MS + 10 * MS), "arrival {k}");
        }
    }
    let c = *pipe.counters();
    assert_eq!(c.drops_queue, 1001 - cap);
    assert_eq!(accepted, 999 + cap);
    assert_eq!(c.queue_hwm_packets, cap);
    pipe
}

#[test]
fn overload_is_cut_to_the_rate_with_a_packet_limit() {
    overload(QueueLimit::Packets(10), 10);
}

#[test]
fn overload_is_cut_to_the_rate_with_a_byte_limit() {
    // 10 000 B hold six 1500 B packets (9000 B); a seventh would make 10 500 B.
    let pipe = overload(QueueLimit::Bytes(10_000), 6);
    assert_eq!(pipe.counters().queue_hwm_bytes, 9000);
}

#[test]
fn a_zero_limit_drops_everything() {
    let mut pipe = Pipe::new(plain(RATE_1MS, 1, QueueLimit::Packets(0)), 1);
    assert_eq!(
        pipe.offer(at(0), 100, NOT_ECT),
        Admission::Dropped(DropCause::Queue)
    );
    let mut pipe = Pipe::new(plain(RATE_1MS, 1, QueueLimit::Bytes(99)), 1);
    assert_eq!(
        pipe.offer(at(0), 100, NOT_ECT),
        Admission::Dropped(DropCause::Queue)
    );
    assert!(matches!(
        pipe.offer(at(0), 99, NOT_ECT),
        Admission::Scheduled { .. }
    ));
}

#[test]
fn bernoulli_loss_rate_is_within_binomial_bounds() {
    let n = 100_000;
    for (p, seed) in [(0.1, 3), (0.01, 4)] {
        let mut cfg = plain(GBIT, 1, QueueLimit::Packets(100));
        cfg.loss = LossModel::Bernoulli { p };
        let mut pipe = Pipe::new(cfg, seed);
        for k in 0..n {
            pipe.offer(at(k * 100 * US), 1500, NOT_ECT);
        }
        let c = pipe.counters();
        assert_binomial(c.drops_loss, n, p, "bernoulli loss");
        assert_eq!(c.drops_queue, 0);
    }
}

#[test]
fn gilbert_elliott_loss_matches_the_stationary_rate_and_is_bursty() {
    let (p, r, good_loss, bad_loss) = (0.01, 0.1, 0.0, 0.5);
    let mut cfg = plain(GBIT, 1, QueueLimit::Packets(100));
    cfg.loss = LossModel::GilbertElliott {
        p,
        r,
        good_loss,
        bad_loss,
    };
    let mut pipe = Pipe::new(cfg, 5);
    let n = 1_000_000u64;
    let (mut lost, mut lost_after_loss, mut prev_lost) = (0u64, 0u64, false);
    for k in 0..n {
        let is_lost =
            pipe.offer(at(k * 100 * US), 1500, NOT_ECT) == Admission::Dropped(DropCause::Loss);
        lost += is_lost as u64;
        lost_after_loss += (is_lost && prev_lost) as u64;
        prev_lost = is_lost;
    }
    // Stationary P(bad) π = p/(p+r) = 1/11; long-run loss L = (r·g + p·b)/(p+r) = 1/22.
    let pi = p / (p + r);
    let loss = (r * good_loss + p * bad_loss) / (p + r);
    // The loss indicators are correlated through the chain (second eigenvalue λ = 1 − p − r =
    // 0.89, state autocovariance π(1−π)λᵏ), so the variance of the count per packet is
    // L(1−L) + 2(b−g)²·π(1−π)·λ/(1−λ) ≈ 0.378, about 9× the binomial one. Starting in the good
    // state biases the count by less than π/(1−λ) < 1 packet. 99.9% bound: 3.29 σ ≈ 2020 of ≈ 45 455.
    let lambda = 1.0 - p - r;
    let var = loss * (1.0 - loss)
        + 2.0 * (bad_loss - good_loss).powi(2) * pi * (1.0 - pi) * lambda / (1.0 - lambda);
    let bound = 3.29 * (var * n as f64).sqrt() + 1.0;
    let mean = loss * n as f64;
    assert!(
        (lost as f64 - mean).abs() <= bound,
        "GE loss {lost}, expected {mean:.0} ± {bound:.0}"
    );
    // Burstiness: a loss means the chain was bad (good_loss = 0), so the next packet is lost with
    // (1 − r)·b = 0.45, ten times L; a memoryless model would give 0.045. Over ≈ 45 000 losses the
    // binomial σ is 0.0023; ±0.03 is > 10 σ even allowing for correlation.
    let after = lost_after_loss as f64 / lost as f64;
    assert!(
        (after - (1.0 - r) * bad_loss).abs() < 0.03,
        "P(loss | loss) = {after}"
    );
}

/// RED with weight 1 (average = instantaneous queue), thresholds 5 and 15 packets, max_p 0.1.
fn red_params() -> RedParams {
    RedParams {
        min_th: 5.0,
        max_th: 15.0,
        max_p: 0.1,
        weight: 1.0,
    }
}

/// Holds the queue at `level` packets and counts RED drops over `n` offers, all of which see
/// exactly `level` packets: the queue is filled with drop-tail, RED is switched on, then every
/// accepted packet is followed by a 1 ms step during which exactly one packet finishes.
fn red_drops_at(level: u64, n: u64, seed: u64) -> u64 {
    let mut cfg = plain(RATE_1MS, 1, QueueLimit::Packets(100));
    let mut pipe = Pipe::new(cfg, seed);
    for _ in 0..level {
        scheduled(pipe.offer(at(0), 1500, NOT_ECT));
    }
    cfg.aqm = Aqm::Red(red_params());
    pipe.set_config(at(0), cfg);
    let mut now = 0;
    for _ in 0..n {
        assert_eq!(pipe.queue_len(at(now)).0, level);
        if let Admission::Scheduled { .. } = pipe.offer(at(now), 1500, NOT_ECT) {
            now += MS;
        }
    }
    assert_eq!(pipe.counters().drops_queue, 0);
    pipe.counters().drops_red
}

#[test]
fn red_drop_fraction_follows_the_gentle_curve() {
    let n = 20_000;
    // (queue, p): below min_th, linear region, max_th, gentle region, at and beyond 2·max_th.
    let levels = [
        (3, 0.0),
        (10, 0.05),
        (15, 0.1),
        (20, 0.1 + 0.9 * 5.0 / 15.0),
        (25, 0.1 + 0.9 * 10.0 / 15.0),
        (30, 1.0),
        (40, 1.0),
    ];
    for (i, (level, p)) in levels.into_iter().enumerate() {
        let drops = red_drops_at(level, n, 10 + i as u64);
        assert_binomial(drops, n, p, &format!("RED drops at queue {level}"));
    }
}

#[test]
fn red_measures_a_byte_queue_in_bytes() {
    // 10 packets of 1000 B = 10 000 B sits half-way between 5000 and 15 000 B: p = 0.05.
    let mut cfg = plain(RATE_1MS, 1, QueueLimit::Bytes(1_000_000));
    let mut pipe = Pipe::new(cfg, 20);
    for _ in 0..10 {
        scheduled(pipe.offer(at(0), 1000, NOT_ECT));
    }
    cfg.aqm = Aqm::Red(RedParams {
        min_th: 5000.0,
        max_th: 15_000.0,
        ..red_params()
    });
    pipe.set_config(at(0), cfg);
    let tx = RATE_1MS.tx_time(1000).as_nanos();
    let (n, mut now) = (20_000, 0);
    for _ in 0..n {
        assert_eq!(pipe.queue_len(at(now)).1, 10_000);
        if let Admission::Scheduled { .. } = pipe.offer(at(now), 1000, NOT_ECT) {
            now += tx;
        }
    }
    assert_binomial(pipe.counters().drops_red, n, 0.05, "RED in bytes");
}

#[test]
fn red_average_decays_over_idle_time() {
    let mut cfg = plain(RATE_1MS, 1, QueueLimit::Packets(100));
    cfg.aqm = Aqm::Red(RedParams {
        min_th: 1e9,
        max_th: 2e9,
        max_p: 0.1,
        weight: 0.5,
    });
    let mut pipe = Pipe::new(cfg, 1);
    // Four packets at t = 0 see queues 0, 1, 2, 3: avg 0, 0.5, 1.25, 2.125; the link is busy
    // until 4 ms.
    for _ in 0..4 {
        scheduled(pipe.offer(at(0), 1500, NOT_ECT));
    }
    assert_eq!(pipe.red.value(), 2.125);
    // Idle from 4 ms to 5 ms = one 1500 B transmission time: 2.125 · 0.5, then the empty sample
    // halves it again. The packet is dropped by a zero queue limit, after RED saw it.
    let red_cfg = *pipe.config();
    pipe.set_config(
        at(5 * MS),
        PipeConfig {
            queue: QueueLimit::Packets(0),
            ..red_cfg
        },
    );
    assert_eq!(
        pipe.offer(at(5 * MS), 1500, NOT_ECT),
        Admission::Dropped(DropCause::Queue)
    );
    assert_eq!(pipe.red.value(), 2.125 / 4.0);
    // Still idle at 7 ms, but the time before 5 ms was already counted: two more periods.
    pipe.set_config(at(5 * MS), red_cfg);
    scheduled(pipe.offer(at(7 * MS), 1500, NOT_ECT));
    assert_eq!(pipe.red.value(), 2.125 / 32.0);
}

/// Offers `n` 1500 B packets every 100 µs to a 1 Gbit/s pipe (no queueing) and returns
/// (exit − end of serialization) of each, in ns, as signed numbers.
fn delays(cfg: PipeConfig, n: u64, seed: u64) -> Vec<i64> {
    let mut pipe = Pipe::new(cfg, seed);
    let tx = cfg.rate.tx_time(1500).as_nanos();
    (0..n)
        .map(|k| {
            let t = k * 100 * US;
            let (d, _) = scheduled(pipe.offer(at(t), 1500, NOT_ECT));
            d.exit.as_nanos() as i64 - (t + tx) as i64
        })
        .collect()
}

fn jittery(reorder: bool) -> PipeConfig {
    PipeConfig {
        jitter: Duration::from_millis(5),
        reorder,
        ..plain(GBIT, 10, QueueLimit::Packets(100))
    }
}

#[test]
fn jitter_with_reorder_spreads_uniformly_and_reorders() {
    let n = 10_000;
    let d = delays(jittery(true), n, 7);
    let (delay, jitter) = (10 * MS as i64, 5 * MS as i64);
    assert!(d
        .iter()
        .all(|x| (delay - jitter..=delay + jitter).contains(x)));
    // Uniform over ±5 ms: 10 000 samples leave no 5% end of the range empty (0.95¹⁰⁰⁰⁰ ≈ 0).
    assert!(*d.iter().min().unwrap() < delay - jitter * 9 / 10);
    assert!(*d.iter().max().unwrap() > delay + jitter * 9 / 10);
    // Mean offset: σ = J/sqrt(3n); 99.9% bound 3.29 σ.
    let mean = d.iter().map(|&x| (x - delay) as f64).sum::<f64>() / n as f64;
    let bound = 3.29 * jitter as f64 / (3.0 * n as f64).sqrt();
    assert!(mean.abs() <= bound, "mean jitter {mean} ns, bound {bound}");
    // Arrivals 100 µs apart with ±5 ms of jitter: exits overtake each other.
    let exits: Vec<i64> = d
        .iter()
        .enumerate()
        .map(|(k, x)| k as i64 * 100_000 + x)
        .collect();
    assert!(exits.windows(2).filter(|w| w[1] < w[0]).count() > n as usize / 10);
}

#[test]
fn jitter_without_reorder_keeps_fifo_order() {
    // Only jitter draws random numbers, so both pipes sample the same offsets: without reorder
    // each exit must be the latest of the exits so far with reorder.
    let n = 10_000;
    let free = delays(jittery(true), n, 7);
    let fifo = delays(jittery(false), n, 7);
    let mut latest = i64::MIN;
    for k in 0..n as usize {
        let gap = k as i64 * 100_000;
        latest = latest.max(gap + free[k]);
        assert_eq!(gap + fifo[k], latest, "packet {k}");
    }
}

#[test]
fn jitter_is_clamped_at_zero_delay() {
    // Delay 1 ms ± 5 ms: offsets below −1 ms (probability 4/10) are clamped to no delay at all.
    let cfg = PipeConfig {
        delay: Duration::from_millis(1),
        ..jittery(true)
    };
    let n = 10_000;
    let d = delays(cfg, n, 8);
    assert!(d.iter().all(|&x| (0..=6 * MS as i64).contains(&x)));
    let zero = d.iter().filter(|&&x| x == 0).count() as u64;
    assert_binomial(zero, n, 0.4, "clamped delays");
}

#[test]
fn out_of_order_packets_are_held_back_alone() {
    let cfg = PipeConfig {
        ooo_rate: 0.05,
        ooo_delay: Duration::from_millis(50),
        ..plain(GBIT, 10, QueueLimit::Packets(100))
    };
    let n = 100_000;
    let d = delays(cfg, n, 9);
    let late = d.iter().filter(|&&x| x == 60 * MS as i64).count() as u64;
    // Every other packet keeps its exact delay: held-back packets do not push later ones back.
    let on_time = d.iter().filter(|&&x| x == 10 * MS as i64).count() as u64;
    assert_eq!(late + on_time, n);
    assert_binomial(late, n, 0.05, "ooo packets");
}

#[test]
fn out_of_order_packets_are_exempt_from_the_fifo_clamp() {
    // Delay 10 ms ± 5 ms, ooo_delay 3 ms: a held-back packet can still leave before an earlier
    // in-order one. The same seed gives the same draws whatever ooo_delay and reorder are, so a
    // pipe with ooo_delay 0 tells which packets were held back (their delay differs by 3 ms).
    let n = 10_000;
    let with = |ooo_ms, reorder| PipeConfig {
        ooo_rate: 0.1,
        ooo_delay: Duration::from_millis(ooo_ms),
        ..jittery(reorder)
    };
    let base = delays(with(0, true), n, 12);
    let free = delays(with(3, true), n, 12);
    let fifo = delays(with(3, false), n, 12);
    let (mut latest, mut overtaking) = (i64::MIN, 0);
    for k in 0..n as usize {
        let gap = k as i64 * 100_000;
        if free[k] != base[k] {
            assert_eq!(free[k], base[k] + 3 * MS as i64);
            // Held back by itself only: neither clamped to the FIFO order...
            assert_eq!(fifo[k], free[k], "packet {k}");
            overtaking += (gap + fifo[k] < latest) as u32;
        } else {
            // ...nor pushing later in-order packets back.
            latest = latest.max(gap + free[k]);
            assert_eq!(gap + fifo[k], latest, "packet {k}");
        }
    }
    assert!(overtaking > 0);
}

#[test]
fn duplicates_follow_the_original_through_the_serializer() {
    let cfg = PipeConfig {
        duplicate: 0.02,
        ..plain(GBIT, 10, QueueLimit::Packets(100))
    };
    let mut pipe = Pipe::new(cfg, 11);
    let tx = GBIT.tx_time(1500);
    let n = 100_000;
    let mut copies = 0;
    for k in 0..n {
        let (first, dup) = scheduled(pipe.offer(at(k * 100 * US), 1500, NOT_ECT));
        assert!(pipe.release(first.exit, first.ticket, 1500));
        if let Some(copy) = dup {
            copies += 1;
            assert_eq!(copy.exit, first.exit + tx);
            assert!(pipe.release(copy.exit, copy.ticket, 1500));
        }
    }
    assert_binomial(copies, n, 0.02, "duplicates");
    let c = pipe.counters();
    assert_eq!(c.duplicates, copies);
    assert_eq!(c.packets_out, n + copies);
    assert_eq!(c.queue_hwm_packets, 2);
}

#[test]
fn a_full_queue_makes_no_copy() {
    for (limit, copied) in [(1, false), (2, true)] {
        let cfg = PipeConfig {
            duplicate: 1.0,
            ..plain(RATE_1MS, 10, QueueLimit::Packets(limit))
        };
        let mut pipe = Pipe::new(cfg, 1);
        let (_, dup) = scheduled(pipe.offer(at(0), 1500, NOT_ECT));
        assert_eq!(dup.is_some(), copied, "limit {limit}");
        assert_eq!(pipe.counters().duplicates, copied as u64);
        assert_eq!(pipe.counters().queue_hwm_packets, limit as u64);
    }
}

#[test]
fn link_down_drops_offered_and_in_flight_packets() {
    let mut cfg = plain(RATE_1MS, 10, QueueLimit::Packets(100));
    let mut pipe = Pipe::new(cfg, 1);
    let flying: Vec<_> = (0..3)
        .map(|_| scheduled(pipe.offer(at(0), 1500, NOT_ECT)).0)
        .collect();
    cfg.up = false;
    pipe.set_config(at(MS / 2), cfg);
    assert!(!pipe.is_up());
    assert_eq!(pipe.queue_len(at(MS / 2)), (0, 0));
    assert_eq!(
        pipe.offer(at(MS), 1500, NOT_ECT),
        Admission::Dropped(DropCause::LinkDown)
    );
    // Back up before the old packets' exits: they were lost all the same.
    cfg.up = true;
    pipe.set_config(at(2 * MS), cfg);
    for d in &flying {
        assert!(!pipe.release(d.exit, d.ticket, 1500));
    }
    // The serializer starts fresh: no wait for the lost packets' transmissions (busy until 3 ms).
    let (d, _) = scheduled(pipe.offer(at(2 * MS), 1500, NOT_ECT));
    assert_eq!(d.exit, at(3 * MS + 10 * MS));
    assert!(pipe.release(d.exit, d.ticket, 1500));
    let c = pipe.counters();
    assert_eq!((c.drops_down, c.packets_in, c.packets_out), (4, 5, 1));
}

#[test]
fn set_config_retimes_only_later_packets() {
    let mut cfg = plain(RATE_1MS, 10, QueueLimit::Packets(100));
    let mut pipe = Pipe::new(cfg, 1);
    let a = scheduled(pipe.offer(at(0), 1500, NOT_ECT)).0;
    let b = scheduled(pipe.offer(at(0), 1500, NOT_ECT)).0;
    assert_eq!((a.exit, b.exit), (at(11 * MS), at(12 * MS)));
    // Longer delay and double rate at 0.5 ms: a and b keep their serialization (busy until 2 ms)
    // and exits; c is serialized after b at the new rate (0.5 ms) and gets the new delay.
    cfg.delay = Duration::from_millis(50);
    cfg.rate = Rate::bps(24_000_000);
    pipe.set_config(at(MS / 2), cfg);
    assert_eq!(pipe.queue_len(at(MS / 2)), (2, 3000));
    let c = scheduled(pipe.offer(at(MS / 2), 1500, NOT_ECT)).0;
    assert_eq!(c.exit, at(2 * MS + MS / 2 + 50 * MS));
    assert_eq!(pipe.queue_len(at(2 * MS)), (1, 1500));
    assert_eq!(pipe.queue_len(at(2 * MS + MS / 2)), (0, 0));
    for d in [a, b, c] {
        assert!(pipe.release(d.exit, d.ticket, 1500));
    }
    // A shorter delay does not let a later packet overtake (FIFO without reorder), but once the
    // earlier ones are gone it applies in full.
    cfg.delay = Duration::from_millis(1);
    pipe.set_config(at(3 * MS), cfg);
    let d = scheduled(pipe.offer(at(3 * MS), 1500, NOT_ECT)).0;
    assert_eq!(d.exit, c.exit);
    let e = scheduled(pipe.offer(at(60 * MS), 1500, NOT_ECT)).0;
    assert_eq!(e.exit, at(60 * MS + MS / 2 + MS));
}

fn busy_config() -> PipeConfig {
    PipeConfig {
        jitter: Duration::from_millis(2),
        loss: LossModel::GilbertElliott {
            p: 0.05,
            r: 0.3,
            good_loss: 0.01,
            bad_loss: 0.6,
        },
        aqm: Aqm::Red(RedParams {
            min_th: 3.0,
            max_th: 8.0,
            max_p: 0.2,
            weight: 0.1,
        }),
        duplicate: 0.05,
        ooo_rate: 0.05,
        ooo_delay: Duration::from_millis(7),
        ..plain(RATE_1MS, 10, QueueLimit::Packets(12))
    }
}

fn run(cfg: PipeConfig, seed: u64, n: u64) -> Vec<Admission> {
    let mut pipe = Pipe::new(cfg, seed);
    // Arrivals at 1.5× the rate, so the queue, RED and drop-tail all take part.
    (0..n)
        .map(|k| pipe.offer(at(k * 2 * MS / 3), 1500, NOT_ECT))
        .collect()
}

#[test]
fn same_seed_same_decisions_other_seed_other_losses() {
    let a = run(busy_config(), 42, 5000);
    assert_eq!(a, run(busy_config(), 42, 5000));
    let cfg = PipeConfig {
        loss: LossModel::Bernoulli { p: 0.5 },
        ..plain(GBIT, 1, QueueLimit::Packets(100))
    };
    // 1000 fair coin flips agree by chance with probability 2⁻¹⁰⁰⁰.
    assert_ne!(run(cfg, 1, 1000), run(cfg, 2, 1000));
}

#[test]
fn each_enabled_feature_draws_one_number_per_packet_and_disabled_ones_none() {
    use rand::{Rng, SeedableRng};
    let n = 1000;
    // Loss only: the pattern is exactly one uniform draw per packet against p.
    let cfg = PipeConfig {
        loss: LossModel::Bernoulli { p: 0.3 },
        ..plain(GBIT, 1, QueueLimit::Packets(100))
    };
    let mut reference = PipeRng::seed_from_u64(5);
    for (k, a) in run(cfg, 5, n).into_iter().enumerate() {
        let lost = reference.gen::<f64>() < 0.3;
        assert_eq!(a == Admission::Dropped(DropCause::Loss), lost, "packet {k}");
    }
    // Jitter only (no loss, no RED, p = 0 features): one jitter draw per packet.
    let mut reference = PipeRng::seed_from_u64(6);
    for (k, x) in delays(jittery(true), n, 6).into_iter().enumerate() {
        let offset = reference.gen_range(0..=10 * MS) as i64;
        assert_eq!(x, 5 * MS as i64 + offset, "packet {k}");
    }
}

/// Random configurations and traffic against the pipe's invariants (a hand-rolled property test,
/// seeded so a failure names its case).
#[test]
fn invariants_hold_for_random_configurations() {
    use rand::{Rng, SeedableRng};
    for case in 0..300u64 {
        let mut g = PipeRng::seed_from_u64(case);
        let limit = if g.gen() {
            QueueLimit::Packets(g.gen_range(0..40))
        } else {
            QueueLimit::Bytes(g.gen_range(0..60_000))
        };
        let unit = if matches!(limit, QueueLimit::Packets(_)) {
            1.0
        } else {
            1500.0
        };
        let mut cfg = PipeConfig {
            jitter: Duration::from_micros(g.gen_range(0..3000)),
            reorder: g.gen(),
            queue: limit,
            duplicate: g.gen_range(0.0..0.3),
            ooo_rate: if g.gen() { g.gen_range(0.0..0.2) } else { 0.0 },
            ooo_delay: Duration::from_micros(g.gen_range(0..5000)),
            loss: LossModel::Bernoulli {
                p: g.gen_range(0.0..0.2),
            },
            ..plain(
                Rate::bps(g.gen_range(1_000_000..1_000_000_000)),
                g.gen_range(0..20),
                limit,
            )
        };
        if g.gen() {
            cfg.aqm = Aqm::Red(RedParams {
                min_th: g.gen_range(0.0..10.0) * unit,
                max_th: g.gen_range(10.0..20.0) * unit,
                max_p: g.gen_range(0.0..1.0),
                weight: g.gen_range(0.001..1.0),
            });
        }
        let mut pipe = Pipe::new(cfg, case);
        let (mut now, mut firsts, mut last_exit) = (0u64, 0u64, Instant::ZERO);
        for _ in 0..500 {
            now += g.gen_range(0..2 * cfg.rate.tx_time(1500).as_nanos());
            let bytes = g.gen_range(40..=1500u32);
            let earliest =
                at(now) + cfg.rate.tx_time(bytes.into()) + cfg.delay.saturating_sub(cfg.jitter);
            if let Admission::Scheduled {
                first, duplicate, ..
            } = pipe.offer(at(now), bytes, NOT_ECT)
            {
                firsts += 1;
                for d in std::iter::once(first).chain(duplicate) {
                    assert!(
                        d.exit >= earliest,
                        "case {case}: exit before arrival + tx + delay − jitter"
                    );
                    if cfg.ooo_rate == 0.0 && !cfg.reorder {
                        assert!(d.exit >= last_exit, "case {case}: FIFO exit order broken");
                        last_exit = d.exit;
                    }
                }
            }
            let (packets, queued_bytes) = pipe.queue_len(at(now));
            match limit {
                QueueLimit::Packets(l) => assert!(packets <= l.into(), "case {case}"),
                QueueLimit::Bytes(l) => assert!(queued_bytes <= l, "case {case}"),
            }
        }
        let c = *pipe.counters();
        assert_eq!(
            c.packets_in,
            firsts + c.drops_queue + c.drops_red + c.drops_loss + c.drops_down,
            "case {case}: every offered packet is scheduled or dropped once"
        );
        match limit {
            QueueLimit::Packets(l) => assert!(c.queue_hwm_packets <= l.into(), "case {case}"),
            QueueLimit::Bytes(l) => assert!(c.queue_hwm_bytes <= l, "case {case}"),
        }
    }
}

/// A partitioned run lets workers run `min_latency` ahead of each other, so no packet may ever
/// leave sooner: jitter, reordering, out-of-order holding and duplication at random.
#[test]
fn no_packet_leaves_before_the_minimum_latency() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
    for case in 0..200u64 {
        let config = PipeConfig {
            jitter: Duration(rng.gen_range(0..3 * MS)),
            reorder: rng.gen(),
            ooo_rate: rng.gen_range(0.0..0.3),
            ooo_delay: Duration(rng.gen_range(0..MS)),
            duplicate: rng.gen_range(0.0..0.2),
            ..PipeConfig::new(
                Rate::bps(rng.gen_range(1_000_000..10_000_000_000)),
                Duration(rng.gen_range(0..2 * MS)),
            )
        };
        let least = config.min_latency();
        let mut pipe = Pipe::new(config, case);
        let mut now = 0;
        for _ in 0..500 {
            now += rng.gen_range(0..20 * US);
            if let Admission::Scheduled {
                first, duplicate, ..
            } = pipe.offer(at(now), rng.gen_range(40..9000), NOT_ECT)
            {
                for d in std::iter::once(first).chain(duplicate) {
                    assert!(d.exit >= at(now) + least, "case {case}: {config:?}");
                }
            }
        }
    }
}

/// A host's queue takes a TSO packet whole: its 45 segments pass a 10-packet queue and leave
/// back to back at the link's rate, while the next super-packet, arriving when the queue is
/// full, is refused whole. Random loss still strikes segment by segment.
#[test]
fn a_super_packet_is_queued_whole_and_sent_segment_by_segment() {
    let mut p = Pipe::new(plain(RATE_1MS, 0, QueueLimit::Packets(10)), 1);
    let lead = scheduled(p.offer(at(0), 1500, NOT_ECT)).0;
    assert_eq!(lead.exit, at(MS));
    for k in 1..45u64 {
        let (seg, _) = scheduled(p.offer_following(at(0), 1500, true));
        assert_eq!(
            seg.exit,
            at((k + 1) * MS),
            "segment {k} serialized behind the others"
        );
    }
    // 45 in the queue, limit 10: the next super-packet is refused, all of it.
    assert_eq!(
        p.offer(at(0), 1500, NOT_ECT),
        Admission::Dropped(DropCause::Queue)
    );
    for _ in 1..45 {
        assert_eq!(
            p.offer_following(at(0), 1500, false),
            Admission::Dropped(DropCause::Queue)
        );
    }
    let c = p.counters();
    assert_eq!((c.packets_in, c.drops_queue), (90, 45));

    let mut lossy = plain(RATE_1MS, 0, QueueLimit::Packets(10));
    lossy.loss = LossModel::Bernoulli { p: 0.3 };
    let mut p = Pipe::new(lossy, 2);
    let n = 4_000u64;
    let mut lost = 0;
    for k in 0..n {
        // One super-packet of `n` segments, spread in time so the queue never matters.
        let now = at(k * 2 * MS);
        let offered = match k {
            0 => p.offer(now, 1500, NOT_ECT),
            _ => p.offer_following(now, 1500, true),
        };
        lost += u64::from(offered == Admission::Dropped(DropCause::Loss));
    }
    assert_binomial(lost, n, 0.3, "segments lost one by one");
    assert_eq!(p.counters().drops_queue, 0);
}

/// Twice as many 1500 B packets as a 1 ms-per-packet CoDel pipe can send (two at each whole
/// millisecond), for `ms` milliseconds. Returns, for each packet CoDel dropped or marked, the
/// millisecond it reached the head, and the pipe.
fn codel_overload(ecn: bool, meta: PacketMeta, ms: u64) -> (Vec<u64>, Pipe) {
    let cfg = PipeConfig {
        aqm: Aqm::Codel(CodelParams::default()),
        ecn,
        ..plain(RATE_1MS, 10, QueueLimit::Packets(100_000))
    };
    let mut pipe = Pipe::new(cfg, 1);
    let mut signalled = Vec::new();
    // The serializer is never idle, so the head instants are the whole milliseconds: each sent
    // packet takes 1 ms and a dropped one none.
    let mut head = 0;
    for t in 0..ms {
        for _ in 0..2 {
            match pipe.offer(at(t * MS), 1500, meta) {
                Admission::Dropped(DropCause::Codel) => signalled.push(head),
                Admission::Scheduled { first, marked, .. } => {
                    if marked {
                        signalled.push(head);
                    }
                    head = (first.exit.as_nanos() - 10 * MS) / MS;
                }
                Admission::Dropped(cause) => panic!("unexpected drop: {cause:?}"),
            }
        }
    }
    (signalled, pipe)
}

#[test]
fn codel_drops_a_standing_queue_at_the_control_law_spacing() {
    // Packet i (two arrive each ms) reaches the head at i ms having waited ceil(i/2) ms: packet 9
    // is the first above the 5 ms target, at 9 ms, so the first drop is due an interval later,
    // at 109 ms. The control law then spaces them 100/sqrt(count) ms apart: due at 209,
    // 279.71, 337.45, 387.45, 432.17, 472.99, 510.79, 546.14, 579.48 ms, each taken by the
    // first head at or after.
    let want = [109, 209, 280, 338, 388, 433, 473, 511, 547, 580];
    let (drops, pipe) = codel_overload(false, ECT0, 300);
    assert_eq!(drops, want);
    let c = pipe.counters();
    assert_eq!((c.drops_codel, c.marks, c.drops_queue), (10, 0, 0));
}

#[test]
fn codel_with_ecn_marks_capable_packets_at_the_same_instants() {
    // A marked packet is sent, an instant later than a drop would have let the next one go, but
    // the heads stay on the same millisecond grid, so the marks fall where the drops did.
    let (marks, pipe) = codel_overload(true, ECT0, 300);
    assert_eq!(marks, [109, 209, 280, 338, 388, 433, 473, 511, 547, 580]);
    let c = pipe.counters();
    assert_eq!((c.drops_codel, c.marks), (0, 10));
    // A transport that does not understand ECN is still dropped.
    let (drops, pipe) = codel_overload(true, NOT_ECT, 300);
    assert_eq!(drops.len(), 10);
    assert_eq!(pipe.counters().marks, 0);
}

#[test]
fn codel_leaves_the_dropping_state_when_the_queue_drains_and_reuses_its_count() {
    let cfg = PipeConfig {
        aqm: Aqm::Codel(CodelParams::default()),
        ..plain(RATE_1MS, 0, QueueLimit::Packets(100_000))
    };
    let mut pipe = Pipe::new(cfg, 1);
    // 300 packets at once: packet i reaches the head at i ms (less the drops before it) having
    // waited as long. Above target from packet 5, so drops fall at 105, 205, 275.71...
    let mut drops = Vec::new();
    let mut head = 0;
    for _ in 0..300 {
        match pipe.offer(at(0), 1500, NOT_ECT) {
            Admission::Dropped(DropCause::Codel) => drops.push(head),
            a => head = scheduled(a).0.exit.as_nanos() / MS,
        }
    }
    assert_eq!(drops, [105, 205, 276]);
    // Idle from 297 ms: the next burst starts afresh, and its first drop (an interval after it
    // went above target) comes within 16 intervals of the last cycle, so it reuses that cycle's
    // count − lastcount = 2: the following drop is due 100/sqrt(2) = 70.71 ms later, not 100.
    let start = 400;
    let mut drops = Vec::new();
    let mut head = start;
    for _ in 0..300 {
        match pipe.offer(at(start * MS), 1500, NOT_ECT) {
            Admission::Dropped(DropCause::Codel) => drops.push(head),
            a => head = scheduled(a).0.exit.as_nanos() / MS,
        }
    }
    assert_eq!(drops, [505, 576, 634, 684]);
}

#[test]
fn a_packet_codel_drops_holds_its_place_in_the_queue_until_the_head() {
    let cfg = PipeConfig {
        aqm: Aqm::Codel(CodelParams::default()),
        ..plain(RATE_1MS, 0, QueueLimit::Packets(200))
    };
    let mut pipe = Pipe::new(cfg, 1);
    for _ in 0..105 {
        scheduled(pipe.offer(at(0), 1500, NOT_ECT));
    }
    // The 106th reaches the head at 105 ms, and is dropped then: until that instant the queue
    // holds it, as the drop-tail limit sees it.
    assert_eq!(
        pipe.offer(at(0), 1500, NOT_ECT),
        Admission::Dropped(DropCause::Codel)
    );
    assert_eq!(pipe.queue_len(at(104 * MS)).0, 2);
    assert_eq!(pipe.queue_len(at(105 * MS)).0, 0);
}

#[test]
fn red_with_ecn_marks_capable_packets_instead_of_dropping_them() {
    for (ecn, meta, marks) in [
        (true, ECT0, true),
        (true, NOT_ECT, false),
        (false, ECT0, false),
    ] {
        let cfg = PipeConfig {
            ecn,
            ..busy_config()
        };
        let mut pipe = Pipe::new(cfg, 3);
        for k in 0..2000 {
            pipe.offer(at(k * 200 * US), 1500, meta);
        }
        let c = pipe.counters();
        assert!(c.drops_red + c.marks > 0);
        assert_eq!(c.marks > 0, marks, "ecn {ecn}, {meta:?}");
        assert_eq!(c.drops_red == 0, marks, "ecn {ecn}, {meta:?}");
    }
}

/// Drives a pipe as a caller would: packets (arrival ns, flow, bytes) handed in order to `hold`
/// (`offer` if the pipe is not deferred), `dequeue` called at each `poll_at`, until `end` ns.
/// Returns each packet's fate by handle (its index): `Ok(exit ns)` or `Err(cause)`.
fn drive(pipe: &mut Pipe, arrivals: &[(u64, u32, u32)], end: u64) -> Vec<Result<u64, DropCause>> {
    let mut fate = vec![Err(DropCause::Queue); arrivals.len()];
    let mut out = Vec::new();
    let mut evicted = Vec::new();
    let mut next = 0;
    let mut now = 0;
    loop {
        let due = pipe.poll_at().map(|t| t.as_nanos().max(now));
        let arrival = arrivals.get(next).map(|a| a.0);
        now = match (due, arrival) {
            (Some(d), Some(a)) if a < d => a,
            (Some(d), _) => d,
            (None, Some(a)) => a,
            (None, None) => break,
        };
        if now > end {
            break;
        }
        if arrival == Some(now) && due.is_none_or(|d| now < d) {
            let (_, flow, bytes) = arrivals[next];
            let meta = PacketMeta {
                ecn: Ecn::Ect0,
                flow,
            };
            if !pipe.is_deferred() {
                fate[next] = match pipe.offer(at(now), bytes, meta) {
                    Admission::Scheduled { first, .. } => Ok(first.exit.as_nanos()),
                    Admission::Dropped(cause) => Err(cause),
                };
                next += 1;
                continue;
            }
            match pipe.hold(at(now), bytes, meta, next as u32, &mut evicted) {
                Hold::Dropped(cause) => fate[next] = Err(cause),
                Hold::Held => {
                    for h in evicted.drain(..) {
                        fate[h as usize] = Err(DropCause::Queue);
                    }
                }
            }
            next += 1;
            continue;
        }
        pipe.dequeue(at(now), &mut out);
        for d in out.drain(..) {
            match d {
                Dequeued::Departed {
                    handle, departure, ..
                } => fate[handle as usize] = Ok(departure.exit.as_nanos()),
                Dequeued::Dropped { handle, cause } => fate[handle as usize] = Err(cause),
            }
        }
    }
    fate
}

fn fq_codel(queue: QueueLimit) -> PipeConfig {
    PipeConfig {
        aqm: Aqm::FqCodel(FqCodelParams::default()),
        ..plain(RATE_1MS, 0, queue)
    }
}

#[test]
fn fq_codel_serves_a_sparse_flow_ahead_of_a_standing_queue() {
    // Flow 1 sends 1.25 packets per ms into a 1 ms-per-packet link: its queue stands (CoDel
    // keeps it near target). From 100 ms on, flow 2 sends one packet every 20 ms. Each arrives to
    // an empty flow queue, joins the new-flow list, ahead of flow 1's queue on the old list,
    // and goes out as soon as the packet being sent is done: it waits < 1 ms.
    let mut arrivals: Vec<(u64, u32, u32)> = (0..800).map(|k| (k * 800 * US, 1, 1500)).collect();
    arrivals.extend((5..30).map(|k| (k * 20 * MS + 7 * US, 2, 1500)));
    arrivals.sort();
    let sparse_wait = |cfg: PipeConfig| {
        let mut pipe = Pipe::new(cfg, 1);
        let fate = drive(&mut pipe, &arrivals, 2_000 * MS);
        arrivals
            .iter()
            .zip(&fate)
            .filter(|(a, _)| a.1 == 2)
            .map(|(a, f)| f.expect("sparse packets are not dropped") - a.0 - MS)
            .max()
            .unwrap()
    };
    let fq = sparse_wait(fq_codel(QueueLimit::Packets(1000)));
    assert!(fq < MS, "the sparse flow waited {fq} ns");
    // The same pipe as a FIFO: the sparse packets wait behind the bulk flow's queue.
    let fifo = sparse_wait(plain(RATE_1MS, 0, QueueLimit::Packets(1000)));
    assert!(fifo > 50 * MS, "FIFO wait {fifo} ns");
}

#[test]
fn fq_codel_keeps_the_bulk_flow_under_codel_and_shares_the_link_by_bytes() {
    // Two bulk flows, each offering the link's whole rate for 2 s: each gets half of it, and
    // CoDel drops from both as their queues stand above target.
    let arrivals: Vec<(u64, u32, u32)> = (0..4000)
        .map(|k| (k / 2 * MS, (k % 2) as u32, 1500))
        .collect();
    let mut pipe = Pipe::new(fq_codel(QueueLimit::Packets(10_000)), 1);
    let fate = drive(&mut pipe, &arrivals, 10_000 * MS);
    for flow in 0..2 {
        let sent = arrivals
            .iter()
            .zip(&fate)
            .filter(|(a, f)| a.1 == flow && f.is_ok_and(|exit| exit <= 2_000 * MS))
            .count();
        let dropped = arrivals
            .iter()
            .zip(&fate)
            .filter(|(a, f)| a.1 == flow && *f == &Err(DropCause::Codel))
            .count();
        assert!(dropped > 0, "flow {flow}: no CoDel drop");
        assert!((900..=1100).contains(&sent), "flow {flow}: {sent} sent");
    }
    let c = pipe.counters();
    assert_eq!(c.drops_queue, 0);
    assert_eq!(c.packets_in, 4000);
}

#[test]
fn fq_codel_makes_room_by_dropping_from_the_longest_queue() {
    // A limit of 5 packets: flow 1 sends 5 at once (the first goes straight to the serializer,
    // still counted), then flow 2's packet arrives. Flow 1's waiting queue is the fattest
    // (4 × 1500 bytes): packets are dropped from its head until half its bytes are gone,
    // packets 1 and 2, not flow 2's packet.
    let mut pipe = Pipe::new(fq_codel(QueueLimit::Packets(5)), 1);
    let mut arrivals: Vec<(u64, u32, u32)> = (0..5).map(|_| (0, 1, 1500)).collect();
    arrivals.push((0, 2, 1500));
    let fate = drive(&mut pipe, &arrivals, 100 * MS);
    assert_eq!(fate[1..3], [Err(DropCause::Queue); 2]);
    // Flow 2 is new, but flow 1's queue, first on the new list, still has 14 bytes of its
    // quantum left: it sends packet 3, then flow 2 goes, ending at 3 ms.
    assert_eq!(fate[3], Ok(2 * MS));
    assert_eq!(fate[5], Ok(3 * MS));
    assert!([0, 3, 4].iter().all(|&i| fate[i].is_ok()), "{fate:?}");
    assert_eq!(pipe.counters().drops_queue, 2);
}

#[test]
fn fq_codel_drops_at_most_a_batch_per_overflow() {
    // Flow 1 fills a 200-packet limit with 100-byte packets, and flow 2's 1500-byte packet goes
    // over it: half of flow 1's 19,900 waiting bytes would be 100 packets, but one overflow drops
    // 64 (Linux's drop_batch_size), from the head: packets 1 to 64.
    let mut pipe = Pipe::new(fq_codel(QueueLimit::Packets(200)), 1);
    let mut arrivals: Vec<(u64, u32, u32)> = (0..200).map(|_| (0, 1, 100)).collect();
    arrivals.push((0, 2, 1500));
    let fate = drive(&mut pipe, &arrivals, 1_000 * MS);
    let dropped: Vec<usize> = (0..fate.len())
        .filter(|&i| fate[i] == Err(DropCause::Queue))
        .collect();
    assert_eq!(dropped, (1..=64).collect::<Vec<_>>());
    assert_eq!(pipe.counters().drops_queue, 64);
    assert!(fate[200].is_ok());
}

#[test]
fn fq_codel_makes_only_the_flow_queues_it_uses() {
    // 1024 flow queues configured, three flows seen, 7 and 1031 sharing queue 7 (1031 mod
    // 1024): two queues made, and no more when their packets drained and came again.
    let mut pipe = Pipe::new(fq_codel(QueueLimit::Packets(1000)), 1);
    assert_eq!(pipe.flow_queues(), 0);
    let arrivals: Vec<(u64, u32, u32)> = (0..30)
        .map(|k| (k * 10 * MS, [7, 1031, 9][k as usize % 3], 1500))
        .collect();
    let fate = drive(&mut pipe, &arrivals, 1_000 * MS);
    assert!(fate.iter().all(Result::is_ok));
    assert_eq!(pipe.flow_queues(), 2);
}

#[test]
fn fq_codel_drops_what_it_holds_when_the_link_goes_down() {
    let cfg = fq_codel(QueueLimit::Packets(100));
    let mut pipe = Pipe::new(cfg, 1);
    for h in 0..5 {
        pipe.hold(at(0), 1500, NOT_ECT, h, &mut Vec::new());
    }
    let mut out = Vec::new();
    pipe.dequeue(at(0), &mut out);
    assert!(matches!(out[..], [Dequeued::Departed { handle: 0, .. }]));
    pipe.set_config(at(MS / 2), PipeConfig { up: false, ..cfg });
    assert_eq!(pipe.poll_at(), Some(Instant::ZERO));
    out.clear();
    pipe.dequeue(at(MS / 2), &mut out);
    let gone: Vec<u32> = out
        .iter()
        .map(|d| match d {
            Dequeued::Dropped {
                handle,
                cause: DropCause::LinkDown,
            } => *handle,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(gone, [1, 2, 3, 4]);
    assert_eq!(pipe.poll_at(), None);
    assert_eq!(pipe.counters().drops_down, 4);
}

/// A pipe made without impairments takes them on from a later configuration: the shortcuts
/// it takes while it has none (`Essentials`) follow `set_config`.
#[test]
fn a_plain_pipe_takes_on_impairments_set_later() {
    let mut cfg = plain(RATE_1MS, 1, QueueLimit::Packets(100));
    let mut pipe = Pipe::new(cfg, 1);
    assert!(matches!(
        pipe.offer(at(0), 1500, NOT_ECT),
        Admission::Scheduled {
            duplicate: None,
            ..
        }
    ));
    cfg.duplicate = 1.0;
    cfg.jitter = Duration::from_millis(1);
    pipe.set_config(at(0), cfg);
    let Admission::Scheduled {
        duplicate: Some(_), ..
    } = pipe.offer(at(0), 1500, NOT_ECT)
    else {
        panic!("a duplicate was due");
    };
    cfg.loss = LossModel::Bernoulli { p: 1.0 };
    pipe.set_config(at(0), cfg);
    assert_eq!(
        pipe.offer(at(0), 1500, NOT_ECT),
        Admission::Dropped(DropCause::Loss)
    );
}

/// What every packet touches of its pipe sits in three cache lines (docs/performance.md): the
/// epoch with the counters it always changes, the serializer with the backlog, `Essentials`.
#[test]
fn a_packet_touches_three_cache_lines_of_its_pipe() {
    use std::mem::{align_of, offset_of, size_of};
    let one_line = |start: usize, end: usize| start / 64 == (end - 1) / 64;
    assert_eq!(align_of::<Pipe>(), 64);
    let counters = offset_of!(Pipe, counters);
    assert!(one_line(
        offset_of!(Pipe, epoch),
        counters + offset_of!(PipeCounters, queue_hwm_bytes) + 8
    ));
    assert!(offset_of!(PipeCounters, marks) < offset_of!(PipeCounters, queue_hwm_bytes));
    assert!(one_line(
        offset_of!(Pipe, busy_until),
        offset_of!(Pipe, backlog) + size_of::<Backlog>()
    ));
    assert!(offset_of!(Pipe, last_exit) < offset_of!(Pipe, backlog));
    let essentials = offset_of!(Pipe, essentials);
    assert!(one_line(essentials, essentials + size_of::<Essentials>()));
}

/// What a caller does with a pipe for packets `range` of a fixed pattern (arrivals at 1.3× the
/// rate, sizes varying, the link down from packet 100 to 105 and from 230 to 240): offers each, releases every
/// scheduled one at its exit (keeping the tickets in `pending`, which survive a move, as the
/// caller's packets do), and writes down every answer, release and queue length in order.
fn use_as_caller(
    pipe: &mut Pipe,
    range: std::ops::Range<u64>,
    pending: &mut Vec<(Instant, Ticket)>,
) -> Vec<String> {
    let mut seen = Vec::new();
    for k in range {
        let now = at(k * MS / 2);
        pending.sort_by_key(|&(exit, _)| exit);
        let due = pending.partition_point(|&(exit, _)| exit <= now);
        for (exit, ticket) in pending.drain(..due) {
            seen.push(format!(
                "release at {exit:?}: {}",
                pipe.release(exit, ticket, 1000)
            ));
        }
        if [100, 105, 230, 240].contains(&k) {
            let config = PipeConfig {
                up: k == 105 || k == 240,
                ..*pipe.config()
            };
            pipe.set_config(now, config);
        }
        let bytes = 500 + (k * 397 % 1000) as u32;
        let meta = if k % 3 == 0 { ECT0 } else { NOT_ECT };
        let answer = pipe.offer(now, bytes, meta);
        if let Admission::Scheduled {
            first, duplicate, ..
        } = answer
        {
            pending.extend(
                [Some(first), duplicate]
                    .into_iter()
                    .flatten()
                    .map(|d| (d.exit, d.ticket)),
            );
        }
        seen.push(format!("{k}: {answer:?}, queue {:?}", pipe.queue_len(now)));
    }
    seen
}

/// A pipe whose state goes through bytes (JSON) to a twin made with another seed, again and
/// again, goes on exactly as one that never moved: the same answers, exits, drops, marks,
/// releases and counters, its random generator resuming the same sequence, tickets taken
/// before the move still valid after it. The pipe left behind is as new.
#[test]
fn a_pipe_moved_through_bytes_goes_on_exactly_as_one_that_stayed() {
    let codel = PipeConfig {
        aqm: Aqm::Codel(CodelParams {
            target: Duration::from_millis(2),
            interval: Duration::from_millis(20),
        }),
        loss: LossModel::Bernoulli { p: 0.03 },
        ecn: true,
        ..busy_config()
    };
    let red = PipeConfig {
        ecn: true,
        ..busy_config()
    };
    // Delivery opportunities instead of a rate: 12 in 10 ms, bunched.
    let opportunities = "0\n0\n1\n2\n2\n3\n5\n5\n6\n7\n8\n10\n";
    let traced = PipeData {
        trace: Some(std::sync::Arc::new(Trace::parse(opportunities).unwrap())),
        ..PipeData::default()
    };
    for (what, config, data) in [
        ("RED", red, PipeData::default()),
        ("CoDel", codel, PipeData::default()),
        ("RED over a trace", red, traced),
    ] {
        let make = |seed| Pipe::with_data(config, seed, data.clone());
        let mut stayed = make(5);
        let mut pending = Vec::new();
        let mut expected = use_as_caller(&mut stayed, 0..300, &mut pending);
        expected.push(format!("{:?}", stayed.counters()));

        // Moved at a few instants (the loss chain and the AQM in various states), each time
        // to a twin made with another seed.
        let mut moving = make(5);
        let mut pending = Vec::new();
        let mut seen = Vec::new();
        let mut from = 0;
        let moves = [30, 70, 100, 140, 170, 199, 230, 260, 300];
        for (hop, to) in moves.into_iter().enumerate() {
            if from > 0 {
                let state = moving.take_state();
                assert_eq!(
                    *moving.counters(),
                    PipeCounters::default(),
                    "{what}: left as new"
                );
                assert_eq!(
                    moving.queue_len(at(from * MS / 2)),
                    (0, 0),
                    "{what}: left empty"
                );
                let bytes = serde_json::to_vec(&state).unwrap();
                let seed = 77 + hop as u64;
                moving = make(seed);
                moving.resume(serde_json::from_slice(&bytes).unwrap());
                // A twin without the state goes another way: the comparison can tell.
                let fresh = use_as_caller(&mut make(seed), from..to, &mut pending.clone());
                assert_ne!(
                    Some(&fresh[..]),
                    expected.get(seen.len()..seen.len() + fresh.len()),
                    "{what}: a twin without the state"
                );
            }
            seen.extend(use_as_caller(&mut moving, from..to, &mut pending));
            from = to;
        }
        seen.push(format!("{:?}", moving.counters()));
        assert_eq!(seen, expected, "{what}");
        let c = stayed.counters();
        assert!(
            c.drops_red + c.drops_codel > 0 && c.drops_queue + c.drops_loss > 0 && c.marks > 0,
            "{what}: the pattern exercises the AQM, the queue and loss: {c:?}"
        );
        assert!(c.duplicates > 0 && c.drops_down > 0, "{what}: {c:?}");
    }
}
