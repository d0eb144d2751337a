//! The results of a run as data: per-flow, per-pipe and total figures. Serialized as the stable
//! `--json` schema documented in docs/json.md (field names and meanings must not change).

use crate::engine::Engine;
use crate::traffic::SourceKind;
use netloom_link::PipeCounters;
use netloom_time::{Duration, Instant};
use netloom_topo::{Direction, PipeId};
use serde::{Deserialize, Serialize};

/// The figures of a run: what `netloom sim --json` prints, ahead of the optional `partition` and
/// `workers` objects (docs/json.md).
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Schema version; bumped only on incompatible changes.
    pub schema: u32,
    /// The topology's name (`Topology::name`).
    pub topology: String,
    /// The seed recorded for the run (`--seed`): with the inputs, it determines every figure
    /// except the wall-clock ones.
    pub seed: u64,
    /// Virtual time simulated, in ns: the run covers [0, duration), so events due exactly at
    /// the end are not processed.
    pub duration_ns: u64,
    /// One entry per flow, in the order the flows were added to the engine (the pattern's).
    pub flows: Vec<FlowReport>,
    /// One entry per pipe, in pipe-id order: per link in file order, its `a-b` pipe, then its
    /// `b-a` pipe, or its one `shared` pipe.
    pub pipes: Vec<PipeReport>,
    /// Figures of the whole run.
    pub totals: Totals,
    /// Per-interval figures, with `SimOptions::series` only (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<crate::series::Series>,
}

/// One-way latency of a flow's delivered data packets, in ns: `flows[].latency_ns` in
/// `netloom sim --json`. From an HDR histogram with 3 significant digits and 1 µs resolution:
/// each percentile and the maximum is the highest value of its bucket, never below the exact
/// figure. All zero when nothing arrived.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Latency {
    /// Median, ns.
    pub p50: u64,
    /// 90th percentile, ns.
    pub p90: u64,
    /// 99th percentile, ns.
    pub p99: u64,
    /// Largest latency, ns (latencies above 100 s are recorded as 100 s).
    pub max: u64,
    /// Mean of the histogram, ns, rounded to a whole nanosecond.
    pub mean: u64,
}

/// The figures of one synthetic flow: an element of `flows` in `netloom sim --json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FlowReport {
    /// Name of the sending host.
    pub src: String,
    /// Name of the receiving host.
    pub dst: String,
    /// Source kind: cbr, poisson, onoff or aimd.
    pub kind: String,
    /// Goodput: unique data bytes delivered × 8 / (end − flow start).
    pub throughput_bps: u64,
    /// One-way latency of delivered data packets (nanoseconds); zeros if none arrived.
    pub latency_ns: Latency,
    /// Data packets sent, retransmissions included.
    pub sent: u64,
    /// Unique data packets delivered.
    pub delivered: u64,
    /// Data packets dropped inside the network.
    pub lost: u64,
    /// Retransmitted data packets (AIMD only; 0 otherwise).
    pub retransmits: u64,
}

/// A pipe's drops by cause, in packets: `pipes[].drops_by_cause` in `netloom sim --json`. Each
/// drop has one cause; together they make `PipeReport::drops`.
#[derive(Clone, Default, Debug, Serialize, Deserialize)]
pub struct Drops {
    /// The pipe's bounded queue was full (with either `aqm`).
    pub queue: u64,
    /// RED dropped the packet, deciding from the average queue (`aqm = "red"` only).
    pub red: u64,
    /// CoDel dropped the packet as it reached the head of the queue (`aqm = "codel"` only).
    /// Absent from reports of earlier versions, read as 0.
    #[serde(default)]
    pub codel: u64,
    /// The link's loss model (Bernoulli or Gilbert-Elliott) dropped the packet.
    pub loss: u64,
    /// This direction of the link was down when the packet arrived, or went down while the
    /// packet was inside (a pipe that goes down drops what it holds).
    pub link_down: u64,
    /// Wireless packets given up after the retry limit.
    pub tx_fail: u64,
}

