//! Errors of the traffic spec parser and of pattern expansion; the caller names the flag.

use thiserror::Error;

/// A bad `--traffic` spec or a pattern that does not fit the topology. Each message says what
/// would be valid; it does not name the flag, which the caller (the CLI) adds as context.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum TrafficError {
    /// A word of the spec has no `=`.
    #[error("\"{word}\" is not key=value (for example rate=5Mbit)")]
    NotKeyValue {
        /// The word as written.
        word: String,
    },
    /// A key that `--traffic` does not know.
    #[error("unknown key \"{key}\"{}; valid keys: {}", netloom_topo::did_you_mean(key, super::spec::KEYS), super::spec::KEYS.join(", "))]
    UnknownKey {
        /// The key as written.
        key: String,
    },
    /// The same key appears twice in the spec.
    #[error("key \"{key}\" given twice")]
    DuplicateKey {
        /// The repeated key.
        key: String,
    },
    /// A key the spec needs is absent: `source=` always, `rate=` for cbr, poisson and onoff,
    /// `on=` and `off=` for onoff, `pairs=` for pattern=pairs, `k=` for pattern=random-k.
    #[error("{what} needs {key}= ({example})")]
    MissingKey {
        /// The missing key.
        key: &'static str,
        /// What needs it, such as `source=cbr` or `a traffic spec`.
        what: String,
        /// A valid example of the key, such as `rate=5Mbit`.
        example: &'static str,
    },
    /// A key given for a pattern or source that does not use it, such as `rate=` with
    /// `source=aimd` or `k=` with `pattern=pairs`.
    #[error("{key}= does not apply to {what}{hint}")]
    KeyNotApplicable {
        /// The key that does not apply.
        key: String,
        /// The pattern or source it was given with, such as `source=aimd`.
        what: String,
        /// More advice, starting with `; `, or empty.
        hint: &'static str,
    },
    /// A value that does not parse or is out of range: an unknown pattern or source, a rate or
    /// duration that does not parse (no unit, an ambiguous one) or is zero where zero is
    /// refused, a size out of range, `k` below 1, malformed pairs, or a rate above one packet
    /// per nanosecond.
    #[error("{key}={value}: {expected}")]
    BadValue {
        /// The key whose value is wrong.
        key: &'static str,
        /// The value as written; for a rate that is too fast, the rate as netloom prints it.
        value: String,
        /// What would be valid.
        expected: String,
    },
    /// A `pairs=` name that is no node of the topology (pattern expansion).
    #[error("unknown host \"{name}\"; hosts are {known}")]
    UnknownHost {
        /// The name as written.
        name: String,
        /// The first few host names and how many there are, to show how hosts are named.
        known: String,
    },
    /// A `pairs=` name that is a router (pattern expansion).
    #[error("\"{name}\" is a router; flows run between hosts ({known})")]
    NotAHost {
        /// The router's name.
        name: String,
        /// The first few host names and how many there are.
        known: String,
    },
    /// A pair with the same host at both ends (pattern expansion).
    #[error("pair {name}:{name} sends to itself; a flow needs two different hosts")]
    SelfPair {
        /// The host named twice.
        name: String,
    },
    /// A pattern that expands to no flow: an empty list of pairs, `k` of 0, fewer than two
    /// hosts, or (random-k) every host in one group.
    #[error("pattern {pattern} gives no flows: {why}")]
    NoFlows {
        /// The pattern's name: `pairs`, `all-to-all` or `random-k`.
        pattern: &'static str,
        /// Which of those reasons, and what would give flows.
        why: String,
    },
    /// A pattern that expands to more flows than `MAX_FLOWS`, found before any is made.
    #[error(
        "pattern {pattern} gives {flows} flows over {hosts} hosts; the limit is {max} (each \
         flow keeps its latency histogram, about 30 kB); use random-k with a smaller k, or pairs",
        max = super::MAX_FLOWS
    )]
    TooManyFlows {
        /// The pattern's name.
        pattern: &'static str,
        /// Flows it would give.
        flows: u128,
        /// Hosts in the topology.
        hosts: usize,
    },
}
