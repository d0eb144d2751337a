//! The real-time loop against in-memory hosts and a test clock: packets are routed by address
//! and released exactly at their scheduled time in every precision mode, bad packets are
//! counted, payloads survive duplication and drops, a change applies from the instant it is
//! made, and a stop counts what it drops. With GSO, a super-packet is emulated as its wire-size
//! segments: each timed and lost on its own, and those due together written together.

use crate::common::{at_us, ipv4, pair, run_until_quiet, tcp_super_frame, us, MemIo, TCP_HEADERS};
use netloom_engine::Engine;
use netloom_link::{LossModel, PipeConfig, QueueLimit};
use netloom_live::{
    Clock, Controller, Direction, Driver, DriverConfig, Framing, Hybrid, Precision, TestClock,
    Thresholds,
};
use netloom_packet::segment::{self, Frame, MAX_HEAD, VNET_HDR_LEN};
use netloom_time::{Duration, Instant, Rate};

type TestDriver = Driver<MemIo<TestClock>, TestClock>;

/// h0 - r - h1, 10 Mbit/s and 2 ms per hop; `tweak` adjusts the r-h1 pipes.
fn driver(precision: Precision, tweak: impl Fn(&mut PipeConfig)) -> (TestDriver, TestClock) {
    let c = PipeConfig::new(Rate::bps(10_000_000), Duration::from_millis(2));
    driver_over(c, Framing::Plain, precision, tweak)
}

/// h0 - r - h1 with pipes `c` whose frames are `framing`; `tweak` adjusts the r-h1 pipes.
fn driver_over(
    c: PipeConfig,
    framing: Framing,
    precision: Precision,
    tweak: impl Fn(&mut PipeConfig),
) -> (TestDriver, TestClock) {
    let (topo, addrs) = pair(c, tweak);
    let clock = TestClock::new();
    let config = DriverConfig {
        max_packet: 2048,
        max_in_flight: 1024,
        precision,
        thresholds: Thresholds::default(),
        allow_spoofing: false,
    };
    let io = MemIo::new(clock.clone(), framing);
    let d = Driver::new(Engine::new(topo, 5), io, clock.clone(), &addrs, config);
    (d, clock)
}

/// Steps one driver until it is quiet (see `run_until_quiet`).
fn quiet(d: &mut TestDriver, clock: &TestClock) {
    run_until_quiet(std::slice::from_mut(d), clock);
}

/// The hybrid modes the loop is tested in: spin learned, and fixed with no linger.
fn hybrids() -> [Precision; 2] {
    [
        Precision::Hybrid(Hybrid::default()),
        Precision::Hybrid(Hybrid {
            spin: Some(us(100)),
            linger: Duration::ZERO,
        }),
    ]
}

#[test]
fn packets_are_released_at_their_scheduled_time_in_every_mode() {
    for precision in [[Precision::Busy, Precision::Sleep].as_slice(), &hybrids()].concat() {
        let (mut d, clock) = driver(precision, |_| {});
        // A turn that does not sleep takes 1 us here, so busy and hybrid spin in 1 us steps;
        // the waits themselves move the clock, as a real driver's sleeps let time pass.
        d.io_mut().turn = us(1);
        clock.set(at_us(1_000));
        for i in 0..5 {
            d.io_mut().send(0, ipv4([198, 18, 0, 2], 1000, i));
        }
        while d.io().delivered.len() < 5 {
            d.step().unwrap();
            assert!(clock.now() < at_us(100_000), "{precision:?}: not delivered");
        }
        for (k, (host, at, packet)) in d.io().delivered.iter().enumerate() {
            assert_eq!(*host, 1);
            assert_eq!(packet[20], k as u8, "FIFO order");
            // Two hops of 2 ms and 0.8 ms serialization each, plus k more serializations of
            // 0.8 ms queued at the first hop, from the read at 1 ms.
            let due = at_us(1_000 + 4_000 + 1_600 + 800 * k as u64);
            let late = at.saturating_since(due);
            assert!(
                *at >= due,
                "{precision:?}: packet {k} at {at:?}, due {due:?}"
            );
            match precision {
                // Spinning, it is written in the turn it falls due.
                Precision::Busy | Precision::Hybrid(_) => assert!(late <= us(1), "{late:?}"),
                // Sleeping, the wait ends at the deadline.
                Precision::Sleep => assert_eq!(late, Duration::ZERO),
            }
        }
        let acc = d.accuracy();
        assert_eq!((acc.released, acc.late, acc.physical_drops), (5, 0, 0));
    }
}

