//! Text with units → integers: rates, durations, fractions and queue sizes as written in a
//! topology file. Owns the unit vocabulary and its error messages; knows nothing of links or files.
//!
//! Numbers are parsed as decimal integers with a scale, never through `f64`, so "1.5ms" is exactly
//! 1 500 000 ns and "1.5Gbit" exactly 1 500 000 000 bit/s. A value that is not a whole number of
//! the base unit (bit/s, ns, bytes) is rejected rather than rounded.

use crate::doc::{Fraction, QueueSpec};
use netloom_link::QueueLimit;
use netloom_time::{Duration, Rate};
use std::fmt;

/// A value that could not be read; `Display` says what was written and what would be valid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{input} {problem}")]
pub struct UnitError {
    /// The value as written, quoted if it was a string.
    pub input: String,
    /// What is wrong with it and what to write instead.
    pub problem: String,
}

impl UnitError {
    fn text(input: &str, problem: impl Into<String>) -> UnitError {
        UnitError {
            input: format!("{input:?}"),
            problem: problem.into(),
        }
    }
}

const RATE_UNITS: &str = "bit, kbit, Mbit, Gbit, Tbit (bits/s, optionally with \"/s\") or B/s, kB/s, MB/s, GB/s, TB/s (bytes/s)";
const DURATION_UNITS: &str = "ns, us (or µs), ms, s";
const SIZE_UNITS: &str = "B, kB (= KB), MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024)";

/// A non-negative decimal number as written: `mantissa / 10^scale`.
#[derive(Clone, Copy, Debug)]
struct Decimal {
    mantissa: u128,
    scale: u32,
}

/// Why a decimal could not become a whole number of base units.
enum Inexact {
    Fractional,
    TooLarge,
}

impl Decimal {
    /// `self × multiplier` as a whole number, or why not.
    fn times(self, multiplier: u128) -> Result<u64, Inexact> {
        let product = self
            .mantissa
            .checked_mul(multiplier)
            .ok_or(Inexact::TooLarge)?;
        let divisor = 10u128.pow(self.scale);
        if product % divisor != 0 {
            return Err(Inexact::Fractional);
        }
        u64::try_from(product / divisor).map_err(|_| Inexact::TooLarge)
    }

    fn is_zero(self) -> bool {
        self.mantissa == 0
    }
}

