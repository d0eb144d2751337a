//! Virtual-time tests of the engine against numbers worked out by hand: per-hop timing, a
//! bottleneck below and above its rate, AIMD fairness, link failure, and determinism.

use netloom_engine::sim::{self, SimOptions};
use netloom_engine::traffic::{FlowSpec, SourceKind};
use netloom_engine::{Engine, Injected, Output, Refusal, Report, DEFAULT_TTL};
use netloom_link::{PacketMeta, PipeConfig, QueueLimit};
use netloom_time::{Duration, Instant, Rate};
use netloom_topo::{NodeId, NodeKind, RoutingMetric, Topology};

fn pipe(bps: u64, delay_us: u64) -> PipeConfig {
    PipeConfig::new(Rate::bps(bps), Duration::from_micros(delay_us))
}

/// h1 - r1 - r2 - ... - rk-1 - h2 with the given per-hop (rate, delay); returns (topo, h1, h2).
fn chain(hops: &[(u64, u64)]) -> (Topology, NodeId, NodeId) {
    let mut t = Topology::new("chain", RoutingMetric::Delay);
    let h1 = t.add_node("h1", NodeKind::Host, None);
    let mut prev = h1;
    for (i, &(bps, delay_us)) in hops.iter().enumerate() {
        let next = if i + 1 == hops.len() {
            t.add_node("h2", NodeKind::Host, None)
        } else {
            t.add_node(format!("r{}", i + 1), NodeKind::Router, None)
        };
        t.add_link(
            prev,
            next,
            None,
            pipe(bps, delay_us),
            Some(pipe(bps, delay_us)),
        );
        prev = next;
    }
    (t, h1, prev)
}

fn run(engine: &mut Engine, secs: u64, seed: u64) -> Report {
    sim::run(engine, SimOptions::new(Duration::from_secs(secs), seed))
}

#[test]
fn one_packet_arrives_at_sum_of_delays_and_serializations() {
    // Rates chosen so that 1000-byte serializations are not whole microseconds (rounded up per hop).
    let hops = [
        (10_000_000, 1_000),
        (3_000_000, 250),
        (1_000_000_000, 7),
        (7_000_000, 5_000),
    ];
    let (t, h1, h2) = chain(&hops);
    let mut e = Engine::new(t, 1);
    let start = Instant(123_456_789);
    assert!(e.inject(start, h1, h2, Injected::plain(1000, 42)));
    while let Some(at) = e.poll_at() {
        e.advance(at);
    }
    let expected: u64 = hops
        .iter()
        .map(|&(bps, d)| Rate::bps(bps).tx_time(1000).as_nanos() + d * 1000)
        .sum();
    let got: Vec<_> = e.drain_outputs().collect();
    let at = Instant(start.0 + expected);
    assert_eq!(
        got,
        [Output::Delivered {
            token: 42,
            at,
            dst: h2,
            ttl: DEFAULT_TTL - (hops.len() as u8 - 1),
            ce: false
        }]
    );
    assert_eq!(e.counters().packet_hops, hops.len() as u64);
}

/// Constant-rate flow through a 10 Mbit/s bottleneck with a 20-packet queue.
/// `advance_by` processes no more events than its budget, in order, and says when none due is
/// left: one packet over four pipes is four exits, one step of one and one of the rest.
#[test]
fn advance_by_stops_at_its_budget_and_tells_when_nothing_due_is_left() {
    let (t, h1, h2) = chain(&[(10_000_000, 100); 4]);
    let mut e = Engine::new(t, 1);
    assert!(e.inject(Instant::ZERO, h1, h2, Injected::plain(1000, 7)));
    let late = Instant(Duration::from_secs(1).as_nanos());
    assert!(!e.advance_by(late, 1));
    assert_eq!(e.counters().events, 1);
    assert!(e.drain_outputs().next().is_none());
    assert!(e.advance_by(late, 10));
    assert_eq!(e.counters().events, 4);
    let delivered = e.drain_outputs().collect::<Vec<_>>();
    assert!(matches!(
        delivered[..],
        [Output::Delivered { token: 7, .. }]
    ));
    assert_eq!(e.poll_at(), None);
}

