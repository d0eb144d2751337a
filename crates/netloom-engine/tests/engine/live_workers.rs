//! Partitioned engines as a live run drives them: packets from outside are injected where their
//! source host is owned, hand-offs cross at once, and every packet is delivered at the time one
//! engine would deliver it: by its home worker (which holds its payload) when payloads are
//! cached, by its destination's worker when they are shipped.

use netloom_engine::{Engine, Injected, Migration, Output, Ownership, Payload};
use netloom_time::{Duration, Instant};
use netloom_topo::{load_str, Format, NodeId, Topology};
use std::sync::Arc;

/// Two hosts on each side of a lossy, duplicating, jittery core link.
const TOPOLOGY: &str = r#"
hosts = ["h1", "h2", "h3", "h4"]
routers = ["r1", "r2"]

[defaults]
bw = "100Mbit"
delay = "1ms"

[[link]]
a = "h1"
b = "r1"

[[link]]
a = "h2"
b = "r1"

[[link]]
a = "h3"
b = "r2"

[[link]]
a = "h4"
b = "r2"

[[link]]
a = "r1"
b = "r2"
delay = "3ms"
bw = "20Mbit"
jitter = "500us"
loss = "5%"
duplicate = "5%"
"#;

const SEED: u64 = 11;
/// How often the harness advances the engines and passes hand-offs on: well under the
/// lookahead, as a live worker would.
const STEP_NS: u64 = 10_000;

fn topology() -> Topology {
    load_str(TOPOLOGY, Format::Toml, "live-workers.toml").unwrap()
}

/// What happened to every injected packet: (token, delivered at, destination) per copy
/// delivered, and the tokens dropped and duplicated, each sorted.
#[derive(Debug, Default, PartialEq)]
struct Fates {
    delivered: Vec<(u64, Instant, NodeId)>,
    dropped: Vec<u64>,
    duplicated: Vec<u64>,
}

impl Fates {
    fn record(&mut self, output: Output) {
        match output {
            Output::Delivered { token, at, dst, .. } => self.delivered.push((token, at, dst)),
            Output::Refused { .. } => unreachable!("every router has a route and room"),
            Output::Dropped { token } => self.dropped.push(token),
            Output::Duplicated { token } => self.duplicated.push(token),
        }
    }

    fn sorted(mut self) -> Fates {
        self.delivered.sort_unstable();
        self.dropped.sort_unstable();
        self.duplicated.sort_unstable();
        self
    }
}

/// Packets every host sends to every other host, one every 97 µs in turn: (time, src, dst,
/// bytes, token), in time order.
fn traffic(topo: &Topology) -> Vec<(Instant, NodeId, NodeId, u32, u64)> {
    let hosts = &topo.hosts;
    let mut packets = Vec::new();
    for i in 0..2_000u64 {
        let src = hosts[(i % 4) as usize];
        let dst = hosts[((i / 4 + i % 4 + 1) % 4) as usize];
        if src != dst {
            let at = Instant::from_nanos((i * 97_000).div_ceil(STEP_NS) * STEP_NS);
            packets.push((at, src, dst, 200 + (i % 7) as u32 * 150, i));
        }
    }
    packets
}

