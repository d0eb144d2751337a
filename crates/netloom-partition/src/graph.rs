//! The flow graph (ModelNet §5.3): one vertex per pipe, a directed edge from each pipe to every
//! pipe a packet may take next at the node it leads to, and the weights a weighting puts on
//! them. The weightings themselves live in `weight`.

use crate::PartitionError;
use netloom_topo::{NodeKind, PipeId, Topology};

/// Most pipe pairs (edges) a flow graph may have: with its weights and the undirected copy the
/// partitioners read, about `BYTES_PER_EDGE` bytes each, 3.4 GiB at this limit.
pub const MAX_FLOW_EDGES: u64 = 100_000_000;
/// Peak bytes per edge: its successor and flow here (4 + 8), both directions of the undirected
/// copy (2 × (4 + 8)).
pub(crate) const BYTES_PER_EDGE: u64 = 36;
/// Most ordered host pairs the static weighting routes: about a minute in release (`netloom
/// partition` of a 3,000-host ring, 9 million pairs, takes 4.7 s; docs/limits.md).
pub const MAX_STATIC_PAIRS: u64 = 100_000_000;

/// A weighted flow graph. Weights are flows (packets or bits per second, or packet counts): what
/// matters is their ratios.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowGraph {
    /// Vertex weights: the cost of emulating each pipe, by pipe id.
    pub load: Vec<f64>,
    /// Flow that enters the emulation at each pipe (a host's first hop): edge traffic.
    pub entry: Vec<f64>,
    /// `next[first[p]..first[p + 1]]`: the pipes that may follow pipe p, ascending.
    first: Vec<usize>,
    next: Vec<PipeId>,
    /// Flow from pipe p into each of its successors, aligned with `next`.
    flow: Vec<f64>,
}

/// The undirected, weighted form of a flow graph, in compressed sparse rows: what METIS and
/// k-cluster read.
pub(crate) struct Undirected {
    pub offsets: Vec<usize>,
    pub neighbours: Vec<PipeId>,
    /// Sum of the flows both ways between the two pipes.
    pub weights: Vec<f64>,
}

impl FlowGraph {
    /// Refuses a topology whose flow graph would not fit in a few GiB, or, with `static_weights`,
    /// whose host pairs the static weighting would take too long to route; before anything is
    /// built. Every weighting builds the graph, so callers check this first.
    pub fn check_size(topo: &Topology, static_weights: bool) -> Result<(), PartitionError> {
        let mut links = vec![0u64; topo.nodes.len()];
        for l in topo.links.iter().filter(|l| l.a != l.b) {
            links[l.a as usize] += 1;
            links[l.b as usize] += 1;
        }
        // At a router, each pipe in may be followed by each pipe out of another link.
        let routers = || (0..topo.nodes.len()).filter(|&n| topo.nodes[n].kind == NodeKind::Router);
        let edges: u64 = routers()
            .map(|n| links[n] * links[n].saturating_sub(1))
            .sum();
        if edges > MAX_FLOW_EDGES {
            let busiest = routers()
                .max_by_key(|&n| links[n])
                .expect("edges need a router");
            return Err(PartitionError::FlowGraphTooLarge {
                edges,
                router: topo.nodes[busiest].name.clone(),
                links: links[busiest],
            });
        }
        let hosts = topo.hosts.len() as u64;
        if static_weights && hosts * hosts.saturating_sub(1) > MAX_STATIC_PAIRS {
            return Err(PartitionError::TooManyHostPairs {
                hosts: topo.hosts.len(),
            });
        }
        Ok(())
    }

    /// The structure of `topo`'s flow graph with every weight zero. A packet arriving at a router
    /// over pipe p may leave over any pipe of another link; hosts never forward.
    pub fn structure(topo: &Topology) -> FlowGraph {
        FlowGraph::structure_turning(topo, |_| false)
    }

