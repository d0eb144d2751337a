//! Workers trading over TCP (threads here, each with its own connections, as processes would)
//! give the single engine's run: the lock-step loop, the framed GENEVE batches, and the merge of
//! the remains.

use netloom_engine::lockstep;
use netloom_engine::sim::{self, SimOptions};
use netloom_engine::traffic::{self, parse_spec, FlowSpec};
use netloom_engine::{workers, Engine, HopCounting, Ownership, Payload, Remains};
use netloom_procs::{merge, Listener, Run};
use netloom_route::Routes;
use netloom_time::{Duration, Instant};
use netloom_topo::{load_str, Format, Topology};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{mpsc, Arc};

/// The engine's partition-equivalence topology: every impairment, a link going down and up, a
/// shared medium.
const TOPOLOGY: &str = include_str!("../../netloom-engine/tests/data/impaired.toml");
const SEED: u64 = 7;

fn topology() -> Topology {
    load_str(TOPOLOGY, Format::Toml, "impaired.toml").unwrap()
}

fn flows(topo: &Topology) -> Vec<FlowSpec> {
    let mut flows = Vec::new();
    for spec in [
        "pattern=random-k k=3 source=aimd",
        "pattern=all-to-all source=poisson rate=200kbit",
    ] {
        let spec = parse_spec(spec).unwrap();
        flows.extend(traffic::expand(&spec.pattern, spec.kind, spec.cap, topo, SEED).unwrap());
    }
    flows
}

/// The run over `workers` workers trading over TCP, merged; with its windows.
fn over_tcp(
    assignment: &[u32],
    workers: usize,
    end: Instant,
) -> (Engine, netloom_engine::Report, u64) {
    let topo = topology();
    let routes = Routes::compute(&topo);
    let flows = flows(&topo);
    let ownership = Arc::new(Ownership::new(&topo, assignment, workers, Payload::Cache).unwrap());
    let lookahead = ownership.lookahead();
    let key = netloom_wire::Key::random();
    let (addr_tx, addr_rx) = mpsc::channel();
    let mut peer_txs = Vec::new();
    let mut threads = Vec::new();
    let localhost = SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 0);
    for k in 0..workers {
        let (peers_tx, peers_rx) = mpsc::channel::<Vec<SocketAddr>>();
        peer_txs.push(peers_tx);
        let mut engine = workers::engine(
            &topo,
            &routes,
            SEED,
            &ownership,
            &flows,
            k,
            HopCounting::Pairs,
        )
        .unwrap();
        let addr_tx = addr_tx.clone();
        threads.push(std::thread::spawn(move || -> (Engine, u64) {
            let listener = Listener::bind(localhost, k as u16).unwrap();
            addr_tx.send((k, listener.local_addr().unwrap())).unwrap();
            let peers = peers_rx.recv().unwrap();
            let run = Run {
                vni: 0x4E4C,
                key,
                bounds: engine.handoff_bounds(),
            };
            let mut exchange = listener.connect(&peers, run, Box::new(|| Ok(()))).unwrap();
            let windows =
                lockstep::run(&mut engine, &mut exchange, (k, workers), end, lookahead).unwrap();
            (engine, windows)
        }));
    }
    let mut peers = vec![localhost; workers];
    for _ in 0..workers {
        let (k, addr) = addr_rx.recv().unwrap();
        peers[k] = addr;
    }
    for tx in peer_txs {
        tx.send(peers.clone()).unwrap();
    }
    let mut done: Vec<(Engine, u64)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let windows = done[0].1;
    assert!(
        done.iter().all(|d| d.1 == windows),
        "every worker ran the same windows"
    );
    let others: Vec<Remains> = done.drain(1..).map(|(e, _)| e.remains(end)).collect();
    let (mut engine, _) = done.pop().unwrap();
    let (report, _) = merge(&mut engine, others, SEED, end, None);
    (engine, report, windows)
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap()
}

#[test]
fn workers_over_tcp_give_the_single_engines_run() {
    let topo = topology();
    let duration = Duration::from_secs(2);
    let end = Instant::ZERO + duration;
    let mut single = Engine::new(topo.clone(), SEED);
    single.enable_transition_counts();
    for f in flows(&topo) {
        single.add_flow(Instant::ZERO, f, SEED).unwrap();
    }
    let reference = sim::run(&mut single, SimOptions::new(duration, SEED));
    assert!(
        reference.totals.packet_hops > 10_000,
        "the run carries traffic"
    );
    let pipes = topo.pipes.len() as u32;
    let round_robin: Vec<u32> = (0..pipes).map(|p| p % 2).collect();
    let thirds: Vec<u32> = (0..pipes).map(|p| p * 3 / pipes).collect();
    for (what, assignment, workers) in [
        ("round robin over 2", &round_robin, 2),
        ("thirds over 3", &thirds, 3),
    ] {
        let (engine, report, windows) = over_tcp(assignment, workers, end);
        assert!(windows > 100, "{what}: lock-step windows");
        assert!(
            engine.counters().cross_core_hops > 1000,
            "{what}: hand-offs crossed"
        );
        assert_eq!(json(&reference.flows), json(&report.flows), "{what}: flows");
        assert_eq!(json(&reference.pipes), json(&report.pipes), "{what}: pipes");
        assert_eq!(
            single.hop_counts(),
            engine.hop_counts(),
            "{what}: hop counts"
        );
        assert_eq!(
            reference.totals.packet_hops, report.totals.packet_hops,
            "{what}"
        );
        assert_eq!(
            single.in_flight(),
            engine.in_flight(),
            "{what}: in flight at the end"
        );
    }
}
