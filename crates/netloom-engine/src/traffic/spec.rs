//! The `--traffic SPEC` parser (`key=value` words); not host-name resolution (`pattern`).

use super::{Pattern, SourceKind, TrafficError, HEADER_BYTES};
use netloom_time::{Duration, Rate};
use netloom_topo::units::{parse_duration, parse_rate};
use std::collections::BTreeMap;

/// Keys `--traffic` accepts.
pub(super) const KEYS: &[&str] = &[
    "pattern", "pairs", "k", "within", "source", "rate", "size", "on", "off", "cap",
];

/// Packet size on the wire when `size=` is not given (for AIMD: 1460 payload + 40 header).
pub const DEFAULT_SIZE: u32 = 1500;

/// A parsed `--traffic` spec: what every flow sends, between which hosts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrafficSpec {
    /// Which hosts send to which: `pattern=`, with `pairs=` or `k=`.
    pub pattern: Pattern,
    /// What every flow sends: `source=`, with `rate=`, `size=`, `on=` and `off=` as it needs.
    pub kind: SourceKind,
    /// `cap=`: the most each flow may send, in bit/s; `None` when not given.
    pub cap: Option<Rate>,
}

/// Parses a spec such as `pattern=random-k k=4 source=aimd cap=3Mbit`.
///
/// Without `pattern=`, the pattern is `pairs` if `pairs=` is given, `random-k` if `k=` is, and
/// `all-to-all` otherwise. `source=` is required.
pub fn parse_spec(spec: &str) -> Result<TrafficSpec, TrafficError> {
    let mut words = Words::split(spec)?;
    let pattern = pattern(&mut words)?;
    let kind = source(&mut words)?;
    let cap = words
        .take("cap")
        .map(|v| positive_rate("cap", v))
        .transpose()?;
    Ok(TrafficSpec { pattern, kind, cap })
}

/// The key=value words of a spec, taken one key at a time so that leftovers can be reported.
struct Words<'a>(BTreeMap<&'a str, &'a str>);

impl<'a> Words<'a> {
    fn split(spec: &'a str) -> Result<Words<'a>, TrafficError> {
        let mut map = BTreeMap::new();
        for word in spec.split_whitespace() {
            let Some((key, value)) = word.split_once('=') else {
                return Err(TrafficError::NotKeyValue { word: word.into() });
            };
            if !KEYS.contains(&key) {
                return Err(TrafficError::UnknownKey { key: key.into() });
            }
            if map.insert(key, value).is_some() {
                return Err(TrafficError::DuplicateKey { key: key.into() });
            }
        }
        Ok(Words(map))
    }

    fn take(&mut self, key: &str) -> Option<&'a str> {
        self.0.remove(key)
    }

    fn require(
        &mut self,
        key: &'static str,
        what: &str,
        example: &'static str,
    ) -> Result<&'a str, TrafficError> {
        self.take(key).ok_or_else(|| TrafficError::MissingKey {
            key,
            what: what.into(),
            example,
        })
    }

    /// Rejects `keys` if present: they do not apply to `what`.
    fn reject(&self, keys: &[&str], what: &str, hint: &'static str) -> Result<(), TrafficError> {
        match keys.iter().find(|k| self.0.contains_key(*k)) {
            Some(k) => Err(TrafficError::KeyNotApplicable {
                key: (*k).into(),
                what: what.into(),
                hint,
            }),
            None => Ok(()),
        }
    }
}