fn cbr_through_bottleneck(rate_bps: u64) -> (Report, u64) {
    let (mut t, h1, h2) = chain(&[
        (1_000_000_000, 100),
        (10_000_000, 5_000),
        (1_000_000_000, 100),
    ]);
    for p in &mut t.pipes {
        p.config.queue = QueueLimit::Packets(20);
    }
    let mut e = Engine::new(t, 7);
    let kind = SourceKind::Cbr {
        rate: Rate::bps(rate_bps),
        size: 1250,
    };
    e.add_flow(
        Instant::ZERO,
        FlowSpec {
            src: h1,
            dst: h2,
            kind,
            cap: None,
            start: Instant::ZERO,
            stop: None,
        },
        7,
    )
    .unwrap();
    let report = run(&mut e, 10, 7);
    (report, e.in_flight() as u64)
}

#[test]
fn cbr_below_bottleneck_has_no_drops_and_full_rate() {
    let (r, in_flight) = cbr_through_bottleneck(8_000_000);
    let f = &r.flows[0];
    // 8 Mbit/s of 1250-byte packets = one every 1.25 ms: 8000 in 10 s.
    assert_eq!(f.sent, 8000);
    assert_eq!(f.lost, 0);
    assert_eq!(f.delivered + in_flight, f.sent);
    assert!(r.pipes.iter().all(|p| p.drops == 0));
    // No packet ever waits: each takes 10 us + 1 ms + 10 us of serialization and 5.2 ms of
    // propagation, 6.22 ms. Percentiles carry 3 significant digits (see docs/json.md).
    let exact = 6_220_000f64;
    for v in [f.latency_ns.p50, f.latency_ns.p99, f.latency_ns.max] {
        assert!(
            (v as f64 - exact).abs() <= exact * 1e-3,
            "latency {v} ns, expected {exact}"
        );
    }
    // Goodput over 10 s misses only the packets still in flight at the end (a few ms' worth).
    assert!(
        f.throughput_bps <= 8_000_000 && f.throughput_bps >= 7_990_000,
        "{}",
        f.throughput_bps
    );
}

#[test]
fn cbr_above_bottleneck_gets_bottleneck_rate_and_drops_the_excess() {
    let (r, in_flight) = cbr_through_bottleneck(15_000_000);
    let f = &r.flows[0];
    // 15 Mbit/s offered: one 1250-byte packet every 666,667 ns (rounded up): 15000 in 10 s.
    assert_eq!(f.sent, 15_000);
    // The bottleneck serializes one packet per ms: over 10 s it carries exactly what it can,
    // so what is not delivered or still inside was dropped, and only at the bottleneck's queue.
    let bottleneck = r
        .pipes
        .iter()
        .find(|p| p.from == "r1" && p.to == "r2")
        .unwrap();
    assert_eq!(
        bottleneck.queue_hwm_packets, 20,
        "queue filled to its limit and never above"
    );
    assert_eq!(f.lost, bottleneck.drops_by_cause.queue);
    assert_eq!(f.delivered + in_flight + f.lost, f.sent);
    let carried = bottleneck.packets_out;
    assert!(
        (9_990..=10_000).contains(&carried),
        "bottleneck carried {carried}"
    );
    // The excess is what reached the bottleneck beyond what it carried, less what is still inside
    // it at the end: a full queue (20 packets) and the 5 packets in its 5 ms of propagation
    // (one leaves serialization per ms; `packets_out` counts them at the far end).
    let excess = bottleneck.packets_in - carried - 20 - 5;
    assert_eq!(f.lost, excess);
    let tput = f.throughput_bps;
    assert!(
        (9_980_000..=10_000_000).contains(&tput),
        "throughput {tput}"
    );
    for p in &r.pipes {
        assert!(p.queue_hwm_packets <= 20);
    }
}

