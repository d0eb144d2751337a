//! End-to-end tests of the `netloom` binary: `check`, `gen` and `sim` as a user runs them (debug
//! build, virtual time, small topologies), including exit codes and error messages.

use crate::common;
use crate::common::{key_paths, run, run_in, TempDir};

// ---------------------------------------------------------------------------------------------
// check

/// The summary's lines as (label, rest with single spaces), so the test does not depend on
/// column widths.
fn summary_lines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let label = words.next()?.to_string();
            Some((label, words.collect::<Vec<_>>().join(" ")))
        })
        .collect()
}

#[test]
fn check_prints_the_summary_of_the_bundled_dumbbell() {
    let out = run(&["check", "examples/dumbbell.toml"]).ok();
    let s = &out.stdout;
    assert!(s.starts_with("examples/dumbbell.toml: ok\n"), "{s}");
    let lines = summary_lines(s);
    let line = |label: &str| {
        lines
            .iter()
            .find(|(l, _)| l == label)
            .map(|(_, rest)| rest.as_str())
            .unwrap_or_else(|| panic!("no {label:?} line in:\n{s}"))
    };
    // Worked out from the file: 4 hosts, 2 routers, 5 duplex links; left1 -> r-left -> r-right
    // -> right1 is 3 hops and 100us + 10ms + 100us of propagation delay.
    assert_eq!(line("hosts"), "4", "{s}");
    assert_eq!(line("routers"), "2", "{s}");
    assert!(line("links").starts_with("5 (10 pipes, 0 shared)"), "{s}");
    let diameter = line("diameter");
    for part in ["3 hops", "10.2ms", "left1 -> right1"] {
        assert!(diameter.contains(part), "{part:?} not in {diameter:?}");
    }
    assert!(out.stderr.is_empty(), "{}", out.stderr);
}

#[test]
fn check_json_gives_the_same_figures() {
    let out = run(&["check", "--json", "examples/dumbbell.toml"]).ok();
    let v = out.json();
    assert_eq!(v["name"], "dumbbell");
    assert_eq!(v["hosts"], 4);
    assert_eq!(v["routers"], 2);
    assert_eq!(v["links"], 5);
    assert_eq!(v["pipes"], 10);
    for d in ["diameter_hops", "diameter_delay"] {
        assert_eq!(v[d]["hops"], 3, "{d}");
        assert_eq!(v[d]["delay_ns"], 10_200_000, "{d}");
        assert_eq!(v[d]["src"], "left1", "{d}");
        assert_eq!(v[d]["dst"], "right1", "{d}");
    }
    // 10 Mbit/s x 2 x 10 ms = 25 000 bytes on the bottleneck; 1 Gbit/s x 2 x 100 us likewise.
    assert_eq!(v["min_bdp_bytes"], 25_000);
    assert_eq!(v["max_bdp_bytes"], 25_000);
}

/// A bad file: exit code 2, and one line on stderr that names the file and line, the link, and
/// the words given.
fn assert_bad_file(name: &str, text: &str, line: u32, expected: &[&str]) {
    let dir = TempDir::new("bad");
    let path = dir.write(name, text);
    for json in [false, true] {
        let mut args = vec!["check".to_string()];
        if json {
            args.push("--json".into());
        }
        args.push(path.display().to_string());
        let out = run(&args).expect_code(2);
        assert!(out.stdout.is_empty(), "stdout: {}", out.stdout);
        let prefix = format!("netloom: {}:{line}: ", path.display());
        assert!(
            out.stderr.starts_with(&prefix),
            "expected {prefix:?} at the start of:\n{}",
            out.stderr
        );
        for word in expected {
            assert!(
                out.stderr.contains(word),
                "expected {word:?} in:\n{}",
                out.stderr
            );
        }
    }
}

#[test]
fn check_rejects_an_unknown_key_with_file_line_link_and_suggestion() {
    assert_bad_file(
        "unknown-key.toml",
        "hosts = [\"h1\", \"h2\"]\n\n[[link]]\na = \"h1\"\nb = \"h2\"\nbandwidth = \"10Mbit\"\ndelay = \"5ms\"\n",
        6,
        &["link h1-h2", "unknown key \"bandwidth\"", "did you mean \"bw\"", "valid keys"],
    );
}

#[test]
fn check_rejects_an_ambiguous_unit_naming_both_readings() {
    assert_bad_file(
        "ambiguous.toml",
        "hosts = [\"h1\", \"h2\"]\n\n[[link]]\na = \"h1\"\nb = \"h2\"\nbw = \"10mbps\"\ndelay = \"5ms\"\n",
        6,
        &["link h1-h2", "\"10mbps\" is ambiguous", "\"10Mbit\"", "\"10MB/s\""],
    );
}

