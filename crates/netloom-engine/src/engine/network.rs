//! The network: pipes, routes, packets in flight and their events, TTL, MTU, taps; not the flows.

use super::flows::Flows;
use super::hops::HopCounts;
use super::worker::{crossing_bytes, Worker};
use super::{
    derive_seed, EngineCounters, EngineError, Event, Injected, Output, Refusal, SEED_PIPES,
};
use crate::ownership::Payload;
use crate::packet::{Body, Handoff, Packet, PacketId, Slab, DELIVER, NO_ROUTE};
use crate::scheduler::Scheduler;
use crate::tap::{Carried, Seen, Tapped};
use crate::traffic::FlowSpec;
use netloom_link::{Admission, Departure, Dequeued, DropCause, Ecn, Hold, Pipe, Ticket, Timeline};
use netloom_route::Routes;
use netloom_time::Instant;
use netloom_topo::{NodeId, NodeKind, PipeId, Topology};

/// The pipes, the routing tables and the packet descriptors in flight of one engine, and the
/// events that move them. It carries the synthetic flows' packets as any others, and hands each
/// back to them (`Flows`) where it ends, delivered or dropped.
pub(super) struct Network {
    pub(super) topo: Topology,
    pub(super) routes: Routes,
    /// How many times the routes were recomputed (`reroutes`).
    pub(super) reroutes: u64,
    pub(super) pipes: Vec<Pipe>,
    /// For each pipe, the node it leads to; `NodeId::MAX` for a shared medium (depends on entry side).
    pipe_head: Vec<NodeId>,
    pub(super) packets: Slab,
    pub(super) sched: Scheduler<Event>,
    pub(super) outputs: Vec<Output>,
    pub(super) now: Instant,
    pub(super) counters: EngineCounters,
    /// What partitioning counts of the hops (`count_hops`); nothing unless asked: the
    /// forwarding path should not pay for it otherwise.
    pub(super) hops: HopCounts,
    /// Where each time-varying link is in its plan, in the order of `Topology::plans`.
    pub(super) timelines: Vec<Timeline>,
    /// Set when this engine is one worker of a partitioned run.
    pub(super) worker: Option<Worker>,
    /// Packets for each other worker, in the order they were scheduled.
    pub(super) handoffs: Vec<Vec<Handoff>>,
    /// Packets in flight on workers this one absorbed.
    pub(super) absorbed_in_flight: usize,
    pub(super) taps: Taps,
    /// Whether each node (by `NodeId`) is a router: routers take one off a packet's TTL.
    router: Vec<bool>,
    /// Packets whose TTL ran out at each node (by `NodeId`; only routers count any).
    pub(super) expired: Vec<u64>,
    deferred: Deferred,
}

/// Which pipes are tapped (`Engine::set_tap`), and what they saw since the last
/// `Engine::drain_tapped`.
pub(super) struct Taps {
    pub(super) on: Vec<bool>,
    pub(super) seen: Vec<Tapped>,
}

/// The deferred pipes' (FQ-CoDel) pending dequeues, and what their calls fill, kept to reuse
/// the allocations.
#[derive(Default)]
struct Deferred {
    /// For each deferred pipe, the time of its pending `Dequeue` event (earlier ones are
    /// stale); `None` when none is pending.
    due: Vec<Option<Instant>>,
    /// What a deferred pipe's `dequeue` reports.
    dequeued: Vec<Dequeued>,
    /// The packets a deferred pipe's `hold` dropped to make room.
    evicted: Vec<u32>,
}

impl Deferred {
    /// Whether `pipe`, one of `pipes`, is to get a `Dequeue` event at `at`: none no later is
    /// pending. If so, that one is pending from now on.
    fn arm(&mut self, pipe: PipeId, at: Instant, pipes: usize) -> bool {
        if self.due.len() <= pipe as usize {
            self.due.resize(pipes, None);
        }
        let pending = &mut self.due[pipe as usize];
        let arm = pending.is_none_or(|t| t > at);
        if arm {
            *pending = Some(at);
        }
        arm
    }

    /// No `Dequeue` event of `pipe` is pending from now on (one in the scheduler is stale).
    fn cancel(&mut self, pipe: PipeId) {
        if let Some(pending) = self.due.get_mut(pipe as usize) {
            *pending = None;
        }
    }

    /// Whether the `Dequeue` event of `pipe` due at `at` is the pending one, which it then no
    /// longer is; false for one superseded by an earlier one.
    fn fire(&mut self, pipe: PipeId, at: Instant) -> bool {
        match self.due.get_mut(pipe as usize) {
            Some(pending) if *pending == Some(at) => {
                *pending = None;
                true
            }
            _ => false,
        }
    }
}