/// `n` hosts on each side of a 20 Mbit/s, 10 ms bottleneck; flow i goes from left i to right i.
fn dumbbell(n: usize, loss: f64) -> (Topology, Vec<(NodeId, NodeId)>) {
    let mut t = Topology::new("dumbbell", RoutingMetric::Delay);
    let r1 = t.add_node("r1", NodeKind::Router, None);
    let r2 = t.add_node("r2", NodeKind::Router, None);
    let mut bottleneck = pipe(20_000_000, 10_000);
    bottleneck.loss = if loss > 0.0 {
        netloom_link::LossModel::Bernoulli { p: loss }
    } else {
        netloom_link::LossModel::None
    };
    t.add_link(r1, r2, None, bottleneck, Some(pipe(20_000_000, 10_000)));
    let mut pairs = Vec::new();
    for i in 0..n {
        let a = t.add_node(format!("a{i}"), NodeKind::Host, None);
        let b = t.add_node(format!("b{i}"), NodeKind::Host, None);
        t.add_link(
            a,
            r1,
            None,
            pipe(1_000_000_000, 1_000),
            Some(pipe(1_000_000_000, 1_000)),
        );
        t.add_link(
            r2,
            b,
            None,
            pipe(1_000_000_000, 1_000),
            Some(pipe(1_000_000_000, 1_000)),
        );
        pairs.push((a, b));
    }
    (t, pairs)
}

fn aimd_run(n: usize, loss: f64, seed: u64) -> Report {
    let (t, pairs) = dumbbell(n, loss);
    let mut e = Engine::new(t, seed);
    for (i, (a, b)) in pairs.into_iter().enumerate() {
        let start = Instant(i as u64 * 1_000_000);
        let kind = SourceKind::Aimd { mss: 1460 };
        e.add_flow(
            Instant::ZERO,
            FlowSpec {
                src: a,
                dst: b,
                kind,
                cap: None,
                start,
                stop: None,
            },
            seed,
        )
        .unwrap();
    }
    run(&mut e, 30, seed)
}

#[test]
fn aimd_flows_share_a_bottleneck_fairly_and_fill_it() {
    let r = aimd_run(4, 0.0, 3);
    let x: Vec<f64> = r.flows.iter().map(|f| f.throughput_bps as f64).collect();
    let sum: f64 = x.iter().sum();
    let jain = sum * sum / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>());
    assert!(jain > 0.9, "Jain's index {jain:.3} for {x:?}");
    // Goodput counts wire bytes of unique packets; the bottleneck carries 20 Mbit/s.
    assert!(sum > 0.85 * 20e6 && sum <= 20e6, "aggregate {sum}");
}

#[test]
fn same_seed_same_report_other_seed_other_losses() {
    let json = |seed| serde_json::to_string(&aimd_run(2, 0.01, seed)).unwrap();
    assert_eq!(json(11), json(11));
    let lost = |seed| {
        aimd_run(2, 0.01, seed)
            .flows
            .iter()
            .map(|f| f.lost)
            .collect::<Vec<_>>()
    };
    assert_ne!(lost(11), lost(12));
}

