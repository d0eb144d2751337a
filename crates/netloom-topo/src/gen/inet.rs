//! An Internet-like router-level topology (ModelNet §6's iNet graph): transit routers joined by
//! preferential attachment (power-law degrees), stub routers homed on transit routers, hosts on
//! stubs, with ModelNet's four link classes. Deterministic from a seed.

use super::{require, Builder, GenError, LinkClass};
use crate::doc::TopologyFile;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeSet;

/// `inet` parameters. With T = `routers − stubs` transit routers, S = `stubs`, H = `hosts` and
/// m = `transit_links`:
///
/// - transit routers `t1 .. tT`: the first min(m + 1, T) form a clique, each later one links to m
///   distinct earlier ones chosen with probability proportional to their degree
///   (Barabási–Albert), so there are C(min(m + 1, T), 2) + max(T − m − 1, 0)·m `transit-transit`
///   links; with `transit_delay_ms = Some((lo, hi))` each carries its own delay, drawn uniformly
///   from whole milliseconds in [lo, hi] (standing in for iNet's geographic distances), which
///   overrides the class's delay;
/// - stub routers `s1 .. sS`: each links to one transit router (chosen by degree, like a new
///   transit router) and, with probability `multihomed`, to a second one: S to 2S `stub-transit`
///   links; with probability `stub_peering` a stub also links to another random stub
///   (`stub-stub`);
/// - hosts `h1 .. hH`: host i is on stub s((i − 1) mod S + 1), its group is that stub's name;
///   H `client-stub` links.
///
/// The defaults are the paper's: 4000 routers of which 200 stubs, 400 hosts; with m = 2 and
/// seed 1 that is 7597 transit-transit, 247 stub-transit, 16 stub-stub and 400 client-stub
/// links (8260 in all).
#[derive(Clone, Debug, PartialEq)]
pub struct InetParams {
    /// Seed of the Xoshiro256++ generator; the same seed gives the same file. Default 1.
    pub seed: u64,
    /// All routers, transit and stub (> `stubs`). Default 4000.
    pub routers: usize,
    /// Stub routers (≥ 1). Default 200.
    pub stubs: usize,
    /// Hosts, spread round-robin over the stubs. Default 400.
    pub hosts: usize,
    /// Links each new transit router makes to earlier ones (≥ 1). Default 2.
    pub transit_links: usize,
    /// Probability that a stub has a second transit uplink, in [0, 1]. Default 0.25.
    pub multihomed: f64,
    /// Probability that a stub peers with another stub, in [0, 1]. Default 0.1.
    pub stub_peering: f64,
    /// Range of per-link transit-transit delays in milliseconds, `lo ≤ hi`; `None` gives every
    /// transit-transit link the class's delay. Default `Some((1, 10))`.
    pub transit_delay_ms: Option<(u64, u64)>,
    /// Host links. Default 10Mbit, 1ms.
    pub client_stub: LinkClass,
    /// Stub peering links. Default 100Mbit, 2ms.
    pub stub_stub: LinkClass,
    /// Stub uplinks. Default 100Mbit, 5ms.
    pub stub_transit: LinkClass,
    /// Backbone links; the delay applies only when `transit_delay_ms` is `None`.
    /// Default 1Gbit, 5ms.
    pub transit_transit: LinkClass,
}

impl Default for InetParams {
    fn default() -> Self {
        InetParams {
            seed: 1,
            routers: 4000,
            stubs: 200,
            hosts: 400,
            transit_links: 2,
            multihomed: 0.25,
            stub_peering: 0.1,
            transit_delay_ms: Some((1, 10)),
            client_stub: LinkClass::new("10Mbit", "1ms"),
            stub_stub: LinkClass::new("100Mbit", "2ms"),
            stub_transit: LinkClass::new("100Mbit", "5ms"),
            transit_transit: LinkClass::new("1Gbit", "5ms"),
        }
    }
}

const KIND: &str = "inet";

