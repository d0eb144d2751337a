//! Routing on small hand-built topologies: metric choice, tie-breaking, hosts not forwarding,
//! link failures, unreachable hosts, table size, and a check against a brute-force reference.

use netloom_link::PipeConfig;
use netloom_route::Routes;
use netloom_time::{Duration, Rate};
use netloom_topo::{NodeId, NodeKind, RoutingMetric, Topology};

fn pipe(ms: u64) -> PipeConfig {
    PipeConfig::new(Rate::bps(10_000_000), Duration::from_millis(ms))
}

/// Nodes named `h…` are hosts, the rest routers; each link is duplex with `ms` both ways.
fn net(metric: RoutingMetric, nodes: &[&str], links: &[(&str, &str, u64)]) -> Topology {
    let mut topo = Topology::new("test", metric);
    for n in nodes {
        let kind = if n.starts_with('h') {
            NodeKind::Host
        } else {
            NodeKind::Router
        };
        topo.add_node(*n, kind, None);
    }
    for &(a, b, ms) in links {
        let (a, b) = (topo.node_id(a).unwrap(), topo.node_id(b).unwrap());
        topo.add_link(a, b, None, pipe(ms), Some(pipe(ms)));
    }
    topo
}

/// The names of the nodes a route visits, `src` included; `None` if there is no route.
fn route(topo: &Topology, routes: &Routes, src: &str, dst: &str) -> Option<Vec<String>> {
    let mut at = topo.node_id(src).unwrap();
    let path = routes.path(topo, at, topo.node_id(dst).unwrap())?;
    let mut names = vec![src.to_string()];
    for p in path {
        at = topo.far_end(p, at);
        names.push(topo.node(at).name.clone());
    }
    Some(names)
}

fn names(s: &str) -> Option<Vec<String>> {
    Some(s.split(' ').map(str::to_string).collect())
}

/// h1 - r1 - r2 - h2 with a slow direct r1-r2 (10 ms) and a fast detour r1-r3-r4-r2 (3 × 1 ms).
fn detour(metric: RoutingMetric) -> Topology {
    net(
        metric,
        &["h1", "h2", "r1", "r2", "r3", "r4"],
        &[
            ("h1", "r1", 1),
            ("r1", "r2", 10),
            ("r1", "r3", 1),
            ("r3", "r4", 1),
            ("r4", "r2", 1),
            ("r2", "h2", 1),
        ],
    )
}

#[test]
fn delay_metric_takes_the_longer_faster_path() {
    let topo = detour(RoutingMetric::Delay);
    let routes = Routes::compute(&topo);
    assert_eq!(
        route(&topo, &routes, "h1", "h2"),
        names("h1 r1 r3 r4 r2 h2")
    );
    assert_eq!(
        route(&topo, &routes, "h2", "h1"),
        names("h2 r2 r4 r3 r1 h1")
    );
}

#[test]
fn hop_metric_takes_the_shorter_path() {
    let topo = detour(RoutingMetric::Hops);
    let routes = Routes::compute(&topo);
    assert_eq!(route(&topo, &routes, "h1", "h2"), names("h1 r1 r2 h2"));
}

#[test]
fn equal_delay_goes_to_fewer_hops_even_over_a_higher_pipe_id() {
    let topo = net(
        RoutingMetric::Delay,
        &["h1", "h2", "r1", "r2", "r3"],
        &[
            ("r1", "r3", 2),
            ("r3", "r2", 2),
            ("r1", "r2", 4),
            ("h1", "r1", 1),
            ("r2", "h2", 1),
        ],
    );
    let routes = Routes::compute(&topo);
    assert_eq!(route(&topo, &routes, "h1", "h2"), names("h1 r1 r2 h2"));
}

