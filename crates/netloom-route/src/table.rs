//! `Routes`: the next-hop table of every router and multi-homed host towards every router that
//! has hosts and every multi-homed host, its O(1) lookup, path reconstruction and recomputation
//! when pipes go down or come up.

use crate::graph::{InGraph, NO_ROW};
use crate::heap::{fits_u64, Key};
use crate::search::{Search, NO_PIPE};
use netloom_topo::{NodeId, NodeKind, PipeId, Topology};

/// Below this much work (destinations × graph size) one thread is faster than spawning more.
const PARALLEL_WORK: usize = 1 << 20;

/// "Not a host" in `Routes::host_of`.
const NO_HOST: u32 = u32::MAX;

/// Most bytes the tables may take (`Routes::check_size`): a topology that needs more (tens of
/// thousands of multi-homed hosts) is refused instead of aborting on the allocation.
pub const MAX_TABLE_BYTES: u64 = 4 << 30;

/// Routing tables too large to compute.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the routing tables would need about {gib:.1} GiB: {rows} rows (routers and hosts that are \
     not stubs) × {columns} columns (routers with stub hosts and hosts that are not stubs), a \
     stub being a host with one link, to a router; the limit is {max} GiB",
    gib = *bytes as f64 / f64::from(1u32 << 30),
    max = MAX_TABLE_BYTES >> 30
)]
pub struct TablesTooLarge {
    /// Bytes the tables would take.
    pub bytes: u64,
    /// Nodes that would have a row.
    pub rows: usize,
    /// Destinations that would have a column.
    pub columns: usize,
}

/// How a stub host hangs off its router: its one link, not looped, to a router.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Attach {
    pub router: NodeId,
    /// The pipe from the host to its router.
    pub up: PipeId,
    /// The pipe from the router to the host (the same pipe for a shared medium).
    pub down: PipeId,
}

/// Where the routes towards one host are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dest {
    /// Its column in the table: its router's for a stub host, its own otherwise.
    pub column: u32,
    /// Set for a stub host.
    pub attach: Option<Attach>,
}

/// "No route" in `Entries::Narrow`.
const NO_NARROW: u16 = u16::MAX;

/// The table's entries, `c * rows + r` for row r towards column c: the pipe row r takes
/// towards column c.
///
/// With fewer than `NO_NARROW` pipes an entry is two bytes instead of four: the table is read
/// once per packet-hop at random, and a smaller table misses the cache less (the default
/// inet's 3.2 MB become 1.6 MB).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Entries {
    /// Pipe ids that fit 16 bits, or `NO_NARROW`.
    Narrow(Vec<u16>),
    /// Pipe ids, or `NO_PIPE`.
    Wide(Vec<PipeId>),
}

impl Entries {
    /// Whether a topology's entries are `Narrow`.
    fn narrow(topo: &Topology) -> bool {
        topo.pipes.len() < usize::from(NO_NARROW)
    }

    /// The entries of `shape`'s rows and columns for `topo`, all without a route.
    fn new(topo: &Topology, shape: &Shape) -> Entries {
        let len = shape.rows * shape.targets.len();
        if Entries::narrow(topo) {
            Entries::Narrow(vec![NO_NARROW; len])
        } else {
            Entries::Wide(vec![NO_PIPE; len])
        }
    }

    /// The pipe at entry `i`, or `NO_PIPE`.
    #[inline]
    fn pipe(&self, i: usize) -> PipeId {
        match self {
            Entries::Narrow(next) => match next[i] {
                NO_NARROW => NO_PIPE,
                p => PipeId::from(p),
            },
            Entries::Wide(next) => next[i],
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Entries::Narrow(next) => next.is_empty(),
            Entries::Wide(next) => next.is_empty(),
        }
    }

    /// Bytes held.
    fn bytes(&self) -> usize {
        match self {
            Entries::Narrow(next) => next.len() * size_of::<u16>(),
            Entries::Wide(next) => next.len() * size_of::<PipeId>(),
        }
    }
}

