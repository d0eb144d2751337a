//! The messages of a live run, a leaf that the other modules import and that imports only
//! leaves (`accuracy`, a capture's `tap`, a repartitioning's `traffic` and `moved`): what a
//! client asks (`Request`, the control protocol's schema), what the experiment tells a worker
//! (`Order`) and the worker's `Answer` (with a `ChangeRefusal`), a worker's `Snapshot` of
//! itself, and the per-host and per-pipe figures those carry.

use crate::accuracy::{Accuracy, AccuracyReport};
use crate::moved::Moved;
use crate::tap::{Tap, When, SNAPLEN};
use crate::traffic::Traffic;
use netloom_engine::report::PipeReport;
use netloom_engine::Ownership;
use netloom_time::Instant;
use netloom_topo::doc::LinkParams;
use netloom_topo::{LinkId, LinkPatch, PatchError, PipeId};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Packets read from and written to one host, counted as on the wire: a super-packet counts as
/// its segments, and bytes are IP packets' bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCounters {
    /// Packets the host sent.
    pub packets_in: u64,
    /// Bytes the host sent.
    pub bytes_in: u64,
    /// Packets written to the host.
    pub packets_out: u64,
    /// Bytes written to the host.
    pub bytes_out: u64,
    /// Packets from this host that were not IPv4 or IPv6, were truncated, or were super-packets
    /// that cannot be split; dropped.
    pub malformed: u64,
    /// Packets from this host to an address no host has; dropped and counted, and answered with
    /// ICMP host (address) unreachable from the host's gateway router, if it has one.
    pub unknown_destination: u64,
    /// Super-packets from this host refused whole (each counted once) because splitting one
    /// would cost too much: a segment size below 8 bytes or more than 1,024 segments.
    #[serde(default)]
    pub refused_gso: u64,
    /// Packets from this host whose source address is not one of its own (spoofed); dropped
    /// unless the run allows spoofing, counted either way.
    #[serde(default)]
    pub spoofed: u64,
    /// ICMP errors routers sent to this host about its packets (docs/live.md, "Routers").
    #[serde(default)]
    pub icmp_errors: u64,
    /// ICMP errors to this host that the routers' rate limit held back.
    #[serde(default)]
    pub icmp_limited: u64,
}

impl HostCounters {
    /// Adds another worker's counts for the same host.
    pub fn add(&mut self, other: &HostCounters) {
        self.packets_in += other.packets_in;
        self.bytes_in += other.bytes_in;
        self.packets_out += other.packets_out;
        self.bytes_out += other.bytes_out;
        self.malformed += other.malformed;
        self.unknown_destination += other.unknown_destination;
        self.refused_gso += other.refused_gso;
        self.spoofed += other.spoofed;
        self.icmp_errors += other.icmp_errors;
        self.icmp_limited += other.icmp_limited;
    }
}

/// One pipe's figures now: its report so far and what is queued in it at this moment.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PipeState {
    /// Counters, drops and utilization, as `netloom sim --json` reports a pipe.
    #[serde(flatten)]
    pub report: PipeReport,
    /// Packets queued now (waiting or being serialized).
    pub queue_packets: u64,
    /// Bytes queued now.
    pub queue_bytes: u64,
    /// Its parameters now, after any change, as a link table of the topology file has them
    /// (`{"bw": "10Mbit", "delay": "5ms", ...}`); absent from reports of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<LinkParams>,
}

impl PipeState {
    /// Adds another worker's figures for the same pipe: its counts, and its queue (a replica
    /// holds none; the owner's is the pipe's). Every worker applies every change, so the
    /// parameters agree.
    fn add(&mut self, other: &PipeState) {
        self.report.add(&other.report);
        self.queue_packets += other.queue_packets;
        self.queue_bytes += other.queue_bytes;
    }
}

