//! The real-time loop: read what hosts send, hand descriptors to the engine, advance it to the
//! clock, write out what is due, then wait as the precision mode says. Exit times come from the
//! engine's schedule, never from when a packet was actually written, so one late packet does
//! not delay those behind it (no delay cascading), and each write's lateness is measured.
//!
//! A TCP super-packet (GSO) goes through the engine as its wire-size segments, each timed and
//! lost on its own; segments of one super-packet due in the same turn are written together. In
//! a run of several workers each driver reads its own hosts and writes out the packets whose
//! payloads it holds; its inbox brings hand-offs, payload news and the experiment's orders
//! (`payload`, `answer`). Time comes from the `Clock` the driver is given.

use crate::accuracy::{Accuracy, AccuracyReport, Thresholds};
use crate::answer;
use crate::clock::Clock;
use crate::io::{Framing, PacketIo};
use crate::kernel::{Entries, KernelRouters};
use crate::mailbox::{Inbox, Message, Post};
use crate::message::{Answer, HostCounters, Order, Snapshot};
use crate::meta::meta;
use crate::moved::{MovePhases, Moved, Stamps};
use crate::payload::{token, untoken, Payloads};
use crate::pool::{Pool, Size};
use crate::ration::Ration;
use crate::repartition::Handover;
use crate::tap::{Record, Tap};
use crate::traffic::{lateness_histogram, Traffic};
use crate::wait::{Precision, Waiter, LONG_SPIN};
use hdrhistogram::Histogram;
use netloom_engine::tap::{Carried, Seen};
use netloom_engine::{Engine, Handoff, Injected, Output, Ownership, Refusal};
use netloom_packet::fragment;
use netloom_packet::icmp::{self, Bucket};
use netloom_packet::ip::{endpoints, Malformed};
use netloom_packet::segment::{self, Frame, MAX_HEAD, VNET_HDR_LEN};
use netloom_time::Instant;
use netloom_topo::{NodeId, NodeKind, PipeId};
use std::collections::HashMap;
use std::io::{self, IoSlice};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::mpsc::Sender;
use std::sync::Arc;

/// Frames read from one host in one go before the others get a turn.
const READ_BATCH: usize = 64;
/// Most engine events one advance processes before the driver looks at its inbox and its
/// hosts again (and the worker at its stop flag): a few milliseconds of work at most, so a
/// topology that makes events faster than they can be processed cannot keep a run from
/// answering.
const EVENTS_PER_ADVANCE: u64 = 4096;
/// The largest frame with GSO: virtio_net_hdr, IPv6 header and the most its payload length says.
const MAX_SUPER: usize = VNET_HDR_LEN + 40 + 65_535;

/// How a driver sizes its buffers and waits.
#[derive(Clone, Copy, Debug)]
pub struct DriverConfig {
    /// The largest packet a host sends (its MTU); super-packets of GSO are larger.
    pub max_packet: usize,
    /// Most packets held inside the emulated network at once (and with GSO as many
    /// super-packets as take the memory of that many packets); more are dropped and counted as
    /// physical drops.
    pub max_in_flight: usize,
    /// How the driver waits between deadlines.
    pub precision: Precision,
    /// When releases count as late and the run as inaccurate.
    pub thresholds: Thresholds,
    /// Deliver packets whose source address is not their sender's own (counted as `spoofed`
    /// either way); by default they are dropped.
    pub allow_spoofing: bool,
}

/// One worker's real-time loop over its engine, its hosts' I/O and a clock.
pub struct Driver<I: PacketIo, C: Clock> {
    engine: Engine,
    io: I,
    clock: C,
    waiter: Waiter,
    payloads: Payloads,
    /// Host index by address.
    hosts_by_addr: HashMap<IpAddr, u32>,
    /// Node of each host index.
    host_nodes: Vec<NodeId>,
    counters: Vec<HostCounters>,
    accuracy: Accuracy,
    ready: Vec<u32>,
    outbox: Vec<Output>,
    framing: Framing,
    /// Read buffer for packets that arrive when every pool buffer is in flight.
    overflow: Box<[u8]>,
    /// Where the headers of a run of segments are built before writing.
    head: [u8; MAX_HEAD],
    /// Hand-offs, payload news and orders from the other threads, once connected.
    inbox: Option<Inbox>,
    /// Told whether the driver wants real-time priority now, when that changes (`on_priority`).
    priority: Option<Box<dyn FnMut(bool) + Send>>,
    /// What `priority` was last told.
    realtime: bool,
    /// Whether this driver reads host h (the hosts its engine owns).
    reads: Vec<bool>,
    /// The engine's count of skipped schedule changes already recorded in `accuracy`.
    skipped_changes: u64,
    /// How many segments each host may hand the engine, so that none starves the others.
    ration: Ration,
    /// Deliver spoofed packets instead of dropping them (`DriverConfig::allow_spoofing`).
    allow_spoofing: bool,
    /// The captures running on this worker's pipes.
    taps: Vec<Tap>,
    /// Each router's addresses, the sources of its ICMP errors (`add_router`).
    routers: HashMap<NodeId, (Ipv4Addr, Ipv6Addr)>,
    /// The router of each router address.
    routers_by_addr: HashMap<IpAddr, NodeId>,
    /// How a host's packets reach a router (`way_to`), found when first asked.
    ways: HashMap<(u32, NodeId), Option<(u32, u8)>>,
    /// The rate limit of errors from each router to each host address (by host index, and
    /// whether IPv6), as Linux limits them per destination address.
    buckets: HashMap<(NodeId, u32, bool), Bucket>,
    /// Where an ICMP error is built.
    error: Box<[u8]>,
    /// With kernel routers: where packets enter the engine (`add_kernel_routers`).
    entries: Option<Entries>,
    /// When repartitioning (and only then): the lateness of the releases since the last
    /// `Order::Traffic`.
    epoch_lateness: Option<Histogram<u64>>,
    /// A move to another ownership under way (`Order::Move`).
    moving: Option<Move>,
    /// Other workers' hand-overs that came before this one handed over its own.
    early: Vec<Handover>,
}