/// Shortest-path next hops towards every host.
///
/// Hosts never forward, so a stub host (one link, to a router) is a leaf: routes towards it
/// are the routes towards its router plus its link, and its own routes all start up its link.
/// The table therefore has a row for each router and each other host (the nodes that can be
/// on a route's way), and a column for each router with stub hosts and each other host (the
/// destinations). Distances towards a stub host are those towards its router plus one fixed
/// step, so the chosen pipes (ties: fewer hops, then the lowest pipe id) are exactly those of
/// a table of nodes × hosts, in a fraction of its memory: a star of 1,000,000 hosts has one
/// row and one column. Column c (all rows' next pipes towards it) is contiguous.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Routes {
    nodes: usize,
    pub(crate) rows: usize,
    /// The pipe row r takes towards column c.
    next: Entries,
    /// The row each column searches towards.
    pub(crate) targets: Vec<u32>,
    /// Node id → its row, or `NO_ROW` for a stub host.
    pub(crate) row_of: Vec<u32>,
    /// Node id → position in `Topology::hosts`, or `NO_HOST`.
    host_of: Vec<u32>,
    /// Per host, by position in `Topology::hosts`.
    pub(crate) dests: Vec<Dest>,
    /// Whether each pipe is up, as last computed with (stub hosts' links are read here).
    pub(crate) up: Vec<bool>,
}

/// Whether each pipe is up in its configuration.
fn configured_up(topo: &Topology) -> Vec<bool> {
    topo.pipes.iter().map(|p| p.config.up).collect()
}

impl Routes {
    /// Routes over every pipe that is up in its configuration, by `topo.routing`.
    pub fn compute(topo: &Topology) -> Routes {
        Routes::build(topo, Shape::of(topo), &configured_up(topo))
    }

    /// `compute`, for a topology one was given: refused with the size when its tables would
    /// take more than `MAX_TABLE_BYTES` (see `check_size`), instead of aborting on allocation.
    pub fn try_compute(topo: &Topology) -> Result<Routes, TablesTooLarge> {
        let shape = Shape::of(topo);
        Routes::check(topo, &shape)?;
        Ok(Routes::build(topo, shape, &configured_up(topo)))
    }

    /// Routes over the pipes that are up now: pipe p is usable only if `up[p]`. The caller owns
    /// the pipes' state (the engine's pipes, in a run); the table only reflects it. Panics unless
    /// there is one entry per pipe.
    pub fn compute_with(topo: &Topology, up: &[bool]) -> Routes {
        Routes::build(topo, Shape::of(topo), up)
    }

    /// The tables of `shape` (made from `topo`) over the pipes `up`.
    fn build(topo: &Topology, shape: Shape, up: &[bool]) -> Routes {
        let mut routes = Routes {
            nodes: topo.nodes.len(),
            rows: shape.rows,
            next: Entries::new(topo, &shape),
            targets: shape.targets,
            row_of: shape.row_of,
            host_of: shape.host_of,
            dests: shape.dests,
            up: Vec::new(),
        };
        routes.recompute(topo, up);
        routes
    }

    /// The bytes `compute` would allocate for `topo`'s tables, without allocating them
    /// (`memory_bytes` after).
    pub fn estimate_bytes(topo: &Topology) -> u64 {
        Routes::estimate(topo, &Shape::of(topo)).0
    }

    /// Refuses a topology whose tables would take more than `MAX_TABLE_BYTES`, before anything
    /// is allocated for them; otherwise returns their size in bytes. Callers that route a file
    /// they were given check this first.
    pub fn check_size(topo: &Topology) -> Result<u64, TablesTooLarge> {
        Routes::check(topo, &Shape::of(topo))
    }

    /// `check_size` for the tables of `shape`, made from `topo`.
    fn check(topo: &Topology, shape: &Shape) -> Result<u64, TablesTooLarge> {
        let (bytes, rows, columns) = Routes::estimate(topo, shape);
        if bytes > MAX_TABLE_BYTES {
            return Err(TablesTooLarge {
                bytes,
                rows,
                columns,
            });
        }
        Ok(bytes)
    }