pub(super) fn generate(p: &InetParams) -> Result<TopologyFile, GenError> {
    require(KIND, p.stubs >= 1, "needs at least 1 stub")?;
    require(KIND, p.routers > p.stubs, "needs more routers than stubs")?;
    require(
        KIND,
        p.transit_links >= 1,
        "needs transit_links of at least 1",
    )?;
    let unit = 0.0..=1.0;
    require(
        KIND,
        unit.contains(&p.multihomed),
        "multihomed must be in [0, 1]",
    )?;
    require(
        KIND,
        unit.contains(&p.stub_peering),
        "stub_peering must be in [0, 1]",
    )?;
    require(
        KIND,
        !matches!(p.transit_delay_ms, Some((lo, hi)) if lo > hi),
        "transit_delay_ms needs its low end not above its high end",
    )?;
    let transit_count = p.routers - p.stubs;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(p.seed);
    let name = format!("inet-{}-{}-{}-seed{}", p.routers, p.stubs, p.hosts, p.seed);
    let classes = [
        ("client-stub", &p.client_stub),
        ("stub-stub", &p.stub_stub),
        ("stub-transit", &p.stub_transit),
        ("transit-transit", &p.transit_transit),
    ];
    let mut b = Builder::new(name, &classes);
    let transit = b.routers("t", transit_count);
    let stubs = b.routers("s", p.stubs);

    let mut attach = Attachment::default();
    let link_transit = |b: &mut Builder, rng: &mut Xoshiro256PlusPlus, x: usize, y: usize| {
        let link = b.link(&transit[x], &transit[y], "transit-transit");
        if let Some((lo, hi)) = p.transit_delay_ms {
            link.params.delay = Some(format!("{}ms", rng.gen_range(lo..=hi)));
        }
    };
    let seed_size = (p.transit_links + 1).min(transit_count);
    for x in 0..seed_size {
        for y in x + 1..seed_size {
            link_transit(&mut b, &mut rng, x, y);
            attach.add_edge(x, y);
        }
    }
    for x in seed_size..transit_count {
        for y in attach.pick(&mut rng, p.transit_links) {
            link_transit(&mut b, &mut rng, x, y);
            attach.add_edge(x, y);
        }
    }

    for stub in &stubs {
        let homes = if transit_count >= 2 && rng.gen_bool(p.multihomed) {
            2
        } else {
            1
        };
        // Stubs do not join the preferential pool: only transit degrees steer later choices.
        for t in attach.pick(&mut rng, homes) {
            b.link(stub, &transit[t], "stub-transit");
        }
    }

    if p.stubs >= 2 {
        let mut peers = BTreeSet::new();
        for i in 0..p.stubs {
            if rng.gen_bool(p.stub_peering) {
                let j = (i + rng.gen_range(1..p.stubs)) % p.stubs;
                if peers.insert((i.min(j), i.max(j))) {
                    b.link(&stubs[i], &stubs[j], "stub-stub");
                }
            }
        }
    }

    for i in 0..p.hosts {
        let stub = &stubs[i % p.stubs];
        b.hosts_on(stub, 1, "client-stub", Some(stub));
    }
    Ok(b.finish())
}

/// Preferential attachment: every link end is listed once, so a uniform draw from the list picks
/// a transit router with probability proportional to its degree.
#[derive(Default)]
struct Attachment {
    ends: Vec<usize>,
}

impl Attachment {
    fn add_edge(&mut self, x: usize, y: usize) {
        self.ends.extend([x, y]);
    }

