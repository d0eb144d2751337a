//! ModelNet's toy topology (§6, Figure 7): `trees` n-ary trees whose roots form a fully meshed
//! core, with hosts on the leaf routers over slow last-mile links.

use super::{require, Builder, GenError, LinkClass};
use crate::doc::TopologyFile;

/// `tree-mesh` parameters. With m = `trees`, n = `arity`, h = `height`, k = `hosts_per_leaf`:
///
/// - each tree has router levels 0 (the root, a core router) to h − 1, so
///   R = 1 + n + … + n^(h−1) routers of which L = n^(h−1) are leaves; hosts sit at depth h, so a
///   path between hosts in different trees is 2h + 1 links, as in the paper;
/// - routers: m·R; hosts: m·L·k; links: m(m − 1)/2 `core` + m(R − 1) `tree` + m·L·k `last-mile`.
///
/// The defaults are the paper's h5 (4 trees, height 5) with n = 2, k = 6: 124 routers, 384 hosts
/// (the paper's workload has about 400 clients), 6 + 120 + 384 = 510 links. Height 2 with the
/// other defaults gives h2: 12 routers, 48 hosts, 6 + 8 + 48 = 62 links.
///
/// Routers are `r1 .. rm` (the roots) followed by each tree's other routers in breadth-first
/// order; every host's group is `treeK` (1-based), which "k random hosts in other subtrees"
/// traffic uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeMeshParams {
    /// Trees hanging off the core (≥ 1). Default 4.
    pub trees: usize,
    /// Children of each non-leaf tree router (≥ 1). Default 2.
    pub arity: usize,
    /// Router levels per tree, the root included (≥ 1). Default 5.
    pub height: usize,
    /// Hosts on each leaf router (≥ 1). Default 6.
    pub hosts_per_leaf: usize,
    /// Links between roots. Default 1Gbit, 5ms.
    pub core: LinkClass,
    /// Links inside a tree. Default 100Mbit, 2ms.
    pub tree: LinkClass,
    /// Host links. Default 10Mbit, 1ms.
    pub last_mile: LinkClass,
}

impl Default for TreeMeshParams {
    fn default() -> Self {
        TreeMeshParams {
            trees: 4,
            arity: 2,
            height: 5,
            hosts_per_leaf: 6,
            core: LinkClass::new("1Gbit", "5ms"),
            tree: LinkClass::new("100Mbit", "2ms"),
            last_mile: LinkClass::new("10Mbit", "1ms"),
        }
    }
}

const KIND: &str = "tree-mesh";

pub(super) fn generate(p: &TreeMeshParams) -> Result<TopologyFile, GenError> {
    require(KIND, p.trees >= 1, "needs at least 1 tree")?;
    require(KIND, p.arity >= 1, "needs an arity of at least 1")?;
    require(KIND, p.height >= 1, "needs a height of at least 1")?;
    require(
        KIND,
        p.hosts_per_leaf >= 1,
        "needs at least 1 host per leaf",
    )?;
    let name = format!("tree-mesh-{}x{}-h{}", p.trees, p.arity, p.height);
    let classes = [
        ("core", &p.core),
        ("tree", &p.tree),
        ("last-mile", &p.last_mile),
    ];
    let mut b = Builder::new(name, &classes);
    let roots = b.routers("r", p.trees);
    b.full_mesh(&roots, "core");
    let mut next_router = p.trees + 1;
    for (t, root) in roots.iter().enumerate() {
        let group = format!("tree{}", t + 1);
        let mut level = vec![root.clone()];
        for _ in 1..p.height {
            let mut children = Vec::with_capacity(level.len() * p.arity);
            for parent in &level {
                for _ in 0..p.arity {
                    let child = b.router(format!("r{next_router}"));
                    next_router += 1;
                    b.link(parent, &child, "tree");
                    children.push(child);
                }
            }
            level = children;
        }
        for leaf in &level {
            b.hosts_on(leaf, p.hosts_per_leaf, "last-mile", Some(&group));
        }
    }
    Ok(b.finish())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{assert_well_formed, class_counts, group};
    use super::*;

    /// The documented formulas for (routers, hosts, core, tree, last-mile links).
    fn formula(p: &TreeMeshParams) -> (usize, usize, usize, usize, usize) {
        let (m, n, h, k) = (p.trees, p.arity, p.height, p.hosts_per_leaf);
        let per_tree: usize = (0..h).map(|d| n.pow(d as u32)).sum();
        let leaves = n.pow(h as u32 - 1);
        (
            m * per_tree,
            m * leaves * k,
            m * (m - 1) / 2,
            m * (per_tree - 1),
            m * leaves * k,
        )
    }

    fn check(p: &TreeMeshParams) {
        let f = generate(p).unwrap();
        assert_well_formed(&f);
        let c = class_counts(&f);
        let get = |k: &str| c.get(k).copied().unwrap_or(0);
        let got = (
            f.routers.len(),
            f.hosts.len(),
            get("core"),
            get("tree"),
            get("last-mile"),
        );
        assert_eq!(got, formula(p), "{p:?}");
    }

    #[test]
    fn default_is_h5_with_384_hosts() {
        let p = TreeMeshParams::default();
        assert_eq!(formula(&p), (124, 384, 6, 120, 384));
        check(&p);
    }

    #[test]
    fn counts_follow_the_formula_for_other_shapes() {
        for (trees, arity, height, hosts_per_leaf) in [(4, 2, 2, 6), (1, 1, 3, 1), (3, 3, 3, 2)] {
            check(&TreeMeshParams {
                trees,
                arity,
                height,
                hosts_per_leaf,
                ..TreeMeshParams::default()
            });
        }
    }

    #[test]
    fn hosts_are_grouped_by_tree() {
        let f = generate(&TreeMeshParams::default()).unwrap();
        assert_eq!(group(&f.hosts[0]), Some("tree1"));
        assert_eq!(group(&f.hosts[95]), Some("tree1"));
        assert_eq!(group(&f.hosts[96]), Some("tree2"));
        assert_eq!(group(&f.hosts[383]), Some("tree4"));
    }
}
