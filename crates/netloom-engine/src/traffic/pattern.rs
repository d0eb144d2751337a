//! Traffic patterns: which hosts talk to which, and when each flow starts; not what flows send.

use super::{FlowSpec, SourceKind, TrafficError, MAX_FLOWS};
use netloom_time::{Duration, Instant, Rate};
use netloom_topo::{NodeId, NodeKind, Topology};
use rand::seq::index;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::HashMap;

/// Flow starts are spread uniformly over [0, STAGGER) so flows do not start in lockstep.
pub const STAGGER: Duration = Duration::from_millis(10);

/// Which hosts send to which.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Explicit (source, destination) host names.
    Pairs(Vec<(String, String)>),
    /// Every host to every other host: n(n−1) flows.
    AllToAll,
    /// Each host to `k` distinct hosts chosen at random among those in other groups
    /// (`Node::group`; a host without a group is a group of its own), or to all of them if
    /// there are fewer than `k`. ModelNet's workload: "each host talks to k hosts in other
    /// subtrees".
    RandomK {
        /// Destinations per source host; at least 1 (`k=`).
        k: usize,
    },
    /// ModelNet's dynamic workload (§6.2): two target groups are drawn at random; every host
    /// outside them (a client) draws one target host in each and, at a random instant in
    /// [0, `within`), stops sending to the first and starts sending to the second.
    Switching {
        /// The span the clients' switching instants are drawn uniformly from (`within=`).
        within: Duration,
    },
}

impl Pattern {
    fn name(&self) -> &'static str {
        match self {
            Pattern::Pairs(_) => "pairs",
            Pattern::AllToAll => "all-to-all",
            Pattern::RandomK { .. } => "random-k",
            Pattern::Switching { .. } => "switching",
        }
    }
}

/// The flows of `pattern` over `topo`'s hosts, each sending `kind` under `cap`, in a
/// deterministic order (pairs as listed; otherwise by source host, then destination host).
/// Random choices and start offsets come from `seed`: flow i starts at a uniform offset in
/// [0, 10 ms).
pub fn expand(
    pattern: &Pattern,
    kind: SourceKind,
    cap: Option<Rate>,
    topo: &Topology,
    seed: u64,
) -> Result<Vec<FlowSpec>, TrafficError> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    // Counted before any is made: all-to-all over 200,000 hosts is 4 × 10^10 flows.
    let n = topo.hosts.len() as u128;
    let flows = match pattern {
        Pattern::Pairs(names) => names.len() as u128,
        Pattern::AllToAll => n * n.saturating_sub(1),
        Pattern::RandomK { k } => n * (*k as u128).min(n.saturating_sub(1)),
        Pattern::Switching { .. } => 2 * n,
    };
    if flows > MAX_FLOWS {
        return Err(TrafficError::TooManyFlows {
            pattern: pattern.name(),
            flows,
            hosts: topo.hosts.len(),
        });
    }
    let pairs = match pattern {
        Pattern::Pairs(names) => names
            .iter()
            .map(|(a, b)| {
                if a == b {
                    return Err(TrafficError::SelfPair { name: a.clone() });
                }
                Ok((host(topo, a)?, host(topo, b)?))
            })
            .collect::<Result<Vec<_>, _>>()?,
        Pattern::AllToAll => topo
            .hosts
            .iter()
            .flat_map(|&a| {
                topo.hosts
                    .iter()
                    .filter(move |&&b| b != a)
                    .map(move |&b| (a, b))
            })
            .collect(),
        Pattern::RandomK { k } => random_k(topo, *k, &mut rng),
        Pattern::Switching { within } => {
            let flows = switching(topo, *within, &mut rng);
            if flows.is_empty() {
                return Err(TrafficError::NoFlows {
                    pattern: pattern.name(),
                    why: why_empty(pattern, topo),
                });
            }
            return Ok(flows
                .into_iter()
                .map(|(src, dst, start, stop)| FlowSpec {
                    src,
                    dst,
                    kind,
                    cap,
                    start,
                    stop,
                })
                .collect());
        }
    };
    if pairs.is_empty() {
        return Err(TrafficError::NoFlows {
            pattern: pattern.name(),
            why: why_empty(pattern, topo),
        });
    }
    Ok(pairs
        .into_iter()
        .map(|(src, dst)| FlowSpec {
            src,
            dst,
            kind,
            cap,
            start: stagger(&mut rng),
            stop: None,
        })
        .collect())
}

