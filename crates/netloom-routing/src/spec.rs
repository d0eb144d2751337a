//! What the crate is told about a router: its namespace, addresses, interfaces and the routing
//! it runs, and the rules that turn a link into an OSPF cost.

use crate::RoutingError;
use netloom_time::Duration;
use netloom_topo::{KernelRouting, RoutingMetric, RoutingProtocol};
use std::net::{Ipv4Addr, Ipv6Addr};

/// The largest OSPF interface cost (a 16-bit field in both OSPFv2 and OSPFv3).
pub const MAX_OSPF_COST: u16 = u16::MAX;
/// A delay of this much is one unit of OSPF cost under `RoutingMetric::Delay`.
const COST_UNIT_NS: u64 = 100_000;

/// What is at the other end of an interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Neighbour {
    /// A host, or a router that runs no protocol with this one: no session on the link; the
    /// address at the far end reaches the protocol as a connected route.
    Passive,
    /// A router whose daemons speak with this one's; `asn` is its AS number, if it has one.
    Router {
        /// The router's AS number.
        asn: Option<u32>,
    },
}

/// One interface of a router: a point-to-point link, unnumbered (the router's own address on
/// every interface, the far end's as its peer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    /// The device's name in the router's namespace.
    pub device: String,
    /// The name of the node at the far end (for descriptions and messages).
    pub peer: String,
    /// What the far end is.
    pub neighbour: Neighbour,
    /// The far end's IPv4 address.
    pub peer_ipv4: Ipv4Addr,
    /// The far end's IPv6 address.
    pub peer_ipv6: Ipv6Addr,
    /// The OSPF cost of sending over it (`ospf_cost`).
    pub cost: u16,
}

/// A kernel router, as its daemons need to know it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouterSpec {
    /// The router's name in the topology.
    pub name: String,
    /// Its network namespace (`/run/netns/<namespace>`).
    pub namespace: String,
    /// Its IPv4 address (on `lo` and every interface), also its router ID.
    pub ipv4: Ipv4Addr,
    /// Its IPv6 address (on `lo` and every interface).
    pub ipv6: Ipv6Addr,
    /// Its interfaces, in the topology's order of links.
    pub interfaces: Vec<Interface>,
    /// What it runs, as the topology resolved it.
    pub routing: KernelRouting,
}

/// What a router does on one interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Nothing: the far end's prefix is redistributed as a connected route.
    Passive,
    /// OSPFv2 and OSPFv3 adjacencies.
    Ospf,
    /// An eBGP session to the far end's AS.
    Ebgp(u32),
}

impl RouterSpec {
    /// What the router runs on `interface`. A link to a router of another AS is eBGP when both
    /// have an AS number; one to a router of the same AS (or where neither has one) is OSPF
    /// under `RoutingProtocol::Ospf` and an error under `RoutingProtocol::Bgp` (no iBGP mesh is generated).
    pub(crate) fn role(&self, interface: &Interface) -> Result<Role, RoutingError> {
        let Neighbour::Router { asn: peer_asn } = interface.neighbour else {
            return Ok(Role::Passive);
        };
        match (self.routing.protocol, self.routing.asn, peer_asn) {
            (RoutingProtocol::Static, _, _) => Ok(Role::Passive),
            (_, Some(mine), Some(theirs)) if mine != theirs => Ok(Role::Ebgp(theirs)),
            (RoutingProtocol::Ospf, _, _) => Ok(Role::Ospf),
            (RoutingProtocol::Bgp, mine, theirs) => Err(RoutingError::Spec {
                router: self.name.clone(),
                reason: format!(
                    "routing = \"bgp\" on its link to {} needs both routers in different ASes (it is in {}, {} in {}); give them different asn, or use routing = \"ospf\" with asn for OSPF inside an AS and eBGP between ASes",
                    interface.peer,
                    asn_text(mine),
                    interface.peer,
                    asn_text(theirs)
                ),
            }),
        }
    }

    /// Every interface with its role, or the first link that cannot be configured.
    pub(crate) fn roles(&self) -> Result<Vec<(&Interface, Role)>, RoutingError> {
        self.interfaces
            .iter()
            .map(|i| Ok((i, self.role(i)?)))
            .collect()
    }

    /// The router's AS number, which BGP needs.
    pub(crate) fn asn(&self) -> Result<u32, RoutingError> {
        self.routing.asn.ok_or_else(|| RoutingError::Spec {
            router: self.name.clone(),
            reason: "BGP needs the router's AS number: set asn = 65001 on it or for its group"
                .into(),
        })
    }
}

fn asn_text(asn: Option<u32>) -> String {
    asn.map_or_else(|| "no AS".to_string(), |a| format!("AS {a}"))
}

