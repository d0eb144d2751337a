//! `sim --workers N --processes`: the report of threads and of one engine, byte for byte, also
//! when the network between the workers loses packets, and a worker's death (or the
//! coordinator's) stops the run with nothing left behind.

use crate::common::{bin, run_in, TempDir};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The engine's partition-equivalence topology, with its scheduled link outage.
fn topology(dir: &TempDir) -> std::path::PathBuf {
    dir.write(
        "impaired.toml",
        include_str!("../../../netloom-engine/tests/data/impaired.toml"),
    )
}

fn sim(dir: &TempDir, extra: &[&str]) -> String {
    let topo = topology(dir);
    let mut args = vec![
        "sim",
        topo.to_str().unwrap(),
        "--traffic",
        "pattern=random-k k=3 source=aimd",
        "--duration",
        "2s",
        "--seed",
        "7",
        "--no-wall-clock",
    ];
    args.extend_from_slice(extra);
    run_in(Some(dir.path()), &args).ok().stdout
}

#[test]
fn processes_report_byte_for_byte_what_threads_and_one_engine_do() {
    let dir = TempDir::new("sim-processes");
    let one: serde_json::Value = serde_json::from_str(&sim(&dir, &["--json"])).unwrap();
    for workers in ["2", "3"] {
        let threads = sim(&dir, &["--json", "--workers", workers]);
        let processes = sim(&dir, &["--json", "--workers", workers, "--processes"]);
        assert_eq!(threads, processes, "--workers {workers}: JSON");
        let p: serde_json::Value = serde_json::from_str(&processes).unwrap();
        assert_eq!(one["flows"], p["flows"], "--workers {workers}");
        assert_eq!(one["pipes"], p["pipes"], "--workers {workers}");
        assert_eq!(one["totals"]["packet_hops"], p["totals"]["packet_hops"]);
        assert!(p["workers"]["cross_core_hops"].as_u64().unwrap() > 1000);
        assert!(p["workers"]["windows"].as_u64().unwrap() > 100);
        let tables = |extra: &[&str]| {
            let mut args = vec!["--workers", workers, "--top", "0"];
            args.extend_from_slice(extra);
            sim(&dir, &args)
        };
        assert_eq!(
            tables(&[]),
            tables(&["--processes"]),
            "--workers {workers}: tables"
        );
    }
}

/// Drops one packet of every 10,000 that reach the loopback (from the 5,000th on), runs `sim`
/// with `args`, and prints the rule's counter on stderr: in a network namespace of the run's
/// own (`unshare --net`), which goes with it, rule and all, however the run ends.
const LOSSY: &str = r#"set -e
ip link set lo up
nft add table inet lossy
nft add chain inet lossy in '{ type filter hook input priority 0; }'
nft add rule inet lossy in iif lo numgen inc mod 10000 == 5000 counter drop
set +e
"$@"
status=$?
nft list table inet lossy >&2
exit $status
"#;

