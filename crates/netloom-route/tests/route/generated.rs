//! Routing over the generated topologies: every host reaches every other, and the tree-mesh
//! diameter is the paper's 2h + 1 hops. The `#[ignore]`d test reports the time to generate,
//! load and route the default inet and an inet-like topology of about 100,000 links:
//! `cargo test --release -p netloom-route --test route generated:: -- --ignored --nocapture`.

use netloom_route::Routes;
use netloom_time::Duration;
use netloom_topo::gen::{generate, GenKind, InetParams, TreeMeshParams};
use netloom_topo::{resolve, Topology};
use std::time::Instant;

fn load(kind: &GenKind) -> Topology {
    resolve(&generate(kind).unwrap(), "generated").unwrap()
}

#[test]
fn every_default_topology_connects_every_host_pair() {
    for name in GenKind::NAMES {
        let topo = load(&GenKind::with_defaults(name).unwrap());
        let routes = Routes::compute(&topo);
        let d = routes.diameter(&topo).unwrap();
        assert_eq!(d.unreachable_pairs, 0, "{name}");
    }
}

#[test]
fn tree_mesh_diameter_is_2h_plus_1() {
    for height in [2, 5] {
        let p = TreeMeshParams {
            height,
            ..TreeMeshParams::default()
        };
        let topo = load(&GenKind::TreeMesh(p));
        let d = Routes::compute(&topo).diameter(&topo).unwrap();
        assert_eq!(d.by_hops.hops as usize, 2 * height + 1);
        // last-mile 1 ms + (h − 1) tree hops of 2 ms + core 5 ms, and back down.
        let ms = 2 * (1 + 2 * (height as u64 - 1)) + 5;
        assert_eq!(d.by_delay.delay, Duration::from_millis(ms));
    }
}

#[test]
#[ignore = "timing report, run in release"]
fn route_the_default_inet_and_a_100k_link_inet() {
    let big = InetParams {
        routers: 51_000,
        stubs: 2_000,
        hosts: 400,
        ..InetParams::default()
    };
    for p in [InetParams::default(), big] {
        let t0 = Instant::now();
        let file = generate(&GenKind::Inet(p)).unwrap();
        let t1 = Instant::now();
        let topo = resolve(&file, "inet").unwrap();
        let t2 = Instant::now();
        let mut routes = Routes::compute(&topo);
        let t3 = Instant::now();
        let mut up = vec![true; topo.pipes.len()];
        (up[topo.links[0].ab as usize], up[topo.links[0].ba as usize]) = (false, false);
        routes.recompute(&topo, &up);
        let t4 = Instant::now();
        println!(
            "{} nodes, {} links, {} hosts: generate {:?}, resolve {:?}, route {:?}, \
             recompute after a link failure {:?}, tables {} MB",
            topo.nodes.len(),
            topo.links.len(),
            topo.hosts.len(),
            t1 - t0,
            t2 - t1,
            t3 - t2,
            t4 - t3,
            routes.memory_bytes() >> 20,
        );
    }
}
