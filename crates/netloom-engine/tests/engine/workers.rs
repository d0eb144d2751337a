//! Partitioned runs: however the pipes are split over workers, every flow and every pipe ends
//! exactly as in a single engine with the same seed.

use netloom_engine::sim::{self, SimOptions};
use netloom_engine::traffic::{self, parse_spec};
use netloom_engine::workers::{self, ParallelReport};
use netloom_engine::{Engine, HopCounting, Ownership, OwnershipError, Payload, Report};
use netloom_route::Routes;
use netloom_time::{Duration, Instant};
use netloom_topo::{load_str, Format, Topology};
use rand::{Rng, SeedableRng};
use std::sync::Arc;

/// Four routers in a ring with a chord, two hosts on each, and every impairment the engine
/// has on some link: jitter with reordering, loss and duplication, RED, out-of-order holding,
/// a link that goes down and up on a schedule (rerouting), a Markov link, and a shared medium.
/// netloom-procs' tests run it over processes.
const TOPOLOGY: &str = include_str!("../data/impaired.toml");

const SEED: u64 = 7;
const SECONDS: u64 = 3;

fn topology() -> Topology {
    load_str(TOPOLOGY, Format::Toml, "workers.toml").expect("the test topology loads")
}

/// An engine (of one worker, if `ownership` is given) with the test's traffic.
fn engine(ownership: Option<(&Arc<Ownership>, usize)>) -> Engine {
    let topo = topology();
    let mut flows = Vec::new();
    for spec in [
        "pattern=random-k k=3 source=aimd",
        "pattern=pairs pairs=h1:h6,h7:h2 source=cbr rate=3Mbit size=1200",
        "pattern=all-to-all source=poisson rate=200kbit",
    ] {
        let spec = parse_spec(spec).unwrap();
        flows.extend(traffic::expand(&spec.pattern, spec.kind, spec.cap, &topo, SEED).unwrap());
    }
    let mut engine = match ownership {
        Some((o, me)) => Engine::partitioned(topo, SEED, o.clone(), me),
        None => Engine::new(topo, SEED),
    };
    engine.enable_transition_counts();
    for flow in flows {
        engine.add_flow(Instant::ZERO, flow, SEED).unwrap();
    }
    engine
}

fn options() -> SimOptions<'static> {
    SimOptions::new(Duration::from_secs(SECONDS), SEED)
}

fn single() -> (Engine, Report) {
    let mut e = engine(None);
    let report = sim::run(&mut e, options());
    (e, report)
}

fn partitioned(
    assignment: &[u32],
    workers: usize,
    payload: Payload,
) -> (Engine, Report, ParallelReport) {
    let ownership = Arc::new(Ownership::new(&topology(), assignment, workers, payload).unwrap());
    let engines = (0..workers)
        .map(|k| engine(Some((&ownership, k))))
        .collect();
    workers::run(engines, ownership.lookahead(), options(), &|_| {})
}

/// What must not depend on the partition: every flow's and every pipe's figures, and the
/// per-hop counts partitioning reads back.
fn assert_same_run(
    single: &(Engine, Report),
    split: &(Engine, Report, ParallelReport),
    what: &str,
) {
    assert_eq!(
        json(&single.1.flows),
        json(&split.1.flows),
        "{what}: flows differ"
    );
    assert_eq!(
        json(&single.1.pipes),
        json(&split.1.pipes),
        "{what}: pipes differ"
    );
    assert_eq!(
        single.0.hop_counts(),
        split.0.hop_counts(),
        "{what}: hop counts differ"
    );
    assert_eq!(
        single.1.totals.packet_hops, split.1.totals.packet_hops,
        "{what}"
    );
    assert_eq!(
        single.1.totals.unroutable, split.1.totals.unroutable,
        "{what}"
    );
    assert_eq!(
        single.0.in_flight(),
        split.0.in_flight(),
        "{what}: packets in flight at the end"
    );
}

