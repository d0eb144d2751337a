//! `netloom sim --capture LINK=FILE` and `--series`: a capture of synthetic packets is the same
//! bytes for the same seed, different for another, and tshark reads it with valid IPv4, TCP and
//! UDP headers and checksums, and the packets RED dropped marked with their cause; bad targets
//! are one clear error; `--series` adds per-interval figures to the JSON report that add up to
//! its totals.

use crate::common;
use crate::common::{run_in, TempDir};
use std::process::Command;

/// A dumbbell with a RED bottleneck: AIMD flows across it get drops.
const TOPOLOGY: &str = r#"hosts = ["a1", "a2", "b1", "b2"]
routers = ["ra", "rb"]
[defaults]
bw = "100Mbit"
delay = "1ms"
[[link]]
a = "a1"
b = "ra"
[[link]]
a = "a2"
b = "ra"
[[link]]
a = "b1"
b = "rb"
[[link]]
a = "b2"
b = "rb"
[[link]]
a = "ra"
b = "rb"
bw = "10Mbit"
delay = "5ms"
queue = 30
aqm = "red"
"#;

const TRAFFIC: &str = "pattern=pairs pairs=a1:b1,a2:b2 source=aimd";

fn sim(dir: &TempDir, seed: &str, traffic: &str, captures: &[&str]) -> common::Run {
    let topo = dir.path().join("topo.toml");
    let mut args = vec![
        "sim",
        topo.to_str().unwrap(),
        "--duration",
        "2s",
        "--traffic",
        traffic,
    ];
    args.extend(["--seed", seed, "--no-wall-clock", "--json"]);
    for c in captures {
        args.extend(["--capture", c]);
    }
    run_in(Some(dir.path()), &args)
}

