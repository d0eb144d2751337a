//! Traffic patterns: which hosts talk to which (explicit pairs, all-to-all, k random hosts in
//! other groups) and when each flow starts. Not here: what a flow sends (`source`, `aimd`).

use super::{FlowSpec, SourceKind, TrafficError};
use netloom_time::{Duration, Instant, Rate};
use netloom_topo::{NodeId, NodeKind, Topology};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

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
    RandomK { k: usize },
}

impl Pattern {
    fn name(&self) -> &'static str {
        match self {
            Pattern::Pairs(_) => "pairs",
            Pattern::AllToAll => "all-to-all",
            Pattern::RandomK { .. } => "random-k",
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
            start: Instant::ZERO + Duration(rng.gen_range(0..STAGGER.as_nanos())),
        })
        .collect())
}

fn random_k(topo: &Topology, k: usize, rng: &mut Xoshiro256PlusPlus) -> Vec<(NodeId, NodeId)> {
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
        let mut chosen: Vec<NodeId> = others.choose_multiple(rng, k).copied().collect();
        chosen.sort_unstable();
        pairs.extend(chosen.into_iter().map(|dst| (src, dst)));
    }
    pairs
}

fn why_empty(pattern: &Pattern, topo: &Topology) -> String {
    match pattern {
        Pattern::Pairs(_) => "the list of pairs is empty; write pairs=h1:h2,h3:h4".into(),
        Pattern::RandomK { k: 0 } => "k is 0; k must be at least 1".into(),
        _ if topo.hosts.len() < 2 => format!(
            "the topology has {} host(s); at least 2 are needed",
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
