//! The classifier's tests: rules taken as written, one packet or a batch at a time.

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
    let any_of =
        |ranges: &[PortRange], port| ranges.is_empty() || ranges.iter().any(|r| r.contains(port));
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
