//! The classifier (the paper's Figure 6): rules grouped per tenant, reached through a dispatch
//! table (a hash table: one lookup, where the paper's is O(log tenants)), then scanned in order
//! within the tenant (first match wins).

use crate::spec::{Cgroup, PortRange, Prefix, Proto, Role, Selector};
use dispatch::Dispatch;
use netloom_link::Ecn;
use netloom_packet::Layout;
use rustc_hash::FxHashMap;

mod dispatch;
use std::net::IpAddr;

/// Which way a packet crosses this machine's stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Arriving (netfilter's INPUT).
    In,
    /// Leaving (netfilter's OUTPUT).
    Out,
}

/// What the classifier looks at in a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Arriving or leaving.
    pub direction: Direction,
    /// The IP protocol number.
    pub proto: u8,
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Source port (0 if neither TCP nor UDP).
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// The uid and gid of the local socket that sent it, when the kernel knows it.
    pub owner: Option<(u32, u32)>,
    /// The cgroup v2 id of its local socket, when looked up (only while a rule names one).
    pub cgroup: Option<u64>,
    /// Its ECN field, for a pipe that marks CE instead of dropping.
    pub ecn: Ecn,
}

impl Packet {
    /// Reads the addresses, protocol and ports from the start of an IPv4 or IPv6 packet; `None`
    /// when it is neither or too short. IPv6 extension headers are not followed (the ports of
    /// such a packet read as 0).
    pub fn parse(direction: Direction, header: &[u8], owner: Option<(u32, u32)>) -> Option<Packet> {
        let layout = Layout::of(header)?;
        let (src, dst) = layout.addresses(header);
        let (sport, dport) = layout.ports(header).unwrap_or((0, 0));
        Some(Packet {
            direction,
            proto: layout.proto,
            src,
            dst,
            sport,
            dport,
            owner,
            cgroup: None,
            ecn: netloom_packet::ecn(header),
        })
    }

    /// Its flow for FQ-CoDel's flow queues: a hash of the 5-tuple, the same both ways.
    pub fn flow(&self) -> u32 {
        use std::hash::{Hash, Hasher};
        let (local, remote, remote_port) = self.sides();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (self.proto, local, remote, remote_port).hash(&mut h);
        h.finish() as u32
    }

    /// (local port, remote address, remote port) as this machine sees them.
    fn sides(&self) -> (u16, IpAddr, u16) {
        match self.direction {
            Direction::Out => (self.sport, self.dst, self.dport),
            Direction::In => (self.dport, self.src, self.sport),
        }
    }
}

/// One classifier rule: the packets of one direction a link takes. Unset fields match anything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The direction it matches.
    pub direction: Direction,
    /// TCP or UDP only; `None`: either.
    pub proto: Option<Proto>,
    /// Ports on this machine's side.
    pub local_ports: Vec<PortRange>,
    /// Ports on the remote side.
    pub remote_ports: Vec<PortRange>,
    /// Remote addresses.
    pub remote: Vec<Prefix>,
    /// Owner of the local socket.
    pub uid: Option<u32>,
    /// Group of the local socket (of an arriving packet's: its owner's primary group).
    pub gid: Option<u32>,
    /// The cgroup v2 of the local socket (its path for the kernel's match, its id for ours).
    pub cgroup: Option<Cgroup>,
    /// The link whose pipe the packet goes to.
    pub link: u32,
    /// The kernel must copy its packets up whole: its pipe marks CE (`ecn=true`), written into
    /// the packet, or duplicates (`duplicate`), sending a copy of it.
    pub whole: bool,
}