#[test]
fn packets_lost_between_worker_processes_neither_stop_nor_change_the_run() {
    let usable = Command::new("unshare")
        .args(["--net", "nft", "list", "tables"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !usable {
        eprintln!("SKIPPED: needs root, unshare and nft for a network namespace that loses");
        return;
    }
    let dir = TempDir::new("sim-processes-lossy");
    let topo = topology(&dir);
    let threads = sim(&dir, &["--json", "--workers", "3"]);
    let out = Command::new("unshare")
        .args(["--net", "sh", "-c", LOSSY, "sh", bin(), "sim"])
        .arg(&topo)
        .args(["--traffic", "pattern=random-k k=3 source=aimd"])
        .args([
            "--duration",
            "2s",
            "--seed",
            "7",
            "--no-wall-clock",
            "--json",
        ])
        .args(["--workers", "3", "--processes"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // The rule dropped packets of the run: before TCP carried the batches, the first datagram
    // lost stopped the run after 10 s ("worker 1: round 835: nothing came for 10.0 s, so
    // datagrams were lost ...").
    let dropped: u64 = err
        .split("counter packets ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no counter in: {err}"));
    assert!(out.status.success(), "{err}");
    assert!(dropped > 0, "{err}");
    eprintln!("measured: {dropped} packets dropped between the workers");
    assert_eq!(threads, String::from_utf8_lossy(&out.stdout), "the report");
}

#[test]
fn processes_need_workers_and_do_not_pin() {
    let dir = TempDir::new("sim-processes-bad");
    let topo = topology(&dir);
    let run = |extra: &[&str]| {
        let mut args = vec![
            "sim",
            topo.to_str().unwrap(),
            "--traffic",
            "pattern=random-k k=3 source=aimd",
        ];
        args.extend_from_slice(extra);
        run_in(Some(dir.path()), &args).expect_code(2).stderr
    };
    let err = run(&["--processes"]);
    assert!(
        err.contains("--processes needs --workers 2 or more"),
        "{err}"
    );
    let err = run(&["--processes", "--workers", "2", "--pin"]);
    assert!(
        err.contains("--pin") && err.contains("--processes"),
        "{err}"
    );
}

/// The default build has no MPI: `--mpi` says how to get it (sim_mpi.rs tests the feature).
#[cfg(not(feature = "mpi"))]
#[test]
fn mpi_without_the_feature_says_how_to_build_it() {
    let dir = TempDir::new("sim-no-mpi");
    let topo = topology(&dir);
    let err = run_in(
        Some(dir.path()),
        &[
            "sim",
            topo.to_str().unwrap(),
            "--traffic",
            "pattern=random-k k=3",
            "--mpi",
        ],
    )
    .expect_code(2)
    .stderr;
    assert!(
        err.contains("--mpi: this netloom was built without MPI; build with --features mpi"),
        "{err}"
    );
}

/// The processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut kids: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                return false;
            };
            // After "pid (comm) ": state, then the parent's pid.
            let rest = stat.rsplit_once(") ").map_or("", |(_, r)| r);
            rest.split(' ').nth(1) == Some(&pid.to_string())
        })
        .collect();
    kids.sort_unstable();
    kids
}

/// Whether process `pid` is gone (or a zombie no one reaped yet: it runs nothing).
fn gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
        s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z'))
    })
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A run of an hour of virtual time over 3 processes, started in the background; its two
/// worker processes once they are up.
fn long_run(dir: &TempDir) -> (std::process::Child, Vec<u32>) {
    let topo = topology(dir);
    let coordinator = Command::new(bin())
        .args(["sim", topo.to_str().unwrap(), "--traffic"])
        .args(["pattern=random-k k=3 source=aimd", "--duration", "3600s"])
        .args(["--workers", "3", "--processes", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut kids = Vec::new();
    wait_for("two worker processes", || {
        kids = children(coordinator.id());
        kids.len() == 2
    });
    (coordinator, kids)
}

fn kill(pid: u32) {
    let status = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn a_dead_worker_stops_the_run_saying_which_and_why() {
    let dir = TempDir::new("sim-processes-death");
    let (coordinator, kids) = long_run(&dir);
    // Let the run get going first.
    std::thread::sleep(Duration::from_millis(300));
    kill(kids[1]);
    let out = coordinator.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("(pid {})", kids[1])) && err.contains("SIGKILL"),
        "{err}"
    );
    assert!(err.contains("the run was stopped"), "{err}");
    assert!(out.stdout.is_empty(), "no report");
    assert!(gone(kids[0]), "the other worker was stopped too");
}

#[test]
fn workers_die_with_a_killed_coordinator() {
    let dir = TempDir::new("sim-processes-orphans");
    let (mut coordinator, kids) = long_run(&dir);
    kill(coordinator.id());
    coordinator.wait().unwrap();
    wait_for("the workers to die with their coordinator", || {
        kids.iter().all(|&k| gone(k))
    });
}
