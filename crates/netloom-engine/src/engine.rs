//! The engine: a network (`Network`: the pipes, the routing tables, the packets in flight and
//! the events that move them pipe by pipe) and the synthetic flows it carries (`Flows`), driven
//! by one event loop. Sans-I/O: a driver asks `poll_at` and calls `advance(now)`.
//!
//! In a partitioned run each worker has an engine of its own that handles the pipes and hosts it
//! owns (see `Ownership`) and keeps replicas of the rest for their configuration only. A packet
//! whose exit from a pipe must be handled by another worker leaves as a `Handoff` the moment it
//! enters the pipe, carrying its exit time; the driver passes it on with `accept`.

use crate::packet::{PacketId, DEFAULT_TTL};
use crate::scheduler::Rank;
use crate::tap::Tapped;
use crate::traffic::{FlowSpec, Receiver, Sender};
use flows::Flows;
use hops::{Crossings, HopCounts};
use netloom_link::{PacketMeta, Pipe, Ticket};
use netloom_route::Routes;
use netloom_time::Instant;
use netloom_topo::{NodeId, PipeId, Topology};
use network::{Arrival, Network};
use rustc_hash::FxHashMap;

mod flows;
pub use flows::FlowStats;
mod hops;
pub use hops::HopCounting;
mod latencies;
pub use latencies::Latencies;
mod links;
mod migration;
pub use migration::Migration;
mod network;
mod remains;
pub use remains::Remains;
mod worker;

/// Something that happens at an instant.
#[derive(Clone, Copy, Debug)]
enum Event {
    /// A packet leaves `pipe` at the far end.
    Exit {
        pkt: PacketId,
        pipe: PipeId,
        ticket: Ticket,
    },
    /// A packet handed over by the worker that made it at a router enters its first pipe.
    Enter { pkt: PacketId, pipe: PipeId },
    /// A flow's sender asked to be polled (`Flows::on_wake`).
    Wake { flow: u32 },
    /// A time-varying link (`Topology::plans[plan]`) changes state.
    Reconfigure { plan: u32 },
    /// A deferred pipe (FQ-CoDel) takes its next packet out of its queues.
    Dequeue { pipe: PipeId },
}

impl Rank for Event {
    /// Simultaneous events: link changes first, then exits by pipe, then senders by flow, then
    /// deferred pipes' dequeues (so packets arriving at that instant are queued first; one that
    /// finds its pipe idle is served at once, without this event); all of which a worker knows
    /// without asking the others. Exits of one pipe at one instant keep the order the pipe
    /// scheduled them in; a packet handed over to enter a pipe ranks with the exits of that
    /// pipe.
    fn rank(&self) -> u64 {
        match *self {
            Event::Reconfigure { plan } => u64::from(plan),
            Event::Exit { pipe, .. } | Event::Enter { pipe, .. } => 1 << 32 | u64::from(pipe),
            Event::Wake { flow } => 2 << 32 | u64::from(flow),
            Event::Dequeue { pipe } => 3 << 32 | u64::from(pipe),
        }
    }
}

/// A packet handed in from outside with `Engine::inject`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Injected {
    /// Size on the wire, used for serialization and byte counters.
    pub bytes: u32,
    /// The caller's handle, given back in `Output`.
    pub token: u64,
    /// Its ECN field and a hash of its flow, read from its IP header.
    pub meta: PacketMeta,
    /// Its IPv4 TTL or IPv6 hop limit.
    pub ttl: u8,
}

impl Injected {
    /// A packet of `bytes` with handle `token`, not ECN-capable, of flow 0, with a fresh TTL:
    /// what a test or a caller without headers hands in.
    pub fn plain(bytes: u32, token: u64) -> Injected {
        Injected {
            bytes,
            token,
            meta: PacketMeta::default(),
            ttl: DEFAULT_TTL,
        }
    }
}

