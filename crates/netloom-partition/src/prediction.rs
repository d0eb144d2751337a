//! ModelNet's capacity model (§5.1) fed with this machine's measured costs, per worker of a live
//! run: from a flow graph weighted in packets per second and an assignment of its pipes to
//! workers, each worker's packet-hops, TUN reads and writes, hand-offs and wake-ups per second,
//! the CPU they take, the lateness to expect, and what saturates first. docs/calibrate.md
//! derives it.

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
    /// One wake-up of a sleeping driver (0 for one that never sleeps).
    pub wake_up_ns: f64,
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
    /// Waking up for packets and deadlines.
    WakeUps,
}

impl Work {
    /// How a sentence names it.
    pub fn name(self) -> &'static str {
        match self {
            Work::PacketHops => "packet-hops",
            Work::TunReads => "TUN reads",
            Work::TunWrites => "TUN writes",
            Work::Handoffs => "cross-worker hand-offs",
            Work::WakeUps => "wake-ups",
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
    /// Packets leaving its pipes at a deadline of their own per second (the pipes of `timed`).
    pub deadlines_per_second: f64,
    /// Times its driver wakes up per second.
    pub wake_ups_per_second: f64,
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
    /// The offered load scaled until the busiest worker's packets take one whole CPU (a
    /// saturated driver never sleeps, so wake-ups do not count there).
    pub max_edge_packets_per_second: f64,
}

/// One worker's traffic, per second.
struct Traffic {
    hops: f64,
    reads: f64,
    writes: f64,
    handoffs: f64,
    /// Packets leaving timed pipes, and those of them written into hosts.
    deadlines: f64,
    timed_writes: f64,
}

impl WorkerCosts {
    /// Predicts each worker's load when `graph` (weighted in packets per second) runs on the
    /// workers of `assignment`; `timed[p]` says whether a packet leaves pipe p at a deadline
    /// the driver must wait for (rather than within the turn that brought it in); `timer` is
    /// the precision mode's idle lateness. `None` if no packet enters.
    pub fn predict(
        &self,
        graph: &FlowGraph,
        assignment: &Assignment,
        timed: &[bool],
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
        let workers = assignment.cores as usize;
        let (mut writes, mut deadlines, mut timed_writes) =
            (vec![0.0; workers], vec![0.0; workers], vec![0.0; workers]);
        for (p, &into) in entering.iter().enumerate() {
            let k = assignment.pipes[p] as usize;
            let last = graph.successors(p as PipeId).next().is_none();
            if last {
                writes[k] += into;
            }
            if timed[p] {
                deadlines[k] += into;
                if last {
                    timed_writes[k] += into;
                }
            }
        }
        let per_worker: Vec<WorkerLoad> = eval
            .cores
            .iter()
            .map(|c| {
                let k = c.core as usize;
                let traffic = Traffic {
                    hops: c.hops,
                    reads: c.edge_packets,
                    writes: writes[k],
                    handoffs: c.packets - c.edge_packets,
                    deadlines: deadlines[k],
                    timed_writes: timed_writes[k],
                };
                self.worker(c.core, &traffic, timer)
            })
            .collect();
        let busiest = per_worker
            .iter()
            .max_by(|a, b| a.utilization.total_cmp(&b.utilization))
            .expect("an assignment has a worker");
        let most_packet_work = per_worker
            .iter()
            .map(|w| w.utilization - w.wake_ups_per_second * self.wake_up_ns / 1e9)
            .fold(0.0, f64::max);
        let hops: f64 = eval.cores.iter().map(|c| c.hops).sum();
        Some(Prediction {
            workers: assignment.cores,
            edge_packets_per_second: entered,
            path_length: hops / entered,
            packet_hops_per_second: hops,
            handoffs_per_second: eval.cut,
            bottleneck_worker: busiest.worker,
            fits: busiest.utilization < 1.0,
            max_edge_packets_per_second: entered / most_packet_work,
            per_worker,
        })
    }

    /// What a worker's packets cost it a second, ns, by kind.
    fn packet_work(&self, hops: f64, reads: f64, writes: f64, handoffs: f64) -> [(Work, f64); 4] {
        [
            (Work::PacketHops, hops * self.hop_ns),
            (Work::TunReads, reads * self.tun_read_ns),
            (Work::TunWrites, writes * self.tun_write_ns),
            (Work::Handoffs, handoffs * self.handoff_ns),
        ]
    }

