//! The routing graph: for each node that has a row in the tables, the usable pipes that enter
//! it, in compressed sparse rows, with the metric's weight per pipe. Built once per
//! (re)computation; knows nothing of hosts' tables.

use netloom_topo::{NodeKind, PipeId, RoutingMetric, Topology};

/// "This node has no row": a stub host, which only sends up its one link and is routed to
/// through its router (see `Routes`).
pub(crate) const NO_ROW: u32 = u32::MAX;

/// One pipe entering a row: crossing `pipe` from row `from` costs `weight` (ns of delay, or 0
/// when routing by hops, where the hop count alone decides).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct InArc {
    pub from: u32,
    pub pipe: PipeId,
    pub weight: u64,
}

/// Incoming arcs of every row (CSR) and which rows may carry transit traffic.
pub(crate) struct InGraph {
    /// Arcs entering row r are `arcs[start[r] .. start[r + 1]]`.
    start: Vec<u32>,
    arcs: Vec<InArc>,
    /// Routers forward; hosts only send and receive.
    forwards: Vec<bool>,
}

impl InGraph {
    /// The graph of the pipes that are up (`up[pipe]`) between nodes that have a row
    /// (`row_of[node] != NO_ROW`; rows are numbered in node order). A stub host's link is left
    /// out with it: hosts never forward, so no route between other nodes crosses it.
    pub fn build(topo: &Topology, up: &[bool], row_of: &[u32]) -> InGraph {
        let weight = |pipe: PipeId| match topo.routing {
            RoutingMetric::Delay => topo.pipes[pipe as usize].config.delay.as_nanos(),
            RoutingMetric::Hops => 0,
        };
        // Each usable direction of each link, as (to, arc); a shared medium's one pipe counts
        // once per direction it carries.
        let directed = topo
            .links
            .iter()
            .filter(|l| l.a != l.b)
            .map(|l| (l, row_of[l.a as usize], row_of[l.b as usize]))
            .filter(|&(_, a, b)| a != NO_ROW && b != NO_ROW)
            .flat_map(|(l, a, b)| [(l.ab, a, b), (l.ba, b, a)])
            .filter(|&(pipe, _, _)| up[pipe as usize]);
        let forwards: Vec<bool> = topo
            .nodes
            .iter()
            .zip(row_of)
            .filter(|&(_, &row)| row != NO_ROW)
            .map(|(node, _)| node.kind == NodeKind::Router)
            .collect();
        let n = forwards.len();

        let mut start = vec![0u32; n + 1];
        for (_, _, to) in directed.clone() {
            start[to as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let placeholder = InArc {
            from: 0,
            pipe: 0,
            weight: 0,
        };
        let mut arcs = vec![placeholder; start[n] as usize];
        for (pipe, from, to) in directed {
            let slot = &mut fill[to as usize];
            arcs[*slot as usize] = InArc {
                from,
                pipe,
                weight: weight(pipe),
            };
            *slot += 1;
        }
        InGraph {
            start,
            arcs,
            forwards,
        }
    }

    /// The largest arc weight (0 for an empty graph).
    pub fn max_weight(&self) -> u64 {
        self.arcs.iter().map(|a| a.weight).max().unwrap_or(0)
    }

    pub fn arc_count(&self) -> usize {
        self.arcs.len()
    }

    #[inline]
    pub fn arcs_into(&self, row: u32) -> &[InArc] {
        let r = row as usize;
        &self.arcs[self.start[r] as usize..self.start[r + 1] as usize]
    }

    #[inline]
    pub fn forwards(&self, row: u32) -> bool {
        self.forwards[row as usize]
    }
}
