//! How long partitioning takes: flow graphs of about 10^4 and 10^6 vertices (Internet-like
//! topologies from the `inet` generator, scaled), uniform weights, METIS, k-cluster and random
//! into 8 cores. Prints a Markdown table.
//!
//! `cargo run --release -p netloom-partition --example speed -- [ROUTERS...]`

use netloom_partition::{partition, FlowGraph, Method, Options};
use netloom_topo::gen::{generate, GenKind, InetParams};
use netloom_topo::resolve;
use std::time::Instant;

fn main() {
    // inet has about 4.1 pipes per router: these give about 10^4 and 10^6 pipes.
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("ROUTERS is a number"))
        .collect();
    let sizes = if args.is_empty() {
        vec![2_420, 242_000]
    } else {
        args
    };
    println!("| routers | vertices (pipes) | edges | method | cores | seconds |");
    println!("|---|---|---|---|---|---|");
    for routers in sizes {
        let params = InetParams {
            routers,
            stubs: routers / 20,
            hosts: routers / 10,
            ..InetParams::default()
        };
        let topo = resolve(&generate(&GenKind::Inet(params)).unwrap(), "inet").unwrap();
        let graph = FlowGraph::uniform(&topo);
        let edges = graph.transitions().count();
        for method in [Method::Metis, Method::KCluster, Method::Random] {
            let started = Instant::now();
            let a = partition(&graph, &Options::new(method, 8, 1)).unwrap();
            let seconds = started.elapsed().as_secs_f64();
            assert_eq!(a.pipes.len(), graph.pipes());
            println!(
                "| {routers} | {} | {edges} | {} | 8 | {seconds:.3} |",
                graph.pipes(),
                method.name()
            );
        }
    }
}
