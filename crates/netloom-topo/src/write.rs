//! Writing a topology document back out as TOML or JSON, in the same schema `load` reads.
//! Generators use this, so what they write is what a person would write.

use crate::doc::TopologyFile;

/// The document as TOML, tables separated by blank lines. Every value of `TopologyFile` has a
/// TOML form (no nulls, string keys), so this cannot fail.
pub fn to_toml(file: &TopologyFile) -> String {
    toml::to_string_pretty(file).expect("a TopologyFile always has a TOML form")
}

/// The document as pretty-printed JSON.
pub fn to_json(file: &TopologyFile) -> String {
    let mut text =
        serde_json::to_string_pretty(file).expect("a TopologyFile always has a JSON form");
    text.push('\n');
    text
}
