//! The real-time loop: read what hosts send, hand descriptors to the engine, advance it to the
//! wall clock, write out what is due, then wait for the next deadline or packet in the chosen
//! precision mode. Exit times come from the engine's schedule, never from when a packet was
//! actually written, so one late packet does not delay those behind it (no delay cascading).

use crate::accuracy::{Accuracy, AccuracyReport, Thresholds};
use crate::clock::Clock;
use crate::control::{Pending, Reply, Request};
use crate::ip::destination;
use crate::pool::Pool;
use netloom_engine::{Engine, Output};
use netloom_time::Instant;
use netloom_topo::NodeId;
use serde::Serialize;
use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// The hosts' side of the emulator: one packet interface per host, indexed like
/// `Topology::hosts`. TUN devices in namespaces in production, queues in memory in tests.
pub trait PacketIo {
    /// Waits up to `timeout` (`None`: indefinitely, `Some(ZERO)`: just look) until some host has
    /// a packet to read, and appends their indices to `ready`. May return early and empty.
    fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<u32>) -> io::Result<()>;
    /// Reads one packet sent by `host`; `ErrorKind::WouldBlock` when there is none.
    fn recv(&mut self, host: u32, buf: &mut [u8]) -> io::Result<usize>;
    /// Hands `packet` to `host`.
    fn send(&mut self, host: u32, packet: &[u8]) -> io::Result<()>;
    /// Whether the control channel signalled a request since the last call, so the loop looks
    /// at the channel only then. I/O without a control channel never does.
    fn take_wake(&mut self) -> bool {
        false
    }
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

/// Packets read from and written to one host.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct HostCounters {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    /// Packets from this host that were not IPv4 or IPv6, or were truncated; dropped.
    pub malformed: u64,
    /// Packets from this host to an address no host has; dropped and counted, no ICMP is sent.
    pub unknown_destination: u64,
}

/// Packets read from one host in one go before the others get a turn.
const READ_BATCH: usize = 64;
/// Longest single wait, so a stop request is noticed promptly even when nothing happens.
const MAX_WAIT: Duration = Duration::from_millis(20);

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
    /// Read buffer for packets that arrive when every pool buffer is in flight.
    overflow: Box<[u8]>,
    /// Requests from `netloom stats` and `netloom link`, if a control channel is attached.
    control: Option<Receiver<Pending>>,
}