/// How a packet meets the pipe it enters: a super-packet's segments at their first pipe are
/// queued together (see `Engine::inject_segments`); every other entry is `Alone`.
#[derive(Clone, Copy)]
pub(super) enum Arrival {
    /// A packet of its own: the pipe's queue decides for it.
    Alone,
    /// The first segment of a super-packet: the queue decides for the whole super-packet.
    Lead,
    /// A later segment: the queue decided with the first, and took it if `lead_queued`.
    Following { lead_queued: bool },
}

/// Loads what firing `events` reads first and waits on longest: each leaving packet's
/// descriptor, the pipe it leaves and the pipe it goes on to (and that pipe's flow queue, under
/// FQ-CoDel), and the flow queue a deferred pipe's dequeue serves. On a large topology each is a cache
/// miss (inet's pipes and packets in flight take megabytes), and one after another they stall
/// every event; loaded here in one pass, a slot's misses overlap (docs/performance.md).
fn warm(events: &[(u64, Event)], packets: &Slab, pipes: &[Pipe]) {
    let mut kept = 0u64;
    for &(_, event) in events {
        match event {
            Event::Exit { pkt, pipe, .. } => {
                let p = packets.get(pkt);
                let next = p.next;
                kept ^= u64::from(matches!(p.body, Body::Data { .. }));
                kept ^= pipes[pipe as usize].counters().packets_out;
                if let Some(next) = pipes.get(next as usize) {
                    kept ^= next.touch();
                    // Drop-tail pipes, the common case, pay one test of a line just loaded.
                    if next.is_deferred() {
                        kept ^= next.touch_held(Some(p.body.meta().flow));
                    }
                }
            }
            Event::Dequeue { pipe } => kept ^= pipes[pipe as usize].touch_held(None),
            _ => {}
        }
    }
    std::hint::black_box(kept);
}

// What the loop (`Engine::run_due`) and the flows call per event or per packet is `#[inline]`: it
// lives in another module than its callers, so possibly in another codegen unit, where the
// compiler would not inline it otherwise (it did when the engine was one module).
impl Network {
    /// The network of `topo` with one seeded RNG per pipe, routed by `routes` (computed for
    /// `topo`), each time-varying link in its first state.
    pub(super) fn new(topo: Topology, routes: Routes, seed: u64) -> Network {
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
        let taps = Taps {
            on: vec![false; topo.pipes.len()],
            seen: Vec::new(),
        };
        let router: Vec<bool> = topo
            .nodes
            .iter()
            .map(|n| n.kind == NodeKind::Router)
            .collect();
        let mut net = Network {
            taps,
            topo,
            routes,
            reroutes: 0,
            pipes,
            pipe_head,
            packets: Slab::default(),
            sched: Scheduler::default(),
            outputs: Vec::new(),
            now: Instant::ZERO,
            counters: EngineCounters::default(),
            hops: HopCounts::Off,
            timelines: Vec::new(),
            worker: None,
            handoffs: Vec::new(),
            absorbed_in_flight: 0,
            expired: vec![0; router.len()],
            router,
            deferred: Deferred::default(),
        };
        net.start_plans(seed);
        net
    }

    /// The next event due by `now`, once what its slot's events touch first is loaded (`warm`).
    // Inlined: it runs once per event, as `Scheduler::pop_due` does.
    #[inline(always)]
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<(Instant, Event)> {
        let (packets, pipes) = (&self.packets, &self.pipes);
        self.sched
            .pop_due(now, |events| warm(events, packets, pipes))
    }

    /// Does this engine own `pipe`? A single engine owns them all.
    pub(super) fn owns_pipe(&self, pipe: PipeId) -> bool {
        self.worker.as_ref().is_none_or(|w| w.owns(pipe))
    }

    /// Does this engine handle host `host`? A single engine handles every host.
    pub(super) fn owns_host(&self, host: u32) -> bool {
        self.worker
            .as_ref()
            .is_none_or(|w| w.ownership.host_owner(host) == w.me)
    }

