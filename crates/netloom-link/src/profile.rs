//! MAC delay profiles (Dummynet's wireless profiles): the extra air time of each transmission as
//! an empirical CDF, the text format users write measured ones in, and the bundled 802.11b/g
//! profiles derived from the standards' timing.

use crate::config::Standard;
use crate::empirical::{CdfError, Empirical, DEFAULT_SAMPLES, PPB};
use netloom_time::Rate;
use std::sync::{Arc, OnceLock};

/// A distribution of MAC overhead per transmission attempt, in nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelayProfile {
    /// The `name` line of the file, if any.
    pub name: Option<String>,
    /// MAC overhead added to each transmission attempt, in nanoseconds (the file's delays are
    /// milliseconds with up to 6 decimals, so the conversion is exact): backoff, preambles, MAC
    /// framing, SIFS and ACK, drawn afresh for every attempt.
    pub overhead: Empirical,
}

/// What is wrong with a profile file, and on which line (1-based; the last line for problems of
/// the whole curve).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct ProfileError {
    /// Line number in the file, from 1; the file's last line for a problem of the whole curve.
    pub line: usize,
    /// What is wrong there.
    pub problem: ProfileProblem,
}

/// What is wrong with one line of a profile file, or with the curve its points make. The
/// problems of a line do not quote it: the file may be anything (`mac_profile = "/etc/shadow"`),
/// so errors give its line number and what was expected there, never its contents.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProfileProblem {
    /// The line is none of the known forms (`name`, `samples`, the `prob delay` header, a
    /// `probability delay_ms` pair).
    #[error("not a line of a profile; write `prob delay_ms` pairs like `0.5 1.25`, or `name`, `samples`")]
    Unknown,
    /// A pair's probability is not a decimal in [0, 1] with at most 9 decimals.
    #[error("the probability must be a decimal in [0, 1] with at most 9 decimals, like 0.0625")]
    Probability,
    /// A pair's delay is not a non-negative decimal of milliseconds with at most 6 decimals
    /// (whole nanoseconds).
    #[error("the delay must be milliseconds as a decimal with at most 6 decimals, like 0.402")]
    Delay,
    /// The `samples` line's count is not a whole number that fits in u32.
    #[error("the samples count must be a whole number")]
    Samples,
    /// The points do not make a CDF, or the sample count is out of range (see `CdfError`);
    /// reported at the last line.
    #[error("{0}")]
    Curve(#[from] CdfError),
}

/// `text` as an exact integer in units of 10^-`decimals`: "0.0625" with 9 decimals is
/// 62 500 000. `None` if it is not a plain non-negative decimal or has more decimals.
pub(crate) fn parse_decimal(text: &str, decimals: u32) -> Option<u64> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && frac.is_empty()
        || !digits(whole)
        || !digits(frac)
        || frac.len() > decimals as usize
    {
        return None;
    }
    let scale = 10u64.checked_pow(decimals)?;
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let frac_value: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    let frac_scaled = frac_value * 10u64.pow(decimals - frac.len() as u32);
    whole.checked_mul(scale)?.checked_add(frac_scaled)
}

impl DelayProfile {
    /// Reads the profile format (see docs/wireless.md): `#` comments, optional `name NAME` and
    /// `samples N` lines, an optional `prob delay` header (Dummynet's), then one `probability
    /// delay_ms` pair per line, both non-decreasing, the last probability 1.
    pub fn parse(text: &str) -> Result<DelayProfile, ProfileError> {
        let mut name = None;
        let mut samples = DEFAULT_SAMPLES;
        let mut points = Vec::new();
        let mut last_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            last_line = line;
            let content = raw.split('#').next().unwrap_or("").trim();
            let fail = |problem| ProfileError { line, problem };
            let words: Vec<&str> = content.split_whitespace().collect();
            match words.as_slice() {
                [] | ["prob", "delay"] => {}
                ["name", rest @ ..] if !rest.is_empty() => name = Some(rest.join(" ")),
                ["samples", n] => samples = n.parse().map_err(|_| fail(ProfileProblem::Samples))?,
                [p, d] if p.starts_with(|c: char| c.is_ascii_digit() || c == '.') => {
                    let ppb = parse_decimal(p, 9)
                        .filter(|&v| v <= PPB)
                        .ok_or_else(|| fail(ProfileProblem::Probability))?;
                    let ns = parse_decimal(d, 6).ok_or_else(|| fail(ProfileProblem::Delay))?;
                    points.push((ppb, ns));
                }
                _ => return Err(fail(ProfileProblem::Unknown)),
            }
        }
        let overhead = Empirical::from_points(&points, samples).map_err(|e| ProfileError {
            line: last_line,
            problem: e.into(),
        })?;
        Ok(DelayProfile { name, overhead })
    }

    /// The bundled profile of `standard` at `rate`, if `rate` is one of its rates.
    pub fn bundled(standard: Standard, rate: Rate) -> Option<Arc<DelayProfile>> {
        static PROFILES: OnceLock<Vec<(Standard, Rate, Arc<DelayProfile>)>> = OnceLock::new();
        PROFILES
            .get_or_init(|| {
                BUNDLED
                    .iter()
                    .map(|&(standard, bps, text)| {
                        let profile = DelayProfile::parse(text)
                            .unwrap_or_else(|e| panic!("bundled profile {standard:?} {bps}: {e}"));
                        (standard, Rate::bps(bps), Arc::new(profile))
                    })
                    .collect()
            })
            .iter()
            .find(|(s, r, _)| *s == standard && *r == rate)
            .map(|(_, _, p)| p.clone())
    }
}

