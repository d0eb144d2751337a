//! The shortest-path search: one reverse Dijkstra per destination host, writing that host's
//! next-hop column. Buffers are reused across destinations.

use crate::graph::InGraph;
use netloom_topo::{NodeId, PipeId};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// "No route" in a next-hop table.
pub(crate) const NO_PIPE: PipeId = PipeId::MAX;

/// Distance to the destination, compared as (metric sum, hops): with the delay metric the sum
/// of delays decides and hop count breaks ties; with the hop metric the sum is always 0.
type Key = (u64, u32);

const UNREACHED: Key = (u64::MAX, u32::MAX);

/// Reusable state of one search.
pub(crate) struct Search {
    dist: Vec<Key>,
    heap: BinaryHeap<Reverse<(u64, u32, NodeId)>>,
}

impl Search {
    pub fn new(nodes: usize) -> Search {
        Search {
            dist: vec![UNREACHED; nodes],
            heap: BinaryHeap::new(),
        }
    }

    /// Fills `next[n]` with the pipe node n takes towards `dst`, or `NO_PIPE`.
    ///
    /// Among equal keys the lowest pipe id wins. That choice is final when n is popped: every
    /// neighbour that can tie has a key smaller by at least one hop, so it was popped (and
    /// relaxed n) earlier. The result thus depends only on the graph, not on heap order.
    pub fn fill(&mut self, graph: &InGraph, dst: NodeId, next: &mut [PipeId]) {
        self.dist.fill(UNREACHED);
        next.fill(NO_PIPE);
        self.heap.clear();
        self.dist[dst as usize] = (0, 0);
        self.heap.push(Reverse((0, 0, dst)));
        while let Some(Reverse((delay, hops, m))) = self.heap.pop() {
            if (delay, hops) != self.dist[m as usize] {
                continue; // stale entry: m was reached more cheaply since
            }
            // A host may be the first hop's sender but never forwards for others.
            if m != dst && !graph.forwards(m) {
                continue;
            }
            for arc in graph.arcs_into(m) {
                let n = arc.from as usize;
                let key = (delay.saturating_add(arc.weight), hops + 1);
                if key < self.dist[n] {
                    self.dist[n] = key;
                    next[n] = arc.pipe;
                    self.heap.push(Reverse((key.0, key.1, arc.from)));
                } else if key == self.dist[n] && arc.pipe < next[n] {
                    next[n] = arc.pipe;
                }
            }
        }
    }
}
