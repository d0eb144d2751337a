//! An engine as one worker of a partitioned run: its share, its hand-offs, merging; not forwarding.

use super::{Engine, Event};
use crate::ownership::{Ownership, Payload};
use crate::packet::{Body, Handoff, Packet, DELIVER, NO_ROUTE};
use netloom_route::Routes;
use netloom_topo::{PipeId, Topology};
use std::sync::Arc;

/// One worker's place in a partitioned run.
pub(super) struct Worker {
    pub(super) me: u16,
    pub(super) ownership: Arc<Ownership>,
    /// Bit p set when this worker owns pipe p: every hop asks whether its next pipe is here,
    /// and inet's 16,520 pipes take 2 KB as bits against 33 KB for the owner table
    /// (`Ownership::pipe_owner`), which every hop's other loads evict from the caches.
    mine: Vec<u64>,
}

impl Worker {
    pub(super) fn new(me: u16, ownership: Arc<Ownership>) -> Worker {
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
    pub(super) fn exit_handler(&self, p: &Packet) -> u16 {
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
    pub(super) fn owns(&self, pipe: PipeId) -> bool {
        self.mine[pipe as usize / 64] & 1 << (pipe % 64) != 0
    }
}

/// The bytes a hand-off moves between workers.
pub(super) fn crossing_bytes(payload: Payload, packet_bytes: u32) -> u64 {
    let descriptor = std::mem::size_of::<Handoff>() as u64;
    match payload {
        Payload::Cache => descriptor,
        Payload::Ship => descriptor + u64::from(packet_bytes),
    }
}

impl Engine {
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
        self.net.handoffs = (0..ownership.workers()).map(|_| Vec::new()).collect();
        self.net.worker = Some(Worker::new(me as u16, ownership));
        self
    }

    /// Whether hand-offs carry payloads along (a partitioned run with `Payload::Ship`).
    pub fn ships_payloads(&self) -> bool {
        self.net
            .worker
            .as_ref()
            .is_some_and(|w| w.ownership.payload() == Payload::Ship)
    }

    /// This engine's worker in a partitioned run; 0 for a single engine.
    pub fn worker(&self) -> usize {
        self.net.worker.as_ref().map_or(0, |w| usize::from(w.me))
    }

    /// Does this engine own `pipe` (its state, its figures)? A single engine owns them all.
    pub fn owns_pipe(&self, pipe: PipeId) -> bool {
        self.net.owns_pipe(pipe)
    }

    /// Does this engine handle host `host` (by position in `Topology::hosts`): read what it sends,
    /// and drive its synthetic flows? A single engine handles every host.
    pub fn owns_host(&self, host: u32) -> bool {
        self.net.owns_host(host)
    }

    /// Packets for worker `to` scheduled since the last call, in order: give each to its
    /// engine's `accept` before that engine advances to the packet's time.
    pub fn take_handoffs(&mut self, to: usize) -> std::vec::Drain<'_, Handoff> {
        self.net.handoffs[to].drain(..)
    }

    /// The earliest time, in ns, that anything this worker holds can happen (`u64::MAX`:
    /// nothing): its own next event (`poll_at`, a lower bound) and the intended time of each
    /// hand-off not yet taken, which its receiver fires then (or at once, if that has passed).
    /// The least of every worker's after a window is where the next window starts, so the
    /// window loops learn it in the same exchange that delivers the hand-offs.
    pub fn next_with_handoffs(&self) -> u64 {
        let own = self.poll_at().map_or(u64::MAX, |t| t.as_nanos());
        self.net
            .handoffs
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
        let pkt = self.net.packets.insert(handoff.packet);
        let event = match handoff.exit {
            Some((pipe, ticket)) => Event::Exit { pkt, pipe, ticket },
            None => Event::Enter { pkt, pipe },
        };
        self.net.sched.push(handoff.at, event);
    }

    /// Folds the results of another worker of the same partitioned run into this one, so that
    /// once every worker is absorbed this engine reports the whole run: each pipe and each flow
    /// end as its owner left it, and counts kept on several workers add up.
    pub fn absorb(&mut self, other: Engine) {
        let (Some(w), Some(theirs)) = (&self.net.worker, &other.net.worker) else {
            panic!("only workers of a partitioned run absorb each other");
        };
        let (ownership, them) = (w.ownership.clone(), theirs.me);
        let c = other.counters();
        let Engine {
            net: mut theirs,
            flows,
        } = other;
        let net = &mut self.net;
        for (p, (mine, other_pipe)) in net.pipes.iter_mut().zip(&mut theirs.pipes).enumerate() {
            if ownership.pipe_owner(p as PipeId) == them {
                std::mem::swap(mine, other_pipe);
            }
            mine.absorb_counters(other_pipe.counters());
        }
        net.counters.add(&c);
        for (mine, theirs) in net.expired.iter_mut().zip(&theirs.expired) {
            *mine += theirs;
        }
        net.hops.add(std::mem::take(&mut theirs.hops));
        net.absorbed_in_flight += theirs.packets.live();
        self.flows.absorb(flows, &ownership, them);
    }
}
