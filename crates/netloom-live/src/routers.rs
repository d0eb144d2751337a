//! Owns what a live worker's engine routers send of their own: ICMP errors about the packets
//! they refuse (rate-limited per destination, as Linux does), echo replies and port unreachable
//! for packets addressed to them, IPv4 fragments, and the way a host's packet to a router's
//! address takes. Not the loop: the driver calls in with its `Parts` for one packet at a time.

use crate::accuracy::Accuracy;
use crate::io::Framing;
use crate::kernel::Entries;
use crate::message::HostCounters;
use crate::meta::meta;
use crate::payload::{token, untoken, Payloads};
use crate::pool::Size;
use netloom_engine::{Engine, Injected, Refusal};
use netloom_packet::fragment;
use netloom_packet::icmp::{self, Bucket};
use netloom_packet::ip::endpoints;
use netloom_packet::segment;
use netloom_time::Instant;
use netloom_topo::{NodeId, NodeKind};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Every engine router's addresses and what answering from them needs.
pub(crate) struct Routers {
    /// Each router's addresses, the sources of its ICMP errors (`add`).
    addresses: HashMap<NodeId, (Ipv4Addr, Ipv6Addr)>,
    /// The router of each router address.
    by_addr: HashMap<IpAddr, NodeId>,
    /// How a host's packets reach a router (`way_to`), found when first asked.
    ways: HashMap<(u32, NodeId), Option<(u32, u8)>>,
    /// The rate limit of errors from each router to each host address (by host index, and
    /// whether IPv6), as Linux limits them per destination address.
    buckets: HashMap<(NodeId, u32, bool), Bucket>,
    /// Where an ICMP error or echo reply is built.
    built: Box<[u8]>,
}

/// The parts of a driver that a router's packet is read from, made with and sent through,
/// borrowed for one call.
pub(crate) struct Parts<'a> {
    pub engine: &'a mut Engine,
    pub payloads: &'a mut Payloads,
    pub accuracy: &'a mut Accuracy,
    pub counters: &'a mut [HostCounters],
    /// Host index by address.
    pub hosts_by_addr: &'a HashMap<IpAddr, u32>,
    /// Node of each host index.
    pub host_nodes: &'a [NodeId],
    /// With kernel routers: where packets enter the engine.
    pub entries: &'a mut Option<Entries>,
    pub framing: Framing,
    pub now: Instant,
}

impl Parts<'_> {
    /// The engine node a packet from engine node `from` to `host` is injected for: the host
    /// itself, or with kernel routers the end of the engine's part of the way there.
    fn toward_host(&mut self, from: NodeId, host: u32) -> Option<NodeId> {
        let node = self.host_nodes[host as usize];
        match self.entries {
            Some(entries) => entries.toward(self.engine, from, node),
            None => Some(node),
        }
    }

    /// Where the IP header of a buffer's frame begins.
    fn offset(&self) -> usize {
        self.framing.header_len()
    }
}

impl Routers {
    /// No router with addresses yet: every router is silent.
    pub(crate) fn new() -> Routers {
        Routers {
            addresses: HashMap::new(),
            by_addr: HashMap::new(),
            ways: HashMap::new(),
            buckets: HashMap::new(),
            built: vec![0; icmp::MAX_ERROR].into_boxed_slice(),
        }
    }

    /// Gives router `node` its addresses: it answers from them with ICMP errors about the
    /// packets it refuses (docs/live.md, "Routers"); a router without is silent.
    pub(crate) fn add(&mut self, node: NodeId, ipv4: Ipv4Addr, ipv6: Ipv6Addr) {
        self.addresses.insert(node, (ipv4, ipv6));
        self.by_addr.insert(ipv4.into(), node);
        self.by_addr.insert(ipv6.into(), node);
    }

    /// The router whose address `addr` is.
    pub(crate) fn at(&self, addr: &IpAddr) -> Option<NodeId> {
        self.by_addr.get(addr).copied()
    }

    /// Forgets the ways found so far: a link taken down or up may change the paths that cross
    /// each router.
    pub(crate) fn forget_ways(&mut self) {
        self.ways.clear();
    }

