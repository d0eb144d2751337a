//! A stable-Rust stand-in for the `traffic_spec` fuzz target (crates/netloom-engine/fuzz): a few
//! hundred random and mutated `--traffic` specs must give a spec or an error, never a panic, in
//! `parse_spec` and in what the CLI does next with a spec (expanding it over a topology and adding
//! its flows to an engine). Deterministic: the generator's seed is fixed and printed on failure.

use crate::common;
use netloom_engine::traffic::{self, parse_spec};
use netloom_engine::Engine;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// SplitMix64: small, seedable, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Valid specs (those of docs/traffic.md, with the dumbbell's host names) to mutate.
const SEEDS: &[&str] = &[
    "pattern=pairs pairs=left1:right1,left2:right2 source=cbr rate=5Mbit size=1500",
    "pattern=all-to-all source=poisson rate=1Mbit",
    "pattern=random-k k=4 source=aimd cap=3Mbit",
    "source=onoff rate=2Mbit on=100ms off=400ms",
    "k=2 source=cbr rate=64kbit size=200",
];

const KEYS: &[&str] = &[
    "pattern", "pairs", "k", "source", "rate", "size", "on", "off", "cap", "", "speed", "Rate",
];

/// Values, valid and not, for any key: edge numbers, odd units, odd characters.
const VALUES: &[&str] = &[
    "",
    "0",
    "1",
    "-1",
    "41",
    "40",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "1e999",
    "NaN",
    "inf",
    "-inf",
    "0.0000001",
    "1.5",
    ".5",
    "5.",
    "1bit",
    "0Mbit",
    "1Mbit",
    "10mbps",
    "10Mbps",
    "1e3Mbit",
    "1.5Gbit",
    "1000000Gbit",
    "18446744073709551615bit",
    "125kB/s",
    "1MB/s",
    "1TB/s",
    "0s",
    "1ns",
    "1us",
    "1µs",
    "100ms",
    "18446744073709551615ns",
    "1e20s",
    "99999999s",
    "-5ms",
    "cbr",
    "poisson",
    "onoff",
    "aimd",
    "pairs",
    "all-to-all",
    "random-k",
    "left1:right1",
    "left1:left1",
    "left1:",
    ":right1",
    ":",
    ",",
    "left1:right1,",
    "left1:right1,,left2:right2",
    "a:b:c",
    "h\u{0}:h1",
    "ü:ß",
    "🦀",
    "=",
    "==",
    "k=4",
    "\u{202e}",
    "\u{feff}1Mbit",
];

/// Values of the right kind for `key`, valid or at the edge, so that mutants get past the
/// parser's first checks.
fn values_for(key: &str) -> &'static [&'static str] {
    match key {
        "rate" | "cap" => &[
            "1bit",
            "1kbit",
            "64kbit",
            "5Mbit",
            "1Gbit",
            "100Gbit",
            "1B/s",
            "125kB/s",
            "1MB/s",
            "0.5Mbit",
            "1e3bit",
            "18446744073709551615bit",
            "0bit",
        ],
        "on" | "off" => &[
            "1ns",
            "1us",
            "100ms",
            "1s",
            "3600s",
            "0s",
            "0.5ms",
            "18446744073709551615ns",
        ],
        "size" => &[
            "41",
            "40",
            "1",
            "64",
            "1500",
            "9000",
            "65535",
            "65536",
            "4294967295",
        ],
        "k" => &["1", "2", "3", "4", "100", "0", "18446744073709551615"],
        "source" => &["cbr", "poisson", "onoff", "aimd"],
        "pattern" => &["pairs", "all-to-all", "random-k"],
        "pairs" => &[
            "left1:right1",
            "left1:right1,right1:left1",
            "left1:r-left",
            "left1:left1",
            "left1:nobody",
            "left1:right1,left1:right1",
        ],
        _ => VALUES,
    }
}

/// One random change to `spec`.
fn mutate(rng: &mut Rng, spec: &str) -> String {
    let mut words: Vec<String> = spec.split(' ').map(str::to_string).collect();
    match rng.below(9) {
        // Replace a value.
        0 => {
            let i = rng.below(words.len());
            let key = words[i].split('=').next().unwrap_or("").to_string();
            let value = match rng.below(2) {
                0 => rng.pick(VALUES),
                _ => rng.pick(values_for(&key)),
            };
            words[i] = format!("{key}={value}");
        }
        // Add a word, known key or not.
        1 => words.push(format!("{}={}", rng.pick(KEYS), rng.pick(VALUES))),
        // Drop a word.
        2 => {
            let i = rng.below(words.len());
            words.remove(i);
        }
        // Duplicate a word.
        3 => {
            let i = rng.below(words.len());
            words.push(words[i].clone());
        }
        // A bare word, or an odd separator.
        4 => words.push(rng.pick(VALUES).to_string()),
        5 => return words.join(rng.pick(&["\t", "  ", "\n", "\u{a0}", "", "="])),
        // Byte-level: delete, duplicate or replace one character.
        _ => {
            let mut chars: Vec<char> = spec.chars().collect();
            if chars.is_empty() {
                return rng.pick(VALUES).to_string();
            }
            let i = rng.below(chars.len());
            match rng.below(3) {
                0 => {
                    chars.remove(i);
                }
                1 => chars.insert(i, chars[i]),
                _ => {
                    let pool: Vec<char> = "=:, \t0123456789.-eEkMGTbitsBum/%µ🦀\u{0}"
                        .chars()
                        .collect();
                    chars[i] = pool[rng.below(pool.len())];
                }
            }
            return chars.into_iter().collect();
        }
    }
    words.join(" ")
}