/// What became of a packet handed in with `inject` (see `Body::External`), in the order it
/// happened. Every token ends in exactly one `Delivered` or `Dropped` per copy: the original,
/// plus one more copy for each `Duplicated`, so the caller can count references to a payload.
/// A `Refused` comes just before the `Dropped` of the same copy, while the caller still holds
/// its payload (to answer with an ICMP error, or to fragment it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// A copy reached host `dst`, due at `at` (its emulated arrival time).
    Delivered {
        /// The caller's handle for the packet, as given to `inject`.
        token: u64,
        /// Emulated arrival time: the instant the copy left its last pipe, which may be earlier
        /// than the `advance` call that reports it.
        at: Instant,
        /// The destination host's node.
        dst: NodeId,
        /// A pipe on the way marked this copy CE (`ecn` links): the caller sets the packet's
        /// ECN field to CE before handing it over.
        ce: bool,
        /// The TTL or hop limit the copy arrives with: the injected one less one per router
        /// that forwarded it.
        ttl: u8,
    },
    /// Node `node` (a router, or the source host's gateway for a host without a route)
    /// refused to forward a copy, for the reason an Internet router would tell the sender of
    /// with an ICMP error. The copy's `Dropped` follows.
    Refused {
        /// The handle of the refused packet, as given to `inject`.
        token: u64,
        /// The router that refused it.
        node: NodeId,
        /// Why.
        why: Refusal,
        /// The copy's TTL or hop limit there (after the router took its one, if it forwards):
        /// what the fragments of a packet too big go on with.
        ttl: u8,
    },
    /// A pipe duplicated the packet: one more copy of `token` is now in flight.
    Duplicated {
        /// The handle of the duplicated packet, as given to `inject`.
        token: u64,
    },
    /// A copy was dropped inside the network (by the model, or for lack of a route).
    Dropped {
        /// The handle of the dropped packet, as given to `inject`.
        token: u64,
    },
}

/// Why a router refused to forward a packet (`Output::Refused`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Its TTL or hop limit would have reached zero here.
    TimeExceeded,
    /// The router has no route to its destination (none exists, or every way is down).
    NoRoute,
    /// It is larger than the MTU of the next link (`PipeConfig::mtu`, in bytes).
    TooBig {
        /// The next link's MTU.
        mtu: u32,
    },
}

/// Engine-wide counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct EngineCounters {
    /// Pipe traversals completed: the unit of emulation work.
    pub packet_hops: u64,
    /// Events processed.
    pub events: u64,
    /// Packets with no route to their destination.
    pub unroutable: u64,
    /// Packets dropped by a router because their TTL or hop limit ran out.
    pub ttl_expired: u64,
    /// Packets dropped by a router because they were larger than the next link's MTU.
    pub too_big: u64,
    /// Most packets in flight at once (in a partitioned run, the sum of each worker's most).
    pub max_in_flight: u64,
    /// Hand-offs between workers: exits handled by another worker than the one that scheduled
    /// them, plus, when payloads are cached, deliveries away from the source host's worker
    /// (the payload's home), which take one more hop back home.
    pub cross_core_hops: u64,
    /// Bytes those hops carry: a descriptor each, plus the payload when payloads are shipped.
    pub cross_core_bytes: u64,
    /// Scheduled link changes skipped by `advance_within` because a later change of the same
    /// link was due by then too (never in force); counted for the links whose a→b pipe this
    /// engine owns, so workers' counts add up.
    pub changes_skipped: u64,
}

impl EngineCounters {
    /// Adds another worker's counts to these, its peak in flight too: the workers' peaks add up.
    fn add(&mut self, c: &EngineCounters) {
        self.packet_hops += c.packet_hops;
        self.events += c.events;
        self.unroutable += c.unroutable;
        self.ttl_expired += c.ttl_expired;
        self.too_big += c.too_big;
        self.max_in_flight += c.max_in_flight;
        self.cross_core_hops += c.cross_core_hops;
        self.cross_core_bytes += c.cross_core_bytes;
        self.changes_skipped += c.changes_skipped;
    }
}

/// Why a request to the engine was refused.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// `add_flow` was given a source or destination that is a router; carries the node's name.
    #[error("node {0} is not a host")]
    NotAHost(String),
    /// `add_flow` found no route between the flow's hosts when it was added: the topology is
    /// disconnected, or links on every path are down.
    #[error("flow {src} -> {dst}: no route between these hosts")]
    NoRoute {
        /// Name of the flow's source host.
        src: String,
        /// Name of the flow's destination host.
        dst: String,
    },
    /// `add_flow` found a link on the flow's path whose MTU is smaller than its packets.
    #[error("flow {src} -> {dst}: its {bytes}-byte packets do not fit link {link} (mtu {mtu}); use packets of at most {mtu} bytes (size= on the flow) or a larger mtu on the link")]
    TooBig {
        /// Name of the flow's source host.
        src: String,
        /// Name of the flow's destination host.
        dst: String,
        /// The flow's packet size on the wire.
        bytes: u32,
        /// The link, as `a -- b`.
        link: String,
        /// Its MTU.
        mtu: u32,
    },
}