    /// `structure`, where a packet arriving at a router over a pipe p with `turns(p)` may also
    /// go back over p's own link: routes change while packets are in flight (a link going down
    /// or up), so a packet routed one way may arrive where the new route sends it back.
    pub(crate) fn structure_turning(topo: &Topology, turns: impl Fn(PipeId) -> bool) -> FlowGraph {
        let pipes = topo.pipes.len();
        let mut into = vec![Vec::new(); topo.nodes.len()];
        for l in &topo.links {
            into[l.b as usize].push(l.ab);
            into[l.a as usize].push(l.ba);
        }
        let mut successors: Vec<Vec<PipeId>> = vec![Vec::new(); pipes];
        for (node, out) in topo.adjacency().iter().enumerate() {
            if topo.nodes[node].kind == NodeKind::Host {
                continue;
            }
            for &p in &into[node] {
                let link = topo.pipes[p as usize].link;
                let turns = turns(p);
                successors[p as usize].extend(
                    out.iter()
                        .map(|&(q, _)| q)
                        .filter(|&q| turns || topo.pipes[q as usize].link != link),
                );
            }
        }
        let mut first = Vec::with_capacity(pipes + 1);
        let mut next = Vec::new();
        first.push(0);
        for mut s in successors {
            s.sort_unstable();
            s.dedup();
            next.extend(s);
            first.push(next.len());
        }
        FlowGraph {
            load: vec![0.0; pipes],
            entry: vec![0.0; pipes],
            flow: vec![0.0; next.len()],
            first,
            next,
        }
    }

    /// Number of vertices (pipes).
    pub fn pipes(&self) -> usize {
        self.load.len()
    }

