//! What a valid file resolves to: layering order, built-in defaults, per-direction overrides,
//! shared links, RED and Gilbert-Elliott parameters, JSON ≡ TOML, and the bundled example.

use crate::common::load;
use netloom_link::{Aqm, LossModel, QueueLimit, RedParams};
use netloom_time::{Duration, Rate};
use netloom_topo::{
    load_path, load_str, summarize, Direction, Format, NodeKind, RoutingMetric, Topology,
};
use std::path::Path;

/// The pipe of link `link` in `dir`.
fn pipe(t: &Topology, link: usize, dir: Direction) -> &netloom_link::PipeConfig {
    let l = &t.links[link];
    let id = match dir {
        Direction::AtoB => l.ab,
        Direction::BtoA => l.ba,
    };
    &t.pipes[id as usize].config
}

const LAYERED: &str = r#"
hosts = ["h1", "h2"]
routers = ["r1"]

[defaults]
bw = "100Mbit"
delay = "1ms"
jitter = "1us"
loss = "1%"

[classes.slow]
bw = "10Mbit"
delay = "20ms"

[[link]]
a = "h1"
b = "r1"
class = "slow"
delay = "5ms"
a_to_b = { bw = "2Mbit" }
b_to_a = { jitter = "3us", loss = 0 }

[[link]]
a = "r1"
b = "h2"
"#;

#[test]
fn later_layers_win_key_by_key() {
    let t = load(LAYERED);
    let ab = pipe(&t, 0, Direction::AtoB);
    let ba = pipe(&t, 0, Direction::BtoA);
    // bw: defaults 100Mbit < class 10Mbit < a_to_b 2Mbit.
    assert_eq!(ab.rate, Rate::bps(2_000_000));
    assert_eq!(ba.rate, Rate::bps(10_000_000));
    // delay: class 20ms < link 5ms, in both directions.
    assert_eq!(ab.delay, Duration::from_millis(5));
    assert_eq!(ba.delay, Duration::from_millis(5));
    // jitter and loss: defaults unless the direction overrides.
    assert_eq!(ab.jitter, Duration::from_micros(1));
    assert_eq!(ba.jitter, Duration::from_micros(3));
    assert_eq!(ab.loss, LossModel::Bernoulli { p: 0.01 });
    assert_eq!(ba.loss, LossModel::None);
    // A link without a class takes [defaults] only.
    let plain = pipe(&t, 1, Direction::AtoB);
    assert_eq!(plain.rate, Rate::bps(100_000_000));
    assert_eq!(plain.delay, Duration::from_millis(1));
    assert_eq!(t.links[0].class.as_deref(), Some("slow"));
}

#[test]
fn built_in_defaults() {
    let t = load(LAYERED);
    let p = pipe(&t, 1, Direction::AtoB);
    assert_eq!(p.aqm, Aqm::DropTail);
    assert!(!p.reorder);
    assert!(p.up);
    assert_eq!(p.duplicate, 0.0);
    assert_eq!(p.ooo_rate, 0.0);
    assert_eq!(p.ooo_delay, Duration::ZERO);
    // 100 Mbit/s × 2 × 1 ms = 25 000 bytes.
    assert_eq!(p.queue, QueueLimit::Bytes(25_000));
    // 2 Mbit/s × 2 × 5 ms = 2 500 bytes, below the floor of 10 full-size packets.
    assert_eq!(
        pipe(&t, 0, Direction::AtoB).queue,
        QueueLimit::Bytes(15_000)
    );
    assert_eq!(t.routing, RoutingMetric::Delay);
    assert_eq!(t.name, "topo");
}

#[test]
fn red_defaults_follow_the_queue_unit() {
    let t = load(
        r#"
hosts = ["h1", "h2"]
[defaults]
bw = "10Mbit"
delay = "1ms"
aqm = "red"
[[link]]
a = "h1"
b = "h2"
queue = 100
a_to_b = { red = { max_p = "20%" } }
b_to_a = { queue = "64KB", red = { min_th = 10000, weight = 0.01 } }
"#,
    );
    assert_eq!(
        pipe(&t, 0, Direction::AtoB).aqm,
        Aqm::Red(RedParams {
            min_th: 5.0,
            max_th: 15.0,
            max_p: 0.2,
            weight: 0.002
        })
    );
    assert_eq!(
        pipe(&t, 0, Direction::BtoA).aqm,
        Aqm::Red(RedParams {
            min_th: 10_000.0,
            max_th: 30_000.0,
            max_p: 0.1,
            weight: 0.01
        })
    );
    assert_eq!(
        pipe(&t, 0, Direction::BtoA).queue,
        QueueLimit::Bytes(64_000)
    );
}

