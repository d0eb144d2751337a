//! The resolved topology: nodes, links and the pipes that carry each direction, with every
//! parameter parsed and validated. The engine, routing and partitioning read only this.

use netloom_link::{PipeConfig, PipeData, Variation};
use netloom_os::AddressPlan;
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// The most nodes (hosts and routers) a topology may have: what loads, routes and simulates in
/// a few GiB (a 1,000,000-host ring of 1,000 routers peaks at 3.8 GB in `netloom check` or
/// `sim`; docs/limits.md), with room for a tenth as many routers. The loader, the importers'
/// `--hosts-per-router` and the generators refuse more before building anything.
pub const MAX_NODES: usize = 1_100_000;
/// The most links a topology may have, for the same reason as `MAX_NODES` (each link is one or
/// two pipes with their own state).
pub const MAX_LINKS: usize = 1_500_000;

/// Index of a node in `Topology::nodes`.
pub type NodeId = u32;
/// Index of a link in `Topology::links`.
pub type LinkId = u32;
/// Index of a pipe in `Topology::pipes`.
pub type PipeId = u32;

/// Whether a node is a host or a router; both share one namespace of names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeKind {
    /// Declared in `hosts`: sends and receives traffic but never forwards. Each host has a
    /// column in the routing tables (by its position in `Topology::hosts`).
    Host,
    /// Declared in `routers`: forwards packets between its links.
    Router,
}

/// A host or router, at its `NodeId` in `Topology::nodes`.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The node's name from the file: non-empty, without spaces, unique among hosts and routers.
    /// A host's name is also its name in every host's /etc/hosts in a live run.
    pub name: String,
    /// Host or router, from the section that declared it.
    pub kind: NodeKind,
    /// Grouping label (for example the subtree a host belongs to); `None` if not given.
    pub group: Option<String>,
    /// Where the node is, if the file says (`lat`/`lon` or `x`/`y`): for drawing it; importers
    /// also derive delays from it.
    pub position: Option<Position>,
    /// A router that runs as a Linux network namespace in a live run (docs/live.md, "Kernel
    /// routers"): the engine delivers what reaches it instead of forwarding it. Always false for
    /// hosts; `sim` treats kernel routers as engine routers.
    pub kernel: bool,
    /// A kernel router's routing (`routing`, `asn`, ... over `[routing]`); `None` for hosts
    /// and engine routers.
    pub routing: Option<crate::KernelRouting>,
    /// A host's own IPv4 address (`ipv4`), checked against `Topology::addresses` and every
    /// other node's; `None` for routers and for hosts that take the plan's.
    pub ipv4: Option<Ipv4Addr>,
    /// A host's CPU limit (`cpu`) in CPUs, in (0, number of CPUs]; `None` for routers and
    /// unlimited hosts.
    pub cpu: Option<f64>,
}

/// A node's position, in the coordinates its file uses.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum Position {
    /// Degrees: latitude in [-90, 90], longitude in [-180, 180] (Topology Zoo's).
    Earth {
        /// Latitude, degrees north.
        lat: f64,
        /// Longitude, degrees east.
        lon: f64,
    },
    /// A point on a plane, in its own units (Inet's).
    Plane {
        /// Abscissa.
        x: f64,
        /// Ordinate.
        y: f64,
    },
}

/// Direction of travel over a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// From `Link::a` to `Link::b`.
    AtoB,
    /// From `Link::b` to `Link::a`.
    BtoA,
}

/// One link (a `[[link]]` entry) between two different nodes, carried by one pipe per
/// direction or by one shared pipe.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// The node its `a` key names; the a→b pipe (`ab`) carries traffic away from it.
    pub a: NodeId,
    /// The node its `b` key names; the loader refuses a link whose ends are the same node.
    pub b: NodeId,
    /// The class it was configured from, if any.
    pub class: Option<String>,
    /// Pipe carrying a→b.
    pub ab: PipeId,
    /// Pipe carrying b→a; equal to `ab` for a shared medium.
    pub ba: PipeId,
}

/// One pipe: the configuration of one direction of a link (or of a shared medium).
#[derive(Clone, Debug, PartialEq)]
pub struct PipeSpec {
    /// The link whose direction (or, for a shared medium, both) this pipe carries.
    pub link: LinkId,
    /// The direction this pipe carries; for a shared medium, `AtoB` (it carries both).
    pub direction: Direction,
    /// The pipe's parameters with every layer applied (built-in defaults, `[defaults]`, class,
    /// link, `a_to_b` or `b_to_a`), but no schedule or Markov state: a link in `plans`
    /// takes its states' configurations as it runs.
    pub config: PipeConfig,
    /// Data files the pipe uses (a measured MAC profile, a delivery trace); none by default.
    pub data: PipeData,
}

/// A link whose configuration changes over time: a schedule or a Markov graph over states.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkPlan {
    /// The link that changes; a state sets both its directions.
    pub link: LinkId,
    /// When the state changes: the link's `schedule` (states in time order) or `markov` graph
    /// (states in name order). Its states are indices into `states`.
    pub plan: Arc<Variation>,
    /// Each state's configuration of the a→b pipe and of the b→a pipe (the same pipe, and
    /// configuration, for a shared link).
    pub states: Vec<(PipeConfig, PipeConfig)>,
}

/// Which metric shortest-path routing minimizes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RoutingMetric {
    /// Sum of propagation delays (ties broken by hop count, then by node and pipe index).
    #[default]
    Delay,
    /// Number of hops (ties broken by node and pipe index).
    Hops,
}