#[test]
fn check_rejects_a_dangling_link_end() {
    assert_bad_file(
        "dangling.toml",
        "hosts = [\"h1\", \"h2\"]\nrouters = [\"r1\"]\n\n[defaults]\nbw = \"1Gbit\"\ndelay = \"1ms\"\n\n\
         [[link]]\na = \"h1\"\nb = \"r1\"\n\n[[link]]\na = \"r1\"\nb = \"h3\"\n",
        14,
        &["link r1-h3", "\"h3\" is not a node", "hosts or routers"],
    );
}

#[test]
fn check_of_a_missing_file_exits_2_naming_it() {
    let out = run(&["check", "no/such/file.toml"]).expect_code(2);
    assert!(out.stderr.contains("no/such/file.toml"), "{}", out.stderr);
}

// ---------------------------------------------------------------------------------------------
// gen

/// Every kind with its defaults (inet: small), written to a file that `check` accepts.
#[test]
fn every_generated_kind_passes_check() {
    let dir = TempDir::new("gen");
    let kinds: &[(&str, &[&str])] = &[
        ("chain", &[]),
        ("star", &[]),
        ("ring", &[]),
        ("mesh", &[]),
        ("dumbbell", &[]),
        ("fishbone", &[]),
        ("tree-mesh", &[]),
        (
            "inet",
            &["--routers", "300", "--stubs", "30", "--hosts", "40"],
        ),
    ];
    for (kind, flags) in kinds {
        for ext in ["toml", "json"] {
            let file = dir.path().join(format!("{kind}.{ext}"));
            let mut args = vec!["gen".to_string(), kind.to_string()];
            args.extend(flags.iter().map(|f| f.to_string()));
            args.extend(["-o".to_string(), file.display().to_string()]);
            let out = run(&args).ok();
            assert!(
                out.stderr
                    .starts_with(&format!("wrote {}: ", file.display())),
                "{}",
                out.stderr
            );
            let checked = run(&["check", "--json", &file.display().to_string()]).ok();
            let v = checked.json();
            assert!(v["hosts"].as_u64().unwrap() >= 2, "{kind}: {v}");
            assert!(
                v["diameter_hops"]["hops"].as_u64().unwrap() >= 1,
                "{kind}: {v}"
            );
        }
    }
    // The inet flags were applied: 300 routers and 40 hosts.
    let v = run(&[
        "check",
        "--json",
        &dir.path().join("inet.toml").display().to_string(),
    ])
    .ok()
    .json();
    assert_eq!(v["routers"], 300);
    assert_eq!(v["hosts"], 40);
}

/// Every generated kind also runs: one small CBR flow per host, all routed, all sending.
#[test]
fn every_generated_kind_runs_in_sim() {
    let dir = TempDir::new("gen-sim");
    for (kind, flags) in [
        ("chain", &[][..]),
        ("star", &[]),
        ("ring", &[]),
        ("mesh", &[]),
        ("dumbbell", &[]),
        ("fishbone", &[]),
        ("tree-mesh", &["--height", "2"]),
        (
            "inet",
            &["--routers", "60", "--stubs", "10", "--hosts", "12"],
        ),
    ] {
        let file = dir.path().join(format!("{kind}.toml"));
        let mut args = vec!["gen", kind];
        args.extend(flags);
        let file_arg = file.display().to_string();
        args.extend(["-o", &file_arg]);
        run(&args).ok();
        let v = run(&[
            "sim",
            &file_arg,
            "--traffic",
            "k=1 source=cbr rate=1Mbit",
            "--duration",
            "100ms",
            "--json",
            "--no-wall-clock",
        ])
        .ok()
        .json();
        let flows = v["flows"].as_array().unwrap();
        assert!(!flows.is_empty(), "{kind}: no flows");
        // 1 Mbit/s of 1500-byte packets for at least 90 ms: at least 7 packets each.
        for f in flows {
            assert!(f["sent"].as_u64().unwrap() >= 7, "{kind}: {f}");
            assert!(f["delivered"].as_u64().unwrap() >= 1, "{kind}: {f}");
        }
        assert_eq!(v["totals"]["unroutable"], 0, "{kind}");
    }
}

#[test]
fn gen_without_output_prints_toml_that_check_accepts() {
    let out = run(&["gen", "ring", "--routers", "3", "--hosts-per", "2"]).ok();
    let dir = TempDir::new("gen-stdout");
    let path = dir.write("ring.toml", &out.stdout);
    let v = run(&["check", "--json", &path.display().to_string()])
        .ok()
        .json();
    assert_eq!(v["routers"], 3);
    assert_eq!(v["hosts"], 6);
}