#[test]
fn link_down_reroutes_around_a_ring_and_up_restores() {
    // Ring r0..r3, host h0 on r0, h2 on r2; the short way is r0-r1-r2 (1 ms hops), the long way
    // r0-r3-r2 (2 ms hops).
    let mut t = Topology::new("ring", RoutingMetric::Delay);
    let r: Vec<_> = (0..4)
        .map(|i| t.add_node(format!("r{i}"), NodeKind::Router, None))
        .collect();
    let delays = [1_000, 1_000, 2_000, 2_000];
    let mut ring_links = Vec::new();
    for i in 0..4 {
        let c = pipe(1_000_000_000, delays[i]);
        ring_links.push(t.add_link(r[i], r[(i + 1) % 4], None, c, Some(c)));
    }
    let h0 = t.add_node("h0", NodeKind::Host, None);
    let h2 = t.add_node("h2", NodeKind::Host, None);
    t.add_link(
        h0,
        r[0],
        None,
        pipe(1_000_000_000, 0),
        Some(pipe(1_000_000_000, 0)),
    );
    t.add_link(
        h2,
        r[2],
        None,
        pipe(1_000_000_000, 0),
        Some(pipe(1_000_000_000, 0)),
    );
    let mut e = Engine::new(t, 1);
    let one_way = |e: &mut Engine, at: u64| {
        e.inject(Instant(at), h0, h2, Injected::plain(100, at));
        while let Some(t) = e.poll_at() {
            e.advance(t);
        }
        match e.drain_outputs().next() {
            Some(Output::Delivered { at: arrived, .. }) => (arrived.0 - at) / 1_000,
            other => panic!("expected a delivery, got {other:?}"),
        }
    };
    // Serialization of 100 bytes at 1 Gbit/s is 800 ns per hop, 4 hops: 3.2 us, rounded down here.
    assert_eq!(one_way(&mut e, 0), 2_003);
    e.set_link_up(Instant(10_000_000), ring_links[0], false);
    assert!(!e.link_is_up(ring_links[0]));
    assert_eq!(one_way(&mut e, 10_000_000), 4_003);
    e.set_link_up(Instant(20_000_000), ring_links[0], true);
    assert_eq!(one_way(&mut e, 20_000_000), 2_003);
}

/// Every output up to now, as (token, delivered at ns) or (token, dropped).
fn outputs_until(e: &mut Engine, end: Instant) -> Vec<(u64, Option<u64>)> {
    e.advance(end);
    e.drain_outputs()
        .filter_map(|o| match o {
            Output::Delivered { token, at, .. } => Some((token, Some(at.0))),
            Output::Dropped { token } => Some((token, None)),
            Output::Duplicated { .. } | Output::Refused { .. } => None,
        })
        .collect()
}

#[test]
fn a_change_applies_at_the_time_it_is_made() {
    // h0 - h1 over one 10 ms, 1 Gbit/s link: 100 bytes take 10 ms + 800 ns.
    let (topo, h0, h1) = chain(&[(1_000_000_000, 10_000)]);
    let link = 0;
    let pipe = topo.links[link as usize].ab;
    let mut e = Engine::new(topo, 1);
    // Packet 1 is in the pipe until 10.0008 ms; the engine last advanced at 0.
    e.inject(Instant(0), h0, h1, Injected::plain(100, 1));
    // A change made at 12 ms: packet 1 had already left, so going down does not drop it.
    e.set_link_up(Instant(12_000_000), link, false);
    assert_eq!(
        outputs_until(&mut e, Instant(12_000_000)),
        [(1, Some(10_000_800))]
    );
    e.set_link_up(Instant(13_000_000), link, true);
    // A delay set at 20 ms holds for the packet that enters at 20 ms, not for one already in.
    e.inject(Instant(19_000_000), h0, h1, Injected::plain(100, 2));
    let slower = PipeConfig {
        delay: Duration::from_millis(30),
        ..*e.pipe(pipe).config()
    };
    e.set_pipe_configs(Instant(20_000_000), &[(pipe, slower)]);
    e.inject(Instant(20_000_000), h0, h1, Injected::plain(100, 3));
    assert_eq!(
        outputs_until(&mut e, Instant(60_000_000)),
        [(2, Some(29_000_800)), (3, Some(50_000_800))]
    );
    // Down at 70 ms drops the packet inside, which was due at 90.0008 ms.
    e.inject(Instant(60_000_000), h0, h1, Injected::plain(100, 4));
    e.set_link_up(Instant(70_000_000), link, false);
    assert_eq!(outputs_until(&mut e, Instant(100_000_000)), [(4, None)]);
}

