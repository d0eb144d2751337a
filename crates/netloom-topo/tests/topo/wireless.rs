//! The wireless, trace and time-varying keys: what they resolve to, and one clear, located
//! error for each kind of mistake.

use netloom_link::{Standard, Variation};
use netloom_time::{Duration, Rate};
use netloom_topo::{load_str, Format, Topology};

/// Two hosts and one link with `keys` spliced in (the link table starts on line 3).
fn link(keys: &str) -> String {
    format!(
        "hosts = [\"sta\", \"ap\"]\n\n[[link]]\na = \"sta\"\nb = \"ap\"\ndelay = \"1ms\"\n{keys}\n"
    )
}

fn load(text: &str) -> Result<Topology, String> {
    // Data files are named relative to the topology file: this one's directory is the crate's.
    load_str(text, Format::Toml, "tests/topo.toml").map_err(|e| e.to_string())
}

fn error(keys: &str) -> String {
    match load(&link(keys)) {
        Ok(_) => panic!("loaded, but should have failed:\n{keys}"),
        Err(e) => e,
    }
}

#[test]
fn wireless_keys_resolve() {
    let t = load(&link(
        "shared = true\nbw = \"11Mbit\"\nwireless = \"802.11b\"\nsnr = \"12dB\"\nnetload = \"1%\"\ncollision = 0.04\nretry_limit = 4\nmac_profile = \"data/wireless/lab.profile\"",
    ))
    .unwrap();
    assert_eq!(t.pipes.len(), 1);
    let w = t.pipes[0].config.wireless.unwrap();
    assert_eq!(w.standard, Standard::B);
    assert_eq!(w.snr_db, Some(12.0));
    assert_eq!((w.netload, w.collision, w.retry_limit), (0.01, 0.04, 4));
    let profile = t.pipes[0].data.profile.as_ref().unwrap();
    assert_eq!(profile.name.as_deref(), Some("lab"));
}

#[test]
fn a_trace_stands_in_for_bw() {
    let t = load(&link(
        "a_to_b = { trace = \"data/wireless/cell.trace\" }\nb_to_a = { bw = \"1Mbit\" }",
    ))
    .unwrap();
    // 6 opportunities of 1500 bytes every 10 ms: 7.2 Mbit/s.
    assert_eq!(t.pipes[0].config.rate, Rate::bps(7_200_000));
    assert!(t.pipes[0].data.trace.is_some());
    assert!(t.pipes[1].data.trace.is_none());
}

#[test]
fn a_schedule_becomes_one_state_per_change() {
    let t = load(&link(
        "bw = \"10Mbit\"\nschedule = { every = \"60s\", events = [\n  { at = \"10s\", set = { delay = \"50ms\" } },\n  { from = \"20s\", to = \"25s\", set = { up = false } },\n] }",
    ))
    .unwrap();
    let plan = &t.plans[0];
    let Variation::Schedule(_) = &*plan.plan else {
        panic!("not a schedule")
    };
    let states: Vec<(u64, bool)> = plan
        .states
        .iter()
        .map(|(ab, _)| (ab.delay.as_nanos() / 1_000_000, ab.up))
        .collect();
    // 0 s: as written; 10 s: 50 ms; 20 s: down (delay still 50 ms); 25 s: up again.
    assert_eq!(states, [(1, true), (50, true), (50, false), (50, true)]);
}

#[test]
fn a_markov_graph_names_its_states() {
    let t = load(&link(
        "bw = \"54Mbit\"\nwireless = \"802.11g\"\n[link.markov]\nstart = \"good\"\nstates.good = { dwell = \"2s\", next = { bad = 1 } }\nstates.bad = { dwell = [[0, \"1s\"], [1, \"3s\"]], next = { good = 1 }, set = { snr = \"5dB\", bw = \"6Mbit\" } }",
    ))
    .unwrap();
    let plan = &t.plans[0];
    let Variation::Markov(m) = &*plan.plan else {
        panic!("not a Markov graph")
    };
    // States in name order: bad, good.
    assert_eq!(m.start(), 1);
    assert_eq!(plan.states[0].0.rate, Rate::bps(6_000_000));
    assert_eq!(plan.states[0].0.wireless.unwrap().snr_db, Some(5.0));
    assert_eq!(plan.states[1].0.delay, Duration::from_millis(1));
    // Uniform on [1 s, 3 s]: interpolation rounds each sample down, by under a nanosecond.
    assert!(m.states()[0].dwell.mean().abs_diff(2_000_000_000) <= 1);
}