    /// The (successor, flow) pairs of pipe `p`.
    pub fn successors(&self, p: PipeId) -> impl Iterator<Item = (PipeId, f64)> + '_ {
        let range = self.first[p as usize]..self.first[p as usize + 1];
        self.next[range.clone()]
            .iter()
            .copied()
            .zip(self.flow[range].iter().copied())
    }

    /// Every directed edge with its flow: (from, to, flow).
    pub fn transitions(&self) -> impl Iterator<Item = (PipeId, PipeId, f64)> + '_ {
        (0..self.pipes() as PipeId)
            .flat_map(move |p| self.successors(p).map(move |(q, w)| (p, q, w)))
    }

    /// Multiplies every weight by `factor` (bit/s into packets/s, say).
    pub fn scale(&mut self, factor: f64) {
        for w in self
            .load
            .iter_mut()
            .chain(&mut self.entry)
            .chain(&mut self.flow)
        {
            *w *= factor;
        }
    }

    /// The flow from `from` into `to`, if `to` may follow `from`.
    pub fn flow_mut(&mut self, from: PipeId, to: PipeId) -> Option<&mut f64> {
        let range = self.first[from as usize]..self.first[from as usize + 1];
        let i = self.next[range.clone()].binary_search(&to).ok()?;
        Some(&mut self.flow[range.start + i])
    }

    /// Sets every vertex weight to the sum of the flows on the vertex's edges, in and out: the
    /// paper's vertex weights for the static weighting.
    pub(crate) fn load_from_incident_flows(&mut self) {
        self.load.iter_mut().for_each(|w| *w = 0.0);
        for p in 0..self.pipes() {
            for i in self.first[p]..self.first[p + 1] {
                self.load[p] += self.flow[i];
                self.load[self.next[i] as usize] += self.flow[i];
            }
        }
    }

    pub(crate) fn flows_mut(&mut self) -> &mut [f64] {
        &mut self.flow
    }

    /// Merges each pair of opposite directed edges into one undirected edge: each pipe's
    /// neighbours are its successors merged with its predecessors (both ascending), in O(edges).
    pub(crate) fn undirected(&self) -> Undirected {
        let n = self.pipes();
        // Predecessors by counting sort: a transposed copy of `next`, ascending per pipe.
        let mut pred_first = vec![0usize; n + 1];
        for &q in &self.next {
            pred_first[q as usize + 1] += 1;
        }
        for i in 0..n {
            pred_first[i + 1] += pred_first[i];
        }
        let mut fill = pred_first.clone();
        let mut pred = vec![0 as PipeId; self.next.len()];
        let mut pred_flow = vec![0.0; self.next.len()];
        for p in 0..n {
            for i in self.first[p]..self.first[p + 1] {
                let slot = &mut fill[self.next[i] as usize];
                pred[*slot] = p as PipeId;
                pred_flow[*slot] = self.flow[i];
                *slot += 1;
            }
        }
        let mut offsets = Vec::with_capacity(n + 1);
        let mut neighbours = Vec::with_capacity(2 * self.next.len());
        let mut weights = Vec::with_capacity(2 * self.next.len());
        offsets.push(0);
        for p in 0..n {
            let (mut a, a_end) = (self.first[p], self.first[p + 1]);
            let (mut b, b_end) = (pred_first[p], pred_first[p + 1]);
            while a < a_end || b < b_end {
                let succ = (a < a_end).then(|| self.next[a]);
                let prev = (b < b_end).then(|| pred[b]);
                let (q, w) = match (succ, prev) {
                    (Some(x), Some(y)) if x == y => {
                        let w = self.flow[a] + pred_flow[b];
                        (a, b) = (a + 1, b + 1);
                        (x, w)
                    }
                    (Some(x), Some(y)) if x < y => {
                        a += 1;
                        (x, self.flow[a - 1])
                    }
                    (Some(x), None) => {
                        a += 1;
                        (x, self.flow[a - 1])
                    }
                    (_, Some(y)) => {
                        b += 1;
                        (y, pred_flow[b - 1])
                    }
                    (None, None) => unreachable!("the loop runs while either list has more"),
                };
                neighbours.push(q);
                weights.push(w);
            }
            offsets.push(neighbours.len());
        }
        Undirected {
            offsets,
            neighbours,
            weights,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::weight::tests::chain;
    use netloom_link::PipeConfig;
    use netloom_time::{Duration, Rate};
    use netloom_topo::RoutingMetric;

    #[test]
    fn sizes_past_the_limits_are_refused_before_building() {
        // 10 routers in a line with 1,001 hosts each: 10 million pipe pairs fit, but the
        // static weighting's 100 million host pairs do not; one router with 10,001 links
        // has 100,010,000 pipe pairs.
        let c = PipeConfig::new(Rate::bps(1_000_000), Duration::from_millis(1));
        let mut t = Topology::new("wide", RoutingMetric::Delay);
        for r in 0..10 {
            let router = t.add_node(format!("r{r}"), NodeKind::Router, None);
            if r > 0 {
                t.add_link(router - 1002, router, None, c, Some(c));
            }
            for h in 0..1001 {
                let host = t.add_node(format!("h{r}-{h}"), NodeKind::Host, None);
                t.add_link(host, router, None, c, Some(c));
            }
        }
        assert!(FlowGraph::check_size(&t, false).is_ok());
        let err = FlowGraph::check_size(&t, true).unwrap_err();
        assert!(
            matches!(err, PartitionError::TooManyHostPairs { hosts: 10_010 }),
            "{err}"
        );
        let r0 = t.node_id("r0").unwrap();
        for h in 0..8999 {
            let host = t.add_node(format!("x{h}"), NodeKind::Host, None);
            t.add_link(host, r0, None, c, Some(c));
        }
        let err = FlowGraph::check_size(&t, false).unwrap_err().to_string();
        assert!(err.contains("\"r0\" with 10001"), "{err}");
    }

    #[test]
    fn chain_pipes_follow_each_other_but_never_turn_back() {
        // h1 - r1 - r2 - h2: pipes 0: h1→r1, 1: r1→h1, 2: r1→r2, 3: r2→r1, 4: r2→h2, 5: h2→r2.
        let g = FlowGraph::structure(&chain(2));
        let edges: Vec<_> = g.transitions().map(|(p, q, _)| (p, q)).collect();
        assert_eq!(edges, [(0, 2), (2, 4), (3, 1), (5, 3)]);
        let u = g.undirected();
        let around = |p: usize| u.neighbours[u.offsets[p]..u.offsets[p + 1]].to_vec();
        assert_eq!(around(2), [0, 4]);
        assert_eq!(around(1), [3]);
    }
}