impl Rule {
    /// The rules a selector makes for `link`, in the given directions: a client's match the
    /// remote ports, a server's the local ones, a service's both (client rules first).
    pub fn from_selector(selector: &Selector, link: u32, directions: &[Direction]) -> Vec<Rule> {
        let sides: &[bool] = match selector.role {
            Role::Client => &[true],
            Role::Server => &[false],
            Role::Service => &[true, false],
        };
        let mut rules = Vec::new();
        for &remote_side in sides {
            for &direction in directions {
                let (local_ports, remote_ports) = match remote_side {
                    true => (Vec::new(), selector.ports.clone()),
                    false => (selector.ports.clone(), Vec::new()),
                };
                rules.push(Rule {
                    direction,
                    proto: selector.proto,
                    local_ports,
                    remote_ports,
                    remote: selector.peers.clone(),
                    uid: selector.uid,
                    gid: selector.gid,
                    cgroup: None,
                    link,
                    whole: false,
                });
            }
        }
        rules
    }
}

/// Rules of every tenant, each tenant's in order, behind a dispatch table.
///
/// The rules are also compiled into `entries`: one flat record per (port range, port range,
/// prefix) a rule names, in rule order, so a tenant's scan reads consecutive memory instead of
/// following each rule's lists (the difference between about 1 us and a few tens of ns per
/// packet with 65,536 tenants: docs/performance.md).
#[derive(Clone, Debug, Default)]
pub struct Classifier {
    /// Each tenant's entries, reached through one read of a table.
    dispatch: Dispatch,
    entries: Vec<Entry>,
    /// What an entry with `EXTRA` compares besides its ports: kept apart, so the entries of the
    /// common case (an IPv4 prefix, no owner) stay small.
    extras: Vec<Extra>,
    rules: Vec<Rule>,
    /// Does some rule need the owner of an arriving packet's socket (a user's rule, or an
    /// `IN` rule with an owner)?
    receivers: bool,
    /// Does some rule name a cgroup? (Asked per packet, so kept rather than searched.)
    cgrouped: bool,
    /// Sockets' cgroup ids learned so far (`learn_cgroup`), each with the ids of the rules'
    /// cgroups it is below: a rule's cgroup takes its own sockets and those of every cgroup
    /// under it, as the kernel's `-m cgroup --path` does.
    below: FxHashMap<u64, Vec<u64>>,
}

/// One alternative of a rule, flattened into 20 bytes of plain integers, so a tenant's 16
/// rules are 320 consecutive bytes (5 cache lines) and 65,536 tenants' rules (21 MB) fit in
/// this machine's 32 MB L3, where 40-byte entries (42 MB) did not.
#[derive(Clone, Copy, Debug)]
struct Entry {
    local: (u16, u16),
    remote: (u16, u16),
    /// The remote IPv4 network's address; with `EXTRA`, the index of the entry's `Extra`.
    net: u32,
    link: u32,
    /// The remote network's prefix length.
    len: u8,
    /// `OUT`, the protocols taken (`TCP`, `UDP`), `NET`, `OWNED` and `EXTRA`.
    flags: u8,
}

/// The rest of an entry with an IPv6 prefix, an owner or a cgroup condition.
#[derive(Clone, Copy, Debug)]
struct Extra {
    /// The remote network's address (IPv4 in the low 32 bits).
    net: u128,
    v6: bool,
    /// The socket's owner and group; `ANY` for any (and for packets without a socket).
    uid: u32,
    gid: u32,
    /// The socket's cgroup v2 id; `ANY_CGROUP` for any.
    cgroup: u64,
}

/// `Entry::flags`: the entry takes leaving packets (else arriving ones).
const OUT: u8 = 1;
/// `Entry::flags`: the entry takes TCP packets.
const TCP: u8 = 2;
/// `Entry::flags`: the entry takes UDP packets.
const UDP: u8 = 4;
/// `Entry::flags`: the entry's network and owner are in `Classifier::extras`.
const EXTRA: u8 = 8;
/// `Entry::flags`: the entry takes only packets of sockets its tenant owns (as a user's links'
/// rules do), a condition the entry holds without an `Extra`.
const OWNED: u8 = 16;
/// `Entry::flags`: the entry names a remote network (else it takes any address of either
/// family).
const NET: u8 = 32;

/// A tenant's entries: `entries[start..end]`.
#[derive(Clone, Copy, Debug, Default)]
struct Block {
    tenant: u32,
    start: u32,
    end: u32,
}