#[test]
fn mistakes_are_located_and_explained() {
    let cases = [
        (
            "bw = \"10Mbit\"\nwireless = \"802.11b\"",
            "tests/topo.toml:3: link sta-ap: bw 10Mbit is not a rate of 802.11b; its rates are 1Mbit, 2Mbit, 5.5Mbit, 11Mbit",
        ),
        (
            "bw = \"11Mbit\"\nwireless = \"802.11n\"",
            "tests/topo.toml:8: link sta-ap: wireless \"802.11n\" is not known (did you mean \"802.11b\"?); write \"802.11b\" or \"802.11g\"",
        ),
        (
            "bw = \"11Mbit\"\nsnr = \"12dB\"",
            "tests/topo.toml:3: link sta-ap: snr needs a wireless link; set wireless = \"802.11b\" or \"802.11g\"",
        ),
        (
            "bw = \"11Mbit\"\nwireless = \"802.11b\"\nsnr = \"loud\"",
            "tests/topo.toml:9: link sta-ap: snr \"loud\" is not an SNR; write decibels like \"12dB\" or \"-3dB\"",
        ),
        (
            "bw = \"11Mbit\"\nwireless = \"802.11b\"\nnetload = 1",
            "tests/topo.toml:3: link sta-ap: netload 100% leaves no air time; it must be below 1",
        ),
        (
            "bw = \"11Mbit\"\nwireless = \"802.11b\"\nretry_limit = 0",
            "tests/topo.toml:9: link sta-ap: retry_limit 0 must be a number of attempts from 1 to 255 (802.11's is 7)",
        ),
        (
            "trace = \"data/wireless/none.trace\"",
            "tests/topo.toml:7: link sta-ap: trace \"data/wireless/none.trace\": tests/data/wireless/none.trace: cannot read:",
        ),
        (
            "bw = \"1Mbit\"\nschedule = { events = [{ at = \"1s\", from = \"2s\", set = { up = false } }] }",
            "tests/topo.toml:8: link sta-ap: schedule event 1 needs either at = \"10s\" or both from = \"20s\" and to = \"25s\"",
        ),
        (
            "bw = \"1Mbit\"\nschedule = { every = \"10s\", events = [{ at = \"12s\", set = { up = false } }] }",
            "tests/topo.toml:8: link sta-ap: schedule event 1 is not within the period every = 10s",
        ),
        (
            "bw = \"1Mbit\"\n[link.markov]\nstart = \"good\"\nstates.good = { dwell = \"1s\", next = { bda = 1 } }\nstates.bad = { dwell = \"1s\", next = { good = 1 } }",
            "tests/topo.toml:10: link sta-ap: state \"good\" goes to \"bda\", which is not a state (did you mean \"bad\"?); states: bad, good",
        ),
        (
            "bw = \"1Mbit\"\n[link.markov]\nstart = \"good\"\nstates.good = { dwell = \"1s\", next = { good = \"50%\", bad = \"40%\" } }\nstates.bad = { dwell = \"1s\" }",
            "tests/topo.toml:8: link sta-ap: markov: state \"good\": the arcs' probabilities add up to 0.9, not 1",
        ),
        (
            "bw = \"1Mbit\"\n[link.markov]\nstart = \"a\"\nstates.a = { dwell = \"1s\", set = { trace = \"data/wireless/cell.trace\" } }",
            "tests/topo.toml:10: link sta-ap: in state \"a\": trace cannot change over time; set it on the link itself",
        ),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .map(|(keys, want)| (keys, want, error(keys)))
        .filter(|(_, want, got)| !got.starts_with(*want))
        .map(|(keys, want, got)| format!("for\n{keys}\ngot:  {got}\nwant: {want}"))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn a_markov_error_names_the_state_among_more_than_ten() {
    // a -> b -> ... -> k -> a, and k's arcs add up to 0.5. States are numbered in name order, so
    // k is state 10: the message must name k, not b followed by a 0 (state numbers were once
    // replaced by names as text, "state 1" before "state 10").
    let names: Vec<char> = ('a'..='k').collect();
    let mut states = String::new();
    for (i, n) in names.iter().enumerate() {
        let (next, p) = match names.get(i + 1) {
            Some(next) => (*next, "100%"),
            None => ('a', "50%"),
        };
        states.push_str(&format!(
            "states.{n} = {{ dwell = \"1s\", next = {{ {next} = \"{p}\" }} }}\n"
        ));
    }
    let e = error(&format!(
        "bw = \"1Mbit\"\n[link.markov]\nstart = \"a\"\n{states}"
    ));
    assert!(
        e.ends_with("markov: state \"k\": the arcs' probabilities add up to 0.5, not 1"),
        "{e}"
    );
}