/// Number and unit of a value like "1.5 ms"; `None` if it does not start with a number.
/// The bool says whether a minus sign was written (the caller decides what that means).
fn split(text: &str) -> Option<(bool, Decimal, String, &str)> {
    let t = text.trim();
    let (negative, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(end);
    let decimal = parse_decimal(number)?;
    Some((negative, decimal, number.to_string(), unit.trim()))
}

fn parse_decimal(number: &str) -> Option<Decimal> {
    let (int, frac) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Trailing zeros after the point carry no value; dropping them keeps long but exact
    // inputs like "1.000000000000000000000s" within range.
    let frac = frac.trim_end_matches('0');
    let int = int.trim_start_matches('0');
    // 38 digits always fit a u128; longer numbers are out of any sensible range anyway.
    if int.len() + frac.len() > 38 {
        return Some(Decimal {
            mantissa: u128::MAX,
            scale: 0,
        });
    }
    let mut mantissa: u128 = 0;
    for b in int.bytes().chain(frac.bytes()) {
        mantissa = mantissa * 10 + u128::from(b - b'0');
    }
    Some(Decimal {
        mantissa,
        scale: frac.len() as u32,
    })
}

/// Parses a link rate: "100Mbit", "100Mbit/s", "512kbit", "1Gbit", "1000bit" (prefix
/// case-insensitive, as in tc) or bytes per second "12MB/s", "500kB/s", "1GB/s", "100B/s" (SI).
/// Any "bps" spelling is rejected as ambiguous; bare numbers, zero and negative rates are rejected.
pub fn parse_rate(text: &str) -> Result<Rate, UnitError> {
    let Some((negative, number, digits, unit)) = split(text) else {
        return Err(UnitError::text(
            text,
            format!("is not a rate; write a number and a unit: {RATE_UNITS}"),
        ));
    };
    let lower = unit.to_ascii_lowercase();
    if let Some(prefix) = lower.strip_suffix("bps") {
        let (word, short) = match prefix {
            "" => ("bytes/s", ""),
            "k" => ("kilobytes/s", "k"),
            "m" => ("megabytes/s", "M"),
            "g" => ("gigabytes/s", "G"),
            "t" => ("terabytes/s", "T"),
            _ => {
                return Err(UnitError::text(
                    text,
                    format!("has an unknown unit; valid units are {RATE_UNITS}"),
                ))
            }
        };
        let bits_word = word.replace("bytes", "bits");
        return Err(UnitError::text(
            text,
            format!(
                "is ambiguous: tc reads it as {digits} {word}, most people as {digits} {bits_word}; \
                 write \"{digits}{short}bit\" or \"{digits}{short}B/s\""
            ),
        ));
    }
    if unit.is_empty() {
        return Err(UnitError::text(
            text,
            format!("has no unit; write \"{digits}Mbit\" or \"{digits}bit\""),
        ));
    }
    let bits = lower.strip_suffix("/s").unwrap_or(&lower);
    let multiplier: u128 = match bits {
        "bit" => 1,
        "kbit" => 1_000,
        "mbit" => 1_000_000,
        "gbit" => 1_000_000_000,
        "tbit" => 1_000_000_000_000,
        // Byte forms are case-sensitive in the "B": a lowercase "b" would mean bits to most readers.
        _ => match unit {
            "B/s" => 8,
            "kB/s" | "KB/s" => 8_000,
            "MB/s" => 8_000_000,
            "GB/s" => 8_000_000_000,
            "TB/s" => 8_000_000_000_000,
            _ => {
                return Err(UnitError::text(
                    text,
                    format!("has an unknown unit {unit:?}; valid units are {RATE_UNITS}"),
                ))
            }
        },
    };
    if negative && !number.is_zero() {
        return Err(UnitError::text(
            text,
            "is negative; a rate must be positive",
        ));
    }
    if number.is_zero() {
        return Err(UnitError::text(
            text,
            "is zero; a rate must be positive (to take a link down, write up = false)",
        ));
    }
    match number.times(multiplier) {
        Ok(bps) => Ok(Rate::bps(bps)),
        Err(Inexact::Fractional) => Err(UnitError::text(
            text,
            "is not a whole number of bit/s; use a smaller unit",
        )),
        Err(Inexact::TooLarge) => Err(UnitError::text(
            text,
            format!("is too large; the largest rate is {} bit/s", u64::MAX),
        )),
    }
}

/// Parses a duration: "5ms", "1.5ms", "100us", "100µs", "250ns", "1s", exact to the nanosecond.
/// "0" alone is zero; other bare numbers and negative durations are rejected.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let Some((negative, number, digits, unit)) = split(text) else {
        return Err(UnitError::text(
            text,
            format!("is not a duration; write a number and a unit: {DURATION_UNITS}"),
        ));
    };
    let multiplier: u128 = match unit {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "" if number.is_zero() => 1,
        "" => {
            return Err(UnitError::text(
                text,
                format!("has no unit; write \"{digits}ms\" or \"{digits}s\""),
            ))
        }
        _ => {
            return Err(UnitError::text(
                text,
                format!("has an unknown unit {unit:?}; valid units are {DURATION_UNITS}"),
            ))
        }
    };
    if negative && !number.is_zero() {
        return Err(UnitError::text(
            text,
            "is negative; a duration must be 0 or more",
        ));
    }
    match number.times(multiplier) {
        Ok(ns) => Ok(Duration::from_nanos(ns)),
        Err(Inexact::Fractional) => Err(UnitError::text(
            text,
            "is finer than a nanosecond; round it to whole ns",
        )),
        Err(Inexact::TooLarge) => Err(UnitError::text(
            text,
            "is too large; the longest duration is about 584 years",
        )),
    }
}