#[test]
fn injected_packets_end_once_per_copy() {
    // A duplicating first hop, then a lossy one: every copy is accounted for exactly once, so a
    // driver can reference-count payloads.
    let mut dup = pipe(1_000_000_000, 10);
    dup.duplicate = 1.0;
    let mut lossy = pipe(1_000_000_000, 10);
    lossy.loss = netloom_link::LossModel::Bernoulli { p: 0.5 };
    let mut t = Topology::new("dup", RoutingMetric::Delay);
    let h1 = t.add_node("h1", NodeKind::Host, None);
    let r = t.add_node("r", NodeKind::Router, None);
    let h2 = t.add_node("h2", NodeKind::Host, None);
    t.add_link(h1, r, None, dup, Some(dup));
    t.add_link(r, h2, None, lossy, Some(lossy));
    let mut e = Engine::new(t, 9);
    for token in 0..200 {
        assert!(e.inject(Instant(token * 10_000), h1, h2, Injected::plain(500, token)));
    }
    while let Some(at) = e.poll_at() {
        e.advance(at);
    }
    let mut copies = [0i64; 200];
    let (mut delivered, mut dropped) = (0, 0);
    for out in e.drain_outputs() {
        match out {
            Output::Duplicated { token } => copies[token as usize] += 1,
            Output::Delivered { token, .. } => {
                copies[token as usize] -= 1;
                delivered += 1;
            }
            Output::Dropped { token } => {
                copies[token as usize] -= 1;
                dropped += 1;
            }
            Output::Refused { .. } => unreachable!("every router has a route and room"),
        }
    }
    // Each token started as one copy, was duplicated once, and both copies ended.
    assert!(copies.iter().all(|&c| c == -1), "{copies:?}");
    assert_eq!(delivered + dropped, 400);
    assert!(
        delivered > 100 && dropped > 100,
        "{delivered} delivered, {dropped} dropped"
    );
}

/// A super-packet's segments enter the sender's link as the host's queue would let them: the
/// whole of it past a 10-packet queue, back to back at the link's rate; the next super-packet,
/// offered while that queue is over its limit, is refused whole. Past the first pipe each
/// segment is a packet of its own.
#[test]
fn a_super_packet_enters_its_first_pipe_whole() {
    let mut access = pipe(12_000_000, 100);
    access.queue = QueueLimit::Packets(10);
    let mut core = pipe(1_000_000_000, 100);
    core.queue = QueueLimit::Packets(10);
    let mut t = Topology::new("tso", RoutingMetric::Delay);
    let h1 = t.add_node("h1", NodeKind::Host, None);
    let r = t.add_node("r", NodeKind::Router, None);
    let h2 = t.add_node("h2", NodeKind::Host, None);
    t.add_link(h1, r, None, access, Some(access));
    t.add_link(r, h2, None, core, Some(core));
    let mut e = Engine::new(t, 3);
    for base in [0u64, 100] {
        let segments = (base..base + 45).map(|token| Injected::plain(1500, token));
        assert!(e.inject_segments(Instant(0), h1, h2, segments));
    }
    while let Some(at) = e.poll_at() {
        e.advance(at);
    }
    let (mut delivered, mut dropped) = (Vec::new(), Vec::new());
    for out in e.drain_outputs() {
        match out {
            Output::Delivered { token, at, .. } => delivered.push((token, at)),
            Output::Dropped { token } => dropped.push(token),
            Output::Duplicated { .. } | Output::Refused { .. } => {
                unreachable!("no duplication or refusal here")
            }
        }
    }
    // 1500 bytes at 12 Mbit/s take 1 ms: segment k leaves the access link at (k + 1) ms and
    // arrives 100 us + 12 us + 100 us later, the core link being idle by then.
    assert_eq!(delivered.len(), 45);
    for (k, &(token, at)) in delivered.iter().enumerate() {
        assert_eq!(token, k as u64);
        assert_eq!(at, Instant((k as u64 + 1) * 1_000_000 + 212_000));
    }
    assert_eq!(
        dropped,
        (100..145).collect::<Vec<u64>>(),
        "the second refused whole"
    );
}

