//! What the crate is told about a router: its namespace, addresses, interfaces and the routing
//! it runs, and the rules that turn a link into an OSPF cost.

use crate::RoutingError;
use netloom_time::Duration;
use netloom_topo::RoutingMetric;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

/// The largest AS number: 2^32 − 2 (4294967295 is reserved, RFC 7300).
pub const MAX_ASN: u32 = u32::MAX - 1;
/// The largest OSPF interface cost (a 16-bit field in both OSPFv2 and OSPFv3).
pub const MAX_OSPF_COST: u16 = u16::MAX;
/// A delay of this much is one unit of OSPF cost under `RoutingMetric::Delay`.
const COST_UNIT_NS: u64 = 100_000;

/// How a kernel router's routes come about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// netloom computes the routes and installs them; no daemon runs.
    #[default]
    Static,
    /// OSPFv2 and OSPFv3 on every link to a router of the same AS; eBGP on links to routers of
    /// another AS when both have one.
    Ospf,
    /// eBGP on every link to another router, each of which must be in another AS.
    Bgp,
}

impl Protocol {
    /// The words the topology file uses, in order.
    pub const NAMES: [&'static str; 3] = ["static", "ospf", "bgp"];

    /// The protocol a topology word names.
    pub fn from_name(name: &str) -> Option<Protocol> {
        match name {
            "static" => Some(Protocol::Static),
            "ospf" => Some(Protocol::Ospf),
            "bgp" => Some(Protocol::Bgp),
            _ => None,
        }
    }
}

/// Which routing suite runs the protocol.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Daemon {
    /// FRRouting (Debian's `frr`): zebra, staticd, ospfd, ospf6d, bgpd.
    #[default]
    Frr,
    /// BIRD 2 (Debian's `bird2`): OSPFv2 and OSPFv3 only.
    Bird,
}

impl Daemon {
    /// The words the topology file uses, in order.
    pub const NAMES: [&'static str; 2] = ["frr", "bird"];

    /// The daemon a topology word names.
    pub fn from_name(name: &str) -> Option<Daemon> {
        match name {
            "frr" => Some(Daemon::Frr),
            "bird" => Some(Daemon::Bird),
            _ => None,
        }
    }

    /// The Debian package that installs it.
    pub fn package(self) -> &'static str {
        match self {
            Daemon::Frr => "frr",
            Daemon::Bird => "bird2",
        }
    }
}

/// OSPF's hello and dead intervals, whole seconds as both OSPF versions carry them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OspfTimers {
    hello: u16,
    dead: u16,
}

impl Default for OspfTimers {
    /// FRR's and BIRD's defaults: a hello every 10 s, a neighbour dead after 40 s of silence.
    fn default() -> Self {
        OspfTimers {
            hello: 10,
            dead: 40,
        }
    }
}

impl OspfTimers {
    /// Timers of `hello` and `dead`: whole seconds from 1 s to 65535 s, the dead interval longer
    /// than the hello interval (else a neighbour dies between two hellos).
    pub fn new(hello: Duration, dead: Duration) -> Result<OspfTimers, String> {
        let seconds = |what: &str, d: Duration| {
            let ns = d.as_nanos();
            if ns % 1_000_000_000 != 0 || ns == 0 || ns / 1_000_000_000 > u64::from(u16::MAX) {
                return Err(format!(
                    "{what} = {d} is not a whole number of seconds from 1s to 65535s (OSPF carries seconds)"
                ));
            }
            Ok((ns / 1_000_000_000) as u16)
        };
        let (hello_s, dead_s) = (seconds("hello", hello)?, seconds("dead", dead)?);
        if dead_s <= hello_s {
            return Err(format!(
                "dead = {dead} must be longer than hello = {hello} (a neighbour would die between two hellos; 4 hellos is usual)"
            ));
        }
        Ok(OspfTimers {
            hello: hello_s,
            dead: dead_s,
        })
    }

    /// Seconds between hellos.
    pub fn hello_seconds(self) -> u16 {
        self.hello
    }

    /// Seconds of silence after which a neighbour is declared down.
    pub fn dead_seconds(self) -> u16 {
        self.dead
    }
}

