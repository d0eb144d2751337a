//! Synthetic flows: their senders, receivers, stats, ACKs and wake-ups; not the network they cross.

use super::network::Network;
use super::{derive_seed, Latencies, SEED_FLOWS};
use crate::ownership::Ownership;
use crate::packet::{Body, Packet, DEFAULT_TTL, NO_ROUTE};
use crate::traffic::{Ack, FlowSpec, Receiver, Segment, Sender, ACK_BYTES};
use netloom_time::Instant;

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

/// One flow: its spec, the state of both ends, its hosts, its pending wake-up, its measurements.
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

/// The synthetic flows of an engine, in the order they were added: a flow's number is its place.
/// Their packets cross the `Network`, which hands each back here where it ends.
#[derive(Default)]
pub(super) struct Flows {
    flows: Vec<Flow>,
}

/// A flow's sending side, as it moves to the worker that owns its source host now.
pub(super) struct SenderPart {
    sender: Sender,
    sent: u64,
    wake: Option<Instant>,
}

/// A flow's receiving side, as it moves to the worker that owns its destination host now.
pub(super) struct ReceiverPart {
    receiver: Receiver,
    latency_ns: Latencies,
}

// What the loop and the network call per event or per packet is `#[inline]`, as in `Network`.
impl Flows {
    /// How many flows there are.
    pub(super) fn len(&self) -> usize {
        self.flows.len()
    }

    /// Adds a flow from host `src_host` to host `dst_host` (by position in `Topology::hosts`)
    /// and returns its number; its sender is first polled at `spec.start`, by the worker that
    /// owns its source host.
    pub(super) fn add(
        &mut self,
        spec: FlowSpec,
        (src_host, dst_host): (u32, u32),
        seed: u64,
        net: &mut Network,
    ) -> u32 {
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
        if net.owns_host(src_host) {
            net.wake(spec.start, id);
        }
        id
    }