/// h1 - r1 - r2 - r3 - h2 with 1 ms links at 1 Gbit/s, the chain of issue 13.
fn three_routers() -> (Topology, NodeId, NodeId) {
    chain(&[(1_000_000_000, 1_000); 4])
}

/// Injects one packet `src` -> `dst` with `ttl` at the engine's time, runs the engine for a
/// second and returns the packet's outputs.
fn fate_of(e: &mut Engine, src: NodeId, dst: NodeId, bytes: u32, ttl: u8) -> Vec<Output> {
    let now = e.now();
    let packet = Injected {
        bytes,
        token: 7,
        meta: PacketMeta::default(),
        ttl,
    };
    assert!(e.inject(now, src, dst, packet));
    e.advance(Instant(now.0 + 1_000_000_000));
    e.drain_outputs().collect()
}

#[test]
fn each_router_takes_one_off_the_ttl_and_the_last_one_refuses_it() {
    let (t, h1, h2) = three_routers();
    let r2 = t.node_id("r2").unwrap();
    let mut e = Engine::new(t, 1);
    // 100 bytes at 1 Gbit/s take 800 ns per link: r2 gets the packet after two links.
    let got = fate_of(&mut e, h1, h2, 100, 2);
    assert_eq!(
        got,
        [
            Output::Refused {
                token: 7,
                node: r2,
                why: Refusal::TimeExceeded,
                ttl: 1,
            },
            Output::Dropped { token: 7 }
        ]
    );
    assert_eq!(e.counters().ttl_expired, 1);
    assert_eq!(e.ttl_expired()[r2 as usize], 1);
    // One more and it goes through, with 3 less than it started with; hosts take none off.
    let got = fate_of(&mut e, h1, h2, 100, 4);
    assert!(
        matches!(got[..], [Output::Delivered { ttl: 1, at, .. }] if at.0 == 1_000_000_000 + 4 * 1_000_800),
        "{got:?}"
    );
}

#[test]
fn a_host_without_a_route_hears_from_its_gateway_and_a_router_from_itself() {
    let (t, h1, h2) = three_routers();
    let (r1, r3) = (t.node_id("r1").unwrap(), t.node_id("r3").unwrap());
    let r3_h2 = t.links.len() as u32 - 1;
    let mut e = Engine::new(t, 1);
    // The last link down before the packet leaves: h1 has no route, so r1, its gateway, answers.
    e.set_link_up(Instant::ZERO, r3_h2, false);
    let got = fate_of(&mut e, h1, h2, 100, 64);
    let refused = |node, ttl| Output::Refused {
        token: 7,
        node,
        why: Refusal::NoRoute,
        ttl,
    };
    assert_eq!(got, [refused(r1, 64), Output::Dropped { token: 7 }]);
    // Up again, and down while the packet is between r2 and r3 (from 2.0008 ms to 3.0012 ms
    // after it left): r3 finds no route.
    e.set_link_up(Instant(1_000_000_000), r3_h2, true);
    let packet = Injected {
        bytes: 100,
        token: 7,
        meta: PacketMeta::default(),
        ttl: 64,
    };
    assert!(e.inject(Instant(1_000_000_000), h1, h2, packet));
    e.set_link_up(Instant(1_002_500_000), r3_h2, false);
    e.advance(Instant(2_000_000_000));
    let got: Vec<_> = e.drain_outputs().collect();
    assert_eq!(got, [refused(r3, 62), Output::Dropped { token: 7 }]);
}