/// A spec built key by key from values of the right kind: mostly valid, often at the edges.
fn structured_spec(rng: &mut Rng) -> String {
    let mut words = Vec::new();
    match rng.below(4) {
        0 => words.push(format!("pairs={}", rng.pick(values_for("pairs")))),
        1 => words.push(format!("k={}", rng.pick(values_for("k")))),
        2 => words.push("pattern=all-to-all".to_string()),
        _ => {}
    }
    let source = rng.pick(values_for("source"));
    words.push(format!("source={source}"));
    let mut keys = match source {
        "aimd" => vec![],
        "onoff" => vec!["rate", "on", "off"],
        _ => vec!["rate"],
    };
    for extra in ["size", "cap"] {
        if rng.below(2) == 0 {
            keys.push(extra);
        }
    }
    for key in keys {
        words.push(format!("{key}={}", rng.pick(values_for(key))));
    }
    if rng.below(5) == 0 {
        let i = rng.below(words.len());
        words.swap(0, i);
    }
    words.join(" ")
}

/// A spec of random words.
fn random_spec(rng: &mut Rng) -> String {
    (0..rng.below(6))
        .map(|_| match rng.below(4) {
            0 => rng.pick(VALUES).to_string(),
            _ => format!("{}={}", rng.pick(KEYS), rng.pick(VALUES)),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn random_and_mutated_traffic_specs_never_panic() {
    const SEED: u64 = 0x6e65_746c_6f6f_6d21;
    let topo = netloom_topo::load_path(&common::repo_file("examples/dumbbell.toml")).unwrap();
    let mut rng = Rng(SEED);
    let mut specs: Vec<String> = SEEDS.iter().map(|s| s.to_string()).collect();
    specs.extend(VALUES.iter().map(|s| s.to_string()));
    for _ in 0..300 {
        let base = SEEDS[rng.below(SEEDS.len())];
        let mut spec = mutate(&mut rng, base);
        // Sometimes stack mutations.
        for _ in 0..rng.below(3) {
            spec = mutate(&mut rng, &spec);
        }
        specs.push(spec);
    }
    for _ in 0..200 {
        specs.push(random_spec(&mut rng));
    }
    for _ in 0..200 {
        specs.push(structured_spec(&mut rng));
    }
    let (mut parsed, mut expanded) = (0, 0);
    for spec in &specs {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let Ok(parsed) = parse_spec(spec) else {
                return (false, false);
            };
            let Ok(flows) = traffic::expand(&parsed.pattern, parsed.kind, parsed.cap, &topo, 1)
            else {
                return (true, false);
            };
            let mut engine = Engine::new(topo.clone(), 1);
            for flow in flows {
                let _ = engine.add_flow(netloom_time::Instant::ZERO, flow, 1);
            }
            (true, true)
        }));
        match outcome {
            Ok((p, e)) => {
                parsed += p as usize;
                expanded += e as usize;
            }
            Err(_) => panic!("--traffic {spec:?} panicked (generator seed {SEED:#x})"),
        }
    }
    eprintln!(
        "{} specs, {parsed} parsed, {expanded} expanded",
        specs.len()
    );
    // The mix must reach past the parser's first checks, or the test proves little.
    assert!(specs.len() >= 700, "{} specs", specs.len());
    assert!(
        parsed >= 50,
        "only {parsed} of {} specs parsed",
        specs.len()
    );
    assert!(expanded >= 50, "only {expanded} specs expanded");
    assert!(
        parsed < specs.len() - 100,
        "only {} errors",
        specs.len() - parsed
    );
}

/// Errors are one line and say what would be valid; the CLI prefixes the flag name.
#[test]
fn traffic_spec_errors_are_single_lines() {
    for spec in [
        "",
        "source",
        "source=tcp",
        "k=0 source=aimd",
        "source=cbr rate=0bit",
    ] {
        let err = parse_spec(spec).expect_err(spec).to_string();
        assert!(!err.is_empty() && !err.contains('\n'), "{spec:?}: {err:?}");
    }
}