impl<I: PacketIo> Driver<I> {
    /// A driver for `engine`, whose hosts (in `Topology::hosts` order) have the `addresses`
    /// given per host and send packets of at most `max_packet` bytes; at most `max_in_flight`
    /// packets are held at once.
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
        let hosts_by_addr = addresses
            .iter()
            .enumerate()
            .flat_map(|(i, addrs)| addrs.iter().map(move |a| (*a, i as u32)))
            .collect();
        Driver {
            counters: vec![HostCounters::default(); host_nodes.len()],
            engine,
            io,
            clock: Clock::start(),
            precision,
            pool: Pool::new(max_packet, max_in_flight),
            hosts_by_addr,
            host_nodes,
            accuracy: Accuracy::new(thresholds),
            ready: Vec::new(),
            outbox: Vec::new(),
            overflow: vec![0; max_packet].into_boxed_slice(),
            control: None,
        }
    }

    /// Answers the requests arriving on `control` between turns of the loop.
    pub fn attach_control(&mut self, control: Receiver<Pending>) {
        self.control = Some(control);
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

    /// One turn of the loop: wait (as the precision mode says), read, advance, write.
    pub fn step(&mut self) -> io::Result<()> {
        let timeout = self.wait_budget();
        self.ready.clear();
        self.io.wait(Some(timeout), &mut self.ready)?;
        for i in 0..self.ready.len() {
            let host = self.ready[i];
            self.receive(host)?;
        }
        self.release_due()?;
        if self.io.take_wake() {
            self.serve_requests();
        }
        Ok(())
    }

    /// Advances the engine to now and writes out what is due.
    fn release_due(&mut self) -> io::Result<()> {
        self.engine.advance(self.clock.now());
        self.flush()
    }

    fn serve_requests(&mut self) {
        let Some(control) = &self.control else {
            return;
        };
        let pending: Vec<Pending> = control.try_iter().collect();
        for p in pending {
            let reply = self.answer(p.request);
            let _ = p.reply.send(reply);
        }
    }

    fn answer(&mut self, request: Request) -> Reply {
        match request {
            Request::Stats => Reply::ok(self.stats()),
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
        }
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

    /// Figures so far, as `netloom stats` shows them.
    fn stats(&mut self) -> serde_json::Value {
        let now = self.clock.now();
        let report = netloom_engine::Report::build(&self.engine, 0, now, None);
        let queues: Vec<(u64, u64)> = (0..report.pipes.len() as u32)
            .map(|p| self.engine.queue_len(p))
            .collect();
        let topo = self.engine.topology();
        let hosts: Vec<_> = topo
            .hosts
            .iter()
            .zip(&self.counters)
            .map(|(&n, c)| serde_json::json!({ "name": topo.node(n).name, "counters": c }))
            .collect();
        let pipes: Vec<_> = report
            .pipes
            .iter()
            .zip(queues)
            .map(|(p, (packets, bytes))| {
                let mut v = serde_json::to_value(p).expect("pipe reports serialize");
                v["queue_packets"] = packets.into();
                v["queue_bytes"] = bytes.into();
                v
            })
            .collect();
        serde_json::json!({
            "uptime_ns": now.as_nanos(),
            "in_flight": self.pool.in_use(),
            "accuracy": self.accuracy.report(),
            "hosts": hosts,
            "pipes": pipes,
        })
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

    /// Reads up to a batch of packets from `host` into pool buffers and injects them.
    fn receive(&mut self, host: u32) -> io::Result<()> {
        for _ in 0..READ_BATCH {
            let Some(id) = self.pool.take() else {
                // Every buffer is in flight: the packet is read so the host is not stalled, and
                // lost outside the model's say.
                return match self.io.recv(host, &mut self.overflow) {
                    Ok(_) => {
                        self.accuracy.record_physical_drop();
                        Ok(())
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
                    Err(e) => Err(e),
                };
            };
            let len = match self.io.recv(host, self.pool.space(id)) {
                Ok(len) => len,
                Err(e) => {
                    self.pool.put_back(id);
                    return match e.kind() {
                        io::ErrorKind::WouldBlock => Ok(()),
                        _ => Err(e),
                    };
                }
            };
            let now = self.clock.now();
            let c = &mut self.counters[host as usize];
            c.packets_in += 1;
            c.bytes_in += len as u64;
            let dst = match destination(&self.pool.space(id)[..len]) {
                Ok(addr) => self.hosts_by_addr.get(&addr).copied(),
                Err(_) => {
                    self.counters[host as usize].malformed += 1;
                    self.pool.put_back(id);
                    continue;
                }
            };
            let Some(dst) = dst else {
                self.counters[host as usize].unknown_destination += 1;
                self.pool.put_back(id);
                continue;
            };
            self.pool.fill(id, len);
            let (src_node, dst_node) = (
                self.host_nodes[host as usize],
                self.host_nodes[dst as usize],
            );
            if !self
                .engine
                .inject(now, src_node, dst_node, len as u32, u64::from(id))
            {
                self.counters[host as usize].unknown_destination += 1;
                self.pool.release(id);
            }
            // Release what fell due while reading before reading on: under a flood, a batch of
            // reads followed by a batch of writes made packets wait for the whole turn
            // (lateness p99 187 us with 64-packet batches).
            if self.engine.poll_at().is_some_and(|at| at <= now) {
                self.release_due()?;
            }
        }
        Ok(())
    }

    /// Writes every packet the engine released, measuring how late each is, and settles the
    /// payloads of copies that were duplicated or dropped.
    fn flush(&mut self) -> io::Result<()> {
        self.outbox.extend(self.engine.drain_outputs());
        for i in 0..self.outbox.len() {
            match self.outbox[i] {
                Output::Delivered { token, at, dst } => {
                    let id = token as u32;
                    let host = self
                        .engine
                        .routes()
                        .host_index(dst)
                        .expect("the engine delivers only to hosts");
                    let lateness = self.clock.now().saturating_since(at);
                    self.accuracy
                        .record_release(Duration::from_nanos(lateness.as_nanos()));
                    let packet = self.pool.packet(id);
                    let len = packet.len() as u64;
                    match self.io.send(host, packet) {
                        Ok(()) => {
                            let c = &mut self.counters[host as usize];
                            c.packets_out += 1;
                            c.bytes_out += len;
                        }
                        Err(_) => self.accuracy.record_physical_drop(),
                    }
                    self.pool.release(id);
                }
                Output::Duplicated { token } => self.pool.hold(token as u32),
                Output::Dropped { token } => self.pool.release(token as u32),
            }
        }
        self.outbox.clear();
        Ok(())
    }
}
