//! Loading a topology text that must load, or that must fail with one clear error.

use netloom_topo::{load_str, Format, TopoError, Topology};

/// Loads TOML (named `topo.toml` in messages) that must load.
pub fn load(toml: &str) -> Topology {
    load_str(toml, Format::Toml, "topo.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// Loads TOML that must fail; returns the error.
pub fn load_err(toml: &str) -> TopoError {
    match load_str(toml, Format::Toml, "topo.toml") {
        Ok(_) => panic!("loaded, but should have failed:\n{toml}"),
        Err(e) => e,
    }
}

/// The full message of a TOML text that must fail with exactly one problem.
pub fn one_error(toml: &str) -> String {
    let e = load_err(toml);
    assert_eq!(e.diagnostics().len(), 1, "expected one error, got:\n{e}");
    e.to_string()
}