/// A move to another ownership under way on one worker.
struct Move {
    next: Arc<Ownership>,
    /// The instant of the move: the engine processes everything before it under the old
    /// ownership, then hands over.
    at: Instant,
    reply: Sender<Answer>,
    /// Whether this worker has handed over; it then waits for the others' hand-overs.
    handed: bool,
    /// Hand-overs still to come.
    expected: usize,
    /// Hand-offs taken during the move that another worker handles: passed on after it.
    held: Vec<Handoff>,
    moved: Moved,
    /// When the order reached this worker.
    ordered: Instant,
    /// The last hand-over taken in: its stamps, and when it was installed.
    last: Option<(Stamps, Instant)>,
}

impl<I: PacketIo, C: Clock> Driver<I, C> {
    /// A driver for `engine` over `io`, keeping time by `clock`; the hosts (in
    /// `Topology::hosts` order) have the `addresses` given per host.
    pub fn new(
        engine: Engine,
        io: I,
        clock: C,
        addresses: &[Vec<IpAddr>],
        config: DriverConfig,
    ) -> Driver<I, C> {
        let host_nodes = engine.topology().hosts.clone();
        let framing = io.framing();
        let small = framing.header_len() + config.max_packet;
        let (large, max_large) = match framing {
            Framing::Vnet { gso: true } if MAX_SUPER > small => {
                (MAX_SUPER, (config.max_in_flight * small / MAX_SUPER).max(1))
            }
            _ => (0, 0),
        };
        let hosts_by_addr = addresses
            .iter()
            .enumerate()
            .flat_map(|(i, addrs)| addrs.iter().map(move |a| (*a, i as u32)))
            .collect();
        let pool = Pool::new(small, config.max_in_flight, large, max_large);
        let reads = (0..host_nodes.len())
            .map(|h| engine.owns_host(h as u32))
            .collect();
        Driver {
            counters: vec![HostCounters::default(); host_nodes.len()],
            ration: Ration::new(host_nodes.len()),
            allow_spoofing: config.allow_spoofing,
            payloads: Payloads::new(pool, engine.worker() as u16),
            io,
            clock,
            waiter: Waiter::new(config.precision),
            hosts_by_addr,
            host_nodes,
            accuracy: Accuracy::new(config.thresholds),
            ready: Vec::new(),
            outbox: Vec::new(),
            framing,
            overflow: vec![0; small.max(large)].into_boxed_slice(),
            head: [0; MAX_HEAD],
            inbox: None,
            priority: None,
            realtime: true,
            reads,
            skipped_changes: 0,
            taps: Vec::new(),
            routers: HashMap::new(),
            routers_by_addr: HashMap::new(),
            ways: HashMap::new(),
            buckets: HashMap::new(),
            error: vec![0; icmp::MAX_ERROR].into_boxed_slice(),
            entries: None,
            epoch_lateness: None,
            moving: None,
            early: Vec::new(),
            engine,
        }
    }

    /// Runs `routers`' ports as the engine hosts after the real ones (their I/O is the routers'
    /// TUN devices): what a port sends enters its link whatever its destination, and packets
    /// for hosts beyond kernel routers enter toward the first one on their path.
    pub(crate) fn add_kernel_routers(&mut self, routers: Arc<KernelRouters>) {
        self.entries = Some(Entries::new(routers));
    }

    /// The engine node a packet from engine node `from` to `host` is injected for: the host
    /// itself, or with kernel routers the end of the engine's part of the way there.
    fn toward_host(&mut self, from: NodeId, host: u32) -> Option<NodeId> {
        let node = self.host_nodes[host as usize];
        match &mut self.entries {
            Some(entries) => entries.toward(&self.engine, from, node),
            None => Some(node),
        }
    }

    /// Gives router `node` its addresses: it answers from them with ICMP errors about the
    /// packets it refuses (docs/live.md, "Routers"); a router without is silent.
    pub fn add_router(&mut self, node: NodeId, ipv4: Ipv4Addr, ipv6: Ipv6Addr) {
        self.routers.insert(node, (ipv4, ipv6));
        self.routers_by_addr.insert(ipv4.into(), node);
        self.routers_by_addr.insert(ipv6.into(), node);
    }

    /// How a packet from `host` reaches `router`, whose address it is sent to: routing tables
    /// lead to hosts only, so it is sent towards a host whose path from `host` (by the routes
    /// when first asked since the last change ordered) crosses the router, with a TTL that runs out there, where the router answers
    /// it (`refused`). Returns that host and the TTL (the router's place among the routers on
    /// the way); `None` when no path crosses the router.
    fn way_to(&mut self, host: u32, router: NodeId) -> Option<(u32, u8)> {
        if let Some(&way) = self.ways.get(&(host, router)) {
            return way;
        }
        let topo = self.engine.topology();
        let src = self.host_nodes[host as usize];
        let way = (0..self.host_nodes.len() as u32).find_map(|via| {
            let path = self
                .engine
                .routes()
                .path(topo, src, self.host_nodes[via as usize])?;
            let mut at = src;
            let mut routers = 0u8;
            for pipe in path {
                at = topo.far_end(pipe, at);
                if topo.node(at).kind == NodeKind::Router {
                    routers = routers.checked_add(1)?;
                }
                if at == router {
                    return Some((via, routers));
                }
            }
            None
        });
        self.ways.insert((host, router), way);
        way
    }

