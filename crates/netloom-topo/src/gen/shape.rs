//! The eWAN shapes: chain, star, ring, mesh, dumbbell and fishbone, each with an `access` class
//! for host links and a router-to-router class (`backbone`, or `bottleneck` for the dumbbell).

use super::{require, Builder, GenError, LinkClass};
use crate::doc::TopologyFile;

/// Default host access link: 100Mbit, 1ms.
fn access() -> LinkClass {
    LinkClass::new("100Mbit", "1ms")
}

/// Default router-to-router link: 1Gbit, 10ms (a WAN hop, eWAN's range is 1–500 ms).
fn backbone() -> LinkClass {
    LinkClass::new("1Gbit", "10ms")
}

/// `chain`: routers `r1 .. rN` in a line, host `h1` on `r1` and `h2` on `rN`.
/// Counts: N routers, 2 hosts, N − 1 backbone + 2 access links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainParams {
    /// Routers in the line (≥ 1). Default 4.
    pub routers: usize,
    /// Host links. Default 100Mbit, 1ms.
    pub access: LinkClass,
    /// Router-to-router links. Default 1Gbit, 10ms.
    pub backbone: LinkClass,
}

impl Default for ChainParams {
    fn default() -> Self {
        ChainParams {
            routers: 4,
            access: access(),
            backbone: backbone(),
        }
    }
}

/// `star`: hub router `r1` with hosts `h1 .. hN`. Counts: 1 router, N hosts, N access links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StarParams {
    /// Hosts around the hub (≥ 1). Default 8.
    pub hosts: usize,
    /// Host links. Default 100Mbit, 1ms.
    pub access: LinkClass,
}

impl Default for StarParams {
    fn default() -> Self {
        StarParams {
            hosts: 8,
            access: access(),
        }
    }
}

/// `ring`: routers `r1 .. rN` in a ring, `hosts_per_router` hosts on each.
/// Counts: N routers, N·k hosts, N backbone + N·k access links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingParams {
    /// Routers in the ring (≥ 3). Default 6.
    pub routers: usize,
    /// Hosts on each router. Default 1.
    pub hosts_per_router: usize,
    /// Host links. Default 100Mbit, 1ms.
    pub access: LinkClass,
    /// Router-to-router links. Default 1Gbit, 10ms.
    pub backbone: LinkClass,
}

impl Default for RingParams {
    fn default() -> Self {
        RingParams {
            routers: 6,
            hosts_per_router: 1,
            access: access(),
            backbone: backbone(),
        }
    }
}

/// `mesh`: routers `r1 .. rN` fully meshed, `hosts_per_router` hosts on each.
/// Counts: N routers, N·k hosts, N(N − 1)/2 backbone + N·k access links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeshParams {
    /// Routers in the mesh (≥ 1). Default 4.
    pub routers: usize,
    /// Hosts on each router. Default 1.
    pub hosts_per_router: usize,
    /// Host links. Default 100Mbit, 1ms.
    pub access: LinkClass,
    /// Router-to-router links. Default 1Gbit, 10ms.
    pub backbone: LinkClass,
}

impl Default for MeshParams {
    fn default() -> Self {
        MeshParams {
            routers: 4,
            hosts_per_router: 1,
            access: access(),
            backbone: backbone(),
        }
    }
}

/// `dumbbell`: routers `r1` and `r2` joined by the bottleneck; hosts `h1 .. hK` on `r1` (group
/// "left"), `hK+1 .. h2K` on `r2` (group "right").
/// Counts: 2 routers, 2K hosts, 1 bottleneck + 2K access links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumbbellParams {
    /// Hosts on each side (≥ 1). Default 4.
    pub hosts_per_side: usize,
    /// Host links. Default 100Mbit, 1ms.
    pub access: LinkClass,
    /// The link between the two routers. Default 10Mbit, 20ms.
    pub bottleneck: LinkClass,
}

