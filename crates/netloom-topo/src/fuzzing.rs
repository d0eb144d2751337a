//! The bodies of the fuzz targets in `fuzz/`, kept in the library so that ordinary tests run the
//! very same code (cargo-fuzz needs nightly; these must compile and hold on stable too).
//! Each takes arbitrary bytes and must never panic, except on a broken invariant it asserts.

use crate::doc::{Fraction, QueueSpec};
use crate::export;
use crate::import::{self, import_str, HostPlan, ImportOptions, InputFormat};
use crate::load::{load_str, resolve, Format};
use crate::units;

/// Loads arbitrary text as a TOML topology; any outcome but a panic is fine.
pub fn topology_toml(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = load_str(text, Format::Toml, "fuzz.toml");
    }
}

/// Loads arbitrary text as a JSON topology; any outcome but a panic is fine.
pub fn topology_json(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = load_str(text, Format::Json, "fuzz.json");
    }
}

/// Feeds arbitrary text to every unit parser. Whatever parses as a rate or a duration must
/// survive `format_*` → `parse_*` unchanged.
pub fn units(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(rate) = units::parse_rate(text) {
        assert_eq!(units::parse_rate(&units::format_rate(rate)), Ok(rate));
    }
    if let Ok(d) = units::parse_duration(text) {
        assert_eq!(units::parse_duration(&units::format_duration(d)), Ok(d));
    }
    let _ = units::parse_size(text);
    let _ = units::parse_queue(&QueueSpec::Size(text.to_string()));
    if let Ok(p) = units::parse_fraction(&Fraction::Text(text.to_string())) {
        assert!((0.0..=1.0).contains(&p), "{text:?} gave {p}");
    }
}

/// Imports arbitrary text in `format` with one host per router. Whatever imports and resolves
/// must survive export to GraphML and import back as the same topology.
fn import(data: &[u8], format: InputFormat) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let options = ImportOptions {
        hosts: HostPlan::parse("1").expect("a valid plan"),
        ..ImportOptions::default()
    };
    let Ok(imported) = import_str(text, format, "fuzz", &options) else {
        return;
    };
    let Ok(topo) = resolve(&imported.file, "fuzz") else {
        return;
    };
    let graphml = export::to_graphml(&imported.file, "fuzz", None);
    let back = import_str(
        &graphml,
        InputFormat::GraphMl,
        "fuzz",
        &ImportOptions::default(),
    )
    .unwrap_or_else(|e| panic!("exported GraphML does not import: {e}\n{graphml}"));
    let again = resolve(&back.file, "fuzz").expect("exported GraphML resolves");
    assert_eq!(
        again, topo,
        "GraphML round trip changed the topology\n{graphml}"
    );
}

/// GraphML (Topology Zoo style) import of arbitrary text.
pub fn import_graphml(data: &[u8]) {
    import(data, InputFormat::GraphMl);
}

/// GML (Zoo and Shadow style) import of arbitrary text.
pub fn import_gml(data: &[u8]) {
    import(data, InputFormat::Gml);
}

/// ModelNet `.graph` import of arbitrary text, and the same text as the `.model` of a small
/// valid graph.
pub fn import_modelnet(data: &[u8]) {
    import(data, InputFormat::ModelNet);
    if let Ok(text) = std::str::from_utf8(data) {
        let graph = "<topology><vertices><vertex int_idx=\"0\" role=\"virtnode\"/>\
                     <vertex int_idx=\"1\" role=\"gateway\"/></vertices><edges>\
                     <edge int_src=\"0\" int_dst=\"1\" int_idx=\"0\" dbl_kbps=\"10\" int_delayms=\"1\"/>\
                     </edges></topology>";
        let _ = import::import_modelnet(graph, "g", text, "m", &ImportOptions::default());
    }
}

/// Inet 3.0 import of arbitrary text.
pub fn import_inet(data: &[u8]) {
    import(data, InputFormat::Inet);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    const SEED: u64 = 2026;

    /// Pieces that make interesting inputs: digits, units, TOML and JSON syntax.
    const PIECES: &[&str] = &[
        "0",
        "1",
        "9",
        ".",
        "-",
        "+",
        " ",
        "e",
        "%",
        "µs",
        "μs",
        "ns",
        "us",
        "ms",
        "s",
        "bit",
        "kbit",
        "Mbit",
        "mbps",
        "B/s",
        "kB/s",
        "KiB",
        "MB",
        "/s",
        "\n",
        "\"",
        "=",
        "[",
        "]",
        "{",
        "}",
        ",",
        ":",
        "[[link]]",
        "a = ",
        "b = ",
        "bw = ",
        "delay = ",
        "hosts = ",
        "loss = ",
        "queue = ",
        "red = ",
        "aqm = ",
        "class = ",
        "[classes.x]",
        "[defaults]",
        "99999999999999999999999999999999999999999",
        "1.0000000000000000001",
        "\u{0}",
        "é",
    ];

    fn random_text(rng: &mut Xoshiro256PlusPlus) -> String {
        let n = rng.gen_range(0..12);
        (0..n)
            .map(|_| PIECES[rng.gen_range(0..PIECES.len())])
            .collect()
    }

    /// A valid file with a few characters replaced, inserted or cut off.
    fn mutate(rng: &mut Xoshiro256PlusPlus, base: &str) -> String {
        let mut chars: Vec<char> = base.chars().collect();
        for _ in 0..rng.gen_range(1..4) {
            let at = rng.gen_range(0..chars.len());
            match rng.gen_range(0..3) {
                0 => {
                    chars[at] = PIECES[rng.gen_range(0..PIECES.len())]
                        .chars()
                        .next()
                        .unwrap_or('x')
                }
                1 => chars.insert(at, ['"', '[', '\n', '0', '='][rng.gen_range(0..5)]),
                _ => chars.truncate(at.max(1)),
            }
        }
        chars.into_iter().collect()
    }

    const VALID: &str = r#"hosts = ["h1", "h2"]
routers = ["r1"]
[defaults]
bw = "10Mbit"
delay = "1.5ms"
[classes.c]
loss = { model = "gilbert-elliott", p = "1%", r = 0.3 }
aqm = "red"
red = { min_th = 5, max_p = "10%" }
[[link]]
a = "h1"
b = "r1"
class = "c"
queue = "64KiB"
[[link]]
a = "r1"
b = "h2"
b_to_a = { bw = "1MB/s", jitter = "3us" }
"#;

    #[test]
    fn parsers_never_panic_on_random_and_edge_inputs() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(SEED);
        let json = r#"{"hosts": ["h1", "h2"], "link": [{"a": "h1", "b": "h2", "bw": "1Gbit", "delay": "0"}]}"#;
        for case in 0..600 {
            let text = match case % 3 {
                0 => random_text(&mut rng),
                1 => mutate(&mut rng, VALID),
                _ => mutate(&mut rng, json),
            };
            // A panic here fails the test; the seed and case make it reproducible.
            units(text.as_bytes());
            topology_toml(text.as_bytes());
            topology_json(text.as_bytes());
        }
        for edge in [
            "",
            " ",
            "-",
            ".",
            "-0",
            "0.",
            ".5ms",
            "1..2",
            "%",
            "-0%",
            "∞",
            "\u{feff}1s",
        ] {
            units(edge.as_bytes());
            topology_toml(edge.as_bytes());
        }
        units(&[0xff, 0xfe]);
        // The mutations start from files that load, so they reach past the syntax checks.
        load_str(VALID, Format::Toml, "valid.toml").unwrap();
        load_str(json, Format::Json, "valid.json").unwrap();
    }
}