/// The event engine of one run, or of one worker of a partitioned run: the network and the
/// synthetic flows it carries. A driver (`sim::run`, `workers::run`, or a real-time loop) moves
/// it on with `poll_at` and `advance`.
pub struct Engine {
    /// Pipes, routes, the packets in flight and the events that move them.
    net: Network,
    /// The synthetic flows, polled when they ask to be and given their packets as they arrive.
    flows: Flows,
}

/// SplitMix64: derives independent, well-mixed seeds for pipes and flows from the run's seed.
pub fn derive_seed(seed: u64, domain: u64, index: u64) -> u64 {
    let mut z = seed
        ^ domain.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ index.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

// The domains of `derive_seed`: each kind of seeded thing draws from seeds of its own.
const SEED_PIPES: u64 = 1;
const SEED_FLOWS: u64 = 2;
const SEED_PLANS: u64 = 3;

impl Engine {
    /// Builds the engine for `topo` with one seeded RNG per pipe, and routes it.
    pub fn new(topo: Topology, seed: u64) -> Engine {
        let routes = Routes::compute(&topo);
        Engine::with_routes(topo, routes, seed)
    }

    /// As `new`, with `routes` already computed for `topo` (`Routes::compute`), so a caller that
    /// needs them too computes them once.
    pub fn with_routes(topo: Topology, routes: Routes, seed: u64) -> Engine {
        Engine {
            net: Network::new(topo, routes, seed),
            flows: Flows::default(),
        }
    }

    /// Lets the event wheel choose the width of its slots by how many events it fires
    /// (`Scheduler::adapt_grain`): what a virtual-time driver wants, as it runs events in
    /// batches as fast as it can; a real-time one keeps the fixed width. Results do not change.
    pub fn adapt_wheel(&mut self) {
        self.net.sched.adapt_grain();
    }

    /// From now on, count every packet that leaves a pipe for a next one, per (pipe, next pipe).
    pub fn enable_transition_counts(&mut self) {
        self.count_hops(HopCounting::Pairs);
    }

    /// From now on, count the hops as `how` says, if not already: pairs, or (for a worker of a
    /// partitioned run whose pipes stay where they are) only what `crossings` needs.
    pub fn count_hops(&mut self, how: HopCounting) {
        self.net.hops = match (std::mem::take(&mut self.net.hops), how) {
            (HopCounts::Off | HopCounts::Crossings(_), HopCounting::Pairs) => {
                HopCounts::Pairs(FxHashMap::default())
            }
            (HopCounts::Off, HopCounting::Crossings) => {
                let workers = self
                    .net
                    .worker
                    .as_ref()
                    .map_or(1, |w| w.ownership.workers());
                HopCounts::Crossings(Crossings::new(self.net.pipes.len(), workers))
            }
            (kept, _) => kept,
        };
    }

    /// What partitioning weighs a run by: packets offered to each pipe (in pipe order), and
    /// packets per (pipe, next pipe) hop since `enable_transition_counts` (empty if it was not
    /// called). A hop counts when the packet is offered to the next pipe, whether or not that
    /// pipe drops it.
    pub fn hop_counts(&self) -> (Vec<u64>, Vec<(PipeId, PipeId, u64)>) {
        let packets = self.offered().collect();
        (packets, self.net.hops.pairs().unwrap_or_default())
    }

    /// Packets offered to each pipe, in pipe order.
    fn offered(&self) -> impl Iterator<Item = u64> + '_ {
        self.net.pipes.iter().map(|p| p.counters().packets_in)
    }

    /// When counting crossings (`count_hops`), what `hop_counts`' pairs would add up to for the
    /// run's own partition, without a count per hop: the packets offered to each pipe, the
    /// hops into each pipe (the pairs' sums by next pipe), and the hops each worker took in
    /// from another's pipes (by the next pipe's owner, the pairs' sums whose pipes have
    /// different owners).
    pub fn crossings(&self) -> Option<(Vec<u64>, Vec<u64>, Vec<u64>)> {
        let (arrived, crossed) = self.net.hops.crossings()?.totals(self.offered());
        Some((self.offered().collect(), arrived, crossed))
    }

    /// What a hand-off's numbers must stay below to be taken in here (`Handoff::check`).
    pub fn handoff_bounds(&self) -> crate::HandoffBounds {
        crate::HandoffBounds {
            pipes: self.net.pipes.len() as u32,
            nodes: self.net.topo.nodes.len() as u32,
            hosts: self.net.topo.hosts.len() as u32,
            flows: self.flows.len() as u32,
            workers: self
                .net
                .worker
                .as_ref()
                .map_or(1, |w| w.ownership.workers() as u16),
        }
    }

    /// The topology the engine was built from, as loaded: later changes to pipes
    /// (`set_pipe_configs`, time-varying links) are in the pipes (`pipe`), not here.
    pub fn topology(&self) -> &Topology {
        &self.net.topo
    }

    /// How many times a link going down or up (by a change or a schedule) made the engine
    /// recompute its routes: what was derived from the paths is stale once this moves.
    pub fn reroutes(&self) -> u64 {
        self.net.reroutes
    }

    /// The routing tables in use, recomputed whenever a pipe goes down or comes up.
    pub fn routes(&self) -> &Routes {
        &self.net.routes
    }

    /// The engine's virtual time: the latest instant it advanced to or took a packet in at.
    pub fn now(&self) -> Instant {
        self.net.now
    }

    /// The engine-wide counters so far, `max_in_flight` including this engine's own peak (the
    /// high-water mark of its packet slab).
    pub fn counters(&self) -> EngineCounters {
        EngineCounters {
            max_in_flight: self.net.counters.max_in_flight
                + self.net.packets.capacity_used() as u64,
            ..self.net.counters
        }
    }

    /// Pipe `id`, for its configuration and counters. On a worker of a partitioned run, a pipe it
    /// does not own is a replica: its configuration is current, but its counters hold only the
    /// exits this worker handled, until `absorb` merges the owners' pipes.
    pub fn pipe(&self, id: PipeId) -> &Pipe {
        &self.net.pipes[id as usize]
    }

    /// Packets and bytes queued in `pipe` at `at` (waiting or being serialized), an instant not
    /// before the engine's `now` and not after its next event (`poll_at`).
    pub fn queue_len(&mut self, pipe: PipeId, at: Instant) -> (u64, u64) {
        self.net.pipes[pipe as usize].queue_len(at)
    }

    /// Adds a synthetic flow at `now`; its sender is first polled at `spec.start`, or at `now`
    /// (or the engine's time) if that is later: a flow added to a running engine starts then,
    /// rather than owing the past its packets. Its spec keeps the start it got.
    pub fn add_flow(
        &mut self,
        now: Instant,
        spec: FlowSpec,
        seed: u64,
    ) -> Result<u32, EngineError> {
        let ends = self.net.flow_ends(&spec)?;
        // A wake-up earlier than the wheel's position would fire there, at another time than the
        // flow's own, and be taken for a stale one.
        let spec = FlowSpec {
            start: spec.start.max(now).max(self.net.now),
            ..spec
        };
        Ok(self.flows.add(spec, ends, seed, &mut self.net))
    }

    /// Flows with their specs, protocol state and measurements, in the order they were added.
    pub fn flows(&self) -> impl Iterator<Item = (&FlowSpec, &Sender, &Receiver, &FlowStats)> {
        self.flows.iter()
    }

    /// Hands a packet from outside into the network at node `src`, bound for host `dst`, with
    /// its TTL (`Injected::ttl`). `src` is a host, or a router that answers from its own
    /// address (an ICMP error): a packet starts where it is made, so a router's answer takes the
    /// path back from the router. Returns false if `dst` is not a host (the packet is counted
    /// as unroutable).
    pub fn inject(&mut self, now: Instant, src: NodeId, dst: NodeId, packet: Injected) -> bool {
        self.net
            .take_in(now, src, dst, packet, Arrival::Alone, &mut self.flows)
            .is_some()
    }

    /// Hands in a super-packet from host `src` to host `dst` (a TCP packet that a host with
    /// segmentation offload sends whole) as its `segments`, in order, each with its TTL. The
    /// first pipe's queue takes or refuses the whole super-packet with its first segment, as the
    /// host's own queue would hold it as one entry, and serializes the segments back to back;
    /// each segment then goes on alone (random loss, the pipes after the first). Returns false
    /// as `inject` does (for every segment: they share their destination).
    pub fn inject_segments(
        &mut self,
        now: Instant,
        src: NodeId,
        dst: NodeId,
        segments: impl IntoIterator<Item = Injected>,
    ) -> bool {
        let Engine { net, flows } = self;
        let mut segments = segments.into_iter();
        let Some(lead) = segments.next() else {
            return true;
        };
        // What the queue decided for the lead holds for the rest, so they are handed in within
        // this one call: nothing can come between them.
        let Some(lead_queued) = net.take_in(now, src, dst, lead, Arrival::Lead, flows) else {
            net.counters.unroutable += segments.count() as u64;
            return false;
        };
        let following = Arrival::Following { lead_queued };
        for packet in segments {
            net.take_in(now, src, dst, packet, following, flows);
        }
        true
    }

    /// What became of injected packets since the last call, in order.
    pub fn drain_outputs(&mut self) -> std::vec::Drain<'_, Output> {
        self.net.outputs.drain(..)
    }

    /// Taps `pipe` (or stops tapping it): from now on, every packet it takes in, lets out or
    /// drops is reported by `drain_tapped`. In a partitioned run, tap a pipe on its owner.
    pub fn set_tap(&mut self, pipe: PipeId, on: bool) {
        self.net.taps.on[pipe as usize] = on;
    }

    /// What tapped pipes saw since the last call, in order. Drain it at least as often as
    /// `drain_outputs`: a packet's bytes are the caller's only until it is dropped or delivered.
    pub fn drain_tapped(&mut self) -> std::vec::Drain<'_, Tapped> {
        self.net.taps.seen.drain(..)
    }

    /// A time no later than the next thing to do, if any: exact when that event is close, else
    /// the start of the timing wheel's slot that holds it, so `advance` to it may find nothing
    /// due yet (ask again; the slot then gives the exact time).
    pub fn poll_at(&self) -> Option<Instant> {
        self.net.sched.peek_time()
    }

    /// Processes every event due at or before `now`.
    pub fn advance(&mut self, now: Instant) {
        self.run_due(now, u64::MAX, None);
    }

    /// Processes at most `budget` events due at or before `now`, and returns whether none is
    /// left: `advance` in steps, for a driver that looks at other things between them.
    pub fn advance_by(&mut self, now: Instant, budget: u64) -> bool {
        self.run_due(now, budget, None)
    }

    /// For a real-time driver, which must come back to its hosts, its orders and its stop flag
    /// whatever the topology asks: processes at most `budget` events due at or before `now`,
    /// and returns whether none is left. A schedule whose changes fall due faster than they
    /// can be applied has all but its last change due by `now` skipped (counted in
    /// `changes_skipped`): without this, a schedule changing every nanosecond kept `advance`
    /// from ever returning.
    pub fn advance_within(&mut self, now: Instant, budget: u64) -> bool {
        self.run_due(now, budget, Some(now))
    }

    /// Processes up to `budget` events due at or before `now`, skipping schedule changes to
    /// `skip_to` if given; true when none due is left.
    fn run_due(&mut self, now: Instant, budget: u64, skip_to: Option<Instant>) -> bool {
        let Engine { net, flows } = self;
        for _ in 0..budget {
            let Some((at, event)) = net.pop_due(now) else {
                net.now = net.now.max(now);
                return true;
            };
            net.now = at;
            net.counters.events += 1;
            match event {
                Event::Exit { pkt, pipe, ticket } => net.on_exit(pkt, pipe, ticket, flows),
                Event::Enter { pkt, pipe } => {
                    net.enter(pkt, pipe, Arrival::Alone, flows);
                }
                Event::Wake { flow } => flows.on_wake(flow, at, net),
                Event::Reconfigure { plan } => net.on_reconfigure(plan, skip_to),
                Event::Dequeue { pipe } => net.on_dequeue(pipe, at, flows),
            }
        }
        self.poll_at().is_none_or(|at| at > now)
    }

    /// The router that answers for a packet stuck at `node`: the node itself if it is a router;
    /// for a host, the router at the other end of its first link that is up (its gateway,
    /// which is where a host with a default route sends what it cannot route itself).
    pub fn router_for(&self, node: NodeId) -> Option<NodeId> {
        self.net.router_for(node)
    }

    /// Packets whose TTL ran out at each node, by `NodeId` (only routers count any).
    pub fn ttl_expired(&self) -> &[u64] {
        &self.net.expired
    }

    /// Packets currently inside the network.
    pub fn in_flight(&self) -> usize {
        self.net.packets.live() + self.net.absorbed_in_flight
    }
}