/// Parses a probability: a percentage string "0.5%" or a plain fraction in [0, 1]
/// (as a number or a numeric string).
pub fn parse_fraction(value: &Fraction) -> Result<f64, UnitError> {
    match value {
        Fraction::Number(x) => check_fraction(*x, || x.to_string()),
        Fraction::Text(text) => {
            let t = text.trim();
            if let Some(percent) = t.strip_suffix('%') {
                let p = percent.trim();
                let parsed = p.parse::<f64>().ok().filter(|v| v.is_finite()).filter(|_| {
                    p.bytes()
                        .all(|b| b.is_ascii_digit() || b == b'.' || b == b'-')
                });
                match parsed {
                    Some(v) if v < 0.0 => Err(UnitError::text(
                        text,
                        "is negative; a probability is between 0% and 100%",
                    )),
                    Some(v) if v > 100.0 => Err(UnitError::text(
                        text,
                        "is more than 100%; a probability is between 0% and 100%",
                    )),
                    Some(v) => Ok(v / 100.0),
                    None => Err(UnitError::text(
                        text,
                        "is not a percentage; write a number followed by %, like \"0.5%\"",
                    )),
                }
            } else {
                match t.parse::<f64>() {
                    Ok(x) if x.is_finite() => check_fraction(x, || format!("{text:?}")),
                    _ => Err(UnitError::text(
                        text,
                        "is not a probability; write a percentage like \"0.5%\" or a fraction in [0, 1] like 0.005",
                    )),
                }
            }
        }
    }
}

fn check_fraction(x: f64, shown: impl Fn() -> String) -> Result<f64, UnitError> {
    if x.is_nan() || x < 0.0 {
        return Err(UnitError {
            input: shown(),
            problem:
                "is not a probability; write a fraction in [0, 1] or a percentage like \"0.5%\""
                    .into(),
        });
    }
    if x > 1.0 {
        let hint = if x <= 100.0 {
            format!("; did you mean \"{x}%\"?")
        } else {
            String::new()
        };
        return Err(UnitError {
            input: shown(),
            problem: format!("is more than 1; a plain number is a fraction in [0, 1]{hint}"),
        });
    }
    Ok(x)
}

/// The values a plain number may take, written as an interval: `[1, 100]`, or `(0, 299792.458]`
/// when the lower end is excluded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    /// The lowest value.
    pub min: f64,
    /// Whether `min` itself is excluded.
    pub min_open: bool,
    /// The highest value (included).
    pub max: f64,
}

impl Range {
    /// From `min` to `max`, both included.
    pub const fn closed(min: f64, max: f64) -> Range {
        Range {
            min,
            min_open: false,
            max,
        }
    }

    /// Above `min` (excluded) up to `max` (included).
    pub const fn above(min: f64, max: f64) -> Range {
        Range {
            min,
            min_open: true,
            max,
        }
    }

    fn contains(&self, x: f64) -> bool {
        (if self.min_open {
            x > self.min
        } else {
            x >= self.min
        }) && x <= self.max
    }
}

impl std::fmt::Display for Range {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let open = if self.min_open { '(' } else { '[' };
        // f64::MAX stands for "no upper bound" (infinity itself is not a valid value).
        match self.max {
            f64::MAX => write!(f, "{open}{}, ∞)", self.min),
            max => write!(f, "{open}{}, {max}]", self.min),
        }
    }
}

/// `x` if it is a number within `range`: NaN and the infinities are refused like any value out
/// of range, and the error gives the range. Every plain number netloom reads (flags, file keys)
/// goes through here or [`parse_number`].
pub fn check_number(x: f64, range: Range) -> Result<f64, UnitError> {
    if range.contains(x) {
        return Ok(x);
    }
    let what = if x.is_nan() {
        "is not a number"
    } else {
        "is out of range"
    };
    Err(UnitError {
        input: x.to_string(),
        problem: format!("{what}; valid: {range}"),
    })
}

/// A plain number written as text, within `range` (see [`check_number`]).
pub fn parse_number(text: &str, range: Range) -> Result<f64, UnitError> {
    match text.trim().parse::<f64>() {
        Ok(x) => check_number(x, range).map_err(|e| UnitError {
            input: format!("{text:?}"),
            ..e
        }),
        Err(_) => Err(UnitError::text(
            text,
            format!("is not a number; valid: {range}"),
        )),
    }
}