fn pattern(words: &mut Words) -> Result<Pattern, TrafficError> {
    let name = match words.take("pattern") {
        Some(p) => p,
        None if words.0.contains_key("pairs") => "pairs",
        None if words.0.contains_key("k") => "random-k",
        None => "all-to-all",
    };
    match name {
        "pairs" => {
            words.reject(&["k", "within"], "pattern=pairs", "")?;
            let v = words.require("pairs", "pattern=pairs", "pairs=h1:h2,h3:h4")?;
            Ok(Pattern::Pairs(pairs(v)?))
        }
        "all-to-all" => {
            words.reject(&["pairs", "k", "within"], "pattern=all-to-all", "")?;
            Ok(Pattern::AllToAll)
        }
        "random-k" => {
            words.reject(&["pairs", "within"], "pattern=random-k", "")?;
            let v = words.require("k", "pattern=random-k", "k=4")?;
            match v.parse::<usize>() {
                Ok(k) if k >= 1 => Ok(Pattern::RandomK { k }),
                _ => Err(bad("k", v, "a whole number of hosts, at least 1")),
            }
        }
        "switching" => {
            words.reject(&["pairs", "k"], "pattern=switching", "")?;
            let v = words.require("within", "pattern=switching", "within=300s")?;
            Ok(Pattern::Switching {
                within: positive_duration("within", v)?,
            })
        }
        other => Err(bad(
            "pattern",
            other,
            "one of pairs, all-to-all, random-k, switching",
        )),
    }
}

fn pairs(v: &str) -> Result<Vec<(String, String)>, TrafficError> {
    v.split(',')
        .map(|pair| match pair.split_once(':') {
            Some((a, b)) if !a.is_empty() && !b.is_empty() && !b.contains(':') => {
                Ok((a.to_string(), b.to_string()))
            }
            _ => Err(bad(
                "pairs",
                v,
                "comma-separated src:dst host names, for example h1:h2,h3:h4",
            )),
        })
        .collect()
}

fn source(words: &mut Words) -> Result<SourceKind, TrafficError> {
    let name = words.require("source", "a traffic spec", "source=cbr|poisson|onoff|aimd")?;
    let what = format!("source={name}");
    match name {
        "cbr" | "poisson" => {
            words.reject(&["on", "off"], &what, "; on= and off= are for source=onoff")?;
            let rate = positive_rate("rate", words.require("rate", &what, "rate=5Mbit")?)?;
            let size = size(words, 1)?;
            packets_per_ns_at_most_one(rate, size)?;
            Ok(if name == "cbr" {
                SourceKind::Cbr { rate, size }
            } else {
                SourceKind::Poisson { rate, size }
            })
        }
        "onoff" => {
            let rate = positive_rate("rate", words.require("rate", &what, "rate=2Mbit")?)?;
            let on = positive_duration("on", words.require("on", &what, "on=100ms")?)?;
            let off = duration("off", words.require("off", &what, "off=400ms")?)?;
            let size = size(words, 1)?;
            packets_per_ns_at_most_one(rate, size)?;
            Ok(SourceKind::OnOff {
                rate,
                size,
                on,
                off,
            })
        }
        "aimd" => {
            words.reject(
                &["rate", "on", "off"],
                &what,
                "; an AIMD flow finds its own rate (limit it with cap=)",
            )?;
            let size = size(words, HEADER_BYTES + 1)?;
            Ok(SourceKind::Aimd {
                mss: size - HEADER_BYTES,
            })
        }
        other => Err(bad("source", other, "one of cbr, poisson, onoff, aimd")),
    }
}

/// `size=`, bytes on the wire, at least `min`.
fn size(words: &mut Words, min: u32) -> Result<u32, TrafficError> {
    let Some(v) = words.take("size") else {
        return Ok(DEFAULT_SIZE);
    };
    match v.parse::<u32>() {
        Ok(s) if (min..=65_535).contains(&s) => Ok(s),
        _ if min > 1 => Err(bad(
            "size",
            v,
            "bytes on the wire from 41 to 65535 (40 header bytes plus the payload)",
        )),
        _ => Err(bad("size", v, "bytes on the wire from 1 to 65535")),
    }
}

fn bad(key: &'static str, value: &str, expected: &str) -> TrafficError {
    TrafficError::BadValue {
        key,
        value: value.into(),
        expected: expected.into(),
    }
}

/// A rate in the topology file's vocabulary (`5Mbit`, `125kB/s`), above zero.
/// Time is kept in whole nanoseconds, so a source may send at most one packet per nanosecond;
/// faster rates would also simulate for ever.
fn packets_per_ns_at_most_one(rate: Rate, size: u32) -> Result<(), TrafficError> {
    let max_bps = u64::from(size) * 8 * 1_000_000_000;
    if rate.as_bps() > max_bps {
        let text = rate.to_string();
        let valid = format!("at most one {size}-byte packet per nanosecond ({max_bps}bit)");
        return Err(bad("rate", &text, &valid));
    }
    Ok(())
}