/// The figures of one pipe: an element of `pipes` in `netloom sim --json`. Also read back from
/// JSON, by `netloom stats` from a running experiment.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PipeReport {
    /// The link as "a-b" (its end nodes in file order).
    pub link: String,
    /// "a-b" or "b-a" relative to `link`, or "shared" for a shared medium.
    pub direction: String,
    /// Name of the node that sends into the pipe (for a shared medium, the link's `a`).
    pub from: String,
    /// Name of the node at the pipe's far end (for a shared medium, the link's `b`).
    pub to: String,
    /// Packets offered to the pipe, those it then dropped included.
    pub packets_in: u64,
    /// Packets that left the pipe at its far end: its share of the run's packet-hops. A copy the
    /// pipe made counts here without having been offered.
    pub packets_out: u64,
    /// Bytes on the wire of the packets counted in `packets_out`.
    pub bytes_out: u64,
    /// All drops, whatever the cause.
    pub drops: u64,
    /// `drops` broken down by cause.
    pub drops_by_cause: Drops,
    /// ECN-capable packets the AQM marked CE instead of dropping them (`ecn = true`); they are
    /// in `packets_out`, not in `drops`. Absent from reports of earlier versions, read as 0.
    #[serde(default)]
    pub marks: u64,
    /// bytes_out × 8 / (rate × duration).
    pub utilization: f64,
    /// High-water mark of the pipe's queue in packets, the packet being serialized included.
    pub queue_hwm_packets: u64,
    /// High-water mark of the pipe's queue in bytes, the packet being serialized included.
    pub queue_hwm_bytes: u64,
}

/// Figures of the whole run: `totals` in `netloom sim --json`.
#[derive(Clone, Debug, Serialize)]
pub struct Totals {
    /// Pipe traversals completed, the unit of emulation work: the sum of `pipes[].packets_out`.
    pub packet_hops: u64,
    /// Events the engine processed: packet exits, sender wake-ups (stale ones included) and
    /// changes of time-varying links.
    pub events: u64,
    /// Packets that met no route to their destination.
    pub unroutable: u64,
    /// Packets dropped by a router because their TTL ran out (docs/live.md, "Routers").
    pub ttl_expired: u64,
    /// Packets dropped by a router because they were larger than the next link's MTU.
    pub too_big: u64,
    /// Most packets inside the network at one time; in a partitioned run, the sum of each
    /// worker's peak.
    pub max_in_flight: u64,
    /// Wall-clock time of the run; `null` with `--no-wall-clock` (for byte-identical output).
    pub wall_seconds: Option<f64>,
    /// `packet_hops / wall_seconds`, the emulator's speed in packet-hops per second; `null` with
    /// `--no-wall-clock`. Not deterministic.
    pub packet_hops_per_second: Option<f64>,
}

impl PipeReport {
    /// Adds what another worker counted on its copy of the same pipe (a live run's worker that
    /// delivers at home counts the exits it handles on its replica; `Engine::absorb` does the
    /// same for a sim's workers): counts and utilization add up, high-water marks take the
    /// larger.
    pub fn add(&mut self, other: &PipeReport) {
        self.packets_in += other.packets_in;
        self.packets_out += other.packets_out;
        self.bytes_out += other.bytes_out;
        self.drops += other.drops;
        let (d, o) = (&mut self.drops_by_cause, &other.drops_by_cause);
        d.queue += o.queue;
        d.red += o.red;
        d.codel += o.codel;
        d.loss += o.loss;
        d.link_down += o.link_down;
        d.tx_fail += o.tx_fail;
        self.marks += other.marks;
        self.utilization += other.utilization;
        self.queue_hwm_packets = self.queue_hwm_packets.max(other.queue_hwm_packets);
        self.queue_hwm_bytes = self.queue_hwm_bytes.max(other.queue_hwm_bytes);
    }

