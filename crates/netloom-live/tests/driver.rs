//! The real-time loop against in-memory hosts: packets are routed by address, released at their
//! scheduled time (measured against the wall clock, with generous bounds: this runs on shared
//! CI machines), bad packets are counted, and payloads survive duplication and drops. With GSO,
//! a super-packet is emulated as its wire-size segments: each timed and lost on its own, and
//! those due together written together.

mod common;

use common::{ipv4, pair, MemIo};
use netloom_engine::Engine;
use netloom_link::{LossModel, PipeConfig, QueueLimit};
use netloom_live::segment::{self, Frame, MAX_HEAD, VNET_HDR_LEN};
use netloom_live::{Driver, Framing, Precision, Thresholds};
use netloom_time::{Duration as NsDuration, Rate};
use std::time::{Duration, Instant};

/// h0 - r - h1, 10 Mbit/s and 2 ms per hop; `tweak` adjusts the r-h1 pipes.
fn driver(precision: Precision, tweak: impl Fn(&mut PipeConfig)) -> Driver<MemIo> {
    let c = PipeConfig::new(Rate::bps(10_000_000), NsDuration::from_millis(2));
    driver_over(c, Framing::Plain, precision, tweak)
}

/// h0 - r - h1 with pipes `c` whose frames are `framing`; `tweak` adjusts the r-h1 pipes.
fn driver_over(
    c: PipeConfig,
    framing: Framing,
    precision: Precision,
    tweak: impl Fn(&mut PipeConfig),
) -> Driver<MemIo> {
    let (topo, addrs) = pair(c, tweak);
    Driver::new(
        Engine::new(topo, 5),
        MemIo::new(framing),
        &addrs,
        2048,
        1024,
        precision,
        Thresholds::default(),
    )
}

/// Steps until every host's inbox is read and nothing is left in flight.
fn run_until_quiet(d: &mut Driver<MemIo>, limit: Duration) {
    let start = Instant::now();
    loop {
        d.step().unwrap();
        let unread = d.io().inbox.iter().any(|q| !q.is_empty());
        let busy = d.in_flight() > 0 || d.engine().poll_at().is_some();
        if !(unread || busy) || start.elapsed() > limit {
            break;
        }
    }
}

#[test]
fn packets_are_released_at_their_scheduled_time_in_every_mode() {
    for precision in [
        Precision::Busy,
        Precision::Hybrid {
            spin: Duration::from_micros(100),
        },
        Precision::Sleep,
    ] {
        let mut d = driver(precision, |_| {});
        let sent = Instant::now();
        for i in 0..5 {
            d.io_mut().inbox[0].push_back(ipv4([198, 18, 0, 2], 1000, i));
        }
        run_until_quiet(&mut d, Duration::from_secs(2));
        let got = &d.io().delivered;
        assert_eq!(got.len(), 5, "{precision:?}");
        for (k, (host, at, packet)) in got.iter().enumerate() {
            assert_eq!(*host, 1);
            assert_eq!(packet[20], k as u8, "FIFO order");
            // Two hops of 2 ms and 0.8 ms serialization each, plus k more serializations of
            // 0.8 ms queued at the first hop.
            let due = Duration::from_micros(4_000 + 1_600 + 800 * k as u64);
            let took = *at - sent;
            assert!(
                took >= due,
                "{precision:?}: packet {k} after {took:?}, due at {due:?}"
            );
            assert!(
                took < due + Duration::from_millis(50),
                "{precision:?}: packet {k} after {took:?}"
            );
        }
        let acc = d.accuracy();
        assert_eq!(acc.released, 5);
        assert_eq!(acc.physical_drops, 0);
    }
}

#[test]
fn bad_and_unroutable_packets_are_counted_and_dropped() {
    let mut d = driver(Precision::Busy, |_| {});
    d.io_mut().inbox[0].push_back(vec![0x99; 30]);
    d.io_mut().inbox[0].push_back(ipv4([198, 18, 0, 2], 100, 1)[..50].to_vec());
    d.io_mut().inbox[0].push_back(ipv4([192, 0, 2, 7], 100, 2));
    d.io_mut().inbox[0].push_back(ipv4([198, 18, 0, 2], 100, 3));
    run_until_quiet(&mut d, Duration::from_secs(2));
    let c = d.host_counters()[0];
    assert_eq!(
        (c.packets_in, c.malformed, c.unknown_destination),
        (4, 2, 1)
    );
    assert_eq!(d.io().delivered.len(), 1);
    assert_eq!(d.in_flight(), 0);
}