#[test]
fn hybrid_spins_only_near_deadlines_and_after_packets() {
    // A fixed spin of 100 us and a linger of 2 ms: after the read at 0 the driver polls for
    // 2 ms, then sleeps, waking 100 us before each deadline (the packet leaves h0-r at 2.8 ms
    // and r-h1 at 5.6 ms), never for more than 1 ms while traffic is recent.
    let precision = Precision::Hybrid(Hybrid {
        spin: Some(us(100)),
        linger: Duration::from_millis(2),
    });
    let (mut d, clock) = driver(precision, |_| {});
    d.io_mut().turn = us(1);
    d.io_mut().send(0, ipv4([198, 18, 0, 2], 1000, 0));
    let mut sleeps = Vec::new();
    while d.io().delivered.is_empty() {
        let before = clock.now();
        d.step().unwrap();
        if clock.now().saturating_since(before) > us(1) {
            sleeps.push((before, clock.now()));
        }
    }
    let released = d.io().delivered[0].1;
    assert!(
        released >= at_us(5_600) && released <= at_us(5_601),
        "{released:?}"
    );
    assert!(
        sleeps.first().is_some_and(|s| s.0 >= at_us(2_000)),
        "lingered: {sleeps:?}"
    );
    for &(from, to) in &sleeps {
        assert!(
            to.saturating_since(from) <= Duration::from_millis(1),
            "{sleeps:?}"
        );
        for deadline in [at_us(2_800), at_us(5_600)] {
            let spun = to <= Instant(deadline.as_nanos() - 100_000) || from >= deadline;
            assert!(
                spun,
                "slept {from:?}..{to:?} into the spin before {deadline:?}"
            );
        }
    }
}

#[test]
fn hybrid_stops_lingering_after_packets_nothing_follows_soon() {
    // A packet from h0 every 2.4 ms (TCP at 5 Mbit/s), which h1 never answers. A fixed linger
    // spun 500 us after each read and each write; the learned one, once the gaps are known,
    // leaves only the spin before each deadline (20 us here, where wake-ups are on time), and
    // every packet still leaves on time.
    let (mut d, clock) = driver(Precision::Hybrid(Hybrid::default()), |_| {});
    d.io_mut().turn = us(1);
    const PACKETS: u64 = 12;
    for k in 0..PACKETS {
        d.io_mut()
            .send_at(0, at_us(k * 2_400), ipv4([198, 18, 0, 2], 1000, k as u8));
    }
    let mut spun = Duration::ZERO;
    while (d.io().delivered.len() as u64) < PACKETS {
        let before = clock.now();
        d.step().unwrap();
        // From the fifth packet on (each host's record has seen a few gaps by then).
        if clock.now().saturating_since(before) == us(1) && before >= at_us(4 * 2_400) {
            spun += us(1);
        }
        assert!(clock.now() < at_us(100_000), "not delivered");
    }
    let per_packet = spun.as_nanos() / (PACKETS - 4);
    assert!(
        per_packet <= us(100).as_nanos(),
        "spun {per_packet} ns a packet"
    );
    for (k, (_, at, _)) in d.io().delivered.iter().enumerate() {
        let due = at_us(k as u64 * 2_400 + 5_600);
        assert!(
            *at >= due && at.saturating_since(due) <= us(1),
            "{k}: {at:?}"
        );
    }
}

