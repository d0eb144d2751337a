//! The shortest-path search: one reverse Dijkstra per destination (a row of the graph), writing
//! that destination's next-hop column. Buffers are reused across destinations.

use crate::graph::InGraph;
use crate::heap::{Key, RadixHeap};
use netloom_topo::PipeId;

/// "No route" in a next-hop table.
pub(crate) const NO_PIPE: PipeId = PipeId::MAX;

/// Reusable state of one search. Distances to the destination are packed keys (see `Key`):
/// with the delay metric the sum of delays decides and hop count breaks ties; with the hop
/// metric every pipe's delay counts as 0.
pub(crate) struct Search<K: Key> {
    dist: Vec<K>,
    heap: RadixHeap<K>,
}

impl<K: Key> Search<K> {
    pub fn new(rows: usize) -> Search<K> {
        Search {
            dist: vec![K::MAX; rows],
            heap: RadixHeap::new(),
        }
    }

    /// Fills `next[r]` with the pipe row r takes towards row `dst`, or `NO_PIPE`.
    ///
    /// Among equal keys the lowest pipe id wins. That choice is final when r is popped: every
    /// neighbour that can tie has a key smaller by at least one hop, so it was popped (and
    /// relaxed r) earlier. The result thus depends only on the graph, not on heap order.
    pub fn fill(&mut self, graph: &InGraph, dst: u32, next: &mut [PipeId]) {
        let nodes = self.dist.len();
        self.dist.fill(K::MAX);
        next.fill(NO_PIPE);
        self.heap.clear();
        self.dist[dst as usize] = K::ZERO;
        self.heap.push(K::ZERO, dst);
        while let Some((key, m)) = self.heap.pop() {
            if key != self.dist[m as usize] {
                continue; // stale entry: m was reached more cheaply since
            }
            // A host may be the first hop's sender but never forwards for others.
            if m != dst && !graph.forwards(m) {
                continue;
            }
            for arc in graph.arcs_into(m) {
                let n = arc.from as usize;
                let cand = key.plus(K::step(arc.weight, nodes));
                if cand < self.dist[n] {
                    self.dist[n] = cand;
                    next[n] = arc.pipe;
                    self.heap.push(cand, arc.from);
                } else if cand == self.dist[n] && arc.pipe < next[n] {
                    next[n] = arc.pipe;
                }
            }
        }
    }
}
