//! The weightings of the flow graph: the paper's conservative static weighting (Figure 6),
//! uniform, and one from an explicit traffic pattern. Observed counts are in `observation`.

use crate::graph::FlowGraph;
use netloom_route::Routes;
use netloom_topo::{NodeId, NodeKind, PipeId, Topology};

/// One flow of an explicit traffic pattern, as the partitioner needs to know it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Demand {
    /// The node that sends the data packets (a host).
    pub src: NodeId,
    /// The node they go to, which sends the ACKs when `acked`.
    pub dst: NodeId,
    /// The most the flow sends, in bit/s; `None` for an elastic (TCP-like) flow that takes what
    /// the network gives it.
    pub max_bps: Option<f64>,
    /// Size of its data packets on the wire.
    pub packet_bytes: u32,
    /// Whether each data packet is answered by an ACK from `dst` to `src`.
    pub acked: bool,
}

impl FlowGraph {
    /// Every pipe costs 1 and every edge carries 1; a pipe leaving a host is entered by 1.
    pub fn uniform(topo: &Topology) -> FlowGraph {
        let mut g = FlowGraph::structure(topo);
        g.flows_mut().iter_mut().for_each(|w| *w = 1.0);
        g.load.iter_mut().for_each(|w| *w = 1.0);
        for (node, out) in topo.adjacency().iter().enumerate() {
            if topo.nodes[node].kind == NodeKind::Host {
                for &(p, _) in out {
                    g.entry[p as usize] = 1.0;
                }
            }
        }
        g
    }

    /// The conservative static weighting of ModelNet (§5.3, Figure 6), in bit/s: every host talks
    /// to every other over its shortest path at the path's bottleneck bandwidth; each pipe gets a
    /// partial flow PF (per source, the largest bottleneck of the paths through it); each pair of
    /// consecutive pipes e1 → e2 accumulates PF\[e2\], never beyond e2's bandwidth; a vertex
    /// weighs the sum of its edges. Entry flows accumulate the same way at each path's first pipe.
    pub fn conservative(topo: &Topology, routes: &Routes) -> FlowGraph {
        let mut g = FlowGraph::structure(topo);
        let bw: Vec<f64> = topo
            .pipes
            .iter()
            .map(|p| p.config.rate.as_bps() as f64)
            .collect();
        let mut partial = vec![0.0f64; topo.pipes.len()];
        let mut paths = Vec::with_capacity(topo.hosts.len());
        for &src in &topo.hosts {
            paths.clear();
            paths.extend(
                topo.hosts
                    .iter()
                    .filter(|&&dst| dst != src)
                    .filter_map(|&dst| routes.path(topo, src, dst)),
            );
            for path in &paths {
                let bottleneck = path
                    .iter()
                    .map(|&e| bw[e as usize])
                    .fold(f64::MAX, f64::min);
                for &e in path {
                    partial[e as usize] = partial[e as usize].max(bottleneck);
                }
            }
            for path in &paths {
                let Some(&e1) = path.first() else { continue };
                let entry = &mut g.entry[e1 as usize];
                *entry += partial[e1 as usize].min(bw[e1 as usize] - *entry);
                for w in path.windows(2) {
                    let (e2, cap) = (w[1], bw[w[1] as usize]);
                    let f = g.flow_mut(w[0], e2).expect("routes follow the flow graph");
                    *f += partial[e2 as usize].min(cap - *f);
                }
            }
            for e in paths.iter().flatten() {
                partial[*e as usize] = 0.0;
            }
        }
        g.load_from_incident_flows();
        g
    }

    /// Weights from explicit flows, in packets per second: each flow's rate is its max-min fair
    /// share (elastic flows fill what is left, capped flows take at most their cap); its data
    /// packets load every pipe of its path and enter at the first, its ACKs likewise backwards.
    /// Flows without a route are left out.
    pub fn from_demands(topo: &Topology, routes: &Routes, demands: &[Demand]) -> FlowGraph {
        let mut g = FlowGraph::structure(topo);
        let routed: Vec<(&Demand, Vec<PipeId>)> = demands
            .iter()
            .filter_map(|d| Some((d, routes.path(topo, d.src, d.dst)?)))
            .filter(|(_, path)| !path.is_empty())
            .collect();
        let rates = max_min_rates(topo, &routed);
        for ((d, path), rate) in routed.iter().zip(rates) {
            let pps = rate / (8.0 * f64::from(d.packet_bytes.max(1)));
            g.add_path(path, pps);
            if d.acked {
                if let Some(back) = routes.path(topo, d.dst, d.src) {
                    g.add_path(&back, pps);
                }
            }
        }
        g
    }

    /// Adds `rate` along `path`: it enters at the first pipe and loads every pipe and hop.
    fn add_path(&mut self, path: &[PipeId], rate: f64) {
        let Some(&first) = path.first() else { return };
        self.entry[first as usize] += rate;
        for &p in path {
            self.load[p as usize] += rate;
        }
        for w in path.windows(2) {
            *self
                .flow_mut(w[0], w[1])
                .expect("routes follow the flow graph") += rate;
        }
    }
}