impl Default for DumbbellParams {
    fn default() -> Self {
        DumbbellParams {
            hosts_per_side: 4,
            access: access(),
            bottleneck: LinkClass::new("10Mbit", "20ms"),
        }
    }
}

/// `fishbone`: a backbone chain `r1 .. rN`, each router with a spur of `hosts_per_spur` hosts
/// whose group is the router's name.
/// Counts: N routers, N·k hosts, N − 1 backbone + N·k access links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FishboneParams {
    /// Routers on the backbone (≥ 1). Default 4.
    pub routers: usize,
    /// Hosts on each backbone router (≥ 1). Default 2.
    pub hosts_per_spur: usize,
    /// Host links. Default 100Mbit, 1ms.
    pub access: LinkClass,
    /// Router-to-router links. Default 1Gbit, 10ms.
    pub backbone: LinkClass,
}

impl Default for FishboneParams {
    fn default() -> Self {
        FishboneParams {
            routers: 4,
            hosts_per_spur: 2,
            access: access(),
            backbone: backbone(),
        }
    }
}

/// A builder with the `access` and router-to-router (`core_name`) classes.
fn builder(name: String, access: &LinkClass, core_name: &str, core: &LinkClass) -> Builder {
    Builder::new(name, &[("access", access), (core_name, core)])
}

pub(super) fn chain(p: &ChainParams) -> Result<TopologyFile, GenError> {
    require("chain", p.routers >= 1, "needs at least 1 router")?;
    let mut b = builder(
        format!("chain-{}", p.routers),
        &p.access,
        "backbone",
        &p.backbone,
    );
    let routers = b.routers("r", p.routers);
    b.line(&routers, "backbone");
    b.hosts_on(&routers[0], 1, "access", None);
    b.hosts_on(&routers[p.routers - 1], 1, "access", None);
    Ok(b.finish())
}

pub(super) fn star(p: &StarParams) -> Result<TopologyFile, GenError> {
    require("star", p.hosts >= 1, "needs at least 1 host")?;
    let mut b = Builder::new(format!("star-{}", p.hosts), &[("access", &p.access)]);
    let hub = b.router("r1".to_string());
    b.hosts_on(&hub, p.hosts, "access", None);
    Ok(b.finish())
}

pub(super) fn ring(p: &RingParams) -> Result<TopologyFile, GenError> {
    // Two routers would need two parallel links to close the ring.
    require("ring", p.routers >= 3, "needs at least 3 routers")?;
    let mut b = builder(
        format!("ring-{}", p.routers),
        &p.access,
        "backbone",
        &p.backbone,
    );
    let routers = b.routers("r", p.routers);
    b.line(&routers, "backbone");
    b.link(&routers[p.routers - 1], &routers[0], "backbone");
    for r in &routers {
        b.hosts_on(r, p.hosts_per_router, "access", None);
    }
    Ok(b.finish())
}

pub(super) fn mesh(p: &MeshParams) -> Result<TopologyFile, GenError> {
    require("mesh", p.routers >= 1, "needs at least 1 router")?;
    let mut b = builder(
        format!("mesh-{}", p.routers),
        &p.access,
        "backbone",
        &p.backbone,
    );
    let routers = b.routers("r", p.routers);
    b.full_mesh(&routers, "backbone");
    for r in &routers {
        b.hosts_on(r, p.hosts_per_router, "access", None);
    }
    Ok(b.finish())
}

pub(super) fn dumbbell(p: &DumbbellParams) -> Result<TopologyFile, GenError> {
    require(
        "dumbbell",
        p.hosts_per_side >= 1,
        "needs at least 1 host per side",
    )?;
    let name = format!("dumbbell-{}", p.hosts_per_side);
    let mut b = builder(name, &p.access, "bottleneck", &p.bottleneck);
    let routers = b.routers("r", 2);
    b.line(&routers, "bottleneck");
    b.hosts_on(&routers[0], p.hosts_per_side, "access", Some("left"));
    b.hosts_on(&routers[1], p.hosts_per_side, "access", Some("right"));
    Ok(b.finish())
}

