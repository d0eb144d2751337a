//! The importers' fuzz targets on stable: a few hundred random and mutated inputs per parser
//! (cargo-fuzz needs nightly). A panic fails the test; the seed and case number reproduce it.

use netloom_topo::fuzzing::{import_gml, import_graphml, import_inet, import_modelnet};
use netloom_topo::{import_str, resolve, HostPlan, ImportOptions, InputFormat};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const SEED: u64 = 6;

/// A fuzz target's entry point.
type Target = fn(&[u8]);

const GRAPHML: &str = r#"<?xml version="1.0"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key attr.name="label" for="node" id="d0"/>
  <key attr.name="Latitude" for="node" id="d1"/>
  <key attr.name="Longitude" for="node" id="d2"/>
  <key attr.name="LinkSpeedRaw" for="edge" id="d3"/>
  <key attr.name="bw" for="edge" id="d4"><default>10Mbit</default></key>
  <key attr.name="a_to_b.red.min_th" for="edge" id="d5"/>
  <graph edgedefault="undirected">
    <node id="0"><data key="d0">A</data><data key="d1">10.5</data><data key="d2">-3</data></node>
    <node id="1"><data key="d0">B</data><data key="d1">11</data><data key="d2">4.25</data></node>
    <node id="2"/>
    <edge source="0" target="1"><data key="d3">1e9</data></edge>
    <edge source="1" target="2"><data key="d5">5</data></edge>
    <edge source="1" target="2"/>
  </graph>
</graphml>
"#;

const GML: &str = r#"graph [
  directed 0
  node [ id 0 label "A" Latitude 10.5 Longitude -3 ]
  node [ id 1 label "B" host_bandwidth_up "10 Mbit" ]
  node [ id 2 graphics [ x 1 y 2 ] ]
  edge [ source 0 target 1 LinkSpeed "2.5" LinkSpeedUnits "G" ]
  edge [ source 1 target 2 latency "10 ms" bandwidth "1 Gbit" packet_loss 0.01 ]
]
"#;

const MODELNET: &str = r#"<topology>
  <vertices>
    <vertex int_idx="0" role="gateway"/>
    <vertex int_idx="1" role="virtnode" int_vn="0"/>
    <vertex int_idx="2" role="virtnode" int_vn="1"/>
  </vertices>
  <edges>
    <edge int_src="1" int_dst="0" int_idx="0" specs="cs"/>
    <edge int_src="0" int_dst="1" int_idx="1" specs="cs" dbl_kbps="768"/>
    <edge int_src="2" int_dst="0" int_idx="2" specs="cs" int_qlen="5"/>
  </edges>
  <specs><cs dbl_plr="0.01" dbl_kbps="1000" int_delayms="1" int_qlen="10"/></specs>
</topology>
"#;

const INET: &str = "4 4\n0 10 10\n1 200 50\n2 9999 0\n3 5 5\n0 1 3\n1 2 2\n2 3 1\n0 3 9\n";

/// Pieces of every format's syntax, to build random inputs from.
const PIECES: &[&str] = &[
    "<",
    ">",
    "/>",
    "</",
    "\"",
    "=",
    " ",
    "\n",
    "[",
    "]",
    "#",
    "0",
    "1",
    "-1",
    "9e99",
    "1.5",
    "nan",
    "<node id=\"0\"/>",
    "<edge source=\"0\" target=\"1\"/>",
    "<graph>",
    "<graphml>",
    "<key id=\"d\" attr.name=\"bw\"/>",
    "<data key=\"d\">",
    "</data>",
    "node [",
    "edge [",
    "graph [",
    "id ",
    "source ",
    "target ",
    "latency \"1 ms\"",
    "<vertex int_idx=\"0\" role=\"gateway\"/>",
    "<edge int_src=\"0\" int_dst=\"1\"/>",
    "<topology>",
    "<hop int_idx=\"0\" emul=\"e\"/>",
    "&amp;",
    "&#0;",
    "é",
    "\u{0}",
];

fn random_text(rng: &mut Xoshiro256PlusPlus) -> String {
    (0..rng.gen_range(0..16))
        .map(|_| PIECES[rng.gen_range(0..PIECES.len())])
        .collect()
}

/// A valid input with a few characters replaced, inserted, duplicated or cut off.
fn mutate(rng: &mut Xoshiro256PlusPlus, base: &str) -> String {
    let mut chars: Vec<char> = base.chars().collect();
    for _ in 0..rng.gen_range(1..5) {
        let at = rng.gen_range(0..chars.len());
        match rng.gen_range(0..4) {
            0 => {
                chars[at] = ['0', '9', '"', '<', '>', '[', ']', '-', '.', 'x'][rng.gen_range(0..10)]
            }
            1 => chars.insert(at, [' ', '\n', '"', '/', '='][rng.gen_range(0..5)]),
            2 => {
                let end = (at + rng.gen_range(1..40)).min(chars.len());
                let copy: Vec<char> = chars[at..end].to_vec();
                chars.splice(at..at, copy);
            }
            _ => chars.truncate(at.max(1)),
        }
    }
    chars.into_iter().collect()
}

#[test]
fn importers_never_panic_on_random_and_mutated_inputs() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(SEED);
    let targets: [(Target, &str, InputFormat); 4] = [
        (import_graphml, GRAPHML, InputFormat::GraphMl),
        (import_gml, GML, InputFormat::Gml),
        (import_modelnet, MODELNET, InputFormat::ModelNet),
        (import_inet, INET, InputFormat::Inet),
    ];
    let options = ImportOptions {
        hosts: HostPlan::parse("1").unwrap(),
        ..ImportOptions::default()
    };
    for (target, valid, format) in targets {
        // The unmutated inputs import and resolve, so mutations reach past the syntax.
        let imported = import_str(valid, format, "valid", &options).unwrap();
        resolve(&imported.file, "valid").unwrap();
        target(valid.as_bytes());
        for case in 0..300 {
            let text = if case % 4 == 0 {
                random_text(&mut rng)
            } else {
                mutate(&mut rng, valid)
            };
            target(text.as_bytes());
        }
        target(&[0xff, 0xfe, 0x00]);
        target(b"");
    }
}
