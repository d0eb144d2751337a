//! Kernel routers in a live run (docs/live.md, "Kernel routers"). The engine sees each link end
//! at a kernel router as a port: a node that sends and receives like a host, whose device is
//! the router's TUN for that link, so what reaches a kernel router is delivered to its kernel,
//! which forwards it. Here: the engine's topology with its ports, the routers' specs with
//! static routes, and where a packet entering the engine (from a host, a port or an engine
//! router) must be sent, since the engine's routes end at the first kernel router on a path.

use netloom_engine::Engine;
use netloom_os::{KernelInterface, KernelRouterSpec, StaticRoute};
use netloom_topo::{LinkId, NodeId, NodeKind, RoutingMetric, Topology};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::IpAddr;
use std::sync::Arc;

/// One link end at a kernel router.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Port {
    /// The router, in the topology as loaded.
    pub router: NodeId,
    /// The link.
    pub link: LinkId,
    /// The port's node in the engine's topology.
    pub node: NodeId,
}

/// The kernel routers of a topology and the engine's view of them.
#[derive(Debug)]
pub(crate) struct KernelRouters {
    /// The topology as loaded, with kernel routers as routers.
    pub original: Arc<Topology>,
    /// The engine's topology: the original with every link end at a kernel router moved to a
    /// port of its own (a host named as its router, so the engine's pipes are named as the
    /// file's; added after the real hosts), node, link and pipe numbers otherwise unchanged.
    /// Only node numbers identify nodes in it.
    pub engine: Topology,
    /// The ports in the engine's host order: port k is engine host `hosts + k`.
    pub ports: Vec<Port>,
    /// Each port's device name, as `ports`.
    pub devices: Vec<String>,
    /// The port of each (router, link).
    port_of: HashMap<(NodeId, LinkId), NodeId>,
}

impl KernelRouters {
    /// `None` when `topo` has no kernel router: the engine runs it as it is.
    pub fn new(topo: &Topology) -> Option<KernelRouters> {
        if !topo.nodes.iter().any(|n| n.kernel) {
            return None;
        }
        let mut engine = topo.clone();
        let (mut ports, mut devices, mut port_of) = (Vec::new(), Vec::new(), HashMap::new());
        for (router, node) in topo.nodes.iter().enumerate().filter(|(_, n)| n.kernel) {
            let router = router as NodeId;
            let links: Vec<LinkId> = (0..topo.links.len() as LinkId)
                .filter(|&l| {
                    let link = &topo.links[l as usize];
                    link.a == router || link.b == router
                })
                .collect();
            let peers = links.iter().map(|&l| {
                let link = &topo.links[l as usize];
                let peer = if link.a == router { link.b } else { link.a };
                topo.node(peer).name.as_str()
            });
            for (link, device) in links.iter().zip(netloom_os::device_names(peers)) {
                let port = engine.add_node(node.name.clone(), NodeKind::Host, None);
                let l = &mut engine.links[*link as usize];
                if l.a == router {
                    l.a = port;
                } else {
                    l.b = port;
                }
                ports.push(Port {
                    router,
                    link: *link,
                    node: port,
                });
                port_of.insert((router, *link), port);
                devices.push(device);
            }
        }
        Some(KernelRouters {
            original: Arc::new(topo.clone()),
            engine,
            ports,
            devices,
            port_of,
        })
    }

    /// The number of real hosts: the engine's first hosts, before the ports.
    pub fn hosts(&self) -> usize {
        self.original.hosts.len()
    }