    /// Calls `set(true)` when the driver wants real-time priority from now on and `set(false)`
    /// when it wants normal priority: a driver that sleeps starts wanting real-time priority,
    /// and wants normal priority while a spin goes on for long (`Waiter::wants_realtime`). The
    /// thread that runs the driver does the setting; without this, priority is left alone.
    pub fn on_priority(&mut self, set: impl FnMut(bool) + Send + 'static) {
        self.priority = Some(Box::new(set));
    }

    /// Joins the driver to its run: it reads `inbox` every turn (the poller of its I/O should
    /// watch `inbox.waker()`) and posts to worker k on `posts[k]`.
    pub(crate) fn connect(&mut self, inbox: Inbox, posts: Vec<Post>) {
        self.inbox = Some(inbox);
        self.payloads.connect(posts);
    }

    /// The engine, to read.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The hosts' I/O.
    pub fn io(&self) -> &I {
        &self.io
    }

    /// The hosts' I/O, to change (a test queues packets into it).
    pub fn io_mut(&mut self) -> &mut I {
        &mut self.io
    }

    /// The time on this driver's clock.
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Lateness and losses outside the model so far.
    pub fn accuracy(&self) -> AccuracyReport {
        self.accuracy.report()
    }

    /// Packets read from and written to each host so far (by this worker).
    pub fn host_counters(&self) -> &[HostCounters] {
        &self.counters
    }

    /// Payload buffers held for packets inside the emulated network.
    pub fn in_flight(&self) -> usize {
        self.payloads.pool_ref().in_use()
    }

