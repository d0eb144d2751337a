//! The partitioners on generated and hand-made topologies: coverage, balance, the obvious cut,
//! determinism, and efficiency counted by hand.

use netloom_link::PipeConfig;
use netloom_partition::{
    partition, partition_shares, Assignment, Evaluation, FlowGraph, Method, Observation, Options,
};
use netloom_route::Routes;
use netloom_time::{Duration, Rate};
use netloom_topo::gen::{generate, GenKind, TreeMeshParams};
use netloom_topo::{resolve, NodeKind, RoutingMetric, Topology};

const METHODS: [Method; 3] = [Method::Random, Method::KCluster, Method::Metis];

fn tree_mesh(height: usize) -> Topology {
    let params = TreeMeshParams {
        height,
        ..TreeMeshParams::default()
    };
    resolve(&generate(&GenKind::TreeMesh(params)).unwrap(), "gen").unwrap()
}

#[test]
fn every_pipe_is_on_exactly_one_core_within_the_tolerance() {
    let topo = tree_mesh(3);
    let graph = FlowGraph::uniform(&topo);
    for method in METHODS {
        for cores in 1..=8 {
            let a = partition(&graph, &Options::new(method, cores, 7)).unwrap();
            a.check(&topo).unwrap();
            assert_eq!(a.pipes.len(), topo.pipes.len());
            let eval = Evaluation::of(&graph, &a);
            assert_eq!(
                eval.cores.iter().map(|c| c.pipes).sum::<usize>(),
                a.pipes.len()
            );
            let (min, max) = eval.cores.iter().fold((usize::MAX, 0), |(lo, hi), c| {
                (lo.min(c.pipes), hi.max(c.pipes))
            });
            match method {
                // Equal shares by construction.
                Method::Random | Method::KCluster => assert!(max - min <= 1, "{method:?} {cores}"),
                Method::Metis => assert!(
                    eval.imbalance <= 1.03 + 1e-9,
                    "{cores} cores: imbalance {}",
                    eval.imbalance
                ),
            }
        }
    }
}

#[test]
fn a_looser_tolerance_is_respected_too() {
    let topo = tree_mesh(4);
    let graph = FlowGraph::conservative(&topo, &Routes::compute(&topo));
    for cores in [2, 4, 6] {
        let opts = Options {
            imbalance: 1.2,
            ..Options::new(Method::Metis, cores, 1)
        };
        let eval = Evaluation::of(&graph, &partition(&graph, &opts).unwrap());
        assert!(eval.imbalance <= 1.2 + 1e-9, "{cores}: {}", eval.imbalance);
    }
}

fn pipe() -> PipeConfig {
    PipeConfig::new(Rate::bps(100_000_000), Duration::from_millis(1))
}

/// Two full meshes of `n` routers (a host on each) joined by one link between their first routers.
fn two_clusters(n: u32) -> (Topology, Vec<u32>) {
    let mut t = Topology::new("two-clusters", RoutingMetric::Hops);
    let mut side_of_link = Vec::new();
    let mut firsts = Vec::new();
    for side in 0..2 {
        let r: Vec<_> = (0..n)
            .map(|i| t.add_node(format!("r{side}-{i}"), NodeKind::Router, None))
            .collect();
        for (i, &a) in r.iter().enumerate() {
            for &b in &r[i + 1..] {
                t.add_link(a, b, None, pipe(), Some(pipe()));
                side_of_link.push(side);
            }
            let h = t.add_node(format!("h{side}-{i}"), NodeKind::Host, None);
            t.add_link(h, a, None, pipe(), Some(pipe()));
            side_of_link.push(side);
        }
        firsts.push(r[0]);
    }
    t.add_link(firsts[0], firsts[1], None, pipe(), Some(pipe()));
    side_of_link.push(2);
    (t, side_of_link)
}

#[test]
fn metis_finds_the_obvious_cut_between_two_clusters() {
    let (topo, side_of_link) = two_clusters(8);
    for graph in [
        FlowGraph::uniform(&topo),
        FlowGraph::conservative(&topo, &Routes::compute(&topo)),
    ] {
        let a = partition(&graph, &Options::new(Method::Metis, 2, 3)).unwrap();
        let core_of_side = |side| {
            let cores: Vec<u32> = topo
                .pipes
                .iter()
                .enumerate()
                .filter(|(_, p)| side_of_link[p.link as usize] == side)
                .map(|(i, _)| a.pipes[i])
                .collect();
            assert!(cores.iter().all(|&c| c == cores[0]), "side {side} split");
            cores[0]
        };
        assert_ne!(core_of_side(0), core_of_side(1));
    }
}

#[test]
fn each_method_repeats_for_a_seed() {
    let topo = tree_mesh(4);
    let graph = FlowGraph::conservative(&topo, &Routes::compute(&topo));
    for method in METHODS {
        let run = |seed| partition(&graph, &Options::new(method, 4, seed)).unwrap();
        assert_eq!(run(11), run(11), "{method:?}");
        if method != Method::Metis {
            assert_ne!(run(11), run(12), "{method:?} ignores its seed");
        }
    }
}

#[test]
fn metis_beats_random_on_the_conservative_weights() {
    let topo = tree_mesh(5);
    let graph = FlowGraph::conservative(&topo, &Routes::compute(&topo));
    let cut = |method| {
        let a = partition(&graph, &Options::new(method, 4, 1)).unwrap();
        Evaluation::of(&graph, &a).cut
    };
    assert!(cut(Method::Metis) * 2.0 < cut(Method::Random));
    assert!(cut(Method::KCluster) < cut(Method::Random));
}