    /// The bytes, rows and columns of the tables of `shape`, made from `topo`.
    fn estimate(topo: &Topology, shape: &Shape) -> (u64, usize, usize) {
        let (rows, columns) = (shape.rows, shape.targets.len());
        let entry = if Entries::narrow(topo) {
            size_of::<u16>()
        } else {
            size_of::<PipeId>()
        };
        let bytes = (rows as u64 * columns as u64) * entry as u64
            + columns as u64 * size_of::<u32>() as u64
            + Routes::fixed_bytes(topo.nodes.len(), topo.hosts.len(), topo.pipes.len()) as u64;
        (bytes, rows, columns)
    }

    /// Recomputes every column after pipes went down or came up (`up` as in `compute_with`).
    /// The whole table is recomputed: a failure can change routes towards any host, and a full
    /// pass is fast enough (about 50 ms for the default inet, under 2 s for a 100,000-link one,
    /// in release on 2 cores) that tracking which columns a pipe affects is not worth its
    /// complexity.
    pub fn recompute(&mut self, topo: &Topology, up: &[bool]) {
        assert_eq!(up.len(), topo.pipes.len(), "one state per pipe");
        self.up = up.to_vec();
        if self.next.is_empty() {
            return;
        }
        let graph = InGraph::build(topo, up, &self.row_of);
        let work = self.targets.len() * (self.rows + graph.arc_count());
        let threads = if work < PARALLEL_WORK {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        };
        if fits_u64(graph.max_weight(), self.rows) {
            self.fill_columns::<u64>(&graph, threads);
        } else {
            self.fill_columns::<u128>(&graph, threads);
        }
    }

    /// The pipe to take at node `at` towards the host at position `dst_host` of
    /// `Topology::hosts`; `None` at the destination itself or when it is unreachable.
    // Inlined into the engine's per-hop path, where the call cost a tenth of the lookup.
    #[inline(always)]
    pub fn next_pipe(&self, at: NodeId, dst_host: u32) -> Option<PipeId> {
        let dest = self.dests[dst_host as usize];
        if self.host_of[at as usize] == dst_host {
            return None;
        }
        // A stub host is reached from its router, over its link.
        if let Some(to) = dest.attach {
            if !self.up[to.down as usize] {
                return None;
            }
            if at == to.router {
                return Some(to.down);
            }
        }
        let row = self.row_of[at as usize];
        if row != NO_ROW {
            return self.table(dest.column, row);
        }
        // A stub host sends everything up its link, if its router can take it further.
        let from = self.dests[self.host_of[at as usize] as usize]
            .attach
            .expect("a node without a row is a stub host");
        let onward = dest.attach.is_some_and(|to| to.router == from.router)
            || self
                .table(dest.column, self.row_of[from.router as usize])
                .is_some();
        (self.up[from.up as usize] && onward).then_some(from.up)
    }

    /// The table's pipe at `row` towards column `column`.
    #[inline]
    pub(crate) fn table(&self, column: u32, row: u32) -> Option<PipeId> {
        let p = self.next.pipe(column as usize * self.rows + row as usize);
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
        self.next.bytes()
            + self.targets.len() * size_of::<u32>()
            + Routes::fixed_bytes(self.nodes, self.dests.len(), self.up.len())
    }

    /// Bytes of everything but the table and its targets: per node, host and pipe.
    fn fixed_bytes(nodes: usize, hosts: usize, pipes: usize) -> usize {
        nodes * 2 * size_of::<u32>() + hosts * size_of::<Dest>() + pipes * size_of::<bool>()
    }

