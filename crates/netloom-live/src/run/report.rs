//! What a live run is (`RunInfo`: its name, hosts with their addresses, links, how it is split)
//! and one typed `Report` of its figures (hosts, pipes, accuracy, workers), the same for
//! `netloom stats`, `stats --json` and the final report of `netloom run` (docs/live.md).

use crate::accuracy::AccuracyReport;
use crate::message::{HostCounters, PipeState, Snapshot};
use crate::moved::RepartitionReport;
use netloom_topo::Position;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

/// One host of a run: its name and addresses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    /// The host's name (also its name in every host's /etc/hosts).
    pub name: String,
    /// Its IPv4 address.
    pub ipv4: Ipv4Addr,
    /// Its IPv6 address.
    pub ipv6: Ipv6Addr,
}

/// How a run of several workers is split (docs/live.md, "Several workers").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkersInfo {
    /// How many workers.
    pub workers: usize,
    /// The least time a packet spends in a pipe before another worker takes it over: how far
    /// ahead hand-offs travel (0: some cross at once, and arrive late by the hand-off; `None`:
    /// nothing can cross).
    pub lookahead_ns: Option<u64>,
    /// Hosts each worker reads and writes for.
    pub hosts: Vec<usize>,
    /// Pipes each worker owns.
    pub pipes: Vec<usize>,
    /// What crosses: `cache` (a descriptor) or `ship` (the payload too).
    pub payload: String,
}

/// The scheduling the workers got: real-time priority while they sleep, or normal priority
/// (asked for with `--no-realtime` or `--precision busy`, or because the kernel refused
/// real-time priority, which `refused` then says).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriorityReport {
    /// `realtime` (SCHED_FIFO while they sleep) or `normal`.
    pub given: String,
    /// Why real-time priority was asked for and refused (the workers then run at normal
    /// priority); absent when it was not refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

impl PriorityReport {
    /// A run over several machines, whose workers each got their own: real-time only if every
    /// machine's did (the run keeps time no better than its worst machine), and each refusal
    /// named by its machine. `None` if no machine said.
    pub fn of_machines(machines: &[(String, Option<PriorityReport>)]) -> Option<PriorityReport> {
        let said: Vec<(&String, &PriorityReport)> = machines
            .iter()
            .filter_map(|(name, p)| Some((name, p.as_ref()?)))
            .collect();
        if said.is_empty() {
            return None;
        }
        let realtime = said.iter().all(|(_, p)| p.given == "realtime");
        let refused: Vec<String> = said
            .iter()
            .filter_map(|(name, p)| Some(format!("on {name}: {}", p.refused.as_ref()?)))
            .collect();
        Some(PriorityReport {
            given: if realtime { "realtime" } else { "normal" }.to_string(),
            refused: (!refused.is_empty()).then(|| refused.join("; ")),
        })
    }
}

/// What a running experiment is, as the control protocol's `info` request answers it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The experiment's name.
    pub experiment: String,
    /// The version of netloom running it.
    pub version: String,
    /// The control protocol's version it speaks.
    pub protocol: u32,
    /// `busy`, `hybrid` or `sleep`.
    pub precision: String,
    /// The workers' priority (over several machines, `PriorityReport::of_machines`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<PriorityReport>,
    /// Every host, in the topology's order.
    pub hosts: Vec<HostInfo>,
    /// Every link, as "a-b".
    pub links: Vec<String>,
    /// How the run is split, with several workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<WorkersInfo>,
    /// Where nodes are, by name: those the topology file places (`lat`/`lon` or `x`/`y`), for
    /// drawing them; absent when it places none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub positions: BTreeMap<String, Position>,
}

/// One host's figures: who it is and what it sent and received.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostReport {
    /// Name and addresses.
    #[serde(flatten)]
    pub host: HostInfo,
    /// Packets and bytes read from it and written to it, and what was dropped on the way in.
    #[serde(flatten)]
    pub counters: HostCounters,
    /// Packets it sent that the kernel dropped because its TUN queue was full (the engine did
    /// not read them in time): lost outside the model, and counted in the accuracy's
    /// `physical_drops`.
    #[serde(default)]
    pub tun_queue_drops: u64,
}

