//! Topology generators: build a `TopologyFile` (classes, named nodes, links naming their class,
//! unit strings) for the eWAN shapes, ModelNet's tree-mesh toy topology and an Internet-like
//! `inet`. Generators are deterministic; they do not parse units or validate (that is `load`).
//!
//! Every generator names hosts `h1..hN` in the order it creates them; routers are `r1..rM`
//! except in `inet`, which uses `t` (transit) and `s` (stub) prefixes.

mod inet;
mod shape;
mod tree_mesh;

pub use inet::InetParams;
pub use shape::{ChainParams, DumbbellParams, FishboneParams, MeshParams, RingParams, StarParams};
pub use tree_mesh::TreeMeshParams;

use crate::doc::{LinkEntry, LinkParams, Meta, NodeEntry, TopologyFile};
use crate::{MAX_LINKS, MAX_NODES};

/// Which topology to generate, with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum GenKind {
    /// `chain`: a line of routers with a host at each end.
    Chain(ChainParams),
    /// `star`: hosts around one hub router.
    Star(StarParams),
    /// `ring`: routers in a ring, hosts on each.
    Ring(RingParams),
    /// `mesh`: fully meshed routers, hosts on each.
    Mesh(MeshParams),
    /// `dumbbell`: two routers joined by a bottleneck, hosts on both sides.
    Dumbbell(DumbbellParams),
    /// `fishbone`: a backbone chain of routers, each with a spur of hosts.
    Fishbone(FishboneParams),
    /// `tree-mesh`: ModelNet's toy topology, trees whose roots form a fully meshed core.
    TreeMesh(TreeMeshParams),
    /// `inet`: an Internet-like graph of transit and stub routers, deterministic from a seed.
    Inet(InetParams),
}

impl GenKind {
    /// The kind names the CLI accepts, in the order they are documented.
    pub const NAMES: [&'static str; 8] = [
        "chain",
        "star",
        "ring",
        "mesh",
        "dumbbell",
        "fishbone",
        "tree-mesh",
        "inet",
    ];

    /// The kind called `name` (one of `NAMES`) with its default parameters.
    pub fn with_defaults(name: &str) -> Option<GenKind> {
        Some(match name {
            "chain" => GenKind::Chain(ChainParams::default()),
            "star" => GenKind::Star(StarParams::default()),
            "ring" => GenKind::Ring(RingParams::default()),
            "mesh" => GenKind::Mesh(MeshParams::default()),
            "dumbbell" => GenKind::Dumbbell(DumbbellParams::default()),
            "fishbone" => GenKind::Fishbone(FishboneParams::default()),
            "tree-mesh" => GenKind::TreeMesh(TreeMeshParams::default()),
            "inet" => GenKind::Inet(InetParams::default()),
            _ => return None,
        })
    }
}

/// Parameters that cannot build a topology, for example a ring of two routers.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("gen {kind}: {message}")]
pub struct GenError {
    /// The generator's kind name, as in `GenKind::NAMES`.
    pub kind: &'static str,
    /// What is wrong with the parameters, like "needs at least 1 router".
    pub message: String,
}

/// Builds the topology file for `kind`.
pub fn generate(kind: &GenKind) -> Result<TopologyFile, GenError> {
    let (nodes, links) = kind.size();
    if nodes > MAX_NODES as u128 || links > MAX_LINKS as u128 {
        return Err(GenError {
            kind: kind.name(),
            message: format!(
                "these parameters make {nodes} nodes and {links} links; the limit is \
                 {MAX_NODES} nodes and {MAX_LINKS} links, what loads in a few GiB \
                 (docs/limits.md)"
            ),
        });
    }
    match kind {
        GenKind::Chain(p) => shape::chain(p),
        GenKind::Star(p) => shape::star(p),
        GenKind::Ring(p) => shape::ring(p),
        GenKind::Mesh(p) => shape::mesh(p),
        GenKind::Dumbbell(p) => shape::dumbbell(p),
        GenKind::Fishbone(p) => shape::fishbone(p),
        GenKind::TreeMesh(p) => tree_mesh::generate(p),
        GenKind::Inet(p) => inet::generate(p),
    }
}