/// Packets a batch looks up and prefetches before matching them, and the entries of a block it
/// prefetches: enough to cover the time a read from memory takes, few enough that the lines
/// stay in L1.
const BATCH: usize = 16;

/// The entries of a block `classify_owned` prefetches for one packet: a batch's lines come
/// from 16 packets at once, one packet's from its own block only.
const ALONE: usize = 32;

/// A cache line's bytes.
const LINE: usize = 64;

/// The tenant whose links take every user's packets.
pub const ROOT: u32 = 0;

/// An owner field that matches any packet (no uid or gid is `u32::MAX`: it is `(uid_t)-1`,
/// which Linux never gives a process).
const ANY: u32 = u32::MAX;
/// A cgroup field that matches any packet (cgroup v2 ids start at 1, the root's).
const ANY_CGROUP: u64 = 0;

impl Entry {
    fn compile(rule: &Rule, tenant: u32, out: &mut Vec<Entry>, extras: &mut Vec<Extra>) {
        let any = PortRange {
            lo: 0,
            hi: u16::MAX,
        };
        let ports = |r: &[PortRange]| if r.is_empty() { vec![any] } else { r.to_vec() };
        let nets: Vec<Option<Prefix>> = match rule.remote.is_empty() {
            true => vec![None],
            false => rule.remote.iter().copied().map(Some).collect(),
        };
        let protos = match rule.proto {
            None => TCP | UDP,
            Some(Proto::Tcp) => TCP,
            Some(Proto::Udp) => UDP,
        };
        let direction = match rule.direction {
            Direction::In => 0,
            Direction::Out => OUT,
        };
        let owned = rule.uid == Some(tenant);
        for local in ports(&rule.local_ports) {
            for remote in ports(&rule.remote_ports) {
                for net in &nets {
                    let extra = Extra {
                        net: net.map_or(0, |n| address_bits(n.addr).0),
                        v6: net.is_some_and(|n| n.addr.is_ipv6()),
                        uid: rule.uid.filter(|_| !owned).unwrap_or(ANY),
                        gid: rule.gid.unwrap_or(ANY),
                        cgroup: rule.cgroup.as_ref().map_or(ANY_CGROUP, |c| c.id),
                    };
                    let (len, named) = (net.map_or(0, |n| n.len), net.is_some());
                    let plain = !extra.v6
                        && extra.uid == ANY
                        && extra.gid == ANY
                        && extra.cgroup == ANY_CGROUP;
                    let net = match plain {
                        true => extra.net as u32,
                        false => {
                            extras.push(extra);
                            (extras.len() - 1) as u32
                        }
                    };
                    out.push(Entry {
                        local: (local.lo, local.hi),
                        remote: (remote.lo, remote.hi),
                        net,
                        link: rule.link,
                        len,
                        flags: direction
                            | protos
                            | if plain { 0 } else { EXTRA }
                            | if owned { OWNED } else { 0 }
                            | if named { NET } else { 0 },
                    });
                }
            }
        }
    }

    #[inline]
    fn matches(&self, p: &Flat<'_>, tenant: u32, extras: &[Extra]) -> bool {
        if self.flags & OUT != p.direction
            || self.flags & p.proto == 0
            || !(self.local.0..=self.local.1).contains(&p.local)
            || !(self.remote.0..=self.remote.1).contains(&p.remote_port)
            || (self.flags & OWNED != 0 && p.owner.is_none_or(|(uid, _)| uid != tenant))
        {
            return false;
        }
        let host_bits = |width: u32| width - u32::from(self.len);
        if self.flags & EXTRA == 0 {
            return self.flags & NET == 0
                || (!p.v6
                    && (p.remote as u32 ^ self.net)
                        .checked_shr(host_bits(32))
                        .unwrap_or(0)
                        == 0);
        }
        let extra = &extras[self.net as usize];
        let width = if extra.v6 { 128 } else { 32 };
        let in_net = self.flags & NET == 0
            || (extra.v6 == p.v6
                && (p.remote ^ extra.net)
                    .checked_shr(host_bits(width))
                    .unwrap_or(0)
                    == 0);
        in_net
            && (extra.uid == ANY || p.owner.is_some_and(|(u, _)| u == extra.uid))
            && (extra.gid == ANY || p.owner.is_some_and(|(_, g)| g == extra.gid))
            && (extra.cgroup == ANY_CGROUP
                || p.cgroup == Some(extra.cgroup)
                || p.below.contains(&extra.cgroup))
    }
}

