//! What a worker engine in another process leaves for the merge: the part of its state that
//! `Engine::absorb` takes from a worker, as plain data to serialize, and the flows' figures,
//! each of which the worker owning it has right.

use super::{Crossings, Engine, EngineCounters, HopCounts};
use crate::report::{FlowReport, Report};
use netloom_link::PipeCounters;
use netloom_time::Instant;
use netloom_topo::PipeId;
use serde::{Deserialize, Serialize};

/// A worker's remains, from `Engine::remains`, for `Engine::absorb_remains`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Remains {
    /// The worker that left them.
    pub worker: u16,
    /// Every pipe's counters as this worker kept them (its own pipes, and the exits it handled
    /// on replicas), in `PipeCounters`' field order.
    pipes: Vec<[u64; 15]>,
    /// `Engine::counters`, in `EngineCounters`' field order.
    counters: [u64; 9],
    /// Packets dropped for an expired TTL, per router.
    expired: Vec<u64>,
    /// Hops per pair of consecutive pipes, when counted.
    transitions: Option<Vec<(PipeId, PipeId, u64)>>,
    /// What measures the run's own partition, when counted instead.
    crossings: Option<Crossings>,
    /// Packets still inside this worker's part of the network.
    in_flight: usize,
    /// The flows' report rows as this worker figured them over the same run: each figure is
    /// right on the worker that owns it (`Engine::merge_flows` picks those).
    flows: Vec<FlowReport>,
}

impl Remains {
    /// Pipe traversals the worker completed.
    pub fn packet_hops(&self) -> u64 {
        self.counters[0]
    }
}

impl Engine {
    /// What this worker leaves for the merge of a run that ended at `end`.
    pub fn remains(&self, end: Instant) -> Remains {
        let worker = self.net.worker.as_ref().map_or(0, |w| w.me);
        let c = self.counters();
        let report = Report::build(self, 0, end, None);
        Remains {
            worker,
            pipes: self
                .net
                .pipes
                .iter()
                .map(|p| pipe_fields(p.counters()))
                .collect(),
            counters: [
                c.packet_hops,
                c.events,
                c.unroutable,
                c.ttl_expired,
                c.too_big,
                c.max_in_flight,
                c.cross_core_hops,
                c.cross_core_bytes,
                c.changes_skipped,
            ],
            expired: self.net.expired.clone(),
            transitions: self.net.hops.pairs(),
            crossings: self.net.hops.crossings().cloned(),
            in_flight: self.net.packets.live(),
            flows: report.flows,
        }
    }

    /// Folds another worker's remains into this one, as `absorb` folds its engine: pipe
    /// counts add up (counts add, high-water marks take the larger, whoever owns the pipe), and
    /// so do the engine's counts. The flows are left alone: `merge_flows` reports them.
    pub fn absorb_remains(&mut self, r: &Remains) {
        for (pipe, fields) in self.net.pipes.iter_mut().zip(&r.pipes) {
            pipe.absorb_counters(&pipe_counters(fields));
        }
        let [packet_hops, events, unroutable, ttl_expired, too_big, max_in_flight, cross_core_hops, cross_core_bytes, changes_skipped] =
            r.counters;
        self.net.counters.add(&EngineCounters {
            packet_hops,
            events,
            unroutable,
            ttl_expired,
            too_big,
            max_in_flight,
            cross_core_hops,
            cross_core_bytes,
            changes_skipped,
        });
        for (mine, theirs) in self.net.expired.iter_mut().zip(&r.expired) {
            *mine += theirs;
        }
        if let Some(theirs) = &r.transitions {
            self.net
                .hops
                .add_pairs(theirs.iter().map(|&(p, q, n)| ((p, q), n)));
        }
        if let (HopCounts::Crossings(mine), Some(theirs)) = (&mut self.net.hops, &r.crossings) {
            mine.add(theirs);
        }
        self.net.absorbed_in_flight += r.in_flight;
    }

    /// The flows' report rows of a partitioned run from every worker's remains (`parts[k]` is
    /// worker k's, this engine being one of them): what the sender saw (sent, retransmits)
    /// from the worker of the source host, what the receiver saw (throughput, latency,
    /// delivered) from the worker of the destination, and losses added up, as `absorb` merges
    /// them.
    pub fn merge_flows(&self, parts: &[Remains]) -> Vec<FlowReport> {
        let Some(w) = &self.net.worker else {
            panic!("only workers of a partitioned run merge flows");
        };
        let of = |worker: u16| {
            parts
                .iter()
                .find(|r| r.worker == worker)
                .expect("remains of every worker")
        };
        self.flows
            .ends()
            .enumerate()
            .map(|(i, (src_host, dst_host))| {
                let src = &of(w.ownership.host_owner(src_host)).flows[i];
                let dst = &of(w.ownership.host_owner(dst_host)).flows[i];
                FlowReport {
                    throughput_bps: dst.throughput_bps,
                    latency_ns: dst.latency_ns.clone(),
                    delivered: dst.delivered,
                    lost: parts.iter().map(|r| r.flows[i].lost).sum(),
                    ..src.clone()
                }
            })
            .collect()
    }
}

fn pipe_fields(c: &PipeCounters) -> [u64; 15] {
    [
        c.packets_in,
        c.bytes_in,
        c.packets_out,
        c.bytes_out,
        c.drops_queue,
        c.drops_red,
        c.drops_codel,
        c.marks,
        c.drops_loss,
        c.drops_down,
        c.drops_tx_fail,
        c.retries,
        c.duplicates,
        c.queue_hwm_packets,
        c.queue_hwm_bytes,
    ]
}

fn pipe_counters(f: &[u64; 15]) -> PipeCounters {
    PipeCounters {
        packets_in: f[0],
        bytes_in: f[1],
        packets_out: f[2],
        bytes_out: f[3],
        drops_queue: f[4],
        drops_red: f[5],
        drops_codel: f[6],
        marks: f[7],
        drops_loss: f[8],
        drops_down: f[9],
        drops_tx_fail: f[10],
        retries: f[11],
        duplicates: f[12],
        queue_hwm_packets: f[13],
        queue_hwm_bytes: f[14],
    }
}