    /// The hosts (by position in `Topology::hosts`) at the ends of a synthetic flow, source
    /// first, if the network can carry its packets between them now.
    pub(super) fn flow_ends(&self, spec: &FlowSpec) -> Result<(u32, u32), EngineError> {
        let host = |n: NodeId| {
            self.routes
                .host_index(n)
                .ok_or_else(|| EngineError::NotAHost(self.topo.node(n).name.clone()))
        };
        let (src_host, dst_host) = (host(spec.src)?, host(spec.dst)?);
        let path = self.routes.path(&self.topo, spec.src, spec.dst);
        if path.is_none() {
            return Err(EngineError::NoRoute {
                src: self.topo.node(spec.src).name.clone(),
                dst: self.topo.node(spec.dst).name.clone(),
            });
        }
        // Synthetic packets cannot be fragmented or learn the path's MTU: a flow whose data
        // packets a link of its path cannot carry is refused here rather than lost packet by
        // packet (its ACKs, of `ACK_BYTES`, fit any valid MTU).
        let bytes = spec.kind.packet_bytes();
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
        Ok((src_host, dst_host))
    }

    /// Takes in a packet from outside (`Engine::inject`), meeting its first pipe as `arrival`
    /// says: `None` if `dst` is not a host, else whether its first pipe took it (`enter`).
    #[inline]
    pub(super) fn take_in(
        &mut self,
        now: Instant,
        src: NodeId,
        dst: NodeId,
        packet: Injected,
        arrival: Arrival,
        flows: &mut Flows,
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
        Some(self.start(pkt, arrival, flows))
    }

    /// Sends a packet made at its source (a synthetic flow's data or ACK) on its way.
    #[inline]
    pub(super) fn send(&mut self, p: Packet, flows: &mut Flows) {
        let pkt = self.packets.insert(p);
        self.start(pkt, Arrival::Alone, flows);
    }

    /// Schedules a wake-up of synthetic flow `flow` at `at` (`Flows::on_wake`).
    #[inline]
    pub(super) fn wake(&mut self, at: Instant, flow: u32) {
        self.sched.push(at, Event::Wake { flow });
    }