#[test]
fn gilbert_elliott_defaults() {
    let t = load(
        r#"
hosts = ["h1", "h2"]
[[link]]
a = "h1"
b = "h2"
bw = "1Gbit"
delay = "10us"
loss = { model = "gilbert-elliott", p = "1%", r = 0.3 }
"#,
    );
    assert_eq!(
        pipe(&t, 0, Direction::AtoB).loss,
        LossModel::GilbertElliott {
            p: 0.01,
            r: 0.3,
            good_loss: 0.0,
            bad_loss: 1.0
        }
    );
}

#[test]
fn shared_links_have_one_pipe_and_parallel_links_are_kept() {
    let t = load(
        r#"
hosts = ["h1", "h2"]
[defaults]
bw = "54Mbit"
delay = "2ms"
[[link]]
a = "h1"
b = "h2"
shared = true
[[link]]
a = "h2"
b = "h1"
"#,
    );
    assert_eq!(t.links.len(), 2);
    assert_eq!(t.pipes.len(), 3);
    assert!(t.is_shared(0));
    assert!(!t.is_shared(1));
    let s = summarize(&t);
    assert_eq!((s.links, s.pipes, s.shared_links), (2, 3, 1));
}

#[test]
fn json_is_the_same_schema() {
    let json = r#"{
  "hosts": ["h1", "h2"],
  "routers": ["r1"],
  "defaults": {"bw": "100Mbit", "delay": "1ms", "jitter": "1us", "loss": "1%"},
  "classes": {"slow": {"bw": "10Mbit", "delay": "20ms"}},
  "link": [
    {"a": "h1", "b": "r1", "class": "slow", "delay": "5ms",
     "a_to_b": {"bw": "2Mbit"}, "b_to_a": {"jitter": "3us", "loss": 0}},
    {"a": "r1", "b": "h2"}
  ]
}"#;
    let from_json = load_str(json, Format::Json, "topo.json").unwrap();
    assert_eq!(from_json, load(LAYERED));
}

#[test]
fn nodes_keep_kind_and_group() {
    let t = load(
        r#"
hosts = ["h1", { name = "h2", group = "east" }]
routers = [{ name = "r1" }]
[defaults]
bw = "1Gbit"
delay = "1ms"
[[link]]
a = "h1"
b = "r1"
[[link]]
a = "r1"
b = "h2"
[topology]
name = "groups"
routing = "hops"
"#,
    );
    assert_eq!(t.name, "groups");
    assert_eq!(t.routing, RoutingMetric::Hops);
    let h2 = t.node(t.node_id("h2").unwrap());
    assert_eq!(h2.group.as_deref(), Some("east"));
    assert_eq!(t.node(t.node_id("r1").unwrap()).kind, NodeKind::Router);
    assert_eq!(t.hosts.len(), 2);
}

#[test]
fn the_bundled_dumbbell_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/dumbbell.toml");
    let t = load_path(&path).unwrap_or_else(|e| panic!("{e}"));
    let s = summarize(&t);
    assert_eq!((s.hosts, s.routers, s.links, s.pipes), (4, 2, 5, 10));
    let bottleneck = t
        .links
        .iter()
        .position(|l| l.class.as_deref() == Some("bottleneck"))
        .unwrap();
    let p = pipe(&t, bottleneck, Direction::AtoB);
    assert_eq!(p.rate, Rate::bps(10_000_000));
    assert_eq!(p.delay, Duration::from_millis(10));
    assert_eq!(s.min_rate_bps, 10_000_000);
    assert_eq!(s.max_rate_bps, 1_000_000_000);
    // Bottleneck: 10 Mbit/s × 20 ms = 25 kB; access: 1 Gbit/s × 200 us = 25 kB.
    assert_eq!((s.min_bdp_bytes, s.max_bdp_bytes), (25_000, 25_000));
}

#[test]
fn load_path_rejects_unknown_extensions_and_missing_files() {
    let e = load_path(Path::new("topo.yaml")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "topo.yaml: unknown file type; a topology file ends in .toml, .json, .graphml, .gml, .graph (ModelNet) or .inet, or its format must be given"
    );
    let e = load_path(Path::new("/nonexistent/topo.toml")).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("/nonexistent/topo.toml: cannot read:"),
        "{e}"
    );
}

#[test]
fn more_nodes_or_links_than_the_limit_are_refused_before_building() {
    use netloom_topo::doc::{NodeEntry, TopologyFile};
    use netloom_topo::{resolve, MAX_LINKS, MAX_NODES};
    let file = TopologyFile {
        hosts: (0..MAX_NODES)
            .map(|i| NodeEntry::Name(format!("h{i}")))
            .collect(),
        routers: vec![NodeEntry::Name("r".into())],
        ..TopologyFile::default()
    };
    let err = resolve(&file, "big.json").unwrap_err().to_string();
    assert!(
        err.contains("big.json")
            && err.contains("has 1100001 nodes (hosts and routers); the limit is 1100000"),
        "{err}"
    );
    assert!(!err.contains("link"), "links are within {MAX_LINKS}: {err}");
}
