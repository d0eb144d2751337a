//! Hostile sizes: topologies past the address plan, large enough that tables of nodes × hosts
//! would not fit in memory, and generator flags that ask for absurd sizes. Each is refused with
//! the limit, or handled in little memory and time; none panics or aborts.

use crate::common::{bin, repo_root, run, TempDir};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs the binary with `args`, killing it if it takes longer than `limit` (a table or a walk
/// that grows with hosts × hosts would otherwise hang the suite). Output goes to files in
/// `dir`, so a large report cannot fill a pipe and stall the child. Returns the exit code,
/// stdout and stderr.
fn run_within(dir: &TempDir, args: &[&str], limit: Duration) -> (Option<i32>, String, String) {
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let file = |p: &std::path::Path| std::fs::File::create(p).expect("create output file");
    let mut child = Command::new(bin())
        .args(args)
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .stdout(file(&out))
        .stderr(file(&err))
        .spawn()
        .expect("run netloom");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for netloom") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("netloom {} took more than {limit:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |p: &std::path::Path| std::fs::read_to_string(p).expect("read output file");
    (status.code(), read(&out), read(&err))
}

/// `run_within`, which must succeed; its stdout.
fn ok_within(dir: &TempDir, args: &[&str], limit: Duration) -> String {
    let (code, out, err) = run_within(dir, args, limit);
    assert_eq!(code, Some(0), "netloom {}\n{err}", args.join(" "));
    out
}

/// `netloom gen star --hosts N` into `dir`, returning the file (JSON, which loads faster than
/// TOML).
fn star(dir: &TempDir, hosts: usize) -> std::path::PathBuf {
    let file = dir.path().join(format!("star{hosts}.json"));
    let hosts = hosts.to_string();
    let file_arg = file.to_str().expect("utf-8 temp path");
    run(&["gen", "star", "--hosts", &hosts, "-o", file_arg]).ok();
    file
}

#[test]
fn run_past_the_address_plan_is_refused_before_anything_is_made() {
    // One host more than 198.18.0.0/15 numbers. The refusal comes from the plan, before routes,
    // namespaces or the registry, so it needs neither root nor the live lock.
    let dir = TempDir::new("scale-plan");
    let file = star(&dir, 131_071);
    let out = run(&[
        "run".as_ref(),
        file.as_os_str(),
        "--name".as_ref(),
        "hostile-scale-plan".as_ref(),
    ])
    .expect_code(2);
    assert!(
        out.stderr.contains("131071 hosts") && out.stderr.contains("room for 131070 hosts"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("198.18.0.0/15"), "{}", out.stderr);
    assert!(
        out.stderr.contains(file.to_str().unwrap()),
        "{}",
        out.stderr
    );
}

#[test]
fn a_200000_host_star_checks_and_simulates_in_seconds_with_small_tables() {
    // Tables of nodes × hosts would be 160 GB (the allocation aborted); walking every host
    // pair for the diameter would take hours. The star's tables are one router towards itself.
    let dir = TempDir::new("scale-star");
    let file = star(&dir, 200_000);
    let file = file.to_str().unwrap();
    let limit = Duration::from_secs(60);
    let check: serde_json::Value =
        serde_json::from_str(&ok_within(&dir, &["check", file, "--json"], limit)).unwrap();
    let bytes = check["routing_table_bytes"].as_u64().unwrap();
    assert!(bytes < 200_000 * 64, "{bytes} bytes of tables");
    assert_eq!(check["diameter_hops"]["hops"], 2, "{check}");
    let sim = ok_within(
        &dir,
        &[
            "sim",
            file,
            "--duration",
            "100ms",
            "--top",
            "1",
            "--no-wall-clock",
            "--traffic",
            "pattern=pairs pairs=h1:h200000 source=cbr rate=1Mbit",
        ],
        limit,
    );
    // The flow's line: h1 h200000 cbr Mbit/s p50 p99 sent lost loss%.
    let flow: Vec<&str> = sim
        .lines()
        .find(|l| l.starts_with("h1 "))
        .unwrap_or_else(|| panic!("no flow line in:\n{sim}"))
        .split_whitespace()
        .collect();
    assert_eq!(flow[1], "h200000", "{sim}");
    assert!(flow[6].parse::<u64>().unwrap() > 0, "{sim}");

    // All-to-all would be 4 × 10^10 flows (their pairs alone 320 GB).
    let all = "pattern=all-to-all source=cbr rate=1Mbit";
    let out = run(&["sim", file, "--traffic", all]).expect_code(2);
    assert!(
        out.stderr
            .contains("gives 39999800000 flows over 200000 hosts; the limit is 200000"),
        "{}",
        out.stderr
    );

    // Partitioning it would need a flow graph of 200,000² pipe pairs at the hub (the
    // allocation aborted): refused with the size, whichever weights.
    let traffic = "pattern=pairs pairs=h1:h2 source=cbr rate=1Mbit";
    for args in [
        vec!["sim", file, "--workers", "2", "--traffic", traffic],
        vec!["partition", file, "--cores", "2", "--weights", "uniform"],
    ] {
        let out = run(&args).expect_code(2);
        assert!(
            out.stderr
                .contains("the flow graph would have 39999800000 pipe pairs")
                && out.stderr.contains("\"r1\" with 200000"),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn absurd_sizes_from_gen_and_import_are_refused_before_building() {
    // Each would take minutes and gigabytes to build (or abort) before the loader saw it.
    let dir = TempDir::new("scale-gen");
    let gml = dir.write(
        "two.gml",
        "graph [\n node [ id 0 label \"a\" ]\n node [ id 1 label \"b\" ]\n \
         edge [ source 0 target 1 ]\n]\n",
    );
    let gml = gml.to_str().unwrap();
    let out = dir.path().join("out.toml");
    let out = out.to_str().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &["check", gml, "--hosts-per-router", "100000000"],
            "attaching 200000000 hosts makes 200000002 nodes and 200000001 links; the limit is \
             1100000 nodes and 1500000 links",
        ),
        (
            &["gen", "star", "--hosts", "1100000", "-o", out],
            "1100001 nodes and 1100000 links; the limit is 1100000 nodes",
        ),
        (
            &[
                "gen",
                "ring",
                "--routers",
                "1000",
                "--hosts-per",
                "100000000",
                "-o",
                out,
            ],
            "the limit is 1100000 nodes",
        ),
    ];
    for (args, want) in cases {
        let (code, _, err) = run_within(&dir, args, Duration::from_secs(20));
        assert_eq!(code, Some(2), "netloom {}\n{err}", args.join(" "));
        assert!(err.contains(want), "netloom {}\n{err}", args.join(" "));
    }
    assert!(!dir.path().join("out.toml").exists());
}

#[test]
fn tables_too_large_for_memory_are_refused_with_their_size() {
    // 40,000 hosts each on both of two routers: none is a stub, so the tables are 40,002 rows
    // × 40,000 columns, 6 GiB (they took minutes and 6 GB before, and more hosts aborted).
    let dir = TempDir::new("scale-tables");
    let hosts: Vec<String> = (0..40_000).map(|i| format!("\"h{i}\"")).collect();
    let links: Vec<String> = (0..40_000)
        .flat_map(|i| {
            [
                format!("{{\"a\":\"h{i}\",\"b\":\"r1\"}}"),
                format!("{{\"a\":\"h{i}\",\"b\":\"r2\"}}"),
            ]
        })
        .chain(["{\"a\":\"r1\",\"b\":\"r2\"}".to_string()])
        .collect();
    let file = dir.write(
        "dual.json",
        &format!(
            "{{\"defaults\":{{\"bw\":\"1Gbit\",\"delay\":\"1ms\"}},\"hosts\":[{}],\
             \"routers\":[\"r1\",\"r2\"],\"link\":[{}]}}",
            hosts.join(","),
            links.join(",")
        ),
    );
    let file = file.to_str().unwrap();
    let (code, _, err) = run_within(&dir, &["check", file], Duration::from_secs(20));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(file)
            && err.contains("40002 rows (routers and hosts that are not stubs) × 40000 columns")
            && err.contains("the limit is 4 GiB"),
        "{err}"
    );
}
