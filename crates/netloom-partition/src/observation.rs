//! Observed packet counts (per pipe, and per pair of consecutive pipes) from a run: the file
//! `sim --observe` writes, read back as the "observed" weighting and used to measure efficiency.

use crate::error::PartitionError;
use crate::graph::FlowGraph;
use netloom_topo::{PipeId, Topology};
use serde::{Deserialize, Serialize};

/// What a run saw. The JSON form is documented in docs/partition.md.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    /// The name of the topology the run emulated; it must match when the file is read back.
    pub topology: String,
    /// `packets[p]`: packets offered to pipe p (whether it dropped them or not).
    pub packets: Vec<u64>,
    /// (pipe, next pipe, packets that left the first for the second), ascending.
    pub transitions: Vec<(PipeId, PipeId, u64)>,
}

impl Observation {
    /// Parses the JSON form. It is checked against a topology only when used
    /// (`FlowGraph::observed`).
    pub fn from_json(text: &str) -> Result<Observation, PartitionError> {
        serde_json::from_str(text).map_err(|source| PartitionError::Json {
            what: "observation",
            source,
        })
    }

    /// The JSON form, on one line.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an observation always serializes")
    }
}

impl FlowGraph {
    /// The observed weighting, in packets: a pipe costs the packets offered to it, an edge
    /// carries the packets that took that hop, and a pipe's entry flow is what it was offered
    /// from outside (its packets minus those arriving from other pipes).
    pub fn observed(topo: &Topology, obs: &Observation) -> Result<FlowGraph, PartitionError> {
        if obs.topology != topo.name {
            return Err(PartitionError::Topology {
                what: "observation",
                found: obs.topology.clone(),
                expected: topo.name.clone(),
            });
        }
        if obs.packets.len() != topo.pipes.len() {
            return Err(PartitionError::PipeCount {
                what: "observation",
                found: obs.packets.len(),
                expected: topo.pipes.len(),
                topology: topo.name.clone(),
            });
        }
        if let Some(&(from, to, _)) = obs.transitions.iter().find(|&&(from, to, _)| {
            from as usize >= obs.packets.len() || to as usize >= obs.packets.len()
        }) {
            return Err(PartitionError::NoSuchPipe(from.max(to)));
        }
        // A packet turns back over the link it came on only when routes change under it, so
        // the graph has those edges only where the run saw them.
        let link = |p: PipeId| topo.pipes[p as usize].link;
        let mut turned: Vec<PipeId> = obs
            .transitions
            .iter()
            .filter(|&&(from, to, _)| link(from) == link(to))
            .map(|&(from, _, _)| from)
            .collect();
        turned.sort_unstable();
        turned.dedup();
        let mut g = FlowGraph::structure_turning(topo, |p| turned.binary_search(&p).is_ok());
        let mut arrived = vec![0u64; obs.packets.len()];
        for &(from, to, n) in &obs.transitions {
            *g.flow_mut(from, to)
                .ok_or(PartitionError::NotConsecutive { from, to })? += n as f64;
            arrived[to as usize] += n;
        }
        for (p, &n) in obs.packets.iter().enumerate() {
            g.load[p] = n as f64;
            g.entry[p] = n.saturating_sub(arrived[p]) as f64;
        }
        Ok(g)
    }
}