    /// Reports `p` to the tap of `pipe`, if there is one.
    fn tap(&mut self, pipe: PipeId, p: &Packet, seen: Seen) {
        if !self.taps.on[pipe as usize] {
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
        self.taps.seen.push(Tapped {
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
        if self.taps.on[pipe as usize] {
            let p = *self.packets.get(pkt);
            self.tap(pipe, &p, seen);
        }
    }

    /// A new packet at its source: on its way by the routes of now, meeting its first pipe as
    /// `arrival` says. Returns whether that pipe took it (`enter`).
    fn start(&mut self, pkt: PacketId, arrival: Arrival, flows: &mut Flows) -> bool {
        let p = self.packets.get(pkt);
        let hop = self.hop_after(p.at, p.dst_host);
        self.dispatch(pkt, hop, arrival, flows)
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
    fn dispatch(
        &mut self,
        pkt: PacketId,
        hop: PipeId,
        arrival: Arrival,
        flows: &mut Flows,
    ) -> bool {
        match hop {
            DELIVER => {
                let p = self.packets.remove(pkt);
                self.deliver(p, flows);
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
                self.count_drop(&p, flows);
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
                    None => self.enter(pkt, pipe, arrival, flows),
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
    pub(super) fn router_for(&self, node: NodeId) -> Option<NodeId> {
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

    /// Offers the packet to `pipe` and, if the pipe takes it, settles where it will arrive and
    /// what it will do there, and schedules its exit (and its duplicate's). Returns whether the
    /// pipe took it, lost on the wire or not: what a super-packet's later segments go by.
    #[inline]
    pub(super) fn enter(
        &mut self,
        pkt: PacketId,
        pipe: PipeId,
        arrival: Arrival,
        flows: &mut Flows,
    ) -> bool {
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
            self.count_drop(&p, flows);
            return false;
        }
        let link = &mut self.pipes[pipe as usize];
        if link.is_deferred() {
            // Each segment of a super-packet is a packet of its own to the flow queues.
            let idle = link.is_idle(self.now);
            let mut evicted = std::mem::take(&mut self.deferred.evicted);
            let held = match link.hold(self.now, bytes, meta, pkt, &mut evicted) {
                Hold::Dropped(cause) => {
                    let p = self.packets.remove(pkt);
                    self.tap(pipe, &p, Seen::Dropped(cause));
                    self.count_drop(&p, flows);
                    false
                }
                Hold::Held => {
                    self.tap_held(pipe, pkt, Seen::Entered);
                    let held = !evicted.contains(&pkt);
                    for victim in evicted.drain(..) {
                        let v = self.packets.remove(victim);
                        self.tap(pipe, &v, Seen::Dropped(DropCause::Queue));
                        self.count_drop(&v, flows);
                    }
                    // A packet that finds the pipe idle is served at once, as Linux's qdisc
                    // serves at enqueue when the link can send, rather than by a `Dequeue`
                    // event after the packets arriving at the same instant: it saves most
                    // packets a scheduler event (docs/link.md, "FQ-CoDel: a deferred pipe").
                    // A `Dequeue` still pending for later is superseded, as by an earlier one.
                    if idle && held {
                        self.deferred.cancel(pipe);
                        self.dequeue(pipe, flows);
                    } else {
                        self.arm_dequeue(pipe);
                    }
                    held
                }
            };
            self.deferred.evicted = evicted;
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
                self.count_drop(&p, flows);
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
    pub(super) fn arm_dequeue(&mut self, pipe: PipeId) {
        let Some(at) = self.pipes[pipe as usize].poll_at() else {
            return;
        };
        let at = at.max(self.now);
        if self.deferred.arm(pipe, at, self.pipes.len()) {
            self.sched.push(at, Event::Dequeue { pipe });
        }
    }

    /// A deferred pipe's dequeue falls due: the packets it drops are dropped, the one it sends
    /// is on its way as if just scheduled by `offer`.
    #[inline]
    pub(super) fn on_dequeue(&mut self, pipe: PipeId, at: Instant, flows: &mut Flows) {
        if self.deferred.fire(pipe, at) {
            self.dequeue(pipe, flows);
        }
    }

    /// Serves deferred pipe `pipe` now: what its `Dequeue` event does once due.
    #[inline]
    fn dequeue(&mut self, pipe: PipeId, flows: &mut Flows) {
        let mut out = std::mem::take(&mut self.deferred.dequeued);
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
                    self.count_drop(&p, flows);
                }
            }
        }
        self.deferred.dequeued = out;
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

    /// A packet leaves `pipe` at its far end: it is delivered there, or goes on to its next pipe,
    /// unless its pipe went down under it, its TTL runs out or no way is left.
    #[inline]
    pub(super) fn on_exit(
        &mut self,
        pkt: PacketId,
        pipe: PipeId,
        ticket: Ticket,
        flows: &mut Flows,
    ) {
        // The fields read, not the whole descriptor: see `depart`.
        let p = self.packets.get(pkt);
        let (bytes, planned, at, dst_host) = (p.bytes, p.next, p.at, p.dst_host);
        if !self.pipes[pipe as usize].release(self.now, ticket, bytes) {
            let p = self.packets.remove(pkt);
            self.tap(pipe, &p, Seen::Dropped(DropCause::LinkDown));
            self.count_drop(&p, flows);
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
                self.count_drop(&p, flows);
                return;
            }
            *ttl -= 1;
        }
        match next {
            DELIVER | NO_ROUTE => {
                self.dispatch(pkt, next, Arrival::Alone, flows);
            }
            // Here without asking whose it is: the exit was scheduled on the owner of the next
            // pipe (`schedule_exit`, and `migrate_out` when that changes).
            pipe => {
                debug_assert!(self.owns_pipe(pipe), "pipe {pipe} exits to another worker");
                self.enter(pkt, pipe, Arrival::Alone, flows);
            }
        }
    }

    fn count_drop(&mut self, p: &Packet, flows: &mut Flows) {
        match p.body {
            Body::Data { flow, .. } => flows.lost(flow),
            Body::Ack { flow, .. } => flows.ack_lost(flow),
            Body::External { token, .. } => self.outputs.push(Output::Dropped { token }),
        }
    }

    /// Counts the hop back to the payload's home that a delivery away from it costs when
    /// payloads are cached (the home is the worker of `home_host`).
    #[inline]
    pub(super) fn count_return_home(&mut self, home_host: u32) {
        if let Some(w) = &self.worker {
            if w.ownership.payload() == Payload::Cache && w.ownership.host_owner(home_host) != w.me
            {
                self.counters.cross_core_hops += 1;
                self.counters.cross_core_bytes += crossing_bytes(Payload::Cache, 0);
            }
        }
    }

    /// Delivers a packet at its destination host: one from outside is reported (`Output`), a
    /// synthetic one goes to its flow.
    fn deliver(&mut self, p: Packet, flows: &mut Flows) {
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
                flows.on_data(flow, seg, ecn == Ecn::Ce, p.sent_at, self);
            }
            Body::Ack { flow, ack, ece, .. } => flows.on_ack(flow, ack, ece, self),
        }
    }
}
