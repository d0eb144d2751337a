//! The real-time loop: read what hosts send, hand descriptors to the engine, advance it to the
//! wall clock, write out what is due, then wait for the next deadline or packet in the chosen
//! precision mode. Exit times come from the engine's schedule, never from when a packet was
//! actually written, so one late packet does not delay those behind it (no delay cascading).
//! A TCP super-packet (GSO) goes through the engine as its wire-size segments, each timed and
//! lost on its own; segments of one super-packet due in the same turn are written together.
//! In a run of several workers each driver reads its own hosts, keeps their payloads (the
//! packets' home) and writes them out when its engine delivers them; its mailbox brings the
//! hand-offs, payload holds and releases, and requests from the others. When payloads are
//! shipped instead, each hand-off carries its packet's bytes, and the receiver holds them.

use crate::accuracy::{Accuracy, AccuracyReport, Thresholds};
use crate::clock::Clock;
use crate::control::{Reply, Request};
use crate::ip::destination;
use crate::mailbox::{Answer, Inbox, Message, Post};
use crate::pool::{Pool, Size};
use crate::segment::{self, Frame, MAX_HEAD, VNET_HDR_LEN};
use crate::stats::Snapshot;
use netloom_engine::{Engine, Output};
use netloom_time::Instant;
use netloom_topo::NodeId;
use serde::Serialize;
use std::collections::HashMap;
use std::io::{self, IoSlice};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The hosts' side of the emulator: one packet interface per host, indexed like
/// `Topology::hosts`. TUN devices in namespaces in production, queues in memory in tests.
pub trait PacketIo {
    /// Waits up to `timeout` (`None`: indefinitely, `Some(ZERO)`: just look) until some host has
    /// a packet to read, and appends their indices to `ready`. May return early and empty (it
    /// should when the driver's mailbox waker is written).
    fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<u32>) -> io::Result<()>;
    /// Reads one packet sent by `host`; `ErrorKind::WouldBlock` when there is none.
    fn recv(&mut self, host: u32, buf: &mut [u8]) -> io::Result<usize>;
    /// Hands `packet` to `host`.
    fn send(&mut self, host: u32, packet: &[u8]) -> io::Result<()>;
    /// Hands `host` the packet made of `parts` joined, as `send` would.
    fn send_vectored(&mut self, host: u32, parts: &[IoSlice<'_>]) -> io::Result<()> {
        let joined: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        self.send(host, &joined)
    }
    /// What the frames of `recv` and `send` are; the same for the I/O's whole life.
    fn framing(&self) -> Framing {
        Framing::Plain
    }
}

/// What a `PacketIo` reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// Bare IPv4 and IPv6 packets.
    Plain,
    /// Each packet behind a virtio_net_hdr (a TUN device with IFF_VNET_HDR). With `gso`, hosts
    /// may send TCP super-packets of up to 64 KB, and the driver may write some.
    Vnet { gso: bool },
}

/// How the driver waits between deadlines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// Never sleeps: polls for packets and deadlines continuously on its own core. Deadlines
    /// are met within microseconds; one CPU is always busy.
    Busy,
    /// Sleeps until `spin` before a deadline, then polls: timers here wake 15–60 µs late, so a
    /// spin window of that size keeps most of the precision for a fraction of the CPU.
    Hybrid { spin: Duration },
    /// Sleeps until each deadline or packet: least CPU, releases late by the timer's slack.
    Sleep,
}

/// Packets read from and written to one host, counted as on the wire: a super-packet counts as
/// its segments, and bytes are IP packets' bytes.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct HostCounters {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    /// Packets from this host that were not IPv4 or IPv6, were truncated, or were super-packets
    /// that cannot be split; dropped.
    pub malformed: u64,
    /// Packets from this host to an address no host has; dropped and counted, no ICMP is sent.
    pub unknown_destination: u64,
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
    }
}