fn positive_rate(key: &'static str, v: &str) -> Result<Rate, TrafficError> {
    parse_rate(v).map_err(|e| bad(key, v, &e.to_string()))
}

/// A duration in the topology file's vocabulary (`100ms`, `1.5s`).
fn duration(key: &'static str, v: &str) -> Result<Duration, TrafficError> {
    parse_duration(v).map_err(|e| bad(key, v, &e.to_string()))
}

fn positive_duration(key: &'static str, v: &str) -> Result<Duration, TrafficError> {
    match duration(key, v)? {
        Duration(0) => Err(bad(key, v, "a duration above zero, for example 100ms")),
        d => Ok(d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> TrafficSpec {
        parse_spec(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn err(s: &str) -> String {
        match parse_spec(s) {
            Ok(spec) => panic!("{s} parsed as {spec:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn parses_the_documented_examples() {
        assert_eq!(
            ok("pattern=pairs pairs=h1:h2,h3:h4 source=cbr rate=5Mbit size=1500"),
            TrafficSpec {
                pattern: Pattern::Pairs(vec![
                    ("h1".into(), "h2".into()),
                    ("h3".into(), "h4".into())
                ]),
                kind: SourceKind::Cbr {
                    rate: Rate::bps(5_000_000),
                    size: 1500
                },
                cap: None,
            }
        );
        assert_eq!(
            ok("pattern=all-to-all source=poisson rate=1Mbit"),
            TrafficSpec {
                pattern: Pattern::AllToAll,
                kind: SourceKind::Poisson {
                    rate: Rate::bps(1_000_000),
                    size: DEFAULT_SIZE
                },
                cap: None,
            }
        );
        assert_eq!(
            ok("pattern=random-k k=4 source=aimd cap=3Mbit"),
            TrafficSpec {
                pattern: Pattern::RandomK { k: 4 },
                kind: SourceKind::Aimd { mss: 1460 },
                cap: Some(Rate::bps(3_000_000)),
            }
        );
        assert_eq!(
            ok("pattern=switching within=300s source=aimd cap=3Mbit").pattern,
            Pattern::Switching {
                within: Duration::from_secs(300)
            }
        );
        assert_eq!(
            ok("source=onoff rate=2Mbit on=100ms off=400ms"),
            TrafficSpec {
                pattern: Pattern::AllToAll,
                kind: SourceKind::OnOff {
                    rate: Rate::bps(2_000_000),
                    size: DEFAULT_SIZE,
                    on: Duration::from_millis(100),
                    off: Duration::from_millis(400),
                },
                cap: None,
            }
        );
    }

    #[test]
    fn the_examples_in_the_documentation_parse() {
        let doc = include_str!("../../../../docs/traffic.md");
        let examples: Vec<&str> = doc
            .split("```traffic\n")
            .skip(1)
            .map(|block| block.split("```").next().unwrap_or("").trim())
            .collect();
        assert_eq!(examples.len(), 5);
        for e in examples {
            ok(e);
        }
    }

    #[test]
    fn infers_the_pattern_and_reads_units_exactly() {
        assert!(matches!(
            ok("pairs=a:b source=aimd size=576").pattern,
            Pattern::Pairs(_)
        ));
        assert_eq!(
            ok("k=2 source=aimd size=576"),
            TrafficSpec {
                pattern: Pattern::RandomK { k: 2 },
                kind: SourceKind::Aimd { mss: 536 },
                cap: None
            }
        );
        let s = ok("  source=cbr\trate=1.5Gbit  cap=125kB/s ");
        assert_eq!(
            s.kind,
            SourceKind::Cbr {
                rate: Rate::bps(1_500_000_000),
                size: 1500
            }
        );
        assert_eq!(s.cap, Some(Rate::bps(1_000_000)));
        let s = ok("source=onoff rate=1kbit on=1.5ms off=0s size=64");
        assert_eq!(
            s.kind,
            SourceKind::OnOff {
                rate: Rate::bps(1000),
                size: 64,
                on: Duration(1_500_000),
                off: Duration::ZERO,
            }
        );
    }

    #[test]
    fn each_error_says_what_would_be_valid() {
        let cases = [
            ("source=cbr rate=5Mbit speed=3", "unknown key \"speed\"; valid keys: pattern, pairs, k, within, source, rate, size, on, off, cap"),
            ("sorce=cbr rate=5Mbit", "unknown key \"sorce\" (did you mean \"source\"?); valid keys: pattern, pairs, k, within, source, rate, size, on, off, cap"),
            ("source=cbr rate=5Mbit rate=4Mbit", "key \"rate\" given twice"),
            ("source=cbr 5Mbit", "\"5Mbit\" is not key=value"),
            ("rate=5Mbit", "a traffic spec needs source= (source=cbr|poisson|onoff|aimd)"),
            ("source=cbr", "source=cbr needs rate= (rate=5Mbit)"),
            ("source=poisson size=100", "source=poisson needs rate="),
            ("source=onoff rate=1Mbit on=1s", "source=onoff needs off= (off=400ms)"),
            ("source=tcp", "source=tcp: one of cbr, poisson, onoff, aimd"),
            ("source=cbr rate=5", "rate=5: \"5\" has no unit; write \"5Mbit\" or \"5bit\""),
            ("source=cbr rate=0Mbit", "rate=0Mbit: \"0Mbit\""),
            ("source=cbr rate=10mbps", "rate=10mbps: \"10mbps\" is ambiguous"),
            ("source=cbr rate=1Mbit size=0", "size=0: bytes on the wire from 1 to 65535"),
            ("source=aimd size=40", "size=40: bytes on the wire from 41 to 65535"),
            ("source=aimd rate=1Mbit", "rate= does not apply to source=aimd; an AIMD flow finds its own rate (limit it with cap=)"),
            ("source=cbr rate=1Mbit on=1s", "on= does not apply to source=cbr; on= and off= are for source=onoff"),
            ("source=onoff rate=1Mbit on=0s off=1s", "on=0s: a duration above zero"),
            ("source=onoff rate=1Mbit on=5 off=1s", "on=5: \"5\""),
            ("pattern=star source=aimd", "pattern=star: one of pairs, all-to-all, random-k, switching"),
            ("pattern=switching source=aimd", "pattern=switching needs within= (within=300s)"),
            ("pattern=switching within=0s source=aimd", "within=0s: a duration above zero, for example 100ms"),
            ("pattern=switching within=30s k=2 source=aimd", "k= does not apply to pattern=switching"),
            ("pattern=random-k k=2 within=30s source=aimd", "within= does not apply to pattern=random-k"),
            ("pattern=pairs source=aimd", "pattern=pairs needs pairs= (pairs=h1:h2,h3:h4)"),
            ("pattern=random-k source=aimd", "pattern=random-k needs k= (k=4)"),
            ("k=0 source=aimd", "k=0: a whole number of hosts, at least 1"),
            ("pattern=all-to-all k=3 source=aimd", "k= does not apply to pattern=all-to-all"),
            ("pairs=h1-h2 source=aimd", "pairs=h1-h2: comma-separated src:dst host names"),
            ("pairs=h1:h2, source=aimd", "pairs=h1:h2,: comma-separated src:dst"),
            ("source=aimd cap=fast", "cap=fast: \"fast\" is not a rate; write a number and a unit"),
            ("source=cbr rate=20000Gbit size=1000", "rate=20000Gbit: at most one 1000-byte packet per nanosecond (8000000000000bit)"),
            ("source=poisson rate=18446744073709551615bit", "at most one 1500-byte packet per nanosecond"),
        ];
        for (spec, want) in cases {
            let got = err(spec);
            assert!(got.contains(want), "{spec}: got {got:?}, want {want:?}");
        }
    }
}