/// The routing a router runs, with every topology layer applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Routing {
    /// The protocol (`routing`).
    pub protocol: Protocol,
    /// The suite that runs it (`daemon`).
    pub daemon: Daemon,
    /// The router's AS number (`asn`), needed for BGP.
    pub asn: Option<u32>,
    /// The OSPF area of all its OSPF links (`area`, default 0.0.0.0).
    pub area: Ipv4Addr,
    /// OSPF hello and dead intervals (`hello`, `dead`).
    pub timers: OspfTimers,
    /// The user's own configuration file (`config`), used instead of a generated one.
    pub config: Option<PathBuf>,
}

impl Default for Routing {
    /// Static routes; for a protocol, FRR in area 0.0.0.0 with FRR's timers.
    fn default() -> Self {
        Routing {
            protocol: Protocol::Static,
            daemon: Daemon::Frr,
            asn: None,
            area: Ipv4Addr::UNSPECIFIED,
            timers: OspfTimers::default(),
            config: None,
        }
    }
}

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
    /// What it runs.
    pub routing: Routing,
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
    /// under `Protocol::Ospf` and an error under `Protocol::Bgp` (no iBGP mesh is generated).
    pub(crate) fn role(&self, interface: &Interface) -> Result<Role, RoutingError> {
        let Neighbour::Router { asn: peer_asn } = interface.neighbour else {
            return Ok(Role::Passive);
        };
        match (self.routing.protocol, self.routing.asn, peer_asn) {
            (Protocol::Static, _, _) => Ok(Role::Passive),
            (_, Some(mine), Some(theirs)) if mine != theirs => Ok(Role::Ebgp(theirs)),
            (Protocol::Ospf, _, _) => Ok(Role::Ospf),
            (Protocol::Bgp, mine, theirs) => Err(RoutingError::Spec {
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
    fn timers_are_whole_seconds_with_dead_longer_than_hello() {
        let s = Duration::from_secs;
        let fast = OspfTimers::new(s(1), s(4)).unwrap();
        assert_eq!((fast.hello_seconds(), fast.dead_seconds()), (1, 4));
        assert!(OspfTimers::new(Duration::from_millis(500), s(4))
            .unwrap_err()
            .contains("whole number of seconds"));
        assert!(OspfTimers::new(s(4), s(4))
            .unwrap_err()
            .contains("longer than hello"));
        assert!(OspfTimers::new(s(1), s(70_000)).is_err());
    }

    #[test]
    fn links_between_ases_are_ebgp_and_inside_one_ospf() {
        let mut spec = RouterSpec {
            name: "b1".into(),
            namespace: "nl-x-b1".into(),
            ipv4: Ipv4Addr::new(198, 19, 255, 254),
            ipv6: "fd6e:6c00::ff00:0:0:1".parse().unwrap(),
            interfaces: vec![],
            routing: Routing {
                protocol: Protocol::Ospf,
                asn: Some(65001),
                ..Routing::default()
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
        spec.routing.protocol = Protocol::Bgp;
        assert_eq!(spec.role(&link(Some(65002))).unwrap(), Role::Ebgp(65002));
        let err = spec.role(&link(Some(65001))).unwrap_err().to_string();
        assert!(err.contains("b1") && err.contains("AS 65001"), "{err}");
        spec.routing.protocol = Protocol::Static;
        assert_eq!(spec.role(&link(Some(65002))).unwrap(), Role::Passive);
    }
}

/// Routers for the generators' tests.
#[cfg(test)]
pub(crate) mod sample {
    use super::*;

    /// Router `j` of the plan's numbering, running `protocol` in `asn`, with one interface per
    /// `(peer index, neighbour, cost)`: device `t<k>`, peer named `n<peer index>`.
    pub(crate) fn router(
        j: u8,
        protocol: Protocol,
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
            routing: Routing {
                protocol,
                asn,
                timers: OspfTimers::new(Duration::from_secs(1), Duration::from_secs(4)).unwrap(),
                ..Routing::default()
            },
        }
    }
}