    /// The figures of `pipe` over a run of `duration` (for its utilization).
    pub fn of(engine: &Engine, pipe: PipeId, duration: Duration) -> PipeReport {
        let topo = engine.topology();
        let spec = &topo.pipes[pipe as usize];
        let link = &topo.links[spec.link as usize];
        let (a, b) = (&topo.node(link.a).name, &topo.node(link.b).name);
        let shared = link.ab == link.ba;
        let (direction, from, to) = match (shared, spec.direction) {
            (true, _) => ("shared", a, b),
            (false, Direction::AtoB) => ("a-b", a, b),
            (false, Direction::BtoA) => ("b-a", b, a),
        };
        let pipe = engine.pipe(pipe);
        let c = pipe.counters();
        let capacity = pipe.config().rate.bytes_in(duration) as f64 * 8.0;
        let utilization = if capacity > 0.0 {
            c.bytes_out as f64 * 8.0 / capacity
        } else {
            0.0
        };
        PipeReport {
            link: format!("{a}-{b}"),
            direction: direction.to_string(),
            from: from.clone(),
            to: to.clone(),
            packets_in: c.packets_in,
            packets_out: c.packets_out,
            bytes_out: c.bytes_out,
            drops: total_drops(c),
            drops_by_cause: Drops {
                queue: c.drops_queue,
                red: c.drops_red,
                codel: c.drops_codel,
                loss: c.drops_loss,
                link_down: c.drops_down,
                tx_fail: c.drops_tx_fail,
            },
            utilization: (utilization * 1e6).round() / 1e6,
            marks: c.marks,
            queue_hwm_packets: c.queue_hwm_packets,
            queue_hwm_bytes: c.queue_hwm_bytes,
        }
    }
}

impl Report {
    /// Summarizes an engine that ran from time zero to `end`.
    pub fn build(
        engine: &Engine,
        seed: u64,
        end: Instant,
        wall: Option<std::time::Duration>,
    ) -> Report {
        let topo = engine.topology();
        let duration = end.saturating_since(Instant::ZERO);
        let flows = engine
            .flows()
            .map(|(spec, sender, receiver, stats)| {
                let active = end.saturating_since(spec.start);
                let h = stats.latency_ns.histogram();
                let latency = if h.is_empty() {
                    Latency {
                        p50: 0,
                        p90: 0,
                        p99: 0,
                        max: 0,
                        mean: 0,
                    }
                } else {
                    Latency {
                        p50: h.value_at_quantile(0.50),
                        p90: h.value_at_quantile(0.90),
                        p99: h.value_at_quantile(0.99),
                        max: h.max(),
                        mean: h.mean().round() as u64,
                    }
                };
                FlowReport {
                    src: topo.node(spec.src).name.clone(),
                    dst: topo.node(spec.dst).name.clone(),
                    kind: kind_name(&spec.kind).to_string(),
                    throughput_bps: rate_bps(receiver.stats().bytes, active),
                    latency_ns: latency,
                    sent: stats.sent,
                    delivered: receiver.stats().packets,
                    lost: stats.lost,
                    retransmits: sender.stats().retransmits,
                }
            })
            .collect();
        let pipes = (0..topo.pipes.len() as PipeId)
            .map(|p| PipeReport::of(engine, p, duration))
            .collect();
        let counters = engine.counters();
        let wall_seconds = wall.map(|w| w.as_secs_f64());
        Report {
            schema: 1,
            topology: topo.name.clone(),
            seed,
            duration_ns: duration.as_nanos(),
            flows,
            pipes,
            totals: Totals {
                packet_hops: counters.packet_hops,
                events: counters.events,
                unroutable: counters.unroutable,
                ttl_expired: counters.ttl_expired,
                too_big: counters.too_big,
                max_in_flight: counters.max_in_flight,
                wall_seconds,
                packet_hops_per_second: wall_seconds
                    .map(|w| counters.packet_hops as f64 / w.max(1e-9)),
            },
            series: None,
        }
    }
}

/// A pipe's drops, every cause.
pub(crate) fn total_drops(c: &PipeCounters) -> u64 {
    c.drops_queue + c.drops_red + c.drops_codel + c.drops_loss + c.drops_down + c.drops_tx_fail
}

/// `bytes` over `over` as bit/s, rounded down (0 over nothing).
pub(crate) fn rate_bps(bytes: u64, over: Duration) -> u64 {
    if over.as_nanos() == 0 {
        return 0;
    }
    (bytes as u128 * 8 * 1_000_000_000 / over.as_nanos() as u128) as u64
}

fn kind_name(kind: &SourceKind) -> &'static str {
    match kind {
        SourceKind::Cbr { .. } => "cbr",
        SourceKind::Poisson { .. } => "poisson",
        SourceKind::OnOff { .. } => "onoff",
        SourceKind::Aimd { .. } => "aimd",
    }
}
