//! `netloom check --capacity` end to end with a synthetic calibration: the arithmetic of the
//! prediction on the bundled dumbbell, the refusal of a calibration from another machine (and
//! `--force`), and bad input (missing file, malformed JSON, an unknown load key).

use crate::common;
use crate::common::{run, TempDir};

/// A calibration file with round costs, measured "elsewhere": hop 1 µs, TUN read 10 µs and
/// write 20 µs for 1000-byte packets (and 0.1 and 0.2 ns more per byte, from a GSO point at
/// 30,000 bytes), hand-off 5 µs, timer lateness p50 2 µs / p99 30 µs in every mode, a wake-up
/// 4 µs in sleep precision.
fn synthetic(hostname: &str) -> String {
    let rate = |ns: f64| {
        format!(
            r#"{{"packets_per_second": {}, "gbit_per_second": 1.0, "ns_per_packet": {ns}}}"#,
            1e9 / ns
        )
    };
    let timer = |mode: &str, wake_up: &str| {
        format!(
            r#"{{"precision": "{mode}", "samples": 600, "p50_ns": 2000, "p99_ns": 30000, "max_ns": 90000, "wake_up_ns": {wake_up}}}"#
        )
    };
    format!(
        r#"{{
  "format": 2,
  "netloom_version": "{}",
  "machine": {{"hostname": "{hostname}", "machine_id_sha256": "00", "cpu_model": "a CPU", "kernel": "0.0", "cpus": 64}},
  "date": "2026-11-24T05:00:00Z",
  "seconds": 20.0,
  "cpus": {{"count": 64, "model": "a CPU", "mhz": null, "caches": []}},
  "timer": [{}, {}, {}],
  "tun": [{{"gso": false, "packets": 1, "mean_packet_bytes": 1000.0, "read": {}, "write": {}, "forwarded_gbit_per_second": 1.0}},
          {{"gso": true, "packets": 1, "mean_packet_bytes": 30000.0, "read": {}, "write": {}, "forwarded_gbit_per_second": 1.0}}],
  "engine": {{"workload": "w", "packet_hops": 1, "wall_seconds": 1.0, "ns_per_packet_hop": 1000.0}},
  "handoff": {{"handoffs": 1, "ns_per_handoff": 5000.0}}
}}
"#,
        env!("CARGO_PKG_VERSION"),
        timer("busy", "null"),
        timer("hybrid", "null"),
        timer("sleep", "4000"),
        rate(10_000.0),
        rate(20_000.0),
        rate(12_900.0),
        rate(25_800.0)
    )
}

/// 1,000 packets a second of 1,000 bytes from left1 to right1: 3 hops (left1 → r-left →
/// r-right → right1), well under every link's rate.
const LOAD: &str = "pattern=pairs pairs=left1:right1 source=cbr rate=8Mbit size=1000";

