//! `Routes`: the next-hop table of every node towards every host, its O(1) lookup, path
//! reconstruction and recomputation when pipes go down or come up.

use crate::graph::InGraph;
use crate::heap::{fits_u64, Key};
use crate::search::{Search, NO_PIPE};
use netloom_topo::{NodeId, PipeId, Topology};

/// Below this much work (destinations × graph size) one thread is faster than spawning more.
const PARALLEL_WORK: usize = 1 << 20;

/// "Not a host" in `Routes::host_of`.
const NO_HOST: u32 = u32::MAX;

/// Shortest-path next hops towards every host.
///
/// Memory is one `PipeId` per (destination host, node): `nodes × hosts` entries, never a path
/// per pair. Column d (all nodes' next pipes towards host d) is contiguous.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Routes {
    nodes: usize,
    /// `next[d * nodes + n]`: the pipe node n takes towards host d, or `NO_PIPE`.
    next: Vec<PipeId>,
    /// Node id → position in `Topology::hosts`, or `NO_HOST`.
    host_of: Vec<u32>,
}

impl Routes {
    /// Routes over every pipe that is up in its configuration, by `topo.routing`.
    pub fn compute(topo: &Topology) -> Routes {
        let up: Vec<bool> = topo.pipes.iter().map(|p| p.config.up).collect();
        Routes::compute_with(topo, &up)
    }

    /// Routes over the pipes that are up now: pipe p is usable only if `up[p]`. The caller owns
    /// the pipes' state (the engine's pipes, in a run); the table only reflects it. Panics unless
    /// there is one entry per pipe.
    pub fn compute_with(topo: &Topology, up: &[bool]) -> Routes {
        let mut host_of = vec![NO_HOST; topo.nodes.len()];
        for (d, &h) in topo.hosts.iter().enumerate() {
            host_of[h as usize] = d as u32;
        }
        let mut routes = Routes {
            nodes: topo.nodes.len(),
            next: vec![NO_PIPE; topo.nodes.len() * topo.hosts.len()],
            host_of,
        };
        routes.recompute(topo, up);
        routes
    }

    /// Recomputes every column after pipes went down or came up (`up` as in `compute_with`).
    /// The whole table is recomputed: a failure can change routes towards any host, and a full
    /// pass is fast enough (about 50 ms for the default inet, under 2 s for a 100,000-link one,
    /// in release on 2 cores) that tracking which columns a pipe affects is not worth its
    /// complexity.
    pub fn recompute(&mut self, topo: &Topology, up: &[bool]) {
        assert_eq!(up.len(), topo.pipes.len(), "one state per pipe");
        if self.next.is_empty() {
            return;
        }
        let graph = InGraph::build(topo, up);
        let work = topo.hosts.len() * (self.nodes + graph.arc_count());
        let threads = if work < PARALLEL_WORK {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        };
        if fits_u64(graph.max_weight(), self.nodes) {
            self.fill_columns::<u64>(&graph, &topo.hosts, threads);
        } else {
            self.fill_columns::<u128>(&graph, &topo.hosts, threads);
        }
    }

    /// The pipe to take at node `at` towards the host at position `dst_host` of
    /// `Topology::hosts`; `None` at the destination itself or when it is unreachable.
    #[inline]
    pub fn next_pipe(&self, at: NodeId, dst_host: u32) -> Option<PipeId> {
        let p = self.next[dst_host as usize * self.nodes + at as usize];
        (p != NO_PIPE).then_some(p)
    }

    /// The position of `node` in `Topology::hosts`, if it is a host.
    #[inline]
    pub fn host_index(&self, node: NodeId) -> Option<u32> {
        let d = self.host_of[node as usize];
        (d != NO_HOST).then_some(d)
    }

    /// The pipes from `src` to the host `dst`: empty if they are the same node, `None` if `dst`
    /// is not a host or cannot be reached.
    pub fn path(&self, topo: &Topology, src: NodeId, dst: NodeId) -> Option<Vec<PipeId>> {
        let d = self.host_index(dst)?;
        let mut path = Vec::new();
        let mut at = src;
        while at != dst {
            let pipe = self.next_pipe(at, d)?;
            path.push(pipe);
            at = topo.far_end(pipe, at);
            assert!(path.len() <= self.nodes, "routing loop towards {dst}");
        }
        Some(path)
    }

    /// Bytes held by the tables.
    pub fn memory_bytes(&self) -> usize {
        self.next.len() * size_of::<PipeId>() + self.host_of.len() * size_of::<u32>()
    }

    /// Fills the columns of `hosts` using `threads` threads. Each column depends only on the
    /// graph, so the result is the same however the destinations are split.
    fn fill_columns<K: Key>(&mut self, graph: &InGraph, hosts: &[NodeId], threads: usize) {
        let nodes = self.nodes;
        let per_thread = hosts.len().div_ceil(threads.clamp(1, hosts.len()));
        let fill_range = |first: usize, columns: &mut [PipeId]| {
            let mut search = Search::<K>::new(nodes);
            for (i, column) in columns.chunks_mut(nodes).enumerate() {
                search.fill(graph, hosts[first + i], column);
            }
        };
        if per_thread == hosts.len() {
            fill_range(0, &mut self.next);
            return;
        }
        std::thread::scope(|s| {
            for (t, columns) in self.next.chunks_mut(per_thread * nodes).enumerate() {
                let fill_range = &fill_range;
                s.spawn(move || fill_range(t * per_thread, columns));
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netloom_link::PipeConfig;
    use netloom_time::{Duration, Rate};
    use netloom_topo::{NodeKind, RoutingMetric};

    #[test]
    fn table_is_nodes_by_hosts_and_independent_of_thread_count() {
        // A grid of routers with a host on every third one: many equal-cost paths.
        let mut topo = Topology::new("grid", RoutingMetric::Delay);
        let side = 12;
        for i in 0..side * side {
            topo.add_node(format!("r{i}"), NodeKind::Router, None);
        }
        let pipe = |ms| PipeConfig::new(Rate::bps(1_000_000), Duration::from_millis(ms));
        for i in 0..side * side {
            if i % side + 1 < side {
                topo.add_link(i, i + 1, None, pipe(1 + (i % 3) as u64), Some(pipe(1)));
            }
            if i + side < side * side {
                topo.add_link(i, i + side, None, pipe(1), Some(pipe(2)));
            }
            if i % 3 == 0 {
                let h = topo.add_node(format!("h{i}"), NodeKind::Host, None);
                topo.add_link(h, i, None, pipe(1), Some(pipe(1)));
            }
        }
        let one = Routes::compute(&topo);
        assert_eq!(one.next.len(), topo.nodes.len() * topo.hosts.len());
        let up: Vec<bool> = topo.pipes.iter().map(|p| p.config.up).collect();
        let graph = InGraph::build(&topo, &up);
        for threads in [2, 3, 7, 1000] {
            let mut split = one.clone();
            split.next.fill(NO_PIPE);
            split.fill_columns::<u64>(&graph, &topo.hosts, threads);
            assert_eq!(split, one, "{threads} threads");
        }
        // The wide packing, used when delays are too large for 64 bits, routes the same.
        let mut wide = one.clone();
        wide.next.fill(NO_PIPE);
        wide.fill_columns::<u128>(&graph, &topo.hosts, 1);
        assert_eq!(wide, one);
    }
}