/// Which directions of a link a change is for, relative to the order its ends are named in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Direction {
    /// Both directions (default).
    #[default]
    #[serde(rename = "both")]
    Both,
    /// From the first end named to the second.
    #[serde(rename = "a-b")]
    AToB,
    /// From the second end named to the first.
    #[serde(rename = "b-a")]
    BToA,
}

impl Direction {
    /// The protocol's name of the direction.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Both => "both",
            Direction::AToB => "a-b",
            Direction::BToA => "b-a",
        }
    }
}

/// What a client asks of a running experiment: the requests of the control protocol
/// (docs/control.md), each a JSON object whose `cmd` names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Request {
    /// What the experiment is: its name, hosts with their addresses, and links.
    Info,
    /// Its figures so far (`Report`).
    Stats,
    /// Change some parameters of the link between `a` and `b` now, without flushing its queues.
    LinkSet {
        /// One end of the link.
        a: String,
        /// The other end.
        b: String,
        /// Which directions, relative to `a` and `b`.
        #[serde(default)]
        direction: Direction,
        /// The parameters to change, as a link table of the topology file has them
        /// (`{"delay": "5ms", "loss": "1%"}`; docs/topology.md).
        set: serde_json::Map<String, serde_json::Value>,
    },
    /// Take the link between `a` and `b` down (both directions) or bring it back up; routes
    /// follow.
    LinkState {
        /// One end of the link.
        a: String,
        /// The other end.
        b: String,
        /// Up (true) or down.
        up: bool,
    },
    /// Stop the experiment and tear it down, as Ctrl-C or `netloom stop` would.
    Stop,
    /// The run's events from now on, as JSON lines after the reply, until the run stops
    /// (a streaming request: docs/control.md).
    Events,
    /// Capture packets as pcapng after the reply, until the run stops or the client goes (a
    /// streaming request): of the link between `a` and `b`, or of every link of node `a`.
    Capture {
        /// A node: one end of the link, or the node whose links are captured.
        a: String,
        /// The link's other end; none to capture every link of `a`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        b: Option<String>,
        /// Which directions of the link, relative to `a` and `b`.
        #[serde(default)]
        direction: Direction,
        /// Which instant of a packet's passage the file records.
        #[serde(default)]
        when: When,
        /// Bytes of each packet kept.
        #[serde(default = "default_snaplen")]
        snaplen: u32,
    },
}

fn default_snaplen() -> u32 {
    SNAPLEN
}

impl Request {
    /// Every request's `cmd`, for error messages.
    pub const COMMANDS: &'static [&'static str] = &[
        "info",
        "stats",
        "link-set",
        "link-state",
        "stop",
        "events",
        "capture",
    ];
}

/// A change made to a running experiment's link: the reply to a link request, and the event
/// the experiment publishes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkChange {
    /// The link, as "a-b" with its ends in the order the request named them.
    pub link: String,
    /// The directions changed.
    pub direction: Direction,
    /// The parameters set, as the request gave them; empty for a link taken down or up.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub set: serde_json::Map<String, serde_json::Value>,
    /// The link's state after a `link-state` request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up: Option<bool>,
    /// When it was applied, ns since the run started.
    pub at_ns: u64,
}

/// A change of link parameters, resolved by the experiment from a request and applied by every
/// worker at `at` (each owns some pipes and keeps a replica of the others' configuration).
#[derive(Debug)]
pub(crate) struct Change {
    /// When the change was made: every worker applies it at this instant of the run's clock.
    pub at: Instant,
    /// What changes.
    pub what: ChangeKind,
}

/// What a `Change` does.
#[derive(Debug)]
pub(crate) enum ChangeKind {
    /// `patch` over the current configuration of each of `pipes`.
    Patch {
        pipes: Vec<PipeId>,
        patch: Box<LinkPatch>,
    },
    /// Both directions of `link` down or up.
    LinkUp { link: LinkId, up: bool },
}