#[test]
fn remaining_ties_go_to_the_lowest_pipe_id() {
    let diamond = |first: &'static str, metric: RoutingMetric| {
        let second = if first == "r2" { "r3" } else { "r2" };
        // Under the hop metric the delays differ, and must not matter.
        net(
            metric,
            &["h1", "h2", "r1", "r2", "r3", "r4"],
            &[
                ("r1", first, 1),
                ("r1", second, 1),
                (first, "r4", 5),
                (
                    second,
                    "r4",
                    if metric == RoutingMetric::Hops { 1 } else { 5 },
                ),
                ("h1", "r1", 1),
                ("r4", "h2", 1),
            ],
        )
    };
    for metric in [RoutingMetric::Delay, RoutingMetric::Hops] {
        for (first, want) in [("r2", "h1 r1 r2 r4 h2"), ("r3", "h1 r1 r3 r4 h2")] {
            let topo = diamond(first, metric);
            let routes = Routes::compute(&topo);
            assert_eq!(route(&topo, &routes, "h1", "h2"), names(want), "{metric:?}");
        }
    }
}

#[test]
fn hosts_do_not_forward() {
    // hx is a multi-homed host on r1 and r2: the cheapest way between them, but not a router.
    let links = [
        ("h1", "r1", 1),
        ("r1", "hx", 1),
        ("hx", "r2", 1),
        ("r2", "h2", 1),
        ("r1", "r3", 5),
        ("r3", "r2", 5),
    ];
    let nodes = ["h1", "h2", "hx", "r1", "r2", "r3"];
    let topo = net(RoutingMetric::Delay, &nodes, &links);
    let routes = Routes::compute(&topo);
    assert_eq!(route(&topo, &routes, "h1", "h2"), names("h1 r1 r3 r2 h2"));
    // A route may start or end at the host.
    assert_eq!(route(&topo, &routes, "hx", "h2"), names("hx r2 h2"));
    assert_eq!(route(&topo, &routes, "h1", "hx"), names("h1 r1 hx"));
    // Without r3, h1 and h2 cannot reach each other.
    let topo = net(RoutingMetric::Delay, &nodes, &links[..4]);
    let routes = Routes::compute(&topo);
    assert_eq!(route(&topo, &routes, "h1", "h2"), None);
    assert_eq!(route(&topo, &routes, "hx", "h1"), names("hx r1 h1"));
}

#[test]
fn link_down_reroutes_and_link_up_restores() {
    let topo = detour(RoutingMetric::Delay);
    let fresh = Routes::compute(&topo);
    let mut routes = fresh.clone();
    let r3_r4 = &topo.links[3];
    assert_eq!(topo.link_label(3), "r3-r4");
    let mut up = vec![true; topo.pipes.len()];
    up[r3_r4.ab as usize] = false;
    up[r3_r4.ba as usize] = false;
    routes.recompute(&topo, &up);
    assert_eq!(route(&topo, &routes, "h1", "h2"), names("h1 r1 r2 h2"));
    assert_eq!(route(&topo, &routes, "h2", "h1"), names("h2 r2 r1 h1"));
    assert_eq!(routes, Routes::compute_with(&topo, &up));
    routes.recompute(&topo, &vec![true; topo.pipes.len()]);
    assert_eq!(routes, fresh);
}

#[test]
fn a_pipe_down_in_its_config_reroutes_only_its_direction() {
    let mut topo = detour(RoutingMetric::Delay);
    let r3_r4 = &topo.links[3];
    let ab = r3_r4.ab;
    topo.pipes[ab as usize].config.up = false;
    let routes = Routes::compute(&topo);
    assert_eq!(route(&topo, &routes, "h1", "h2"), names("h1 r1 r2 h2"));
    assert_eq!(
        route(&topo, &routes, "h2", "h1"),
        names("h2 r2 r4 r3 r1 h1")
    );
}