/// Runs `engines` (one, or the workers of one partitioned run) over the traffic, each
/// injecting its own hosts' packets, and returns what each engine output. At each of `moves`
/// the workers change to its ownership, handing each other what changes owner through bytes
/// (JSON), as workers in separate processes do; it returns the pipes and packets they handed.
fn run(
    mut engines: Vec<Engine>,
    ownership: Option<&Ownership>,
    moves: &[(Instant, Arc<Ownership>)],
) -> (Vec<Fates>, (usize, usize)) {
    let topo = topology();
    let packets = traffic(&topo);
    let owner = |src: NodeId| {
        let host = topo.hosts.iter().position(|&h| h == src).unwrap() as u32;
        ownership.map_or(0, |o| usize::from(o.host_owner(host)))
    };
    let mut fates: Vec<Fates> = engines.iter().map(|_| Fates::default()).collect();
    let end = packets.last().unwrap().0 + Duration::from_millis(50);
    let mut next = packets.iter().peekable();
    let mut now = Instant::ZERO;
    let mut handed = (0, 0);
    while now <= end {
        for engine in engines.iter_mut() {
            engine.advance(now);
        }
        while let Some(&&(at, src, dst, bytes, token)) = next.peek() {
            if at > now {
                break;
            }
            assert!(engines[owner(src)].inject(at, src, dst, Injected::plain(bytes, token)));
            next.next();
        }
        for from in 0..engines.len() {
            for to in 0..engines.len() {
                if to != from {
                    let handoffs: Vec<_> = engines[from].take_handoffs(to).collect();
                    for h in handoffs {
                        assert!(h.at() >= now, "a hand-off arrives before its time");
                        engines[to].accept(h);
                    }
                }
            }
        }
        for (engine, f) in engines.iter_mut().zip(&mut fates) {
            for output in engine.drain_outputs() {
                f.record(output);
            }
        }
        if let Some((_, next)) = moves.iter().find(|(at, _)| *at == now) {
            let mail: Vec<Vec<Migration>> = engines
                .iter_mut()
                .map(|e| e.migrate_out(next.clone()))
                .collect();
            for (to, engine) in engines.iter_mut().enumerate() {
                for m in mail.iter().map(|out| &out[to]).filter(|m| !m.is_empty()) {
                    let (pipes, packets) = m.counts();
                    handed = (handed.0 + pipes, handed.1 + packets);
                    let bytes = serde_json::to_vec(m).unwrap();
                    engine.migrate_in(serde_json::from_slice(&bytes).unwrap());
                }
            }
        }
        now += Duration::from_nanos(STEP_NS);
    }
    (fates, handed)
}

/// What one engine makes of the traffic.
fn one_engine() -> Fates {
    let (mut fates, _) = run(vec![Engine::new(topology(), SEED)], None, &[]);
    fates.pop().unwrap().sorted()
}

/// Which side each pipe of the test topology is on: 1 for those leaving h3, h4 or r2, or
/// (`routers_flipped`) the other side for the pipes leaving a router.
fn sides(topo: &Topology, routers_flipped: bool) -> Vec<u32> {
    let right = |n: NodeId| ["h3", "h4", "r2"].contains(&topo.node(n).name.as_str());
    (0..topo.pipes.len() as u32)
        .map(|p| {
            let link = &topo.links[topo.pipes[p as usize].link as usize];
            let from = if link.ab == p { link.a } else { link.b };
            let flip = routers_flipped && !topo.hosts.contains(&from);
            u32::from(right(from) != flip)
        })
        .collect()
}

#[test]
fn live_workers_deliver_exactly_when_one_engine_does_at_home_or_at_the_destination() {
    let topo = topology();
    let single = one_engine();
    assert!(single.delivered.len() > 1_200, "{}", single.delivered.len());
    assert!(!single.dropped.is_empty() && !single.duplicated.is_empty());

    // Left side (h1, h2, r1's pipes) on worker 0, right side on worker 1; the core link's
    // pipes go with the router they leave.
    let right = |n: NodeId| ["h3", "h4", "r2"].contains(&topo.node(n).name.as_str());
    let assignment = sides(&topo, false);
    for payload in [Payload::Cache, Payload::Ship] {
        let ownership = Arc::new(Ownership::live(&topo, &assignment, 2, payload).unwrap());
        // Cached payloads make every pipe from a router into a host a possible crossing (1 ms
        // access links); shipped ones cross only on the 3 ms core link, less its jitter.
        let lookahead = match payload {
            Payload::Cache => Duration::from_millis(1),
            Payload::Ship => Duration::from_micros(2_500),
        };
        assert_eq!(ownership.lookahead(), lookahead);
        let engines = (0..2)
            .map(|k| Engine::partitioned(topo.clone(), SEED, ownership.clone(), k))
            .collect();
        let (fates, _) = run(engines, Some(&ownership), &[]);
        // Hosts 0 and 1 (tokens ≡ 0, 1 mod 4) are on the left, their packets' home.
        let source_side = |token: u64| usize::from(token % 4 >= 2);
        for (k, f) in fates.iter().enumerate() {
            for &(token, _, dst) in &f.delivered {
                let by = match payload {
                    Payload::Cache => source_side(token),
                    Payload::Ship => usize::from(right(dst)),
                };
                assert_eq!(by, k, "{payload:?}: packet {token} delivered by worker {k}");
            }
        }
        let mut merged = Fates::default();
        for f in fates {
            merged.delivered.extend(f.delivered);
            merged.dropped.extend(f.dropped);
            merged.duplicated.extend(f.duplicated);
        }
        assert_eq!(merged.sorted(), single, "{payload:?}");
    }
}