/// Parses a signal-to-noise ratio in decibels: "12dB", "-3 dB" or a plain number ("12").
pub fn parse_snr(text: &str) -> Result<f64, UnitError> {
    let t = text.trim();
    let number = t
        .strip_suffix("dB")
        .or_else(|| t.strip_suffix("db"))
        .unwrap_or(t)
        .trim();
    match number.parse::<f64>() {
        Ok(db) if db.is_finite() => Ok(db),
        _ => Err(UnitError::text(
            text,
            "is not an SNR; write decibels like \"12dB\" or \"-3dB\"",
        )),
    }
}

/// Parses a byte size: "1500B", "64KB", "64kB", "1MB", "64KiB". KB and kB are 1000 bytes,
/// KiB is 1024. Zero is rejected.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let Some((negative, number, digits, unit)) = split(text) else {
        return Err(UnitError::text(
            text,
            format!("is not a size; write a number and a unit: {SIZE_UNITS}"),
        ));
    };
    let multiplier: u128 = match unit {
        "B" => 1,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "" => {
            return Err(UnitError::text(
                text,
                format!("has no unit; write {digits} (packets, without quotes) or \"{digits}B\""),
            ))
        }
        _ => {
            return Err(UnitError::text(
                text,
                format!("has an unknown unit {unit:?}; valid units are {SIZE_UNITS}"),
            ))
        }
    };
    if negative || number.is_zero() {
        return Err(UnitError::text(
            text,
            "is not positive; a size must be at least 1B",
        ));
    }
    match number.times(multiplier) {
        Ok(bytes) => Ok(bytes),
        Err(Inexact::Fractional) => Err(UnitError::text(
            text,
            "is not a whole number of bytes; use a smaller unit",
        )),
        Err(Inexact::TooLarge) => Err(UnitError::text(
            text,
            format!("is too large; the largest size is {} bytes", u64::MAX),
        )),
    }
}

/// Parses a queue limit: a packet count (integer > 0) or a byte size ("64KB", see `parse_size`).
pub fn parse_queue(value: &QueueSpec) -> Result<QueueLimit, UnitError> {
    match value {
        QueueSpec::Packets(n) if *n <= 0 => Err(UnitError {
            input: n.to_string(),
            problem:
                "is not a queue size; write a packet count of at least 1 or a size like \"64KB\""
                    .into(),
        }),
        QueueSpec::Packets(n) => {
            u32::try_from(*n)
                .map(QueueLimit::Packets)
                .map_err(|_| UnitError {
                    input: n.to_string(),
                    problem: format!(
                        "packets is too many; at most {}, or write a size like \"64MB\"",
                        u32::MAX
                    ),
                })
        }
        QueueSpec::Size(text) => parse_size(text).map(QueueLimit::Bytes),
    }
}

/// Writes a rate exactly, in the largest bit unit that divides it: "10Mbit", "1500kbit".
/// `parse_rate` reads it back to the same value.
pub fn format_rate(rate: Rate) -> String {
    let bps = rate.as_bps();
    let unit = [
        (1_000_000_000_000, "Tbit"),
        (1_000_000_000, "Gbit"),
        (1_000_000, "Mbit"),
        (1_000, "kbit"),
    ]
    .into_iter()
    .find(|(d, _)| bps >= *d && bps.is_multiple_of(*d));
    match unit {
        Some((d, name)) => format!("{}{name}", bps / d),
        None => format!("{bps}bit"),
    }
}

/// Writes a duration exactly, in the largest unit that divides it: "5ms", "1500us", "0".
/// `parse_duration` reads it back to the same value.
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        return "0".into();
    }
    let unit = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
        .into_iter()
        .find(|(div, _)| ns.is_multiple_of(*div));
    match unit {
        Some((div, name)) => format!("{}{name}", ns / div),
        None => format!("{ns}ns"),
    }
}