/// A flow's start: a uniform offset in [0, `STAGGER`).
fn stagger(rng: &mut Xoshiro256PlusPlus) -> Instant {
    Instant::ZERO + Duration(rng.gen_range(0..STAGGER.as_nanos()))
}

/// The flows of `Pattern::Switching`, as (source, destination, start, stop): per client in
/// host order, the flow to its first target (stopping at its switch) then the flow to its
/// second (starting there). Empty when the hosts are in fewer than three groups.
fn switching(
    topo: &Topology,
    within: Duration,
    rng: &mut Xoshiro256PlusPlus,
) -> Vec<(NodeId, NodeId, Instant, Option<Instant>)> {
    // Groups in order of first appearance; a host without a group is a group of its own.
    let mut groups: Vec<Vec<NodeId>> = Vec::new();
    let mut numbers: HashMap<&str, usize> = HashMap::new();
    let group_of: Vec<usize> = topo
        .hosts
        .iter()
        .map(|&h| {
            let g = match &topo.node(h).group {
                Some(g) => *numbers.entry(g.as_str()).or_insert(groups.len()),
                None => groups.len(),
            };
            if g == groups.len() {
                groups.push(Vec::new());
            }
            groups[g].push(h);
            g
        })
        .collect();
    if groups.len() < 3 {
        return Vec::new();
    }
    let targets = index::sample(rng, groups.len(), 2).into_vec();
    let (first, second) = (&groups[targets[0]], &groups[targets[1]]);
    let mut flows = Vec::new();
    for (&src, g) in topo.hosts.iter().zip(group_of) {
        if targets.contains(&g) {
            continue;
        }
        let a = first[rng.gen_range(0..first.len())];
        let b = second[rng.gen_range(0..second.len())];
        let start = stagger(rng);
        let switch = start.max(Instant::ZERO + Duration(rng.gen_range(0..within.as_nanos())));
        flows.push((src, a, start, Some(switch)));
        flows.push((src, b, switch, None));
    }
    flows
}

fn random_k(topo: &Topology, k: usize, rng: &mut Xoshiro256PlusPlus) -> Vec<(NodeId, NodeId)> {
    let hosts = &topo.hosts;
    // Each group's members, by position in `hosts`, ascending.
    let mut members: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, &h) in hosts.iter().enumerate() {
        if let Some(g) = &topo.node(h).group {
            members.entry(g.as_str()).or_default().push(i);
        }
    }
    let mut pairs = Vec::new();
    for (i, &src) in hosts.iter().enumerate() {
        // A host picks among the others outside its group, in host order; they are numbered
        // without being listed (listing them for every host took hosts² steps). Sampling their
        // indices is what `choose_multiple` on the list does, so the choices are the same.
        let excluded = match &topo.node(src).group {
            Some(g) => members[g.as_str()].as_slice(),
            None => std::slice::from_ref(&i),
        };
        let others = hosts.len() - excluded.len();
        let mut chosen: Vec<NodeId> = index::sample(rng, others, k.min(others))
            .into_iter()
            .map(|j| hosts[nth_outside(excluded, j)])
            .collect();
        chosen.sort_unstable();
        pairs.extend(chosen.into_iter().map(|dst| (src, dst)));
    }
    pairs
}