#[test]
fn a_live_crossing_without_delay_is_allowed_and_named() {
    let topo = r#"
hosts = ["h1", "h2"]
[[link]]
a = "h1"
b = "h2"
bw = "1Gbit"
delay = "0ms"
"#;
    let topo = load_str(topo, Format::Toml, "zero.toml").unwrap();
    // Each host's packets are delivered by the worker that sends them: nothing crosses.
    let direct = Ownership::live(&topo, &[0, 1], 2, Payload::Cache).unwrap();
    assert_eq!(direct.instant_crossing(), None);
    let topo = r#"
hosts = ["h1", "h2"]
routers = ["r"]
[defaults]
bw = "1Gbit"
delay = "1ms"
[[link]]
a = "h1"
b = "r"
[[link]]
a = "r"
b = "h2"
delay = "0ms"
"#;
    let topo = load_str(topo, Format::Toml, "zero.toml").unwrap();
    // r's pipes on worker 1: h1's packets leave r->h2 to be delivered by worker 0 at once.
    let ownership = Ownership::live(&topo, &[0, 1, 1, 1], 2, Payload::Cache).unwrap();
    assert_eq!(ownership.lookahead(), Duration::ZERO);
    assert_eq!(ownership.instant_crossing(), Some("r->h2"));
    // With hosts on both workers, a packet leaving r->h2 may have to go home to either, so
    // that pipe crosses whoever owns it; only one home makes it safe.
    let split_hosts = Ownership::live(&topo, &[1, 0, 0, 0], 2, Payload::Cache).unwrap();
    assert_eq!(split_hosts.instant_crossing(), Some("r->h2"));
    let one_home = Ownership::live(&topo, &[0, 0, 0, 0], 2, Payload::Cache).unwrap();
    assert_eq!(one_home.instant_crossing(), None);
}

/// h1 – r1 – r2 – r3 – h2 at 10 Mbit/s and 1 ms a link.
const CHAIN: &str = r#"
hosts = ["h1", "h2"]
routers = ["r1", "r2", "r3"]
[defaults]
bw = "10Mbit"
delay = "1ms"
[[link]]
a = "h1"
b = "r1"
[[link]]
a = "r1"
b = "r2"
[[link]]
a = "r2"
b = "r3"
[[link]]
a = "r3"
b = "h2"
"#;

/// Advances `engines` to `now`, passes their hand-offs on, and adds their outputs to `outputs`
/// (one list per engine).
fn step(engines: &mut [Engine], now: Instant, outputs: &mut [Vec<Output>]) {
    for engine in engines.iter_mut() {
        engine.advance(now);
    }
    for from in 0..engines.len() {
        for to in (0..engines.len()).filter(|&to| to != from) {
            let handoffs: Vec<_> = engines[from].take_handoffs(to).collect();
            for h in handoffs {
                engines[to].accept(h);
            }
        }
    }
    for (engine, out) in engines.iter_mut().zip(outputs.iter_mut()) {
        out.extend(engine.drain_outputs());
    }
}

/// Runs the chain: h2 sends a 1500-byte packet to h1 at 0 (from the worker that owns h2);
/// at 4.5 ms, while it is being serialized on r2->r1, a 100-byte packet made at r2 for h1 (an
/// ICMP error, say) is injected by `maker`. Returns each engine's outputs and the number of
/// hand-offs from `maker` made at the injection.
fn chain_run(engines: &mut [Engine], h2_owner: usize, maker: usize) -> (Vec<Vec<Output>>, usize) {
    let topo = load_str(CHAIN, Format::Toml, "chain.toml").unwrap();
    let node = |name: &str| topo.node_id(name).unwrap();
    let (h1, h2, r2) = (node("h1"), node("h2"), node("r2"));
    let mut outputs = vec![Vec::new(); engines.len()];
    let at_r2 = Instant::from_nanos(4_500_000);
    let mut now = Instant::ZERO;
    let mut crossed = 0;
    assert!(engines[h2_owner].inject(now, h2, h1, Injected::plain(1500, 1)));
    while now <= Instant::from_nanos(20_000_000) {
        if now == at_r2 {
            engines[maker].advance(now);
            assert!(engines[maker].inject(now, r2, h1, Injected::plain(100, 2)));
            for to in (0..engines.len()).filter(|&to| to != maker) {
                let handoffs: Vec<_> = engines[maker].take_handoffs(to).collect();
                for h in handoffs {
                    assert_eq!(h.at(), now, "it enters its first pipe when it is made");
                    assert_eq!(h.delivers_to(), None, "it has pipes to go");
                    crossed += 1;
                    engines[to].accept(h);
                }
            }
        }
        step(engines, now, &mut outputs);
        now += Duration::from_nanos(STEP_NS);
    }
    (outputs, crossed)
}

