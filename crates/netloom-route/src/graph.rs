//! The routing graph: for each node, the usable pipes that enter it, in compressed sparse rows,
//! with the metric's weight per pipe. Built once per (re)computation; knows nothing of hosts'
//! tables.

use netloom_topo::{NodeId, NodeKind, PipeId, RoutingMetric, Topology};

/// One pipe entering a node: crossing `pipe` from `from` costs `weight` (ns of delay, or 0 when
/// routing by hops, where the hop count alone decides).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct InArc {
    pub from: NodeId,
    pub pipe: PipeId,
    pub weight: u64,
}

/// Incoming arcs of every node (CSR) and which nodes may carry transit traffic.
pub(crate) struct InGraph {
    /// Arcs entering node n are `arcs[start[n] .. start[n + 1]]`.
    start: Vec<u32>,
    arcs: Vec<InArc>,
    /// Routers forward; hosts only send and receive.
    forwards: Vec<bool>,
}

impl InGraph {
    /// The graph of the pipes that are up (`up[pipe]`).
    pub fn build(topo: &Topology, up: &[bool]) -> InGraph {
        let n = topo.nodes.len();
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
            .flat_map(|l| [(l.ab, l.a, l.b), (l.ba, l.b, l.a)])
            .filter(|&(pipe, _, _)| up[pipe as usize]);

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
        let forwards = topo
            .nodes
            .iter()
            .map(|n| n.kind == NodeKind::Router)
            .collect();
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
    pub fn arcs_into(&self, node: NodeId) -> &[InArc] {
        let n = node as usize;
        &self.arcs[self.start[n] as usize..self.start[n + 1] as usize]
    }

    #[inline]
    pub fn forwards(&self, node: NodeId) -> bool {
        self.forwards[node as usize]
    }
}
