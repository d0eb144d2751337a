//! `netloom partition` and the partition section of `sim --json`: efficiency counted by hand
//! from the report's own per-pipe counters, the same numbers from `partition --measure`, and
//! assignments that repeat per seed.

use crate::common::{bin, run_in, TempDir};
use serde_json::Value;
use std::process::Command;

/// h1 - r1 - r2 - r3 - h2 with a narrow middle so that the AIMD flow loses packets.
const CHAIN: &str = r#"
hosts = ["h1", "h2"]
routers = ["r1", "r2", "r3"]

[topology]
name = "chain"

[[link]]
a = "h1"
b = "r1"
bw = "100Mbit"
delay = "1ms"

[[link]]
a = "r1"
b = "r2"
bw = "100Mbit"
delay = "1ms"

[[link]]
a = "r2"
b = "r3"
bw = "5Mbit"
delay = "5ms"
queue = "6KB"

[[link]]
a = "r3"
b = "h2"
bw = "100Mbit"
delay = "1ms"
"#;

fn netloom(args: &[&str]) -> Value {
    let out = Command::new(bin())
        .args(args)
        .output()
        .expect("run netloom");
    assert!(
        out.status.success(),
        "netloom {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

fn packets_in(report: &Value, from: &str, to: &str) -> u64 {
    report["pipes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["from"] == from && p["to"] == to)
        .unwrap_or_else(|| panic!("no pipe {from}->{to}"))["packets_in"]
        .as_u64()
        .unwrap()
}

#[test]
fn sim_efficiency_equals_a_hand_count() {
    let dir = TempDir::new("partition-hand");
    let topo = dir.write("chain.toml", CHAIN);
    // Pipes: links in file order, a→b then b→a. Core 0: h1-r1 and r1-r2; core 1: the rest.
    let assignment = dir.write(
        "a.json",
        r#"{"cores": 2, "pipes": [0, 0, 0, 0, 1, 1, 1, 1], "topology": "chain"}"#,
    );
    let observed = dir.path().join("obs.json");
    let r = netloom(&[
        "sim",
        topo.to_str().unwrap(),
        "--duration",
        "3s",
        "--traffic",
        "pattern=pairs pairs=h1:h2 source=aimd",
        "--json",
        "--assignment",
        assignment.to_str().unwrap(),
        "--observe",
        observed.to_str().unwrap(),
    ]);
    // Data enter at h1→r1 and cross at r2→r3; ACKs enter at h2→r3 and cross at r2→r1.
    let data_in = packets_in(&r, "h1", "r1");
    let acks_in = packets_in(&r, "h2", "r3");
    let data_cross = packets_in(&r, "r2", "r3");
    let acks_cross = packets_in(&r, "r2", "r1");
    assert!(r["pipes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["drops"].as_u64() > Some(0)));
    let p = &r["partition"];
    assert_eq!(p["edge_packets"], data_in + acks_in);
    assert_eq!(p["cross_core_hops"], data_cross + acks_cross);
    assert_eq!(p["packets"], data_in + acks_in + data_cross + acks_cross);
    assert_eq!(p["cores"][0]["edge_packets"], data_in);
    assert_eq!(p["cores"][0]["packets"], data_in + acks_cross);
    assert_eq!(p["cores"][1]["edge_packets"], acks_in);
    assert_eq!(p["cores"][1]["packets"], acks_in + data_cross);
    let e = (data_in + acks_in) as f64 / (data_in + acks_in + data_cross + acks_cross) as f64;
    assert!((p["efficiency"].as_f64().unwrap() - e).abs() < 1e-12);
    // The observation file the run wrote is a weighting for `partition`.
    let again = netloom(&[
        "partition",
        topo.to_str().unwrap(),
        "--cores",
        "2",
        "--weights",
        &format!("observed:{}", observed.display()),
        "--json",
    ]);
    assert_eq!(again["pipes"], 8);
}

#[test]
fn sim_partitions_like_partition_does() {
    let dir = TempDir::new("partition-same");
    let topo = dir.write("chain.toml", CHAIN);
    let file = dir.path().join("a.json");
    let observed = dir.path().join("obs.json");
    let p = netloom(&[
        "partition",
        topo.to_str().unwrap(),
        "--cores",
        "2",
        "--method",
        "kcluster",
        "--seed",
        "4",
        "-o",
        file.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(p["per_core"].as_array().unwrap().len(), 2);
    let sim = |extra: &[&str]| {
        let mut args = vec![
            "sim",
            topo.to_str().unwrap(),
            "--duration",
            "1s",
            "--seed",
            "4",
            "--no-wall-clock",
            "--traffic",
            "pattern=pairs pairs=h1:h2 source=aimd",
            "--json",
        ];
        args.extend_from_slice(extra);
        netloom(&args)
    };
    let by_flags = sim(&[
        "--cores",
        "2",
        "--method",
        "kcluster",
        "--observe",
        observed.to_str().unwrap(),
    ]);
    let by_file = sim(&["--assignment", file.to_str().unwrap()]);
    assert_eq!(by_flags, by_file);
    let measured = netloom(&[
        "partition",
        topo.to_str().unwrap(),
        "--cores",
        "2",
        "--method",
        "kcluster",
        "--seed",
        "4",
        "--measure",
        observed.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(measured["measured"], by_file["partition"]);
    // Without partition flags the report has no partition section.
    assert!(sim(&[]).get("partition").is_none());
}

/// The engine's partition-equivalence topology (impaired.toml), written into `dir`.
fn impaired(dir: &TempDir) -> std::path::PathBuf {
    dir.write(
        "impaired.toml",
        include_str!("../../../netloom-engine/tests/data/impaired.toml"),
    )
}

#[test]
fn sim_measures_hops_a_link_going_down_turns_back() {
    // The engine's partition-equivalence topology: when its link r4-r1 goes down and up, routes
    // change under packets in flight, and some reach a router that sends them back over the
    // link they came on.
    let dir = TempDir::new("partition-outage");
    let topo = impaired(&dir);
    let observed = dir.path().join("obs.json");
    let r = netloom(&[
        "sim",
        topo.to_str().unwrap(),
        "--traffic",
        "pattern=random-k k=3 source=aimd",
        "--duration",
        "2s",
        "--seed",
        "7",
        "--no-wall-clock",
        "--cores",
        "2",
        "--observe",
        observed.to_str().unwrap(),
        "--json",
    ]);
    let obs: Value = serde_json::from_str(&std::fs::read_to_string(&observed).unwrap()).unwrap();
    let link = |p: &Value| &r["pipes"][p.as_u64().unwrap() as usize]["link"];
    assert!(obs["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| link(&t[0]) == link(&t[1])));
    // The file reads back, and measures what the run did.
    let measured = netloom(&[
        "partition",
        topo.to_str().unwrap(),
        "--cores",
        "2",
        "--measure",
        observed.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(measured["measured"], r["partition"]);
    let weighted = netloom(&[
        "partition",
        topo.to_str().unwrap(),
        "--cores",
        "2",
        "--weights",
        &format!("observed:{}", observed.display()),
        "--json",
    ]);
    assert_eq!(weighted["pipes"], r["pipes"].as_array().unwrap().len());
}

#[test]
fn bad_assignments_are_refused_with_a_reason() {
    let dir = TempDir::new("partition-bad");
    let topo = dir.write("chain.toml", CHAIN);
    let short = dir.write("a.json", r#"{"cores": 2, "pipes": [0, 1]}"#);
    let out = Command::new(bin())
        .args([
            "sim",
            topo.to_str().unwrap(),
            "--traffic",
            "pattern=pairs pairs=h1:h2 source=aimd",
        ])
        .args(["--assignment", short.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("assignment has 2 pipes, but topology \"chain\" has 8"),
        "{err}"
    );
}

#[test]
fn placement_gives_each_core_a_cpu_this_process_may_use() {
    let dir = TempDir::new("partition-placement");
    let topo = dir.write("chain.toml", CHAIN);
    let report = |cores: &str| {
        netloom(&[
            "partition",
            topo.to_str().unwrap(),
            "--cores",
            cores,
            "--placement",
            "--json",
        ])
    };
    let p = report("3");
    let placement = &p["placement"];
    let allowed: Vec<u64> = placement["machine"]["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    let cpus: Vec<u64> = placement["cpu"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert_eq!(cpus.len(), 3);
    assert!(cpus.iter().all(|c| allowed.contains(c)), "{placement}");
    let mut distinct = cpus.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), cpus.len().min(allowed.len()), "{placement}");
    assert_eq!(placement["shared_cpus"], allowed.len() < 3);
    // The traffic matrix is the cut broken down by pair of cores.
    let traffic: f64 = placement["traffic"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter().map(|t| t.as_f64().unwrap()))
        .sum();
    let cut = p["cut"].as_f64().unwrap();
    assert!(
        (traffic - cut).abs() <= 1e-9 * cut.max(1.0),
        "{traffic} vs {cut}"
    );
    // Without the flag there is no placement.
    assert!(netloom(&[
        "partition",
        topo.to_str().unwrap(),
        "--cores",
        "2",
        "--json"
    ])
    .get("placement")
    .is_none());
}

/// `sim --workers 2`: the same flows and pipes as one worker, with the workers' share reported,
/// pinned or not, with payloads cached or shipped.
#[test]
fn sim_on_two_workers_reports_the_same_run() {
    let dir = TempDir::new("partition-workers");
    let topo = dir.write("chain.toml", CHAIN);
    let sim = |extra: &[&str]| sim_chain(&topo, "pattern=pairs pairs=h1:h2 source=aimd", extra);
    let one = sim(&[]);
    assert!(one.get("workers").is_none());
    let cached = sim(&["--workers", "2", "--pin"]);
    let shipped = sim(&[
        "--workers",
        "2",
        "--payload",
        "ship",
        "--method",
        "kcluster",
    ]);
    for two in [&cached, &shipped] {
        assert_eq!(one["flows"], two["flows"]);
        assert_eq!(one["pipes"], two["pipes"]);
        let w = &two["workers"];
        assert_eq!(w["workers"], 2);
        assert_eq!(w["per_worker"].as_array().unwrap().len(), 2);
        let hops: u64 = w["per_worker"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["packet_hops"].as_u64().unwrap())
            .sum();
        assert_eq!(hops, one["totals"]["packet_hops"].as_u64().unwrap());
        assert!(w["windows"].as_u64().unwrap() > 0);
        assert!(two["partition"]["efficiency"].as_f64().is_some());
        assert!(w["cross_core_hops"].as_u64().unwrap() > 0);
    }
    assert_eq!(cached["workers"]["cpus"].as_array().unwrap().len(), 2);
    assert_eq!(cached["workers"]["payload"], "cache");
    assert_eq!(shipped["workers"]["payload"], "ship");
    // Per hop: a 64-byte descriptor, plus a payload of up to 1500 bytes when shipped.
    let per_hop = |r: &Value| {
        r["workers"]["cross_core_bytes"].as_f64().unwrap()
            / r["workers"]["cross_core_hops"].as_f64().unwrap()
    };
    assert_eq!(per_hop(&cached), 64.0);
    assert!(per_hop(&shipped) > 500.0, "{}", per_hop(&shipped));
}

/// h1 - r1 - r2 - h2 whose middle link is down for 100 ms of every 300: packets on their way to
/// it find no route at r1.
const FLAPPING: &str = r#"
hosts = ["h1", "h2"]
routers = ["r1", "r2"]

[defaults]
bw = "10Mbit"
delay = "3ms"

[[link]]
a = "h1"
b = "r1"

[[link]]
a = "r1"
b = "r2"
schedule = { every = "300ms", events = [{ from = "100ms", to = "200ms", set = { up = false } }] }

[[link]]
a = "r2"
b = "h2"
"#;

/// Workers that count no pairs of pipes (only `--observe` and `--repartition` need them) measure
/// their partition from what they count instead, and get the same figures as from the pairs,
/// also where packets bound for a next pipe never reach it: a link going down under them, with
/// another way (impaired.toml's r4-r1) or none (`FLAPPING`), and TTLs running out (a chain of 70
/// routers). Threads and processes alike.
#[test]
fn workers_measure_their_partition_without_pair_counts() {
    let dir = TempDir::new("partition-crossings");
    let impaired = impaired(&dir);
    let chain = dir.path().join("chain70.toml");
    run_in(
        None,
        &[
            "gen",
            "chain",
            "--routers",
            "70",
            "-o",
            chain.to_str().unwrap(),
        ],
    )
    .ok();
    let flapping = dir.write("flapping.toml", FLAPPING);
    let observed = dir.path().join("obs.json");
    // What each topology makes happen, counted in the report's totals.
    for (topo, traffic, happens) in [
        (&impaired, "pattern=random-k k=3 source=aimd", "packet_hops"),
        (
            &flapping,
            "pattern=all-to-all source=cbr rate=2Mbit",
            "unroutable",
        ),
        (
            &chain,
            "pattern=all-to-all source=cbr rate=1Mbit",
            "ttl_expired",
        ),
    ] {
        // Random parts cross the chain's middle as well as its directions.
        for workers in [["--workers", "2"], ["--workers", "3"]] {
            let run = |extra: &[&str]| {
                let mut args = vec![
                    "sim",
                    topo.to_str().unwrap(),
                    "--traffic",
                    traffic,
                    "--duration",
                    "2s",
                    "--seed",
                    "7",
                    "--no-wall-clock",
                    "--json",
                ];
                args.extend_from_slice(&workers);
                args.extend_from_slice(&["--method", "random"]);
                args.extend_from_slice(extra);
                netloom(&args)
            };
            let counted = run(&[]);
            let paired = run(&["--observe", observed.to_str().unwrap()]);
            let by_processes = run(&["--processes"]);
            assert!(counted["partition"]["cross_core_hops"].as_u64().unwrap() > 0);
            assert!(
                counted["totals"][happens].as_u64().unwrap() > 0,
                "{happens}"
            );
            assert_eq!(
                counted["partition"],
                paired["partition"],
                "{}",
                topo.display()
            );
            assert_eq!(counted["partition"], by_processes["partition"]);
        }
    }
}

/// `sim` of `topo` for 3 s with `traffic`, plus `extra` arguments; the JSON report.
fn sim_chain(topo: &std::path::Path, traffic: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "sim",
        topo.to_str().unwrap(),
        "--traffic",
        traffic,
        "--duration",
        "3s",
        "--json",
        "--no-wall-clock",
    ];
    args.extend_from_slice(extra);
    netloom(&args)
}

/// FQ-CoDel's pipes hold packets and serve them at `Dequeue` events: split over two workers,
/// with flows both ways through the narrow middle (given a queue long enough for CoDel to drop
/// from, and short enough to overflow too), they give the single engine's flows and pipes.
#[test]
fn fq_codel_on_two_workers_reports_the_same_run() {
    let dir = TempDir::new("partition-workers-fq");
    let topo = dir.write(
        "chain.toml",
        &CHAIN
            .replace("delay = ", "aqm = \"fq_codel\"\ndelay = ")
            .replace("queue = \"6KB\"", "queue = \"30KB\""),
    );
    let traffic = "pattern=pairs pairs=h1:h2,h2:h1 source=aimd";
    let one = sim_chain(&topo, traffic, &[]);
    let drops = |cause: &str| -> u64 {
        one["pipes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["drops_by_cause"][cause].as_u64().unwrap())
            .sum()
    };
    assert!(drops("queue") > 0 && drops("codel") > 0, "{}", one["pipes"]);
    for method in ["metis", "kcluster"] {
        let two = sim_chain(&topo, traffic, &["--workers", "2", "--method", method]);
        assert_eq!(one["flows"], two["flows"], "{method}");
        assert_eq!(one["pipes"], two["pipes"], "{method}");
        assert!(two["workers"]["cross_core_hops"].as_u64().unwrap() > 0);
    }
}

#[test]
fn sim_workers_refuse_what_they_cannot_run() {
    let dir = TempDir::new("partition-workers-bad");
    let topo = dir.write(
        "zero.toml",
        "hosts = [\"h1\", \"h2\"]\n[[link]]\na = \"h1\"\nb = \"h2\"\nbw = \"1Gbit\"\ndelay = \"0ms\"\n",
    );
    let assignment = dir.write("a.json", r#"{"cores": 2, "pipes": [0, 1]}"#);
    let run = |extra: &[&str]| {
        let out = Command::new(bin())
            .args([
                "sim",
                topo.to_str().unwrap(),
                "--traffic",
                "pattern=pairs pairs=h1:h2 source=aimd",
            ])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run(&[
        "--workers",
        "2",
        "--assignment",
        assignment.to_str().unwrap(),
    ]);
    assert!(
        err.contains("pipe h1->h2") && err.contains("no time at all"),
        "{err}"
    );
    let err = run(&["--workers", "2", "--cores", "3"]);
    assert!(err.contains("--cores 3 and --workers 2"), "{err}");
    let err = run(&[
        "--workers",
        "3",
        "--assignment",
        assignment.to_str().unwrap(),
    ]);
    assert!(
        err.contains("the assignment has 2 cores and --workers is 3"),
        "{err}"
    );
}

/// `sim --repartition`: the same run as without it (flows and pipes), one row per epoch, the
/// first measuring the static partition twice (nothing is observed before it), a partition
/// remade from each epoch's traffic, and the bad uses refused; on two workers that move what
/// changes owner, the same run and the same epochs again.
#[test]
fn sim_repartitions_every_epoch_without_changing_the_run() {
    let dir = TempDir::new("partition-repartition");
    let topo = dir.path().join("h2.toml");
    let gen = [
        "gen",
        "tree-mesh",
        "--height",
        "2",
        "--hosts-per",
        "3",
        "-o",
        topo.to_str().unwrap(),
    ];
    run_in(None, &gen).ok();
    let sim = |extra: &[&str]| {
        let mut args = vec![
            "sim",
            topo.to_str().unwrap(),
            "--traffic",
            "pattern=switching within=3s source=aimd cap=2Mbit",
            "--duration",
            "3500ms",
            "--no-wall-clock",
            "--json",
            "--cores",
            "2",
        ];
        args.extend(extra);
        netloom(&args)
    };
    let plain = sim(&[]);
    let epochs = sim(&["--repartition", "1s"]);
    assert_eq!(plain["flows"], epochs["flows"]);
    assert_eq!(plain["pipes"], epochs["pipes"]);
    assert_eq!(plain["partition"], epochs["partition"]);
    assert!(plain.get("repartition").is_none());
    let r = &epochs["repartition"];
    assert_eq!(
        (r["epoch_ns"].as_u64(), r["method"].as_str()),
        (Some(1_000_000_000), Some("metis"))
    );
    let rows = r["epochs"].as_array().unwrap();
    let spans: Vec<_> = rows
        .iter()
        .map(|e| {
            (
                e["start_ns"].as_u64().unwrap(),
                e["end_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        spans,
        [
            (0, 1_000_000_000),
            (1_000_000_000, 2_000_000_000),
            (2_000_000_000, 3_000_000_000),
            (3_000_000_000, 3_500_000_000)
        ]
    );
    assert_eq!(rows[0]["static_efficiency"], rows[0]["dynamic_efficiency"]);
    assert!(
        rows[0]["moved_pipes"].as_u64().unwrap() > 0,
        "the first observation moves pipes"
    );
    let e = |row: &Value, key: &str| row[key].as_f64().unwrap();
    assert!(rows
        .iter()
        .any(|row| e(row, "dynamic_efficiency") != e(row, "static_efficiency")));

    let refused = |extra: &[&str], expected: &str| {
        let out = Command::new(bin())
            .args([
                "sim",
                topo.to_str().unwrap(),
                "--traffic",
                "k=1 source=aimd",
            ])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected), "{extra:?}: {err}");
    };
    refused(
        &["--repartition", "1s"],
        "--repartition needs a partition to start from",
    );
    refused(&["--repartition", "0s", "--cores", "2"], "is no epoch");

    // Two workers move pipes, packets and hosts at each epoch's end: the same run, the same
    // epochs.
    let moved = sim(&["--repartition", "1s", "--workers", "2"]);
    assert_eq!(plain["flows"], moved["flows"]);
    assert_eq!(plain["pipes"], moved["pipes"]);
    assert_eq!(epochs["repartition"], moved["repartition"]);

    let fq = dir.write(
        "fq.toml",
        "hosts = [\"h1\", \"h2\"]\nrouters = [\"r\"]\n[defaults]\nbw = \"10Mbit\"\n[[link]]\na = \"h1\"\nb = \"r\"\ndelay = \"1ms\"\naqm = \"fq_codel\"\n[[link]]\na = \"r\"\nb = \"h2\"\ndelay = \"1ms\"\n",
    );
    let out = Command::new(bin())
        .args([
            "sim",
            fq.to_str().unwrap(),
            "--traffic",
            "pairs=h1:h2 source=aimd",
        ])
        .args(["--workers", "2", "--repartition", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pipe h1->r holds its packets in flow queues"),
        "{err}"
    );
}

/// `sim --workers` partitions by the traffic it runs, as `partition --weights traffic:SPEC`
/// does: the same assignment, so the same report; `--cores` keeps the paper's static weights.
/// So it also partitions a topology with more hosts than the static weights can route, which
/// `--cores` refuses.
#[test]
fn workers_partition_by_the_traffic_they_run() {
    let dir = TempDir::new("partition-traffic");
    let topo = impaired(&dir);
    let topo = topo.to_str().unwrap();
    let traffic = "pattern=random-k k=2 source=aimd cap=2Mbit";
    let file = dir.path().join("a.json");
    let weights = format!("traffic:{traffic}");
    let file_arg = file.to_str().unwrap();
    let partition = [
        "partition",
        topo,
        "--cores",
        "2",
        "--weights",
        &weights,
        "--seed",
        "3",
        "-o",
        file_arg,
        "--json",
    ];
    netloom(&partition);
    let sim = |extra: &[&str]| {
        let mut args = vec![
            "sim",
            topo,
            "--traffic",
            traffic,
            "--duration",
            "1s",
            "--seed",
            "3",
            "--no-wall-clock",
            "--json",
            "--workers",
            "2",
        ];
        args.extend(extra);
        netloom(&args)
    };
    let own = sim(&[]);
    assert_eq!(own, sim(&["--assignment", file_arg]));
    let by_static = sim(&["--cores", "2"]);
    assert_ne!(
        own["partition"], by_static["partition"],
        "the static weights split this topology otherwise"
    );
    assert_eq!(own["flows"], by_static["flows"]);

    // 10,100 hosts: more ordered pairs than the static weights route (10^8).
    let ring = dir.path().join("ring.toml");
    let gen = [
        "gen",
        "ring",
        "--routers",
        "101",
        "--hosts-per",
        "100",
        "-o",
    ];
    run_in(None, &[&gen[..], &[ring.to_str().unwrap()]].concat()).ok();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "sim",
            ring.to_str().unwrap(),
            "--traffic",
            "pattern=random-k k=1 source=cbr rate=100kbit",
            "--duration",
            "5ms",
            "--workers",
            "2",
            "--json",
        ];
        args.extend(extra);
        run_in(None, &args)
    };
    let big = run(&[]).ok();
    assert_eq!(big.json()["workers"]["workers"], 2, "{}", big.stdout);
    let refused = run(&["--cores", "2"]);
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("static weights route every ordered pair of hosts"),
        "{}",
        refused.stderr
    );
}
