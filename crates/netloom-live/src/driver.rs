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
use crate::intake::Intake;
use crate::io::{Framing, PacketIo};
use crate::kernel::{Entries, KernelRouters};
use crate::mailbox::{Inbox, Message, Post};
use crate::message::{Answer, HostCounters, Order, Snapshot};
use crate::meta::meta;
use crate::moved::Transfer;
use crate::moving::{Move, Parts as MoveParts};
use crate::payload::{token, untoken, Payloads};
use crate::pool::Pool;
use crate::ration::Ration;
use crate::routers::{Parts, Routers};
use crate::taps::Taps;
use crate::traffic::lateness_histogram;
use crate::wait::{Precision, Waiter, LONG_SPIN};
use hdrhistogram::Histogram;

use netloom_engine::{Engine, Handoff, Injected, Output};
use netloom_packet::icmp;
use netloom_packet::ip::Malformed;
use netloom_packet::segment::{MAX_HEAD, VNET_HDR_LEN};
use netloom_time::Instant;
use netloom_topo::NodeId;
use std::collections::HashMap;
use std::io::{self, IoSlice};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
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
    /// Reads frames from the hosts into payload buffers.
    intake: Intake,
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
    taps: Taps,
    /// What engine routers send of their own (ICMP errors, echo replies, fragments).
    routers: Routers,
    /// With kernel routers: where packets enter the engine (`add_kernel_routers`).
    entries: Option<Entries>,
    /// When repartitioning (and only then): the lateness of the releases since the last
    /// `Order::Traffic`.
    epoch_lateness: Option<Histogram<u64>>,
    /// A move to another ownership under way (`Order::Move`).
    moving: Option<Move>,
    /// Other workers' transfers that came before this one handed over its own.
    early: Vec<Transfer>,
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
            intake: Intake::new(framing, small.max(large)),
            head: [0; MAX_HEAD],
            inbox: None,
            priority: None,
            realtime: true,
            reads,
            skipped_changes: 0,
            taps: Taps::new(),
            routers: Routers::new(),
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

    /// Gives router `node` its addresses: it answers from them with ICMP errors about the
    /// packets it refuses (docs/live.md, "Routers"); a router without is silent.
    pub fn add_router(&mut self, node: NodeId, ipv4: Ipv4Addr, ipv6: Ipv6Addr) {
        self.routers.add(node, ipv4, ipv6);
    }

    /// The routers' answers, with the parts of the driver they are made with for one call at
    /// `now`.
    fn routers(&mut self, now: Instant) -> (&mut Routers, Parts<'_>) {
        let parts = Parts {
            engine: &mut self.engine,
            payloads: &mut self.payloads,
            accuracy: &mut self.accuracy,
            counters: &mut self.counters,
            hosts_by_addr: &self.hosts_by_addr,
            host_nodes: &self.host_nodes,
            entries: &mut self.entries,
            framing: self.framing,
            now,
        };
        (&mut self.routers, parts)
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
        // transfers wake it (`Waiter::awaiting`).
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
    /// During a move: up to just before its instant, then the transfer; nothing while the
    /// others' transfers are awaited.
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

    /// The move under way, and the parts of the driver it changes and its clock, for one call.
    fn move_parts(&mut self) -> (Option<&mut Move>, MoveParts<'_, I>, &C) {
        let parts = MoveParts {
            engine: &mut self.engine,
            payloads: &mut self.payloads,
            accuracy: &mut self.accuracy,
            io: &mut self.io,
            reads: &mut self.reads,
            ration: &mut self.ration,
        };
        (self.moving.as_mut(), parts, &self.clock)
    }

    /// At a move's instant, with everything before it processed: hands over (`Move::hand_over`),
    /// then takes in the transfers that came before.
    fn hand_over(&mut self) -> io::Result<()> {
        let (m, parts, clock) = self.move_parts();
        m.expect("a move is under way").hand_over(parts, clock)?;
        for transfer in std::mem::take(&mut self.early) {
            self.take_transfer(transfer)?;
        }
        self.finish_move_if_complete();
        Ok(())
    }

    /// Takes in another worker's transfer: before this worker handed over its own, it waits.
    fn take_transfer(&mut self, transfer: Transfer) -> io::Result<()> {
        let now = self.clock.now();
        match self.move_parts() {
            (Some(m), parts, _) if m.handed => m.take_in(parts, transfer, now)?,
            _ => self.early.push(transfer),
        }
        self.finish_move_if_complete();
        Ok(())
    }

    /// Once every transfer is in: passes on the hand-offs held for other workers, taps the
    /// pipes this worker owns now, and answers the order.
    fn finish_move_if_complete(&mut self) {
        if !self.moving.as_ref().is_some_and(Move::is_complete) {
            return;
        }
        let m = self.moving.take().expect("a move is under way");
        self.waiter.end_hold();
        for handoff in m.finish(self.clock.now()) {
            self.take_over(handoff);
        }
        self.taps.retap(&mut self.engine);
    }

    /// Takes in what other workers and the experiment posted: hand-offs (measuring how late
    /// each arrived), news of this worker's payloads, transfers, and orders.
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
                } => {
                    let (routers, mut parts) = self.routers(self.clock.now());
                    routers.refused(&mut parts, token, node, why, ttl);
                }
                Message::Order(Order::Move(next, at), reply) => {
                    // The instant is every worker's deadline: a program on this CPU must not
                    // hold this worker off it, however long it has spun (`hold_realtime`).
                    let before = Instant(at.as_nanos().saturating_sub(LONG_SPIN.as_nanos()));
                    self.waiter.hold_realtime(before..at + LONG_SPIN);
                    self.moving = Some(Move::new(next, at, reply, self.clock.now()));
                }
                Message::Order(order, reply) => {
                    // The asker may have given up waiting; nothing is owed to it then.
                    let _ = reply.send(self.answer(order));
                }
                Message::Transfer(transfer) => {
                    if let Err(e) = self.take_transfer(*transfer) {
                        result = Err(e);
                        break;
                    }
                }
                Message::Unreadable { from, why } => {
                    result = Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("the transfer from worker {from} could not be read: {why}"),
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
                self.routers.forget_ways();
                let movable = self.epoch_lateness.is_some();
                Answer::Applied(answer::apply(&mut self.engine, &change, movable))
            }
            Order::Snapshot => Answer::Snapshot(Box::new(self.snapshot())),
            Order::Accuracy => Answer::Accuracy(self.accuracy.report()),
            Order::Capture(tap) => {
                self.taps.add(tap, &mut self.engine);
                Answer::Applied(Ok(()))
            }
            Order::Traffic => Answer::Traffic(Box::new(answer::traffic(
                &mut self.engine,
                self.epoch_lateness.as_mut(),
            ))),
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
        let unread = self.early.iter().map(Transfer::packets).sum::<u64>()
            + self.moving.as_ref().map_or(0, |m| m.held.len() as u64)
            + self.inbox.as_mut().map_or(0, Inbox::drain_packets);
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
            // the host (`tests/live/workers.rs`, `a_host_that_moves_is_never_read_...`).
            let now = self.clock.now();
            let moving = self
                .moving
                .as_ref()
                .is_some_and(|m| m.handed || now >= m.at);
            if moving || !self.reads[host as usize] || !self.ration.may_take(host, now) {
                return Ok(());
            }
            let read =
                self.intake
                    .read(&mut self.io, host, self.payloads.pool(), &mut self.accuracy);
            let Some((id, len)) = read? else {
                return Ok(());
            };
            let now = self.clock.now();
            self.waiter.read(now, host);
            let pool = self.payloads.pool();
            let frame = &pool.space(id)[..len];
            let c = &mut self.counters[host as usize];
            let (gso, (src, addr)) = match self.intake.parse(frame) {
                Ok(parsed) => parsed,
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
                let router = self.routers.at(&addr)?;
                let (via, hops) =
                    self.routers
                        .way_to(&self.engine, &self.host_nodes, host, router)?;
                Some((via, ttl.min(hops)))
            });
            let Some((dst, ttl)) = way else {
                self.counters[host as usize].unknown_destination += u64::from(segments);
                let src_node = self.host_nodes[host as usize];
                if let Some(gateway) = self.engine.router_for(src_node) {
                    // No copy of it is in flight: the error quotes it, then it goes back.
                    self.payloads.pool().fill(id, len, gso, 0);
                    let (routers, mut parts) = self.routers(now);
                    routers.send_error(&mut parts, id, gateway, icmp::Error::NoSuchHost);
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

    /// Writes every packet the engine released, measuring how late each is, settles the
    /// payloads of copies that were duplicated or dropped, and posts hand-offs. Consecutive
    /// segments of one super-packet released together (all of them due by now) go out in one
    /// write.
    fn flush(&mut self) -> io::Result<()> {
        // Before the outputs: a packet dropped or delivered gives its buffer back there.
        if !self.taps.is_empty() {
            let header_len = self.framing.header_len();
            self.taps
                .copy(&mut self.engine, self.payloads.pool_ref(), header_len);
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
                        (true, 0) => {
                            let (routers, mut parts) = self.routers(self.clock.now());
                            routers.refused(&mut parts, token, node, why, ttl);
                        }
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
            self.waiter.wrote(now, host);
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
            if let Some(h) = handoff.delivers_to().filter(|&h| reads[h as usize]) {
                waiter.expect(handoff.at(), h);
            }
        });
        Ok(())
    }
}
