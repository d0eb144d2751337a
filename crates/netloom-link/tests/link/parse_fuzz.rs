//! The file parsers' fuzz target (`link_files` in crates/netloom-topo/fuzz) on stable: random
//! and mutated profiles and traces never panic, and what parses can be used.

use netloom_link::{DelayProfile, Trace};
use netloom_time::Instant;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const SEED: u64 = 5;

const PROFILE: &str = "# lab\nname lab\nsamples 64\nprob delay\n0 0.1\n0.5 0.2\n0.5 0.3\n1 0.9\n";
const TRACE: &str = "1\n1\n2\n7\n7\n9\n";
const ALPHABET: &[u8] = b"0123456789.-# \n\tprobdelaynamesamples,e%";

fn mutate(rng: &mut Xoshiro256PlusPlus, base: &str) -> String {
    let mut bytes = base.as_bytes().to_vec();
    for _ in 0..rng.gen_range(1..6) {
        let at = rng.gen_range(0..=bytes.len());
        match rng.gen_range(0..3) {
            0 if at < bytes.len() => {
                bytes.remove(at);
            }
            1 if at < bytes.len() => bytes[at] = ALPHABET[rng.gen_range(0..ALPHABET.len())],
            _ => bytes.insert(at, ALPHABET[rng.gen_range(0..ALPHABET.len())]),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn exercise(text: &str) {
    let _ = DelayProfile::parse(text);
    if let Ok(trace) = Trace::parse(text) {
        let n = trace.first_at_or_after(Instant::from_nanos(u64::MAX / 2));
        let _ = (trace.mean_rate_bps(), trace.time_of(n));
    }
}

#[test]
fn mutated_and_random_inputs_never_panic() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(SEED);
    for case in 0..2000 {
        let text = match case % 3 {
            0 => mutate(&mut rng, PROFILE),
            1 => mutate(&mut rng, TRACE),
            _ => (0..rng.gen_range(0..80))
                .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char)
                .collect(),
        };
        // A panic here fails the test; the seed and the case number reproduce it.
        exercise(&text);
    }
    assert!(DelayProfile::parse(PROFILE).is_ok());
    assert!(Trace::parse(TRACE).is_ok());
}
