//! The wireless pipe against the paper (Dummynet on PlanetLab, Table 3), the standards' timing
//! behind the bundled profiles, and the retry and collision arithmetic.
//!
//! Statistical checks use 99.9% two-sided normal bounds (3.29 standard deviations) with fixed
//! seeds, so they are deterministic.

use netloom_link::empirical::{Empirical, PPB};
use netloom_link::{
    Admission, DelayProfile, PacketMeta, Pipe, PipeConfig, PipeData, QueueLimit, Standard, Wireless,
};
use netloom_time::{Duration, Instant, Rate};
use std::sync::Arc;

/// iperf's UDP datagrams as in the paper's experiment: 1470 bytes of payload in 1498-byte IP
/// packets. Throughput counts payload, as iperf reports it.
const IP_BYTES: u32 = 1498;
const PAYLOAD_BYTES: u64 = 1470;

fn wireless_pipe(standard: Standard, bps: u64, w: impl FnOnce(&mut Wireless)) -> PipeConfig {
    let mut wireless = Wireless::new(standard);
    w(&mut wireless);
    PipeConfig {
        queue: QueueLimit::Packets(1_000_000),
        wireless: Some(wireless),
        ..PipeConfig::new(Rate::bps(bps), Duration::ZERO)
    }
}

/// Saturates `pipe` with `n` packets offered at once; payload throughput in kbit/s.
fn saturated_kbps(pipe: &mut Pipe, n: u64) -> f64 {
    let mut last = Instant::ZERO;
    let mut delivered = 0;
    for _ in 0..n {
        if let Admission::Scheduled { first, .. } =
            pipe.offer(Instant::ZERO, IP_BYTES, PacketMeta::default())
        {
            last = last.max(first.exit);
            delivered += 1;
        }
    }
    (delivered * PAYLOAD_BYTES * 8) as f64 / last.as_nanos() as f64 * 1e6
}

/// Table 3 of the paper: maximum UDP throughput, emulated, with a 1% netload for beacons as the
/// paper configured it. Goal: within 3% of the paper's emulated maxima.
#[test]
fn table3_udp_saturation_throughput() {
    let cases = [
        (Standard::B, 1_000_000, 900.0),
        (Standard::B, 2_000_000, 1772.0),
        (Standard::B, 5_500_000, 4405.0),
        (Standard::B, 11_000_000, 7831.0),
        (Standard::G, 54_000_000, 28570.0),
    ];
    for (standard, bps, paper) in cases {
        let cfg = wireless_pipe(standard, bps, |w| w.netload = 0.01);
        let mut pipe = Pipe::new(cfg, 42);
        let kbps = saturated_kbps(&mut pipe, 3000);
        let error = kbps / paper - 1.0;
        println!(
            "{} {} Mbit/s: {kbps:.0} kbit/s, paper {paper}, {:+.2}%",
            standard.name(),
            bps as f64 / 1e6,
            error * 100.0
        );
        assert!(
            error.abs() < 0.03,
            "{standard:?} {bps}: {kbps:.0} vs {paper}"
        );
    }
}

/// The bundled profile files are what the standards' timing gives: a fixed part plus a backoff
/// of k slots, k uniform over 16 values.
#[test]
fn bundled_profiles_follow_the_standards_timing() {
    let round = |num: u64, den: u64| (2 * num + den) / (2 * den);
    for standard in [Standard::B, Standard::G] {
        for &bps in standard.rates_bps() {
            let (fixed_ns, slot_ns) = match standard {
                // DIFS 50 + 2 × PLCP (long 192 at 1 Mbit/s, short 96 above) + SIFS 10, plus the
                // MAC framing (36 bytes) and the ACK (14 bytes) at the data rate.
                Standard::B => {
                    let plcp = if bps == 1_000_000 { 192 } else { 96 };
                    (
                        (50 + 2 * plcp + 10) * 1000 + round(50 * 8 * 1_000_000_000, bps),
                        20_000,
                    )
                }
                // DIFS 28 + preamble 20 + padding 2 + extension 6 + SIFS 10 + ACK 44 + extension
                // 6, plus SERVICE, tail and framing (22 bits + 36 bytes) at the data rate.
                Standard::G => (116_000 + round(310 * 1_000_000_000, bps), 9_000),
            };
            let mut points = Vec::new();
            for k in 0..16u64 {
                let delay = fixed_ns + k * slot_ns;
                points.push((k * PPB / 16, delay));
                points.push(((k + 1) * PPB / 16, delay));
            }
            let want = Empirical::from_points(&points, 1024).unwrap();
            let got = DelayProfile::bundled(standard, Rate::bps(bps)).unwrap();
            assert_eq!(got.overhead, want, "{standard:?} {bps}");
            assert_eq!(want.mean(), fixed_ns + 15 * slot_ns / 2);
        }
    }
    assert!(DelayProfile::bundled(Standard::B, Rate::bps(54_000_000)).is_none());
}