#[test]
fn efficiency_of_observed_counts_matches_a_hand_count() {
    // h1 - r1 - r2 - r3 - h2. Pipes: 0 h1→r1, 1 r1→h1, 2 r1→r2, 3 r2→r1, 4 r2→r3, 5 r3→r2,
    // 6 r3→h2, 7 h2→r3. 100 packets h1 → h2 (10 dropped by r2→r3), 50 ACKs back h2 → h1.
    let mut topo = Topology::new("chain", RoutingMetric::Hops);
    let names = ["h1", "r1", "r2", "r3", "h2"];
    let n: Vec<_> = names
        .iter()
        .map(|s| {
            let kind = if s.starts_with('h') {
                NodeKind::Host
            } else {
                NodeKind::Router
            };
            topo.add_node(*s, kind, None)
        })
        .collect();
    for w in n.windows(2) {
        topo.add_link(w[0], w[1], None, pipe(), Some(pipe()));
    }
    let obs = Observation {
        topology: "chain".into(),
        packets: vec![100, 50, 100, 50, 100, 50, 90, 50],
        transitions: vec![
            (0, 2, 100),
            (2, 4, 100),
            (3, 1, 50),
            (4, 6, 90),
            (5, 3, 50),
            (7, 5, 50),
        ],
    };
    let graph = FlowGraph::observed(&topo, &obs).unwrap();
    // Core 0: the h1 side (pipes 0-3); core 1: the h2 side (4-7).
    let a = Assignment {
        cores: 2,
        pipes: vec![0, 0, 0, 0, 1, 1, 1, 1],
        topology: Some("chain".into()),
        method: None,
    };
    let eval = Evaluation::of(&graph, &a);
    // Edge packets: 100 data at pipe 0 (core 0), 50 ACKs at pipe 7 (core 1). Cross-core hops:
    // 100 data 2→4 (into core 1), 50 ACKs 5→3 (into core 0).
    assert_eq!(eval.cut, 150.0);
    assert_eq!(eval.cores[0].edge_packets, 100.0);
    assert_eq!(eval.cores[0].packets, 150.0);
    assert_eq!(eval.cores[1].edge_packets, 50.0);
    assert_eq!(eval.cores[1].packets, 150.0);
    assert_eq!(eval.efficiency, Some(150.0 / 300.0));
    // Every hop offered is emulated once: the cores' hops are all packets offered to pipes.
    let hops: f64 = eval.cores.iter().map(|c| c.hops).sum();
    assert_eq!(hops, obs.packets.iter().sum::<u64>() as f64);
    // One core: nothing crosses.
    let one = Assignment {
        cores: 1,
        pipes: vec![0; 8],
        topology: None,
        method: None,
    };
    assert_eq!(Evaluation::of(&graph, &one).efficiency, Some(1.0));
    // A packet a route change sends back at a router (r1→r2, then r2→r1) is a hop like any
    // other: on different cores it crosses once more.
    let mut turned = obs.clone();
    turned.transitions.insert(2, (2, 3, 5));
    turned.packets[3] += 5;
    let graph = FlowGraph::observed(&topo, &turned).unwrap();
    assert!(graph.successors(2).any(|edge| edge == (3, 5.0)));
    let split = Assignment {
        pipes: vec![0, 0, 0, 1, 1, 1, 1, 1],
        ..a
    };
    let cut = |graph: &FlowGraph| Evaluation::of(graph, &split).cut;
    assert_eq!(
        cut(&graph),
        cut(&FlowGraph::observed(&topo, &obs).unwrap()) + 5.0
    );
    // Hops the topology cannot make are refused: pipes that do not meet, and a turn at a host.
    for hop in [(0, 4, 1), (6, 7, 1)] {
        let bad = Observation {
            transitions: vec![hop],
            ..obs.clone()
        };
        assert!(FlowGraph::observed(&topo, &bad).is_err(), "{hop:?}");
    }
}

#[test]
fn assignment_file_round_trips_and_is_checked() {
    let topo = tree_mesh(2);
    let graph = FlowGraph::uniform(&topo);
    let mut a = partition(&graph, &Options::new(Method::Metis, 3, 1)).unwrap();
    a.topology = Some(topo.name.clone());
    assert_eq!(Assignment::from_json(&a.to_json(), &topo).unwrap(), a);
    let minimal = format!(
        r#"{{"cores": 1, "pipes": {:?}}}"#,
        vec![0; topo.pipes.len()]
    );
    assert!(Assignment::from_json(&minimal, &topo).is_ok());
    let short = r#"{"cores": 2, "pipes": [0, 1]}"#;
    let err = Assignment::from_json(short, &topo).unwrap_err().to_string();
    assert!(err.contains("has 2 pipes"), "{err}");
    let mut wrong = a.clone();
    wrong.pipes[5] = 3;
    let err = Assignment::from_json(&wrong.to_json(), &topo)
        .unwrap_err()
        .to_string();
    assert!(err.contains("pipe 5 is on core 3"), "{err}");
}

#[test]
fn metis_gives_each_core_its_share_of_the_load() {
    let topo = tree_mesh(4);
    let graph = FlowGraph::conservative(&topo, &Routes::compute(&topo));
    let opts = Options {
        imbalance: 1.1,
        ..Options::new(Method::Metis, 2, 1)
    };
    let share_of_core_0 = |shares: Vec<f64>| {
        let eval = Evaluation::of(&graph, &partition_shares(&graph, &opts, &shares).unwrap());
        eval.cores[0].load / (eval.cores[0].load + eval.cores[1].load)
    };
    let equal = share_of_core_0(Vec::new());
    let three_to_one = share_of_core_0(vec![3.0, 1.0]);
    assert!((equal - 0.5).abs() < 0.06, "{equal}");
    assert!((three_to_one - 0.75).abs() < 0.08, "{three_to_one}");
    assert!(partition_shares(&graph, &opts, &[1.0]).is_err());
}
