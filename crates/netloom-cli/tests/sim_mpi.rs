//! `mpirun -np N netloom sim ... --mpi` (built with `--features mpi`): over 2 and 3 ranks, on
//! tree-mesh h2 and inet, the report is the threads' byte for byte, and its flows, pipes and
//! packet-hops one engine's.
#![cfg(feature = "mpi")]

mod common;

use common::{bin, run_in, TempDir};
use std::process::{Command, Stdio};

const TRAFFIC: &str = "pattern=random-k k=4 source=aimd cap=3Mbit";

/// `sim FILE` for `duration` with `extra` arguments, JSON without wall-clock figures.
fn args<'a>(topo: &'a str, duration: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["sim", topo, "--traffic", TRAFFIC, "--duration", duration];
    args.extend(["--seed", "1", "--json", "--no-wall-clock"]);
    args.extend_from_slice(extra);
    args
}

/// The same under `mpirun -np RANKS`: its stdout, and stderr on failure.
fn over_mpi(dir: &TempDir, ranks: usize, args: &[&str]) -> String {
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(ranks.to_string())
        .arg(bin())
        .args(args)
        .arg("--mpi")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("mpirun (Debian's openmpi-bin) runs the mpi feature's tests");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn ranks_report_byte_for_byte_what_threads_and_one_engine_do() {
    let dir = TempDir::new("sim-mpi");
    let h2 = dir.path().join("h2.toml");
    let inet = dir.path().join("inet.toml");
    for (what, gen, file, duration) in [
        ("h2", &["gen", "tree-mesh", "--height", "2"][..], &h2, "2s"),
        ("inet", &["gen", "inet", "--seed", "1"][..], &inet, "300ms"),
    ] {
        let file = file.to_str().unwrap();
        let mut gen = gen.to_vec();
        gen.extend(["-o", file]);
        run_in(Some(dir.path()), &gen).ok();
        let one: serde_json::Value = serde_json::from_str(
            &run_in(Some(dir.path()), &args(file, duration, &[]))
                .ok()
                .stdout,
        )
        .unwrap();
        for ranks in [2, 3] {
            let workers = ranks.to_string();
            let threads = run_in(
                Some(dir.path()),
                &args(file, duration, &["--workers", &workers]),
            )
            .ok()
            .stdout;
            let mpi = over_mpi(&dir, ranks, &args(file, duration, &[]));
            assert_eq!(threads, mpi, "{what} over {ranks} ranks: JSON");
            let m: serde_json::Value = serde_json::from_str(&mpi).unwrap();
            assert_eq!(one["flows"], m["flows"], "{what} over {ranks} ranks");
            assert_eq!(one["pipes"], m["pipes"], "{what} over {ranks} ranks");
            assert_eq!(one["totals"]["packet_hops"], m["totals"]["packet_hops"]);
            assert_eq!(m["workers"]["workers"], ranks, "{what}");
            assert!(
                m["workers"]["cross_core_hops"].as_u64().unwrap() > 1000,
                "{what}"
            );
            assert!(m["workers"]["windows"].as_u64().unwrap() > 100, "{what}");
        }
    }
}

#[test]
fn ranks_refuse_workers_other_than_their_number_and_a_lone_rank() {
    let dir = TempDir::new("sim-mpi-bad");
    let topo = dir.write(
        "dumbbell.toml",
        &std::fs::read_to_string(common::repo_file("examples/dumbbell.toml")).unwrap(),
    );
    let topo = topo.to_str().unwrap();
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .arg(bin())
        .args(args(topo, "1s", &["--workers", "3", "--mpi"]))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("--workers 3 under 2 MPI ranks: the workers are the ranks; drop --workers"),
        "{err}"
    );
    // Started without mpirun: one rank, no run.
    let err = run_in(Some(dir.path()), &args(topo, "1s", &["--mpi"]))
        .expect_code(2)
        .stderr;
    assert!(err.contains("--mpi needs 2 or more ranks"), "{err}");
}