/// Packets read from one host in one go before the others get a turn.
const READ_BATCH: usize = 64;
/// Longest single wait, so a stop request is noticed promptly even when nothing happens.
const MAX_WAIT: Duration = Duration::from_millis(20);
/// The largest frame with GSO: virtio_net_hdr, IPv6 header and the most its payload length says.
const MAX_SUPER: usize = VNET_HDR_LEN + 40 + 65_535;
/// Bits of an engine token that number the segment; the pool buffer's index is above them,
/// and the home worker (whose pool holds the buffer) above that.
const SEGMENT_BITS: u32 = 16;
const HOME_SHIFT: u32 = SEGMENT_BITS + 32;

fn token(home: u16, id: u32, segment: u16) -> u64 {
    u64::from(home) << HOME_SHIFT | u64::from(id) << SEGMENT_BITS | u64::from(segment)
}

/// The home worker, buffer and segment of a token.
fn untoken(token: u64) -> (u16, u32, u16) {
    (
        (token >> HOME_SHIFT) as u16,
        (token >> SEGMENT_BITS) as u32,
        token as u16,
    )
}

pub struct Driver<I: PacketIo> {
    engine: Engine,
    io: I,
    clock: Clock,
    precision: Precision,
    pool: Pool,
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
    /// This driver's worker: the home of the payloads it reads.
    me: u16,
    /// Hand-offs and payload news from other workers, and requests from `netloom stats` and
    /// `netloom link`, once `connect`ed.
    inbox: Option<Inbox>,
    /// Where to post to each worker, by worker.
    posts: Vec<Post>,
    /// Hand-offs on their way out, when their payloads are shipped along.
    shipping: Vec<netloom_engine::Handoff>,
}

impl<I: PacketIo> Driver<I> {
    /// A driver for `engine`, whose hosts (in `Topology::hosts` order) have the `addresses`
    /// given per host and send packets of at most `max_packet` bytes (the MTU; super-packets of
    /// GSO are larger); at most `max_in_flight` packets are held at once, and with GSO as many
    /// super-packets as take the memory of that many packets.
    pub fn new(
        engine: Engine,
        io: I,
        addresses: &[Vec<IpAddr>],
        max_packet: usize,
        max_in_flight: usize,
        precision: Precision,
        thresholds: Thresholds,
    ) -> Driver<I> {
        let host_nodes = engine.topology().hosts.clone();
        let framing = io.framing();
        let small = match framing {
            Framing::Plain => max_packet,
            Framing::Vnet { .. } => VNET_HDR_LEN + max_packet,
        };
        let (large, max_large) = match framing {
            Framing::Vnet { gso: true } if MAX_SUPER > small => {
                (MAX_SUPER, (max_in_flight * small / MAX_SUPER).max(1))
            }
            _ => (0, 0),
        };
        let hosts_by_addr = addresses
            .iter()
            .enumerate()
            .flat_map(|(i, addrs)| addrs.iter().map(move |a| (*a, i as u32)))
            .collect();
        Driver {
            counters: vec![HostCounters::default(); host_nodes.len()],
            io,
            clock: Clock::start(),
            precision,
            pool: Pool::new(small, max_in_flight, large, max_large),
            hosts_by_addr,
            host_nodes,
            accuracy: Accuracy::new(thresholds),
            ready: Vec::new(),
            outbox: Vec::new(),
            framing,
            overflow: vec![0; small.max(large)].into_boxed_slice(),
            head: [0; MAX_HEAD],
            me: engine.worker() as u16,
            inbox: None,
            posts: Vec::new(),
            shipping: Vec::new(),
            engine,
        }
    }

    /// Joins the driver to its run: it reads `inbox` every turn (the poller of its I/O should
    /// watch `inbox.waker()`), posts to worker k on `posts[k]`, and keeps time by `clock`, which
    /// every worker of the run must share.
    pub fn connect(&mut self, inbox: Inbox, posts: Vec<Post>, clock: Clock) {
        self.inbox = Some(inbox);
        self.posts = posts;
        self.clock = clock;
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// For runtime changes (`set_pipe_config`, `set_link_up`); they apply from now on.
    pub fn engine_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }

    pub fn io(&self) -> &I {
        &self.io
    }

    pub fn io_mut(&mut self) -> &mut I {
        &mut self.io
    }

    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    pub fn accuracy(&self) -> AccuracyReport {
        self.accuracy.report()
    }

    pub fn host_counters(&self) -> &[HostCounters] {
        &self.counters
    }

    /// Packets whose payload the driver holds (inside the emulated network).
    pub fn in_flight(&self) -> usize {
        self.pool.in_use()
    }

    /// Runs until `stop` is set.
    pub fn run(&mut self, stop: &AtomicBool) -> io::Result<()> {
        while !stop.load(Ordering::Relaxed) {
            self.step()?;
        }
        Ok(())
    }

    /// One turn of the loop: wait (as the precision mode says), read the hosts and the
    /// mailbox, advance, write.
    pub fn step(&mut self) -> io::Result<()> {
        let mut timeout = self.wait_budget();
        if !timeout.is_zero() && self.inbox.as_mut().is_some_and(|i| !i.may_sleep()) {
            timeout = Duration::ZERO;
        }
        self.ready.clear();
        let waited = self.io.wait(Some(timeout), &mut self.ready);
        if let Some(inbox) = &self.inbox {
            inbox.awake();
        }
        waited?;
        for i in 0..self.ready.len() {
            let host = self.ready[i];
            self.receive(host)?;
        }
        self.read_inbox();
        self.release_due()
    }

    /// Advances the engine to now and writes out what is due.
    fn release_due(&mut self) -> io::Result<()> {
        self.engine.advance(self.clock.now());
        self.flush()
    }

    /// Takes in what other workers and the control thread posted: hand-offs (measuring how late
    /// each arrived), news of this worker's payloads, and requests.
    fn read_inbox(&mut self) {
        let Some(mut inbox) = self.inbox.take() else {
            return;
        };
        while let Some(message) = inbox.take() {
            match message {
                Message::Handoff(handoff) => self.take_over(handoff),
                Message::Shipped(mut handoff, bytes) => {
                    let len = bytes.len();
                    match self.pool.take(Size::Small) {
                        Some(id) if len <= self.pool.bytes(Size::Small) => {
                            self.pool.space(id)[..len].copy_from_slice(&bytes);
                            self.pool.fill(id, len, None, 1);
                            handoff.rehome(token(self.me, id, 0), self.me);
                            self.take_over(handoff);
                        }
                        // No buffer left: the packet is lost outside the model.
                        other => {
                            if let Some(id) = other {
                                self.pool.put_back(id);
                            }
                            self.accuracy.record_physical_drop();
                        }
                    }
                }
                Message::Hold(token) => self.pool.hold(untoken(token).1),
                Message::Release(token) => self.pool.release(untoken(token).1),
                Message::Request(request, reply) => {
                    let _ = reply.send(self.answer(request));
                }
            }
        }
        self.inbox = Some(inbox);
    }

    /// Takes over a packet from another worker, measuring how late it arrived.
    fn take_over(&mut self, handoff: netloom_engine::Handoff) {
        let lateness = self.clock.now().saturating_since(handoff.at());
        self.accuracy
            .record_handoff(Duration::from_nanos(lateness.as_nanos()));
        self.engine.accept(handoff);
    }

    /// This worker's part of the answer to `request`; a change applies to its engine (every
    /// worker keeps the whole network's configuration and routes).
    fn answer(&mut self, request: Request) -> Answer {
        let changed = match request {
            Request::Stats => return Answer::Stats(Box::new(self.snapshot())),
            Request::LinkSet {
                a,
                b,
                direction,
                params,
            } => self.set_link(&a, &b, direction.as_deref().unwrap_or("both"), &params),
            Request::LinkState { a, b, up } => match self.find_link(&a, &b) {
                Ok((link, _)) => {
                    self.engine.set_link_up(link, up);
                    Reply::ok(serde_json::json!({ "link": format!("{a}-{b}"), "up": up }))
                }
                Err(e) => Reply::error(e),
            },
        };
        Answer::Changed(changed)
    }