/// A packet as the entries compare it: computed once per classification.
struct Flat<'a> {
    /// `OUT` or 0.
    direction: u8,
    /// `TCP`, `UDP` or 0 (neither: no entry takes it).
    proto: u8,
    local: u16,
    remote_port: u16,
    remote: u128,
    v6: bool,
    owner: Option<(u32, u32)>,
    cgroup: Option<u64>,
    /// The rules' cgroups its socket's cgroup is below.
    below: &'a [u64],
}

impl<'a> Flat<'a> {
    fn new(packet: &Packet, below: &'a [u64]) -> Flat<'a> {
        let (local, remote, remote_port) = packet.sides();
        Flat {
            direction: match packet.direction {
                Direction::In => 0,
                Direction::Out => OUT,
            },
            proto: match packet.proto {
                6 => TCP,
                17 => UDP,
                _ => 0,
            },
            local,
            remote_port,
            remote: address_bits(remote).0,
            v6: remote.is_ipv6(),
            owner: packet.owner,
            cgroup: packet.cgroup,
            below,
        }
    }
}

/// An address as an integer (IPv4 in the low 32 bits) and its width in bits.
fn address_bits(addr: IpAddr) -> (u128, u32) {
    match addr {
        IpAddr::V4(a) => (u128::from(u32::from(a)), 32),
        IpAddr::V6(a) => (u128::from(a), 128),
    }
}

impl Classifier {
    /// A classifier of `(tenant, rules in order)`; a tenant given twice keeps both lists, in
    /// the order given.
    pub fn new(mut tenants: Vec<(u32, Vec<Rule>)>) -> Classifier {
        tenants.sort_by_key(|(t, _)| *t);
        let mut classifier = Classifier::default();
        let mut ranges = Vec::with_capacity(tenants.len());
        for (tenant, rules) in tenants {
            let start = classifier.entries.len() as u32;
            for rule in &rules {
                Entry::compile(
                    rule,
                    tenant,
                    &mut classifier.entries,
                    &mut classifier.extras,
                );
            }
            classifier.receivers |= tenant != ROOT
                || rules
                    .iter()
                    .any(|r| r.direction == Direction::In && (r.uid.is_some() || r.gid.is_some()));
            classifier.cgrouped |= rules.iter().any(|r| r.cgroup.is_some());
            classifier.rules.extend(rules);
            ranges.push((tenant, start, classifier.entries.len() as u32));
        }
        classifier.dispatch = Dispatch::new(&ranges);
        classifier
    }

    /// The link of the first of `tenant`'s rules the packet matches.
    pub fn classify(&self, tenant: u32, packet: &Packet) -> Option<u32> {
        self.scan(self.block(tenant), &self.flat(packet))
    }

    /// The link of the first rule that takes `packet`, tenants being users: root's links
    /// (tenant 0) take any packet; a user's links only packets whose local socket that user
    /// owns, so nothing a user writes reaches another user's traffic, and a packet whose socket
    /// the kernel did not report belongs to no user. Root's links come first.
    pub fn classify_owned(&self, packet: &Packet) -> Option<u32> {
        // Every line of the user's entries is asked for at once, before root's are scanned:
        // with tenants at random they come from memory, and the scan alone waited for each in
        // turn (docs/performance.md, "The classifier").
        let block = self.user_block(packet);
        self.prefetch(block, ALONE);
        let flat = self.flat(packet);
        self.scan(self.block(ROOT), &flat)
            .or_else(|| self.scan(block, &flat))
    }