    /// How long before a deadline the driver starts spinning now (hybrid precision).
    pub fn spin(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.waiter.spin().as_nanos())
    }

    /// Counts what repartitioning observes from now on: packets per pipe and per pair of
    /// consecutive pipes (`Engine::enable_transition_counts`), and the lateness of releases
    /// per epoch (`Order::Traffic`).
    pub fn count_traffic(&mut self) {
        self.engine.enable_transition_counts();
        self.epoch_lateness = Some(lateness_histogram());
    }

    /// One turn of the loop: wait (as the precision mode says), read the hosts and the inbox,
    /// advance, write.
    pub fn step(&mut self) -> io::Result<()> {
        let now = self.clock.now();
        // A move's instant is a deadline; a worker that handed over sleeps until the others'
        // hand-overs wake it (`Waiter::awaiting`).
        let mut sleep = match &self.moving {
            None => self.waiter.budget(now, self.engine.poll_at()),
            Some(m) if m.handed => self.waiter.awaiting(now),
            Some(m) => {
                let deadline = self.engine.poll_at().map_or(m.at, |p| p.min(m.at));
                self.waiter.budget(now, Some(deadline))
            }
        };
        if !sleep.is_zero() && self.inbox.as_mut().is_some_and(|i| !i.may_sleep()) {
            self.waiter.woke(now, false);
            sleep = netloom_time::Duration::ZERO;
        }
        let realtime = self.waiter.wants_realtime(now, !sleep.is_zero());
        if realtime != self.realtime {
            if let Some(set) = &mut self.priority {
                set(realtime);
            }
            self.realtime = realtime;
        }
        self.ready.clear();
        let timeout = std::time::Duration::from_nanos(sleep.as_nanos());
        let waited = self.io.wait(Some(timeout), &mut self.ready);
        if let Some(inbox) = &self.inbox {
            inbox.awake();
        }
        let timed_out = waited?;
        if !sleep.is_zero() {
            self.waiter.woke(self.clock.now(), timed_out);
        }
        for i in 0..self.ready.len() {
            let host = self.ready[i];
            self.receive(host)?;
        }
        self.read_inbox()?;
        self.release_due()?;
        self.ration.adapt(self.clock.now());
        Ok(())
    }

    /// Advances the engine towards now, by at most `EVENTS_PER_ADVANCE` events (the next turn
    /// goes on without sleeping), and writes out what is due.
    /// During a move: up to just before its instant, then the hand-over; nothing while the
    /// others' hand-overs are awaited.
    fn release_due(&mut self) -> io::Result<()> {
        let now = self.clock.now();
        let until = match &self.moving {
            None => now,
            Some(m) if m.handed => return Ok(()),
            Some(m) => now.min(Instant(m.at.as_nanos().saturating_sub(1))),
        };
        let done = self.engine.advance_within(until, EVENTS_PER_ADVANCE);
        let skipped = self.engine.counters().changes_skipped;
        self.accuracy
            .record_skipped_changes(skipped - self.skipped_changes);
        self.skipped_changes = skipped;
        self.flush()?;
        if done && self.moving.as_ref().is_some_and(|m| now >= m.at) {
            self.hand_over()?;
        }
        Ok(())
    }

    /// At a move's instant, with everything before it processed and every hand-off of the old
    /// ownership posted: takes on the new ownership, and posts each other worker what it
    /// handles from now on (pipes, pending exits, hosts with their buckets), empty or not, so
    /// that each knows when it has everything. Stops reading the hosts that moved; their
    /// packets not read yet wait in their TUN queues for their new reader.
    fn hand_over(&mut self) -> io::Result<()> {
        let m = self.moving.as_mut().expect("a move is under way");
        let paused = self.clock.now().as_nanos();
        let out = self.engine.migrate_out(m.next.clone());
        let mut hosts: Vec<Vec<_>> = vec![Vec::new(); out.len()];
        for h in 0..self.reads.len() as u32 {
            if self.reads[h as usize] && !self.engine.owns_host(h) {
                self.reads[h as usize] = false;
                self.io.read_host(h, false)?;
                hosts[usize::from(m.next.host_owner(h))].push((h, self.ration.bucket(h)));
            }
        }
        let (me, ship) = (self.engine.worker(), self.engine.ships_payloads());
        for ((to, mut migration), hosts) in out.into_iter().enumerate().zip(hosts) {
            if to != me {
                m.moved.packets += migration.counts().1 as u64;
                let payloads = match ship {
                    true => self.payloads.pack(migration.packets_mut()),
                    false => Vec::new(),
                };
                let stamps = Stamps {
                    paused,
                    extracted: self.clock.now().as_nanos(),
                    ..Stamps::default()
                };
                let handover = Box::new(Handover {
                    migration,
                    hosts,
                    payloads,
                    stamps,
                });
                self.payloads.post(to as u16, Message::Handover(handover));
            }
        }
        m.handed = true;
        for handover in std::mem::take(&mut self.early) {
            self.take_handover(handover)?;
        }
        if self.moving.as_ref().is_some_and(|m| m.expected == 0) {
            self.finish_move();
        }
        Ok(())
    }

    /// Takes in another worker's hand-over: before this worker handed over its own, it waits.
    /// Shipped packets come into this worker's pool (one that finds no room is lost outside
    /// the model, as a shipped hand-off would be).
    fn take_handover(&mut self, handover: Handover) -> io::Result<()> {
        let Some(m) = self.moving.as_mut().filter(|m| m.handed) else {
            self.early.push(handover);
            return Ok(());
        };
        m.expected -= 1;
        let Handover {
            mut migration,
            hosts,
            payloads,
            stamps,
        } = handover;
        if !payloads.is_empty() {
            let packets = migration.packets_mut();
            let arrived = std::mem::take(packets);
            for (handoff, bytes) in arrived.into_iter().zip(payloads) {
                match self.payloads.take_shipped(handoff, &bytes) {
                    Some(handoff) => packets.push(handoff),
                    None => self.accuracy.record_physical_drop(),
                }
            }
        }
        self.engine.migrate_in(migration);
        for (h, bucket) in hosts {
            self.reads[h as usize] = true;
            self.ration.set_bucket(h, bucket);
            self.io.read_host(h, true)?;
        }
        m.last = Some((stamps, self.clock.now()));
        if m.expected == 0 {
            self.finish_move();
        }
        Ok(())
    }

    /// Every hand-over is in: passes on the hand-offs held for other workers, taps the pipes
    /// this worker owns now, and answers the order.
    fn finish_move(&mut self) {
        let m = self.moving.take().expect("a move is under way");
        self.waiter.end_hold();
        for handoff in m.held {
            self.take_over(handoff);
        }
        self.retap();
        let now = self.clock.now();
        let phases = m
            .last
            .map(|(stamps, installed)| MovePhases::of(m.at, m.ordered, &stamps, [installed, now]));
        let moved = Moved {
            stall_ns: now.saturating_since(m.at).as_nanos(),
            phases,
            ..m.moved
        };
        let _ = m.reply.send(Answer::Moved(moved));
    }

    /// Takes in what other workers and the experiment posted: hand-offs (measuring how late
    /// each arrived), news of this worker's payloads, hand-overs, and orders.
    fn read_inbox(&mut self) -> io::Result<()> {
        let Some(mut inbox) = self.inbox.take() else {
            return Ok(());
        };
        let mut result = Ok(());
        while let Some(message) = inbox.take() {
            match message {
                Message::Handoff(handoff) => self.take_over(handoff),
                Message::Shipped(handoff, bytes) => {
                    match self.payloads.take_shipped(handoff, &bytes) {
                        Some(handoff) => self.take_over(handoff),
                        None => self.accuracy.record_physical_drop(),
                    }
                }
                Message::Hold(token) => self.payloads.settle_here(token, true),
                Message::Release(token) => self.payloads.settle_here(token, false),
                Message::Refused {
                    token,
                    node,
                    why,
                    ttl,
                } => self.refused(token, node, why, ttl),
                Message::Order(Order::Move(next, at), reply) => {
                    let expected = next.workers() - 1;
                    // The instant is every worker's deadline: a program on this CPU must not
                    // hold this worker off it, however long it has spun (`hold_realtime`).
                    let before = Instant(at.as_nanos().saturating_sub(LONG_SPIN.as_nanos()));
                    self.waiter.hold_realtime(before..at + LONG_SPIN);
                    self.moving = Some(Move {
                        next,
                        at,
                        reply,
                        handed: false,
                        expected,
                        held: Vec::new(),
                        moved: Moved::default(),
                        ordered: self.clock.now(),
                        last: None,
                    });
                }
                Message::Order(order, reply) => {
                    // The asker may have given up waiting; nothing is owed to it then.
                    let _ = reply.send(self.answer(order));
                }
                Message::Handover(handover) => {
                    if let Err(e) = self.take_handover(*handover) {
                        result = Err(e);
                        break;
                    }
                }
                Message::Unreadable { from, why } => {
                    result = Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("the hand-over from worker {from} could not be read: {why}"),
                    ));
                    break;
                }
            }
        }
        self.inbox = Some(inbox);
        result
    }

    /// Takes over a packet from another worker, measuring how late it arrived. One posted
    /// under the ownership before a move may be for another worker now: it is passed on there
    /// (once this worker's move is over, so that it goes by the new ownership).
    fn take_over(&mut self, handoff: Handoff) {
        let to = self.engine.handler_of(&handoff);
        let lateness = self.clock.now().saturating_since(handoff.at());
        let lateness = std::time::Duration::from_nanos(lateness.as_nanos());
        if usize::from(to) != self.engine.worker() {
            match &mut self.moving {
                Some(m) => m.held.push(handoff),
                None => {
                    self.accuracy.record_forwarded_handoff(lateness);
                    let ship = self.engine.ships_payloads();
                    self.payloads.pass_on(to, handoff, ship);
                }
            }
            return;
        }
        self.accuracy.record_handoff(lateness);
        self.engine.accept(handoff);
    }

    fn answer(&mut self, order: Order) -> Answer {
        match order {
            Order::Apply(change) => {
                // A link taken down or up may change the paths that cross each router.
                self.ways.clear();
                let movable = self.epoch_lateness.is_some();
                Answer::Applied(answer::apply(&mut self.engine, &change, movable))
            }
            Order::Snapshot => Answer::Snapshot(Box::new(self.snapshot())),
            Order::Accuracy => Answer::Accuracy(self.accuracy.report()),
            Order::Capture(tap) => {
                for &pipe in &tap.pipes {
                    if self.engine.owns_pipe(pipe) {
                        self.engine.set_tap(pipe, true);
                    }
                }
                self.taps.push(tap);
                Answer::Applied(Ok(()))
            }
            Order::Traffic => {
                let (packets, transitions) = self.engine.hop_counts();
                let lateness_ns = match &mut self.epoch_lateness {
                    Some(h) => std::mem::replace(h, lateness_histogram()),
                    None => lateness_histogram(),
                };
                Answer::Traffic(Box::new(Traffic {
                    packets,
                    transitions,
                    lateness_ns,
                }))
            }
            Order::Move(..) => unreachable!("a move is taken by `read_inbox`"),
        }
    }

    /// This worker's figures now.
    pub fn snapshot(&mut self) -> Snapshot {
        let now = self.clock.now();
        answer::snapshot(&mut self.engine, now, &self.accuracy, &self.counters)
    }

    /// The driver's last figures once every worker of the run has stopped stepping: what other
    /// workers handed it but it never took counts as inside the network too (and is dropped
    /// with it), as does every packet its engine still holds.
    pub fn final_snapshot(&mut self) -> Snapshot {
        let moved = |h: &Handover| h.migration.counts().1 as u64;
        let mut unread = self.early.iter().map(moved).sum::<u64>()
            + self.moving.as_ref().map_or(0, |m| m.held.len() as u64);
        if let Some(inbox) = &mut self.inbox {
            while let Some(message) = inbox.take() {
                match message {
                    Message::Handoff(_) | Message::Shipped(..) => unread += 1,
                    Message::Handover(h) => unread += moved(&h),
                    Message::Order(order, reply) => drop((order, reply)),
                    Message::Hold(_)
                    | Message::Release(_)
                    | Message::Refused { .. }
                    | Message::Unreadable { .. } => {}
                }
            }
        }
        let mut snapshot = self.snapshot();
        snapshot.in_flight += unread;
        snapshot
    }

    /// Reads up to a batch of frames from `host` into pool buffers (`READ_BATCH` frames, or
    /// fewer when the host's ration runs out) and injects their packets: a super-packet's
    /// segments one by one, each with its own size on the wire.
    fn receive(&mut self, host: u32) -> io::Result<()> {
        let offset = self.framing.header_len();
        for _ in 0..READ_BATCH {
            // Release what fell due before reading on: under a flood, a batch of reads followed
            // by a batch of writes made packets wait for the whole turn (lateness p99 187 us
            // with 64-packet batches). The clock is read afresh, so segments that fell due
            // while the previous frame was injected do not wait for another read, which can
            // take several microseconds for a 64 KB super-packet. (Waiting for a deadline due
            // within a few microseconds before reading, too, halved the lateness p99 under a
            // TCP flood but wrote segments one by one at 10 Gbit/s, where they fall due 1.2 us
            // apart: TCP then reached 8.3 instead of 9.2 Gbit/s of the link's 10.) Hand-offs
            // from other workers are taken first, for the same reason: a packet handed back
            // home to be written is due too.
            self.read_inbox()?;
            if self
                .engine
                .poll_at()
                .is_some_and(|at| at <= self.clock.now())
            {
                self.release_due()?;
            }
            // From a move's instant until its end no host is read: a packet read then would
            // enter under an ownership about to change, or a pipe whose state is on its way.
            // Checked after releasing, which hands over once the instant has come: a frame read
            // after that, from a host handed over, would enter an engine that no longer owns
            // the host (`tests/workers.rs`, `a_host_that_moves_is_never_read_...`).
            let now = self.clock.now();
            let moving = self
                .moving
                .as_ref()
                .is_some_and(|m| m.handed || now >= m.at);
            if moving || !self.reads[host as usize] || !self.ration.may_take(host, now) {
                return Ok(());
            }
            let Some((id, len)) = self.read_frame(host)? else {
                return Ok(());
            };
            let now = self.clock.now();
            self.waiter.packet(now);
            let pool = self.payloads.pool();
            let frame = &pool.space(id)[..len];
            let parsed = match self.framing {
                Framing::Plain => Ok(Frame::Single),
                Framing::Vnet { .. } => segment::parse(frame),
            }
            .and_then(|kind| Ok((kind, endpoints(&frame[offset..])?)));
            let c = &mut self.counters[host as usize];
            let (gso, (src, addr)) = match parsed {
                Ok((Frame::Single, ends)) => (None, ends),
                Ok((Frame::Super(g), ends)) => (Some(g), ends),
                Err(why) => {
                    c.packets_in += 1;
                    c.bytes_in += len.saturating_sub(offset) as u64;
                    match why {
                        Malformed::Segments => c.refused_gso += 1,
                        _ => c.malformed += 1,
                    }
                    pool.put_back(id);
                    continue;
                }
            };
            let single = (len - offset) as u32;
            let segments = gso.map_or(1, |g| g.segments());
            self.ration.took(host, segments);
            c.packets_in += u64::from(segments);
            c.bytes_in += u64::from(gso.map_or(single, |g| g.wire_total()));
            let ttl = icmp::ttl(&frame[offset..]);
            let to_host = match &mut self.entries {
                Some(entries) => entries.end_for(&self.engine, host, addr),
                None => self.hosts_by_addr.get(&addr).copied(),
            }
            .map(|dst| (dst, ttl));
            let way = to_host.or_else(|| {
                let router = *self.routers_by_addr.get(&addr)?;
                let (via, hops) = self.way_to(host, router)?;
                Some((via, ttl.min(hops)))
            });
            let Some((dst, ttl)) = way else {
                self.counters[host as usize].unknown_destination += u64::from(segments);
                let src_node = self.host_nodes[host as usize];
                if let Some(gateway) = self.engine.router_for(src_node) {
                    // No copy of it is in flight: the error quotes it, then it goes back.
                    self.payloads.pool().fill(id, len, gso, 0);
                    self.send_error(now, id, offset, gateway, icmp::Error::NoSuchHost);
                }
                self.payloads.pool().put_back(id);
                continue;
            };
            // A host sending as another, or as an address no host has: its replies would go
            // elsewhere, and experiments would trust a source that lies.
            let pool = self.payloads.pool();
            let forwards = self.entries.as_ref().is_some_and(|e| e.is_port(host));
            if !forwards && self.hosts_by_addr.get(&src) != Some(&host) {
                self.counters[host as usize].spoofed += u64::from(segments);
                if !self.allow_spoofing {
                    pool.put_back(id);
                    continue;
                }
            }
            // The segments of a super-packet share its header: its ECN field and its flow.
            let meta = meta(&pool.space(id)[offset..len]);
            pool.fill(id, len, gso, u32::from(segments));
            let (src_node, dst_node) = (
                self.host_nodes[host as usize],
                self.host_nodes[dst as usize],
            );
            let me = self.payloads.me();
            let injected = match gso {
                None => self.engine.inject(
                    now,
                    src_node,
                    dst_node,
                    Injected {
                        bytes: single,
                        token: token(me, id, 0),
                        meta,
                        ttl,
                    },
                ),
                Some(g) => self.engine.inject_segments(
                    now,
                    src_node,
                    dst_node,
                    (0..segments).map(|k| Injected {
                        bytes: g.wire_len(k),
                        token: token(me, id, k),
                        meta,
                        ttl,
                    }),
                ),
            };
            if !injected {
                self.counters[host as usize].unknown_destination += u64::from(segments);
                for _ in 0..segments {
                    self.payloads.pool().release(id);
                }
            }
        }
        Ok(())
    }

    /// Copies what tapped pipes saw into their captures' queues; forgets captures whose client
    /// is gone, and stops tapping pipes no capture wants any more.
    fn capture(&mut self) {
        let mut ended = false;
        for t in self.engine.drain_tapped() {
            let Carried::External { token } = t.carried else {
                continue;
            };
            for tap in &mut self.taps {
                let Some(iface) = tap.wants(&t) else {
                    continue;
                };
                let (_, id, k) = untoken(token);
                let pool = self.payloads.pool_ref();
                let frame = pool.frame(id);
                let mut data = Vec::with_capacity((t.bytes.min(tap.snaplen)) as usize);
                match pool.gso(id) {
                    None => data.extend_from_slice(&frame[self.framing.header_len()..]),
                    Some(g) => {
                        let (head, payload) = g.build(frame, k..k + 1, &mut self.head);
                        data.extend_from_slice(&self.head[VNET_HDR_LEN..head]);
                        data.extend_from_slice(&frame[payload]);
                    }
                }
                data.truncate(tap.snaplen as usize);
                ended |= !tap.offer(Record {
                    iface,
                    at: t.at,
                    original_len: t.bytes,
                    data,
                    dropped: match t.seen {
                        Seen::Dropped(cause) => Some(cause),
                        Seen::Entered | Seen::Left => None,
                    },
                });
            }
        }
        if ended {
            self.taps.retain(|tap| !tap.gone);
            self.retap();
        }
    }

    /// Taps the pipes that this worker owns and some capture wants, and only those.
    fn retap(&mut self) {
        for pipe in 0..self.engine.topology().pipes.len() as PipeId {
            let wanted = self.taps.iter().any(|tap| tap.pipes.contains(&pipe));
            self.engine
                .set_tap(pipe, wanted && self.engine.owns_pipe(pipe));
        }
    }

    /// What router `node` does with the segment `token` names, which it refused with `ttl` left
    /// (its payload is in this worker's pool, even when the router's pipe is another worker's):
    /// an IPv4 packet
    /// too big for the next link but allowed to be fragmented goes on as fragments (a
    /// super-packet, always TCP with DF from Linux, never does); everything else is answered
    /// with the matching ICMP error.
    fn refused(&mut self, token: u64, node: NodeId, why: Refusal, ttl: u8) {
        let id = untoken(token).1;
        let now = self.clock.now();
        let offset = self.framing.header_len();
        let why = match why {
            Refusal::TimeExceeded if self.is_for(id, node) => {
                self.answer_for_router(now, id, node);
                return;
            }
            Refusal::TimeExceeded => icmp::Error::TimeExceeded,
            Refusal::NoRoute => icmp::Error::NoRoute,
            Refusal::TooBig { mtu } => {
                let pool = self.payloads.pool_ref();
                if pool.gso(id).is_none() && fragment::allowed(&pool.frame(id)[offset..]) {
                    self.fragment(now, id, node, mtu, ttl);
                    return;
                }
                icmp::Error::TooBig { mtu }
            }
        };
        self.send_error(now, id, offset, node, why);
    }

    /// Whether the packet in buffer `id` is addressed to router `node`.
    fn is_for(&self, id: u32, node: NodeId) -> bool {
        let offset = self.framing.header_len();
        endpoints(&self.payloads.pool_ref().frame(id)[offset..])
            .is_ok_and(|(_, dst)| self.routers_by_addr.get(&dst) == Some(&node))
    }

    /// Router `node` answers the packet in buffer `id` addressed to it: an echo request with
    /// its reply, a UDP datagram with port unreachable, anything else with nothing.
    fn answer_for_router(&mut self, now: Instant, id: u32, node: NodeId) {
        let offset = self.framing.header_len();
        let request = &self.payloads.pool_ref().frame(id)[offset..];
        match icmp::to_router(request, &mut self.error) {
            icmp::ToRouter::Echo(len) => {
                let src = endpoints(request).map(|(src, _)| src);
                if let Some(&host) = src.ok().and_then(|s| self.hosts_by_addr.get(&s)) {
                    self.send_from(now, node, host, len);
                }
            }
            icmp::ToRouter::Udp => {
                self.send_error(now, id, offset, node, icmp::Error::PortUnreachable)
            }
            icmp::ToRouter::Other => {}
        }
    }

    /// Sends the IPv4 packet in buffer `id` on from router `node` as fragments of at most `mtu`
    /// bytes, each a packet of its own from there (`Engine::inject` at the router) with `ttl`.
    /// Fragments that find no buffer are physical drops.
    fn fragment(&mut self, now: Instant, id: u32, node: NodeId, mtu: u32, ttl: u8) {
        let offset = self.framing.header_len();
        if matches!(self.framing, Framing::Vnet { .. }) {
            segment::finish_checksum(self.payloads.pool().space(id));
        }
        let frame = self.payloads.pool_ref().frame(id);
        let Ok((_, dst)) = endpoints(&frame[offset..]) else {
            return;
        };
        let Some(&dst) = self.hosts_by_addr.get(&dst) else {
            return;
        };
        let Some(dst) = self.toward_host(node, dst) else {
            return;
        };
        let frame = self.payloads.pool_ref().frame(id);
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        fragment::split(&frame[offset..], mtu, |f| {
            pieces.push([&frame[..offset], f].concat());
        });
        let me = self.payloads.me();
        for piece in pieces {
            let pool = self.payloads.pool();
            let Some(part) = pool.take(Size::Small) else {
                self.accuracy.record_physical_drop();
                continue;
            };
            pool.space(part)[..piece.len()].copy_from_slice(&piece);
            pool.fill(part, piece.len(), None, 1);
            let packet = Injected {
                bytes: (piece.len() - offset) as u32,
                token: token(me, part, 0),
                meta: meta(&piece[offset..]),
                ttl,
            };
            if !self.engine.inject(now, node, dst, packet) {
                self.payloads.pool().release(part);
            }
        }
    }

    /// Router `router` answers the packet in buffer `id` (its IP header at `offset`) with the
    /// ICMP error `why`, if it has addresses, its rate limit allows, and the packet may be
    /// answered (`icmp::error`): the error goes into the network at the router, bound for the
    /// packet's source host, so it comes back over the emulated links. Counted per source host
    /// (`HostCounters::icmp_errors`, `icmp_limited`).
    fn send_error(
        &mut self,
        now: Instant,
        id: u32,
        offset: usize,
        router: NodeId,
        why: icmp::Error,
    ) {
        let Some(&(v4, v6)) = self.routers.get(&router) else {
            return;
        };
        let original = &self.payloads.pool_ref().frame(id)[offset..];
        let Ok((src, _)) = endpoints(original) else {
            return;
        };
        let Some(&host) = self.hosts_by_addr.get(&src) else {
            return;
        };
        let from = if src.is_ipv4() { v4.into() } else { v6.into() };
        let Some(len) = icmp::error(original, from, why, &mut self.error) else {
            return;
        };
        let c = &mut self.counters[host as usize];
        let bucket = self
            .buckets
            .entry((router, host, src.is_ipv6()))
            .or_insert_with(|| Bucket::new(now));
        if why.is_limited() && !bucket.allow(now) {
            c.icmp_limited += 1;
            return;
        }
        c.icmp_errors += 1;
        self.send_from(now, router, host, len);
    }

    /// Sends the `len` bytes built in `self.error` from `router` to `host`: into the network at
    /// the router, so they come back over the emulated links. Without a free buffer, a physical
    /// drop.
    fn send_from(&mut self, now: Instant, router: NodeId, host: u32, len: usize) {
        let offset = self.framing.header_len();
        let pool = self.payloads.pool();
        let Some(reply) = pool.take(Size::Small) else {
            self.accuracy.record_physical_drop();
            return;
        };
        let space = pool.space(reply);
        space[..offset].fill(0);
        space[offset..offset + len].copy_from_slice(&self.error[..len]);
        pool.fill(reply, offset + len, None, 1);
        let packet = Injected {
            bytes: len as u32,
            token: token(self.payloads.me(), reply, 0),
            meta: meta(&self.error[..len]),
            ttl: icmp::ERROR_TTL,
        };
        let injected = self
            .toward_host(router, host)
            .is_some_and(|dst| self.engine.inject(now, router, dst, packet));
        if !injected {
            self.payloads.pool().release(reply);
        }
    }

    /// Reads one frame from `host` into a pool buffer and returns the buffer and the frame's
    /// length; `None` when the host has nothing queued, or when a frame was dropped for want of
    /// a buffer (the others then get their turn).
    fn read_frame(&mut self, host: u32) -> io::Result<Option<(u32, usize)>> {
        // The size of a frame is known only once it is read, so with GSO it is read into a
        // large buffer; one that fits a small buffer moves there (a copy of at most the MTU), so
        // a small packet in flight never pins 64 KB.
        let pool = self.payloads.pool();
        let size = if pool.bytes(Size::Large) > 0 {
            Size::Large
        } else {
            Size::Small
        };
        let Some(id) = pool.take(size) else {
            return self.read_without_buffer(host);
        };
        let len = match self.io.recv(host, pool.space(id)) {
            Ok(len) => len,
            Err(e) => {
                pool.put_back(id);
                return match e.kind() {
                    io::ErrorKind::WouldBlock => Ok(None),
                    _ => Err(e),
                };
            }
        };
        if size == Size::Large && len <= pool.bytes(Size::Small) {
            if let Some(small) = pool.take(Size::Small) {
                pool.copy(id, small, len);
                pool.put_back(id);
                return Ok(Some((small, len)));
            }
        }
        Ok(Some((id, len)))
    }

    /// Every buffer of the size a read needs is in flight: reads the frame anyway, so the host
    /// is not stalled, and keeps it if a small buffer is free and holds it; otherwise it is lost
    /// outside the model's say, each of its segments a physical drop.
    fn read_without_buffer(&mut self, host: u32) -> io::Result<Option<(u32, usize)>> {
        let len = match self.io.recv(host, &mut self.overflow) {
            Ok(len) => len,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) => return Err(e),
        };
        let pool = self.payloads.pool();
        if len <= pool.bytes(Size::Small) {
            if let Some(id) = pool.take(Size::Small) {
                pool.space(id)[..len].copy_from_slice(&self.overflow[..len]);
                return Ok(Some((id, len)));
            }
        }
        let segments = match (self.framing, segment::parse(&self.overflow[..len])) {
            (Framing::Vnet { .. }, Ok(Frame::Super(g))) => g.segments(),
            _ => 1,
        };
        for _ in 0..segments {
            self.accuracy.record_physical_drop();
        }
        Ok(None)
    }

    /// Writes every packet the engine released, measuring how late each is, settles the
    /// payloads of copies that were duplicated or dropped, and posts hand-offs. Consecutive
    /// segments of one super-packet released together (all of them due by now) go out in one
    /// write.
    fn flush(&mut self) -> io::Result<()> {
        // Before the outputs: a packet dropped or delivered gives its buffer back there.
        if !self.taps.is_empty() {
            self.capture();
        }
        self.outbox.extend(self.engine.drain_outputs());
        let mut i = 0;
        while i < self.outbox.len() {
            let (token, dst, ttl) = match self.outbox[i] {
                Output::Delivered {
                    token, dst, ttl, ..
                } => (token, dst, ttl),
                Output::Refused {
                    token,
                    node,
                    why,
                    ttl,
                } => {
                    // A super-packet is answered once, for its first segment, as a router
                    // answers the packet its host would send without offload. The payload's
                    // home answers: here, or told before the copy's release.
                    let (home, _, segment) = untoken(token);
                    match (home == self.payloads.me(), segment) {
                        (_, 1..) => {}
                        (true, 0) => self.refused(token, node, why, ttl),
                        (false, 0) => self.payloads.refer_home(token, node, why, ttl),
                    }
                    i += 1;
                    continue;
                }
                Output::Duplicated { token } => {
                    self.payloads.settle(token, true);
                    i += 1;
                    continue;
                }
                Output::Dropped { token } => {
                    self.payloads.settle(token, false);
                    i += 1;
                    continue;
                }
            };
            let (home, id, first) = untoken(token);
            debug_assert_eq!(
                home,
                self.payloads.me(),
                "a packet is delivered by its home"
            );
            let gso = self.payloads.pool_ref().gso(id);
            let mut end = i + 1;
            if let Some(g) = gso {
                let segments = usize::from(g.segments());
                while end < self.outbox.len()
                    && usize::from(first) + (end - i) < segments
                    && matches!(self.outbox[end],
                        Output::Delivered { token: t, dst: d, .. }
                            if d == dst && t == token + (end - i) as u64)
                {
                    end += 1;
                }
            }
            let run = first..first + (end - i) as u16;
            let host = self
                .engine
                .routes()
                .host_index(dst)
                .expect("the engine delivers only to hosts");
            let now = self.clock.now();
            self.waiter.packet(now);
            let mut ce = false;
            for output in &self.outbox[i..end] {
                if let Output::Delivered { at, ce: marked, .. } = output {
                    let lateness = now.saturating_since(*at);
                    self.ration.released(lateness);
                    if let Some(h) = &mut self.epoch_lateness {
                        h.saturating_record(lateness.as_nanos());
                    }
                    self.accuracy
                        .record_release(std::time::Duration::from_nanos(lateness.as_nanos()));
                    ce |= marked;
                }
            }
            // Every router on the way took one off (a copy's twin sets the same).
            let offset = self.framing.header_len();
            icmp::set_ttl(&mut self.payloads.pool().space(id)[offset..], ttl);
            if ce {
                // The mark goes into the buffer, so segments of the same super-packet written
                // later carry it too: the AQM judged the super-packet as one entry.
                let len = self.payloads.pool_ref().frame(id).len();
                let offset = self.framing.header_len();
                netloom_packet::set_ce(&mut self.payloads.pool().space(id)[offset..len]);
            }
            let frame = self.payloads.pool_ref().frame(id);
            let (sent, bytes) = match gso {
                None => (
                    self.io.send(host, frame),
                    frame.len() - self.framing.header_len(),
                ),
                Some(g) => {
                    let (head, payload) = g.build(frame, run.clone(), &mut self.head);
                    let parts = [
                        IoSlice::new(&self.head[..head]),
                        IoSlice::new(&frame[payload]),
                    ];
                    let bytes = run.clone().map(|k| g.wire_len(k) as usize).sum();
                    (self.io.send_vectored(host, &parts), bytes)
                }
            };
            match sent {
                Ok(()) => {
                    let c = &mut self.counters[host as usize];
                    c.packets_out += run.len() as u64;
                    c.bytes_out += bytes as u64;
                }
                Err(_) => {
                    for _ in run.clone() {
                        self.accuracy.record_physical_drop();
                    }
                }
            }
            for _ in run {
                self.payloads.pool().release(id);
            }
            i = end;
        }
        self.outbox.clear();
        // A packet another worker will deliver to a host this one reads: the host's answer,
        // made within that write, should find this driver awake.
        let (reads, waiter) = (&self.reads, &mut self.waiter);
        self.payloads.post_handoffs(&mut self.engine, |handoff| {
            if handoff.delivers_to().is_some_and(|h| reads[h as usize]) {
                waiter.expect(handoff.at());
            }
        });
        Ok(())
    }
}