#[test]
fn bad_and_unroutable_packets_are_counted_and_dropped() {
    let (mut d, clock) = driver(Precision::Busy, |_| {});
    d.io_mut().send(0, vec![0x99; 30]);
    d.io_mut()
        .send(0, ipv4([198, 18, 0, 2], 100, 1)[..50].to_vec());
    d.io_mut().send(0, ipv4([192, 0, 2, 7], 100, 2));
    d.io_mut().send(0, ipv4([198, 18, 0, 2], 100, 3));
    quiet(&mut d, &clock);
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
    let (mut d, clock) = driver(Precision::Busy, |c| {
        c.duplicate = 1.0;
        c.loss = LossModel::Bernoulli { p: 0.3 };
    });
    for i in 0..40 {
        d.io_mut().send(0, ipv4([198, 18, 0, 2], 200, i));
    }
    quiet(&mut d, &clock);
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

/// A TCP super-packet as h0's kernel hands it over with GSO at `MSS`: `segments` full segments
/// of payload from sequence number `seq`.
fn super_frame(seq: u32, segments: usize) -> Vec<u8> {
    tcp_super_frame(seq, MSS, segments * usize::from(MSS))
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

/// `frame` (its IPv4 header at `ip_at`) as a host receives it over `pair`: the router took one
/// off its TTL and updated the header checksum to match (RFC 1624: one more, as the TTL is
/// the checksummed word's high byte).
fn routed(frame: &[u8], ip_at: usize) -> Vec<u8> {
    let mut f = frame.to_vec();
    let p = &mut f[ip_at..];
    p[8] -= 1;
    let sum = u32::from(u16::from_be_bytes([p[10], p[11]])) + 0x100;
    let sum = (sum & 0xffff) + (sum >> 16);
    p[10..12].copy_from_slice(&(sum as u16).to_be_bytes());
    f
}

/// The sequence number of a TCP/IPv4 packet without options in the IP header.
fn seq(packet: &[u8]) -> u32 {
    u32::from_be_bytes(packet[24..28].try_into().unwrap())
}

/// The sequence numbers of every wire packet delivered, in the order they were written.
fn delivered_seqs(d: &TestDriver) -> Vec<u32> {
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
    let c = roomy(Rate::bps(10_000_000), Duration::from_millis(2));
    let gso = Framing::Vnet { gso: true };
    let (mut d, clock) = driver_over(c, gso, Precision::Busy, |_| {});
    let n = 40;
    d.io_mut().send(0, super_frame(1000, n));
    quiet(&mut d, &clock);
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
        assert_eq!(*at, at_us(4_000 + 1_200 * (k as u64 + 2)), "segment {k}");
    }
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
    let fast = roomy(Rate::bps(1_000_000_000), Duration::from_micros(100));
    let (mut d, clock) = driver_over(fast, gso, Precision::Busy, |c| {
        c.loss = LossModel::Bernoulli { p: 0.3 };
    });
    for i in 0..4 {
        d.io_mut().send(0, super_frame(i * 40 * u32::from(MSS), 40));
    }
    quiet(&mut d, &clock);
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
    let mut c = PipeConfig::new(Rate::bps(10_000_000), Duration::from_millis(2));
    c.queue = QueueLimit::Packets(5);
    let (mut d, clock) = driver_over(c, Framing::Vnet { gso: true }, Precision::Busy, |_| {});
    d.io_mut().send(0, super_frame(1000, 40));
    d.io_mut()
        .send(0, super_frame(1000 + 40 * u32::from(MSS), 40));
    quiet(&mut d, &clock);
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
fn roomy(rate: Rate, delay: Duration) -> PipeConfig {
    let mut c = PipeConfig::new(rate, delay);
    c.queue = QueueLimit::Packets(1000);
    c
}

#[test]
fn segments_due_together_are_written_together() {
    // 10 Gbit/s and 10 ms per hop: the 45 segments of a 64 KB super-packet fall due within
    // 55 us of one another, 20 ms after the read. Reading, then waiting 40 ms before the next
    // turn, leaves all of them due in that turn.
    let c = roomy(Rate::bps(10_000_000_000), Duration::from_millis(10));
    let gso = Framing::Vnet { gso: true };
    for loss in [0.0, 0.3] {
        let (mut d, clock) = driver_over(c, gso, Precision::Busy, |c| {
            c.loss = LossModel::Bernoulli { p: loss };
        });
        let sent = super_frame(7, 45);
        d.io_mut().send(0, sent.clone());
        d.step().unwrap();
        assert!(d.io().delivered.is_empty());
        clock.advance(Duration::from_millis(40));
        d.step().unwrap();
        let expected = wire_packets(&routed(&sent, VNET_HDR_LEN));
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
    let c = PipeConfig::new(Rate::bps(1_000_000_000), Duration::from_micros(100));
    let (mut d, clock) = driver_over(c, Framing::Vnet { gso: true }, Precision::Busy, |_| {});
    // A UDP-sized packet whose checksum is left to finish (NEEDS_CSUM at 20 + 6).
    let mut plain = vec![0u8; VNET_HDR_LEN];
    plain[0] = 1;
    plain[6..8].copy_from_slice(&20u16.to_ne_bytes());
    plain[8..10].copy_from_slice(&6u16.to_ne_bytes());
    plain.extend(ipv4([198, 18, 0, 2], 100, 9));
    d.io_mut().send(0, plain.clone());
    let mut zero_mss = super_frame(1, 3);
    zero_mss[4..6].fill(0);
    d.io_mut().send(0, zero_mss);
    d.io_mut().send(0, plain[..VNET_HDR_LEN - 2].to_vec());
    quiet(&mut d, &clock);
    let got: Vec<&Vec<u8>> = d.io().delivered.iter().map(|(_, _, f)| f).collect();
    let routed = routed(&plain, VNET_HDR_LEN);
    assert_eq!(
        got,
        [&routed],
        "written as read, header and all, less the TTL r took"
    );
    let c = d.host_counters()[0];
    // Malformed frames count as one packet each, their bytes those behind the virtio_net_hdr.
    assert_eq!(
        (c.packets_in, c.bytes_in, c.malformed),
        (3, 100 + (TCP_HEADERS + 3 * 1448) as u64, 2)
    );
}

/// `{"delay": ...}` as a link-set table.
fn delay(text: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut set = serde_json::Map::new();
    set.insert("delay".into(), text.into());
    set
}

#[test]
fn a_link_set_at_t_changes_exit_times_from_t() {
    // h0 - r - h1, 2 ms and 0.8 ms of serialization per hop. Packet 0 leaves h0 at 5 ms and is
    // inside r-h1 (7.8 to 10.6 ms) when r-h1 becomes 10 ms long at 10 ms; packet 1, sent at
    // 9 ms, enters r-h1 at 11.8 ms; packet 2 is sent at 10 ms, just before the change.
    let (d, clock) = driver(Precision::Sleep, |_| {});
    let mut ds = [d];
    let names = ds[0].engine().topology().clone();
    let control = Controller::connect(&mut ds, clock.clone(), names).unwrap();
    let [mut d] = ds;
    for (k, at) in [(0, 5_000), (1, 9_000), (2, 10_000)] {
        d.io_mut()
            .send_at(0, at_us(at), ipv4([198, 18, 0, 2], 1000, k));
    }
    while clock.now() < at_us(10_000) {
        d.step().unwrap();
    }
    assert_eq!(
        clock.now(),
        at_us(10_000),
        "the sleeping driver woke for packet 2"
    );
    // The change is made at 10 ms; the driver takes it on its next turn, 50 us later, and
    // applies it as of 10 ms.
    let pending = control
        .link_set("r", "h1", Direction::Both, &delay("10ms"))
        .unwrap();
    clock.advance(us(50));
    d.step().unwrap();
    let change = pending.wait(std::time::Duration::ZERO).unwrap();
    assert_eq!((change.link.as_str(), change.at_ns), ("r-h1", 10_000_000));
    // Its report says so: both pipes of r-h1 have the new delay, h0-r keeps its own.
    let delays: Vec<(String, String)> = d
        .snapshot()
        .pipes
        .into_iter()
        .flatten()
        .map(|p| (p.report.link, p.params.unwrap().delay.unwrap()))
        .collect();
    assert_eq!(
        delays,
        [
            ("h0-r", "2ms"),
            ("h0-r", "2ms"),
            ("r-h1", "10ms"),
            ("r-h1", "10ms")
        ]
        .map(|(l, d)| (l.to_string(), d.to_string()))
    );
    let mut ds = [d];
    run_until_quiet(&mut ds, &clock);
    let arrivals: Vec<(u8, Instant)> = ds[0]
        .io()
        .delivered
        .iter()
        .map(|(_, at, p)| (p[20], *at))
        .collect();
    assert_eq!(
        arrivals,
        [
            // Inside r-h1 when the delay changed: keeps its exit time.
            (0, at_us(10_600)),
            // Entered r-h1 after the change: 11.8 ms + 10.8 ms.
            (1, at_us(22_600)),
            // Read at 10 ms, in r-h1 from 12.8 ms: 2.8 ms + 10.8 ms later.
            (2, at_us(23_600)),
        ]
    );
    assert_eq!(ds[0].accuracy().late, 0);
}

#[test]
fn changes_are_refused_with_the_reason_and_change_nothing() {
    let (d, clock) = driver(Precision::Busy, |_| {});
    let mut ds = [d];
    let names = ds[0].engine().topology().clone();
    let control = Controller::connect(&mut ds, clock.clone(), names).unwrap();
    let err = |e: netloom_live::ControlError| e.to_string();
    let unknown = control.link_set("r", "h11", Direction::Both, &delay("1ms"));
    let unknown = err(unknown.err().unwrap());
    assert!(
        unknown.contains("no node is named \"h11\" (did you mean \"h1\"?)"),
        "{unknown}"
    );
    let unlinked = control.link_state("h0", "h1", false);
    assert_eq!(err(unlinked.err().unwrap()), "no link joins h0 and h1");
    let bad = control.link_set("r", "h1", Direction::Both, &delay("5 parsecs"));
    assert!(err(bad.err().unwrap()).starts_with("link r-h1: delay \"5 parsecs\""));
    // Valid words that this link cannot take: refused by the workers, nothing changed.
    let mut red = serde_json::Map::new();
    red.insert("aqm".into(), "red".into());
    red.insert(
        "red".into(),
        serde_json::json!({"min_th": 9.0, "max_th": 3.0}),
    );
    let pending = control.link_set("r", "h1", Direction::AToB, &red).unwrap();
    ds[0].step().unwrap();
    let refused = err(pending.wait(std::time::Duration::ZERO).err().unwrap());
    assert!(
        refused.contains("red.min_th (9) must be below red.max_th (3)"),
        "{refused}"
    );
    let pipe = ds[0].engine().topology().links[1].ab;
    assert_eq!(
        ds[0].engine().pipe(pipe).config().aqm,
        netloom_link::Aqm::DropTail
    );
}

#[test]
fn a_stop_drops_what_is_inside_and_counts_it() {
    let (mut d, clock) = driver(Precision::Busy, |_| {});
    for k in 0..3 {
        d.io_mut().send(0, ipv4([198, 18, 0, 2], 1000, k));
    }
    d.step().unwrap();
    clock.advance(Duration::from_millis(1));
    d.step().unwrap();
    let last = d.final_snapshot();
    assert_eq!(last.in_flight, 3, "read, inside h0-r, not delivered");
    assert_eq!(last.hosts[0].packets_in, 3);
    assert_eq!(last.hosts[1].packets_out, 0);
}

#[test]
fn a_trace_driven_link_cannot_be_made_wireless() {
    // As the topology file refuses a link with both: the patch alone cannot see the trace.
    let (mut topo, addrs) = pair(
        PipeConfig::new(Rate::bps(10_000_000), Duration::from_millis(2)),
        |_| {},
    );
    let trace = netloom_link::Trace::parse("1\n2\n").unwrap();
    for p in &mut topo.pipes {
        p.data.trace = Some(std::sync::Arc::new(trace.clone()));
    }
    let clock = TestClock::new();
    let config = DriverConfig {
        max_packet: 2048,
        max_in_flight: 64,
        precision: Precision::Busy,
        thresholds: Thresholds::default(),
        allow_spoofing: false,
    };
    let io = MemIo::new(clock.clone(), Framing::Plain);
    let mut ds = [Driver::new(
        Engine::new(topo, 5),
        io,
        clock.clone(),
        &addrs,
        config,
    )];
    let names = ds[0].engine().topology().clone();
    let control = Controller::connect(&mut ds, clock, names).unwrap();
    let mut set = serde_json::Map::new();
    set.insert("wireless".into(), "802.11b".into());
    set.insert("bw".into(), "11Mbit".into());
    let pending = control.link_set("h0", "r", Direction::Both, &set).unwrap();
    ds[0].step().unwrap();
    let refused = pending
        .wait(std::time::Duration::ZERO)
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("either wireless or driven by a trace"),
        "{refused}"
    );
}

/// r's address in `routed_driver`.
const R: [u8; 4] = [198, 19, 255, 254];

/// `driver` with r answering from `R` (and an IPv6 address no test uses), r – h1 at `mtu`.
fn routed_driver(mtu: u32) -> (TestDriver, TestClock) {
    let (mut d, clock) = driver(Precision::Busy, |c| c.mtu = mtu);
    d.add_router(1, R.into(), "fd6e:6c00::ff00:0:0:1".parse().unwrap());
    (d, clock)
}

#[test]
fn a_router_answers_a_ttl_run_out_from_its_address_over_the_links_back() {
    let (mut d, clock) = routed_driver(1500);
    let mut probe = ipv4([198, 18, 0, 2], 100, 1);
    probe[8] = 1;
    d.io_mut().send(0, probe.clone());
    quiet(&mut d, &clock);
    // 100 bytes at 10 Mbit/s (80 us) and 2 ms to r; the 128-byte error (quoting the probe
    // whole) takes 102.4 us and 2 ms back.
    let [(host, at, error)] = &d.io().delivered[..] else {
        panic!("{:?}", d.io().delivered)
    };
    assert_eq!((*host, *at), (0, Instant(2_080_000 + 2_102_400)));
    assert_eq!(
        (&error[12..16], &error[16..20]),
        (&R[..], &[198, 18, 0, 1][..])
    );
    assert_eq!(
        (error[9], error[20], error[21]),
        (1, 11, 0),
        "ICMP time exceeded"
    );
    assert_eq!(&error[28..], &probe[..]);
    assert_eq!(d.host_counters()[0].icmp_errors, 1);
    assert_eq!(d.in_flight(), 0);
}

#[test]
fn too_big_for_the_next_link_is_fragmented_without_df_and_answered_with_df() {
    let (mut d, clock) = routed_driver(1000);
    let mut whole = ipv4([198, 18, 0, 2], 1500, 1);
    whole[6] = 0x40;
    d.io_mut().send(0, whole.clone());
    quiet(&mut d, &clock);
    let [(0, _, error)] = &d.io().delivered[..] else {
        panic!("{:?}", d.io().delivered)
    };
    assert_eq!((error[20], error[21]), (3, 4), "fragmentation needed");
    assert_eq!(
        u16::from_be_bytes([error[26], error[27]]),
        1000,
        "next-hop MTU"
    );
    assert_eq!(&error[28..48], &whole[..20], "the refused header quoted");
    d.io_mut().delivered.clear();
    whole[6] = 0;
    d.io_mut().send(0, whole.clone());
    quiet(&mut d, &clock);
    let fragments: Vec<&Vec<u8>> = d
        .io()
        .delivered
        .iter()
        .map(|(h, _, f)| {
            assert_eq!(*h, 1);
            f
        })
        .collect();
    // 1480 bytes of data in pieces of 976 (1000 − 20, down to a multiple of 8).
    let lens: Vec<usize> = fragments.iter().map(|f| f.len()).collect();
    assert_eq!(lens, [996, 524]);
    let data: Vec<u8> = fragments.iter().flat_map(|f| f[20..].to_vec()).collect();
    assert_eq!(data, &whole[20..]);
    assert!(
        fragments.iter().all(|f| f[8] == 63),
        "r took one off the TTL of each"
    );
    assert_eq!(d.in_flight(), 0);
}

#[test]
fn a_router_answers_an_echo_request_to_its_address_after_the_round_trip_to_it() {
    let (mut d, clock) = routed_driver(1500);
    let mut request = ipv4(R, 84, 8); // ICMP type 8: echo request
    request[9] = 1;
    d.io_mut().send(0, request.clone());
    let mut udp = ipv4(R, 60, 0);
    udp[9] = 17;
    d.io_mut().send(0, udp);
    quiet(&mut d, &clock);
    let got: Vec<(u32, &[u8], u8)> = d
        .io()
        .delivered
        .iter()
        .map(|(h, _, p)| (*h, &p[12..16], p[20]))
        .collect();
    assert_eq!(
        got,
        [(0, &R[..], 0), (0, &R[..], 3)],
        "echo reply, then port unreachable"
    );
    // 84 bytes at 10 Mbit/s take 67.2 us each way, and 2 ms: the reply is due at 4.1344 ms.
    assert_eq!(d.io().delivered[0].1, Instant(4_134_400));
    assert_eq!(
        &d.io().delivered[0].2[24..],
        &request[24..],
        "the request's data back"
    );
    assert_eq!(d.in_flight(), 0);
}

#[test]
fn a_super_packet_too_big_for_a_link_is_answered_once_for_its_first_segment() {
    let c = roomy(Rate::bps(1_000_000_000), Duration::from_millis(1));
    let gso = Framing::Vnet { gso: true };
    let (mut d, clock) = driver_over(c, gso, Precision::Busy, |c| c.mtu = 1400);
    d.add_router(1, R.into(), "fd6e:6c00::ff00:0:0:1".parse().unwrap());
    let sent = super_frame(7, 10);
    d.io_mut().send(0, sent.clone());
    quiet(&mut d, &clock);
    let [(0, _, error)] = &d.io().delivered[..] else {
        panic!("one error to h0: {:?}", d.io().delivered.len())
    };
    let error = &error[VNET_HDR_LEN..];
    assert_eq!((error[20], error[21]), (3, 4), "fragmentation needed");
    assert_eq!(u16::from_be_bytes([error[26], error[27]]), 1400);
    assert_eq!(
        seq(&error[28..]),
        7,
        "the first segment's sequence number, quoted"
    );
    assert_eq!(d.host_counters()[0].icmp_errors, 1);
    assert_eq!(d.in_flight(), 0);
}