impl GenKind {
    fn name(&self) -> &'static str {
        let i = match self {
            GenKind::Chain(_) => 0,
            GenKind::Star(_) => 1,
            GenKind::Ring(_) => 2,
            GenKind::Mesh(_) => 3,
            GenKind::Dumbbell(_) => 4,
            GenKind::Fishbone(_) => 5,
            GenKind::TreeMesh(_) => 6,
            GenKind::Inet(_) => 7,
        };
        Self::NAMES[i]
    }

    /// Nodes and links the generator will make (an upper bound for inet), computed without
    /// overflow so absurd parameters are caught before anything is built.
    pub fn size(&self) -> (u128, u128) {
        let n = |v: usize| v as u128;
        match self {
            GenKind::Chain(p) => (n(p.routers) + 2, n(p.routers) + 1),
            GenKind::Star(p) => (n(p.hosts) + 1, n(p.hosts)),
            GenKind::Ring(p) => (
                n(p.routers) * (1 + n(p.hosts_per_router)),
                n(p.routers) * (1 + n(p.hosts_per_router)),
            ),
            GenKind::Mesh(p) => (
                n(p.routers) * (1 + n(p.hosts_per_router)),
                n(p.routers) * n(p.routers).saturating_sub(1) / 2
                    + n(p.routers) * n(p.hosts_per_router),
            ),
            GenKind::Dumbbell(p) => (2 + 2 * n(p.hosts_per_side), 1 + 2 * n(p.hosts_per_side)),
            GenKind::Fishbone(p) => (
                n(p.routers) * (1 + n(p.hosts_per_spur)),
                n(p.routers).saturating_sub(1) + n(p.routers) * n(p.hosts_per_spur),
            ),
            GenKind::TreeMesh(p) => {
                // Per tree: 1 + n + … + n^(h−1) routers, n^(h−1) leaves; saturating so that
                // huge arities or heights stay comparable with the limit.
                let (mut routers, mut level) = (0u128, 1u128);
                for _ in 0..p.height {
                    routers = routers.saturating_add(level);
                    level = level.saturating_mul(n(p.arity));
                }
                let leaves = level / n(p.arity).max(1);
                let hosts = leaves.saturating_mul(n(p.hosts_per_leaf));
                let per_tree = routers.saturating_add(hosts);
                let nodes = per_tree.saturating_mul(n(p.trees));
                // Every node but the m roots has one uplink; the roots are fully meshed.
                let core = n(p.trees) * n(p.trees).saturating_sub(1) / 2;
                (nodes, nodes.saturating_sub(n(p.trees)).saturating_add(core))
            }
            GenKind::Inet(p) => (
                n(p.routers) + n(p.hosts),
                n(p.routers) * (n(p.transit_links) + 2) + n(p.hosts),
            ),
        }
    }
}

/// Bandwidth and delay of one link class, as unit strings ("100Mbit", "5ms").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkClass {
    /// The class's `bw`, like "100Mbit"; copied into the file unchecked (loading checks it).
    pub bw: String,
    /// The class's `delay`, like "5ms"; copied into the file unchecked (loading checks it).
    pub delay: String,
}

impl LinkClass {
    /// A class of rate `bw` and delay `delay`, both as unit strings.
    pub fn new(bw: &str, delay: &str) -> LinkClass {
        LinkClass {
            bw: bw.to_string(),
            delay: delay.to_string(),
        }
    }

    fn params(&self) -> LinkParams {
        LinkParams {
            bw: Some(self.bw.clone()),
            delay: Some(self.delay.clone()),
            ..LinkParams::default()
        }
    }
}

