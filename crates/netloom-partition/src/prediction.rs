//! ModelNet's capacity model (§5.1) fed with this machine's measured costs, per worker of a live
//! run: from a flow graph weighted in packets per second and an assignment of its pipes to
//! workers, each worker's packet-hops, TUN reads and writes and hand-offs per second, the CPU
//! they take, the lateness to expect, and what saturates first. docs/calibrate.md derives it.

use crate::assignment::Assignment;
use crate::evaluation::Evaluation;
use crate::graph::FlowGraph;
use netloom_topo::PipeId;
use serde::Serialize;

/// What one worker's CPU spends per unit of work, ns (as `netloom calibrate` measures them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorkerCosts {
    /// One packet-hop in the engine, c_h.
    pub hop_ns: f64,
    /// Reading one packet from a host's TUN device: a packet entering the emulation.
    pub tun_read_ns: f64,
    /// Writing one packet into a host's TUN device: a packet leaving it.
    pub tun_write_ns: f64,
    /// Taking in one packet from another worker: a cross-core transition.
    pub handoff_ns: f64,
}

/// How late the precision mode's timer finds a deadline on an idle worker, ns.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TimerLateness {
    /// Median.
    pub p50_ns: f64,
    /// 99th percentile.
    pub p99_ns: f64,
}

/// A kind of work a worker does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Work {
    /// Moving packets through its pipes.
    PacketHops,
    /// Reading packets from hosts.
    TunReads,
    /// Writing packets into hosts.
    TunWrites,
    /// Taking packets in from other workers.
    Handoffs,
}

impl Work {
    /// How a sentence names it.
    pub fn name(self) -> &'static str {
        match self {
            Work::PacketHops => "packet-hops",
            Work::TunReads => "TUN reads",
            Work::TunWrites => "TUN writes",
            Work::Handoffs => "cross-worker hand-offs",
        }
    }
}

/// One worker's predicted load.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkerLoad {
    /// The worker's number.
    pub worker: u32,
    /// Pipe traversals per second: entries and every hop into one of its pipes.
    pub packet_hops_per_second: f64,
    /// Packets read from its hosts per second.
    pub tun_reads_per_second: f64,
    /// Packets written into hosts per second (those whose last pipe it owns).
    pub tun_writes_per_second: f64,
    /// Packets taken in from other workers per second.
    pub handoffs_per_second: f64,
    /// Share of one CPU the work takes (1 is a whole CPU).
    pub utilization: f64,
    /// The kind of work that takes most of it.
    pub busiest_work: Work,
    /// Expected lateness, ns: the timer's plus queueing (`null` when the worker saturates:
    /// lateness then grows without bound).
    pub lateness_p50_ns: Option<f64>,
    /// The same at the 99th percentile.
    pub lateness_p99_ns: Option<f64>,
}

/// The prediction for one assignment under one load.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    /// Workers of the assignment.
    pub workers: u32,
    /// Packets entering the emulation per second (the offered load).
    pub edge_packets_per_second: f64,
    /// Packet-hops per edge packet, l.
    pub path_length: f64,
    /// All workers' packet-hops per second.
    pub packet_hops_per_second: f64,
    /// Hand-offs between workers per second, all workers.
    pub handoffs_per_second: f64,
    /// Every worker, worker 0 first.
    pub per_worker: Vec<WorkerLoad>,
    /// The worker with the highest utilization.
    pub bottleneck_worker: u32,
    /// Whether every worker stays under one CPU.
    pub fits: bool,
    /// The offered load scaled until the busiest worker takes one whole CPU.
    pub max_edge_packets_per_second: f64,
}

impl WorkerCosts {
    /// Predicts each worker's load when `graph` (weighted in packets per second) runs on the
    /// workers of `assignment`; `timer` is the precision mode's idle lateness. `None` if no
    /// packet enters.
    pub fn predict(
        &self,
        graph: &FlowGraph,
        assignment: &Assignment,
        timer: TimerLateness,
    ) -> Option<Prediction> {
        let eval = Evaluation::of(graph, assignment);
        let entered: f64 = eval.cores.iter().map(|c| c.edge_packets).sum();
        if entered <= 0.0 {
            return None;
        }
        // A packet leaves the emulation (a TUN write) through a pipe into a host: the pipes
        // nothing may follow (a host forwards nothing).
        let mut entering = graph.entry.clone();
        for (_, q, w) in graph.transitions() {
            entering[q as usize] += w;
        }
        let mut writes = vec![0.0; assignment.cores as usize];
        for (p, &into) in entering.iter().enumerate() {
            if graph.successors(p as PipeId).next().is_none() {
                writes[assignment.pipes[p] as usize] += into;
            }
        }
        let per_worker: Vec<WorkerLoad> = eval
            .cores
            .iter()
            .map(|c| {
                self.worker(
                    c.core,
                    c.hops,
                    c.edge_packets,
                    writes[c.core as usize],
                    c.packets - c.edge_packets,
                    timer,
                )
            })
            .collect();
        let busiest = per_worker
            .iter()
            .max_by(|a, b| a.utilization.total_cmp(&b.utilization))
            .expect("an assignment has a worker");
        let hops: f64 = eval.cores.iter().map(|c| c.hops).sum();
        Some(Prediction {
            workers: assignment.cores,
            edge_packets_per_second: entered,
            path_length: hops / entered,
            packet_hops_per_second: hops,
            handoffs_per_second: eval.cut,
            bottleneck_worker: busiest.worker,
            fits: busiest.utilization < 1.0,
            max_edge_packets_per_second: entered / busiest.utilization,
            per_worker,
        })
    }