#[test]
fn a_packet_larger_than_the_next_link_mtu_is_refused_with_that_mtu() {
    let (mut t, h1, h2) = three_routers();
    let r2 = t.node_id("r2").unwrap();
    // r2 -> r3 is the third link's a -> b pipe.
    let narrow = t.links[2].ab;
    t.pipes[narrow as usize].config.mtu = 1400;
    let mut e = Engine::new(t, 1);
    let got = fate_of(&mut e, h1, h2, 1401, 64);
    // r1 and r2 took theirs: the fragments would go on with 62.
    let too_big = Output::Refused {
        token: 7,
        node: r2,
        why: Refusal::TooBig { mtu: 1400 },
        ttl: 62,
    };
    assert_eq!(got, [too_big, Output::Dropped { token: 7 }]);
    assert_eq!(e.counters().too_big, 1);
    assert!(matches!(
        fate_of(&mut e, h1, h2, 1400, 64)[..],
        [Output::Delivered { .. }]
    ));
    // The way back is 1500 bytes all along.
    assert!(matches!(
        fate_of(&mut e, h2, h1, 1500, 64)[..],
        [Output::Delivered { .. }]
    ));
}

#[test]
fn a_synthetic_flow_too_big_for_a_link_of_its_path_is_refused_at_start() {
    let (mut t, h1, h2) = three_routers();
    let narrow = t.links[2].ab;
    t.pipes[narrow as usize].config.mtu = 1400;
    let mut e = Engine::new(t, 1);
    let cbr = |size, src, dst| FlowSpec {
        src,
        dst,
        kind: SourceKind::Cbr {
            rate: Rate::bps(1_000_000),
            size,
        },
        cap: None,
        start: Instant::ZERO,
        stop: None,
    };
    let err = e
        .add_flow(Instant::ZERO, cbr(1401, h1, h2), 1)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "flow h1 -> h2: its 1401-byte packets do not fit link r2 -- r3 (mtu 1400); use packets of at most 1400 bytes (size= on the flow) or a larger mtu on the link"
    );
    e.add_flow(Instant::ZERO, cbr(1400, h1, h2), 1).unwrap();
    e.add_flow(Instant::ZERO, cbr(1500, h2, h1), 1).unwrap();
}

#[test]
fn synthetic_packets_start_with_the_default_ttl() {
    // With 63 routers the last one leaves a TTL of 1 and the flow gets through; the 64th
    // router takes the last.
    for (routers, expires) in [(63, false), (64, true)] {
        let (t, h1, h2) = chain(&vec![(1_000_000_000, 1); routers + 1]);
        let mut e = Engine::new(t, 1);
        let cbr = FlowSpec {
            src: h1,
            dst: h2,
            kind: SourceKind::Cbr {
                rate: Rate::bps(1_000_000),
                size: 100,
            },
            cap: None,
            start: Instant::ZERO,
            stop: None,
        };
        e.add_flow(Instant::ZERO, cbr, 1).unwrap();
        let r = run(&mut e, 1, 1);
        let sent = r.flows[0].sent;
        assert!(sent > 1000, "{sent}");
        let expired = e.counters().ttl_expired;
        assert_eq!(
            expired + e.in_flight() as u64,
            if expires { sent } else { e.in_flight() as u64 },
            "{routers} routers"
        );
    }
}

/// A flow added at 1 s to an engine that has run that long starts then, whatever its spec says:
/// 1250-byte packets at 1 Mbit/s leave every 10 ms, so 11 by 1.1 s, where one that owed the
/// past its packets would have sent 111.
#[test]
fn a_flow_added_to_a_running_engine_starts_when_added() {
    let (t, h1, h2) = three_routers();
    let mut e = Engine::new(t, 1);
    let second = Instant(1_000_000_000);
    e.advance(second);
    let cbr = FlowSpec {
        src: h1,
        dst: h2,
        kind: SourceKind::Cbr {
            rate: Rate::bps(1_000_000),
            size: 1250,
        },
        cap: None,
        start: Instant::ZERO,
        stop: None,
    };
    e.add_flow(second, cbr, 1).unwrap();
    e.advance(Instant(1_100_000_000));
    let (spec, _, _, stats) = e.flows().next().unwrap();
    assert_eq!((spec.start, stats.sent), (second, 11));
}