    /// How a packet from `host` reaches `router`, whose address it is sent to: routing tables
    /// lead to hosts only, so it is sent towards a host whose path from `host` (by the routes
    /// when first asked since the last change ordered) crosses the router, with a TTL that
    /// runs out there, where the router answers it (`refused`). Returns that host and the TTL
    /// (the router's place among the routers on the way); `None` when no path crosses the
    /// router.
    pub(crate) fn way_to(
        &mut self,
        engine: &Engine,
        host_nodes: &[NodeId],
        host: u32,
        router: NodeId,
    ) -> Option<(u32, u8)> {
        if let Some(&way) = self.ways.get(&(host, router)) {
            return way;
        }
        let topo = engine.topology();
        let src = host_nodes[host as usize];
        let way = (0..host_nodes.len() as u32).find_map(|via| {
            let path = engine.routes().path(topo, src, host_nodes[via as usize])?;
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

    /// What router `node` does with the segment `token` names, which it refused with `ttl`
    /// left (its payload is in this worker's pool, even when the router's pipe is another
    /// worker's): an IPv4 packet too big for the next link but allowed to be fragmented goes
    /// on as fragments (a super-packet, always TCP with DF from Linux, never does); everything
    /// else is answered with the matching ICMP error.
    pub(crate) fn refused(
        &mut self,
        p: &mut Parts,
        token: u64,
        node: NodeId,
        why: Refusal,
        ttl: u8,
    ) {
        let id = untoken(token).1;
        let why = match why {
            Refusal::TimeExceeded if self.is_for(p, id, node) => {
                self.answer_for_router(p, id, node);
                return;
            }
            Refusal::TimeExceeded => icmp::Error::TimeExceeded,
            Refusal::NoRoute => icmp::Error::NoRoute,
            Refusal::TooBig { mtu } => {
                let pool = p.payloads.pool_ref();
                if pool.gso(id).is_none() && fragment::allowed(&pool.frame(id)[p.offset()..]) {
                    fragment_on(p, id, node, mtu, ttl);
                    return;
                }
                icmp::Error::TooBig { mtu }
            }
        };
        self.send_error(p, id, node, why);
    }

    /// Whether the packet in buffer `id` is addressed to router `node`.
    fn is_for(&self, p: &Parts, id: u32, node: NodeId) -> bool {
        endpoints(&p.payloads.pool_ref().frame(id)[p.offset()..])
            .is_ok_and(|(_, dst)| self.at(&dst) == Some(node))
    }

    /// Router `node` answers the packet in buffer `id` addressed to it: an echo request with
    /// its reply, a UDP datagram with port unreachable, anything else with nothing.
    fn answer_for_router(&mut self, p: &mut Parts, id: u32, node: NodeId) {
        let request = &p.payloads.pool_ref().frame(id)[p.offset()..];
        match icmp::to_router(request, &mut self.built) {
            icmp::ToRouter::Echo(len) => {
                let src = endpoints(request).map(|(src, _)| src);
                if let Some(&host) = src.ok().and_then(|s| p.hosts_by_addr.get(&s)) {
                    self.send_from(p, node, host, len);
                }
            }
            icmp::ToRouter::Udp => self.send_error(p, id, node, icmp::Error::PortUnreachable),
            icmp::ToRouter::Other => {}
        }
    }

    /// Router `router` answers the packet in buffer `id` with the ICMP error `why`, if it has
    /// addresses, its rate limit allows, and the packet may be answered (`icmp::error`): the
    /// error goes into the network at the router, bound for the packet's source host, so it
    /// comes back over the emulated links. Counted per source host
    /// (`HostCounters::icmp_errors`, `icmp_limited`).
    pub(crate) fn send_error(&mut self, p: &mut Parts, id: u32, router: NodeId, why: icmp::Error) {
        let Some(&(v4, v6)) = self.addresses.get(&router) else {
            return;
        };
        let original = &p.payloads.pool_ref().frame(id)[p.offset()..];
        let Ok((src, _)) = endpoints(original) else {
            return;
        };
        let Some(&host) = p.hosts_by_addr.get(&src) else {
            return;
        };
        let from = if src.is_ipv4() { v4.into() } else { v6.into() };
        let Some(len) = icmp::error(original, from, why, &mut self.built) else {
            return;
        };
        let c = &mut p.counters[host as usize];
        let now = p.now;
        let bucket = self
            .buckets
            .entry((router, host, src.is_ipv6()))
            .or_insert_with(|| Bucket::new(now));
        if why.is_limited() && !bucket.allow(now) {
            c.icmp_limited += 1;
            return;
        }
        c.icmp_errors += 1;
        self.send_from(p, router, host, len);
    }

    /// Sends the `len` bytes built in `self.built` from `router` to `host`: into the network
    /// at the router, so they come back over the emulated links. Without a free buffer, a
    /// physical drop.
    fn send_from(&self, p: &mut Parts, router: NodeId, host: u32, len: usize) {
        let offset = p.offset();
        let me = p.payloads.me();
        let pool = p.payloads.pool();
        let Some(reply) = pool.take(Size::Small) else {
            p.accuracy.record_physical_drop();
            return;
        };
        let space = pool.space(reply);
        space[..offset].fill(0);
        space[offset..offset + len].copy_from_slice(&self.built[..len]);
        pool.fill(reply, offset + len, None, 1);
        let packet = Injected {
            bytes: len as u32,
            token: token(me, reply, 0),
            meta: meta(&self.built[..len]),
            ttl: icmp::ERROR_TTL,
        };
        let now = p.now;
        let injected = p
            .toward_host(router, host)
            .is_some_and(|dst| p.engine.inject(now, router, dst, packet));
        if !injected {
            p.payloads.pool().release(reply);
        }
    }
}

/// Sends the IPv4 packet in buffer `id` on from router `node` as fragments of at most `mtu`
/// bytes, each a packet of its own from there (`Engine::inject` at the router) with `ttl`.
/// Fragments that find no buffer are physical drops.
fn fragment_on(p: &mut Parts, id: u32, node: NodeId, mtu: u32, ttl: u8) {
    let offset = p.offset();
    if matches!(p.framing, Framing::Vnet { .. }) {
        segment::finish_checksum(p.payloads.pool().space(id));
    }
    let frame = p.payloads.pool_ref().frame(id);
    let Ok((_, dst)) = endpoints(&frame[offset..]) else {
        return;
    };
    let Some(&dst) = p.hosts_by_addr.get(&dst) else {
        return;
    };
    let Some(dst) = p.toward_host(node, dst) else {
        return;
    };
    let frame = p.payloads.pool_ref().frame(id);
    let mut pieces: Vec<Vec<u8>> = Vec::new();
    fragment::split(&frame[offset..], mtu, |f| {
        pieces.push([&frame[..offset], f].concat());
    });
    let me = p.payloads.me();
    for piece in pieces {
        let pool = p.payloads.pool();
        let Some(part) = pool.take(Size::Small) else {
            p.accuracy.record_physical_drop();
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
        if !p.engine.inject(p.now, node, dst, packet) {
            p.payloads.pool().release(part);
        }
    }
}