    /// Flows with their specs, protocol state and measurements, in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&FlowSpec, &Sender, &Receiver, &FlowStats)> {
        self.flows
            .iter()
            .map(|f| (&f.spec, &f.sender, &f.receiver, &f.stats))
    }

    /// Each flow's source and destination hosts, in order.
    pub(super) fn ends(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.flows.iter().map(|f| (f.src_host, f.dst_host))
    }

    /// The source host of `flow`, whose worker polls its sender.
    pub(super) fn src_host(&self, flow: u32) -> u32 {
        self.flows[flow as usize].src_host
    }

    /// A wake-up of `flow` due at `at` fires: its sender is polled, unless a wake-up scheduled
    /// since superseded this one.
    #[inline]
    pub(super) fn on_wake(&mut self, flow: u32, at: Instant, net: &mut Network) {
        let f = &mut self.flows[flow as usize];
        if f.wake == Some(at) {
            f.wake = None;
            self.poll(flow, net);
        }
    }

    /// Data segment `seg` of `flow`, sent at `sent_at` and marked CE on the way if `ce`,
    /// reached its receiver: its latency is recorded, and the receiver's ACK, if any, sent back.
    #[inline]
    pub(super) fn on_data(
        &mut self,
        flow: u32,
        seg: Segment,
        ce: bool,
        sent_at: Instant,
        net: &mut Network,
    ) {
        let now = net.now;
        let f = &mut self.flows[flow as usize];
        f.stats
            .latency_ns
            .record(now.saturating_since(sent_at).as_nanos());
        let (src_host, ack) = (f.src_host, f.receiver.on_data(now, seg));
        let at = f.spec.dst;
        net.count_return_home(src_host);
        if let Some(ack) = ack {
            let ack = Packet {
                body: Body::Ack {
                    flow,
                    ack,
                    ece: ce,
                    ttl: DEFAULT_TTL,
                },
                bytes: ACK_BYTES,
                at,
                dst_host: src_host,
                next: NO_ROUTE,
                sent_at: now,
            };
            net.send(ack, self);
        }
    }

    /// An ACK of `flow`, echoing a CE mark if `ece`, reached its sender, which may send more.
    #[inline]
    pub(super) fn on_ack(&mut self, flow: u32, ack: Ack, ece: bool, net: &mut Network) {
        net.count_return_home(self.flows[flow as usize].dst_host);
        self.flows[flow as usize].sender.on_ack(net.now, &ack, ece);
        self.poll(flow, net);
    }

    /// A data packet of `flow` was dropped inside the network.
    #[inline]
    pub(super) fn lost(&mut self, flow: u32) {
        self.flows[flow as usize].stats.lost += 1;
    }

    /// An ACK of `flow` was dropped inside the network.
    #[inline]
    pub(super) fn ack_lost(&mut self, flow: u32) {
        self.flows[flow as usize].stats.acks_lost += 1;
    }

    /// Lets a flow's sender transmit what it may now, then schedules its next wake-up (none at
    /// or after the flow's stop).
    fn poll(&mut self, flow: u32, net: &mut Network) {
        let now = net.now;
        let stop = self.flows[flow as usize].spec.stop.unwrap_or(Instant::MAX);
        while let Some(seg) = (now < stop)
            .then(|| self.flows[flow as usize].sender.poll_transmit(now))
            .flatten()
        {
            let f = &mut self.flows[flow as usize];
            f.stats.sent += 1;
            let ecn = f.sender.ecn();
            let data = Packet {
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
            };
            net.send(data, self);
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
            net.wake(at, flow);
        }
    }

    /// The sending side of `flow`, for the worker that owns its source host now; the copy left
    /// here is never polled again, its wake-up going along.
    pub(super) fn take_sender(&mut self, flow: u32) -> SenderPart {
        let f = &mut self.flows[flow as usize];
        SenderPart {
            sender: f.sender.clone(),
            sent: f.stats.sent,
            wake: f.wake.take(),
        }
    }

    /// The receiving side of `flow`, for the worker that owns its destination host now.
    pub(super) fn take_receiver(&mut self, flow: u32) -> ReceiverPart {
        let f = &mut self.flows[flow as usize];
        ReceiverPart {
            receiver: f.receiver.clone(),
            latency_ns: std::mem::replace(&mut f.stats.latency_ns, Latencies::new()),
        }
    }

    /// Takes on the sending side of `flow` from its former worker; returns its pending wake-up,
    /// for the caller to schedule if this engine runs on.
    pub(super) fn put_sender(&mut self, flow: u32, part: SenderPart) -> Option<Instant> {
        let f = &mut self.flows[flow as usize];
        (f.sender, f.stats.sent, f.wake) = (part.sender, part.sent, part.wake);
        part.wake
    }

    /// Takes on the receiving side of `flow` from its former worker.
    pub(super) fn put_receiver(&mut self, flow: u32, part: ReceiverPart) {
        let f = &mut self.flows[flow as usize];
        (f.receiver, f.stats.latency_ns) = (part.receiver, part.latency_ns);
    }

    /// Folds in the flows of worker `them` of the same run (`Engine::absorb`): each side of a
    /// flow as the worker that owned its host left it, and losses, counted wherever the packet
    /// was, added up.
    pub(super) fn absorb(&mut self, other: Flows, ownership: &Ownership, them: u16) {
        for (f, theirs) in other.flows.into_iter().enumerate() {
            let f = f as u32;
            let (src_host, dst_host) = (theirs.src_host, theirs.dst_host);
            let stats = theirs.stats;
            if ownership.host_owner(src_host) == them {
                let sender = SenderPart {
                    sender: theirs.sender,
                    sent: stats.sent,
                    wake: theirs.wake,
                };
                self.put_sender(f, sender);
            }
            if ownership.host_owner(dst_host) == them {
                let receiver = ReceiverPart {
                    receiver: theirs.receiver,
                    latency_ns: stats.latency_ns,
                };
                self.put_receiver(f, receiver);
            }
            let mine = &mut self.flows[f as usize].stats;
            mine.lost += stats.lost;
            mine.acks_lost += stats.acks_lost;
        }
    }
}