/// What the experiment asks of a worker besides moving packets.
#[derive(Debug)]
pub(crate) enum Order {
    /// Apply a change (shared by every worker's order).
    Apply(Arc<Change>),
    /// Report this worker's figures.
    Snapshot,
    /// Report this worker's accuracy only (cheap, for the accuracy alarm).
    Accuracy,
    /// Start a capture: copy what its pipes do with packets into its queue.
    Capture(Tap),
    /// Report the traffic counted since the last such order (`Driver::count_traffic`), for
    /// repartitioning.
    Traffic,
    /// Take on this ownership at this instant of the run's clock, handing over to the other
    /// workers what changes owner (`repartition`); answered once every worker's transfer is in.
    Move(Arc<Ownership>, Instant),
}

/// Why the workers refused a change that is valid on its own but not on the link it is for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChangeRefusal {
    /// The patch does not apply to the pipe's configuration.
    #[error(transparent)]
    Patch(#[from] PatchError),
    /// A wireless standard for a link that a trace drives.
    #[error("a link is either wireless or driven by a trace, not both; it has a trace (set in the topology file)")]
    WirelessTraced,
    /// fq_codel in a run that repartitions.
    #[error("fq_codel keeps packets in flow queues, which cannot move between workers, and this run repartitions; use another aqm")]
    FqCodelMoves,
}

/// A worker's answer to an `Order`.
#[derive(Debug)]
pub(crate) enum Answer {
    /// The change applied, or why it could not be (the same on every worker: replicas agree).
    Applied(Result<(), ChangeRefusal>),
    /// The worker's figures.
    Snapshot(Box<Snapshot>),
    /// The worker's accuracy so far.
    Accuracy(AccuracyReport),
    /// The worker's traffic since the last `Order::Traffic`.
    Traffic(Box<Traffic>),
    /// What the worker handed over at a move, and how long it waited for the others.
    Moved(Moved),
}

/// One worker's figures at one moment, or all workers' once merged.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Snapshot {
    /// When it was taken.
    pub at: Instant,
    /// Packets inside the emulated network (their payloads held, or their descriptors in flight).
    pub in_flight: u64,
    /// Lateness and losses outside the model.
    pub accuracy: Accuracy,
    /// Per host, in `Topology::hosts` order: what this worker read from it and wrote to it.
    pub hosts: Vec<HostCounters>,
    /// Per pipe: its state, if this worker owns it or counted on its replica (merged: the sum
    /// of the workers' counts, the owner's queue).
    pub pipes: Vec<Option<PipeState>>,
    /// Packets handed from this worker to another, and the bytes those hand-offs moved.
    pub cross_core_hops: u64,
    /// (see `cross_core_hops`)
    pub cross_core_bytes: u64,
    /// Packets and bytes each worker handed to another, by worker index: one worker's
    /// snapshot has its own at its index (zeros before it), a merged one every worker's.
    pub handoffs: Vec<(u64, u64)>,
}

impl Snapshot {
    /// Adds another worker's part: counts add up, each pipe is its owner's.
    pub fn merge(&mut self, other: Snapshot) {
        self.at = self.at.max(other.at);
        self.in_flight += other.in_flight;
        self.cross_core_hops += other.cross_core_hops;
        self.cross_core_bytes += other.cross_core_bytes;
        if self.handoffs.len() < other.handoffs.len() {
            self.handoffs.resize(other.handoffs.len(), (0, 0));
        }
        for (mine, theirs) in self.handoffs.iter_mut().zip(&other.handoffs) {
            mine.0 += theirs.0;
            mine.1 += theirs.1;
        }
        self.accuracy.merge(&other.accuracy);
        for (mine, theirs) in self.hosts.iter_mut().zip(&other.hosts) {
            mine.add(theirs);
        }
        for (mine, theirs) in self.pipes.iter_mut().zip(other.pipes) {
            match (mine.as_mut(), theirs) {
                (Some(mine), Some(theirs)) => mine.add(&theirs),
                (None, theirs) => *mine = theirs,
                (Some(_), None) => {}
            }
        }
    }
}