/// A byte count for people: "1.5MB"-style with SI prefixes (reports only, not re-parsed).
pub(crate) struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        let (div, unit) = match b {
            n if n >= 1_000_000_000 => (1e9, "GB"),
            n if n >= 1_000_000 => (1e6, "MB"),
            n if n >= 1_000 => (1e3, "kB"),
            _ => return write!(f, "{b}B"),
        };
        let v = b as f64 / div;
        let s = format!("{v:.2}");
        write!(f, "{}{unit}", s.trim_end_matches('0').trim_end_matches('.'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_finite_and_in_range_and_errors_give_the_range() {
        let unit = Range::closed(0.0, 1.0);
        assert_eq!(check_number(0.5, unit), Ok(0.5));
        let nan = check_number(f64::NAN, unit).unwrap_err().to_string();
        assert_eq!(nan, "NaN is not a number; valid: [0, 1]");
        let inf = check_number(f64::INFINITY, unit).unwrap_err().to_string();
        assert_eq!(inf, "inf is out of range; valid: [0, 1]");
        let speed = Range::above(0.0, 299_792.458);
        assert!(check_number(0.0, speed).is_err());
        let neg = parse_number("-1", Range::closed(1.0, 100.0)).unwrap_err();
        assert_eq!(neg.to_string(), "\"-1\" is out of range; valid: [1, 100]");
        assert!(parse_number("x", speed)
            .unwrap_err()
            .to_string()
            .contains("(0, 299792.458]"));
    }

    fn rate(s: &str) -> u64 {
        parse_rate(s)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .as_bps()
    }

    fn rate_err(s: &str) -> String {
        parse_rate(s).expect_err(s).to_string()
    }

    #[test]
    fn rates_in_bits_and_bytes() {
        assert_eq!(rate("100Mbit"), 100_000_000);
        assert_eq!(rate("100Mbit/s"), 100_000_000);
        assert_eq!(rate("100mbit"), 100_000_000);
        assert_eq!(rate("512kbit"), 512_000);
        assert_eq!(rate("512Kbit"), 512_000);
        assert_eq!(rate("1Gbit"), 1_000_000_000);
        assert_eq!(rate("1.5Gbit"), 1_500_000_000);
        assert_eq!(rate("1000bit"), 1000);
        assert_eq!(rate(" 10 Mbit "), 10_000_000);
        assert_eq!(rate("12MB/s"), 96_000_000);
        assert_eq!(rate("500kB/s"), 4_000_000);
        assert_eq!(rate("1GB/s"), 8_000_000_000);
        assert_eq!(rate("100B/s"), 800);
    }

    #[test]
    fn bps_is_ambiguous_and_names_both_readings() {
        assert_eq!(
            rate_err("10mbps"),
            "\"10mbps\" is ambiguous: tc reads it as 10 megabytes/s, most people as 10 megabits/s; \
             write \"10Mbit\" or \"10MB/s\""
        );
        for s in ["10Mbps", "10MBps", "10 mbps", "5kbps", "5bps", "1gbps"] {
            assert!(rate_err(s).contains("is ambiguous"), "{s}");
        }
        assert!(rate_err("5kbps").contains("write \"5kbit\" or \"5kB/s\""));
    }

    #[test]
    fn bad_rates_say_what_is_valid() {
        assert_eq!(
            rate_err("100"),
            "\"100\" has no unit; write \"100Mbit\" or \"100bit\""
        );
        assert!(rate_err("0Mbit").contains("is zero"));
        assert!(rate_err("0").contains("no unit"));
        assert!(rate_err("-5Mbit").contains("negative"));
        assert!(rate_err("10Mb/s").contains("valid units are"));
        assert!(rate_err("fast").contains("is not a rate"));
        assert!(rate_err("0.5bit").contains("whole number"));
        assert!(rate_err("99999999999999Tbit").contains("too large"));
    }

    #[test]
    fn durations_are_exact_to_the_nanosecond() {
        let d = |s: &str| parse_duration(s).unwrap_or_else(|e| panic!("{s}: {e}")).0;
        assert_eq!(d("5ms"), 5_000_000);
        assert_eq!(d("1.5ms"), 1_500_000);
        assert_eq!(d("100us"), 100_000);
        assert_eq!(d("100µs"), 100_000);
        assert_eq!(d("250ns"), 250);
        assert_eq!(d("1s"), 1_000_000_000);
        assert_eq!(d("0.000000001s"), 1);
        // f64 would give 4_999_999_999 or similar for some of these.
        assert_eq!(d("4.999999999s"), 4_999_999_999);
        assert_eq!(d("0.1s"), 100_000_000);
        assert_eq!(d("0"), 0);
        assert_eq!(d("0ms"), 0);
        assert_eq!(
            d("1.000000000000000000000000000000000000000s"),
            1_000_000_000
        );
    }

    #[test]
    fn bad_durations() {
        let e = |s: &str| parse_duration(s).expect_err(s).to_string();
        assert_eq!(e("5"), "\"5\" has no unit; write \"5ms\" or \"5s\"");
        assert!(e("-5ms").contains("negative"));
        assert!(e("1.5ns").contains("finer than a nanosecond"));
        assert!(e("5min").contains("valid units are ns, us"));
        assert!(e("ms").contains("is not a duration"));
        assert!(e("1.2.3ms").contains("is not a duration"));
        assert!(e("999999999999s").contains("too large"));
    }

    #[test]
    fn fractions_and_percentages() {
        let f = |v: Fraction| parse_fraction(&v).unwrap();
        assert_eq!(f(Fraction::Text("0.5%".into())), 0.005);
        assert_eq!(f(Fraction::Text("100%".into())), 1.0);
        assert_eq!(f(Fraction::Number(0.25)), 0.25);
        assert_eq!(f(Fraction::Number(1.0)), 1.0);
        assert_eq!(f(Fraction::Text("0.1".into())), 0.1);
        let e = parse_fraction(&Fraction::Number(50.0))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "50 is more than 1; a plain number is a fraction in [0, 1]; did you mean \"50%\"?"
        );
        for bad in ["150%", "-1%", "x%", "%", "abc", "NaN%", "inf"] {
            assert!(
                parse_fraction(&Fraction::Text(bad.into())).is_err(),
                "{bad}"
            );
        }
        assert!(parse_fraction(&Fraction::Number(-0.1)).is_err());
        assert!(parse_fraction(&Fraction::Number(f64::NAN)).is_err());
    }

    #[test]
    fn queues_in_packets_or_bytes() {
        let q = |v: QueueSpec| parse_queue(&v).unwrap();
        assert_eq!(q(QueueSpec::Packets(100)), QueueLimit::Packets(100));
        assert_eq!(q(QueueSpec::Size("64KB".into())), QueueLimit::Bytes(64_000));
        assert_eq!(q(QueueSpec::Size("64kB".into())), QueueLimit::Bytes(64_000));
        assert_eq!(q(QueueSpec::Size("1500B".into())), QueueLimit::Bytes(1500));
        assert_eq!(
            q(QueueSpec::Size("1MB".into())),
            QueueLimit::Bytes(1_000_000)
        );
        assert_eq!(
            q(QueueSpec::Size("64KiB".into())),
            QueueLimit::Bytes(65_536)
        );
        for bad in [
            QueueSpec::Packets(0),
            QueueSpec::Packets(-3),
            QueueSpec::Packets(1 << 40),
        ] {
            assert!(parse_queue(&bad).is_err(), "{bad:?}");
        }
        let e = parse_queue(&QueueSpec::Size("100".into()))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "\"100\" has no unit; write 100 (packets, without quotes) or \"100B\""
        );
        assert!(parse_queue(&QueueSpec::Size("64kb".into())).is_err());
        assert!(parse_queue(&QueueSpec::Size("0KB".into())).is_err());
    }

    #[test]
    fn formats_read_back_exactly() {
        for bps in [
            1,
            999,
            1000,
            1_500_000,
            10_000_000,
            1_000_000_000,
            123_456_789,
        ] {
            let r = Rate::bps(bps);
            assert_eq!(parse_rate(&format_rate(r)), Ok(r), "{bps}");
        }
        for ns in [0, 1, 1_500, 5_000_000, 1_000_000_000, 1_234_567_891] {
            let d = Duration(ns);
            assert_eq!(parse_duration(&format_duration(d)), Ok(d), "{ns}");
        }
        assert_eq!(format_rate(Rate::bps(10_000_000)), "10Mbit");
        assert_eq!(format_duration(Duration(1_500_000)), "1500us");
        assert_eq!(Bytes(25_000).to_string(), "25kB");
        assert_eq!(Bytes(1_250_000).to_string(), "1.25MB");
    }
}