    /// Each kernel router's spec in experiment `experiment`, in node order, with static routes
    /// to every other host and router over the links up in the topology's configuration.
    pub fn specs(&self, experiment: &str) -> Vec<KernelRouterSpec> {
        let topo = &*self.original;
        let addresses = Addresses::of(topo);
        let up = |pipe: u32| topo.pipes[pipe as usize].config.up;
        let mut specs = Vec::new();
        let mut k = 0;
        for (r, node) in topo.nodes.iter().enumerate().filter(|(_, n)| n.kernel) {
            let r = r as NodeId;
            let (ipv4, ipv6) = addresses.of_node(r);
            let mut interfaces = Vec::new();
            let mut index_of = HashMap::new();
            while k < self.ports.len() && self.ports[k].router == r {
                let port = self.ports[k];
                let l = &topo.links[port.link as usize];
                let peer = if l.a == r { l.b } else { l.a };
                let out = &topo.pipes[if l.a == r { l.ab } else { l.ba } as usize].config;
                let (peer_ipv4, peer_ipv6) = addresses.of_node(peer);
                index_of.insert(port.link, interfaces.len());
                interfaces.push(KernelInterface {
                    device: self.devices[k].clone(),
                    peer: topo.node(peer).name.clone(),
                    peer_is_host: topo.node(peer).kind == NodeKind::Host,
                    peer_ipv4,
                    peer_ipv6,
                    link_local: netloom_os::link_local(ipv6),
                    mtu: out.mtu,
                    delay_ns: out.delay.as_nanos(),
                    bandwidth_bps: out.rate.as_bps(),
                });
                k += 1;
            }
            let tree = shortest_paths(topo, &up, r);
            let mut routes = Vec::new();
            for dst in (0..topo.nodes.len() as NodeId).filter(|&d| d != r) {
                let Some(first) = first_link(&tree, r, dst) else {
                    continue;
                };
                let interface = index_of[&first];
                let (v4, v6) = addresses.of_node(dst);
                routes.push(StaticRoute {
                    destination: v4.into(),
                    interface,
                });
                routes.push(StaticRoute {
                    destination: v6.into(),
                    interface,
                });
            }
            specs.push(KernelRouterSpec {
                name: node.name.clone(),
                namespace: netloom_os::namespace_name(experiment, &node.name),
                ipv4,
                ipv6,
                interfaces,
                routes,
            });
        }
        specs
    }
}

/// The addresses of every node of a topology: host i has `Topology::host_address(i)`, router j
/// (in node order among the routers, kernel or not) `Topology::router_address(j)`.
struct Addresses {
    by_node: Vec<(std::net::Ipv4Addr, std::net::Ipv6Addr)>,
}

impl Addresses {
    fn of(topo: &Topology) -> Addresses {
        let (mut hosts, mut routers) = (0, 0);
        let by_node = topo
            .nodes
            .iter()
            .map(|n| match n.kind {
                NodeKind::Host => {
                    hosts += 1;
                    topo.host_address(hosts - 1)
                }
                NodeKind::Router => {
                    routers += 1;
                    topo.router_address(routers - 1)
                }
            })
            .collect();
        Addresses { by_node }
    }

    fn of_node(&self, node: NodeId) -> (std::net::Ipv4Addr, std::net::Ipv6Addr) {
        self.by_node[node as usize]
    }
}

/// The shortest-path tree from `from` over the topology as loaded, by its routing metric
/// (delay, then hops; or hops), over the pipes `up`: each reached node's predecessor and the
/// link from it. Hosts other than `from` do not forward; routers, kernel or not, do.
fn shortest_paths(
    topo: &Topology,
    up: &dyn Fn(u32) -> bool,
    from: NodeId,
) -> Vec<Option<(NodeId, LinkId)>> {
    let adjacency = topo.adjacency();
    let n = topo.nodes.len();
    let mut best = vec![None; n];
    let mut tree = vec![None; n];
    let mut heap = BinaryHeap::new();
    best[from as usize] = Some((0u64, 0u32));
    heap.push(Reverse(((0u64, 0u32), from)));
    while let Some(Reverse((cost, at))) = heap.pop() {
        if best[at as usize] != Some(cost) {
            continue;
        }
        if at != from && topo.node(at).kind == NodeKind::Host {
            continue;
        }
        for &(pipe, next) in &adjacency[at as usize] {
            if !up(pipe) {
                continue;
            }
            let weight = match topo.routing {
                RoutingMetric::Delay => topo.pipes[pipe as usize].config.delay.as_nanos(),
                RoutingMetric::Hops => 0,
            };
            let through = (cost.0 + weight, cost.1 + 1);
            if best[next as usize].is_none_or(|b| through < b) {
                best[next as usize] = Some(through);
                tree[next as usize] = Some((at, topo.pipes[pipe as usize].link));
                heap.push(Reverse((through, next)));
            }
        }
    }
    tree
}

