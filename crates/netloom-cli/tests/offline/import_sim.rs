//! Imported topologies through the binary: every Topology Zoo file (the copy in netloom-topo's
//! test data, CC BY 4.0) checks and simulates with hosts attached, router-level files without
//! hosts say how to attach them, and `convert` writes files that load and views that parse.

use crate::common::{repo_file, run, TempDir};
use std::path::PathBuf;

fn zoo_files() -> Vec<PathBuf> {
    let dir = repo_file("crates/netloom-topo/tests/data/topology-zoo");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "graphml"))
        .collect();
    files.sort();
    files
}

fn zoo(name: &str) -> String {
    repo_file("crates/netloom-topo/tests/data/topology-zoo")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn every_zoo_file_checks_and_simulates() {
    let files = zoo_files();
    assert_eq!(files.len(), 30);
    for path in &files {
        let file = path.display().to_string();
        let check = run(&["check", &file, "--hosts-per-router", "1", "--json"]).ok();
        let summary = check.json();
        assert!(summary["hosts"].as_u64().unwrap() > 1, "{file}");
        assert!(
            check.stderr.contains("host(s) attached"),
            "{file}: {}",
            check.stderr
        );
        let sim = run(&[
            "sim",
            &file,
            "--hosts-per-router",
            "1",
            "--traffic",
            "pattern=random-k k=2 source=cbr rate=100kbit",
            "--duration",
            "200ms",
            "--json",
            "--no-wall-clock",
        ])
        .ok();
        let report = sim.json();
        let flows = report["flows"].as_array().unwrap();
        assert!(!flows.is_empty(), "{file}");
        let received: u64 = flows
            .iter()
            .map(|f| f["sent"].as_u64().unwrap() - f["lost"].as_u64().unwrap())
            .sum();
        assert!(received > 0, "{file}: nothing arrived");
    }
}

#[test]
fn a_router_level_file_without_hosts_says_how_to_attach_them() {
    let out = run(&["check", &zoo("Abilene.graphml")]).expect_code(2);
    assert!(
        out.stderr.contains(
            "no hosts: the file describes routers only; attach hosts with --hosts-per-router N"
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn assumptions_are_printed_and_defaults_can_be_changed() {
    let out = run(&[
        "check",
        &zoo("Cesnet2.graphml"),
        "--hosts-per-router",
        "1",
        "--default-bw",
        "10Gbit",
        "--default-delay",
        "2ms",
        "--access-link",
        "100Mbit/1ms",
        "--json",
    ])
    .ok();
    for note in [
        "42 of 42 links had no rate: bw = \"10Gbit\" assumed",
        "42 of 42 links had no delay and no length (30 node(s) without coordinates",
        "delay = \"2ms\" assumed",
        "bw = \"100Mbit\", delay = \"1ms\"",
    ] {
        assert!(out.stderr.contains(note), "{note}\n{}", out.stderr);
    }
    let native =
        run(&["check", "examples/dumbbell.toml", "--hosts-per-router", "1"]).expect_code(2);
    assert!(
        native.stderr.contains("lists its own hosts"),
        "{}",
        native.stderr
    );
    let bad = run(&["check", &zoo("Cesnet2.graphml"), "--hosts-per-router", "x"]).expect_code(2);
    assert!(
        bad.stderr.contains("\"x\" is not a whole number"),
        "{}",
        bad.stderr
    );
}

#[test]
fn rates_read_from_link_labels_are_counted_and_written_out() {
    let dir = TempDir::new("labels");
    let toml = dir.path().join("cwix.toml").display().to_string();
    let cwix = zoo("Cwix.graphml");
    let check = run(&["check", &cwix, "--hosts-per-router", "1", "--json"]).ok();
    let convert = run(&["convert", &cwix, "--hosts-per-router", "1", "-o", &toml]).ok();
    for out in [&check, &convert] {
        for note in [
            "Cwix.graphml: 29 of 41 edges gave their rate only in LinkLabel, read from it: \
             \"45 Mbps DS-3\" as 45Mbit",
            "Cwix.graphml: 12 of 41 links had no rate: bw = \"1Gbit\" assumed",
        ] {
            assert!(out.stderr.contains(note), "{note}\n{}", out.stderr);
        }
    }
    let text = std::fs::read_to_string(&toml).unwrap();
    assert_eq!(text.matches("bw = \"45Mbit\"").count(), 29, "{text}");
}

#[test]
fn convert_writes_native_files_that_load_and_views_that_parse() {
    let dir = TempDir::new("convert");
    let out = |name: &str| dir.path().join(name).display().to_string();
    let geant = zoo("Geant2012.graphml");
    run(&[
        "convert",
        &geant,
        "-o",
        &out("g.toml"),
        "--hosts-per-router",
        "1",
    ])
    .ok();
    let toml = run(&["check", &out("g.toml"), "--json"]).ok();
    assert!(
        toml.stderr.is_empty(),
        "a native file needs no notes: {}",
        toml.stderr
    );
    let direct = run(&["check", &geant, "--hosts-per-router", "1", "--json"]).ok();
    assert_eq!(
        toml.json(),
        direct.json(),
        "the native file is the same topology"
    );

    // GraphML out and back in: the same topology again, with nothing assumed.
    run(&["convert", &out("g.toml"), "-o", &out("g.graphml")]).ok();
    let back = run(&["check", &out("g.graphml"), "--json"]).ok();
    assert!(back.stderr.is_empty(), "{}", back.stderr);
    assert_eq!(back.json(), direct.json());

    run(&["convert", &geant, "-o", &out("g.dot")]).ok();
    let dot = std::fs::read_to_string(out("g.dot")).unwrap();
    assert!(dot.starts_with("graph \"GEANT\" {\n"), "{dot}");
    assert_eq!(dot.matches(" -- ").count(), 61);

    let bad = run(&["convert", &geant, "-o", &out("g.yaml")]).expect_code(2);
    assert!(bad
        .stderr
        .contains("must end in .toml, .json (native), .dot or .graphml"));
}

const GRAPH: &str = r#"<?xml version="1.0" encoding="ISO-8859-1"?>
<topology>
  <vertices>
    <vertex int_idx="0" role="gateway" />
    <vertex int_idx="1" role="gateway" />
    <vertex int_idx="2" role="virtnode" int_vn="0" />
    <vertex int_idx="3" role="virtnode" int_vn="1" />
  </vertices>
  <edges>
    <edge int_src="2" int_dst="0" int_idx="0" specs="client-stub" />
    <edge int_src="0" int_dst="2" int_idx="1" specs="client-stub" />
    <edge int_src="0" int_dst="1" int_idx="2" specs="stub-stub" />
    <edge int_src="1" int_dst="0" int_idx="3" specs="stub-stub" />
    <edge int_src="3" int_dst="1" int_idx="4" specs="client-stub" />
    <edge int_src="1" int_dst="3" int_idx="5" specs="client-stub" />
  </edges>
  <specs>
    <client-stub dbl_plr="0" dbl_kbps="10000" int_delayms="1" int_qlen="100" />
    <stub-stub dbl_plr="0.001" dbl_kbps="100000" int_delayms="20" int_qlen="100" />
  </specs>
</topology>
"#;

const MODEL: &str = r#"<?xml version="1.0" encoding="ISO-8859-1"?>
<model>
  <emulators>
    <emul hostname="emu-a" int_idx="0" />
    <emul hostname="emu-b" int_idx="1" />
  </emulators>
  <hops>
    <hop int_idx="0" int_emul="0" int_src="2" int_dst="0" specs="client-stub" />
    <hop int_idx="1" int_emul="0" int_src="0" int_dst="2" specs="client-stub" />
    <hop int_idx="2" int_emul="0" int_src="0" int_dst="1" specs="stub-stub" />
    <hop int_idx="3" int_emul="1" int_src="1" int_dst="0" specs="stub-stub" />
    <hop int_idx="4" int_emul="1" int_src="3" int_dst="1" specs="client-stub" />
    <hop int_idx="5" int_emul="1" int_src="1" int_dst="3" specs="client-stub" />
  </hops>
  <specs xmloutbug="workaround">
    <client-stub dbl_plr="0" dbl_kbps="10000" int_delayms="1" int_qlen="100" />
    <stub-stub dbl_plr="0.001" dbl_kbps="1000000" int_delayms="20" int_qlen="2000" />
  </specs>
</model>
"#;

#[test]
fn a_modelnet_graph_and_model_become_a_topology_and_an_assignment() {
    let dir = TempDir::new("modelnet");
    let graph = dir.write("net.graph", GRAPH);
    let model = dir.write("net.model", MODEL);
    let toml = dir.path().join("net.toml");
    let out = run(&[
        "convert",
        graph.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
        "-o",
        toml.to_str().unwrap(),
    ])
    .ok();
    assert!(
        out.stderr
            .contains("6 pipes on 2 cores: 0 = emu-a, 1 = emu-b"),
        "{}",
        out.stderr
    );
    // The .model's stub-stub spec is what ModelNet emulates, not the .graph's.
    assert!(
        out.stderr.contains(
            "2 of 6 hops differ from GRAPH, which ModelNet does not emulate: hop 2: bw \
             1000000kbit (GRAPH: 100000kbit), queue 2000 (GRAPH: 100); hop 3: bw 1000000kbit \
             (GRAPH: 100000kbit), queue 2000 (GRAPH: 100)"
                .replace("GRAPH", graph.to_str().unwrap())
                .as_str()
        ),
        "{}",
        out.stderr
    );
    let written = std::fs::read_to_string(&toml).unwrap();
    assert!(written.contains("bw = \"1000000kbit\""), "{written}");
    let assignment = dir.path().join("net.assignment.json");
    let a: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&assignment).unwrap()).unwrap();
    assert_eq!(a["pipes"], serde_json::json!([0, 0, 0, 1, 1, 1]));
    // The partitioning code takes it as it is.
    run(&[
        "sim",
        toml.to_str().unwrap(),
        "--assignment",
        assignment.to_str().unwrap(),
        "--traffic",
        "pattern=pairs pairs=vn0:vn1 source=cbr rate=1Mbit",
        "--duration",
        "100ms",
    ])
    .ok();
    let dot = dir.path().join("net.dot");
    run(&[
        "convert",
        toml.to_str().unwrap(),
        "-o",
        dot.to_str().unwrap(),
        "--assignment",
        assignment.to_str().unwrap(),
    ])
    .ok();
    let dot = std::fs::read_to_string(dot).unwrap();
    assert!(dot.contains("\"r0\" -- \"r1\""), "{dot}");
    assert!(dot.contains("color=\"#1f77b4:#d62728\""), "{dot}");
}
