//! The `--traffic SPEC` parser: space-separated `key=value` words naming a pattern, a source and
//! its parameters. Not here: resolving host names (`pattern::expand`).

use super::{Pattern, SourceKind, TrafficError, HEADER_BYTES};
use netloom_time::{Duration, Rate};
use std::collections::BTreeMap;

/// Keys `--traffic` accepts.
pub(super) const KEYS: &[&str] = &[
    "pattern", "pairs", "k", "source", "rate", "size", "on", "off", "cap",
];

/// Packet size on the wire when `size=` is not given (for AIMD: 1460 payload + 40 header).
pub const DEFAULT_SIZE: u32 = 1500;

/// A parsed `--traffic` spec: what every flow sends, between which hosts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrafficSpec {
    pub pattern: Pattern,
    pub kind: SourceKind,
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
            words.reject(&["k"], "pattern=pairs", "")?;
            let v = words.require("pairs", "pattern=pairs", "pairs=h1:h2,h3:h4")?;
            Ok(Pattern::Pairs(pairs(v)?))
        }
        "all-to-all" => {
            words.reject(&["pairs", "k"], "pattern=all-to-all", "")?;
            Ok(Pattern::AllToAll)
        }
        "random-k" => {
            words.reject(&["pairs"], "pattern=random-k", "")?;
            let v = words.require("k", "pattern=random-k", "k=4")?;
            match v.parse::<usize>() {
                Ok(k) if k >= 1 => Ok(Pattern::RandomK { k }),
                _ => Err(bad("k", v, "a whole number of hosts, at least 1")),
            }
        }
        other => Err(bad("pattern", other, "one of pairs, all-to-all, random-k")),
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

fn positive_rate(key: &'static str, v: &str) -> Result<Rate, TrafficError> {
    match units::rate(v) {
        Some(r) if r.as_bps() > 0 => Ok(r),
        _ => Err(bad(
            key,
            v,
            "a rate above zero with a unit: bit, kbit, Mbit, Gbit, or kB/s, MB/s, GB/s (5Mbit)",
        )),
    }
}

fn duration(key: &'static str, v: &str) -> Result<Duration, TrafficError> {
    units::duration(v).ok_or_else(|| {
        bad(
            key,
            v,
            "a duration with a unit: ns, us, ms, s (for example 100ms)",
        )
    })
}

fn positive_duration(key: &'static str, v: &str) -> Result<Duration, TrafficError> {
    match duration(key, v)? {
        Duration(0) => Err(bad(key, v, "a duration above zero, for example 100ms")),
        d => Ok(d),
    }
}

/// Number-with-unit parsing, exact in integers.
mod units {
    use netloom_time::{Duration, Rate};

    pub fn rate(v: &str) -> Option<Rate> {
        let (num, unit) = split(v)?;
        let per_unit: u64 = match unit {
            "bit" => 1,
            "kbit" => 1_000,
            "Mbit" => 1_000_000,
            "Gbit" => 1_000_000_000,
            "kB/s" => 8_000,
            "MB/s" => 8_000_000,
            "GB/s" => 8_000_000_000,
            _ => return None,
        };
        scale(num, per_unit).map(Rate)
    }

    pub fn duration(v: &str) -> Option<Duration> {
        let (num, unit) = split(v)?;
        let per_unit: u64 = match unit {
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            _ => return None,
        };
        scale(num, per_unit).map(Duration)
    }

    /// "12.5Mbit" → ("12.5", "Mbit").
    fn split(v: &str) -> Option<(&str, &str)> {
        let at = v.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        Some(v.split_at(at))
    }

    /// `num` (a decimal such as "12.5") × `per_unit`, which must come out a whole number.
    fn scale(num: &str, per_unit: u64) -> Option<u64> {
        let (int, frac) = num.split_once('.').unwrap_or((num, ""));
        if int.is_empty() || !(int.bytes().all(|b| b.is_ascii_digit())) || frac.len() > 18 {
            return None;
        }
        let digits: u128 = format!("{int}{frac}").parse().ok()?;
        let denom = 10u128.pow(frac.len() as u32);
        let value = digits.checked_mul(per_unit as u128)?;
        (value % denom == 0)
            .then(|| u64::try_from(value / denom).ok())
            .flatten()
    }
}