    /// Fills the columns using `threads` threads. Each column depends only on the graph, so the
    /// result is the same however the destinations are split.
    fn fill_columns<K: Key>(&mut self, graph: &InGraph, threads: usize) {
        let rows = self.rows;
        let targets = &self.targets;
        let per_thread = targets.len().div_ceil(threads.clamp(1, targets.len())) * rows;
        match &mut self.next {
            Entries::Wide(next) => split(next, per_thread, |start, columns| {
                let mut search = Search::<K>::new(rows);
                for (i, column) in columns.chunks_mut(rows).enumerate() {
                    search.fill(graph, targets[start / rows + i], column);
                }
            }),
            Entries::Narrow(narrow) => split(narrow, per_thread, |start, columns| {
                let mut search = Search::<K>::new(rows);
                let mut next = vec![NO_PIPE; rows];
                for (i, column) in columns.chunks_mut(rows).enumerate() {
                    search.fill(graph, targets[start / rows + i], &mut next);
                    for (entry, &p) in column.iter_mut().zip(&next) {
                        *entry = if p == NO_PIPE { NO_NARROW } else { p as u16 };
                    }
                }
            }),
        }
    }
}

/// Runs `fill(start, part)` on `table` cut into parts of `per` entries, one thread each when
/// there is more than one part; `start` is the part's first entry.
fn split<T: Send>(table: &mut [T], per: usize, fill: impl Fn(usize, &mut [T]) + Sync) {
    if per >= table.len() {
        fill(0, table);
        return;
    }
    std::thread::scope(|s| {
        for (t, part) in table.chunks_mut(per).enumerate() {
            let fill = &fill;
            s.spawn(move || fill(t * per, part));
        }
    });
}

/// The table's shape for a topology: which nodes are rows, which columns there are and where
/// each host's routes are. Depends on the links only, not on which pipes are up, so it holds
/// across recomputations.
struct Shape {
    rows: usize,
    targets: Vec<u32>,
    row_of: Vec<u32>,
    host_of: Vec<u32>,
    dests: Vec<Dest>,
}