#[test]
fn payloads_survive_duplication_and_loss_and_are_all_returned() {
    let mut d = driver(Precision::Busy, |c| {
        c.duplicate = 1.0;
        c.loss = LossModel::Bernoulli { p: 0.3 };
    });
    for i in 0..40 {
        d.io_mut().inbox[0].push_back(ipv4([198, 18, 0, 2], 200, i));
    }
    run_until_quiet(&mut d, Duration::from_secs(3));
    let got = &d.io().delivered;
    // Every packet is offered to the lossy pipe once; survivors arrive twice with their payload.
    assert!(
        got.len() > 20 && got.len() % 2 == 0,
        "{} delivered",
        got.len()
    );
    for (_, _, p) in got {
        assert_eq!(p.len(), 200);
    }
    assert_eq!(d.in_flight(), 0, "every buffer came back");
}

/// TCP over IPv4 from h0 to h1 with 12 bytes of options: 1500-byte packets at this MSS.
const MSS: u16 = 1448;
const HEADERS: usize = 20 + 32;

/// A TCP super-packet as h0's kernel hands it over with GSO: virtio_net_hdr (NEEDS_CSUM, TCPV4,
/// `MSS`), IPv4 and TCP headers, `segments` full segments of payload from sequence number `seq`.
fn super_frame(seq: u32, segments: usize) -> Vec<u8> {
    let mut f = vec![0u8; VNET_HDR_LEN + HEADERS + segments * usize::from(MSS)];
    f[0] = 1;
    f[1] = 1;
    for (at, v) in [(2, HEADERS as u16), (4, MSS), (6, 20), (8, 16)] {
        f[at..at + 2].copy_from_slice(&v.to_ne_bytes());
    }
    let total = (f.len() - VNET_HDR_LEN) as u16;
    let p = &mut f[VNET_HDR_LEN..];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p[6] = 0x40;
    p[8] = 64;
    p[9] = 6;
    p[12..16].copy_from_slice(&[198, 18, 0, 1]);
    p[16..20].copy_from_slice(&[198, 18, 0, 2]);
    p[24..28].copy_from_slice(&seq.to_be_bytes());
    p[32] = 8 << 4;
    p[33] = 0x18;
    for (i, b) in p[HEADERS..].iter_mut().enumerate() {
        *b = (i % 253) as u8;
    }
    f
}

/// The wire packets of a frame a host received: its packet, or the segments of a super-packet.
fn wire_packets(frame: &[u8]) -> Vec<Vec<u8>> {
    match segment::parse(frame).expect("netloom writes valid frames") {
        Frame::Single => vec![frame[VNET_HDR_LEN..].to_vec()],
        Frame::Super(g) => (0..g.segments())
            .map(|k| {
                let mut head = [0u8; MAX_HEAD];
                let (n, payload) = g.build(frame, k..k + 1, &mut head);
                [&head[VNET_HDR_LEN..n], &frame[payload]].concat()
            })
            .collect(),
    }
}

/// The sequence number of a TCP/IPv4 packet without options in the IP header.
fn seq(packet: &[u8]) -> u32 {
    u32::from_be_bytes(packet[24..28].try_into().unwrap())
}

/// The sequence numbers of every wire packet delivered, in the order they were written.
fn delivered_seqs(d: &Driver<MemIo>) -> Vec<u32> {
    d.io()
        .delivered
        .iter()
        .flat_map(|(_, _, f)| wire_packets(f))
        .map(|p| seq(&p))
        .collect()
}