/// The path from the tree's root `from` to `to`, as (node reached, link crossed) in order;
/// `None` when `to` is not reached.
fn path(
    tree: &[Option<(NodeId, LinkId)>],
    from: NodeId,
    to: NodeId,
) -> Option<Vec<(NodeId, LinkId)>> {
    let mut hops = Vec::new();
    let mut at = to;
    while at != from {
        let (prev, link) = tree[at as usize]?;
        hops.push((at, link));
        at = prev;
    }
    hops.reverse();
    Some(hops)
}

/// The first link on the path from the tree's root `from` to `to`.
fn first_link(tree: &[Option<(NodeId, LinkId)>], from: NodeId, to: NodeId) -> Option<LinkId> {
    path(tree, from, to)?.first().map(|&(_, link)| link)
}

/// Where packets entering the engine go: for each packet, the engine host (a real host, or a
/// port) its route must end at. One per driver, with what it found so far (forgotten when a
/// link goes down or up: `Engine::reroutes`).
pub(crate) struct Entries {
    routers: Arc<KernelRouters>,
    /// The node in the topology as loaded of each host and router address.
    by_addr: HashMap<IpAddr, NodeId>,
    /// The end found for (engine node a packet is at, node it is for).
    found: HashMap<(NodeId, NodeId), Option<NodeId>>,
    /// The engine's `reroutes` when `found` was begun.
    reroutes: u64,
}

impl Entries {
    pub fn new(routers: Arc<KernelRouters>) -> Entries {
        let topo = &*routers.original;
        let addresses = Addresses::of(topo);
        let by_addr = (0..topo.nodes.len() as NodeId)
            .flat_map(|n| {
                let (v4, v6) = addresses.of_node(n);
                [(IpAddr::from(v4), n), (IpAddr::from(v6), n)]
            })
            .collect();
        Entries {
            routers,
            by_addr,
            found: HashMap::new(),
            reroutes: 0,
        }
    }

    /// Whether engine host `host` is a port of a kernel router (which forwards packets of any
    /// source).
    pub fn is_port(&self, host: u32) -> bool {
        host as usize >= self.routers.hosts()
    }

    /// The engine host a packet that engine host `host` sends to `addr` goes to: from a port,
    /// the link's other end whatever the address (multicast too) when that is a host or a
    /// port, else the end of the path beyond the engine router there; from a real host, the
    /// first host or kernel router on its path to `addr`, or for an address the plan does not
    /// name the kernel router it hangs off. `None` when nothing leads there.
    pub fn end_for(&mut self, engine: &Engine, host: u32, addr: IpAddr) -> Option<u32> {
        let topo = engine.topology();
        let node = topo.hosts[host as usize];
        let start = match self.is_port(host) {
            true => {
                let port = self.routers.ports[host as usize - self.routers.hosts()];
                let link = &topo.links[port.link as usize];
                let peer = if link.a == node { link.b } else { link.a };
                if topo.node(peer).kind == NodeKind::Host {
                    return engine.routes().host_index(peer);
                }
                peer
            }
            false => node,
        };
        let Some(&target) = self.by_addr.get(&addr) else {
            // An address the plan does not name (multicast, one no node has) from a host that
            // hangs off a kernel router goes to it, whose kernel decides, as a gateway would.
            return match self.is_port(host) {
                true => None,
                false => self.gateway(engine, node),
            };
        };
        let end = self.toward(engine, start, target)?;
        engine.routes().host_index(end)
    }

    /// The engine host of the first port at the end of a link up from engine node `host`.
    fn gateway(&self, engine: &Engine, host: NodeId) -> Option<u32> {
        let topo = engine.topology();
        let ports = self.routers.original.nodes.len() as NodeId..;
        topo.links
            .iter()
            .enumerate()
            .filter(|&(l, _)| engine.link_is_up(l as LinkId))
            .find_map(|(_, l)| {
                let far = match (l.a == host, l.b == host) {
                    (true, _) => l.b,
                    (_, true) => l.a,
                    _ => return None,
                };
                ports.contains(&far).then_some(far)
            })
            .and_then(|port| engine.routes().host_index(port))
    }