    /// One worker's CPU and lateness. Queueing: the worker serves the packets it takes in (reads
    /// and hand-offs) one after another, each costing on average utilization / packets of a
    /// second; M/D/1's mean wait ρ·s / (2(1 − ρ)) is added to the median and M/M/1's 99th
    /// percentile wait s·ln(100ρ) / (1 − ρ) (a pessimistic tail) to the p99.
    fn worker(
        &self,
        worker: u32,
        hops: f64,
        reads: f64,
        writes: f64,
        handoffs: f64,
        timer: TimerLateness,
    ) -> WorkerLoad {
        let parts = [
            (Work::PacketHops, hops * self.hop_ns),
            (Work::TunReads, reads * self.tun_read_ns),
            (Work::TunWrites, writes * self.tun_write_ns),
            (Work::Handoffs, handoffs * self.handoff_ns),
        ];
        let rho: f64 = parts.iter().map(|(_, ns)| ns).sum::<f64>() / 1e9;
        let busiest_work = parts
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .expect("four kinds of work")
            .0;
        let arrivals = reads + handoffs;
        let (p50, p99) = if rho >= 1.0 {
            (None, None)
        } else if arrivals <= 0.0 {
            (Some(timer.p50_ns), Some(timer.p99_ns))
        } else {
            let service_ns = rho / arrivals * 1e9;
            let mean_wait = rho * service_ns / (2.0 * (1.0 - rho));
            let tail_wait = (service_ns * (100.0 * rho).ln() / (1.0 - rho)).max(0.0);
            (
                Some(timer.p50_ns + mean_wait),
                Some(timer.p99_ns + tail_wait),
            )
        };
        WorkerLoad {
            worker,
            packet_hops_per_second: hops,
            tun_reads_per_second: reads,
            tun_writes_per_second: writes,
            handoffs_per_second: handoffs,
            utilization: rho,
            busiest_work,
            lateness_p50_ns: p50,
            lateness_p99_ns: p99,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::weight::tests::pipe;
    use crate::{Demand, FlowGraph};
    use netloom_route::Routes;
    use netloom_topo::{NodeKind, RoutingMetric, Topology};

    const COSTS: WorkerCosts = WorkerCosts {
        hop_ns: 100.0,
        tun_read_ns: 1_000.0,
        tun_write_ns: 2_000.0,
        handoff_ns: 500.0,
    };
    const TIMER: TimerLateness = TimerLateness {
        p50_ns: 1_000.0,
        p99_ns: 10_000.0,
    };

    /// h1 - r1 - … - r`routers` - h2 at 100 Gbit/s, so no link limits the flows here.
    fn chain(routers: u32) -> Topology {
        let mut t = Topology::new("chain", RoutingMetric::Hops);
        let mut last = t.add_node("h1", NodeKind::Host, None);
        for i in 1..=routers {
            let r = t.add_node(format!("r{i}"), NodeKind::Router, None);
            t.add_link(last, r, None, pipe(100_000), Some(pipe(100_000)));
            last = r;
        }
        let h2 = t.add_node("h2", NodeKind::Host, None);
        t.add_link(last, h2, None, pipe(100_000), Some(pipe(100_000)));
        t
    }

    /// A chain of `routers` with one UDP flow h1 → h2 of `pps` 1000-byte packets.
    fn graph(routers: u32, pps: f64) -> (Topology, FlowGraph) {
        let topo = chain(routers);
        let routes = Routes::compute(&topo);
        let (src, dst) = (topo.hosts[0], topo.hosts[1]);
        let demand = Demand {
            src,
            dst,
            max_bps: Some(pps * 8_000.0),
            packet_bytes: 1000,
            acked: false,
        };
        let g = FlowGraph::from_demands(&topo, &routes, &[demand]);
        (topo, g)
    }

    fn all_on(cores: u32, topo: &Topology, core: impl Fn(usize) -> u32) -> Assignment {
        Assignment {
            cores,
            pipes: (0..topo.pipes.len()).map(core).collect(),
            topology: None,
            method: None,
        }
    }

    #[test]
    fn one_worker_pays_every_hop_a_read_and_a_write_per_packet() {
        let (topo, g) = graph(2, 10_000.0);
        let p = COSTS.predict(&g, &all_on(1, &topo, |_| 0), TIMER).unwrap();
        // h0 → r1 → r2 → h1: three pipes.
        assert!((p.path_length - 3.0).abs() < 1e-9, "{p:?}");
        let w = &p.per_worker[0];
        assert!((w.tun_reads_per_second - 10_000.0).abs() < 1e-6);
        assert!((w.tun_writes_per_second - 10_000.0).abs() < 1e-6);
        assert_eq!(w.handoffs_per_second, 0.0);
        // 10,000 × (3 × 100 + 1,000 + 2,000) ns = 33 ms a second.
        assert!((w.utilization - 0.033).abs() < 1e-9, "{w:?}");
        assert!(p.fits);
        assert!((p.max_edge_packets_per_second - 10_000.0 / 0.033).abs() < 1e-3);
        assert_eq!(w.busiest_work, Work::TunWrites);
        // Queueing adds to the timer's lateness.
        assert!(w.lateness_p50_ns.unwrap() > TIMER.p50_ns);
        assert!(w.lateness_p99_ns.unwrap() > TIMER.p99_ns);
    }

    #[test]
    fn more_hops_cost_more() {
        let (topo, g) = graph(2, 10_000.0);
        let (long_topo, long) = graph(8, 10_000.0);
        let short = COSTS.predict(&g, &all_on(1, &topo, |_| 0), TIMER).unwrap();
        let long = COSTS
            .predict(&long, &all_on(1, &long_topo, |_| 0), TIMER)
            .unwrap();
        assert!((long.path_length - 9.0).abs() < 1e-9);
        let extra = long.per_worker[0].utilization - short.per_worker[0].utilization;
        // Six more hops of 100 ns for each of 10,000 packets a second.
        assert!((extra - 0.006).abs() < 1e-9, "{extra}");
    }

    #[test]
    fn workers_split_the_work_and_pay_for_each_hand_off() {
        let (topo, g) = graph(2, 10_000.0);
        // The pipes out of h0 and r1 on worker 0, the rest on worker 1: each packet crosses
        // once, and the last pipe (r2 → h1) writes on worker 1.
        let path = Routes::compute(&topo)
            .path(&topo, topo.hosts[0], topo.hosts[1])
            .unwrap();
        let first_two = path[..2].to_vec();
        let a = all_on(2, &topo, |p| u32::from(!first_two.contains(&(p as u32))));
        let p = COSTS.predict(&g, &a, TIMER).unwrap();
        let (w0, w1) = (&p.per_worker[0], &p.per_worker[1]);
        assert!((p.handoffs_per_second - 10_000.0).abs() < 1e-6, "{p:?}");
        assert!((w0.tun_reads_per_second - 10_000.0).abs() < 1e-6);
        assert_eq!(w0.tun_writes_per_second, 0.0);
        assert!((w1.handoffs_per_second - 10_000.0).abs() < 1e-6);
        assert!((w1.tun_writes_per_second - 10_000.0).abs() < 1e-6);
        // Worker 0: 2 hops and a read; worker 1: 1 hop, a hand-off and a write.
        assert!((w0.utilization - 0.012).abs() < 1e-9, "{w0:?}");
        assert!((w1.utilization - 0.026).abs() < 1e-9, "{w1:?}");
        assert_eq!(p.bottleneck_worker, 1);
        // Dearer hand-offs make worker 1 the one that hand-offs saturate.
        let dear = WorkerCosts {
            handoff_ns: 10_000.0,
            ..COSTS
        };
        let p = dear.predict(&g, &a, TIMER).unwrap();
        assert_eq!(p.per_worker[1].busiest_work, Work::Handoffs);
    }

    #[test]
    fn a_saturated_worker_does_not_fit_and_has_no_bounded_lateness() {
        let (topo, g) = graph(2, 1_000_000.0);
        let p = COSTS.predict(&g, &all_on(1, &topo, |_| 0), TIMER).unwrap();
        assert!(!p.fits);
        assert!((p.per_worker[0].utilization - 3.3).abs() < 1e-9);
        assert_eq!(p.per_worker[0].lateness_p50_ns, None);
        assert!((p.max_edge_packets_per_second - 1e6 / 3.3).abs() < 1e-3);
    }
}