/// A run of several workers: how it is split, and what crossed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkersReport {
    /// How it is split.
    #[serde(flatten)]
    pub split: WorkersInfo,
    /// Packets handed from one worker to another.
    pub cross_core_hops: u64,
    /// The bytes those hand-offs moved: 64 per descriptor, plus the packet when shipped.
    pub cross_core_bytes: u64,
    /// Of `cross_core_hops`, the packets each worker handed to another, in worker order.
    #[serde(default)]
    pub worker_handoffs: Vec<u64>,
    /// Of `cross_core_bytes`, the bytes each worker's hand-offs moved, in worker order.
    #[serde(default)]
    pub worker_handoff_bytes: Vec<u64>,
}

/// A live run's figures at one moment: while it runs (`netloom stats`) or when it stopped.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// The experiment's name.
    pub experiment: String,
    /// `busy`, `hybrid` or `sleep`.
    pub precision: String,
    /// The workers' priority, as in `RunInfo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<PriorityReport>,
    /// Time since the run started, ns.
    pub uptime_ns: u64,
    /// Packets inside the emulated network now; in the final report, those the stop dropped
    /// (they never reached their destination).
    pub in_flight: u64,
    /// Lateness and losses outside the model, and the verdict.
    pub accuracy: AccuracyReport,
    /// Every host, in the topology's order.
    pub hosts: Vec<HostReport>,
    /// Every pipe, in the topology's order, as `netloom sim --json` reports pipes, with what is
    /// queued in it now.
    pub pipes: Vec<PipeState>,
    /// With several workers: the split and what crossed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<WorkersReport>,
    /// The captures running (`netloom capture`), with their own figures; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub captures: Vec<CaptureReport>,
    /// With `--repartition`: the epochs and the moves so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repartition: Option<RepartitionReport>,
    /// In a run over several machines: the hand-offs each machine sent another that never
    /// arrived, for every ordered pair of machines (counted in `accuracy.physical_drops`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_handoffs: Vec<LostHandoffs>,
    /// In a run over several machines: datagrams and transfer frames that reached a machine's
    /// hand-off port and were refused, by cause (none of them the run's own); absent when none.
    #[serde(default, skip_serializing_if = "RefusedHandoffs::is_none")]
    pub refused_handoffs: RefusedHandoffs,
}

/// Datagrams refused at a machine's hand-off port, by cause. The run's own workers send none
/// of them: each is a stranger's, another run's or a damaged one, and none reaches the engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedHandoffs {
    /// Without the tag the run's secret makes: sent by someone who does not have it, or
    /// changed on the way.
    #[serde(default)]
    pub unauthentic: u64,
    /// From an address that is not the machine of the worker the datagram names.
    pub strangers: u64,
    /// Not a hand-off of this run for this machine: not GENEVE with netloom's option, another
    /// run's network identifier, another destination, or a descriptor that does not decode.
    pub malformed: u64,
    /// A descriptor naming a pipe, node, host or worker the run does not have.
    pub out_of_bounds: u64,
    /// A sequence number seen before, too old to tell, or implausibly far ahead.
    pub replayed: u64,
}

impl RefusedHandoffs {
    /// Every refused datagram.
    pub fn total(&self) -> u64 {
        self.unauthentic + self.strangers + self.malformed + self.out_of_bounds + self.replayed
    }

    /// None refused.
    pub fn is_none(&self) -> bool {
        self.total() == 0
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &RefusedHandoffs) {
        self.unauthentic += other.unauthentic;
        self.strangers += other.strangers;
        self.malformed += other.malformed;
        self.out_of_bounds += other.out_of_bounds;
        self.replayed += other.replayed;
    }
}

/// Hand-offs from one machine to another lost on the way (gaps in the channel's sequence
/// numbers, as the receiving machine found them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostHandoffs {
    /// The sending machine.
    pub from: String,
    /// The receiving machine.
    pub to: String,
    /// Hand-offs lost.
    pub lost: u64,
    /// In a `stats` while the run lasts: those sent that neither arrived nor were found lost
    /// yet, on their way or lost after the last one to arrive (the stop tells them apart and
    /// counts the lost ones in `lost`). Absent at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<u64>,
}