/// Report parts as JSON for comparison, so a difference shows as a readable diff.
fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap()
}

#[test]
fn any_partition_gives_the_single_engines_run() {
    let reference = single();
    assert!(
        reference.1.totals.packet_hops > 10_000,
        "the run carries traffic"
    );
    let pipes = topology().pipes.len();
    let round_robin: Vec<u32> = (0..pipes as u32).map(|p| p % 2).collect();
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
    let random: Vec<u32> = (0..pipes).map(|_| rng.gen_range(0..3)).collect();
    for (what, assignment, workers) in [
        ("round robin over 2", &round_robin, 2),
        ("random over 3", &random, 3),
    ] {
        for payload in [Payload::Cache, Payload::Ship] {
            let split = partitioned(assignment, workers, payload);
            assert!(
                split.2.windows > 100,
                "{what}: the workers ran in lock-step windows"
            );
            assert!(split.1.totals.packet_hops > 0);
            assert_same_run(&reference, &split, what);
        }
    }
}

/// Repartitioning every 500 ms to another assignment (from all on one worker to random, round
/// robin, all on another worker, random again...) moves pipes with their queues, packets in flight and hosts with
/// their flows between running workers, and the run still ends exactly as in one engine; the
/// epochs' counts add up to the run's; the lookahead reported is the least of them.
#[test]
fn repartitioning_while_running_gives_the_single_engines_run() {
    let reference = single();
    let topo = topology();
    let pipes = topo.pipes.len();
    let workers = 3;
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
    let mut random = || -> Vec<u32> { (0..pipes).map(|_| rng.gen_range(0..3)).collect() };
    let plans = [
        random(),
        (0..pipes as u32).map(|p| (p + 1) % 3).collect(),
        vec![2; pipes],
        random(),
        random(),
    ];
    for payload in [Payload::Cache, Payload::Ship] {
        let ownership = |a: &[u32]| Arc::new(Ownership::new(&topo, a, workers, payload).unwrap());
        // Everything on one worker first: no lookahead (nothing crosses) until the first
        // boundary.
        let first = ownership(&vec![1; pipes]);
        let engines = (0..workers).map(|k| engine(Some((&first, k)))).collect();
        let (mut epochs, mut moved) = (Vec::new(), 0);
        let mut current = first.clone();
        let mut least = first.lookahead();
        let mut decide = |counts: netloom_engine::epoch::EpochCounts| {
            let next = plans.get(epochs.len()).map(|a| ownership(a));
            if let Some(next) = &next {
                moved += (0..pipes as u32)
                    .filter(|&p| next.pipe_owner(p) != current.pipe_owner(p))
                    .count();
                current = next.clone();
                least = least.min(next.lookahead());
            }
            epochs.push(counts);
            next
        };
        let split = workers::run_repartitioned(
            engines,
            first.lookahead(),
            options(),
            &|_| {},
            Duration::from_millis(500),
            &mut decide,
        );
        assert_eq!(epochs.len(), 6, "3 s in epochs of 500 ms");
        assert!(moved > pipes, "pipes changed owner: {moved}");
        // The lookahead reported is the least the run had, not the first partition's.
        assert!(least < first.lookahead(), "{least} {}", first.lookahead());
        assert_eq!(split.2.lookahead_ns, Some(least.as_nanos()));
        assert_same_run(&reference, &split, "repartitioned");
        let (packets, _) = reference.0.hop_counts();
        let mut summed = vec![0; packets.len()];
        for e in &epochs {
            for (s, n) in summed.iter_mut().zip(&e.packets) {
                *s += n;
            }
        }
        assert_eq!(summed, packets, "the epochs add up to the run");
    }
}

#[test]
fn one_worker_owning_everything_hands_nothing_over() {
    let reference = single();
    let split = partitioned(&vec![0; topology().pipes.len()], 1, Payload::Cache);
    assert_same_run(&reference, &split, "one worker");
    assert_eq!(split.0.counters().cross_core_hops, 0);
}

