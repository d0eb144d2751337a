//! Dynamic repartitioning of a live run (`run --workers 2 --repartition 1s`, docs/live.md): UDP
//! with sequence numbers (iperf3) and ping from h1 into one subtree, then into the other, so the
//! observed traffic moves and the partition follows it. Measured against a run of the same
//! traffic without `--repartition`, just before: the partition changes, no datagram is lost
//! (beyond what the pipes' model dropped) or reordered, the path is the same, and the echoes
//! of epochs that began with a move are as fast as the others of the same run.

use crate::live_common::{
    self, assert_moves_did_not_delay, phase, pipe_drops, print_losses, where_lost, Lab, Phase,
    TWO_SUBTREES,
};
use serde_json::Value;

/// Both phases, h2's subtree then h3's, on two workers with `extra` flags; the phases and the
/// final report.
fn run(tag: &str, extra: &[&str]) -> (Vec<Phase>, Value) {
    let mut lab = Lab::new(tag, TWO_SUBTREES);
    let mut args = vec!["--workers", "2"];
    args.extend_from_slice(extra);
    lab.start(&args);
    let phases = vec![phase(&mut lab, "h2"), phase(&mut lab, "h3")];
    (phases, lab.stop())
}

#[test]
fn repartitioning_follows_moving_traffic_without_losing_reordering_or_delaying() {
    require_live!("iperf3", "ping", "ss");
    let _turn = live_common::turn();
    let (fixed, baseline) = run("rpf", &[]);
    // Payloads cached (they stay with the worker that read them) or shipped (moved exits take
    // their packets along).
    for (tag, payload) in [("rpm", "cache"), ("rps", "ship")] {
        let (moving, report) = run(tag, &["--repartition", "1s", "--payload", payload]);
        eprintln!("measured with --payload {payload}:");
        print_losses(&moving, &report, &fixed, &baseline);
        let r = &report["repartition"];
        eprintln!("measured: {r}");
        eprintln!(
            "measured: accuracy without moves {}\nwith moves {}",
            baseline["accuracy"], report["accuracy"]
        );
        assert!(
            r["moves"].as_u64().unwrap() > 0,
            "the partition changed: {r}"
        );
        assert!(r["pipes"].as_u64().unwrap() > 0, "{r}");
        for (k, p) in moving.iter().enumerate() {
            assert!(p.packets > 1_000, "phase {k}: {} datagrams", p.packets);
            // Nothing vanishes at a move: a datagram lost at all was dropped by the model, by
            // the first pipe's queue (a BDP, 25 datagrams) when a starved worker read h1's TUN
            // queue late and its datagrams entered in a burst. Under two CPU hogs, runs without
            // moves lost 94 and 62 of 1,875 that way, runs with moves 22 and 6. Or past netloom,
            // by the receiver's socket buffer when the iperf3 server was starved.
            assert!(
                p.lost <= pipe_drops(&report) + p.receive_buffer_drops && p.out_of_order == 0,
                "phase {k}: {} lost, {} reordered, of {}; {}",
                p.lost,
                p.out_of_order,
                p.packets,
                where_lost(p, &report)
            );
            assert_eq!(p.rtts.len(), 150, "phase {k}: every echo answered");
        }
        assert_moves_did_not_delay(&fixed, &moving, &report, 0.2);
        // No burst of lateness: the epochs that began with a move release as on time as the others
        // (p99 within the late threshold of theirs). The stall itself is printed, not judged:
        // under 1 ms on a quiet VM, but a loaded VM delays the wake-ups on the way by
        // milliseconds (docs/live.md); what it costs packets is the epochs' lateness.
        eprintln!(
            "measured: moves stalled the workers up to {} ns",
            r["stall_ns"]
        );
        let worst = |moved: bool| {
            r["epochs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["moved"] == moved && e["releases"].as_u64() > Some(0))
                .map(|e| e["lateness_p99_ns"].as_u64().unwrap())
                .max()
        };
        let (with, without) = (worst(true).unwrap(), worst(false).unwrap());
        assert!(
            with <= without + 100_000,
            "lateness p99 {with} ns in epochs with a move, {without} without"
        );
        // Pipes' counters move with them: what the pipes into each host passed on is what the
        // host was written, moves or not.
        for (run, r) in [("without moves", &baseline), ("with moves", &report)] {
            for host in r["hosts"].as_array().unwrap() {
                let name = &host["name"];
                let into: u64 = r["pipes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|p| &p["to"] == name)
                    .map(|p| p["packets_out"].as_u64().unwrap())
                    .sum();
                assert_eq!(into, host["packets_out"].as_u64().unwrap(), "{run}: {name}");
            }
        }
        assert_eq!(
            report["accuracy"]["physical_drops"], 0,
            "{}",
            report["accuracy"]
        );
    }
}

#[test]
fn bad_repartition_input_exits_2_before_anything_starts() {
    require_live!("ip");
    let lab = Lab::new("rpb", TWO_SUBTREES);
    let fq = TWO_SUBTREES.replace("delay = \"1ms\"", "delay = \"1ms\"\naqm = \"fq_codel\"");
    std::fs::write(lab.dir.join("fq.toml"), fq).unwrap();
    let kernel = format!("{TWO_SUBTREES}[topology]\nkernel_routers = true\n");
    std::fs::write(lab.dir.join("kernel.toml"), kernel).unwrap();
    // Machines whose launcher fails at once: a run refused before starting them says why it is
    // refused, not that they could not start.
    let machine = |k: u32, nodes: &str| {
        format!(
            "[[machine]]\nname = \"m{k}\"\naddress = \"10.251.9.{k}\"\nnodes = {nodes}\nlauncher = [\"false\"]\n"
        )
    };
    let file = machine(1, r#"["h1", "r0"]"#) + &machine(2, r#"["r1", "r2", "h2", "h3"]"#);
    let cluster = lab.dir.join("cluster.toml");
    std::fs::write(&cluster, file).unwrap();
    let cluster = cluster.to_str().unwrap();
    let cases: [(&str, &[&str], &str); 9] = [
        ("topo", &["--repartition", "1s"], "give --workers 2 or more"),
        (
            "topo",
            &["--workers", "1", "--repartition", "1s"],
            "give --workers 2 or more",
        ),
        (
            "topo",
            &["--workers", "2", "--repartition", "soon"],
            "\"soon\" is not a duration",
        ),
        (
            "topo",
            &["--workers", "2", "--repartition", "10ms"],
            "at least 100ms",
        ),
        ("fq", &["--workers", "2", "--repartition", "1s"], "fq_codel"),
        (
            "topo",
            &["--cluster", cluster, "--repartition", "10ms"],
            "at least 100ms",
        ),
        (
            "fq",
            &["--cluster", cluster, "--repartition", "1s"],
            "fq_codel",
        ),
        (
            "kernel",
            &["--workers", "2", "--repartition", "1s"],
            "router r0 is a kernel router",
        ),
        (
            "kernel",
            &["--cluster", cluster, "--repartition", "1s"],
            "router r0 is a kernel router",
        ),
    ];
    for (file, args, expected) in cases {
        let out = lab
            .cmd()
            .args(["run", "--name", &lab.name, "--duration", "1s"])
            .arg(lab.dir.join(format!("{file}.toml")))
            .args(args)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains(expected), "{args:?}: {said}");
        assert!(lab.namespaces().is_empty(), "{args:?}: something started");
    }
}