/// One attempt at a time: air time = (packet at the rate + overhead) / (1 − netload).
#[test]
fn netload_stretches_each_attempt() {
    // A measured profile of exactly 100 us; 1000 bytes at 8 Mbit/s take 1 ms.
    let profile = DelayProfile::parse("0 0.1\n1 0.1\n").unwrap();
    let data = PipeData {
        profile: Some(Arc::new(profile)),
        trace: None,
    };
    let cfg = wireless_pipe(Standard::B, 8_000_000, |w| w.netload = 0.2);
    let mut pipe = Pipe::with_data(cfg, 1, data);
    let Admission::Scheduled { first, .. } = pipe.offer(Instant::ZERO, 1000, PacketMeta::default())
    else {
        panic!("dropped");
    };
    // 1.1 ms / 0.8 = 1.375 ms.
    assert_eq!(first.exit, Instant::from_nanos(1_375_000));
}

/// With collision probability p and r attempts, a packet fails with p^r, and the mean number of
/// attempts of a delivered packet is known; the channel is busy for every attempt.
#[test]
fn collisions_cause_retries_and_transmit_failures() {
    let p = 0.5;
    let cfg = wireless_pipe(Standard::B, 11_000_000, |w| {
        w.collision = p;
        w.retry_limit = 3;
    });
    let mut pipe = Pipe::new(cfg, 7);
    let n = 20_000u64;
    for _ in 0..n {
        pipe.offer(Instant::ZERO, 1000, PacketMeta::default());
    }
    let c = *pipe.counters();
    let fail_p = p * p * p;
    let mean = n as f64 * fail_p;
    let bound = 3.29 * (mean * (1.0 - fail_p)).sqrt();
    assert!(
        (c.drops_tx_fail as f64 - mean).abs() <= bound,
        "{} failures, expected {mean:.0} ± {bound:.0}",
        c.drops_tx_fail
    );
    // Attempts per packet: 1 + p + p² (the third is made whatever its outcome).
    let attempts = (n + c.retries) as f64 / n as f64;
    assert!((attempts - (1.0 + p + p * p)).abs() < 0.02, "{attempts}");
    assert_eq!(c.packets_in, n);
}

/// Noise at a low SNR fails packets as often as the PER table says; a high SNR not at all.
#[test]
fn noise_follows_the_packet_error_rate() {
    use netloom_link::per::{packet_error_rate, snr_linear, Modulation};
    let snr_db = 9.5;
    let ber = Modulation::Cck11.ber(snr_linear(snr_db));
    let per = packet_error_rate(ber, 8 * (1000 + 36));
    assert!(
        per > 0.05 && per < 0.95,
        "pick an SNR with a middling PER: {per}"
    );
    let cfg = wireless_pipe(Standard::B, 11_000_000, |w| {
        w.snr_db = Some(snr_db);
        w.retry_limit = 1;
    });
    let mut pipe = Pipe::new(cfg, 3);
    let n = 20_000u64;
    for _ in 0..n {
        pipe.offer(Instant::ZERO, 1000, PacketMeta::default());
    }
    let k = pipe.counters().drops_tx_fail as f64;
    let bound = 3.29 * (n as f64 * per * (1.0 - per)).sqrt();
    assert!(
        (k - n as f64 * per).abs() <= bound,
        "{k} vs {}",
        n as f64 * per
    );

    let clear = wireless_pipe(Standard::B, 11_000_000, |w| w.snr_db = Some(30.0));
    let mut pipe = Pipe::new(clear, 3);
    for _ in 0..1000 {
        pipe.offer(Instant::ZERO, 1000, PacketMeta::default());
    }
    assert_eq!(pipe.counters().drops_tx_fail, 0);
}

/// Changing the SNR or the rate of a wireless pipe takes effect for the next packets.
#[test]
fn reconfiguration_rebuilds_the_channel() {
    let cfg = wireless_pipe(Standard::G, 54_000_000, |_| {});
    let mut pipe = Pipe::new(cfg, 9);
    pipe.offer(Instant::ZERO, 1000, PacketMeta::default());
    let mut bad = cfg;
    bad.wireless.as_mut().unwrap().snr_db = Some(-5.0);
    pipe.set_config(Instant::ZERO, bad);
    assert!(matches!(
        pipe.offer(Instant::ZERO, 1000, PacketMeta::default()),
        Admission::Dropped(netloom_link::DropCause::TxFail)
    ));
    assert_eq!(pipe.counters().drops_tx_fail, 1);
    assert_eq!(pipe.counters().retries, 6);
}
