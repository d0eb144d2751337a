//! Errors of the traffic spec parser and of pattern expansion; the caller names the flag.

use thiserror::Error;

/// A bad `--traffic` spec or a pattern that does not fit the topology. Each message says what
/// would be valid; it does not name the flag, which the caller (the CLI) adds as context.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum TrafficError {
    #[error("\"{word}\" is not key=value (for example rate=5Mbit)")]
    NotKeyValue { word: String },
    #[error("unknown key \"{key}\"; valid keys: {}", super::spec::KEYS.join(", "))]
    UnknownKey { key: String },
    #[error("key \"{key}\" given twice")]
    DuplicateKey { key: String },
    #[error("{what} needs {key}= ({example})")]
    MissingKey {
        key: &'static str,
        what: String,
        example: &'static str,
    },
    #[error("{key}= does not apply to {what}{hint}")]
    KeyNotApplicable {
        key: String,
        what: String,
        hint: &'static str,
    },
    #[error("{key}={value}: {expected}")]
    BadValue {
        key: &'static str,
        value: String,
        expected: String,
    },
    #[error("unknown host \"{name}\"; hosts are {known}")]
    UnknownHost { name: String, known: String },
    #[error("\"{name}\" is a router; flows run between hosts ({known})")]
    NotAHost { name: String, known: String },
    #[error("pair {name}:{name} sends to itself; a flow needs two different hosts")]
    SelfPair { name: String },
    #[error("pattern {pattern} gives no flows: {why}")]
    NoFlows { pattern: &'static str, why: String },
}