#[test]
fn a_shared_medium_carries_both_directions() {
    let mut topo = net(
        RoutingMetric::Delay,
        &["h1", "h2", "r1"],
        &[("h1", "r1", 1)],
    );
    topo.add_link(1, 2, None, pipe(3), None);
    let routes = Routes::compute(&topo);
    assert_eq!(route(&topo, &routes, "h1", "h2"), names("h1 r1 h2"));
    assert_eq!(route(&topo, &routes, "h2", "h1"), names("h2 r1 h1"));
    assert_eq!(routes.path(&topo, 1, 0), Some(vec![2, 1]));
}

#[test]
fn unreachable_and_non_host_destinations_give_none() {
    let topo = net(
        RoutingMetric::Hops,
        &["h1", "h2", "h3", "r1", "r2"],
        &[("h1", "r1", 1), ("h2", "r1", 1), ("h3", "r2", 1)],
    );
    let routes = Routes::compute(&topo);
    let id = |n| topo.node_id(n).unwrap();
    assert_eq!(routes.host_index(id("h3")), Some(2));
    assert_eq!(routes.host_index(id("r1")), None);
    assert_eq!(routes.next_pipe(id("r1"), 2), None);
    assert_eq!(routes.next_pipe(id("h3"), 2), None, "at the destination");
    assert_eq!(routes.path(&topo, id("h1"), id("h3")), None);
    assert_eq!(routes.path(&topo, id("h1"), id("r1")), None, "not a host");
    assert_eq!(routes.path(&topo, id("h1"), id("h1")), Some(vec![]));
    let d = routes.diameter(&topo).unwrap();
    assert_eq!(d.unreachable_pairs, 4);
    assert_eq!(d.by_hops.hops, 2);
}

#[test]
fn stub_hosts_cost_bytes_each_not_a_column_of_every_node() {
    let mut topo = detour(RoutingMetric::Delay);
    let small = Routes::compute(&topo).memory_bytes();
    assert_eq!(small as u64, Routes::estimate_bytes(&topo));
    // A thousand more hosts on r1 and r2 add a few words each, not a table of nodes × hosts
    // (which would be 1006 × 1002 entries, 4 MB).
    for i in 0..1000 {
        let h = topo.add_node(format!("hx{i}"), NodeKind::Host, None);
        let r = topo.node_id(if i % 2 == 0 { "r1" } else { "r2" }).unwrap();
        topo.add_link(h, r, None, pipe(1), Some(pipe(1)));
    }
    let routes = Routes::compute(&topo);
    assert_eq!(routes.memory_bytes() as u64, Routes::estimate_bytes(&topo));
    assert!(
        routes.memory_bytes() - small < 1000 * 64,
        "{} bytes",
        routes.memory_bytes()
    );
    assert_eq!(
        route(&topo, &routes, "hx0", "hx1"),
        names("hx0 r1 r3 r4 r2 hx1")
    );
    assert_eq!(route(&topo, &routes, "hx0", "hx2"), names("hx0 r1 hx2"));
}

#[test]
fn diameter_reports_the_longest_routes_and_their_ends() {
    // h1 - r1 - r2 - r3 - h2, and h3 on r2 over a 20 ms link: the most hops are h1↔h2 (4), the
    // most delay h2↔h3 (4 + 3 + 20 = 27 ms); ties go to the first pair in host order.
    let topo = net(
        RoutingMetric::Delay,
        &["h1", "h2", "h3", "r1", "r2", "r3"],
        &[
            ("h1", "r1", 1),
            ("r1", "r2", 2),
            ("r2", "r3", 3),
            ("r3", "h2", 4),
            ("h3", "r2", 20),
        ],
    );
    let d = Routes::compute(&topo).diameter(&topo).unwrap();
    let id = |n| topo.node_id(n).unwrap();
    assert_eq!(
        (d.by_hops.src, d.by_hops.dst, d.by_hops.hops),
        (id("h1"), id("h2"), 4)
    );
    assert_eq!(d.by_hops.delay, Duration::from_millis(10));
    assert_eq!((d.by_delay.src, d.by_delay.dst), (id("h2"), id("h3")));
    assert_eq!(d.by_delay.delay, Duration::from_millis(27));
    assert_eq!(d.unreachable_pairs, 0);
}