/// The OSPF cost of a link whose propagation delay is `delay`: under `RoutingMetric::Hops`, 1
/// per link, as netloom's own routes count; under `RoutingMetric::Delay`, the delay in units of
/// 100 µs, at least 1 and at most 65535 (6.5 s), so OSPF's shortest paths are netloom's
/// static ones wherever delays differ by 100 µs or more.
pub fn ospf_cost(metric: RoutingMetric, delay: Duration) -> u16 {
    match metric {
        RoutingMetric::Hops => 1,
        RoutingMetric::Delay => {
            (delay.as_nanos() / COST_UNIT_NS).clamp(1, u64::from(MAX_OSPF_COST)) as u16
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_follow_the_delay_in_tenths_of_a_millisecond() {
        let ms = Duration::from_millis;
        assert_eq!(ospf_cost(RoutingMetric::Delay, ms(5)), 50);
        assert_eq!(ospf_cost(RoutingMetric::Delay, Duration::ZERO), 1);
        assert_eq!(
            ospf_cost(RoutingMetric::Delay, Duration::from_micros(150)),
            1
        );
        assert_eq!(ospf_cost(RoutingMetric::Delay, ms(10_000)), MAX_OSPF_COST);
        assert_eq!(ospf_cost(RoutingMetric::Hops, ms(5)), 1);
    }

    #[test]
    fn links_between_ases_are_ebgp_and_inside_one_ospf() {
        let mut spec = RouterSpec {
            name: "b1".into(),
            namespace: "nl-x-b1".into(),
            ipv4: Ipv4Addr::new(198, 19, 255, 254),
            ipv6: "fd6e:6c00::ff00:0:0:1".parse().unwrap(),
            interfaces: vec![],
            routing: KernelRouting {
                protocol: RoutingProtocol::Ospf,
                asn: Some(65001),
                ..KernelRouting::default()
            },
        };
        let link = |asn| Interface {
            device: "t".into(),
            peer: "p".into(),
            neighbour: Neighbour::Router { asn },
            peer_ipv4: Ipv4Addr::LOCALHOST,
            peer_ipv6: Ipv6Addr::LOCALHOST,
            cost: 1,
        };
        assert_eq!(spec.role(&link(Some(65002))).unwrap(), Role::Ebgp(65002));
        assert_eq!(spec.role(&link(Some(65001))).unwrap(), Role::Ospf);
        assert_eq!(spec.role(&link(None)).unwrap(), Role::Ospf);
        spec.routing.protocol = RoutingProtocol::Bgp;
        assert_eq!(spec.role(&link(Some(65002))).unwrap(), Role::Ebgp(65002));
        let err = spec.role(&link(Some(65001))).unwrap_err().to_string();
        assert!(err.contains("b1") && err.contains("AS 65001"), "{err}");
        spec.routing.protocol = RoutingProtocol::Static;
        assert_eq!(spec.role(&link(Some(65002))).unwrap(), Role::Passive);
    }
}

/// Whole seconds of an OSPF timer (the topology keeps them whole).
pub(crate) fn seconds(d: Duration) -> u64 {
    d.as_nanos() / 1_000_000_000
}

/// Routers for the generators' tests.
#[cfg(test)]
pub(crate) mod sample {
    use super::*;

    /// Router `j` of the plan's numbering, running `protocol` in `asn`, with one interface per
    /// `(peer index, neighbour, cost)`: device `t<k>`, peer named `n<peer index>`.
    pub(crate) fn router(
        j: u8,
        protocol: RoutingProtocol,
        asn: Option<u32>,
        links: &[(u8, Neighbour, u16)],
    ) -> RouterSpec {
        let v4 = |j: u8| Ipv4Addr::new(198, 19, 255, 254 - j);
        let v6 = |j: u8| Ipv6Addr::new(0xfd6e, 0x6c00, 0, 0, 0xff00, 0, 0, u16::from(j) + 1);
        RouterSpec {
            name: format!("r{j}"),
            namespace: format!("nl-test-r{j}"),
            ipv4: v4(j),
            ipv6: v6(j),
            interfaces: links
                .iter()
                .enumerate()
                .map(|(k, (peer, neighbour, cost))| Interface {
                    device: format!("t{k}"),
                    peer: format!("n{peer}"),
                    neighbour: neighbour.clone(),
                    peer_ipv4: v4(*peer),
                    peer_ipv6: v6(*peer),
                    cost: *cost,
                })
                .collect(),
            routing: KernelRouting {
                protocol,
                asn,
                hello: Duration::from_secs(1),
                dead: Duration::from_secs(4),
                ..KernelRouting::default()
            },
        }
    }
}