    /// `k` distinct routers drawn by degree; the pool must hold at least `k` distinct routers.
    fn pick(&self, rng: &mut Xoshiro256PlusPlus, k: usize) -> Vec<usize> {
        let mut chosen = Vec::with_capacity(k);
        while chosen.len() < k {
            let t = if self.ends.is_empty() {
                // A single transit router has no links to draw from.
                0
            } else {
                self.ends[rng.gen_range(0..self.ends.len())]
            };
            if !chosen.contains(&t) {
                chosen.push(t);
            }
        }
        chosen
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{assert_well_formed, class_counts, group, name};
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn default_counts_match_the_paper() {
        let f = generate(&InetParams::default()).unwrap();
        assert_well_formed(&f);
        assert_eq!(f.routers.len(), 4000);
        assert_eq!(
            f.routers
                .iter()
                .filter(|r| name(r).starts_with('s'))
                .count(),
            200
        );
        assert_eq!(f.hosts.len(), 400);
        let c = class_counts(&f);
        assert_eq!(c["transit-transit"], 3 + 3797 * 2);
        assert!((200..=400).contains(&c["stub-transit"]), "{c:?}");
        assert_eq!(c["client-stub"], 400);
        assert!(c.get("stub-stub").copied().unwrap_or(0) <= 200);
    }

    #[test]
    fn transit_degrees_are_heavy_tailed() {
        let f = generate(&InetParams::default()).unwrap();
        let mut degree: BTreeMap<&str, usize> = BTreeMap::new();
        for l in f
            .links
            .iter()
            .filter(|l| l.class.as_deref() == Some("transit-transit"))
        {
            *degree.entry(&l.a).or_default() += 1;
            *degree.entry(&l.b).or_default() += 1;
        }
        let max = degree.values().copied().max().unwrap();
        let mean = 2.0 * (3.0 + 3797.0 * 2.0) / 3800.0;
        // A Poisson (non-power-law) graph of this mean degree would almost never exceed ~15.
        assert!(max as f64 > 10.0 * mean, "max degree {max}, mean {mean}");
    }

    #[test]
    fn same_seed_same_file_other_seed_other_file() {
        let small = InetParams {
            routers: 300,
            stubs: 40,
            hosts: 60,
            ..InetParams::default()
        };
        let a = generate(&small).unwrap();
        assert_eq!(a, generate(&small).unwrap());
        let other = generate(&InetParams { seed: 2, ..small }).unwrap();
        assert_ne!(a.links, other.links);
        assert_well_formed(&other);
    }

    #[test]
    fn transit_delays_are_per_link_in_range_or_the_class_delay() {
        let small = InetParams {
            routers: 200,
            stubs: 20,
            hosts: 20,
            ..InetParams::default()
        };
        let f = generate(&small).unwrap();
        let delays: BTreeSet<&str> = f
            .links
            .iter()
            .filter(|l| l.class.as_deref() == Some("transit-transit"))
            .map(|l| l.params.delay.as_deref().unwrap())
            .collect();
        let all: BTreeSet<String> = (1..=10).map(|ms| format!("{ms}ms")).collect();
        assert_eq!(delays, all.iter().map(String::as_str).collect());
        let f = generate(&InetParams {
            transit_delay_ms: None,
            ..small
        })
        .unwrap();
        assert!(f.links.iter().all(|l| l.params.delay.is_none()));
        assert_eq!(f.classes["transit-transit"].delay.as_deref(), Some("5ms"));
    }

    #[test]
    fn hosts_round_robin_over_stubs() {
        let f = generate(&InetParams::default()).unwrap();
        assert_eq!(group(&f.hosts[0]), Some("s1"));
        assert_eq!(group(&f.hosts[199]), Some("s200"));
        assert_eq!(group(&f.hosts[200]), Some("s1"));
    }

    #[test]
    fn tiny_and_extreme_parameters_stay_connected() {
        for (routers, stubs, transit_links) in [(2, 1, 1), (3, 2, 5), (10, 1, 3), (50, 45, 1)] {
            let p = InetParams {
                routers,
                stubs,
                hosts: 7,
                transit_links,
                multihomed: 1.0,
                stub_peering: 1.0,
                ..InetParams::default()
            };
            assert_well_formed(&generate(&p).unwrap());
        }
        let bad = InetParams {
            routers: 10,
            stubs: 10,
            ..InetParams::default()
        };
        assert!(generate(&bad).is_err());
    }
}
