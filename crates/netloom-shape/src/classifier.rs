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
mod tests {
    use super::*;
    use crate::spec::parse_selector;
    use rand::Rng;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn a_users_links_take_only_packets_of_that_users_sockets_and_roots_take_all() {
        // User 1001 writes a rule for user 1002's server port; root shapes port 22 for all.
        let c = Classifier::new(vec![
            (1001, rules("server 9000", 1)),
            (ROOT, rules("server 22", 2)),
        ]);
        let to = |port, owner| Packet {
            owner,
            ..tcp(Direction::In, "10.0.0.9", 5000, "10.0.0.1", port)
        };
        assert_eq!(c.classify_owned(&to(9000, Some((1001, 100)))), Some(1));
        assert_eq!(c.classify_owned(&to(9000, Some((1002, 100)))), None);
        assert_eq!(c.classify_owned(&to(9000, None)), None);
        assert_eq!(c.classify_owned(&to(9000, Some((ROOT, 0)))), None);
        assert_eq!(c.classify_owned(&to(22, Some((1002, 100)))), Some(2));
        assert_eq!(c.classify_owned(&to(22, None)), Some(2));
    }

    fn rules(text: &str, link: u32) -> Vec<Rule> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let (selector, _) = parse_selector(&words).expect("valid");
        Rule::from_selector(&selector, link, &[Direction::In, Direction::Out])
    }

    fn tcp(direction: Direction, src: &str, sport: u16, dst: &str, dport: u16) -> Packet {
        Packet {
            direction,
            proto: 6,
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            sport,
            dport,
            owner: Some((1000, 1000)),
            cgroup: None,
            ecn: netloom_link::Ecn::NotEct,
        }
    }

    #[test]
    fn a_client_takes_requests_to_its_servers_and_their_replies_only() {
        let c = Classifier::new(vec![(0, rules("client 80,443@10.20.0.0/16", 1))]);
        let out = tcp(Direction::Out, "192.168.1.2", 40000, "10.20.1.1", 443);
        let back = tcp(Direction::In, "10.20.1.1", 443, "192.168.1.2", 40000);
        assert_eq!(c.classify(0, &out), Some(1));
        assert_eq!(c.classify(0, &back), Some(1));
        // Another port, another subnet, another tenant, a server's direction: not taken.
        assert!(c
            .classify(0, &tcp(Direction::Out, "192.168.1.2", 1, "10.20.1.1", 22))
            .is_none());
        assert!(c
            .classify(0, &tcp(Direction::Out, "192.168.1.2", 1, "10.21.1.1", 80))
            .is_none());
        assert!(c.classify(7, &out).is_none());
        assert!(c
            .classify(
                0,
                &tcp(Direction::In, "10.20.1.1", 40000, "192.168.1.2", 443)
            )
            .is_none());
    }

    #[test]
    fn overlapping_rules_of_a_tenant_go_to_the_first_link_made() {
        let mut first = rules("client 80@10.0.0.0/8", 1);
        first.extend(rules("client 80@10.20.0.0/16", 2));
        let c = Classifier::new(vec![(0, first)]);
        let p = tcp(Direction::Out, "192.168.1.2", 1, "10.20.0.1", 80);
        assert_eq!(c.classify(0, &p), Some(1));
    }

    #[test]
    fn the_dispatch_table_keeps_each_tenants_rules_apart() {
        let tenants: Vec<(u32, Vec<Rule>)> = (0..100u32)
            .rev()
            .map(|t| (t * 3, rules(&format!("server {}", 1000 + t), t)))
            .collect();
        let c = Classifier::new(tenants);
        for t in 0..100u32 {
            let p = tcp(Direction::In, "10.0.0.1", 5555, "10.0.0.2", 1000 + t as u16);
            assert_eq!(c.classify(t * 3, &p), Some(t));
            assert!(c.classify(t * 3 + 1, &p).is_none());
            // The next tenant's rules do not see this port.
            assert!(c.classify(((t + 1) % 100) * 3, &p).is_none());
        }
    }

    #[test]
    fn owner_rules_need_the_socket_owner() {
        let words = ["server", "80", "uid=1000", "gid=5"];
        let (selector, _) = parse_selector(&words).unwrap();
        let c = Classifier::new(vec![(
            0,
            Rule::from_selector(&selector, 1, &[Direction::Out]),
        )]);
        let mut p = tcp(Direction::Out, "10.0.0.2", 80, "10.0.0.1", 5555);
        p.owner = Some((1000, 5));
        assert!(c.classify(0, &p).is_some());
        p.owner = Some((1000, 6));
        assert!(c.classify(0, &p).is_none());
        p.owner = None;
        assert!(c.classify(0, &p).is_none());
    }

    /// Does `rule` take `packet`? Read straight from the rule's lists, as the compiled entries
    /// must agree.
    fn takes(rule: &Rule, p: &Packet) -> bool {
        let (local, remote, remote_port) = p.sides();
        let any_of = |ranges: &[PortRange], port| {
            ranges.is_empty() || ranges.iter().any(|r| r.contains(port))
        };
        let owner = |want: Option<u32>, of: fn((u32, u32)) -> u32| {
            want.is_none_or(|w| p.owner.is_some_and(|o| of(o) == w))
        };
        rule.direction == p.direction
            && rule
                .proto
                .map_or(matches!(p.proto, 6 | 17), |x| x.number() == p.proto)
            && any_of(&rule.local_ports, local)
            && any_of(&rule.remote_ports, remote_port)
            && (rule.remote.is_empty() || rule.remote.iter().any(|n| n.contains(remote)))
            && owner(rule.uid, |o| o.0)
            && owner(rule.gid, |o| o.1)
            && rule.cgroup.as_ref().is_none_or(|c| p.cgroup == Some(c.id))
    }

    /// Random rules and packets over small sets of ports, prefixes (of both families, /0 to
    /// full length), protocols and owners, so that many packets match some rule and many not.
    mod random {
        use super::*;
        use rand::seq::SliceRandom;
        use rand::Rng;
        use rand_xoshiro::Xoshiro256PlusPlus as Rng64;

        const ADDRS: [&str; 6] = [
            "10.0.0.1",
            "10.0.1.9",
            "192.168.5.5",
            "fd00::1",
            "fd00::1:2",
            "2001:db8::7",
        ];

        fn ports(rng: &mut Rng64) -> Vec<PortRange> {
            (0..rng.gen_range(0..3))
                .map(|_| {
                    let lo = rng.gen_range(0..12);
                    PortRange {
                        lo,
                        hi: lo + rng.gen_range(0..4),
                    }
                })
                .collect()
        }

        fn prefix(rng: &mut Rng64) -> Prefix {
            let addr: IpAddr = ADDRS.choose(rng).unwrap().parse().unwrap();
            let (bits, width) = address_bits(addr);
            let len = rng.gen_range(0..=width);
            let host = width - len;
            let kept = bits
                .checked_shr(host)
                .unwrap_or(0)
                .checked_shl(host)
                .unwrap_or(0);
            let addr = match addr {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(kept as u32)),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(kept)),
            };
            Prefix {
                addr,
                len: len as u8,
            }
        }

        pub fn rule(rng: &mut Rng64, tenant: u32, link: u32) -> Rule {
            let directions = [Direction::In, Direction::Out];
            Rule {
                direction: *directions.choose(rng).unwrap(),
                proto: [None, Some(Proto::Tcp), Some(Proto::Udp)][rng.gen_range(0..3)],
                local_ports: ports(rng),
                remote_ports: ports(rng),
                remote: (0..rng.gen_range(0..3)).map(|_| prefix(rng)).collect(),
                uid: [None, Some(tenant), Some(tenant + 1)][rng.gen_range(0..3)],
                gid: [None, None, Some(5)][rng.gen_range(0..3)],
                cgroup: rng.gen_bool(0.2).then(|| Cgroup {
                    path: "/c7".into(),
                    id: 7,
                    owner: tenant,
                }),
                link,
                whole: false,
            }
        }

        pub fn packet(rng: &mut Rng64, users: u32) -> Packet {
            let addr = |rng: &mut Rng64| ADDRS.choose(rng).unwrap().parse::<IpAddr>().unwrap();
            let (mut src, mut dst) = (addr(rng), addr(rng));
            // Most packets keep one family; a few mix them, as no real packet does.
            if rng.gen_bool(0.9) && src.is_ipv4() != dst.is_ipv4() {
                dst = src;
            }
            if rng.gen_bool(0.05) {
                std::mem::swap(&mut src, &mut dst);
            }
            Packet {
                direction: [Direction::In, Direction::Out][rng.gen_range(0..2)],
                proto: [6, 17, 1][rng.gen_range(0..3)],
                src,
                dst,
                sport: rng.gen_range(0..16),
                dport: rng.gen_range(0..16),
                owner: rng
                    .gen_bool(0.8)
                    .then(|| (rng.gen_range(0..=users), rng.gen_range(5..7))),
                cgroup: [None, Some(7), Some(8)][rng.gen_range(0..3)],
                ecn: Ecn::NotEct,
            }
        }

        pub fn seeded(seed: u64) -> Rng64 {
            rand::SeedableRng::seed_from_u64(seed)
        }
    }

    #[test]
    fn a_cgroup_rule_takes_only_packets_of_sockets_in_that_cgroup() {
        let cgroup = |id| Cgroup {
            path: format!("/c{id}"),
            id,
            owner: 0,
        };
        let mut first = rules("server 80", 1);
        let mut second = rules("server 80", 2);
        for r in &mut first {
            r.cgroup = Some(cgroup(7));
        }
        for r in &mut second {
            r.cgroup = Some(cgroup(9));
        }
        first.extend(second);
        let c = Classifier::new(vec![(0, first)]);
        assert!(c.has_cgroups());
        let mut p = tcp(Direction::In, "10.0.0.1", 5555, "10.0.0.2", 80);
        assert_eq!(c.classify(0, &p), None);
        p.cgroup = Some(9);
        assert_eq!(c.classify(0, &p), Some(2));
        p.cgroup = Some(7);
        assert_eq!(c.classify(0, &p), Some(1));
        p.cgroup = Some(8);
        assert_eq!(c.classify(0, &p), None);
        assert!(!Classifier::new(vec![(0, rules("server 80", 1))]).has_cgroups());
    }

    #[test]
    fn a_cgroup_rule_takes_the_cgroups_below_it_once_they_are_learned_in_rule_order() {
        let cgroup = |id| Cgroup {
            path: format!("/c{id}"),
            id,
            owner: 0,
        };
        // Link 1: port 80 in cgroup 7; link 2: ports 80 and 443 in cgroup 9, itself below 7.
        let mut first = rules("server 80", 1);
        let mut second = rules("server 80,443", 2);
        first.iter_mut().for_each(|r| r.cgroup = Some(cgroup(7)));
        second.iter_mut().for_each(|r| r.cgroup = Some(cgroup(9)));
        first.extend(second);
        let mut c = Classifier::new(vec![(0, first)]);
        assert_eq!(
            c.cgroups().iter().map(|g| g.id).collect::<Vec<_>>(),
            vec![7, 9]
        );
        // A socket in cgroup 12, below 9 (and so below 7): unknown, it is nobody's.
        let to = |port| {
            let mut p = tcp(Direction::In, "10.0.0.1", 5555, "10.0.0.2", port);
            p.cgroup = Some(12);
            p
        };
        assert!(!c.knows_cgroup(12));
        assert_eq!(c.classify(0, &to(80)), None);
        c.learn_cgroup(12, vec![7, 9]);
        assert!(c.knows_cgroup(12));
        // First match: the first link takes port 80, the second what only it selects.
        assert_eq!(c.classify(0, &to(80)), Some(1));
        assert_eq!(c.classify(0, &to(443)), Some(2));
        assert_eq!(c.classify_owned(&to(443)), Some(2));
        // A cgroup learned to be below none stays unshaped.
        c.learn_cgroup(13, Vec::new());
        let mut other = to(80);
        other.cgroup = Some(13);
        assert_eq!(c.classify(0, &other), None);
    }

    #[test]
    fn an_in_rule_with_an_owner_needs_the_receiving_sockets_owner() {
        let words = ["server", "80", "gid=5"];
        let (selector, _) = parse_selector(&words).unwrap();
        let c = Classifier::new(vec![(
            0,
            Rule::from_selector(&selector, 1, &[Direction::In]),
        )]);
        assert!(c.needs_receivers() && !c.has_users());
        let mut p = tcp(Direction::In, "10.0.0.1", 5555, "10.0.0.2", 80);
        p.owner = Some((1000, 5));
        assert_eq!(c.classify_owned(&p), Some(1));
        p.owner = Some((1000, u32::MAX));
        assert_eq!(c.classify_owned(&p), None);
        let out_only = Classifier::new(vec![(
            0,
            Rule::from_selector(&selector, 1, &[Direction::Out]),
        )]);
        assert!(!out_only.needs_receivers());
    }

    #[test]
    fn compiled_entries_take_what_the_rules_say_one_packet_or_a_batch_at_a_time() {
        for seed in 0..200u64 {
            let mut rng = random::seeded(seed);
            let users = rng.gen_range(1..6);
            let tenants: Vec<(u32, Vec<Rule>)> = (0..=users)
                .map(|t| {
                    let n = rng.gen_range(0..8);
                    (
                        t,
                        (0..n)
                            .map(|r| random::rule(&mut rng, t, t * 100 + r))
                            .collect(),
                    )
                })
                .collect();
            let c = Classifier::new(tenants.clone());
            let first = |t: u32, p: &Packet| {
                tenants[t as usize]
                    .1
                    .iter()
                    .find(|r| takes(r, p))
                    .map(|r| r.link)
            };
            let packets: Vec<Packet> = (0..300).map(|_| random::packet(&mut rng, users)).collect();
            let mut singles = Vec::new();
            for p in &packets {
                for t in 0..=users {
                    assert_eq!(
                        c.classify(t, p),
                        first(t, p),
                        "seed {seed}, tenant {t}, {p:?}"
                    );
                }
                let owned = first(ROOT, p).or_else(|| match p.owner {
                    Some((uid, _)) if uid != ROOT => first(uid, p),
                    _ => None,
                });
                assert_eq!(c.classify_owned(p), owned, "seed {seed}, {p:?}");
                singles.push(owned);
            }
            // Batches of every length, cut anywhere.
            let mut batched = Vec::new();
            let mut rest = packets.as_slice();
            while !rest.is_empty() {
                let (now, later) = rest.split_at(rng.gen_range(1..=rest.len().min(40)));
                c.classify_owned_batch(now, &mut batched);
                rest = later;
            }
            assert_eq!(batched, singles, "seed {seed}");
        }
    }

    #[test]
    fn an_entry_packs_into_20_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 20);
    }

    #[test]
    fn headers_give_addresses_protocol_and_ports() {
        let mut v4 = [0u8; 28];
        v4[0] = 0x45;
        v4[9] = 17;
        v4[12..16].copy_from_slice(&[10, 0, 0, 1]);
        v4[16..20].copy_from_slice(&[10, 0, 0, 2]);
        v4[20..24].copy_from_slice(&[0x1f, 0x90, 0x00, 0x35]);
        let p = Packet::parse(Direction::Out, &v4, None).unwrap();
        assert_eq!((p.proto, p.sport, p.dport), (17, 8080, 53));
        assert_eq!(p.dst, "10.0.0.2".parse::<IpAddr>().unwrap());
        let mut v6 = [0u8; 44];
        v6[0] = 0x60;
        v6[6] = 6;
        v6[39] = 1;
        v6[40..44].copy_from_slice(&[0, 80, 0x1f, 0x90]);
        let p = Packet::parse(Direction::In, &v6, None).unwrap();
        assert_eq!((p.proto, p.sport, p.dport), (6, 80, 8080));
        assert_eq!(p.dst, "::1".parse::<IpAddr>().unwrap());
        assert!(Packet::parse(Direction::In, &[0x45, 0, 0], None).is_none());
    }
}