#[test]
fn gen_refuses_a_flag_that_does_not_apply_to_the_kind() {
    let dir = TempDir::new("gen-bad");
    let file = dir.path().join("star.toml");
    let out = run(&[
        "gen",
        "star",
        "--routers",
        "3",
        "-o",
        &file.display().to_string(),
    ])
    .expect_code(2);
    assert!(
        out.stderr
            .contains("gen star: --routers does not apply; this kind takes --hosts"),
        "{}",
        out.stderr
    );
    assert!(!file.exists(), "a refused gen must not write its file");

    let out = run(&["gen", "tree-mesh", "--stubs", "3"]).expect_code(2);
    assert!(
        out.stderr.contains("--stubs does not apply"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn gen_rejects_unknown_kinds_and_classes() {
    let out = run(&["gen", "torus"]).expect_code(2);
    assert!(
        out.stderr.contains("unknown topology kind \"torus\"") && out.stderr.contains("tree-mesh"),
        "{}",
        out.stderr
    );
    let out = run(&["gen", "chain", "--class", "core=1Mbit/1ms"]).expect_code(2);
    assert!(
        out.stderr.contains("no class \"core\"") && out.stderr.contains("access, backbone"),
        "{}",
        out.stderr
    );
    let out = run(&["gen", "chain", "--class", "access=10mbps/1ms"]).expect_code(2);
    assert!(out.stderr.contains("ambiguous"), "{}", out.stderr);
}

// ---------------------------------------------------------------------------------------------
// sim

const PAIR: &str = "pattern=pairs pairs=left1:right1 source=cbr rate=5Mbit";

#[test]
fn sim_json_has_the_required_fields() {
    let out = run(&[
        "sim",
        "examples/dumbbell.toml",
        "--traffic",
        PAIR,
        "--duration",
        "1s",
        "--json",
    ])
    .ok();
    let v = out.json();
    let keys = key_paths(&v);
    for k in [
        "schema",
        "flows[].src",
        "flows[].dst",
        "flows[].throughput_bps",
        "flows[].latency_ns.p50",
        "flows[].latency_ns.p99",
        "flows[].sent",
        "flows[].lost",
        "pipes[].link",
        "pipes[].direction",
        "pipes[].packets_out",
        "pipes[].drops",
        "totals.packet_hops",
        "totals.wall_seconds",
        "totals.packet_hops_per_second",
    ] {
        assert!(keys.contains(k), "missing {k}; keys: {keys:?}");
    }
    assert_eq!(v["schema"], 1);
    let flows = v["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 1);
    let f = &flows[0];
    assert_eq!(f["src"], "left1");
    assert_eq!(f["dst"], "right1");
    // 5 Mbit/s of 1500-byte packets below a 10 Mbit/s bottleneck: nothing is lost, and about
    // 416 packets leave in 1 s (5e6 / 12000, less the random start offset of up to 10 ms).
    let sent = f["sent"].as_u64().unwrap();
    assert!((405..=417).contains(&sent), "sent {sent}");
    assert_eq!(f["lost"], 0);
    // One-way latency: 3 serializations (12 us + 1200 us + 12 us) and 10.2 ms of propagation,
    // no queueing at half the bottleneck rate: about 11.42 ms, to HDR precision (0.1 %).
    for p in ["p50", "p99"] {
        let ns = f["latency_ns"][p].as_u64().unwrap();
        assert!(
            (11_400_000..=11_440_000).contains(&ns),
            "latency {p} = {ns} ns"
        );
    }
    // The pipes: 5 links x 2 directions, in file order; the bottleneck carried every packet.
    let pipes = v["pipes"].as_array().unwrap();
    assert_eq!(pipes.len(), 10);
    let bottleneck = pipes
        .iter()
        .find(|p| p["link"] == "r-left-r-right" && p["direction"] == "a-b")
        .expect("bottleneck pipe r-left -> r-right");
    // Every packet entered it; all but the few still propagating (10 ms at ~416 packets/s) left.
    assert_eq!(bottleneck["packets_in"].as_u64().unwrap(), sent);
    assert!(bottleneck["packets_out"].as_u64().unwrap() + 6 >= sent);
    assert_eq!(bottleneck["drops"], 0);
    let t = &v["totals"];
    // A packet-hop is one packet leaving one pipe.
    let out_sum: u64 = pipes
        .iter()
        .map(|p| p["packets_out"].as_u64().unwrap())
        .sum();
    assert_eq!(t["packet_hops"].as_u64().unwrap(), out_sum);
    assert!(t["wall_seconds"].as_f64().unwrap() > 0.0);
    assert!(t["packet_hops_per_second"].as_f64().unwrap() > 0.0);
}

#[test]
fn sim_with_the_same_seed_and_no_wall_clock_prints_identical_bytes() {
    let args = [
        "sim",
        "examples/dumbbell.toml",
        "--traffic",
        "pattern=all-to-all source=poisson rate=2Mbit",
        "--duration",
        "1s",
        "--seed",
        "7",
        "--json",
        "--no-wall-clock",
    ];
    let a = run(&args).ok();
    let b = run(&args).ok();
    assert!(a.stdout == b.stdout, "same seed, different output");
    let v = a.json();
    assert!(v["totals"]["wall_seconds"].is_null());
    assert!(v["totals"]["packet_hops_per_second"].is_null());
    assert_eq!(v["seed"], 7);
    // The tables are deterministic too without the wall clock.
    let mut tables = args.to_vec();
    tables.retain(|a| *a != "--json");
    let a = run(&tables).ok();
    let b = run(&tables).ok();
    assert!(a.stdout == b.stdout, "same seed, different tables");
    assert!(!a.stdout.contains("wall"), "{}", a.stdout);
}

/// h1 -> r1 -> h2 with 5 % Bernoulli loss on the first link.
const LOSSY: &str = "hosts = [\"h1\", \"h2\"]\nrouters = [\"r1\"]\n\n[defaults]\nbw = \"100Mbit\"\ndelay = \"1ms\"\n\n\
                     [[link]]\na = \"h1\"\nb = \"r1\"\nloss = \"5%\"\n\n[[link]]\na = \"r1\"\nb = \"h2\"\n";

#[test]
fn sim_with_other_seeds_loses_other_packets() {
    let dir = TempDir::new("lossy");
    let topo = dir.write("lossy.toml", LOSSY);
    let mut losses = Vec::new();
    for seed in ["1", "2", "3"] {
        let v = run(&[
            "sim",
            &topo.display().to_string(),
            "--traffic",
            "pattern=pairs pairs=h1:h2 source=cbr rate=10Mbit",
            "--duration",
            "2s",
            "--seed",
            seed,
            "--json",
            "--no-wall-clock",
        ])
        .ok()
        .json();
        let f = &v["flows"][0];
        let (sent, lost) = (f["sent"].as_u64().unwrap(), f["lost"].as_u64().unwrap());
        // Binomial(n, 0.05) within 99.9 %: |lost - np| <= 3.29 sqrt(np(1-p)).
        let (n, p) = (sent as f64, 0.05);
        let bound = 3.29 * (n * p * (1.0 - p)).sqrt();
        assert!(
            (lost as f64 - n * p).abs() <= bound,
            "seed {seed}: lost {lost} of {sent}"
        );
        // The loss is the lossy pipe's, and only its.
        assert_eq!(v["pipes"][0]["drops_by_cause"]["loss"], lost, "seed {seed}");
        assert_eq!(v["pipes"][0]["drops"], lost, "seed {seed}");
        let pipes = v["pipes"].as_array().unwrap();
        let out_sum: u64 = pipes
            .iter()
            .map(|p| p["packets_out"].as_u64().unwrap())
            .sum();
        assert_eq!(v["totals"]["packet_hops"].as_u64().unwrap(), out_sum);
        losses.push(lost);
    }
    assert!(
        losses.windows(2).any(|w| w[0] != w[1]),
        "three seeds, one loss count: {losses:?}"
    );
}

/// A run long enough (about a second of wall time: the engine is optimized in test builds too)
/// that progress would be printed, at least once, if it were shown; it is shown every 250 ms.
fn long_run_args(topo: &str) -> Vec<String> {
    [
        "sim",
        topo,
        "--traffic",
        "pattern=pairs pairs=h1:h2 source=cbr rate=90Mbit",
        "--duration",
        "400s",
        "--top",
        "1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn sim_shows_no_progress_when_stderr_is_not_a_terminal() {
    let dir = TempDir::new("quiet");
    let topo = dir.write("lossy.toml", LOSSY);
    let out = run(&long_run_args(&topo.display().to_string())).ok();
    assert!(
        !out.stderr.contains('\r') && !out.stderr.contains("simulated"),
        "progress on a pipe: {:?}",
        out.stderr
    );
    assert!(out.stderr.is_empty(), "{:?}", out.stderr);
    assert!(out.stdout.contains("packet-hops"), "{}", out.stdout);
}

/// The other side of the previous test, so that it can fail: on a terminal (a pty made by
/// util-linux `script`), the same run shows progress on stderr, unless `--json` is given.
#[test]
fn sim_shows_progress_on_a_terminal_but_not_with_json() {
    let has_script = std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_script {
        eprintln!("skipped: util-linux `script` is not installed");
        return;
    }
    let dir = TempDir::new("tty");
    let topo = dir.write("lossy.toml", LOSSY);
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let on_tty = |extra: &[&str]| {
        let mut words = vec![quote(common::bin())];
        words.extend(
            long_run_args(&topo.display().to_string())
                .iter()
                .map(|a| quote(a)),
        );
        words.extend(extra.iter().map(|a| quote(a)));
        let out = std::process::Command::new("script")
            .args(["-qec", &words.join(" "), "/dev/null"])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run script");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = on_tty(&[]);
    assert!(
        text.contains("\r  simulated ") && text.contains("M packet-hops/s"),
        "no progress on a terminal:\n{text}"
    );
    let text = on_tty(&["--json"]);
    assert!(!text.contains("simulated"), "progress with --json:\n{text}");
}

#[test]
fn sim_rejects_a_bad_traffic_spec_with_exit_2() {
    for (spec, message) in [
        (
            "source=cbr speed=1Mbit",
            "netloom: --traffic: unknown key \"speed\"; valid keys: ",
        ),
        ("source=cbr", "netloom: --traffic: source=cbr needs rate="),
        ("source=cbr rate=10mbps", "ambiguous"),
        (
            "pattern=pairs pairs=left1:h9 source=aimd",
            "unknown host \"h9\"",
        ),
        ("hello", "--traffic"),
    ] {
        let out = run(&[
            "sim",
            "examples/dumbbell.toml",
            "--traffic",
            spec,
            "--duration",
            "1s",
        ])
        .expect_code(2);
        assert!(
            out.stderr.contains(message),
            "{spec:?}: expected {message:?} in {:?}",
            out.stderr
        );
        assert!(out.stdout.is_empty(), "{spec:?}: {}", out.stdout);
    }
}

#[test]
fn sim_rejects_a_bad_duration_with_exit_2() {
    for (duration, message) in [
        ("10", "netloom: --duration: \"10\" has no unit"),
        (
            "10mbps",
            "netloom: --duration: \"10mbps\" has an unknown unit",
        ),
        ("soon", "--duration"),
        ("0s", "netloom: --duration: \"0s\" simulates nothing"),
    ] {
        let out = run(&[
            "sim",
            "examples/dumbbell.toml",
            "--traffic",
            PAIR,
            "--duration",
            duration,
        ])
        .expect_code(2);
        assert!(
            out.stderr.contains(message),
            "{duration:?}: expected {message:?} in {:?}",
            out.stderr
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn usage_errors_exit_2() {
    // A missing required flag, an unknown flag and an unknown subcommand: clap's usage errors.
    for args in [
        &["sim", "examples/dumbbell.toml"][..],
        &["check", "examples/dumbbell.toml", "--yaml"],
        &["simulate"],
        &[],
    ] {
        let out = run(args).expect_code(2);
        assert!(
            out.stderr.contains("Usage: netloom"),
            "{args:?}: {}",
            out.stderr
        );
    }
    run(&["--version"]).ok();
    run(&["sim", "--help"]).ok();
}

#[test]
fn a_json_topology_works_like_toml() {
    let dir = TempDir::new("json-topo");
    let file = dir.path().join("dumbbell.json");
    run(&["gen", "dumbbell", "-o", &file.display().to_string()]).ok();
    let out = run_in(
        Some(dir.path()),
        &[
            "sim",
            "dumbbell.json",
            "--traffic",
            "k=1 source=cbr rate=1Mbit",
            "--duration",
            "200ms",
            "--json",
        ],
    )
    .ok();
    assert!(!out.json()["flows"].as_array().unwrap().is_empty());
}

/// A report that cannot be written (a full disk) is an error, exit 2, not a panic.
#[test]
fn a_report_that_cannot_be_written_is_an_error_not_a_panic() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
    let Ok(full) = full else {
        eprintln!("SKIPPED: no /dev/full");
        return;
    };
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_netloom"))
        .args(["sim", "examples/dumbbell.toml", "--traffic"])
        .args([
            "pattern=random-k k=1 source=aimd",
            "--duration",
            "100ms",
            "--json",
        ])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        "netloom: writing to standard output: No space left on device (os error 28)\n"
    );
}
