//! The two spellings of the one schema (TOML, JSON), and which one a file name announces.

use std::path::Path;

/// The two spellings of the one schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// TOML, the native format (`.toml`).
    Toml,
    /// JSON with the same schema (`.json`); the links are the array `link`.
    Json,
}

impl Format {
    /// The format a file name's extension announces (`.toml` or `.json`).
    pub fn from_path(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()? {
            "toml" => Some(Format::Toml),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}
