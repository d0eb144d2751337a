//! Errors of the traffic spec parser and of pattern expansion; each says what would be valid.

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum TrafficError {
    #[error("--traffic: \"{word}\" is not key=value (for example rate=5Mbit)")]
    NotKeyValue { word: String },
    #[error("--traffic: unknown key \"{key}\"; valid keys: {}", super::spec::KEYS.join(", "))]
    UnknownKey { key: String },
    #[error("--traffic: key \"{key}\" given twice")]
    DuplicateKey { key: String },
    #[error("--traffic: {what} needs {key}= ({example})")]
    MissingKey {
        key: &'static str,
        what: String,
        example: &'static str,
    },
    #[error("--traffic: {key}= does not apply to {what}{hint}")]
    KeyNotApplicable {
        key: String,
        what: String,
        hint: &'static str,
    },
    #[error("--traffic: {key}={value}: {expected}")]
    BadValue {
        key: &'static str,
        value: String,
        expected: String,
    },
    #[error("traffic: unknown host \"{name}\"; hosts are {known}")]
    UnknownHost { name: String, known: String },
    #[error("traffic: \"{name}\" is a router; flows run between hosts ({known})")]
    NotAHost { name: String, known: String },
    #[error("traffic: pair {name}:{name} sends to itself; a flow needs two different hosts")]
    SelfPair { name: String },
    #[error("traffic: pattern {pattern} gives no flows: {why}")]
    NoFlows { pattern: &'static str, why: String },
}
