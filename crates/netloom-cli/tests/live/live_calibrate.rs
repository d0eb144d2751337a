//! `netloom calibrate` on this machine (root, TUN): it finishes in under a minute, writes every
//! figure with plausible values, and leaves nothing behind; `check --capacity` then reads it.

use crate::live_common::{self, netloom};
use std::time::{Duration, Instant};

#[test]
fn calibrate_writes_every_figure_in_under_a_minute_and_check_reads_it() {
    require_live!("ip");
    let _turn = live_common::turn();
    let dir = std::env::temp_dir().join(format!("netloom-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cal.json");
    let started = Instant::now();
    let out = netloom()
        .env("NETLOOM_RUN_DIR", dir.join("run"))
        .args(["calibrate", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    // Progress per step, then the summary.
    for step in [
        "CPUs:",
        "timer lateness, busy",
        "TUN, GSO off",
        "TUN, GSO on",
        "engine:",
        "hand-off",
    ] {
        assert!(stderr.contains(step), "no {step:?} in {stderr}");
    }
    let text = std::fs::read_to_string(&file).unwrap();
    let c: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(c["format"], 2);
    assert_eq!(c["netloom_version"], env!("CARGO_PKG_VERSION"));
    for key in [
        "hostname",
        "machine_id_sha256",
        "cpu_model",
        "kernel",
        "cpus",
    ] {
        assert!(!c["machine"][key].is_null(), "machine.{key} in {text}");
    }
    assert_eq!(
        c["machine"]["machine_id_sha256"].as_str().unwrap().len(),
        64
    );
    assert!(c["cpus"]["count"].as_u64().unwrap() >= 1);
    // Timers: the three modes of `run --precision`, each p50 ≤ p99 ≤ max, and sleeping is
    // later at the median than spinning (a wake-up costs something on any machine).
    let timer = c["timer"].as_array().unwrap();
    let names: Vec<&str> = timer
        .iter()
        .map(|t| t["precision"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["busy", "hybrid", "sleep"]);
    for t in timer {
        let (p50, p99, max) = (
            t["p50_ns"].as_u64().unwrap(),
            t["p99_ns"].as_u64().unwrap(),
            t["max_ns"].as_u64().unwrap(),
        );
        assert!(p50 <= p99 && p99 <= max, "{t}");
    }
    assert!(
        timer[2]["p50_ns"].as_u64() > timer[0]["p50_ns"].as_u64(),
        "{text}"
    );
    // A wake-up's CPU: none for busy, which never sleeps; some for sleep, but less than the
    // shortest gap between its deadlines (100 us), or it could not have kept up.
    assert!(timer[0]["wake_up_ns"].is_null(), "{text}");
    let wake_up = timer[2]["wake_up_ns"].as_f64().unwrap();
    assert!(wake_up > 0.0 && wake_up < 100_000.0, "{text}");
    // TUN: both settings; GSO packets are larger than the MTU-bound ones, which fit 1500 bytes.
    let tun = c["tun"].as_array().unwrap();
    assert_eq!(tun.len(), 2);
    assert_eq!(tun[0]["gso"], false);
    assert_eq!(tun[1]["gso"], true);
    let size = |t: &serde_json::Value| t["mean_packet_bytes"].as_f64().unwrap();
    assert!(
        size(&tun[0]) <= 1500.0 && size(&tun[1]) > size(&tun[0]),
        "{text}"
    );
    for t in tun {
        for way in ["read", "write"] {
            let r = &t[way];
            let (pps, ns) = (
                r["packets_per_second"].as_f64().unwrap(),
                r["ns_per_packet"].as_f64().unwrap(),
            );
            assert!(pps > 1_000.0 && ns > 0.0, "{t}");
            assert!(
                (pps * ns / 1e9 - 1.0).abs() < 1e-6,
                "rate and cost agree: {t}"
            );
        }
    }
    assert!(c["engine"]["packet_hops"].as_u64().unwrap() > 1_000_000);
    assert!(c["engine"]["ns_per_packet_hop"].as_f64().unwrap() > 0.0);
    assert!(c["handoff"]["ns_per_handoff"].as_f64().unwrap() > 0.0);
    // Nothing left: no namespace of the scratch hosts, no registry entry.
    let netns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let pid_tag = "nl-calibrate-";
    let left: Vec<String> = String::from_utf8_lossy(&netns.stdout)
        .lines()
        .filter(|l| l.starts_with(pid_tag))
        .map(str::to_string)
        .collect();
    let registry = std::fs::read_dir(dir.join("run")).map_or(0, |d| d.count());
    // The file is this machine's: check --capacity takes it.
    let check = netloom()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "check",
            "../../examples/dumbbell.toml",
            "--capacity",
            "--calibration",
        ])
        .arg(&file)
        .output()
        .unwrap();
    // The same file with another machine's kernel is refused.
    let foreign = dir.join("foreign.json");
    let kernel = c["machine"]["kernel"].as_str().unwrap();
    std::fs::write(
        &foreign,
        text.replace(&format!("\"kernel\": \"{kernel}\""), "\"kernel\": \"0.0\""),
    )
    .unwrap();
    let refused = netloom()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "check",
            "../../examples/dumbbell.toml",
            "--capacity",
            "--calibration",
        ])
        .arg(&foreign)
        .output()
        .unwrap();
    // `run` predicts before it starts, and refuses the foreign file before making anything.
    let name = format!("calib{}", std::process::id() % 100_000);
    let run = |file: &std::path::Path| {
        netloom()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("NETLOOM_RUN_DIR", dir.join("run"))
            .args([
                "run",
                "../../examples/dumbbell.toml",
                "--name",
                &name,
                "--duration",
                "1s",
                "--calibration",
            ])
            .arg(file)
            .output()
            .unwrap()
    };
    let ran = run(&file);
    let run_refused = run(&foreign);
    std::fs::remove_dir_all(&dir).unwrap();
    let ran_said = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "{ran_said}");
    let up = ran_said.find("is up").expect("the run came up");
    let predicted = ran_said
        .find("netloom: capacity: about")
        .unwrap_or_else(|| panic!("{ran_said}"));
    assert!(predicted < up, "predicted before starting: {ran_said}");
    assert_eq!(run_refused.status.code(), Some(2));
    let run_why = String::from_utf8_lossy(&run_refused.stderr);
    assert!(
        run_why.contains("kernel 0.0") && !run_why.contains("is up"),
        "{run_why}"
    );
    assert_eq!(refused.status.code(), Some(2));
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(why.contains(&format!("kernel 0.0, here {kernel}")), "{why}");
    assert!(left.is_empty(), "namespaces left: {left:?}");
    assert_eq!(registry, 0, "registry entries left");
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(said.contains("hops per packet"), "{said}");
}