#[test]
fn a_super_packet_is_timed_and_lost_segment_by_segment() {
    // 10 Mbit/s, 2 ms per hop: a 1500-byte segment takes 1.2 ms to serialize, so segment k of
    // a burst reaches h1 at 4 ms + (k + 2) x 1.2 ms (serialized at both hops, back to back).
    let c = roomy(Rate::bps(10_000_000), NsDuration::from_millis(2));
    let gso = Framing::Vnet { gso: true };
    let mut d = driver_over(c, gso, Precision::Busy, |_| {});
    let n = 40;
    let sent = Instant::now();
    d.io_mut().inbox[0].push_back(super_frame(1000, n));
    run_until_quiet(&mut d, Duration::from_secs(3));
    let mut got = Vec::new();
    for (host, at, frame) in &d.io().delivered {
        assert_eq!(*host, 1);
        for p in wire_packets(frame) {
            assert_eq!(p.len(), 1500, "a wire-size segment");
            got.push((*at, seq(&p)));
        }
    }
    assert_eq!(got.len(), n, "every segment arrives, once");
    for (k, (at, seq)) in got.iter().enumerate() {
        assert_eq!(*seq, 1000 + k as u32 * u32::from(MSS), "in order");
        let due = Duration::from_micros(4_000 + 1_200 * (k as u64 + 2));
        let took = *at - sent;
        assert!(took >= due, "segment {k} after {took:?}, due at {due:?}");
        assert!(
            took < due + Duration::from_millis(50),
            "segment {k} after {took:?}"
        );
    }
    // Not held back until the last segment is due: the first one left about 47 ms earlier.
    let last_due = Duration::from_micros(4_000 + 1_200 * (n as u64 + 1));
    assert!(
        got[0].0 - sent < last_due,
        "the first segment waited for the last"
    );
    let acc = d.accuracy();
    assert_eq!((acc.released, acc.physical_drops), (n as u64, 0));
    let c = d.host_counters();
    assert_eq!(
        (c[0].packets_in, c[0].bytes_in),
        (n as u64, 1500 * n as u64)
    );
    assert_eq!(
        (c[1].packets_out, c[1].bytes_out),
        (n as u64, 1500 * n as u64)
    );
    assert_eq!(d.in_flight(), 0);

    // With 30 % loss on r-h1, segments are lost one by one: of 4 x 40, the survivors lie within
    // 3.29 standard deviations of 112, and each arrives whole and in order.
    let fast = roomy(Rate::bps(1_000_000_000), NsDuration::from_micros(100));
    let mut d = driver_over(fast, gso, Precision::Busy, |c| {
        c.loss = LossModel::Bernoulli { p: 0.3 };
    });
    for i in 0..4 {
        d.io_mut().inbox[0].push_back(super_frame(i * 40 * u32::from(MSS), 40));
    }
    run_until_quiet(&mut d, Duration::from_secs(3));
    let seqs = delivered_seqs(&d);
    assert!(
        (93..=131).contains(&seqs.len()),
        "{} of 160 arrived",
        seqs.len()
    );
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order, no copies");
    assert!(seqs.iter().all(|s| s % u32::from(MSS) == 0));
    assert_eq!(d.in_flight(), 0, "every buffer came back");
}

/// A host's queue holds a TSO packet whole: a 40-segment super-packet passes a 5-packet queue
/// at the sender's link, while a second one read right behind it, with that queue over its
/// limit, is refused whole (the pipe counts 40 queue drops; nothing is lost outside the model).
#[test]
fn a_super_packet_is_queued_whole_at_a_short_first_queue() {
    let mut c = PipeConfig::new(Rate::bps(10_000_000), NsDuration::from_millis(2));
    c.queue = QueueLimit::Packets(5);
    let mut d = driver_over(c, Framing::Vnet { gso: true }, Precision::Busy, |_| {});
    d.io_mut().inbox[0].push_back(super_frame(1000, 40));
    d.io_mut().inbox[0].push_back(super_frame(1000 + 40 * u32::from(MSS), 40));
    run_until_quiet(&mut d, Duration::from_secs(3));
    let seqs = delivered_seqs(&d);
    let first: Vec<u32> = (0..40).map(|k| 1000 + k * u32::from(MSS)).collect();
    assert_eq!(
        seqs, first,
        "the first super-packet whole, in order; the second refused"
    );
    let h0_to_r = &d.engine().pipe(0).counters();
    assert_eq!((h0_to_r.packets_in, h0_to_r.drops_queue), (80, 40));
    assert_eq!(d.accuracy().physical_drops, 0);
    assert_eq!(d.in_flight(), 0, "every buffer came back");
}

