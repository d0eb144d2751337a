//! The engine: owns the pipes, the routing tables and the packets in flight, and moves each packet
//! pipe by pipe along its route. Sans-I/O: a driver asks `poll_at` and calls `advance(now)`.
//!
//! In a partitioned run each worker has an engine of its own that handles the pipes and hosts it
//! owns (see `Ownership`) and keeps replicas of the rest for their configuration only. A packet
//! whose exit from a pipe must be handled by another worker leaves as a `Handoff` the moment it
//! enters the pipe, carrying its exit time; the driver passes it on with `accept`.

use crate::ownership::{Ownership, Payload};
use crate::packet::{Body, Handoff, Packet, PacketId, Slab, DEFAULT_TTL, DELIVER, NO_ROUTE};
use crate::scheduler::{Rank, Scheduler};
use crate::tap::{Carried, Seen, Tapped};
use crate::traffic::{FlowSpec, Receiver, Sender, ACK_BYTES};
use hdrhistogram::Histogram;
use netloom_link::{
    Admission, Departure, Dequeued, DropCause, Ecn, Hold, PacketMeta, Pipe, PipeConfig, Ticket,
    Timeline,
};
use netloom_route::Routes;
use netloom_time::Instant;
use netloom_topo::{LinkId, NodeId, NodeKind, PipeId, Topology};
use rustc_hash::FxHashMap;
use std::sync::Arc;

mod remains;
pub use remains::Remains;
mod migration;
pub use migration::Migration;
mod latencies;
pub use latencies::Latencies;
mod hops;
pub use hops::HopCounting;
use hops::{Crossings, HopCounts};

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
    /// A flow's sender asked to be polled.
    Wake { flow: u32 },
    /// A time-varying link (`Topology::plans[plan]`) changes state.
    Reconfigure { plan: u32 },
    /// A deferred pipe (FQ-CoDel) takes its next packet out of its queues.
    Dequeue { pipe: PipeId },
}

impl Rank for Event {
    /// Simultaneous events: link changes first, then exits by pipe, then senders by flow, then
    /// deferred pipes' dequeues (so packets arriving at that instant are queued first); all of
    /// which a worker knows without asking the others. Exits of one pipe at one instant keep
    /// the order the pipe scheduled them in; a packet handed over to enter a pipe ranks with
    /// the exits of that pipe.
    fn rank(&self) -> u64 {
        match *self {
            Event::Reconfigure { plan } => u64::from(plan),
            Event::Exit { pipe, .. } | Event::Enter { pipe, .. } => 1 << 32 | u64::from(pipe),
            Event::Wake { flow } => 2 << 32 | u64::from(flow),
            Event::Dequeue { pipe } => 3 << 32 | u64::from(pipe),
        }
    }
}

/// Per-flow measurements, kept by the engine (the sender and receiver keep their own protocol state).
pub struct FlowStats {
    /// Data packets the sender put on the network (including retransmissions).
    pub sent: u64,
    /// Data packets of this flow dropped inside the network, whatever the cause.
    pub lost: u64,
    /// ACKs of this flow dropped inside the network.
    pub acks_lost: u64,
    /// One-way latency of delivered data packets, in nanoseconds.
    pub latency_ns: Latencies,
}

struct Flow {
    spec: FlowSpec,
    sender: Sender,
    receiver: Receiver,
    src_host: u32,
    dst_host: u32,
    /// The time of the one `Wake` event that is current; older ones are stale and ignored.
    wake: Option<Instant>,
    stats: FlowStats,
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

/// The event engine of one run, or of one worker of a partitioned run: the pipes, the routing
/// tables, the packet descriptors in flight and the synthetic flows. A driver (`sim::run`,
/// `workers::run`, or a real-time loop) moves it on with `poll_at` and `advance`.
pub struct Engine {
    topo: Topology,
    routes: Routes,
    /// How many times the routes were recomputed (`reroutes`).
    reroutes: u64,
    pipes: Vec<Pipe>,
    /// For each pipe, the node it leads to; `NodeId::MAX` for a shared medium (depends on entry side).
    pipe_head: Vec<NodeId>,
    packets: Slab,
    sched: Scheduler<Event>,
    flows: Vec<Flow>,
    outputs: Vec<Output>,
    now: Instant,
    counters: EngineCounters,
    /// What partitioning counts of the hops (`count_hops`); nothing unless asked: the
    /// forwarding path should not pay for it otherwise.
    hops: HopCounts,
    /// Where each time-varying link is in its plan, in the order of `Topology::plans`.
    timelines: Vec<Timeline>,
    /// Set when this engine is one worker of a partitioned run.
    worker: Option<Worker>,
    /// Packets for each other worker, in the order they were scheduled.
    handoffs: Vec<Vec<Handoff>>,
    /// Packets in flight on workers this one absorbed.
    absorbed_in_flight: usize,
    /// Whether each pipe is tapped (`set_tap`).
    taps: Vec<bool>,
    /// What tapped pipes saw since the last `drain_tapped`.
    tapped: Vec<Tapped>,
    /// Whether each node (by `NodeId`) is a router: routers take one off a packet's TTL.
    router: Vec<bool>,
    /// Packets whose TTL ran out at each node (by `NodeId`; only routers count any).
    expired: Vec<u64>,
    /// For each deferred pipe, the time of its pending `Dequeue` event (earlier ones are
    /// stale); `None` when none is pending.
    dequeue_at: Vec<Option<Instant>>,
    /// What a deferred pipe's `dequeue` reports, kept to reuse its allocation.
    dequeued: Vec<Dequeued>,
    /// The packets a deferred pipe's `hold` dropped to make room, kept likewise.
    evicted: Vec<u32>,
}

/// How a packet meets the pipe it enters: a super-packet's segments at their first pipe are
/// queued together (see `Engine::inject_segments`); every other entry is `Alone`.
#[derive(Clone, Copy)]
enum Arrival {
    /// A packet of its own: the pipe's queue decides for it.
    Alone,
    /// The first segment of a super-packet: the queue decides for the whole super-packet.
    Lead,
    /// A later segment: the queue decided with the first, and took it if `lead_queued`.
    Following { lead_queued: bool },
}

/// One worker's place in a partitioned run.
struct Worker {
    me: u16,
    ownership: Arc<Ownership>,
    /// Bit p set when this worker owns pipe p: every hop asks whether its next pipe is here,
    /// and inet's 16,520 pipes take 2 KB as bits against 33 KB for the owner table
    /// (`Ownership::pipe_owner`), which every hop's other loads evict from the caches.
    mine: Vec<u64>,
}

impl Worker {
    fn new(me: u16, ownership: Arc<Ownership>) -> Worker {
        let pipes = ownership.pipes();
        let mut mine = vec![0u64; pipes.div_ceil(64)];
        for p in (0..pipes).filter(|&p| ownership.pipe_owner(p as PipeId) == me) {
            mine[p / 64] |= 1 << (p % 64);
        }
        Worker {
            me,
            ownership,
            mine,
        }
    }

