//! ModelNet's files as its own tools write them (`tests/data/modelnet`, written for these tests
//! in the layout of `inet2xml` and `mkmodel`): what netloom emulates, hop by hop, is what
//! ModelNet would, and a `.model` that does not fit its `.graph` names the line and the fault.

use netloom_link::{LossModel, QueueLimit};
use netloom_time::{Duration, Rate};
use netloom_topo::import::{import_modelnet, CoreMap};
use netloom_topo::{import_str, resolve, ImportOptions, Imported, InputFormat, Topology};
use std::path::Path;

fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/modelnet")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

fn import(graph: &str, model: &str) -> Result<Imported, netloom_topo::TopoError> {
    import_modelnet(
        graph,
        "inet.graph",
        model,
        "inet.model",
        &ImportOptions::default(),
    )
}

/// The pipe from node `from` to node `to`.
fn pipe(topo: &Topology, from: &str, to: &str) -> usize {
    let name = |id: u32| topo.nodes[id as usize].name.as_str();
    topo.links
        .iter()
        .find_map(|l| match (name(l.a), name(l.b)) {
            (a, b) if (a, b) == (from, to) => Some(l.ab),
            (a, b) if (a, b) == (to, from) => Some(l.ba),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no link {from}-{to}")) as usize
}

#[test]
fn each_hop_gets_the_core_and_the_parameters_modelnet_emulates() {
    let imported = import(&data("inet.graph"), &data("inet.model")).unwrap();
    let topo = resolve(&imported.file, "inet.graph").unwrap();
    let CoreMap { cores, pipes } = imported.cores.clone().unwrap();
    assert_eq!(cores, ["emu-a", "emu-b"]);
    // (int_idx, from, to, int_emul, bit/s, ns, loss, queue): the .model's specs and hop
    // attributes, rates and delays to the bit/s and the ns (ModelNet truncates them to whole
    // kbit/s and ms).
    let hops = [
        (0, "vn0", "r2", 0, 1_523_478, 1_000_000, 0.00312, 10),
        (1, "r2", "vn0", 0, 987_654, 1_000_000, 0.0, 10),
        (2, "vn1", "r2", 1, 1_200_500, 1_000_000, 0.001, 10),
        (3, "r2", "vn1", 1, 1_200_500, 1_000_000, 0.001, 10),
        // The .model's transit-transit spec: 155000 kbit/s, queue 2000 (the .graph: 1000, 10).
        (4, "r0", "r1", 0, 155_000_000, 4_113_333, 0.0, 2000),
        (5, "r1", "r0", 0, 155_000_000, 4_113_333, 0.0, 2000),
        // Hop 6's own dbl_kbps, which its edge in the .graph does not have.
        (6, "r1", "r2", 1, 45_000_000, 186_667, 0.0, 10),
        (7, "r2", "r1", 1, 1_000_000, 186_667, 0.0, 10),
    ];
    for (idx, from, to, core, bps, ns, loss, queue) in hops {
        let p = pipe(&topo, from, to);
        let config = &topo.pipes[p].config;
        let got = (
            pipes[p],
            config.rate,
            config.delay,
            &config.loss,
            config.queue,
        );
        let want_loss = if loss > 0.0 {
            LossModel::Bernoulli { p: loss }
        } else {
            LossModel::None
        };
        assert_eq!(
            got,
            (
                Some(core),
                Rate(bps),
                Duration::from_nanos(ns),
                &want_loss,
                QueueLimit::Packets(queue)
            ),
            "hop {idx}"
        );
    }
    let notes = imported.notes.join("\n");
    for note in [
        "inet.model gives the parameters ModelNet emulates; where it gives none, inet.graph does \
         (per parameter, of 8 hops: bw 8 from the .model, 0 from the .graph; delay 8 from the \
         .model, 0 from the .graph; loss 8 from the .model, 0 from the .graph; queue 8 from the \
         .model, 0 from the .graph)",
        "3 of 8 hops differ from inet.graph, which ModelNet does not emulate: hop 4: bw 155000kbit \
         (inet.graph: 1000kbit), queue 2000 (inet.graph: 10); hop 5: bw 155000kbit (inet.graph: \
         1000kbit), queue 2000 (inet.graph: 10); hop 6: bw 45000kbit (inet.graph: 1000kbit)",
        "the .graph: 2 dbl_kbps value(s) finer than a bit/s and 4 int_delayms value(s) finer than \
         a nanosecond were rounded to the nearest",
        "inet.model: 2 dbl_kbps value(s) finer than a bit/s and 4 int_delayms value(s)",
    ] {
        assert!(notes.contains(note), "{note}\nnot in\n{notes}");
    }
}

#[test]
fn an_inet2xml_graph_alone_keeps_its_fractional_rates_and_delays() {
    let imported = import_str(
        &data("inet.graph"),
        InputFormat::ModelNet,
        "inet.graph",
        &ImportOptions::default(),
    )
    .unwrap();
    let topo = resolve(&imported.file, "inet.graph").unwrap();
    let names: Vec<&str> = topo.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(
        names,
        ["vn0", "vn1", "r0", "r1", "r2"],
        "transit and gateway are routers"
    );
    let config = |from, to| &topo.pipes[pipe(&topo, from, to)].config;
    assert_eq!(config("vn0", "r2").rate, Rate(1_523_478));
    assert_eq!(config("r1", "r0").delay, Duration::from_nanos(4_113_333));
    // The .graph's own transit-transit spec, which the .model changes.
    assert_eq!(config("r0", "r1").rate, Rate(1_000_000));
    assert_eq!(config("r0", "r1").queue, QueueLimit::Packets(10));
}

/// `text` with `from` replaced once (it must be there), and the line it is on.
fn edit(text: &str, from: &str, to: &str) -> (String, usize) {
    let at = text
        .find(from)
        .unwrap_or_else(|| panic!("{from} not in the file"));
    (
        text.replacen(from, to, 1),
        text[..at].matches('\n').count() + 1,
    )
}

#[test]
fn a_model_that_does_not_fit_its_graph_names_the_line_and_the_fault() {
    let graph = data("inet.graph");
    let model = data("inet.model");
    let cases = [
        (
            "int_emul=\"1\" int_idx=\"7\"",
            "int_emul=\"2\" int_idx=\"7\"",
            "hop #4 (int_idx=\"7\"): int_emul \"2\" names no emulator: the <emul> int_idx \
             under <emulators> are 0, 1",
        ),
        (
            "int_emul=\"1\" int_idx=\"7\"",
            "int_emul=\"1\" int_idx=\"17\"",
            "hop #4 (int_idx=\"17\"): int_idx \"17\" is no edge of inet.graph: a hop for a link \
             the graph lacks (was the .model made from another .graph?)",
        ),
        (
            "int_src=\"2\" int_emul=\"1\" int_idx=\"7\"",
            "int_src=\"4\" int_emul=\"1\" int_idx=\"7\"",
            "hop #4 (int_idx=\"7\"): int_src = \"4\", but edge int_idx \"7\" of inet.graph has \
             int_src = \"2\": a hop for a link the graph lacks (was the .model made from another \
             .graph?)",
        ),
        (
            "int_emul=\"0\" int_idx=\"5\"",
            "int_emul=\"0\" int_idx=\"4\"",
            "hop #7 (int_idx=\"4\"): edge int_idx \"4\" already has a hop, at line 20",
        ),
        (
            "specs=\"client-stub\" int_src=\"4\"",
            "specs=\"client-stubs\" int_src=\"4\"",
            "hop #5 (int_idx=\"2\"): specs \"client-stubs\" is defined under the <specs> of \
             neither inet.model nor inet.graph (did you mean \"client-stub\"?)",
        ),
    ];
    for (from, to, message) in cases {
        let (bad, line) = edit(&model, from, to);
        let err = import(&graph, &bad).unwrap_err().to_string();
        assert_eq!(err, format!("inet.model:{line}: {message}"));
    }
}