/// A running capture's figures: what it copied, and what it dropped because its writer fell
/// behind (copies only: the emulated packets are never touched).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureReport {
    /// What it captures: "r1 r2 (both)", or a node's name for all its links.
    pub target: String,
    /// Packets copied to the capture's writer.
    pub captured: u64,
    /// Packets the capture did not copy: its queue was full.
    pub dropped: u64,
}

impl Report {
    /// The report of run `info` from its workers' merged `snapshot` and the packets each host's
    /// TUN queue dropped (`tun_queue_drops`, in host order; missing hosts count none).
    pub fn new(info: &RunInfo, snapshot: Snapshot, tun_queue_drops: &[u64]) -> Report {
        let mut accuracy = snapshot.accuracy.report();
        accuracy.add_tun_queue_drops(tun_queue_drops.iter().sum());
        Report {
            experiment: info.experiment.clone(),
            precision: info.precision.clone(),
            priority: info.priority.clone(),
            uptime_ns: snapshot.at.as_nanos(),
            in_flight: snapshot.in_flight,
            accuracy,
            hosts: info
                .hosts
                .iter()
                .zip(snapshot.hosts)
                .enumerate()
                .map(|(i, (host, counters))| HostReport {
                    host: host.clone(),
                    counters,
                    tun_queue_drops: tun_queue_drops.get(i).copied().unwrap_or(0),
                })
                .collect(),
            pipes: snapshot.pipes.into_iter().flatten().collect(),
            workers: info.workers.as_ref().map(|split| {
                // Every worker has its place, even one that handed nothing off.
                let mut handoffs = snapshot.handoffs.clone();
                handoffs.resize(split.workers.max(handoffs.len()), (0, 0));
                WorkersReport {
                    split: split.clone(),
                    cross_core_hops: snapshot.cross_core_hops,
                    cross_core_bytes: snapshot.cross_core_bytes,
                    worker_handoffs: handoffs.iter().map(|h| h.0).collect(),
                    worker_handoff_bytes: handoffs.iter().map(|h| h.1).collect(),
                }
            }),
            captures: Vec::new(),
            repartition: None,
            lost_handoffs: Vec::new(),
            refused_handoffs: RefusedHandoffs::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accuracy::{Accuracy, Thresholds};
    use netloom_engine::report::{Drops, PipeReport};
    use netloom_time::Instant;
    use std::time::Duration;

    #[test]
    fn a_run_over_machines_is_realtime_only_if_every_machine_is_and_names_each_refusal() {
        let got = |given: &str, refused: Option<&str>| PriorityReport {
            given: given.into(),
            refused: refused.map(String::from),
        };
        let machines = |list: Vec<(&str, Option<PriorityReport>)>| -> Vec<_> {
            list.into_iter().map(|(m, p)| (m.to_string(), p)).collect()
        };
        let all = machines(vec![
            ("a", Some(got("realtime", None))),
            ("b", Some(got("realtime", None))),
        ]);
        assert_eq!(
            PriorityReport::of_machines(&all),
            Some(got("realtime", None))
        );
        let one_refused = machines(vec![
            ("a", Some(got("realtime", None))),
            (
                "b",
                Some(got("normal", Some("no real-time budget in cgroup /pod"))),
            ),
        ]);
        assert_eq!(
            PriorityReport::of_machines(&one_refused),
            Some(got(
                "normal",
                Some("on b: no real-time budget in cgroup /pod")
            ))
        );
        assert_eq!(
            PriorityReport::of_machines(&machines(vec![("a", None)])),
            None
        );
    }

    fn pipe(p: usize) -> PipeState {
        PipeState {
            report: PipeReport {
                link: format!("l{p}"),
                direction: "a-b".into(),
                from: "x".into(),
                to: "y".into(),
                packets_in: p as u64,
                packets_out: 0,
                bytes_out: 0,
                drops: 0,
                drops_by_cause: Drops::default(),
                marks: 0,
                utilization: 0.0,
                queue_hwm_packets: 0,
                queue_hwm_bytes: 0,
            },
            queue_packets: 0,
            queue_bytes: 0,
            params: None,
        }
    }

    /// Worker `worker`'s snapshot, owning pipes `owned`; it handed off 5 + `worker` packets.
    fn part(worker: usize, at_us: u64, owned: &[usize], packets_in: u64) -> Snapshot {
        let mut accuracy = Accuracy::new(Thresholds::default());
        accuracy.record_release(Duration::from_micros(at_us));
        let counters = HostCounters {
            packets_in,
            ..HostCounters::default()
        };
        Snapshot {
            at: Instant(at_us * 1_000),
            in_flight: 1,
            accuracy,
            hosts: vec![counters, counters],
            pipes: (0..3)
                .map(|p| owned.contains(&p).then(|| pipe(p)))
                .collect(),
            cross_core_hops: 5 + worker as u64,
            cross_core_bytes: 320,
            handoffs: (0..=worker)
                .map(|k| {
                    if k == worker {
                        (5 + k as u64, 320)
                    } else {
                        (0, 0)
                    }
                })
                .collect(),
        }
    }

    fn info(workers: bool) -> RunInfo {
        let host = |name: &str, i: u8| HostInfo {
            name: name.into(),
            ipv4: Ipv4Addr::new(198, 18, 0, i),
            ipv6: format!("fd6e:6c00::{i}").parse().unwrap(),
        };
        RunInfo {
            experiment: "lab".into(),
            version: "0".into(),
            protocol: 1,
            precision: "hybrid".into(),
            priority: None,
            hosts: vec![host("h1", 1), host("h2", 2)],
            links: vec!["h1-h2".into()],
            workers: workers.then(|| WorkersInfo {
                workers: 2,
                lookahead_ns: Some(5),
                hosts: vec![1, 1],
                pipes: vec![2, 1],
                payload: "cache".into(),
            }),
            positions: BTreeMap::new(),
        }
    }

    #[test]
    fn workers_parts_merge_into_every_pipe_once_and_summed_counts() {
        // Answers arrive in any order: worker 1's first here.
        let mut all = part(1, 12, &[1], 4);
        all.merge(part(0, 10, &[0, 2], 3));
        let r = Report::new(&info(true), all, &[0, 4]);
        assert_eq!(r.uptime_ns, 12_000);
        assert_eq!(r.in_flight, 2);
        assert_eq!(r.accuracy.released, 2);
        assert_eq!(r.hosts[1].counters.packets_in, 7);
        assert_eq!(r.hosts[1].host.name, "h2");
        assert_eq!(
            (r.hosts[0].tun_queue_drops, r.hosts[1].tun_queue_drops),
            (0, 4)
        );
        assert_eq!(
            (r.accuracy.physical_drops, r.accuracy.tun_queue_drops),
            (4, 4)
        );
        assert!(
            !r.accuracy.accurate,
            "a TUN queue's drops are losses outside the model"
        );
        let pipes: Vec<u64> = r.pipes.iter().map(|p| p.report.packets_in).collect();
        assert_eq!(pipes, [0, 1, 2]);
        let w = r.workers.as_ref().unwrap();
        assert_eq!((w.cross_core_hops, w.split.workers), (11, 2));
        assert_eq!(
            w.worker_handoffs,
            [5, 6],
            "each worker's own, in worker order"
        );
        assert_eq!(w.worker_handoff_bytes, [320, 320]);
    }

    #[test]
    fn the_report_reads_back_from_its_json_flat_per_host() {
        let r = Report::new(&info(false), part(0, 10, &[0, 1, 2], 3), &[]);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["hosts"][0]["name"], "h1");
        assert_eq!(json["hosts"][0]["ipv4"], "198.18.0.1");
        assert_eq!(json["hosts"][0]["packets_in"], 3);
        assert_eq!(json["hosts"][0]["tun_queue_drops"], 0);
        assert_eq!(json["pipes"][2]["queue_packets"], 0);
        assert!(json.get("workers").is_none());
        let back: Report = serde_json::from_value(json).unwrap();
        assert_eq!(back.hosts, r.hosts);
        assert_eq!(back.accuracy, r.accuracy);
    }
}