/// The position of the `j`-th (from 0) position not in `excluded` (ascending).
fn nth_outside(excluded: &[usize], j: usize) -> usize {
    // Before excluded[m] lie excluded[m] − m others, which grows with m: the answer is j plus
    // the number of excluded positions with at most j others before them.
    let (mut lo, mut hi) = (0, excluded.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if excluded[mid] - mid <= j {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    j + lo
}

fn why_empty(pattern: &Pattern, topo: &Topology) -> String {
    match pattern {
        Pattern::Pairs(_) => "the list of pairs is empty; write pairs=h1:h2,h3:h4".into(),
        Pattern::RandomK { k: 0 } => "k is 0; k must be at least 1".into(),
        _ if topo.hosts.len() < 2 => format!(
            "the topology has {} host(s); at least 2 are needed",
            topo.hosts.len()
        ),
        Pattern::Switching { .. } => format!(
            "the hosts are in fewer than three groups; switching needs two target groups and \
             clients outside them (the topology has {} hosts)",
            topo.hosts.len()
        ),
        _ => "every host is in the same group; random-k only picks hosts in other groups".into(),
    }
}

/// The host called `name`, or an error listing a few hosts that exist.
fn host(topo: &Topology, name: &str) -> Result<NodeId, TrafficError> {
    match topo.node_id(name) {
        Some(id) if topo.node(id).kind == NodeKind::Host => Ok(id),
        Some(_) => Err(TrafficError::NotAHost {
            name: name.into(),
            known: some_hosts(topo),
        }),
        None => Err(TrafficError::UnknownHost {
            name: name.into(),
            known: some_hosts(topo),
        }),
    }
}

/// "h1, h2, h3, h4, h5, … (12 hosts)": enough to see how hosts are named.
fn some_hosts(topo: &Topology) -> String {
    const SHOWN: usize = 5;
    let names: Vec<&str> = topo
        .hosts
        .iter()
        .take(SHOWN)
        .map(|&h| topo.node(h).name.as_str())
        .collect();
    match topo.hosts.len() {
        0 => "none (the topology has no hosts)".into(),
        n if n <= SHOWN => names.join(", "),
        n => format!("{}, … ({n} hosts)", names.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netloom_topo::RoutingMetric;
    use std::collections::BTreeSet;

    const CBR: SourceKind = SourceKind::Cbr {
        rate: Rate::bps(1_000_000),
        size: 1500,
    };

    /// Hosts h0..h{n-1} in groups of `per_group` (a, b, c, ...), plus an ungrouped host "solo"
    /// if `solo`, and a router "r".
    fn topo(n: usize, per_group: usize, solo: bool) -> Topology {
        let mut t = Topology::new("t", RoutingMetric::Delay);
        t.add_node("r", NodeKind::Router, None);
        for i in 0..n {
            let group = ((b'a' + (i / per_group) as u8) as char).to_string();
            t.add_node(format!("h{i}"), NodeKind::Host, Some(group));
        }
        if solo {
            t.add_node("solo", NodeKind::Host, None);
        }
        t
    }

    fn names(t: &Topology, flows: &[FlowSpec]) -> Vec<(String, String)> {
        flows
            .iter()
            .map(|f| (t.node(f.src).name.clone(), t.node(f.dst).name.clone()))
            .collect()
    }

    #[test]
    fn all_to_all_gives_every_ordered_pair() {
        let t = topo(5, 5, false);
        let flows = expand(&Pattern::AllToAll, CBR, None, &t, 1).unwrap();
        assert_eq!(flows.len(), 5 * 4);
        let pairs: BTreeSet<_> = flows.iter().map(|f| (f.src, f.dst)).collect();
        assert_eq!(pairs.len(), 20);
        assert!(flows.iter().all(|f| f.src != f.dst && f.kind == CBR));
    }

    #[test]
    fn starts_are_staggered_within_10ms_and_deterministic() {
        let t = topo(6, 6, false);
        let cap = Some(Rate::bps(500_000));
        let a = expand(&Pattern::AllToAll, CBR, cap, &t, 9).unwrap();
        assert!(a
            .iter()
            .all(|f| f.start < Instant::ZERO + STAGGER && f.cap == cap));
        let distinct: BTreeSet<_> = a.iter().map(|f| f.start).collect();
        assert!(distinct.len() > a.len() / 2, "not in lockstep");
        assert_eq!(a, expand(&Pattern::AllToAll, CBR, cap, &t, 9).unwrap());
        assert_ne!(a, expand(&Pattern::AllToAll, CBR, cap, &t, 10).unwrap());
    }

    #[test]
    fn random_k_picks_k_distinct_hosts_in_other_groups() {
        // 12 hosts in groups of 3 (a..d) and an ungrouped one.
        let t = topo(12, 3, true);
        let flows = expand(&Pattern::RandomK { k: 4 }, CBR, None, &t, 5).unwrap();
        assert_eq!(flows.len(), 13 * 4);
        for &h in &t.hosts {
            let dsts: BTreeSet<NodeId> =
                flows.iter().filter(|f| f.src == h).map(|f| f.dst).collect();
            assert_eq!(dsts.len(), 4, "k distinct destinations");
            for d in dsts {
                let (g, gd) = (&t.node(h).group, &t.node(d).group);
                assert!(d != h && (g.is_none() || g != gd), "same group");
            }
        }
        let again = expand(&Pattern::RandomK { k: 4 }, CBR, None, &t, 5).unwrap();
        assert_eq!(flows, again);
        let other = expand(&Pattern::RandomK { k: 4 }, CBR, None, &t, 6).unwrap();
        assert_ne!(names(&t, &flows), names(&t, &other));
    }

    #[test]
    fn random_k_chooses_as_listing_every_candidate_did() {
        use rand::seq::SliceRandom;
        // The former choice: every host's candidates listed, `choose_multiple` on the list.
        let listed = |topo: &Topology, k: usize, seed: u64| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let same_group = |a: NodeId, b: NodeId| {
                let (ga, gb) = (&topo.node(a).group, &topo.node(b).group);
                a == b || (ga.is_some() && ga == gb)
            };
            let mut pairs = Vec::new();
            for &src in &topo.hosts {
                let others: Vec<NodeId> = topo
                    .hosts
                    .iter()
                    .copied()
                    .filter(|&h| !same_group(src, h))
                    .collect();
                let mut chosen: Vec<NodeId> =
                    others.choose_multiple(&mut rng, k).copied().collect();
                chosen.sort_unstable();
                pairs.extend(chosen.into_iter().map(|dst| (src, dst)));
            }
            pairs
        };
        // Groups of 3, of 7 and of 1, with an ungrouped host, and groups interleaved.
        let mut mixed = topo(10, 3, true);
        for i in 0..9 {
            let group = if i % 2 == 0 { "even" } else { "odd" };
            mixed.add_node(format!("m{i}"), NodeKind::Host, Some(group.into()));
        }
        for t in [
            topo(12, 3, true),
            topo(30, 7, false),
            topo(5, 1, true),
            mixed,
        ] {
            for (k, seed) in [(1, 1), (4, 2), (10, 3), (100, 4)] {
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                assert_eq!(random_k(&t, k, &mut rng), listed(&t, k, seed), "k {k}");
            }
        }
    }

    #[test]
    fn patterns_past_the_flow_limit_are_refused_before_expanding() {
        let t = topo(1000, 10, false);
        let err = expand(&Pattern::AllToAll, CBR, None, &t, 1).unwrap_err();
        assert!(err
            .to_string()
            .contains("gives 999000 flows over 1000 hosts; the limit is 200000"));
        assert!(expand(&Pattern::RandomK { k: 200 }, CBR, None, &t, 1).is_ok());
        assert!(expand(&Pattern::RandomK { k: 201 }, CBR, None, &t, 1).is_err());
    }

    #[test]
    fn random_k_uses_all_when_fewer_than_k() {
        // Groups of 3 among 6 hosts: each host has exactly 3 hosts in the other group.
        let t = topo(6, 3, false);
        let flows = expand(&Pattern::RandomK { k: 10 }, CBR, None, &t, 1).unwrap();
        assert_eq!(flows.len(), 6 * 3);
        let one_group = topo(4, 4, false);
        let err = expand(&Pattern::RandomK { k: 2 }, CBR, None, &one_group, 1).unwrap_err();
        assert!(err.to_string().contains("same group"), "{err}");
    }

    #[test]
    fn pairs_resolve_names_in_order() {
        let t = topo(4, 1, false);
        let p = Pattern::Pairs(vec![("h2".into(), "h0".into()), ("h1".into(), "h3".into())]);
        let flows = expand(&p, CBR, None, &t, 1).unwrap();
        assert_eq!(
            names(&t, &flows),
            [("h2".into(), "h0".into()), ("h1".into(), "h3".into())]
        );
    }

    #[test]
    fn bad_pairs_say_what_is_valid() {
        let t = topo(8, 1, false);
        let pairs = |a: &str, b: &str| Pattern::Pairs(vec![(a.into(), b.into())]);
        let err = expand(&pairs("h1", "h9"), CBR, None, &t, 1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown host \"h9\"; hosts are h0, h1, h2, h3, h4, … (8 hosts)"
        );
        let err = expand(&pairs("r", "h1"), CBR, None, &t, 1).unwrap_err();
        assert!(matches!(err, TrafficError::NotAHost { ref name, .. } if name == "r"));
        let err = expand(&pairs("h1", "h1"), CBR, None, &t, 1).unwrap_err();
        assert_eq!(err, TrafficError::SelfPair { name: "h1".into() });
        let err = expand(&Pattern::AllToAll, CBR, None, &topo(1, 1, false), 1).unwrap_err();
        assert!(err.to_string().contains("has 1 host(s)"), "{err}");
    }

    #[test]
    fn switching_clients_move_from_one_target_group_to_another() {
        // Four groups of five: two are targets, the ten hosts of the others are clients.
        let t = topo(20, 5, false);
        let within = Duration::from_secs(300);
        let flows = expand(
            &Pattern::Switching { within },
            SourceKind::Aimd { mss: 1460 },
            None,
            &t,
            7,
        )
        .unwrap();
        assert_eq!(flows.len(), 20, "two flows per client");
        let group = |n: NodeId| t.node(n).group.clone().unwrap();
        let (first, second) = (group(flows[0].dst), group(flows[1].dst));
        assert_ne!(first, second);
        let mut switches = Vec::new();
        for pair in flows.chunks(2) {
            let (a, b) = (pair[0], pair[1]);
            assert_eq!(a.src, b.src);
            assert!(
                ![&first, &second].contains(&&group(a.src)),
                "a client is no target"
            );
            assert_eq!(
                (group(a.dst), group(b.dst)),
                (first.clone(), second.clone())
            );
            // The first flow stops exactly when the second starts, within the span.
            assert!(a.start < Instant::ZERO + STAGGER && a.stop == Some(b.start));
            assert!(b.start < Instant::ZERO + within && b.stop.is_none());
            switches.push(b.start);
        }
        switches.sort_unstable();
        switches.dedup();
        assert!(switches.len() > 5, "clients switch at different instants");
        let again = expand(
            &Pattern::Switching { within },
            SourceKind::Aimd { mss: 1460 },
            None,
            &t,
            7,
        )
        .unwrap();
        assert_eq!(flows, again, "deterministic for a seed");
        let two_groups = expand(
            &Pattern::Switching { within },
            SourceKind::Aimd { mss: 1460 },
            None,
            &topo(10, 5, false),
            7,
        );
        assert!(
            matches!(two_groups, Err(TrafficError::NoFlows { .. })),
            "{two_groups:?}"
        );
    }
}