fn check(dir: &TempDir, file: &str, extra: &[&str]) -> common::Run {
    let path = dir.path().join(file);
    let mut args = vec![
        "check",
        "examples/dumbbell.toml",
        "--capacity",
        "--calibration",
        path.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn a_calibration_from_another_machine_is_refused_naming_what_differs_unless_forced() {
    let dir = TempDir::new("capacity-foreign");
    dir.write("cal.json", &synthetic("elsewhere"));
    let out = check(&dir, "cal.json", &["--load", LOAD]).expect_code(2);
    for needle in [
        "cal.json: measured on another machine",
        "hostname elsewhere, here",
        "kernel 0.0, here",
        "--force",
    ] {
        assert!(out.stderr.contains(needle), "{needle:?} in {}", out.stderr);
    }
    assert!(out.stdout.is_empty());
    let forced = check(&dir, "cal.json", &["--load", LOAD, "--force"]).ok();
    assert!(
        forced.stderr.contains("warning (--force)"),
        "{}",
        forced.stderr
    );
    assert!(
        forced.stdout.contains("fits in one worker"),
        "{}",
        forced.stdout
    );
}

#[test]
fn the_prediction_counts_hops_reads_writes_and_hand_offs_with_the_measured_costs() {
    let dir = TempDir::new("capacity-math");
    dir.write("cal.json", &synthetic("elsewhere"));
    let one = check(&dir, "cal.json", &["--load", LOAD, "--force", "--json"])
        .ok()
        .json();
    let p = &one["prediction"];
    assert!(
        (p["edge_packets_per_second"].as_f64().unwrap() - 1000.0).abs() < 1e-6,
        "{p}"
    );
    assert!(
        (p["path_length"].as_f64().unwrap() - 3.0).abs() < 1e-9,
        "{p}"
    );
    // 1,000 × (3 × 1 + 10 + 20) µs = 33 ms of CPU a second.
    let w0 = &p["per_worker"][0];
    assert!(
        (w0["utilization"].as_f64().unwrap() - 0.033).abs() < 1e-9,
        "{w0}"
    );
    assert_eq!(w0["busiest_work"], "tun_writes");
    // Queueing: lateness above the timer's 2 µs, below it plus one packet's cost.
    let p50 = w0["lateness_p50_ns"].as_f64().unwrap();
    assert!(p50 > 2000.0 && p50 < 2000.0 + 33_000.0, "{w0}");
    assert!((p["max_edge_packets_per_second"].as_f64().unwrap() - 1000.0 / 0.033).abs() < 1e-3);
    // Two workers split the same work and pay 5 µs for every packet that crosses between them.
    let two = check(
        &dir,
        "cal.json",
        &["--load", LOAD, "--force", "--json", "--workers", "2"],
    )
    .ok()
    .json();
    let p2 = &two["prediction"];
    let handoffs = p2["handoffs_per_second"].as_f64().unwrap();
    assert!(handoffs > 0.0, "the dumbbell's path crosses workers: {p2}");
    let total: f64 = p2["per_worker"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["utilization"].as_f64().unwrap())
        .sum();
    assert!((total - (0.033 + handoffs * 5e-6)).abs() < 1e-9, "{p2}");
    let scaling = two["scaling"].as_array().unwrap();
    assert_eq!(
        scaling.len(),
        2.max(std::thread::available_parallelism().unwrap().get())
    );
    assert_eq!(two["needs_workers"], 1);
}

#[test]
fn smaller_packets_cost_less_and_a_sleeping_driver_pays_for_its_wake_ups() {
    let dir = TempDir::new("capacity-size");
    dir.write("cal.json", &synthetic("elsewhere"));
    let utilization = |load: &str, precision: &str| {
        let out = check(
            &dir,
            "cal.json",
            &[
                "--load",
                load,
                "--force",
                "--json",
                "--precision",
                precision,
            ],
        )
        .ok()
        .json();
        out["prediction"]["per_worker"][0].clone()
    };
    // The same 1,000 packets a second of 100 bytes: 900 bytes less to read (0.1 ns a byte)
    // and to write (0.2 ns): 1,000 × (3 + 9.91 + 19.82) µs.
    let small = "pattern=pairs pairs=left1:right1 source=cbr rate=800kbit size=100";
    let w = utilization(small, "hybrid");
    assert!(
        (w["utilization"].as_f64().unwrap() - 0.03273).abs() < 1e-9,
        "{w}"
    );
    // Sleep precision adds 4 µs per wake-up; at this load, one at least per packet read.
    let w = utilization(LOAD, "sleep");
    let wake_ups = w["wake_ups_per_second"].as_f64().unwrap();
    assert!(wake_ups >= 1000.0 * 0.9, "{w}");
    assert!(
        (w["utilization"].as_f64().unwrap() - (0.033 + wake_ups * 4e-6)).abs() < 1e-9,
        "{w}"
    );
}

#[test]
fn a_missing_or_malformed_calibration_and_an_unknown_load_key_are_refused_clearly() {
    let dir = TempDir::new("capacity-bad");
    let out = check(&dir, "absent.json", &[]).expect_code(2);
    assert!(
        out.stderr
            .contains("absent.json: cannot read: No such file"),
        "{}",
        out.stderr
    );
    dir.write("bad.json", "{\n  \"format\": 2,\n  \"timer\": 3\n}\n");
    let out = check(&dir, "bad.json", &[]).expect_code(2);
    assert!(out.stderr.contains("bad.json:3:"), "{}", out.stderr);
    assert!(
        out.stderr.contains("netloom calibrate -o FILE"),
        "{}",
        out.stderr
    );
    dir.write("old.json", "{\"format\": 7}");
    let out = check(&dir, "old.json", &[]).expect_code(2);
    assert!(
        out.stderr.contains("calibration format 7"),
        "{}",
        out.stderr
    );
    dir.write("cal.json", &synthetic("elsewhere"));
    let out = check(
        &dir,
        "cal.json",
        &[
            "--force",
            "--load",
            "pattern=pairs pairs=left1:right1 sorce=cbr rate=1Mbit",
        ],
    )
    .expect_code(2);
    assert!(
        out.stderr
            .contains("--load: unknown key \"sorce\" (did you mean \"source\"?)"),
        "{}",
        out.stderr
    );
}