/// A transfer of pipes and packets has a serialized form (for workers in other processes),
/// but one carrying a synthetic flow's sender or receiver, which live in one process, refuses
/// to leave it, saying why.
#[test]
fn a_hand_over_with_flows_refuses_to_be_serialized() {
    let topo = topology();
    let pipes = topo.pipes.len();
    let own = |w: u32| Arc::new(Ownership::new(&topo, &vec![w; pipes], 2, Payload::Cache).unwrap());
    let mut e = engine(Some((&own(0), 0)));
    sim::run(&mut e, SimOptions::new(Duration::from_millis(100), SEED));
    let out = e.migrate_out(own(1));
    let error = serde_json::to_string(&out[1]).unwrap_err().to_string();
    assert!(
        error.contains("synthetic flows' parts cannot leave its process"),
        "{error}"
    );
    let mut idle = Engine::partitioned(topo.clone(), SEED, own(0), 0);
    sim::run(&mut idle, SimOptions::new(Duration::from_millis(100), SEED));
    let out = idle.migrate_out(own(1));
    let (moved, _) = out[1].counts();
    assert_eq!(moved, pipes, "every pipe goes to worker 1");
    assert!(serde_json::to_string(&out[1]).is_ok(), "pipes alone travel");
}

/// Cross-core hops and bytes by hand: on a chain h1 - r1 - h2 with the router's pipes on
/// worker 1, a packet h1→h2 crosses to worker 1 as it enters h1→r1 (worker 1 handles its exit)
/// and back as it enters r1→h2 (delivered at h2, which worker 0 owns). Cached payloads add no
/// hop here since every packet ends on its home worker.
#[test]
fn cross_core_hops_and_bytes_count_descriptors_or_payloads() {
    let topo = r#"
hosts = ["h1", "h2"]
routers = ["r1"]
[defaults]
bw = "100Mbit"
delay = "1ms"
[[link]]
a = "h1"
b = "r1"
[[link]]
a = "r1"
b = "h2"
"#;
    let topo = load_str(topo, Format::Toml, "chain.toml").unwrap();
    // Pipes: h1→r1, r1→h1, r1→h2, h2→r1. Hosts keep their outgoing pipes on worker 0.
    let assignment = [0, 1, 1, 0];
    for payload in [Payload::Cache, Payload::Ship] {
        let ownership = Arc::new(Ownership::new(&topo, &assignment, 2, payload).unwrap());
        let spec =
            parse_spec("pattern=pairs pairs=h1:h2 source=cbr rate=1200kbit size=1000").unwrap();
        let flows = traffic::expand(&spec.pattern, spec.kind, spec.cap, &topo, 1).unwrap();
        let engines = workers::engines(
            &topo,
            &Routes::compute(&topo),
            1,
            &ownership,
            &flows,
            HopCounting::Pairs,
        )
        .unwrap();
        let opts = SimOptions {
            duration: Duration::from_millis(100),
            ..options()
        };
        let (merged, report, _) = workers::run(engines, ownership.lookahead(), opts, &|_| {});
        // 1200 kbit/s of 1000-byte packets is one every 6.67 ms, from a start within 10 ms.
        let (sent, delivered) = (report.flows[0].sent, report.flows[0].delivered);
        assert!((13..=15).contains(&delivered), "{delivered}");
        let entered_r1_h2 = report.pipes[2].packets_in;
        assert!(entered_r1_h2 >= delivered);
        let c = merged.counters();
        assert_eq!(c.cross_core_hops, sent + entered_r1_h2);
        let descriptor = std::mem::size_of::<netloom_engine::Handoff>() as u64;
        let per_hop = match payload {
            Payload::Cache => descriptor,
            Payload::Ship => descriptor + 1000,
        };
        assert_eq!(
            c.cross_core_bytes,
            c.cross_core_hops * per_hop,
            "{payload:?}"
        );
    }
}