/// Fails with a `GenError` for `kind` unless `ok`.
fn require(kind: &'static str, ok: bool, message: &str) -> Result<(), GenError> {
    if ok {
        Ok(())
    } else {
        Err(GenError {
            kind,
            message: message.to_string(),
        })
    }
}

/// Accumulates a `TopologyFile`; numbers hosts `h1, h2, ...` as they are added.
struct Builder {
    file: TopologyFile,
}

impl Builder {
    fn new(name: String, classes: &[(&str, &LinkClass)]) -> Builder {
        let file = TopologyFile {
            topology: Some(Meta {
                name: Some(name),
                ..Meta::default()
            }),
            classes: classes
                .iter()
                .map(|(n, c)| (n.to_string(), c.params()))
                .collect(),
            ..TopologyFile::default()
        };
        Builder { file }
    }

    /// Adds the next host (`h<count+1>`) and returns its name.
    fn host(&mut self, group: Option<String>) -> String {
        let name = format!("h{}", self.file.hosts.len() + 1);
        self.file.hosts.push(entry(name.clone(), group));
        name
    }

    /// Adds a router named `name` and returns the name.
    fn router(&mut self, name: String) -> String {
        self.file.routers.push(entry(name.clone(), None));
        name
    }

    /// Adds the routers `{prefix}1 .. {prefix}n`.
    fn routers(&mut self, prefix: &str, n: usize) -> Vec<String> {
        (1..=n)
            .map(|i| self.router(format!("{prefix}{i}")))
            .collect()
    }

    fn link(&mut self, a: &str, b: &str, class: &str) -> &mut LinkEntry {
        self.file.links.push(LinkEntry {
            a: a.to_string(),
            b: b.to_string(),
            class: Some(class.to_string()),
            ..LinkEntry::default()
        });
        self.file.links.last_mut().expect("just pushed")
    }

    /// Adds `n` hosts, each linked to `router` with `class`, all in `group`.
    fn hosts_on(&mut self, router: &str, n: usize, class: &str, group: Option<&str>) {
        for _ in 0..n {
            let h = self.host(group.map(str::to_string));
            self.link(&h, router, class);
        }
    }

    /// Links consecutive `routers` (a line).
    fn line(&mut self, routers: &[String], class: &str) {
        for w in routers.windows(2) {
            self.link(&w[0], &w[1], class);
        }
    }

    /// Links every pair of `routers` (a full mesh), in lexicographic index order.
    fn full_mesh(&mut self, routers: &[String], class: &str) {
        for (i, a) in routers.iter().enumerate() {
            for b in &routers[i + 1..] {
                self.link(a, b, class);
            }
        }
    }

    fn finish(self) -> TopologyFile {
        self.file
    }
}