/// The delivery time of packet `token` among `outputs`.
fn delivered_at(outputs: &[Vec<Output>], token: u64) -> Instant {
    let mut at = outputs.iter().flatten().filter_map(|o| match *o {
        Output::Delivered { token: t, at, .. } if t == token => Some(at),
        _ => None,
    });
    let first = at.next().expect("delivered");
    assert!(at.next().is_none(), "delivered once");
    first
}

#[test]
fn a_packet_made_at_a_router_enters_its_first_pipe_on_the_worker_that_owns_it() {
    let topo = load_str(CHAIN, Format::Toml, "chain.toml").unwrap();
    let mut single = [Engine::new(topo.clone(), SEED)];
    let (outputs, _) = chain_run(&mut single, 0, 0);
    let (first, made) = (delivered_at(&outputs, 1), delivered_at(&outputs, 2));
    // It waited on r2->r1 behind the 1500-byte packet (1.2 ms of serialization from 4.4 ms).
    assert!(made > first, "{made:?} after {first:?}");
    // h1's link on worker 0, every other pipe (r2->r1 among them) on worker 1; worker 0 makes
    // the packet at r2, as the home of a refused packet's payload does.
    for payload in [Payload::Cache, Payload::Ship] {
        let ownership =
            Arc::new(Ownership::live(&topo, &[0, 0, 1, 1, 1, 1, 1, 1], 2, payload).unwrap());
        let mut engines: Vec<Engine> = (0..2)
            .map(|k| Engine::partitioned(topo.clone(), SEED, ownership.clone(), k))
            .collect();
        let (outputs, crossed) = chain_run(&mut engines, 1, 0);
        assert_eq!(crossed, 1, "{payload:?}: handed to r2->r1's owner");
        assert_eq!(
            delivered_at(&outputs, 2),
            made,
            "{payload:?}: queued as one engine queues it"
        );
        assert_eq!(delivered_at(&outputs, 1), first, "{payload:?}");
        assert!(
            outputs[0]
                .iter()
                .any(|o| matches!(o, Output::Delivered { token: 2, .. })),
            "{payload:?}: delivered by its maker, h1's worker"
        );
    }
}

/// Workers in separate processes repartitioning while packets are in flight: twice, every
/// worker hands the others through bytes (JSON, as over a control channel) the routers' pipes
/// that change side, the core link's with its queue, jitter, loss and duplication generator,
/// and the packets inside them; every packet still ends exactly as in one engine. Hosts and
/// their pipes stay where they are, as their TUN devices do on their machines.
#[test]
fn live_workers_moving_pipes_through_bytes_deliver_exactly_when_one_engine_does() {
    let topo = topology();
    let single = one_engine();
    let ownership = |flipped| {
        Arc::new(Ownership::live(&topo, &sides(&topo, flipped), 2, Payload::Cache).unwrap())
    };
    let (first, flipped) = (ownership(false), ownership(true));
    for h in 0..topo.hosts.len() as u32 {
        assert_eq!(first.host_owner(h), flipped.host_owner(h), "host {h} stays");
    }
    let moves = [
        (Instant::from_nanos(60_000_000), flipped.clone()),
        (Instant::from_nanos(130_000_000), first.clone()),
    ];
    let engines = (0..2)
        .map(|k| Engine::partitioned(topo.clone(), SEED, first.clone(), k))
        .collect();
    let (fates, (pipes, packets)) = run(engines, Some(&first), &moves);
    let router_pipes = topo.pipes.len() - topo.hosts.len();
    assert_eq!(
        pipes,
        2 * 2 * router_pipes,
        "each router pipe went and came back, swapped with its replica"
    );
    assert!(
        packets > 10,
        "packets in flight were handed over: {packets}"
    );
    let mut merged = Fates::default();
    for f in fates {
        merged.delivered.extend(f.delivered);
        merged.dropped.extend(f.dropped);
        merged.duplicated.extend(f.duplicated);
    }
    assert_eq!(merged.sorted(), single);
}