/// A host answers at the instant a packet arrives, so all the pipes it sends into run on its
/// worker: a split host's pipes move to the worker of its first.
#[test]
fn a_host_keeps_its_outgoing_pipes() {
    let topo = r#"
hosts = ["h1", "h2"]
routers = ["r1", "r2"]
[defaults]
bw = "100Mbit"
delay = "1ms"
[[link]]
a = "h1"
b = "r1"
[[link]]
a = "h1"
b = "r2"
[[link]]
a = "r1"
b = "h2"
[[link]]
a = "r2"
b = "h2"
"#;
    let topo = load_str(topo, Format::Toml, "two-homed.toml").unwrap();
    // Pipes in link order, a→b then b→a: h1→r1 on 0, h1→r2 on 1 (split), the rest on 1.
    let assignment = [0, 1, 1, 1, 1, 1, 1, 1];
    let ownership = Ownership::new(&topo, &assignment, 2, Payload::Cache).unwrap();
    assert_eq!(ownership.moved(), 1);
    assert_eq!(ownership.host_owner(0), 0);
    assert_eq!(ownership.pipe_owner(topo.links[1].ab), 0);
    assert_eq!(ownership.host_owner(1), 1);
}

#[test]
fn a_crossing_without_delay_is_refused_with_the_pipe_named() {
    let topo = r#"
hosts = ["h1", "h2"]
[[link]]
a = "h1"
b = "h2"
bw = "1Gbit"
delay = "0ms"
"#;
    let topo = load_str(topo, Format::Toml, "zero.toml").unwrap();
    let err = Ownership::new(&topo, &[0, 1], 2, Payload::Cache).unwrap_err();
    assert!(matches!(err, OwnershipError::NoLookahead { .. }));
    assert!(err.to_string().contains("h1->h2"), "{err}");
    let err = Ownership::new(&topo, &[0, 2], 2, Payload::Cache).unwrap_err();
    assert!(err.to_string().contains("core 2"), "{err}");
}

/// Packets from two workers reaching one pipe at the same nanosecond: which one the full queue
/// drops must not depend on which worker's packet the pipe's owner heard of first.
#[test]
fn simultaneous_arrivals_from_two_workers_are_ordered_as_in_one_engine() {
    use netloom_engine::traffic::{FlowSpec, SourceKind};
    use netloom_time::{Instant, Rate};
    let topo = r#"
hosts = ["h1", "h2", "h3"]
routers = ["r1"]
[defaults]
bw = "10Mbit"
delay = "1ms"
queue = 3
[[link]]
a = "h1"
b = "r1"
[[link]]
a = "h2"
b = "r1"
[[link]]
a = "r1"
b = "h3"
"#;
    let topo = load_str(topo, Format::Toml, "star.toml").unwrap();
    let node = |n: &str| topo.node_id(n).unwrap();
    // Both senders start at 0 with equal packets, so they reach r1 in lockstep and overload
    // r1→h3 by 60 %.
    let flows: Vec<FlowSpec> = ["h1", "h2"]
        .iter()
        .map(|src| FlowSpec {
            src: node(src),
            dst: node("h3"),
            kind: SourceKind::Cbr {
                rate: Rate::bps(8_000_000),
                size: 1500,
            },
            cap: None,
            start: Instant::ZERO,
            stop: None,
        })
        .collect();
    let build = |ownership: Option<(&Arc<Ownership>, usize)>| {
        let mut e = match ownership {
            Some((o, k)) => Engine::partitioned(topo.clone(), 1, o.clone(), k),
            None => Engine::new(topo.clone(), 1),
        };
        for f in &flows {
            e.add_flow(Instant::ZERO, *f, 1).unwrap();
        }
        e
    };
    let opts = || SimOptions {
        duration: Duration::from_millis(200),
        ..options()
    };
    let mut one = build(None);
    let single = sim::run(&mut one, opts());
    assert!(
        single.flows.iter().any(|f| f.lost > 50),
        "the queue overflows: {}",
        json(&single.flows)
    );
    // Pipes: h1→r1, r1→h1, h2→r1, r1→h2, r1→h3, h3→r1. h1's side on worker 0, the rest on 1:
    // worker 1 hears of h2's packets as it schedules them, of h1's a window later.
    let assignment = [0, 0, 1, 1, 1, 1];
    let ownership = Arc::new(Ownership::new(&topo, &assignment, 2, Payload::Cache).unwrap());
    let engines = (0..2).map(|k| build(Some((&ownership, k)))).collect();
    let (_, split, _) = workers::run(engines, ownership.lookahead(), opts(), &|_| {});
    assert_eq!(json(&single.flows), json(&split.flows));
    assert_eq!(json(&single.pipes), json(&split.pipes));
}