    /// The engine host at the end of the engine's part of the path from engine node `from` (a
    /// real host or an engine router) to the node `target` of the topology as loaded: the first
    /// host or kernel router on it (for a kernel router, its port on the link the path arrives
    /// by). `None` when no path leads there or it ends at an engine router.
    pub fn toward(&mut self, engine: &Engine, from: NodeId, target: NodeId) -> Option<NodeId> {
        if engine.reroutes() != self.reroutes {
            self.found.clear();
            self.reroutes = engine.reroutes();
        }
        if let Some(&end) = self.found.get(&(from, target)) {
            return end;
        }
        let topo = &*self.routers.original;
        let up = |pipe: u32| engine.pipe(pipe).is_up();
        let tree = shortest_paths(topo, &up, from);
        let end = path(&tree, from, target).and_then(|hops| {
            hops.into_iter().find_map(|(at, link)| match topo.node(at) {
                n if n.kind == NodeKind::Host => Some(at),
                n if n.kernel => self.routers.port_of.get(&(at, link)).copied(),
                _ => None,
            })
        });
        self.found.insert((from, target), end);
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netloom_link::PipeConfig;
    use netloom_time::{Duration, Rate};

    /// h1 - k1 - e - k2 - h2, plus a slow detour e - k3 - k2; k1, k2 and k3 kernel routers.
    fn mixed() -> Topology {
        let mut t = Topology::new("mixed", RoutingMetric::Delay);
        let ms = |d| PipeConfig::new(Rate::bps(10_000_000), Duration::from_millis(d));
        let h1 = t.add_node("h1", NodeKind::Host, None);
        let h2 = t.add_node("h2", NodeKind::Host, None);
        let k1 = t.add_node("k1", NodeKind::Router, None);
        let e = t.add_node("e", NodeKind::Router, None);
        let k2 = t.add_node("k2", NodeKind::Router, None);
        let k3 = t.add_node("k3", NodeKind::Router, None);
        for k in [k1, k2, k3] {
            t.nodes[k as usize].kernel = true;
        }
        t.add_link(h1, k1, None, ms(1), Some(ms(1)));
        t.add_link(k1, e, None, ms(1), Some(ms(1)));
        t.add_link(e, k2, None, ms(1), Some(ms(1)));
        t.add_link(k2, h2, None, ms(1), Some(ms(1)));
        t.add_link(e, k3, None, ms(5), Some(ms(5)));
        t.add_link(k3, k2, None, ms(5), Some(ms(5)));
        t
    }

    #[test]
    fn every_link_end_at_a_kernel_router_becomes_a_port_after_the_hosts() {
        assert!(KernelRouters::new(&Topology::default()).is_none());
        let k = KernelRouters::new(&mixed()).unwrap();
        let names: Vec<(&str, &str)> = k
            .ports
            .iter()
            .zip(&k.devices)
            .map(|(p, d)| (k.original.node(p.router).name.as_str(), d.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("k1", "h1"),
                ("k1", "e"),
                ("k2", "e"),
                ("k2", "h2"),
                ("k2", "k3"),
                ("k3", "e"),
                ("k3", "k2")
            ]
        );
        assert_eq!(
            k.engine.hosts[2..],
            k.ports.iter().map(|p| p.node).collect::<Vec<_>>()
        );
        // The link h1-k1 now ends at k1's port, named as k1; the original keeps k1.
        let l = &k.engine.links[0];
        assert_eq!(
            (l.b, k.engine.node(l.b).kind),
            (k.ports[0].node, NodeKind::Host)
        );
        assert_eq!(k.engine.link_label(0), k.original.link_label(0));
        assert_eq!(k.engine.links.len(), k.original.links.len());
    }

    #[test]
    fn static_routes_follow_the_shortest_paths() {
        let k = KernelRouters::new(&mixed()).unwrap();
        let specs = k.specs("lab");
        let k2 = &specs[1];
        assert_eq!(
            (k2.name.as_str(), k2.namespace.as_str()),
            ("k2", "nl-lab-k2")
        );
        let devices: Vec<&str> = k2.interfaces.iter().map(|i| i.device.as_str()).collect();
        assert_eq!(devices, ["e", "h2", "k3"]);
        let via = |addr: IpAddr| {
            let r = k2.routes.iter().find(|r| r.destination == addr).unwrap();
            k2.interfaces[r.interface].device.as_str()
        };
        // h1 over the 1 ms way through e, not the 10 ms one through k3; k3 directly.
        assert_eq!(via(netloom_os::AddressPlan::DEFAULT.host(0).0.into()), "e");
        assert_eq!(via(netloom_os::AddressPlan::DEFAULT.host(1).1.into()), "h2");
        assert_eq!(
            via(netloom_os::AddressPlan::DEFAULT.router(3).0.into()),
            "k3"
        );
        assert!(!k2
            .routes
            .iter()
            .any(|r| r.destination == IpAddr::from(k2.ipv4)));
        assert_eq!(
            k2.interfaces[1].peer_ipv4,
            netloom_os::AddressPlan::DEFAULT.host(1).0
        );
        assert!(k2.interfaces[1].peer_is_host && !k2.interfaces[0].peer_is_host);
    }

    #[test]
    fn kernel_routers_take_the_topology_s_addresses() {
        let mut t = mixed();
        t.addresses = "10.0.0.0/8".parse().unwrap();
        t.nodes[1].ipv4 = Some("10.0.0.100".parse().unwrap());
        let specs = KernelRouters::new(&t).unwrap().specs("lab");
        let k2 = &specs[1];
        // k2 is the third router (k1, e, k2), from the top of 10.0.0.0/8 down.
        assert_eq!(k2.ipv4.to_string(), "10.255.255.252");
        assert_eq!(k2.interfaces[1].peer_ipv4.to_string(), "10.0.0.100");
        let h1: IpAddr = "10.0.0.1".parse().unwrap();
        assert!(k2.routes.iter().any(|r| r.destination == h1));
        assert!(!k2
            .routes
            .iter()
            .any(|r| r.destination.to_string().starts_with("198.")));
    }

    #[test]
    fn packets_enter_toward_the_first_kernel_router_on_their_path() {
        let k = Arc::new(KernelRouters::new(&mixed()).unwrap());
        let engine = Engine::new(k.engine.clone(), 1);
        let mut entries = Entries::new(k.clone());
        let h2 = IpAddr::from(netloom_os::AddressPlan::DEFAULT.host(1).0);
        // Engine hosts: h1, h2, then the ports k1:h1, k1:e, k2:e, k2:h2, k2:k3, k3:e, k3:k2.
        // h1 reaches anything through k1's port; k1's port toward e reaches h2 at k2's port
        // on e's link; a port whose peer is a port or a host goes there whatever the address.
        assert_eq!(entries.end_for(&engine, 0, h2), Some(2));
        assert_eq!(entries.end_for(&engine, 3, h2), Some(4));
        let multicast = "224.0.0.5".parse().unwrap();
        assert_eq!(entries.end_for(&engine, 6, multicast), Some(8));
        assert_eq!(entries.end_for(&engine, 5, multicast), Some(1));
        assert_eq!(entries.end_for(&engine, 3, multicast), None);
        // A host hanging off a kernel router sends it what the plan does not name.
        assert_eq!(entries.end_for(&engine, 1, multicast), Some(5));
        let nobody = "198.18.7.7".parse().unwrap();
        assert_eq!(entries.end_for(&engine, 0, nobody), Some(2));
        // With e-k2 down, h2 is reached over k3.
        let mut engine = engine;
        engine.set_link_up(netloom_time::Instant::ZERO, 2, false);
        assert_eq!(entries.end_for(&engine, 3, h2), Some(7));
        assert!(entries.is_port(3) && !entries.is_port(1));
    }
}