/// Pipes whose queues hold a burst of super-packets (the default holds a bandwidth-delay
/// product, which at 10 Mbit/s and 2 ms is a few packets).
fn roomy(rate: Rate, delay: NsDuration) -> PipeConfig {
    let mut c = PipeConfig::new(rate, delay);
    c.queue = QueueLimit::Packets(1000);
    c
}

#[test]
fn segments_due_together_are_written_together() {
    // 10 Gbit/s and 10 ms per hop: the 45 segments of a 64 KB super-packet fall due within
    // 55 us of one another, 20 ms after the read. Reading, then waiting 40 ms before the next
    // turn, leaves all of them due in that turn.
    let c = roomy(Rate::bps(10_000_000_000), NsDuration::from_millis(10));
    let gso = Framing::Vnet { gso: true };
    for loss in [0.0, 0.3] {
        let mut d = driver_over(c, gso, Precision::Busy, |c| {
            c.loss = LossModel::Bernoulli { p: loss };
        });
        let sent = super_frame(7, 45);
        d.io_mut().inbox[0].push_back(sent.clone());
        d.step().unwrap();
        assert!(d.io().delivered.is_empty());
        std::thread::sleep(Duration::from_millis(40));
        d.step().unwrap();
        let expected = wire_packets(&sent);
        let frames: Vec<&Vec<u8>> = d.io().delivered.iter().map(|(_, _, f)| f).collect();
        let mut got: Vec<Vec<u8>> = Vec::new();
        let mut runs = 0;
        let mut last_index = None;
        for frame in &frames {
            let packets = wire_packets(frame);
            // Each frame is one run of consecutive segments, and the runs are as long as the
            // losses allow: a frame starts only where a segment before it was lost.
            let first = expected.iter().position(|e| *e == packets[0]).unwrap();
            assert_eq!(&expected[first..first + packets.len()], &packets[..]);
            if let Some(prev) = last_index {
                assert!(first > prev, "a gap between frames: {prev} then {first}");
            }
            last_index = Some(first + packets.len());
            runs += 1;
            got.extend(packets);
        }
        if loss == 0.0 {
            assert_eq!(runs, 1, "one write for the whole super-packet");
            assert_eq!(got, expected);
        } else {
            assert!(
                runs > 1 && got.len() < 45,
                "{runs} frames, {} segments",
                got.len()
            );
        }
        assert_eq!(d.accuracy().released, got.len() as u64);
        assert_eq!(d.in_flight(), 0);
    }
}

#[test]
fn plain_packets_keep_their_virtio_header_and_bad_super_packets_are_malformed() {
    let c = PipeConfig::new(Rate::bps(1_000_000_000), NsDuration::from_micros(100));
    let mut d = driver_over(c, Framing::Vnet { gso: true }, Precision::Busy, |_| {});
    // A UDP-sized packet whose checksum is left to finish (NEEDS_CSUM at 20 + 6).
    let mut plain = vec![0u8; VNET_HDR_LEN];
    plain[0] = 1;
    plain[6..8].copy_from_slice(&20u16.to_ne_bytes());
    plain[8..10].copy_from_slice(&6u16.to_ne_bytes());
    plain.extend(ipv4([198, 18, 0, 2], 100, 9));
    d.io_mut().inbox[0].push_back(plain.clone());
    let mut zero_mss = super_frame(1, 3);
    zero_mss[4..6].fill(0);
    d.io_mut().inbox[0].push_back(zero_mss);
    d.io_mut().inbox[0].push_back(plain[..VNET_HDR_LEN - 2].to_vec());
    run_until_quiet(&mut d, Duration::from_secs(2));
    let got: Vec<&Vec<u8>> = d.io().delivered.iter().map(|(_, _, f)| f).collect();
    assert_eq!(got, [&plain], "written as read, header and all");
    let c = d.host_counters()[0];
    // Malformed frames count as one packet each, their bytes those behind the virtio_net_hdr.
    assert_eq!(
        (c.packets_in, c.bytes_in, c.malformed),
        (3, 100 + (HEADERS + 3 * 1448) as u64, 2)
    );
}