fn entry(name: String, group: Option<String>) -> NodeEntry {
    NodeEntry::new(name, group, None)
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Structural checks on generated files that do not need the loader.

    use crate::doc::{NodeEntry, TopologyFile};
    use std::collections::{BTreeMap, BTreeSet, VecDeque};

    pub fn name(e: &NodeEntry) -> &str {
        match e {
            NodeEntry::Name(n) => n,
            NodeEntry::Full(t) => &t.name,
        }
    }

    pub fn group(e: &NodeEntry) -> Option<&str> {
        match e {
            NodeEntry::Name(_) => None,
            NodeEntry::Full(t) => t.group.as_deref(),
        }
    }

    /// Asserts node names are unique, links join known nodes with a known class, no link is
    /// repeated or a self-loop, no host is linked to a host, and the graph is connected.
    pub fn assert_well_formed(f: &TopologyFile) {
        let hosts: BTreeSet<&str> = f.hosts.iter().map(name).collect();
        let routers: BTreeSet<&str> = f.routers.iter().map(name).collect();
        assert_eq!(hosts.len(), f.hosts.len(), "duplicate host name");
        assert_eq!(routers.len(), f.routers.len(), "duplicate router name");
        assert!(hosts.is_disjoint(&routers), "host and router share a name");
        let mut adj: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        let mut pairs = BTreeSet::new();
        for l in &f.links {
            for end in [&l.a, &l.b] {
                assert!(hosts.contains(end.as_str()) || routers.contains(end.as_str()));
            }
            assert_ne!(l.a, l.b, "self-loop");
            assert!(!(hosts.contains(l.a.as_str()) && hosts.contains(l.b.as_str())));
            let class = l
                .class
                .as_deref()
                .expect("every generated link has a class");
            assert!(f.classes.contains_key(class), "unknown class {class}");
            let key = if l.a < l.b {
                (&l.a, &l.b)
            } else {
                (&l.b, &l.a)
            };
            assert!(pairs.insert(key), "repeated link {}-{}", l.a, l.b);
            adj.entry(&l.a).or_default().push(&l.b);
            adj.entry(&l.b).or_default().push(&l.a);
        }
        let start = f.routers.first().or(f.hosts.first()).map(name).unwrap();
        let mut seen = BTreeSet::from([start]);
        let mut queue = VecDeque::from([start]);
        while let Some(n) = queue.pop_front() {
            for &m in adj.get(n).map(Vec::as_slice).unwrap_or(&[]) {
                if seen.insert(m) {
                    queue.push_back(m);
                }
            }
        }
        assert_eq!(seen.len(), hosts.len() + routers.len(), "not connected");
    }

    /// Number of links of each class.
    pub fn class_counts(f: &TopologyFile) -> BTreeMap<&str, usize> {
        let mut counts = BTreeMap::new();
        for l in &f.links {
            *counts.entry(l.class.as_deref().unwrap()).or_default() += 1;
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_round_trips_through_toml_and_json() {
        for kind in GenKind::NAMES {
            let file = generate(&GenKind::with_defaults(kind).unwrap()).unwrap();
            testutil::assert_well_formed(&file);
            let text = toml::to_string(&file).unwrap();
            assert_eq!(
                toml::from_str::<TopologyFile>(&text).unwrap(),
                file,
                "{kind}"
            );
            let json = serde_json::to_string(&file).unwrap();
            assert_eq!(
                serde_json::from_str::<TopologyFile>(&json).unwrap(),
                file,
                "{kind}"
            );
        }
        assert_eq!(GenKind::with_defaults("torus"), None);
    }

    #[test]
    fn size_predicts_what_is_built() {
        for kind in GenKind::NAMES {
            let k = GenKind::with_defaults(kind).unwrap();
            let file = generate(&k).unwrap();
            let (nodes, links) = k.size();
            let built = (file.hosts.len() + file.routers.len()) as u128;
            assert_eq!(nodes, built, "{kind} nodes");
            let built_links = file.links.len() as u128;
            if kind == "inet" {
                assert!(
                    links >= built_links,
                    "inet links bound {links} < {built_links}"
                );
            } else {
                assert_eq!(links, built_links, "{kind} links");
            }
        }
    }

    #[test]
    fn absurd_sizes_are_refused_before_building() {
        let star = GenKind::Star(StarParams {
            hosts: 100_000_000,
            ..StarParams::default()
        });
        let err = generate(&star).unwrap_err().to_string();
        assert!(
            err.contains("gen star") && err.contains("100000001 nodes"),
            "{err}"
        );
        // One node past what the loader takes (the hub and MAX_NODES hosts).
        let star = GenKind::Star(StarParams {
            hosts: MAX_NODES,
            ..StarParams::default()
        });
        let err = generate(&star).unwrap_err().to_string();
        assert!(err.contains("the limit is 1100000 nodes"), "{err}");
        let tree = GenKind::TreeMesh(TreeMeshParams {
            arity: 50,
            height: 60,
            ..TreeMeshParams::default()
        });
        assert!(generate(&tree).is_err());
    }
}