/// Max-min fair rates (bit/s) of `flows` over the pipes' bandwidths, by progressive filling:
/// all unfrozen flows grow together until a pipe fills or a flow reaches its cap.
fn max_min_rates(topo: &Topology, flows: &[(&Demand, Vec<PipeId>)]) -> Vec<f64> {
    let mut spare: Vec<f64> = topo
        .pipes
        .iter()
        .map(|p| p.config.rate.as_bps() as f64)
        .collect();
    let mut rate = vec![0.0; flows.len()];
    let mut frozen = vec![false; flows.len()];
    let mut users = vec![0usize; spare.len()];
    loop {
        users.iter_mut().for_each(|u| *u = 0);
        for (i, (_, path)) in flows.iter().enumerate() {
            if !frozen[i] {
                path.iter().for_each(|&p| users[p as usize] += 1);
            }
        }
        let pipe_step = (0..spare.len())
            .filter(|&p| users[p] > 0)
            .map(|p| spare[p] / users[p] as f64)
            .fold(f64::INFINITY, f64::min);
        let cap_step = flows
            .iter()
            .enumerate()
            .filter(|&(i, _)| !frozen[i])
            .filter_map(|(i, (d, _))| d.max_bps.map(|m| m - rate[i]))
            .fold(f64::INFINITY, f64::min);
        let step = pipe_step.min(cap_step);
        if !step.is_finite() {
            return rate;
        }
        for (i, (_, path)) in flows.iter().enumerate() {
            if frozen[i] {
                continue;
            }
            rate[i] += step;
            path.iter().for_each(|&p| spare[p as usize] -= step);
        }
        // Freeze flows at their cap or crossing a full pipe (relative tolerance for rounding).
        for (i, (d, path)) in flows.iter().enumerate() {
            let full = |p: &PipeId| {
                spare[*p as usize] <= 1e-9 * topo.pipes[*p as usize].config.rate.as_bps() as f64
            };
            if !frozen[i]
                && (d.max_bps.is_some_and(|m| rate[i] >= m * (1.0 - 1e-12))
                    || path.iter().any(full))
            {
                frozen[i] = true;
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use netloom_link::PipeConfig;
    use netloom_time::{Duration, Rate};
    use netloom_topo::RoutingMetric;

    pub fn pipe(mbit: u64) -> PipeConfig {
        PipeConfig::new(Rate::bps(mbit * 1_000_000), Duration::from_millis(1))
    }

    /// h1 - r1 - … - r`routers` - h2, every link 10 Mbit/s.
    pub fn chain(routers: u32) -> Topology {
        let mut t = Topology::new("chain", RoutingMetric::Hops);
        let h1 = t.add_node("h1", NodeKind::Host, None);
        let r: Vec<_> = (1..=routers)
            .map(|i| t.add_node(format!("r{i}"), NodeKind::Router, None))
            .collect();
        let h2 = t.add_node("h2", NodeKind::Host, None);
        t.add_link(h1, r[0], None, pipe(10), Some(pipe(10)));
        for w in r.windows(2) {
            t.add_link(w[0], w[1], None, pipe(10), Some(pipe(10)));
        }
        t.add_link(r[routers as usize - 1], h2, None, pipe(10), Some(pipe(10)));
        t
    }

    #[test]
    fn conservative_weights_follow_figure_6() {
        // h1, h2 on r1; h3 on r2; r1 - r2 at 100 Mbit/s, host links 10 Mbit/s.
        let mut t = Topology::new("fig6", RoutingMetric::Hops);
        let h: Vec<_> = (1..=3)
            .map(|i| t.add_node(format!("h{i}"), NodeKind::Host, None))
            .collect();
        let r1 = t.add_node("r1", NodeKind::Router, None);
        let r2 = t.add_node("r2", NodeKind::Router, None);
        t.add_link(h[0], r1, None, pipe(10), Some(pipe(10))); // 0, 1
        t.add_link(h[1], r1, None, pipe(10), Some(pipe(10))); // 2, 3
        t.add_link(r1, r2, None, pipe(100), Some(pipe(100))); // 4, 5
        t.add_link(h[2], r2, None, pipe(10), Some(pipe(10))); // 6, 7
        let g = FlowGraph::conservative(&t, &Routes::compute(&t));
        let flow = |p, q| g.successors(p).find(|&(n, _)| n == q).unwrap().1;
        let m = 1e6;
        // h1's paths to h2 and h3 both start on pipe 0 (10 Mbit/s): it saturates at 10.
        assert_eq!(g.entry[0], 10.0 * m);
        // h1 → h3 and h2 → h3 each put their 10 Mbit/s bottleneck on r1 → r2.
        assert_eq!(flow(0, 4), 10.0 * m);
        assert_eq!(flow(2, 4), 10.0 * m);
        // Into h3's 10 Mbit/s pipe from r1 → r2: 10 + 10 capped at 10.
        assert_eq!(flow(4, 7), 10.0 * m);
        assert_eq!(flow(0, 3), 10.0 * m);
        // A vertex weighs the sum of its edges: r1 → r2 has 0→4, 2→4 in and 4→7 out.
        assert_eq!(g.load[4], 30.0 * m);
    }

    #[test]
    fn demands_share_a_bottleneck_max_min_fairly() {
        // Three flows over a 10 Mbit/s chain: one capped at 2 Mbit/s, two elastic get 4 each.
        let t = chain(2);
        let (h1, h2) = (t.hosts[0], t.hosts[1]);
        let d = |max| Demand {
            src: h1,
            dst: h2,
            max_bps: max,
            packet_bytes: 1000,
            acked: true,
        };
        let demands = [d(Some(2e6)), d(None), d(None)];
        let g = FlowGraph::from_demands(&t, &Routes::compute(&t), &demands);
        // 10 Mbit/s of 1000-byte packets is 1250 packets/s, entering at pipe 0, ACKs at pipe 5.
        assert!((g.entry[0] - 1250.0).abs() < 1e-6, "{}", g.entry[0]);
        assert!((g.entry[5] - 1250.0).abs() < 1e-6);
        assert!((g.load[2] - 1250.0).abs() < 1e-6);
        let two_four: f64 = g.successors(2).map(|(_, w)| w).sum();
        assert!((two_four - 1250.0).abs() < 1e-6);
    }
}