    /// The link joining nodes `a` and `b`, and whether it is written `a`→`b` in the topology.
    fn find_link(&self, a: &str, b: &str) -> Result<(u32, bool), String> {
        let topo = self.engine.topology();
        let node = |n: &str| {
            topo.node_id(n)
                .ok_or_else(|| format!("no node named {n:?}"))
        };
        let (na, nb) = (node(a)?, node(b)?);
        let mut found = topo.links.iter().enumerate().filter_map(|(i, l)| {
            if (l.a, l.b) == (na, nb) {
                Some((i as u32, true))
            } else if (l.a, l.b) == (nb, na) {
                Some((i as u32, false))
            } else {
                None
            }
        });
        match (found.next(), found.next()) {
            (Some(link), None) => Ok(link),
            (None, _) => Err(format!("no link joins {a} and {b}")),
            (Some(_), Some(_)) => Err(format!(
                "several links join {a} and {b}; change them in the file"
            )),
        }
    }

    fn set_link(&mut self, a: &str, b: &str, direction: &str, params: &[String]) -> Reply {
        let (link, forward) = match self.find_link(a, b) {
            Ok(found) => found,
            Err(e) => return Reply::error(e),
        };
        let l = &self.engine.topology().links[link as usize];
        // Pipes in the direction a→b and b→a as the user named them.
        let (ab, ba) = if forward { (l.ab, l.ba) } else { (l.ba, l.ab) };
        let pipes = match direction {
            "both" if ab == ba => vec![ab],
            "both" => vec![ab, ba],
            "a-b" => vec![ab],
            "b-a" => vec![ba],
            other => return Reply::error(format!("direction {other:?}: write both, a-b or b-a")),
        };
        let mut changed = Vec::new();
        for pipe in pipes {
            let current = *self.engine.pipe(pipe).config();
            match crate::change::apply(current, params) {
                Ok(config) => changed.push((pipe, config)),
                Err(e) => return Reply::error(e),
            }
        }
        for (pipe, config) in changed {
            self.engine.set_pipe_config(pipe, config);
        }
        Reply::ok(
            serde_json::json!({ "link": format!("{a}-{b}"), "direction": direction, "set": params }),
        )
    }

    /// This worker's figures so far (`netloom stats` merges every worker's): the pipes it owns
    /// with their queues now, the packets it read and wrote, its lateness.
    pub fn snapshot(&mut self) -> Snapshot {
        let now = self.clock.now();
        let report = netloom_engine::Report::build(&self.engine, 0, now, None);
        let pipes = report
            .pipes
            .iter()
            .enumerate()
            .map(|(p, r)| {
                let p = p as u32;
                self.engine.owns_pipe(p).then(|| {
                    let (packets, bytes) = self.engine.queue_len(p);
                    let mut v = serde_json::to_value(r).expect("pipe reports serialize");
                    v["queue_packets"] = packets.into();
                    v["queue_bytes"] = bytes.into();
                    v
                })
            })
            .collect();
        let topo = self.engine.topology();
        Snapshot {
            uptime_ns: now.as_nanos(),
            in_flight: self.pool.in_use(),
            accuracy: self.accuracy.clone(),
            hosts: topo
                .hosts
                .iter()
                .zip(&self.counters)
                .map(|(&n, c)| (topo.node(n).name.clone(), *c))
                .collect(),
            pipes,
        }
    }

    /// Folds the driver of another worker of the same run into this one, once both stopped, so
    /// this one reports the whole run: engines merged, lateness and counts added up.
    pub fn absorb(&mut self, other: Driver<I>) {
        self.engine.absorb(other.engine);
        self.accuracy.merge(&other.accuracy);
        for (mine, theirs) in self.counters.iter_mut().zip(&other.counters) {
            mine.add(theirs);
        }
    }