    /// One worker's CPU and lateness (docs/calibrate.md, "The model").
    ///
    /// Wake-ups: the driver serves everything due when it wakes (all readable packets, up to a
    /// batch per host, and every passed deadline), so an event (a packet arriving, a deadline
    /// coming) costs a wake-up of its own only if it finds the driver asleep. After each
    /// wake-up the driver is not asleep for the wake-up's latency L (the timer's median
    /// lateness) and its CPU c, and for its packets' own work, a share ρ₀ of the time. With
    /// events at random times at rate e, the share they find it asleep is what is left:
    /// a = 1 − ρ₀ − w·(L + c) with w = e·a wake-ups a second, hence
    /// w = e·(1 − ρ₀) / (1 + e·(L + c)); the CPU is ρ = ρ₀ + w·c.
    ///
    /// Lateness: the packets' own queueing (M/D/1's mean wait for the median, M/M/1's tail for
    /// the p99), plus the timer only for deliveries at a deadline (from a timed pipe): one that
    /// finds the driver asleep waits the whole L; one that comes while a wake-up is on its way
    /// (a share w·L of the time) rides on it and waits part of L, spread evenly; one that
    /// finds it at work waits for the turn only.
    fn worker(&self, worker: u32, t: &Traffic, timer: TimerLateness) -> WorkerLoad {
        let packets = self.packet_work(t.hops, t.reads, t.writes, t.handoffs);
        let own = packets.iter().map(|(_, ns)| ns).sum::<f64>() / 1e9;
        let arrivals = t.reads + t.handoffs;
        let events = arrivals + t.deadlines;
        let occupancy = (timer.p50_ns + self.wake_up_ns) / 1e9;
        let wake_ups = events * (1.0 - own).max(0.0) / (1.0 + events * occupancy);
        let rho = own + wake_ups * self.wake_up_ns / 1e9;
        let mut parts = packets.to_vec();
        parts.push((Work::WakeUps, wake_ups * self.wake_up_ns));
        let busiest_work = parts
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .expect("five kinds of work")
            .0;
        let (p50, p99) = if rho >= 1.0 {
            (None, None)
        } else {
            let (queue_p50, queue_p99) = if arrivals > 0.0 && own > 0.0 {
                let service_ns = own / arrivals * 1e9;
                (
                    own * service_ns / (2.0 * (1.0 - own)),
                    (service_ns * (100.0 * own).ln() / (1.0 - own)).max(0.0),
                )
            } else {
                (0.0, 0.0)
            };
            // Of the deliveries: the share at a deadline that finds the driver asleep, and the
            // share at one that rides on a wake-up on its way.
            let timed = if t.writes > 0.0 {
                t.timed_writes / t.writes
            } else {
                0.0
            };
            let asleep = if events > 0.0 {
                timed * wake_ups / events
            } else {
                0.0
            };
            let riding = timed * (wake_ups * timer.p50_ns / 1e9).min(1.0);
            let timer_wait = |q: f64, lateness: f64| {
                let on_time = 1.0 - asleep - riding;
                if q <= on_time {
                    0.0
                } else if q < 1.0 - asleep {
                    (q - on_time) / riding * lateness
                } else {
                    lateness
                }
            };
            (
                Some(queue_p50 + timer_wait(0.5, timer.p50_ns)),
                Some(queue_p99 + timer_wait(0.99, timer.p99_ns)),
            )
        };
        WorkerLoad {
            worker,
            packet_hops_per_second: t.hops,
            tun_reads_per_second: t.reads,
            tun_writes_per_second: t.writes,
            handoffs_per_second: t.handoffs,
            deadlines_per_second: t.deadlines,
            wake_ups_per_second: wake_ups,
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
        wake_up_ns: 0.0,
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

    /// Whether each pipe of `topo` holds its packets for a deadline.
    fn timed(topo: &Topology, yes: bool) -> Vec<bool> {
        vec![yes; topo.pipes.len()]
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
        let p = COSTS
            .predict(&g, &all_on(1, &topo, |_| 0), &timed(&topo, false), TIMER)
            .unwrap();
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
        // No pipe holds a packet for a deadline: every delivery is made in the turn that read
        // it, late by queueing only, never by the timer.
        assert!(w.lateness_p50_ns.unwrap() > 0.0);
        assert!(w.lateness_p50_ns.unwrap() < TIMER.p50_ns, "{w:?}");
        assert!(w.lateness_p99_ns.unwrap() < TIMER.p99_ns, "{w:?}");
    }

    /// The packets' own work of `w` (without wake-ups), a share of a CPU.
    fn packet_share(w: &WorkerLoad) -> f64 {
        (w.packet_hops_per_second * COSTS.hop_ns
            + w.tun_reads_per_second * COSTS.tun_read_ns
            + w.tun_writes_per_second * COSTS.tun_write_ns)
            / 1e9
    }

    #[test]
    fn a_sleeping_driver_pays_a_wake_up_per_event_at_low_load_and_batches_under_load() {
        let sleeping = WorkerCosts {
            wake_up_ns: 5_000.0,
            ..COSTS
        };
        let at = |pps: f64, delayed: bool| {
            let (topo, g) = graph(2, pps);
            let p = sleeping
                .predict(&g, &all_on(1, &topo, |_| 0), &timed(&topo, delayed), TIMER)
                .unwrap();
            p.per_worker[0].clone()
        };
        // 1,000 pps, no delay: about one wake-up per packet read.
        let w = at(1_000.0, false);
        assert!((900.0..1_000.0).contains(&w.wake_ups_per_second), "{w:?}");
        // With delays each of the 3 pipes adds a deadline per packet, nearly all of them
        // 1 ms apart, far more than the timer's 1 us: about 4 wake-ups per packet.
        let w = at(1_000.0, true);
        assert!((3_800.0..4_000.0).contains(&w.wake_ups_per_second), "{w:?}");
        // They cost 5 us each, several times the packets' own 3.3 us a packet.
        let own = packet_share(&w);
        assert!(
            (w.utilization - own - w.wake_ups_per_second * 5e-6).abs() < 1e-9,
            "{w:?}"
        );
        assert!(w.utilization > 5.0 * own, "{w:?}");
        assert_eq!(w.busiest_work, Work::WakeUps);
        let low = w.wake_ups_per_second / 1_000.0;
        // Under load the driver is mostly awake when a packet or a deadline comes: a tenth of
        // the wake-ups per packet, or fewer.
        let w = at(200_000.0, true);
        assert!(w.wake_ups_per_second / 200_000.0 < low / 10.0, "{w:?}");
        // Saturation is where the packets alone fill the CPU: a busy driver never sleeps.
        let (topo, g) = graph(2, 200_000.0);
        let p = sleeping
            .predict(&g, &all_on(1, &topo, |_| 0), &timed(&topo, true), TIMER)
            .unwrap();
        assert!(
            (p.max_edge_packets_per_second - 1.0 / 3.3e-6).abs() < 1e-3,
            "{p:?}"
        );
    }

    #[test]
    fn the_timer_delays_only_deadlines_that_find_the_driver_asleep_and_alone() {
        let slow_timer = TimerLateness {
            p50_ns: 50_000.0,
            p99_ns: 100_000.0,
        };
        let at = |pps: f64, delayed: bool| {
            let (topo, g) = graph(2, pps);
            let p = COSTS
                .predict(
                    &g,
                    &all_on(1, &topo, |_| 0),
                    &timed(&topo, delayed),
                    slow_timer,
                )
                .unwrap();
            p.per_worker[0].lateness_p50_ns.unwrap()
        };
        // Deadlines 1 ms apart on average (3 per packet at 300 pps): each waits for a timed
        // wake-up of its own, the whole 50 us.
        assert!(at(300.0, true) >= slow_timer.p50_ns);
        // 9 deadlines within each 50 us window (60 kpps): most ride on a wake-up already on
        // its way, late by part of the window only.
        let busy = at(60_000.0, true);
        assert!(busy > 0.0 && busy < slow_timer.p50_ns / 2.0, "{busy}");
        // Without delays no delivery waits for the timer at all.
        assert!(at(300.0, false) < 1_000.0);
    }

    #[test]
    fn more_hops_cost_more() {
        let (topo, g) = graph(2, 10_000.0);
        let (long_topo, long) = graph(8, 10_000.0);
        let short = COSTS
            .predict(&g, &all_on(1, &topo, |_| 0), &timed(&topo, false), TIMER)
            .unwrap();
        let long = COSTS
            .predict(
                &long,
                &all_on(1, &long_topo, |_| 0),
                &timed(&long_topo, false),
                TIMER,
            )
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
        let p = COSTS.predict(&g, &a, &timed(&topo, false), TIMER).unwrap();
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
        let p = dear.predict(&g, &a, &timed(&topo, false), TIMER).unwrap();
        assert_eq!(p.per_worker[1].busiest_work, Work::Handoffs);
    }

    #[test]
    fn a_saturated_worker_does_not_fit_and_has_no_bounded_lateness() {
        let (topo, g) = graph(2, 1_000_000.0);
        let p = COSTS
            .predict(&g, &all_on(1, &topo, |_| 0), &timed(&topo, false), TIMER)
            .unwrap();
        assert!(!p.fits);
        assert!((p.per_worker[0].utilization - 3.3).abs() < 1e-9);
        assert_eq!(p.per_worker[0].lateness_p50_ns, None);
        assert!((p.max_edge_packets_per_second - 1e6 / 3.3).abs() < 1e-3);
    }
}
