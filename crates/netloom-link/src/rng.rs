//! The pipe's random source, and the rule that a feature which cannot change the outcome draws nothing.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// One generator per pipe, seeded from the pipe's seed, so a run is reproducible.
pub(crate) type PipeRng = Xoshiro256PlusPlus;

/// True with probability `p`. Draws from `rng` only when the outcome is uncertain (0 < p < 1),
/// so a disabled impairment (p = 0) leaves the random stream of the others untouched.
#[inline]
pub(crate) fn chance(rng: &mut PipeRng, p: f64) -> bool {
    if p <= 0.0 {
        false
    } else if p >= 1.0 {
        true
    } else {
        rng.gen::<f64>() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn certain_outcomes_draw_nothing() {
        let mut a = PipeRng::seed_from_u64(7);
        let mut b = PipeRng::seed_from_u64(7);
        assert!(!chance(&mut a, 0.0));
        assert!(chance(&mut a, 1.0));
        // `a` must still be at the start of its stream.
        assert_eq!(a.gen::<u64>(), b.gen::<u64>());
        chance(&mut a, 0.5);
        assert_ne!(a.gen::<u64>(), b.gen::<u64>());
    }
}