/// The bundled profile files (crates/netloom-link/data), by standard and rate in bit/s.
const BUNDLED: &[(Standard, u64, &str)] = &[
    (
        Standard::B,
        1_000_000,
        include_str!("../data/802.11b-1Mbit.profile"),
    ),
    (
        Standard::B,
        2_000_000,
        include_str!("../data/802.11b-2Mbit.profile"),
    ),
    (
        Standard::B,
        5_500_000,
        include_str!("../data/802.11b-5.5Mbit.profile"),
    ),
    (
        Standard::B,
        11_000_000,
        include_str!("../data/802.11b-11Mbit.profile"),
    ),
    (
        Standard::G,
        6_000_000,
        include_str!("../data/802.11g-6Mbit.profile"),
    ),
    (
        Standard::G,
        9_000_000,
        include_str!("../data/802.11g-9Mbit.profile"),
    ),
    (
        Standard::G,
        12_000_000,
        include_str!("../data/802.11g-12Mbit.profile"),
    ),
    (
        Standard::G,
        18_000_000,
        include_str!("../data/802.11g-18Mbit.profile"),
    ),
    (
        Standard::G,
        24_000_000,
        include_str!("../data/802.11g-24Mbit.profile"),
    ),
    (
        Standard::G,
        36_000_000,
        include_str!("../data/802.11g-36Mbit.profile"),
    ),
    (
        Standard::G,
        48_000_000,
        include_str!("../data/802.11g-48Mbit.profile"),
    ),
    (
        Standard::G,
        54_000_000,
        include_str!("../data/802.11g-54Mbit.profile"),
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_exact() {
        assert_eq!(parse_decimal("0.0625", 9), Some(62_500_000));
        assert_eq!(parse_decimal("1", 9), Some(PPB));
        assert_eq!(parse_decimal(".5", 3), Some(500));
        assert_eq!(parse_decimal("0.402", 6), Some(402_000));
        assert_eq!(parse_decimal("0.0000001", 6), None);
        assert_eq!(parse_decimal("-1", 6), None);
        assert_eq!(parse_decimal(".", 6), None);
        assert_eq!(parse_decimal("1e3", 6), None);
    }

    #[test]
    fn a_profile_file_reads_with_comments_and_header() {
        let p = DelayProfile::parse(
            "# measured on the lab AP\nname lab\nsamples 4\nprob delay\n0 0.1\n1 0.5 # max\n",
        )
        .unwrap();
        assert_eq!(p.name.as_deref(), Some("lab"));
        assert_eq!(p.overhead.samples(), &[150_000, 250_000, 350_000, 450_000]);
    }

    #[test]
    fn profile_errors_name_the_line() {
        let e = DelayProfile::parse("0 0.1\n0.5 abc\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert_eq!(e.problem, ProfileProblem::Delay);
        let e = DelayProfile::parse("0 0.1\n0.5 0.2\n").unwrap_err();
        assert_eq!(e.problem, ProfileProblem::Curve(CdfError::LastNotOne));
        let e = DelayProfile::parse("loss-level 0.3\n").unwrap_err();
        assert!(matches!(e.problem, ProfileProblem::Unknown));
    }
}