pub(super) fn fishbone(p: &FishboneParams) -> Result<TopologyFile, GenError> {
    require("fishbone", p.routers >= 1, "needs at least 1 router")?;
    require(
        "fishbone",
        p.hosts_per_spur >= 1,
        "needs at least 1 host per spur",
    )?;
    let name = format!("fishbone-{}x{}", p.routers, p.hosts_per_spur);
    let mut b = builder(name, &p.access, "backbone", &p.backbone);
    let routers = b.routers("r", p.routers);
    b.line(&routers, "backbone");
    for r in &routers {
        b.hosts_on(r, p.hosts_per_spur, "access", Some(r));
    }
    Ok(b.finish())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{assert_well_formed, class_counts, group};
    use super::super::{generate, GenKind};
    use super::*;
    use std::collections::BTreeMap;

    /// (hosts, routers, links by class) of a generated file, after checking it is well formed.
    fn counts(kind: GenKind) -> (usize, usize, BTreeMap<String, usize>) {
        let f = generate(&kind).unwrap();
        assert_well_formed(&f);
        let classes = class_counts(&f)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        (f.hosts.len(), f.routers.len(), classes)
    }

    fn by_class(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn default_counts_match_the_documented_formulas() {
        let cases = [
            (
                GenKind::Chain(ChainParams::default()),
                (2, 4, by_class(&[("access", 2), ("backbone", 3)])),
            ),
            (
                GenKind::Star(StarParams::default()),
                (8, 1, by_class(&[("access", 8)])),
            ),
            (
                GenKind::Ring(RingParams::default()),
                (6, 6, by_class(&[("access", 6), ("backbone", 6)])),
            ),
            (
                GenKind::Mesh(MeshParams::default()),
                (4, 4, by_class(&[("access", 4), ("backbone", 6)])),
            ),
            (
                GenKind::Dumbbell(DumbbellParams::default()),
                (8, 2, by_class(&[("access", 8), ("bottleneck", 1)])),
            ),
            (
                GenKind::Fishbone(FishboneParams::default()),
                (8, 4, by_class(&[("access", 8), ("backbone", 3)])),
            ),
        ];
        for (kind, want) in cases {
            assert_eq!(counts(kind.clone()), want, "{kind:?}");
        }
    }

    #[test]
    fn non_default_sizes_follow_the_formulas() {
        let mesh = MeshParams {
            routers: 7,
            hosts_per_router: 3,
            ..MeshParams::default()
        };
        let want = (21, 7, by_class(&[("access", 21), ("backbone", 21)]));
        assert_eq!(counts(GenKind::Mesh(mesh)), want);
        let chain = ChainParams {
            routers: 1,
            ..ChainParams::default()
        };
        assert_eq!(
            counts(GenKind::Chain(chain)),
            (2, 1, by_class(&[("access", 2)]))
        );
    }

    #[test]
    fn dumbbell_and_fishbone_hosts_carry_their_side() {
        let f = generate(&GenKind::Dumbbell(DumbbellParams::default())).unwrap();
        let groups: Vec<_> = f.hosts.iter().map(|h| group(h).unwrap()).collect();
        assert_eq!(groups[..4], ["left"; 4]);
        assert_eq!(groups[4..], ["right"; 4]);
        let f = generate(&GenKind::Fishbone(FishboneParams::default())).unwrap();
        assert_eq!(group(&f.hosts[0]), Some("r1"));
        assert_eq!(group(&f.hosts[7]), Some("r4"));
    }

    #[test]
    fn impossible_sizes_are_errors() {
        let ring = RingParams {
            routers: 2,
            ..RingParams::default()
        };
        let err = generate(&GenKind::Ring(ring)).unwrap_err();
        assert_eq!(err.to_string(), "gen ring: needs at least 3 routers");
        let star = StarParams {
            hosts: 0,
            ..StarParams::default()
        };
        assert!(generate(&GenKind::Star(star)).is_err());
    }
}