/// A hand-off from another process is input: whatever numbers it carries, once `check` let it
/// through, the engine takes it in and runs on without panicking, and what `check` refused it
/// never sees. The numbers are drawn near the bounds so that both happen often.
#[test]
fn a_checked_handoff_never_panics_the_engine_whatever_it_carries() {
    let topo = topology();
    let pipes = topo.pipes.len();
    let assignment: Vec<u32> = (0..pipes as u32).map(|p| p % 2).collect();
    let ownership = Arc::new(Ownership::new(&topo, &assignment, 2, Payload::Cache).unwrap());
    let mut target = engine(Some((&ownership, 0)));
    let bounds = target.handoff_bounds();
    assert_eq!(bounds.pipes as usize, pipes);
    assert_eq!(bounds.workers, 2);
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(37);
    let near = |rng: &mut rand_xoshiro::Xoshiro256PlusPlus, bound: u32| -> u32 {
        match rng.gen_range(0..16) {
            0 => u32::MAX - rng.gen_range(0..2),
            1 => bound + rng.gen_range(0..3),
            _ => rng.gen_range(0..bound.max(1)),
        }
    };
    let (mut taken, mut refused) = (0, 0);
    for round in 0..20_000u64 {
        let mut b = [0u8; netloom_engine::DESCRIPTOR_LEN];
        rng.fill(&mut b[..]);
        b[16] = rng.gen_range(0..3);
        b[17] &= 0b11;
        b[19] = 0;
        if b[16] != 1 {
            b[32..38].fill(0); // a segment's size or a home fits its field
        }
        let put =
            |b: &mut [u8; 64], at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_be_bytes());
        match rng.gen() {
            true => b[8..16].fill(0), // no exit: the packet enters `next`
            false => put(&mut b, 8, near(&mut rng, bounds.pipes)),
        }
        put(&mut b, 20, near(&mut rng, bounds.flows));
        put(&mut b, 44, near(&mut rng, bounds.nodes));
        put(&mut b, 48, near(&mut rng, bounds.hosts));
        put(&mut b, 52, near(&mut rng, bounds.pipes));
        if b[16] == 2 {
            b[38..40].copy_from_slice(&(near(&mut rng, 2) as u16).to_be_bytes());
        }
        // Times from now on, as a live hand-off's: the engine's clock does not go back.
        b[0..8].copy_from_slice(&(round * 1_000 + rng.gen_range(0..5_000)).to_be_bytes());
        let Ok(handoff) = netloom_engine::Handoff::from_bytes(&b) else {
            continue;
        };
        match handoff.check(&bounds) {
            Ok(()) => {
                taken += 1;
                target.accept(handoff);
                target.advance(netloom_time::Instant::from_nanos(round * 1_000));
            }
            Err(_) => refused += 1,
        }
    }
    assert!(
        taken > 1_000 && refused > 1_000,
        "{taken} taken, {refused} refused"
    );
}