    /// Who handles what follows packet `p`'s exit from its pipe: the owner of its next pipe or
    /// of its destination host (its home, when packets are delivered at home).
    // Inlined: it runs once per packet-hop (`schedule_exit`).
    #[inline(always)]
    fn exit_handler(&self, p: &Packet) -> u16 {
        match (p.next, p.body) {
            (DELIVER, Body::External { home, .. }) if self.ownership.delivers_at_home() => home,
            (DELIVER, _) => self.ownership.host_owner(p.dst_host),
            (NO_ROUTE, _) => self.me,
            (next, _) if self.owns(next) => self.me,
            (next, _) => self.ownership.pipe_owner(next),
        }
    }

    /// Does this worker own `pipe`?
    #[inline(always)]
    fn owns(&self, pipe: PipeId) -> bool {
        self.mine[pipe as usize / 64] & 1 << (pipe % 64) != 0
    }
}

/// Loads what firing `events` reads first and waits on longest: each leaving packet's
/// descriptor, the pipe it leaves and the pipe it goes on to. On a large topology each is a cache
/// miss (inet's pipes and packets in flight take megabytes), and one after another they stall
/// every event; loaded here in one pass, a slot's misses overlap (docs/performance.md).
fn warm(events: &[(u64, Event)], packets: &Slab, pipes: &[Pipe]) {
    let mut kept = 0u64;
    for &(_, event) in events {
        if let Event::Exit { pkt, pipe, .. } = event {
            let p = packets.get(pkt);
            let next = p.next;
            kept ^= u64::from(matches!(p.body, Body::Data { .. }));
            kept ^= pipes[pipe as usize].counters().packets_out;
            kept ^= pipes.get(next as usize).map_or(0, Pipe::touch);
        }
    }
    std::hint::black_box(kept);
}

/// The bytes a hand-off moves between workers.
fn crossing_bytes(payload: Payload, packet_bytes: u32) -> u64 {
    let descriptor = std::mem::size_of::<Handoff>() as u64;
    match payload {
        Payload::Cache => descriptor,
        Payload::Ship => descriptor + u64::from(packet_bytes),
    }
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

/// Per-flow latency histograms: 3 significant digits with a resolution of 1 us, 32-bit
/// counters, sized for 10 ms at first and grown only as far as the flow's largest latency (up
/// to 100 s; larger values are recorded as 100 s). A flow with latencies under 100 ms costs about
/// 30 kB; a fixed range of 1 ns to an hour with 64-bit counters cost 260 kB per flow.
const MIN_LATENCY_NS: u64 = 1_000;
const INITIAL_MAX_LATENCY_NS: u64 = 10_000_000;
const MAX_LATENCY_NS: u64 = 100_000_000_000;

fn latency_histogram() -> Histogram<u32> {
    let mut h = Histogram::new_with_bounds(MIN_LATENCY_NS, INITIAL_MAX_LATENCY_NS, 3)
        .expect("bounds and 3 significant digits are valid");
    h.auto(true);
    h
}

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
        let pipes = topo
            .pipes
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let seed = derive_seed(seed, SEED_PIPES, i as u64);
                Pipe::with_data(p.config, seed, p.data.clone())
            })
            .collect();
        let pipe_head = (0..topo.pipes.len() as PipeId)
            .map(|p| {
                let link = topo.pipes[p as usize].link;
                if topo.is_shared(link) {
                    NodeId::MAX
                } else {
                    let l = &topo.links[link as usize];
                    topo.far_end(p, if l.ab == p { l.a } else { l.b })
                }
            })
            .collect();
        let taps = vec![false; topo.pipes.len()];
        let mut engine = Engine {
            taps,
            tapped: Vec::new(),
            topo,
            routes,
            reroutes: 0,
            pipes,
            pipe_head,
            packets: Slab::default(),
            sched: Scheduler::default(),
            flows: Vec::new(),
            outputs: Vec::new(),
            now: Instant::ZERO,
            counters: EngineCounters::default(),
            hops: HopCounts::Off,
            timelines: Vec::new(),
            worker: None,
            handoffs: Vec::new(),
            absorbed_in_flight: 0,
            router: Vec::new(),
            expired: Vec::new(),
            dequeue_at: Vec::new(),
            dequeued: Vec::new(),
            evicted: Vec::new(),
        };
        engine.router = engine
            .topo
            .nodes
            .iter()
            .map(|n| n.kind == NodeKind::Router)
            .collect();
        engine.expired = vec![0; engine.router.len()];
        engine.start_plans(seed);
        engine
    }

    /// The engine of worker `me` in a run partitioned by `ownership`. Every worker is built
    /// from the same topology and seed, so replicated state (routes, time-varying links) agrees.
    pub fn partitioned(topo: Topology, seed: u64, ownership: Arc<Ownership>, me: usize) -> Engine {
        Engine::new(topo, seed).join(ownership, me)
    }

    /// The engines of every worker of a run partitioned by `ownership`, in worker order, as
    /// `partitioned` builds them but from `routes` computed once for `topo` (a copy is a memcpy
    /// of the tables; computing them is a shortest-path search per host).
    pub fn partitioned_all(
        topo: &Topology,
        routes: &Routes,
        seed: u64,
        ownership: &Arc<Ownership>,
    ) -> Vec<Engine> {
        (0..ownership.workers())
            .map(|me| Engine::partitioned_with_routes(topo, routes, seed, ownership, me))
            .collect()
    }

    /// Worker `me` alone, as `partitioned_all` makes it, for a run whose other workers are
    /// elsewhere (other processes).
    pub fn partitioned_with_routes(
        topo: &Topology,
        routes: &Routes,
        seed: u64,
        ownership: &Arc<Ownership>,
        me: usize,
    ) -> Engine {
        Engine::with_routes(topo.clone(), routes.clone(), seed).join(ownership.clone(), me)
    }

    /// Makes this engine worker `me` of `ownership`.
    fn join(mut self, ownership: Arc<Ownership>, me: usize) -> Engine {
        assert!(
            me < ownership.workers(),
            "worker {me} is not in the partition"
        );
        self.handoffs = (0..ownership.workers()).map(|_| Vec::new()).collect();
        self.worker = Some(Worker::new(me as u16, ownership));
        self
    }

    /// Whether hand-offs carry payloads along (a partitioned run with `Payload::Ship`).
    pub fn ships_payloads(&self) -> bool {
        self.worker
            .as_ref()
            .is_some_and(|w| w.ownership.payload() == Payload::Ship)
    }

    /// This engine's worker in a partitioned run; 0 for a single engine.
    pub fn worker(&self) -> usize {
        self.worker.as_ref().map_or(0, |w| usize::from(w.me))
    }

    /// Does this engine own `pipe` (its state, its figures)? A single engine owns them all.
    pub fn owns_pipe(&self, pipe: PipeId) -> bool {
        self.worker.as_ref().is_none_or(|w| w.owns(pipe))
    }

    /// Does this engine handle host `host` (by position in `Topology::hosts`): read what it sends,
    /// and drive its synthetic flows? A single engine handles every host.
    pub fn owns_host(&self, host: u32) -> bool {
        self.worker
            .as_ref()
            .is_none_or(|w| w.ownership.host_owner(host) == w.me)
    }

    /// Packets for worker `to` scheduled since the last call, in order: give each to its
    /// engine's `accept` before that engine advances to the packet's time.
    pub fn take_handoffs(&mut self, to: usize) -> std::vec::Drain<'_, Handoff> {
        self.handoffs[to].drain(..)
    }

    /// The earliest time, in ns, that anything this worker holds can happen (`u64::MAX`:
    /// nothing): its own next event (`poll_at`, a lower bound) and the intended time of each
    /// hand-off not yet taken, which its receiver fires then (or at once, if that has passed).
    /// The least of every worker's after a window is where the next window starts, so the
    /// window loops learn it in the same exchange that delivers the hand-offs.
    pub fn next_with_handoffs(&self) -> u64 {
        let own = self.poll_at().map_or(u64::MAX, |t| t.as_nanos());
        self.handoffs
            .iter()
            .flatten()
            .map(|h| h.at.as_nanos())
            .fold(own, u64::min)
    }

    /// Takes in a packet from another worker; it leaves its pipe (or enters its first one) at
    /// its intended time (or at once, if that has passed: the rest of its path then shifts,
    /// which is why a real-time driver measures how late each hand-off arrives).
    pub fn accept(&mut self, handoff: Handoff) {
        let pipe = handoff.packet.next;
        let pkt = self.packets.insert(handoff.packet);
        let event = match handoff.exit {
            Some((pipe, ticket)) => Event::Exit { pkt, pipe, ticket },
            None => Event::Enter { pkt, pipe },
        };
        self.sched.push(handoff.at, event);
    }

    /// Folds the results of another worker of the same partitioned run into this one, so that
    /// once every worker is absorbed this engine reports the whole run: each pipe and each flow
    /// end as its owner left it, and counts kept on several workers add up.
    pub fn absorb(&mut self, mut other: Engine) {
        let (Some(w), Some(theirs)) = (&self.worker, &other.worker) else {
            panic!("only workers of a partitioned run absorb each other");
        };
        let (ownership, them) = (w.ownership.clone(), theirs.me);
        for (p, (mine, other_pipe)) in self.pipes.iter_mut().zip(&mut other.pipes).enumerate() {
            if ownership.pipe_owner(p as PipeId) == them {
                std::mem::swap(mine, other_pipe);
            }
            mine.absorb_counters(other_pipe.counters());
        }
        for (mine, theirs) in self.flows.iter_mut().zip(std::mem::take(&mut other.flows)) {
            if ownership.host_owner(mine.src_host) == them {
                mine.sender = theirs.sender;
                mine.stats.sent = theirs.stats.sent;
                mine.wake = theirs.wake;
            }
            if ownership.host_owner(mine.dst_host) == them {
                mine.receiver = theirs.receiver;
                mine.stats.latency_ns = theirs.stats.latency_ns;
            }
            mine.stats.lost += theirs.stats.lost;
            mine.stats.acks_lost += theirs.stats.acks_lost;
        }
        let c = other.counters();
        let mine = &mut self.counters;
        mine.packet_hops += c.packet_hops;
        mine.events += c.events;
        mine.unroutable += c.unroutable;
        mine.ttl_expired += c.ttl_expired;
        mine.too_big += c.too_big;
        for (mine, theirs) in self.expired.iter_mut().zip(&other.expired) {
            *mine += theirs;
        }
        mine.max_in_flight += c.max_in_flight;
        mine.cross_core_hops += c.cross_core_hops;
        mine.cross_core_bytes += c.cross_core_bytes;
        mine.changes_skipped += c.changes_skipped;
        self.hops.add(std::mem::take(&mut other.hops));
        self.absorbed_in_flight += other.packets.live();
    }

    /// Puts each time-varying link in its plan's first state and schedules its first change.
    fn start_plans(&mut self, seed: u64) {
        for (i, plan) in self.topo.plans.iter().enumerate() {
            let seed = derive_seed(seed, SEED_PLANS, i as u64);
            self.timelines.push(Timeline::new(plan.plan.clone(), seed));
        }
        for plan in 0..self.timelines.len() as u32 {
            self.enter_state(plan);
        }
    }

    /// A time-varying link's change is due now: moves its timeline on and applies the state.
    /// With `skip_to`, changes of a schedule due by then before its last one due are skipped
    /// (counted), and the last is scheduled in their place.
    fn on_reconfigure(&mut self, plan: u32, skip_to: Option<Instant>) {
        let timeline = &mut self.timelines[plan as usize];
        let skipped = skip_to.map_or(0, |to| timeline.skip_to(to));
        if let (true, Some(at)) = (skipped > 0, timeline.poll_at()) {
            let link = &self.topo.links[self.topo.plans[plan as usize].link as usize];
            if self.owns_pipe(link.ab) {
                self.counters.changes_skipped += skipped;
            }
            self.sched.push(at, Event::Reconfigure { plan });
            return;
        }
        self.timelines[plan as usize].advance(self.now);
        self.enter_state(plan);
    }

    /// Applies the current state of `plan` to its link's pipes (without flushing them) and
    /// schedules the next change.
    fn enter_state(&mut self, plan: u32) {
        let timeline = &self.timelines[plan as usize];
        let (state, next) = (timeline.state(), timeline.poll_at());
        let p = &self.topo.plans[plan as usize];
        let (ab, ba) = p.states[state as usize];
        let l = &self.topo.links[p.link as usize];
        let changes = if l.ab == l.ba {
            vec![(l.ab, ab)]
        } else {
            vec![(l.ab, ab), (l.ba, ba)]
        };
        self.reconfigure(&changes);
        if let Some(at) = next {
            self.sched.push(at, Event::Reconfigure { plan });
        }
    }

    /// Lets the event wheel choose the width of its slots by how many events it fires
    /// (`Scheduler::adapt_grain`): what a virtual-time driver wants, as it runs events in
    /// batches as fast as it can; a real-time one keeps the fixed width. Results do not change.
    pub fn adapt_wheel(&mut self) {
        self.sched.adapt_grain();
    }

    /// From now on, count every packet that leaves a pipe for a next one, per (pipe, next pipe).
    pub fn enable_transition_counts(&mut self) {
        self.count_hops(HopCounting::Pairs);
    }

    /// From now on, count the hops as `how` says, if not already: pairs, or (for a worker of a
    /// partitioned run whose pipes stay where they are) only what `crossings` needs.
    pub fn count_hops(&mut self, how: HopCounting) {
        self.hops = match (std::mem::take(&mut self.hops), how) {
            (HopCounts::Off | HopCounts::Crossings(_), HopCounting::Pairs) => {
                HopCounts::Pairs(FxHashMap::default())
            }
            (HopCounts::Off, HopCounting::Crossings) => {
                let workers = self.worker.as_ref().map_or(1, |w| w.ownership.workers());
                HopCounts::Crossings(Crossings::new(self.pipes.len(), workers))
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
        (packets, self.hops.pairs().unwrap_or_default())
    }

    /// Packets offered to each pipe, in pipe order.
    fn offered(&self) -> impl Iterator<Item = u64> + '_ {
        self.pipes.iter().map(|p| p.counters().packets_in)
    }

    /// When counting crossings (`count_hops`), what `hop_counts`' pairs would add up to for the
    /// run's own partition, without a count per hop: the packets offered to each pipe, the
    /// hops into each pipe (the pairs' sums by next pipe), and the hops each worker took in
    /// from another's pipes (by the next pipe's owner, the pairs' sums whose pipes have
    /// different owners).
    pub fn crossings(&self) -> Option<(Vec<u64>, Vec<u64>, Vec<u64>)> {
        let (arrived, crossed) = self.hops.crossings()?.totals(self.offered());
        Some((self.offered().collect(), arrived, crossed))
    }

    /// The topology the engine was built from, as loaded: later changes to pipes
    /// (`set_pipe_configs`, time-varying links) are in the pipes (`pipe`), not here.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// How many times a link going down or up (by a change or a schedule) made the engine
    /// recompute its routes: what was derived from the paths is stale once this moves.
    pub fn reroutes(&self) -> u64 {
        self.reroutes
    }

    /// The routing tables in use, recomputed whenever a pipe goes down or comes up.
    pub fn routes(&self) -> &Routes {
        &self.routes
    }

    /// The engine's virtual time: the latest instant it advanced to or took a packet in at.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The engine-wide counters so far, `max_in_flight` including this engine's own peak (the
    /// high-water mark of its packet slab).
    pub fn counters(&self) -> EngineCounters {
        EngineCounters {
            max_in_flight: self.counters.max_in_flight + self.packets.capacity_used() as u64,
            ..self.counters
        }
    }

    /// Pipe `id`, for its configuration and counters. On a worker of a partitioned run, a pipe it
    /// does not own is a replica: its configuration is current, but its counters hold only the
    /// exits this worker handled, until `absorb` merges the owners' pipes.
    pub fn pipe(&self, id: PipeId) -> &Pipe {
        &self.pipes[id as usize]
    }

    /// Packets and bytes queued in `pipe` at `at` (waiting or being serialized), an instant not
    /// before the engine's `now` and not after its next event (`poll_at`).
    pub fn queue_len(&mut self, pipe: PipeId, at: Instant) -> (u64, u64) {
        self.pipes[pipe as usize].queue_len(at)
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
        let host = |n: NodeId| {
            self.routes
                .host_index(n)
                .ok_or_else(|| EngineError::NotAHost(self.topo.node(n).name.clone()))
        };
        let (src_host, dst_host) = (host(spec.src)?, host(spec.dst)?);
        if self.routes.path(&self.topo, spec.src, spec.dst).is_none() {
            return Err(EngineError::NoRoute {
                src: self.topo.node(spec.src).name.clone(),
                dst: self.topo.node(spec.dst).name.clone(),
            });
        }
        // Synthetic packets cannot be fragmented or learn the path's MTU: a flow whose data
        // packets a link of its path cannot carry is refused here rather than lost packet by
        // packet (its ACKs, of `ACK_BYTES`, fit any valid MTU).
        let bytes = spec.kind.packet_bytes();
        let path = self.routes.path(&self.topo, spec.src, spec.dst);
        let narrow = path.iter().flatten().find_map(|&p| {
            let mtu = self.pipes[p as usize].config().mtu;
            (bytes > mtu).then_some((p, mtu))
        });
        if let Some((pipe, mtu)) = narrow {
            let l = &self.topo.links[self.topo.pipes[pipe as usize].link as usize];
            return Err(EngineError::TooBig {
                src: self.topo.node(spec.src).name.clone(),
                dst: self.topo.node(spec.dst).name.clone(),
                bytes,
                link: format!(
                    "{} -- {}",
                    self.topo.node(l.a).name,
                    self.topo.node(l.b).name
                ),
                mtu,
            });
        }
        // A wake-up earlier than the wheel's position would fire there, at another time than the
        // flow's own, and be taken for a stale one.
        let spec = FlowSpec {
            start: spec.start.max(now).max(self.now),
            ..spec
        };
        let id = self.flows.len() as u32;
        let flow_seed = derive_seed(seed, SEED_FLOWS, id as u64);
        self.flows.push(Flow {
            sender: Sender::new(&spec, flow_seed),
            receiver: Receiver::new(&spec),
            spec,
            src_host,
            dst_host,
            wake: Some(spec.start),
            stats: FlowStats {
                sent: 0,
                lost: 0,
                acks_lost: 0,
                latency_ns: Latencies::new(),
            },
        });
        if self.owns_host(src_host) {
            self.sched.push(spec.start, Event::Wake { flow: id });
        }
        Ok(id)
    }

    /// Hands a packet from outside into the network at node `src`, bound for host `dst`, with
    /// its TTL (`Injected::ttl`). `src` is a host, or a router that answers from its own
    /// address (an ICMP error): a packet starts where it is made, so a router's answer takes the
    /// path back from the router. Returns false if `dst` is not a host (the packet is counted
    /// as unroutable).
    pub fn inject(&mut self, now: Instant, src: NodeId, dst: NodeId, packet: Injected) -> bool {
        self.take_in(now, src, dst, packet, Arrival::Alone)
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
        let mut segments = segments.into_iter();
        let Some(lead) = segments.next() else {
            return true;
        };
        // What the queue decided for the lead holds for the rest, so they are handed in within
        // this one call: nothing can come between them.
        let Some(lead_queued) = self.take_in(now, src, dst, lead, Arrival::Lead) else {
            self.counters.unroutable += segments.count() as u64;
            return false;
        };
        for packet in segments {
            self.take_in(now, src, dst, packet, Arrival::Following { lead_queued });
        }
        true
    }

    /// `inject`, with how the packet meets its first pipe: `None` if `dst` is not a host, else
    /// whether its first pipe took it (`enter`).
    fn take_in(
        &mut self,
        now: Instant,
        src: NodeId,
        dst: NodeId,
        packet: Injected,
        arrival: Arrival,
    ) -> Option<bool> {
        let Injected {
            bytes,
            token,
            meta,
            ttl,
        } = packet;
        self.now = self.now.max(now);
        let Some(dst_host) = self.routes.host_index(dst) else {
            self.counters.unroutable += 1;
            return None;
        };
        let home = self.worker.as_ref().map_or(0, |w| w.me);
        debug_assert!(
            self.routes
                .host_index(src)
                .is_none_or(|h| self.owns_host(h)),
            "a worker takes in packets only from the hosts it owns"
        );
        let pkt = self.packets.insert(Packet {
            body: Body::External {
                token,
                home,
                ecn: meta.ecn,
                flow: meta.flow,
                ttl,
            },
            bytes,
            at: src,
            dst_host,
            next: NO_ROUTE,
            sent_at: self.now,
        });
        Some(self.start(pkt, arrival))
    }

    /// What became of injected packets since the last call, in order.
    pub fn drain_outputs(&mut self) -> std::vec::Drain<'_, Output> {
        self.outputs.drain(..)
    }

    /// Taps `pipe` (or stops tapping it): from now on, every packet it takes in, lets out or
    /// drops is reported by `drain_tapped`. In a partitioned run, tap a pipe on its owner.
    pub fn set_tap(&mut self, pipe: PipeId, on: bool) {
        self.taps[pipe as usize] = on;
    }

    /// What tapped pipes saw since the last call, in order. Drain it at least as often as
    /// `drain_outputs`: a packet's bytes are the caller's only until it is dropped or delivered.
    pub fn drain_tapped(&mut self) -> std::vec::Drain<'_, Tapped> {
        self.tapped.drain(..)
    }

    /// Reports `p` to the tap of `pipe`, if there is one.
    fn tap(&mut self, pipe: PipeId, p: &Packet, seen: Seen) {
        if !self.taps[pipe as usize] {
            return;
        }
        let carried = match p.body {
            Body::External { token, .. } => Carried::External { token },
            Body::Data { flow, seg, .. } => Carried::Data { flow, seq: seg.seq },
            Body::Ack { flow, ack, .. } => Carried::Ack {
                flow,
                next: ack.next,
            },
        };
        self.tapped.push(Tapped {
            pipe,
            at: self.now,
            seen,
            carried,
            bytes: p.bytes,
        });
    }

    /// `tap` for a packet still in flight, copied out only when `pipe` is tapped.
    #[inline]
    fn tap_held(&mut self, pipe: PipeId, pkt: PacketId, seen: Seen) {
        if self.taps[pipe as usize] {
            let p = *self.packets.get(pkt);
            self.tap(pipe, &p, seen);
        }
    }

    /// A time no later than the next thing to do, if any: exact when that event is close, else
    /// the start of the timing wheel's slot that holds it, so `advance` to it may find nothing
    /// due yet (ask again; the slot then gives the exact time).
    pub fn poll_at(&self) -> Option<Instant> {
        self.sched.peek_time()
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
        for _ in 0..budget {
            let (packets, pipes) = (&self.packets, &self.pipes);
            let Some((at, event)) = self
                .sched
                .pop_due(now, |events| warm(events, packets, pipes))
            else {
                self.now = self.now.max(now);
                return true;
            };
            self.now = at;
            self.counters.events += 1;
            match event {
                Event::Exit { pkt, pipe, ticket } => self.on_exit(pkt, pipe, ticket),
                Event::Enter { pkt, pipe } => {
                    self.enter(pkt, pipe, Arrival::Alone);
                }
                Event::Wake { flow } => {
                    if self.flows[flow as usize].wake == Some(at) {
                        self.flows[flow as usize].wake = None;
                        self.poll_flow(flow);
                    }
                }
                Event::Reconfigure { plan } => self.on_reconfigure(plan, skip_to),
                Event::Dequeue { pipe } => self.on_dequeue(pipe, at),
            }
        }
        self.poll_at().is_none_or(|at| at > now)
    }

    /// Changes pipes' parameters at `now`, without flushing what they carry: everything due
    /// before `now` happens first (as `advance(now)`), packets already inside keep their exit
    /// times, and the next packet meets the new parameters. A pipe that goes down drops what it
    /// holds; routes are recomputed once if any pipe went down or came up.
    pub fn set_pipe_configs(&mut self, now: Instant, changes: &[(PipeId, PipeConfig)]) {
        self.advance(now);
        self.reconfigure(changes);
    }

    /// Takes a link down or brings it up at `now` (both directions; see `set_pipe_configs`).
    pub fn set_link_up(&mut self, now: Instant, link: LinkId, up: bool) {
        let l = &self.topo.links[link as usize];
        let pipes = if l.ab == l.ba {
            vec![l.ab]
        } else {
            vec![l.ab, l.ba]
        };
        let changes: Vec<_> = pipes
            .into_iter()
            .map(|p| {
                (
                    p,
                    PipeConfig {
                        up,
                        ..*self.pipes[p as usize].config()
                    },
                )
            })
            .collect();
        self.set_pipe_configs(now, &changes);
    }

    /// Whether both directions of `link` are up (a link taken down by `set_link_up`, or by a
    /// schedule, is down).
    pub fn link_is_up(&self, link: LinkId) -> bool {
        let l = &self.topo.links[link as usize];
        self.pipes[l.ab as usize].is_up() && self.pipes[l.ba as usize].is_up()
    }

    /// Applies `changes` at the engine's time. The pipes are the one owner of their state, up or
    /// down included; the routing tables are recomputed from it when it changes.
    fn reconfigure(&mut self, changes: &[(PipeId, PipeConfig)]) {
        let mut reroute = false;
        for &(pipe, config) in changes {
            let link = &mut self.pipes[pipe as usize];
            reroute |= link.is_up() != config.up;
            link.set_config(self.now, config);
            // A deferred pipe going down has dropped what it held: report it.
            self.arm_dequeue(pipe);
        }
        if reroute {
            let up: Vec<bool> = self.pipes.iter().map(Pipe::is_up).collect();
            self.routes.recompute(&self.topo, &up);
            self.reroutes += 1;
        }
    }

    /// A new packet at its source: on its way by the routes of now, meeting its first pipe as
    /// `arrival` says. Returns whether that pipe took it (`enter`).
    fn start(&mut self, pkt: PacketId, arrival: Arrival) -> bool {
        let p = self.packets.get(pkt);
        let hop = self.hop_after(p.at, p.dst_host);
        self.dispatch(pkt, hop, arrival)
    }

    /// What a packet at `node` does next: the pipe towards `dst_host`, `DELIVER` or `NO_ROUTE`.
    // Inlined: it runs once per packet-hop, and the calls of the per-hop path (saving and
    // restoring registers, results through memory) were ~110 of its ~1,000 instructions.
    #[inline(always)]
    fn hop_after(&self, node: NodeId, dst_host: u32) -> PipeId {
        if node == self.topo.hosts[dst_host as usize] {
            DELIVER
        } else {
            self.routes.next_pipe(node, dst_host).unwrap_or(NO_ROUTE)
        }
    }

    /// Delivers the packet where it is, drops it for lack of a route, or offers it to `hop`,
    /// here or on the worker that owns it. Returns whether a pipe here took it (`enter`).
    fn dispatch(&mut self, pkt: PacketId, hop: PipeId, arrival: Arrival) -> bool {
        match hop {
            DELIVER => {
                let p = self.packets.remove(pkt);
                self.deliver(p);
                false
            }
            NO_ROUTE => {
                self.counters.unroutable += 1;
                let p = self.packets.remove(pkt);
                // Only a packet from outside has a sender to tell (and finding a host's gateway
                // walks the links).
                if matches!(p.body, Body::External { .. }) {
                    if let Some(router) = self.router_for(p.at) {
                        self.refuse(&p, router, Refusal::NoRoute);
                    }
                }
                self.count_drop(&p);
                false
            }
            pipe => {
                // Only a packet from its source comes here with a pipe (`start`).
                if let HopCounts::Crossings(c) = &mut self.hops {
                    c.enter(pipe);
                }
                match self.pipe_owner_elsewhere(pipe) {
                    Some(to) => {
                        self.hand_over_entry(pkt, pipe, to);
                        false
                    }
                    None => self.enter(pkt, pipe, arrival),
                }
            }
        }
    }

    /// The worker that owns `pipe`, when it is not this one.
    fn pipe_owner_elsewhere(&self, pipe: PipeId) -> Option<u16> {
        let w = self.worker.as_ref()?;
        (!w.owns(pipe)).then(|| w.ownership.pipe_owner(pipe))
    }

    /// Hands a packet about to enter `pipe` to its owner `to`, to enter there now. Only a packet
    /// made at a router meets a pipe it does not own: a host's worker owns its first pipe, and
    /// a packet leaving a pipe was handed to the owner of the next one (`schedule_exit`).
    fn hand_over_entry(&mut self, pkt: PacketId, pipe: PipeId, to: u16) {
        let mut packet = self.packets.remove(pkt);
        packet.next = pipe;
        let w = self.worker.as_ref().expect("only a worker hands over");
        self.counters.cross_core_hops += 1;
        self.counters.cross_core_bytes += crossing_bytes(w.ownership.payload(), packet.bytes);
        self.handoffs[usize::from(to)].push(Handoff {
            at: self.now,
            exit: None,
            packet,
        });
    }

    /// The router that answers for a packet stuck at `node`: the node itself if it is a router;
    /// for a host, the router at the other end of its first link that is up (its gateway,
    /// which is where a host with a default route sends what it cannot route itself).
    pub fn router_for(&self, node: NodeId) -> Option<NodeId> {
        if self.router[node as usize] {
            return Some(node);
        }
        self.topo.links.iter().find_map(|l| {
            let other = match node {
                n if n == l.a => l.b,
                n if n == l.b => l.a,
                _ => return None,
            };
            let up = self.pipes[l.ab as usize].is_up() && self.pipes[l.ba as usize].is_up();
            (up && self.router[other as usize]).then_some(other)
        })
    }

    /// Tells the caller why `node` refused a packet from outside (`Output::Refused`); synthetic
    /// packets have no one to tell.
    fn refuse(&mut self, p: &Packet, node: NodeId, why: Refusal) {
        if let Body::External { token, ttl, .. } = p.body {
            self.outputs.push(Output::Refused {
                token,
                node,
                why,
                ttl,
            });
        }
    }

    /// Packets whose TTL ran out at each node, by `NodeId` (only routers count any).
    pub fn ttl_expired(&self) -> &[u64] {
        &self.expired
    }

    /// Offers the packet to `pipe` and, if the pipe takes it, settles where it will arrive and
    /// what it will do there, and schedules its exit (and its duplicate's). Returns whether the
    /// pipe took it, lost on the wire or not: what a super-packet's later segments go by.
    fn enter(&mut self, pkt: PacketId, pipe: PipeId, arrival: Arrival) -> bool {
        // The fields read, not the whole descriptor: see `depart`.
        let p = self.packets.get(pkt);
        let (bytes, meta) = (p.bytes, p.body.meta());
        let mtu = self.pipes[pipe as usize].mtu();
        if bytes > mtu {
            self.counters.too_big += 1;
            if let HopCounts::Crossings(c) = &mut self.hops {
                c.unoffered(pipe);
            }
            let p = self.packets.remove(pkt);
            self.refuse(&p, p.at, Refusal::TooBig { mtu });
            self.count_drop(&p);
            return false;
        }
        let link = &mut self.pipes[pipe as usize];
        if link.is_deferred() {
            // Each segment of a super-packet is a packet of its own to the flow queues.
            let mut evicted = std::mem::take(&mut self.evicted);
            let held = match link.hold(self.now, bytes, meta, pkt, &mut evicted) {
                Hold::Dropped(cause) => {
                    let p = self.packets.remove(pkt);
                    self.tap(pipe, &p, Seen::Dropped(cause));
                    self.count_drop(&p);
                    false
                }
                Hold::Held => {
                    self.tap_held(pipe, pkt, Seen::Entered);
                    let held = !evicted.contains(&pkt);
                    for victim in evicted.drain(..) {
                        let v = self.packets.remove(victim);
                        self.tap(pipe, &v, Seen::Dropped(DropCause::Queue));
                        self.count_drop(&v);
                    }
                    self.arm_dequeue(pipe);
                    held
                }
            };
            self.evicted = evicted;
            return held;
        }
        let admission = match arrival {
            Arrival::Alone | Arrival::Lead => link.offer(self.now, bytes, meta),
            Arrival::Following { lead_queued } => {
                link.offer_following(self.now, bytes, lead_queued)
            }
        };
        let (first, duplicate, marked) = match admission {
            Admission::Dropped(cause) => {
                let p = self.packets.remove(pkt);
                self.tap(pipe, &p, Seen::Dropped(cause));
                self.count_drop(&p);
                // A lead lost on the wire was still queued: its followers go on.
                return matches!(cause, DropCause::Loss);
            }
            Admission::Scheduled {
                first,
                duplicate,
                marked,
            } => (first, duplicate, marked),
        };
        self.tap_held(pipe, pkt, Seen::Entered);
        self.depart(pkt, pipe, first, duplicate, marked);
        true
    }

    /// Settles where a packet the pipe scheduled will arrive and what it will do there, and
    /// schedules its exit (and its duplicate's); `marked`: the pipe marked it CE.
    // Inlined into `enter`, once per packet-hop, as `schedule_exit` is.
    #[inline(always)]
    fn depart(
        &mut self,
        pkt: PacketId,
        pipe: PipeId,
        first: Departure,
        duplicate: Option<Departure>,
        marked: bool,
    ) {
        // Only the fields that change are written: copying the whole descriptor out and back
        // cost more instructions than the rest of this function.
        let p = self.packets.get(pkt);
        let head = match self.pipe_head[pipe as usize] {
            NodeId::MAX => self.topo.far_end(pipe, p.at),
            head => head,
        };
        let next = self.hop_after(head, p.dst_host);
        let p = self.packets.get_mut(pkt);
        if marked {
            p.body.mark_ce();
        }
        (p.at, p.next) = (head, next);
        let twin = duplicate.map(|copy| (*p, copy));
        self.schedule_exit(pkt, pipe, first);
        if let Some((p, copy)) = twin {
            if let Body::External { token, .. } = p.body {
                self.outputs.push(Output::Duplicated { token });
            }
            let twin = self.packets.insert(p);
            self.schedule_exit(twin, pipe, copy);
        }
    }

    /// Schedules a `Dequeue` event for a deferred pipe at its `poll_at` (not before now), unless
    /// one no later is pending.
    fn arm_dequeue(&mut self, pipe: PipeId) {
        let Some(at) = self.pipes[pipe as usize].poll_at() else {
            return;
        };
        let at = at.max(self.now);
        if self.dequeue_at.len() <= pipe as usize {
            self.dequeue_at.resize(self.pipes.len(), None);
        }
        let pending = &mut self.dequeue_at[pipe as usize];
        if pending.is_none_or(|t| t > at) {
            *pending = Some(at);
            self.sched.push(at, Event::Dequeue { pipe });
        }
    }

    /// A deferred pipe's dequeue falls due: the packets it drops are dropped, the one it sends
    /// is on its way as if just scheduled by `offer`.
    fn on_dequeue(&mut self, pipe: PipeId, at: Instant) {
        if self.dequeue_at.get(pipe as usize).copied().flatten() != Some(at) {
            return; // superseded by an earlier one
        }
        self.dequeue_at[pipe as usize] = None;
        let mut out = std::mem::take(&mut self.dequeued);
        self.pipes[pipe as usize].dequeue(self.now, &mut out);
        for d in out.drain(..) {
            match d {
                Dequeued::Departed {
                    handle,
                    departure,
                    marked,
                } => self.depart(handle, pipe, departure, None, marked),
                Dequeued::Dropped { handle, cause } => {
                    let p = self.packets.remove(handle);
                    self.tap(pipe, &p, Seen::Dropped(cause));
                    self.count_drop(&p);
                }
            }
        }
        self.dequeued = out;
        self.arm_dequeue(pipe);
    }

    /// Schedules the packet's exit from `pipe` here, or hands it to the worker that handles
    /// what follows the exit (the owner of its next pipe or of its destination host; a packet
    /// from outside is delivered by its home worker when the ownership says so).
    // Inlined: it runs once per packet-hop, and the calls of the per-hop path (saving and
    // restoring registers, results through memory) were ~110 of its ~1,000 instructions.
    #[inline(always)]
    fn schedule_exit(&mut self, pkt: PacketId, pipe: PipeId, departure: Departure) {
        let Departure { exit, ticket } = departure;
        if let Some(w) = &self.worker {
            let to = w.exit_handler(self.packets.get(pkt));
            if to != w.me {
                let packet = self.packets.remove(pkt);
                self.counters.cross_core_hops += 1;
                self.counters.cross_core_bytes +=
                    crossing_bytes(w.ownership.payload(), packet.bytes);
                self.handoffs[usize::from(to)].push(Handoff {
                    at: exit,
                    exit: Some((pipe, ticket)),
                    packet,
                });
                return;
            }
        }
        self.sched.push(exit, Event::Exit { pkt, pipe, ticket });
    }

    fn on_exit(&mut self, pkt: PacketId, pipe: PipeId, ticket: Ticket) {
        // The fields read, not the whole descriptor: see `depart`.
        let p = self.packets.get(pkt);
        let (bytes, planned, at, dst_host) = (p.bytes, p.next, p.at, p.dst_host);
        if !self.pipes[pipe as usize].release(self.now, ticket, bytes) {
            let p = self.packets.remove(pkt);
            self.tap(pipe, &p, Seen::Dropped(DropCause::LinkDown));
            self.count_drop(&p);
            return;
        }
        self.tap_held(pipe, pkt, Seen::Left);
        self.counters.packet_hops += 1;
        if planned != DELIVER && planned != NO_ROUTE {
            match &mut self.hops {
                HopCounts::Off => {}
                HopCounts::Pairs(counts) => *counts.entry((pipe, planned)).or_default() += 1,
                // A pipe of another worker's whose exit is handled here: a hop across. One
                // bit of `Worker::mine`, which every hop reads, in place of a hash map's probe.
                HopCounts::Crossings(c) => {
                    if let Some(w) = self.worker.as_ref().filter(|w| !w.owns(pipe)) {
                        c.hop_across(usize::from(w.me));
                    }
                }
            }
        }
        // The next pipe went down while the packet was on its way there: a router without
        // another way answers as one without a route (with one, the down pipe drops the packet,
        // as the worker that owns the new way may be another).
        let next = match planned {
            DELIVER | NO_ROUTE => planned,
            next if self.pipes[next as usize].is_up() => next,
            next => match self.hop_after(at, dst_host) {
                NO_ROUTE => {
                    if let HopCounts::Crossings(c) = &mut self.hops {
                        c.unoffered(next);
                    }
                    NO_ROUTE
                }
                _ => next,
            },
        };
        // A router that forwards the packet takes one off its TTL (one that has no route for it
        // answers so first, as Linux looks the route up first); a host is an end.
        if next != DELIVER && next != NO_ROUTE && self.router[at as usize] {
            let ttl = self.packets.get_mut(pkt).body.ttl();
            if *ttl <= 1 {
                self.counters.ttl_expired += 1;
                if let HopCounts::Crossings(c) = &mut self.hops {
                    c.unoffered(next);
                }
                self.expired[at as usize] += 1;
                let p = self.packets.remove(pkt);
                self.refuse(&p, at, Refusal::TimeExceeded);
                self.count_drop(&p);
                return;
            }
            *ttl -= 1;
        }
        match next {
            DELIVER | NO_ROUTE => {
                self.dispatch(pkt, next, Arrival::Alone);
            }
            // Here without asking whose it is: the exit was scheduled on the owner of the next
            // pipe (`schedule_exit`, and `migrate_out` when that changes).
            pipe => {
                debug_assert!(self.owns_pipe(pipe), "pipe {pipe} exits to another worker");
                self.enter(pkt, pipe, Arrival::Alone);
            }
        }
    }

    fn count_drop(&mut self, p: &Packet) {
        match p.body {
            Body::Data { flow, .. } => self.flows[flow as usize].stats.lost += 1,
            Body::Ack { flow, .. } => self.flows[flow as usize].stats.acks_lost += 1,
            Body::External { token, .. } => self.outputs.push(Output::Dropped { token }),
        }
    }

    /// Counts the hop back to the payload's home that a delivery away from it costs when
    /// payloads are cached (the home is the worker of `home_host`).
    fn count_return_home(&mut self, home_host: u32) {
        if let Some(w) = &self.worker {
            if w.ownership.payload() == Payload::Cache && w.ownership.host_owner(home_host) != w.me
            {
                self.counters.cross_core_hops += 1;
                self.counters.cross_core_bytes += crossing_bytes(Payload::Cache, 0);
            }
        }
    }

    fn deliver(&mut self, p: Packet) {
        match p.body {
            Body::External {
                token, ecn, ttl, ..
            } => self.outputs.push(Output::Delivered {
                token,
                at: self.now,
                dst: self.topo.hosts[p.dst_host as usize],
                ce: ecn == Ecn::Ce,
                ttl,
            }),
            Body::Data { flow, seg, ecn, .. } => {
                let now = self.now;
                let f = &mut self.flows[flow as usize];
                f.stats
                    .latency_ns
                    .record(now.saturating_since(p.sent_at).as_nanos());
                let (src_host, ack) = (f.src_host, f.receiver.on_data(now, seg));
                let at = f.spec.dst;
                self.count_return_home(src_host);
                if let Some(ack) = ack {
                    let id = self.packets.insert(Packet {
                        body: Body::Ack {
                            flow,
                            ack,
                            ece: ecn == Ecn::Ce,
                            ttl: DEFAULT_TTL,
                        },
                        bytes: ACK_BYTES,
                        at,
                        dst_host: src_host,
                        next: NO_ROUTE,
                        sent_at: now,
                    });
                    self.start(id, Arrival::Alone);
                }
            }
            Body::Ack { flow, ack, ece, .. } => {
                self.count_return_home(self.flows[flow as usize].dst_host);
                self.flows[flow as usize].sender.on_ack(self.now, &ack, ece);
                self.poll_flow(flow);
            }
        }
    }

    /// Lets a flow's sender transmit what it may now, then schedules its next wake-up (none at
    /// or after the flow's stop).
    fn poll_flow(&mut self, flow: u32) {
        let now = self.now;
        let stop = self.flows[flow as usize].spec.stop.unwrap_or(Instant::MAX);
        while let Some(seg) = (now < stop)
            .then(|| self.flows[flow as usize].sender.poll_transmit(now))
            .flatten()
        {
            let f = &mut self.flows[flow as usize];
            f.stats.sent += 1;
            let ecn = f.sender.ecn();
            let pkt = self.packets.insert(Packet {
                body: Body::Data {
                    flow,
                    seg,
                    ecn,
                    ttl: DEFAULT_TTL,
                },
                bytes: seg.bytes,
                at: f.spec.src,
                dst_host: f.dst_host,
                next: NO_ROUTE,
                sent_at: now,
            });
            self.start(pkt, Arrival::Alone);
        }
        let f = &mut self.flows[flow as usize];
        // A sender that wants the past after declining to transmit is polled again a nanosecond
        // later rather than in a loop at the same instant.
        let next = f
            .sender
            .poll_at()
            .map(|t| t.max(Instant(now.0 + 1)))
            .filter(|&t| t < stop);
        if let Some(at) = next.filter(|_| next != f.wake) {
            f.wake = next;
            self.sched.push(at, Event::Wake { flow });
        }
    }

    /// Flows with their specs, protocol state and measurements, in the order they were added.
    pub fn flows(&self) -> impl Iterator<Item = (&FlowSpec, &Sender, &Receiver, &FlowStats)> {
        self.flows
            .iter()
            .map(|f| (&f.spec, &f.sender, &f.receiver, &f.stats))
    }

    /// Packets currently inside the network.
    pub fn in_flight(&self) -> usize {
        self.packets.live() + self.absorbed_in_flight
    }
}