/// A deterministic pseudo-random sequence (SplitMix64) so the test needs no RNG crate.
struct SplitMix(u64);

impl SplitMix {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

/// Brute force: Bellman-Ford on (delay or 0, hops) keys, then the lowest tied pipe.
fn reference_next(topo: &Topology, dst: NodeId) -> Vec<Option<u32>> {
    let key_of = |p: u32| match topo.routing {
        RoutingMetric::Delay => topo.pipes[p as usize].config.delay.as_nanos(),
        RoutingMetric::Hops => 0,
    };
    // Arcs (from, to, pipe) a packet may take towards dst: into a router or into dst itself.
    let mut arcs = Vec::new();
    for l in &topo.links {
        for (from, to, p) in [(l.a, l.b, l.ab), (l.b, l.a, l.ba)] {
            let ok = topo.node(to).kind == NodeKind::Router || to == dst;
            if ok && topo.pipes[p as usize].config.up {
                arcs.push((from, to, p));
            }
        }
    }
    let mut dist = vec![None; topo.nodes.len()];
    dist[dst as usize] = Some((0u64, 0u32));
    for _ in 0..topo.nodes.len() {
        for &(from, to, p) in &arcs {
            if let Some((d, h)) = dist[to as usize] {
                let cand = (d + key_of(p), h + 1);
                if dist[from as usize].is_none_or(|cur| cand < cur) {
                    dist[from as usize] = Some(cand);
                }
            }
        }
    }
    (0..topo.nodes.len() as NodeId)
        .map(|n| {
            let here = dist[n as usize]?;
            arcs.iter()
                .filter(|&&(from, to, p)| {
                    let (d, h) = dist[to as usize].unwrap_or((u64::MAX, 0));
                    from == n && n != dst && (d.saturating_add(key_of(p)), h + 1) == here
                })
                .map(|&(_, _, p)| p)
                .min()
        })
        .collect()
}

#[test]
fn tables_match_a_brute_force_reference_on_random_graphs() {
    let mut rng = SplitMix(7);
    for round in 0..40 {
        let metric = if round % 2 == 0 {
            RoutingMetric::Delay
        } else {
            RoutingMetric::Hops
        };
        let mut topo = Topology::new("random", metric);
        let (routers, hosts) = (4 + rng.below(12) as u32, 2 + rng.below(6) as u32);
        for r in 0..routers {
            topo.add_node(format!("r{r}"), NodeKind::Router, None);
        }
        for h in 0..hosts {
            let id = topo.add_node(format!("h{h}"), NodeKind::Host, None);
            // Some hosts are multi-homed, which tempts routes through them.
            for _ in 0..1 + rng.below(2) {
                let r = rng.below(routers as u64) as u32;
                topo.add_link(id, r, None, pipe(1 + rng.below(3)), Some(pipe(1)));
            }
        }
        for _ in 0..routers + rng.below(routers as u64 * 2) as u32 {
            let (a, b) = (
                rng.below(routers as u64) as u32,
                rng.below(routers as u64) as u32,
            );
            // Few distinct delays, so equal-cost paths are common; some pipes are down.
            let mut ab = pipe(1 + rng.below(3));
            ab.up = rng.below(10) != 0;
            topo.add_link(a, b, None, ab, Some(pipe(1 + rng.below(3))));
        }
        let routes = Routes::compute(&topo);
        for (d, &dst) in topo.hosts.iter().enumerate() {
            let want = reference_next(&topo, dst);
            for n in 0..topo.nodes.len() as NodeId {
                let got = routes.next_pipe(n, d as u32);
                assert_eq!(
                    got, want[n as usize],
                    "round {round}: node {n} to host {dst}"
                );
            }
        }
    }
}
