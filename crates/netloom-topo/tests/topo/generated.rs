//! Every generator's default document resolves, and loads back to the same model from the TOML
//! and the JSON that `write` produces.

use netloom_topo::gen::{generate, GenKind};
use netloom_topo::{load_str, resolve, write, Format};

#[test]
fn every_generated_default_resolves_and_round_trips() {
    for kind in GenKind::NAMES {
        let file = generate(&GenKind::with_defaults(kind).unwrap()).unwrap();
        let topo = resolve(&file, kind).unwrap_or_else(|e| panic!("{kind}: {e}"));
        let from_toml = load_str(&write::to_toml(&file), Format::Toml, kind)
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(from_toml, topo, "{kind} via TOML");
        let from_json = load_str(&write::to_json(&file), Format::Json, kind)
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(from_json, topo, "{kind} via JSON");
    }
}