/// A validated topology: nodes, links and pipes, indexed by `NodeId`, `LinkId` and `PipeId`.
/// `load_path`, `load_str` and `resolve` build it from a file; `new`, `add_node` and `add_link`
/// by hand.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Topology {
    /// The `[topology]` name, or the file name without its extension.
    pub name: String,
    /// The metric routing minimizes, from `[topology] routing` (default `Delay`).
    pub routing: RoutingMetric,
    /// Every node, indexed by `NodeId`, in the order added (the loader adds the hosts, then the
    /// routers, each in file order).
    pub nodes: Vec<Node>,
    /// Every link, indexed by `LinkId`, in file order.
    pub links: Vec<Link>,
    /// Every pipe, indexed by `PipeId`: for each link in order, its a→b pipe, then its b→a pipe
    /// unless it is shared.
    pub pipes: Vec<PipeSpec>,
    /// Node ids of the hosts, in node order. Routing tables are indexed by position here.
    pub hosts: Vec<NodeId>,
    /// Links that change over time, in link order.
    pub plans: Vec<LinkPlan>,
    /// Where hosts' and routers' addresses come from in a live run (`[topology] addresses`,
    /// default 198.18.0.0/15); `host_address` and `router_address` number them.
    pub addresses: AddressPlan,
    by_name: HashMap<String, NodeId>,
}

impl Topology {
    /// An empty topology; add nodes and links with `add_node` / `add_link`.
    pub fn new(name: impl Into<String>, routing: RoutingMetric) -> Topology {
        Topology {
            name: name.into(),
            routing,
            ..Default::default()
        }
    }

    /// Adds a node; the caller ensures names are unique (the loader reports duplicates).
    pub fn add_node(
        &mut self,
        name: impl Into<String>,
        kind: NodeKind,
        group: Option<String>,
    ) -> NodeId {
        let id = self.nodes.len() as NodeId;
        let name = name.into();
        self.by_name.insert(name.clone(), id);
        if kind == NodeKind::Host {
            self.hosts.push(id);
        }
        self.nodes.push(Node {
            name,
            kind,
            group,
            position: None,
            kernel: false,
            routing: None,
            ipv4: None,
            cpu: None,
        });
        id
    }

    /// Adds a duplex link (one pipe per direction) or, with `ba == None`, a shared medium whose
    /// single pipe `ab` carries both directions.
    pub fn add_link(
        &mut self,
        a: NodeId,
        b: NodeId,
        class: Option<String>,
        ab: PipeConfig,
        ba: Option<PipeConfig>,
    ) -> LinkId {
        let link = self.links.len() as LinkId;
        let ab_id = self.pipes.len() as PipeId;
        self.pipes.push(PipeSpec {
            link,
            direction: Direction::AtoB,
            config: ab,
            data: PipeData::default(),
        });
        let ba_id = match ba {
            Some(config) => {
                self.pipes.push(PipeSpec {
                    link,
                    direction: Direction::BtoA,
                    config,
                    data: PipeData::default(),
                });
                ab_id + 1
            }
            None => ab_id,
        };
        self.links.push(Link {
            a,
            b,
            class,
            ab: ab_id,
            ba: ba_id,
        });
        link
    }

    /// The id of the node called `name` (names are case-sensitive), or `None`.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    /// The node with this id; panics if there is none.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }

    /// Is this link a shared medium (one pipe for both directions)?
    pub fn is_shared(&self, link: LinkId) -> bool {
        let l = &self.links[link as usize];
        l.ab == l.ba
    }

    /// The node a packet reaches after crossing `pipe` when it entered from `from`.
    /// For a duplex pipe the direction decides; for a shared one, the other end from `from`.
    pub fn far_end(&self, pipe: PipeId, from: NodeId) -> NodeId {
        let spec = &self.pipes[pipe as usize];
        let l = &self.links[spec.link as usize];
        if l.ab == l.ba {
            if from == l.a {
                l.b
            } else {
                l.a
            }
        } else {
            match spec.direction {
                Direction::AtoB => l.b,
                Direction::BtoA => l.a,
            }
        }
    }

    /// The links joining nodes `a` and `b` (usually one), each with whether it is written `a`
    /// to `b` in the topology (false: `b` to `a`).
    pub fn links_between(&self, a: NodeId, b: NodeId) -> impl Iterator<Item = (LinkId, bool)> + '_ {
        self.links.iter().enumerate().filter_map(move |(i, l)| {
            if (l.a, l.b) == (a, b) {
                Some((i as LinkId, true))
            } else if (l.a, l.b) == (b, a) {
                Some((i as LinkId, false))
            } else {
                None
            }
        })
    }

    /// "a-b" naming of a link by its end nodes.
    pub fn link_label(&self, link: LinkId) -> String {
        let l = &self.links[link as usize];
        format!("{}-{}", self.node(l.a).name, self.node(l.b).name)
    }

    /// The addresses of host `i` (by position in `hosts`): its own `ipv4` or the plan's for its
    /// place, and the plan's IPv6.
    ///
    /// # Panics
    /// When `i` is not below the plan's capacity (a live run refuses such topologies first).
    pub fn host_address(&self, i: usize) -> (Ipv4Addr, Ipv6Addr) {
        let (v4, v6) = self.addresses.host(i);
        (self.node(self.hosts[i]).ipv4.unwrap_or(v4), v6)
    }

    /// The addresses of router `j` (in node order among the routers): the plan's.
    pub fn router_address(&self, j: usize) -> (Ipv4Addr, Ipv6Addr) {
        self.addresses.router(j)
    }

    /// Outgoing adjacency: for each node, the (pipe, neighbour) pairs leaving it, in link order.
    pub fn adjacency(&self) -> Vec<Vec<(PipeId, NodeId)>> {
        let mut adj = vec![Vec::new(); self.nodes.len()];
        for l in &self.links {
            adj[l.a as usize].push((l.ab, l.b));
            adj[l.b as usize].push((l.ba, l.a));
        }
        adj
    }
}