    /// `classify_owned` of each packet, in order, appended to `links`. The packets' users'
    /// entries are looked up and prefetched `BATCH` packets at a time before any is matched, so
    /// their reads from memory overlap instead of each packet waiting for its own: what a batch
    /// from the kernel's queue allows (docs/performance.md, "The classifier").
    pub fn classify_owned_batch<'a>(
        &self,
        packets: impl IntoIterator<Item = &'a Packet>,
        links: &mut Vec<Option<u32>>,
    ) {
        let root = self.block(ROOT);
        let mut packets = packets.into_iter().peekable();
        while packets.peek().is_some() {
            let batch: [Option<(&Packet, Block)>; BATCH] = std::array::from_fn(|_| {
                let packet = packets.next()?;
                let block = self.user_block(packet);
                self.prefetch(block, BATCH);
                Some((packet, block))
            });
            for (packet, block) in batch.into_iter().flatten() {
                let flat = self.flat(packet);
                links.push(self.scan(root, &flat).or_else(|| self.scan(block, &flat)));
            }
        }
    }

    /// The packet as the entries compare it, with the rules' cgroups its socket's is below.
    fn flat(&self, packet: &Packet) -> Flat<'_> {
        let below = match packet.cgroup {
            Some(id) => self.below.get(&id).map_or(&[][..], Vec::as_slice),
            None => &[],
        };
        Flat::new(packet, below)
    }

    /// Has the cgroup with id `id` been learned (`learn_cgroup`) since the rules last changed?
    pub fn knows_cgroup(&self, id: u64) -> bool {
        self.below.contains_key(&id)
    }

    /// Learns that sockets of the cgroup with id `id` are below the rules' cgroups with ids
    /// `within` (found by `Cgroup::tree`); a cgroup keeps its place in the tree for its life.
    pub fn learn_cgroup(&mut self, id: u64, within: Vec<u64>) {
        self.below.insert(id, within);
    }

    /// The distinct cgroups the rules name.
    pub fn cgroups(&self) -> Vec<&Cgroup> {
        let mut named: Vec<&Cgroup> = Vec::new();
        for c in self.rules.iter().filter_map(|r| r.cgroup.as_ref()) {
            if named.iter().all(|n| n.id != c.id) {
                named.push(c);
            }
        }
        named
    }

    /// The range of `entries` that is `tenant`'s (empty if it has none).
    fn block(&self, tenant: u32) -> Block {
        let (start, end) = self.dispatch.get(tenant);
        Block { tenant, start, end }
    }

    /// The entries of the user who owns the packet's socket, after root's (none for root's own
    /// packets and for packets without a socket).
    fn user_block(&self, packet: &Packet) -> Block {
        match packet.owner {
            Some((uid, _)) if uid != ROOT => self.block(uid),
            _ => Block::default(),
        }
    }

    /// Starts loading the cache lines of a block's first `entries` entries.
    fn prefetch(&self, block: Block, entries: usize) {
        let end = block.end.min(block.start + entries as u32);
        let first = &self.entries[block.start as usize..end as usize];
        // A line per `LINE` bytes of entries, and the one the last entry starts in.
        let lines = first.iter().step_by(LINE / std::mem::size_of::<Entry>());
        for entry in lines.chain(first.last()) {
            netloom_os::prefetch(entry);
        }
    }

    /// The link of the first entry of `block` the packet matches.
    fn scan(&self, block: Block, flat: &Flat<'_>) -> Option<u32> {
        self.entries[block.start as usize..block.end as usize]
            .iter()
            .find(|e| e.matches(flat, block.tenant, &self.extras))
            .map(|e| e.link)
    }

    /// Has any user other than root a rule?
    pub fn has_users(&self) -> bool {
        self.dispatch.has_users()
    }

    /// Must an arriving packet's owner be found (a user has a rule, or an `IN` rule names an
    /// owner)?
    pub fn needs_receivers(&self) -> bool {
        self.receivers
    }

    /// Does any rule name a cgroup? (Only then must a packet's socket's cgroup be found.)
    pub fn has_cgroups(&self) -> bool {
        self.cgrouped
    }

    /// Every rule, tenant by tenant, each tenant's in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }
}

#[cfg(test)]
mod tests;
