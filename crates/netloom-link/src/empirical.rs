//! Empirical distributions: a CDF written as (probability, value) points becomes a table of
//! equally likely samples, so that a draw is one random index and one lookup.

use crate::rng::PipeRng;
use rand::Rng;

/// Probabilities are integers in parts per billion: decimal CDF points such as 0.0625 are exact,
/// and interpolating a value between two points needs no floating point.
pub const PPB: u64 = 1_000_000_000;

/// How many samples a table has unless the file says otherwise. A multiple of 16 and 32, so
/// the bundled backoff staircases (16 or 32 equally likely slots) are reproduced exactly.
pub const DEFAULT_SAMPLES: u32 = 1024;

/// The most samples a table may have (8 MB of values).
pub const MAX_SAMPLES: u32 = 1 << 20;

/// Why a list of points is not a CDF.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CdfError {
    /// The list of points is empty.
    #[error("a distribution needs at least one point")]
    Empty,
    /// A point's probability is above `PPB` (1).
    #[error("point {index}: probability {ppb} ppb is above 1")]
    ProbabilityAboveOne {
        /// The offending point's position in the list, from 0.
        index: usize,
        /// Its probability, in parts per billion.
        ppb: u64,
    },
    /// A point's probability is below the previous point's.
    #[error("point {index}: probabilities must not decrease")]
    ProbabilityDecreases {
        /// The offending point's position in the list, from 0.
        index: usize,
    },
    /// A point's value is below the previous point's.
    #[error("point {index}: values must not decrease")]
    ValueDecreases {
        /// The offending point's position in the list, from 0.
        index: usize,
    },
    /// The last point's probability is not exactly `PPB`, so the CDF never reaches 1.
    #[error("the last point's probability must be 1")]
    LastNotOne,
    /// The requested number of samples is 0 or above `MAX_SAMPLES`; holds that number.
    #[error("samples must be between 1 and {MAX_SAMPLES}, not {0}")]
    Samples(u32),
}

/// A distribution of non-negative integers (nanoseconds, in practice) as equally likely samples.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Empirical {
    samples: Vec<u64>,
}

impl Empirical {
    /// Always `value`; drawing from it consumes no randomness.
    pub fn constant(value: u64) -> Empirical {
        Empirical {
            samples: vec![value],
        }
    }

    /// The CDF through `points` (probability in ppb, value), linear between points, sampled at
    /// the midpoints of `samples` equal probability slices. A point's probability is P(X ≤
    /// value); two points with the same probability make a jump, two with the same value a
    /// step (a probability mass at that value).
    pub fn from_points(points: &[(u64, u64)], samples: u32) -> Result<Empirical, CdfError> {
        if points.is_empty() {
            return Err(CdfError::Empty);
        }
        if samples == 0 || samples > MAX_SAMPLES {
            return Err(CdfError::Samples(samples));
        }
        for (index, &(ppb, _)) in points.iter().enumerate() {
            if ppb > PPB {
                return Err(CdfError::ProbabilityAboveOne { index, ppb });
            }
            if index > 0 {
                let (p0, v0) = points[index - 1];
                if ppb < p0 {
                    return Err(CdfError::ProbabilityDecreases { index });
                }
                if points[index].1 < v0 {
                    return Err(CdfError::ValueDecreases { index });
                }
            }
        }
        if points[points.len() - 1].0 != PPB {
            return Err(CdfError::LastNotOne);
        }
        // Sample i sits at probability (2i + 1) / 2n; everything is scaled by 2n to stay integer.
        let n = u128::from(samples);
        let mut segment = 0;
        let values = (0..n)
            .map(|i| {
                let q = (2 * i + 1) * u128::from(PPB);
                let scaled = |k: usize| u128::from(points[k].0) * 2 * n;
                while segment + 1 < points.len() && scaled(segment + 1) <= q {
                    segment += 1;
                }
                let (p0, v0) = (scaled(segment), points[segment].1);
                if q <= p0 || segment + 1 == points.len() {
                    return v0;
                }
                let (p1, v1) = (scaled(segment + 1), points[segment + 1].1);
                let offset = u128::from(v1 - v0) * (q - p0) / (p1 - p0);
                v0 + offset as u64
            })
            .collect();
        Ok(Empirical { samples: values })
    }

    /// One draw. A constant distribution draws nothing from `rng`.
    #[inline]
    pub(crate) fn sample(&self, rng: &mut PipeRng) -> u64 {
        match self.samples.len() {
            1 => self.samples[0],
            n => self.samples[rng.gen_range(0..n)],
        }
    }

    /// The equally likely samples.
    pub fn samples(&self) -> &[u64] {
        &self.samples
    }

    /// The mean of the samples, rounded down.
    pub fn mean(&self) -> u64 {
        let sum: u128 = self.samples.iter().map(|&v| u128::from(v)).sum();
        (sum / self.samples.len() as u128) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_line_is_sampled_at_midpoints() {
        let e = Empirical::from_points(&[(0, 0), (PPB, 1000)], 4).unwrap();
        assert_eq!(e.samples(), &[125, 375, 625, 875]);
        assert_eq!(e.mean(), 500);
    }

    #[test]
    fn staircase_gives_each_step_its_share() {
        // Two equally likely values 10 and 20: a step at each, a jump between.
        let points = [(0, 10), (PPB / 2, 10), (PPB / 2, 20), (PPB, 20)];
        let e = Empirical::from_points(&points, 8).unwrap();
        assert_eq!(e.samples(), &[10, 10, 10, 10, 20, 20, 20, 20]);
    }

    #[test]
    fn mass_below_the_first_point_takes_its_value() {
        let e = Empirical::from_points(&[(PPB / 2, 7), (PPB, 9)], 4).unwrap();
        assert_eq!(e.samples(), &[7, 7, 7, 8]);
    }

    #[test]
    fn bad_point_lists_are_refused() {
        assert_eq!(Empirical::from_points(&[], 4), Err(CdfError::Empty));
        assert_eq!(
            Empirical::from_points(&[(PPB / 2, 5)], 4),
            Err(CdfError::LastNotOne)
        );
        assert_eq!(
            Empirical::from_points(&[(PPB / 2, 5), (PPB / 4, 6), (PPB, 7)], 4),
            Err(CdfError::ProbabilityDecreases { index: 1 })
        );
        assert_eq!(
            Empirical::from_points(&[(0, 5), (PPB, 4)], 4),
            Err(CdfError::ValueDecreases { index: 1 })
        );
        assert_eq!(
            Empirical::from_points(&[(0, 5), (PPB, 6)], 0),
            Err(CdfError::Samples(0))
        );
    }
}