fn tshark_available() -> bool {
    Command::new("tshark")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// tshark's one-line summaries of the packets of `file` that match `filter`, checksums checked.
fn tshark(file: &std::path::Path, filter: &str) -> Vec<String> {
    let out = Command::new("tshark")
        .args([
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "tcp.check_checksum:TRUE",
        ])
        .args(["-o", "udp.check_checksum:TRUE", "-r"])
        .arg(file)
        .args(["-Y", filter])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_capture_is_the_same_bytes_for_the_same_seed_and_valid_packets() {
    let dir = TempDir::new("simcap");
    dir.write("topo.toml", TOPOLOGY);
    sim(&dir, "7", TRAFFIC, &["ra:rb=one.pcapng", "a1=a1.pcapng"]).ok();
    sim(&dir, "7", TRAFFIC, &["ra:rb=two.pcapng"]).ok();
    sim(&dir, "8", TRAFFIC, &["ra:rb=other.pcapng"]).ok();
    let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
    assert!(read("one.pcapng").len() > 100_000);
    assert_eq!(
        read("one.pcapng"),
        read("two.pcapng"),
        "same seed, same bytes"
    );
    assert_ne!(
        read("one.pcapng"),
        read("other.pcapng"),
        "another seed, another run"
    );
    if !tshark_available() {
        eprintln!("SKIPPED the tshark half: tshark is not installed");
        return;
    }
    let one = dir.path().join("one.pcapng");
    assert_eq!(tshark(&one, "").len(), tshark(&one, "tcp").len(), "all TCP");
    let bad = "_ws.malformed || _ws.expert.severity >= error || ip.checksum.status == 2 \
               || tcp.checksum.status == 2";
    assert_eq!(tshark(&one, bad), Vec::<String>::new());
    assert!(!tshark(&one, "ip.src == 198.18.0.1 && ip.dst == 198.18.0.3").is_empty());
    assert!(
        !tshark(&one, "tcp.flags.ack == 1 && tcp.len == 0").is_empty(),
        "ACKs"
    );
    let dropped = tshark(&one, "frame.comment contains \"dropped: red\"");
    assert!(!dropped.is_empty(), "RED's drops are in the file, marked");
    // Host a1's access link carries only flow a1 -> b1 and its ACKs.
    let a1 = dir.path().join("a1.pcapng");
    assert_eq!(
        tshark(&a1, "").len(),
        tshark(&a1, "tcp.port == 10000").len()
    );

    // UDP flows: checksums right too.
    sim(
        &dir,
        "7",
        "pattern=pairs pairs=a1:b1 source=cbr rate=1Mbit",
        &["ra:rb=udp.pcapng"],
    )
    .ok();
    let udp = dir.path().join("udp.pcapng");
    assert!(!tshark(&udp, "udp").is_empty());
    let bad = "_ws.malformed || _ws.expert.severity >= error || udp.checksum.status == 2";
    assert_eq!(tshark(&udp, bad), Vec::<String>::new());
}

#[test]
fn a_bad_capture_target_is_one_clear_error() {
    let dir = TempDir::new("simcap-bad");
    dir.write("topo.toml", TOPOLOGY);
    for (capture, error) in [
        (
            "ra:rc=x.pcapng",
            "no node is named \"rc\" (did you mean \"ra\"?)",
        ),
        ("a1:b1=x.pcapng", "no link joins a1 and b1"),
        ("ra:rb", "write LINK=FILE"),
        (
            "ra:rb=/nonexistent/x.pcapng",
            "--capture: open /nonexistent/x.pcapng: No such file",
        ),
    ] {
        let run = sim(&dir, "1", TRAFFIC, &[capture]).expect_code(2);
        assert!(run.stderr.contains(error), "{capture}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    }
    assert!(!dir.path().join("x.pcapng").exists());
}

#[test]
fn series_add_up_to_the_report() {
    let dir = TempDir::new("series");
    dir.write("topo.toml", TOPOLOGY);
    let topo = dir.path().join("topo.toml");
    let run = |extra: &[&str]| {
        let mut args = vec!["sim", topo.to_str().unwrap(), "--duration", "2500ms"];
        args.extend(["--traffic", TRAFFIC, "--no-wall-clock", "--json"]);
        args.extend(extra);
        run_in(Some(dir.path()), &args).ok().json()
    };
    let with = run(&["--series", "500ms"]);
    let without = run(&[]);
    assert!(without.get("series").is_none());
    assert_eq!(
        with["flows"], without["flows"],
        "the rest of the report is the same"
    );
    let s = &with["series"];
    assert_eq!(s["interval_ns"], 500_000_000);
    let pipes = with["pipes"].as_array().unwrap();
    assert_eq!(s["pipes"].as_array().unwrap().len(), pipes.len());
    for (series, pipe) in s["pipes"].as_array().unwrap().iter().zip(pipes) {
        let drops: u64 = series["drops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .sum();
        assert_eq!(drops, pipe["drops"].as_u64().unwrap());
        assert_eq!(series["utilization"].as_array().unwrap().len(), 5);
        let mean: f64 = series["utilization"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u.as_f64().unwrap())
            .sum::<f64>()
            / 5.0;
        assert!(
            (mean - pipe["utilization"].as_f64().unwrap()).abs() < 1e-5,
            "{series} {pipe}"
        );
    }
    for (series, flow) in s["flows"]
        .as_array()
        .unwrap()
        .iter()
        .zip(with["flows"].as_array().unwrap())
    {
        let bits: u64 = series["throughput_bps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap() / 2)
            .sum();
        // Distinct data packets of 1500 bytes on the wire (the source's default size).
        let total = flow["delivered"].as_u64().unwrap() * 1500 * 8;
        assert!(bits.abs_diff(total) <= 10, "{bits} vs {total}");
    }
    let no_json = run_in(
        Some(dir.path()),
        &[
            "sim",
            topo.to_str().unwrap(),
            "--traffic",
            TRAFFIC,
            "--series",
            "1s",
        ],
    );
    no_json.expect_code(2);
}