    /// How long the next wait may last before a deadline needs attention.
    fn wait_budget(&self) -> Duration {
        let until_deadline = match self.engine.poll_at() {
            Some(at) => self.clock.until(at),
            None => MAX_WAIT,
        };
        match self.precision {
            Precision::Busy => Duration::ZERO,
            Precision::Hybrid { spin } => until_deadline.saturating_sub(spin).min(MAX_WAIT),
            Precision::Sleep => until_deadline.min(MAX_WAIT),
        }
    }

    /// Reads up to a batch of frames from `host` into pool buffers and injects their packets: a
    /// super-packet's segments one by one, each with its own size on the wire.
    fn receive(&mut self, host: u32) -> io::Result<()> {
        let offset = match self.framing {
            Framing::Plain => 0,
            Framing::Vnet { .. } => VNET_HDR_LEN,
        };
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
            self.read_inbox();
            if self
                .engine
                .poll_at()
                .is_some_and(|at| at <= self.clock.now())
            {
                self.release_due()?;
            }
            let Some((id, len)) = self.read_frame(host)? else {
                return Ok(());
            };
            let now = self.clock.now();
            let frame = &self.pool.space(id)[..len];
            let parsed = match self.framing {
                Framing::Plain => Ok(Frame::Single),
                Framing::Vnet { .. } => segment::parse(frame),
            }
            .and_then(|kind| Ok((kind, destination(&frame[offset..])?)));
            let c = &mut self.counters[host as usize];
            let (gso, addr) = match parsed {
                Ok((Frame::Single, addr)) => (None, addr),
                Ok((Frame::Super(g), addr)) => (Some(g), addr),
                Err(_) => {
                    c.packets_in += 1;
                    c.bytes_in += len.saturating_sub(offset) as u64;
                    c.malformed += 1;
                    self.pool.put_back(id);
                    continue;
                }
            };
            let single = (len - offset) as u32;
            let segments = gso.map_or(1, |g| g.segments());
            c.packets_in += u64::from(segments);
            c.bytes_in += u64::from(gso.map_or(single, |g| g.wire_total()));
            let Some(dst) = self.hosts_by_addr.get(&addr).copied() else {
                c.unknown_destination += u64::from(segments);
                self.pool.put_back(id);
                continue;
            };
            self.pool.fill(id, len, gso, u32::from(segments));
            let (src_node, dst_node) = (
                self.host_nodes[host as usize],
                self.host_nodes[dst as usize],
            );
            for k in 0..segments {
                let token = token(self.me, id, k);
                let injected = match gso {
                    None => self.engine.inject(now, src_node, dst_node, single, token),
                    Some(g) => {
                        let bytes = g.wire_len(k);
                        self.engine
                            .inject_segment(now, src_node, dst_node, bytes, token, k)
                    }
                };
                if !injected {
                    self.counters[host as usize].unknown_destination += 1;
                    self.pool.release(id);
                }
            }
        }
        Ok(())
    }

    /// Reads one frame from `host` into a pool buffer and returns the buffer and the frame's
    /// length; `None` when the host has nothing queued, or when a frame was dropped for want of
    /// a buffer (the others then get their turn).
    fn read_frame(&mut self, host: u32) -> io::Result<Option<(u32, usize)>> {
        // The size of a frame is known only once it is read, so with GSO it is read into a
        // large buffer; one that fits a small buffer moves there (a copy of at most the MTU), so
        // a small packet in flight never pins 64 KB.
        let size = if self.pool.bytes(Size::Large) > 0 {
            Size::Large
        } else {
            Size::Small
        };
        let Some(id) = self.pool.take(size) else {
            return self.read_without_buffer(host);
        };
        let len = match self.io.recv(host, self.pool.space(id)) {
            Ok(len) => len,
            Err(e) => {
                self.pool.put_back(id);
                return match e.kind() {
                    io::ErrorKind::WouldBlock => Ok(None),
                    _ => Err(e),
                };
            }
        };
        if size == Size::Large && len <= self.pool.bytes(Size::Small) {
            if let Some(small) = self.pool.take(Size::Small) {
                self.pool.copy(id, small, len);
                self.pool.put_back(id);
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
        if len <= self.pool.bytes(Size::Small) {
            if let Some(id) = self.pool.take(Size::Small) {
                self.pool.space(id)[..len].copy_from_slice(&self.overflow[..len]);
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

    /// Writes every packet the engine released, measuring how late each is, and settles the
    /// payloads of copies that were duplicated or dropped. Consecutive segments of one
    /// super-packet released together (all of them due by now) go out in one write.
    fn flush(&mut self) -> io::Result<()> {
        self.outbox.extend(self.engine.drain_outputs());
        let mut i = 0;
        while i < self.outbox.len() {
            let (token, dst) = match self.outbox[i] {
                Output::Delivered { token, dst, .. } => (token, dst),
                Output::Duplicated { token } => {
                    self.settle(token, true);
                    i += 1;
                    continue;
                }
                Output::Dropped { token } => {
                    self.settle(token, false);
                    i += 1;
                    continue;
                }
            };
            let (home, id, first) = untoken(token);
            debug_assert_eq!(home, self.me, "a packet is delivered by its home worker");
            let gso = self.pool.gso(id);
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
            for output in &self.outbox[i..end] {
                if let Output::Delivered { at, .. } = output {
                    let lateness = now.saturating_since(*at);
                    self.accuracy
                        .record_release(Duration::from_nanos(lateness.as_nanos()));
                }
            }
            let frame = self.pool.frame(id);
            let (sent, bytes) = match gso {
                None => {
                    let offset = match self.framing {
                        Framing::Plain => 0,
                        Framing::Vnet { .. } => VNET_HDR_LEN,
                    };
                    (self.io.send(host, frame), frame.len() - offset)
                }
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
                self.pool.release(id);
            }
            i = end;
        }
        self.outbox.clear();
        // After the holds and releases above: a hold posted to a payload's home must reach it
        // before any release that a hand-off posted now could cause at another worker.
        let (ship, me) = (self.engine.ships_payloads(), usize::from(self.me));
        for to in (0..self.posts.len()).filter(|&k| k != me) {
            if !ship {
                for handoff in self.engine.take_handoffs(to) {
                    self.posts[to].send(Message::Handoff(handoff));
                }
                continue;
            }
            let mut shipping = std::mem::take(&mut self.shipping);
            shipping.extend(self.engine.take_handoffs(to));
            for handoff in shipping.drain(..) {
                let token = handoff.token().expect("live packets come from outside");
                let bytes = self.wire_packet(token);
                self.pool.release(untoken(token).1);
                self.posts[to].send(Message::Shipped(handoff, bytes));
            }
            self.shipping = shipping;
        }
        Ok(())
    }

    /// A copy of the packet `token` names, as one frame of the hosts' I/O: one segment of a
    /// super-packet is rebuilt as the packet it stands for on the wire.
    fn wire_packet(&mut self, token: u64) -> Box<[u8]> {
        let (_, id, segment) = untoken(token);
        let frame = self.pool.frame(id);
        match self.pool.gso(id) {
            None => frame.into(),
            Some(g) => {
                let (head, payload) = g.build(frame, segment..segment + 1, &mut self.head);
                [&self.head[..head], &frame[payload]].concat().into()
            }
        }
    }

    /// One more copy (`hold`) or one fewer of a segment: in this worker's pool, or news posted
    /// to the worker whose pool holds it.
    fn settle(&mut self, token: u64, hold: bool) {
        let (home, id, _) = untoken(token);
        if home == self.me {
            match hold {
                true => self.pool.hold(id),
                false => self.pool.release(id),
            }
        } else {
            let message = match hold {
                true => Message::Hold(token),
                false => Message::Release(token),
            };
            self.posts[usize::from(home)].send(message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_carry_the_home_the_buffer_and_the_segment() {
        for (home, id, k) in [(0, 0, 0), (1, 7, 44), (u16::MAX, u32::MAX, u16::MAX)] {
            assert_eq!(untoken(token(home, id, k)), (home, id, k));
        }
        assert_eq!(token(0, 1, 0), token(0, 0, u16::MAX) + 1);
    }
}
