//! What a partition gives under a weighting: the cut, the load per core, and the efficiency
//! E = Σ edge packets / Σ packets processed (ModelNet §3).

use crate::assignment::Assignment;
use crate::graph::FlowGraph;
use serde::Serialize;

/// One core's share. Units are the weighting's (packets for observed counts).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CoreLoad {
    /// The core's number, 0 to cores − 1.
    pub core: u32,
    /// Pipes the assignment gives it.
    pub pipes: usize,
    /// Sum of its pipes' vertex weights.
    pub load: f64,
    /// Pipe traversals it emulates: entries plus every hop into one of its pipes.
    pub hops: f64,
    /// Edge packets: those entering the emulation at one of its pipes (C_edge).
    pub edge_packets: f64,
    /// Packets it processes: its edge packets plus those handed over by another core (C_p).
    pub packets: f64,
}

/// The quality of an assignment.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Evaluation {
    /// One entry per core of the assignment, core 0 first, including cores that own no pipe.
    pub cores: Vec<CoreLoad>,
    /// Flow on the edges whose pipes are on different cores: for observed counts, the
    /// cross-core hops.
    pub cut: f64,
    /// Total flow on all edges.
    pub total_flow: f64,
    /// Σ edge packets / Σ packets processed; `None` if nothing entered.
    pub efficiency: Option<f64>,
    /// Largest core load over the mean core load (1 is perfect balance).
    pub imbalance: f64,
}

impl Evaluation {
    /// Evaluates `assignment` (already checked against the topology) on `graph`.
    pub fn of(graph: &FlowGraph, assignment: &Assignment) -> Evaluation {
        let mut cores = Evaluation::shares(assignment, &graph.load, &graph.entry);
        let (mut cut, mut total_flow) = (0.0, 0.0);
        for (p, q, w) in graph.transitions() {
            total_flow += w;
            let to = &mut cores[assignment.core(q) as usize];
            to.hops += w;
            if assignment.core(p) != assignment.core(q) {
                to.packets += w;
                cut += w;
            }
        }
        Evaluation::finish(cores, cut, total_flow)
    }

    /// `of` for the assignment a partitioned run ran with, from what its workers counted in
    /// place of its transitions (`Engine::crossings`): each pipe's offered packets and hops
    /// into it, and each core's hops in from another core's pipes. The same figures as `of` on
    /// the run's observed graph: counts are integers, exact in `f64` below 2^53, whatever the
    /// order they are added in.
    pub fn of_crossings(
        assignment: &Assignment,
        packets: &[u64],
        arrived: &[u64],
        crossed: &[u64],
    ) -> Evaluation {
        let load: Vec<f64> = packets.iter().map(|&n| n as f64).collect();
        let entry: Vec<f64> = packets
            .iter()
            .zip(arrived)
            .map(|(&n, &a)| n.saturating_sub(a) as f64)
            .collect();
        let mut cores = Evaluation::shares(assignment, &load, &entry);
        for (p, &a) in arrived.iter().enumerate() {
            cores[assignment.pipes[p] as usize].hops += a as f64;
        }
        for (core, &c) in cores.iter_mut().zip(crossed) {
            core.packets += c as f64;
        }
        let cut = crossed.iter().sum::<u64>() as f64;
        let total_flow = arrived.iter().sum::<u64>() as f64;
        Evaluation::finish(cores, cut, total_flow)
    }

    /// Each core's pipes, load, and the packets entering at its pipes (`entry`), which are hops
    /// and processed packets of its own.
    fn shares(assignment: &Assignment, load: &[f64], entry: &[f64]) -> Vec<CoreLoad> {
        let mut cores: Vec<CoreLoad> = (0..assignment.cores)
            .map(|core| CoreLoad {
                core,
                ..CoreLoad::default()
            })
            .collect();
        for (p, &c) in assignment.pipes.iter().enumerate() {
            let core = &mut cores[c as usize];
            core.pipes += 1;
            core.load += load[p];
            core.hops += entry[p];
            core.edge_packets += entry[p];
            core.packets += entry[p];
        }
        cores
    }

    /// The evaluation of `cores` with their cut and total flow.
    fn finish(cores: Vec<CoreLoad>, cut: f64, total_flow: f64) -> Evaluation {
        let entered: f64 = cores.iter().map(|c| c.edge_packets).sum();
        let processed: f64 = cores.iter().map(|c| c.packets).sum();
        let max = cores.iter().map(|c| c.load).fold(0.0, f64::max);
        let mean = cores.iter().map(|c| c.load).sum::<f64>() / cores.len() as f64;
        Evaluation {
            cores,
            cut,
            total_flow,
            efficiency: (entered > 0.0).then(|| entered / processed),
            imbalance: if mean > 0.0 { max / mean } else { 1.0 },
        }
    }
}

/// One core's measured share of a run, in packets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MeasuredCore {
    /// The core's number, 0 to cores − 1.
    pub core: u32,
    /// Pipes the assignment gives it.
    pub pipes: usize,
    /// Packets offered to its pipes (its emulation work in hops).
    pub hops: u64,
    /// Packets that entered the emulation at one of its pipes.
    pub edge_packets: u64,
    /// Packets it processed: its edge packets plus those handed over by another core.
    pub packets: u64,
}

/// Efficiency, cross-core hops and per-core packets of an assignment, counted from a run's
/// observed counts (the `partition` section of `sim --json`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measurement {
    /// Σ edge packets / Σ packets processed by all cores; `null` if nothing entered.
    pub efficiency: Option<f64>,
    /// Packet hops from a pipe on one core to a pipe on another.
    pub cross_core_hops: u64,
    /// Packets that entered the emulation from hosts, over all cores (Σ C_edge).
    pub edge_packets: u64,
    /// Packets processed by all cores: edge packets plus cross-core hops (Σ C_p).
    pub packets: u64,
    /// Largest core's hops over the mean core's.
    pub imbalance: f64,
    /// One entry per core, core 0 first.
    pub cores: Vec<MeasuredCore>,
}

impl Measurement {
    /// Reads the evaluation of an assignment on an observed flow graph, whose weights are
    /// packet counts (exact in `f64` below 2^53).
    pub fn of(observed: &Evaluation) -> Measurement {
        let cores: Vec<MeasuredCore> = observed
            .cores
            .iter()
            .map(|c| MeasuredCore {
                core: c.core,
                pipes: c.pipes,
                hops: c.hops as u64,
                edge_packets: c.edge_packets as u64,
                packets: c.packets as u64,
            })
            .collect();
        Measurement {
            efficiency: observed.efficiency,
            cross_core_hops: observed.cut as u64,
            edge_packets: cores.iter().map(|c| c.edge_packets).sum(),
            packets: cores.iter().map(|c| c.packets).sum(),
            imbalance: observed.imbalance,
            cores,
        }
    }
}