impl Shape {
    fn of(topo: &Topology) -> Shape {
        let n = topo.nodes.len();
        let mut host_of = vec![NO_HOST; n];
        for (d, &h) in topo.hosts.iter().enumerate() {
            host_of[h as usize] = d as u32;
        }
        // A host's links (self-loops carry nothing): a stub has exactly one, to a router.
        let mut degree = vec![0u32; n];
        let mut only: Vec<Option<Attach>> = vec![None; n];
        for l in topo.links.iter().filter(|l| l.a != l.b) {
            for (me, other, up, down) in [(l.a, l.b, l.ab, l.ba), (l.b, l.a, l.ba, l.ab)] {
                if host_of[me as usize] == NO_HOST {
                    continue;
                }
                degree[me as usize] += 1;
                only[me as usize] = (topo.node(other).kind == NodeKind::Router).then_some(Attach {
                    router: other,
                    up,
                    down,
                });
            }
        }
        let attach = |node: NodeId| only[node as usize].filter(|_| degree[node as usize] == 1);
        let mut row_of = vec![NO_ROW; n];
        let mut rows = 0u32;
        for node in 0..n as NodeId {
            if attach(node).is_none() {
                row_of[node as usize] = rows;
                rows += 1;
            }
        }
        // Columns in host order: a stub host's router's, on its first stub host, or its own.
        let mut column_of = vec![u32::MAX; n];
        let mut targets = Vec::new();
        let dests = topo
            .hosts
            .iter()
            .map(|&h| {
                let attach = attach(h);
                let target = attach.map_or(h, |a| a.router);
                if column_of[target as usize] == u32::MAX {
                    column_of[target as usize] = targets.len() as u32;
                    targets.push(row_of[target as usize]);
                }
                Dest {
                    column: column_of[target as usize],
                    attach,
                }
            })
            .collect();
        Shape {
            rows: rows as usize,
            targets,
            row_of,
            host_of,
            dests,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use netloom_link::PipeConfig;
    use netloom_time::{Duration, Rate};
    use netloom_topo::RoutingMetric;

    fn pipe(ms: u64) -> PipeConfig {
        PipeConfig::new(Rate::bps(1_000_000), Duration::from_millis(ms))
    }

    /// A grid of routers with a stub host on every third, two on some, and the cases that are
    /// not stubs: multi-homed hosts, a host behind another host, a host on a shared medium, a
    /// lone host. Several links are down, stub links among them, one in one direction only.
    pub(crate) fn grid(metric: RoutingMetric, side: u32) -> Topology {
        let mut topo = Topology::new("grid", metric);
        for i in 0..side * side {
            topo.add_node(format!("r{i}"), NodeKind::Router, None);
        }
        for i in 0..side * side {
            if i % side + 1 < side {
                topo.add_link(i, i + 1, None, pipe(1 + (i % 3) as u64), Some(pipe(1)));
            }
            if i + side < side * side {
                topo.add_link(i, i + side, None, pipe(1), Some(pipe(2)));
            }
            for k in 0..(i % 3 == 0) as u32 + (i % 7 == 0) as u32 {
                let h = topo.add_node(format!("h{i}-{k}"), NodeKind::Host, None);
                let mut down = pipe(1);
                // Some stub links down: both ways, or only towards the host.
                down.up = i % 11 != 5;
                let mut up = down;
                up.up = i % 22 != 5;
                topo.add_link(h, i, None, up, Some(down));
            }
        }
        let mut cut = pipe(1);
        cut.up = false;
        topo.add_link(0, side + 1, None, cut, Some(pipe(1)));
        let multi = topo.add_node("multi", NodeKind::Host, None);
        topo.add_link(multi, 1, None, pipe(1), Some(pipe(1)));
        topo.add_link(multi, side * side - 1, None, pipe(1), Some(pipe(3)));
        let front = topo.add_node("front", NodeKind::Host, None);
        let behind = topo.add_node("behind", NodeKind::Host, None);
        topo.add_link(front, 2, None, pipe(2), Some(pipe(2)));
        topo.add_link(behind, front, None, pipe(1), Some(pipe(1)));
        let radio = topo.add_node("radio", NodeKind::Host, None);
        topo.add_link(radio, side, None, pipe(2), None);
        let radio_down = topo.add_node("radio-down", NodeKind::Host, None);
        let mut off = pipe(2);
        off.up = false;
        topo.add_link(side * 2, radio_down, None, off, None);
        topo.add_node("lone", NodeKind::Host, None);
        topo
    }

    /// The tables before stub hosts were folded into their routers: every node towards every
    /// host, one reverse search per host over the whole graph.
    fn full_table(topo: &Topology, up: &[bool]) -> Vec<Vec<Option<PipeId>>> {
        let identity: Vec<u32> = (0..topo.nodes.len() as u32).collect();
        let graph = InGraph::build(topo, up, &identity);
        let mut search = Search::<u128>::new(topo.nodes.len());
        let mut column = vec![NO_PIPE; topo.nodes.len()];
        topo.hosts
            .iter()
            .map(|&h| {
                search.fill(&graph, h, &mut column);
                column
                    .iter()
                    .map(|&p| (p != NO_PIPE).then_some(p))
                    .collect()
            })
            .collect()
    }

    fn assert_same_as_full_table(topo: &Topology, routes: &Routes, up: &[bool], label: &str) {
        let full = full_table(topo, up);
        for (d, column) in full.iter().enumerate() {
            for (n, &want) in column.iter().enumerate() {
                assert_eq!(
                    routes.next_pipe(n as NodeId, d as u32),
                    want,
                    "{label}: at {} towards {}",
                    topo.node(n as NodeId).name,
                    topo.node(topo.hosts[d]).name
                );
            }
        }
    }

    #[test]
    fn folding_stub_hosts_into_their_routers_keeps_every_route() {
        for metric in [RoutingMetric::Delay, RoutingMetric::Hops] {
            let topo = grid(metric, 12);
            let routes = Routes::compute(&topo);
            let up: Vec<bool> = topo.pipes.iter().map(|p| p.config.up).collect();
            assert_same_as_full_table(&topo, &routes, &up, &format!("{metric:?}"));
            // Only routers, the non-stub hosts and the stubs' routers are rows and columns.
            let stub_routers = (0..144).filter(|i| i % 3 == 0 || i % 7 == 0).count();
            assert_eq!(routes.rows, 144 + 4, "{metric:?}");
            assert_eq!(routes.targets.len(), stub_routers + 4, "{metric:?}");
            assert!(routes.memory_bytes() < topo.nodes.len() * topo.hosts.len() * 4);
            assert!(matches!(routes.next, Entries::Narrow(_)), "{metric:?}");
            // Links going down and coming back, a stub link among them.
            let mut up = up;
            let mut again = routes.clone();
            for link in [3, 40, 200, topo.links.len() - 6] {
                let l = &topo.links[link];
                (up[l.ab as usize], up[l.ba as usize]) = (false, false);
                again.recompute(&topo, &up);
                assert_same_as_full_table(&topo, &again, &up, &format!("{metric:?} link {link}"));
            }
            up = topo.pipes.iter().map(|p| p.config.up).collect();
            again.recompute(&topo, &up);
            assert_eq!(again, routes, "{metric:?}: all back up");
        }
    }

    #[test]
    fn a_star_has_one_row_and_one_column() {
        let mut topo = Topology::new("star", RoutingMetric::Delay);
        let hub = topo.add_node("hub", NodeKind::Router, None);
        for i in 0..1000 {
            let h = topo.add_node(format!("h{i}"), NodeKind::Host, None);
            topo.add_link(h, hub, None, pipe(1), Some(pipe(1)));
        }
        let routes = Routes::compute(&topo);
        assert_eq!((routes.rows, routes.targets.len()), (1, 1));
        assert_eq!(routes.memory_bytes() as u64, Routes::estimate_bytes(&topo));
        let up: Vec<bool> = topo.pipes.iter().map(|p| p.config.up).collect();
        assert_same_as_full_table(&topo, &routes, &up, "star");
    }

    #[test]
    fn more_pipes_than_sixteen_bits_number_keep_wide_entries() {
        // The grid, with self-loops (which carry no route) on one router to pass 65,535 pipes.
        let topo = grid(RoutingMetric::Delay, 12);
        let narrow_pipes = topo.pipes.len();
        for (loops, narrow) in [(0, true), ((65_535 - narrow_pipes) / 2 + 1, false)] {
            let mut topo = topo.clone();
            for _ in 0..loops {
                topo.add_link(7, 7, None, pipe(1), Some(pipe(1)));
            }
            let routes = Routes::compute(&topo);
            assert_eq!(
                matches!(routes.next, Entries::Narrow(_)),
                narrow,
                "{loops} loops"
            );
            assert_eq!(routes.memory_bytes() as u64, Routes::estimate_bytes(&topo));
            let up: Vec<bool> = topo.pipes.iter().map(|p| p.config.up).collect();
            assert_same_as_full_table(&topo, &routes, &up, &format!("{loops} loops"));
        }
    }

    #[test]
    fn tables_are_independent_of_thread_count_and_key_width() {
        let topo = grid(RoutingMetric::Delay, 12);
        let one = Routes::compute(&topo);
        let up: Vec<bool> = topo.pipes.iter().map(|p| p.config.up).collect();
        let graph = InGraph::build(&topo, &up, &one.row_of);
        for threads in [2, 3, 7, 1000] {
            let mut split = one.clone();
            split.next = Entries::new(&topo, &Shape::of(&topo));
            split.fill_columns::<u64>(&graph, threads);
            assert_eq!(split, one, "{threads} threads");
        }
        // The wide packing, used when delays are too large for 64 bits, routes the same.
        let mut wide = one.clone();
        wide.next = Entries::new(&topo, &Shape::of(&topo));
        wide.fill_columns::<u128>(&graph, 1);
        assert_eq!(wide, one);
    }
}
