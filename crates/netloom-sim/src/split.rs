//! How a virtual-time run is split and how well: the flow graph of its synthetic traffic, the
//! partition made on it, the CPUs its workers are pinned to, and the partition measured on the
//! packets the run counted.

use netloom_engine::traffic::{FlowSpec, SourceKind, HEADER_BYTES};
use netloom_engine::Engine;
use netloom_partition::{
    partition, Assignment, Demand, Evaluation, FlowGraph, Measurement, Observation, PartitionError,
    Placement,
};
use netloom_route::Routes;
use netloom_topo::Topology;

/// The flow graph of synthetic `flows` on `topo`, each at its max-min fair share
/// (`FlowGraph::from_demands`): what a run over workers is partitioned on.
pub fn traffic_graph(topo: &Topology, routes: &Routes, flows: &[FlowSpec]) -> FlowGraph {
    let demands: Vec<Demand> = flows.iter().map(demand).collect();
    FlowGraph::from_demands(topo, routes, &demands)
}

/// The size of the packets a source sends, bytes (an AIMD flow's: full segments).
pub fn packet_bytes(kind: SourceKind) -> u32 {
    match kind {
        SourceKind::Cbr { size, .. }
        | SourceKind::Poisson { size, .. }
        | SourceKind::OnOff { size, .. } => size,
        SourceKind::Aimd { mss } => mss + HEADER_BYTES,
    }
}

/// What the partitioner needs to know of a synthetic flow: its rate limit and packet sizes.
fn demand(flow: &FlowSpec) -> Demand {
    let (rate, acked) = match flow.kind {
        SourceKind::Cbr { rate, .. } | SourceKind::Poisson { rate, .. } => {
            (Some(rate.as_bps() as f64), false)
        }
        SourceKind::OnOff { rate, on, off, .. } => {
            let duty = on.as_secs_f64() / (on.as_secs_f64() + off.as_secs_f64()).max(1e-12);
            (Some(rate.as_bps() as f64 * duty), false)
        }
        SourceKind::Aimd { .. } => (None, true),
    };
    let cap = flow.cap.map(|c| c.as_bps() as f64);
    Demand {
        src: flow.src,
        dst: flow.dst,
        max_bps: match (rate, cap) {
            (Some(r), Some(c)) => Some(r.min(c)),
            (r, c) => r.or(c),
        },
        packet_bytes: packet_bytes(flow.kind),
        acked,
    }
}

/// Partitions `graph` and names the topology in the assignment.
pub fn assign(
    topo: &Topology,
    graph: &FlowGraph,
    options: &netloom_partition::Options,
) -> Result<Assignment, PartitionError> {
    let mut a = partition(graph, options)?;
    a.topology = Some(topo.name.clone());
    Ok(a)
}

/// Where the workers of `assignment` run on this machine: workers that exchange the most
/// traffic (under `graph`) on CPUs that share a cache (MX).
pub fn worker_placement(graph: &FlowGraph, assignment: &Assignment) -> Placement {
    Placement::of(graph, assignment, netloom_live::this_machine())
}

/// The packet counts of a run whose engine counted transitions.
pub fn observation(engine: &Engine) -> Observation {
    let (packets, transitions) = engine.hop_counts();
    Observation {
        topology: engine.topology().name.clone(),
        packets,
        transitions,
    }
}

/// Efficiency, cross-core hops and per-core packets of `assignment` in an observed run.
pub fn measure(
    topo: &Topology,
    obs: &Observation,
    assignment: &Assignment,
) -> Result<Measurement, PartitionError> {
    let graph = FlowGraph::observed(topo, obs)?;
    Ok(Measurement::of(&Evaluation::of(&graph, assignment)))
}

/// `measure` for the assignment a partitioned run ran with, from its workers' crossing counts
/// (`Engine::crossings`: packets offered to each pipe, hops into each, hops each core took in).
pub fn measure_crossings(
    assignment: &Assignment,
    (packets, arrived, crossed): (Vec<u64>, Vec<u64>, Vec<u64>),
) -> Measurement {
    Measurement::of(&Evaluation::of_crossings(
        assignment, &packets, &arrived, &crossed,
    ))
}
