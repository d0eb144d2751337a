//! `--cluster slurm` inside a job of a two-node Slurm made on this machine (`slurm_lab`): a live
//! run whose machines are the job's nodes pings across them at the topology's round trip, as
//! between hosts of one node in the same run, and a sim over them reports what one engine
//! does; outside a job, the error says what to do. Nothing of the Slurm is left after. The
//! live test skips, saying why, without root, TUN or Slurm (Debian's slurm-wlm and munge).

use crate::live_common::{self, trimmed_mean, Lab};
use crate::slurm_lab::{wait_for, SlurmLab, NODES, PROGRAMS};
use crate::ssh_lab;
use std::collections::BTreeMap;
use std::process::{Output, Stdio};
use std::time::Duration;

/// Four hosts on one router, every link 6 ms and 100 Mbit/s: every pair of hosts is 24 ms apart
/// (round trip) whichever node each is on.
const STAR: &str = r#"hosts = ["h1", "h2", "h3", "h4"]
routers = ["r1"]
[defaults]
bw = "100Mbit"
delay = "6ms"
queue = 400
[[link]]
a = "h1"
b = "r1"
[[link]]
a = "h2"
b = "r1"
[[link]]
a = "h3"
b = "r1"
[[link]]
a = "h4"
b = "r1"
"#;

/// Skips the test, saying why, where a two-node Slurm cannot be made here.
macro_rules! require_slurm {
    () => {
        require_live!("ping");
        if let Some(why) = live_common::unavailable(PROGRAMS) {
            eprintln!("SKIPPED: the Slurm test needs Slurm and munge (Debian's slurm-wlm and munge; .ci/run installs them): {why}");
            return;
        }
    };
}

#[test]
fn outside_a_slurm_job_cluster_slurm_says_what_to_do() {
    let _turn = live_common::turn();
    let dir = std::env::temp_dir().join(format!("netloom-noslurm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("star.toml"), STAR).unwrap();
    let file = dir.join("star.toml").display().to_string();
    let sim = ["sim", &file, "--traffic", "pattern=random-k k=2"];
    for argv in [&["run", &file][..], &sim[..]] {
        let out = live_common::netloom()
            .args(argv)
            .args(["--cluster", "slurm"])
            .env_remove("SLURM_JOB_ID")
            .env_remove("SLURM_JOB_NODELIST")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {stderr}");
        assert!(
            stderr.contains("--cluster slurm: this is not inside a Slurm job (SLURM_JOB_ID is not set): run it in an allocation of two nodes or more, e.g. `salloc -N2 netloom run FILE --cluster slurm`"),
            "{argv:?}: {stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_and_a_sim_inside_a_slurm_job_use_its_nodes_as_machines() {
    require_slurm!();
    let mut lab = Lab::new("sl", STAR);
    let slurm = SlurmLab::new(&lab.name, &lab.dir.join("run"));
    let traces = slurm.traces();
    live_run(&mut lab, &slurm);
    sim(&lab, &slurm);
    batch_script(&lab, &slurm);
    drop(slurm);
    traces.assert_gone();
}

/// `salloc -N2 netloom run STAR --cluster slurm`: the job's nodes are the machines, hosts are
/// on both, a ping between hosts on different nodes crosses (hand-offs) at the topology's
/// 24 ms, as one between hosts of one node does in the same run.
fn live_run(lab: &mut Lab, slurm: &SlurmLab) {
    let topo = lab.dir.join("topo.toml").display().to_string();
    let netloom = env!("CARGO_BIN_EXE_netloom");
    let argv = [netloom, "run", "--name", &lab.name, "--json", &topo];
    let child = slurm
        .salloc(&[&argv[..], &["--cluster", "slurm"]].concat())
        .spawn()
        .unwrap();
    lab.child = Some(child);
    wait_for(Duration::from_secs(60), "the run up in the job", || {
        if let Some(status) = lab.child.as_mut().unwrap().try_wait().unwrap() {
            let out = lab.child.take().unwrap().wait_with_output().unwrap();
            panic!(
                "salloc ... netloom run exited ({status}): {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                slurm.logs()
            );
        }
        lab.is_up()
    });
    // Where each host is: the coordinator's map, written for `netloom exec`.
    let map = lab
        .dir
        .join("run")
        .join(format!("{}.cluster.json", lab.name));
    let map: serde_json::Value = serde_json::from_slice(&std::fs::read(map).unwrap()).unwrap();
    let names: Vec<&str> = map["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, NODES, "{map}");
    let mut on: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for (host, k) in map["hosts"].as_object().unwrap() {
        on.entry(k.as_u64().unwrap())
            .or_default()
            .push(host.clone());
    }
    assert_eq!(on.len(), 2, "hosts on both nodes: {map}");
    // Four hosts on two nodes: one node has two of them.
    let same = on
        .values()
        .find(|h| h.len() >= 2)
        .expect("two hosts on a node");
    let (one, other) = (&on[&0][0], &on[&1][0]);
    let baseline = trimmed_mean(lab.exact_rtts(&same[0], &same[1], 10));
    let before = handoffs(lab);
    let across = trimmed_mean(lab.exact_rtts(one, other, 10));
    let crossed = handoffs(lab) - before;
    assert!(
        crossed >= 10,
        "{one} (nl1) to {other} (nl2): {crossed} hand-offs between the nodes for 13 echoes"
    );
    assert!(
        (baseline - 24.0).abs() < 1.0 && (across - baseline).abs() < 0.5,
        "{one} (nl1) to {other} (nl2) {across:.3} ms, {} to {} on one node {baseline:.3} ms: both should be the topology's 24 ms\n{}",
        same[0],
        same[1],
        lab.circumstances()
    );
    eprintln!("across the nodes {across:.3} ms, on one node {baseline:.3} ms, 24 ms configured");
    lab.stop_command();
    let out = lab.child.take().unwrap().wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The cluster made of the job, as the run says it.
    let [a1, a2] = &slurm.addresses;
    let said = format!(
        "machines nl1 at {a1} (1 CPU), nl2 at {a2} (1 CPU); workers started with `srun --jobid="
    );
    let line = stderr.lines().find(|l| l.contains(&said));
    eprintln!("{}", line.unwrap_or_else(|| panic!("{said:?} in {stderr}")));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["workers"]["workers"], 2, "{}", report["workers"]);
}

/// `accuracy.handoffs` of the run's stats: hand-offs that reached a worker so far.
fn handoffs(lab: &Lab) -> u64 {
    let out = lab.control(&["stats", "--json"]);
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    stats["accuracy"]["handoffs"].as_u64().unwrap()
}

/// `salloc -N2 netloom sim STAR --cluster slurm` reports what one engine does, both nodes
/// having worked and packets having crossed between them.
fn sim(lab: &Lab, slurm: &SlurmLab) {
    let topo = lab.dir.join("topo.toml").display().to_string();
    let netloom = env!("CARGO_BIN_EXE_netloom");
    let argv = [
        netloom,
        "sim",
        &topo,
        "--traffic",
        "pattern=random-k k=2 source=aimd",
        "--duration",
        "2s",
        "--seed",
        "3",
        "--no-wall-clock",
        "--json",
    ];
    let report = |out: Output| -> serde_json::Value {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}\n{}", slurm.logs());
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let mut one = report(
        std::process::Command::new(netloom)
            .args(&argv[1..])
            .stdin(Stdio::null())
            .output()
            .unwrap(),
    );
    let mut across = report(
        slurm
            .salloc(&[&argv[..], &["--cluster", "slurm"]].concat())
            .output()
            .unwrap(),
    );
    // What only a run over workers has: how it went (`workers`), the partition it ran on
    // (`partition`), and the most packets in flight at once, which is each engine's added up.
    let sections = across.as_object_mut().unwrap();
    let workers = sections.remove("workers").expect("a workers section");
    assert!(
        sections.remove("partition").is_some(),
        "a partition section"
    );
    for report in [&mut one, &mut across] {
        report["totals"]
            .as_object_mut()
            .unwrap()
            .remove("max_in_flight");
    }
    assert_eq!(workers["workers"], 2, "{workers}");
    assert!(
        workers["cross_core_hops"].as_u64().unwrap() > 100,
        "{workers}"
    );
    for worker in workers["per_worker"].as_array().unwrap() {
        assert!(worker["packet_hops"].as_u64().unwrap() > 100, "{workers}");
    }
    assert_eq!(one, across, "one engine, then over the job's two nodes");
    assert!(one["totals"]["packet_hops"].as_u64().unwrap() > 100_000);
}

/// dist/slurm/netloom.sbatch, submitted as a user would (`sbatch netloom.sbatch TOPOLOGY 1`,
/// netloom on the PATH): its ping across the job's nodes is answered, and `netloom stop` prints
/// the merged report of the two nodes into the job's output.
fn batch_script(lab: &Lab, slurm: &SlurmLab) {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../dist/slurm/netloom.sbatch"
    );
    let netloom = std::path::Path::new(env!("CARGO_BIN_EXE_netloom"));
    let path = format!(
        "{}:{}",
        netloom.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = lab.dir.join("batch.out");
    let out = std::process::Command::new("sbatch")
        .arg("--parsable")
        .arg(format!("--job-name={}", slurm.run))
        .arg(format!("--output={}", output.display()))
        .arg(script)
        .arg(lab.dir.join("topo.toml"))
        .arg("1")
        .env("PATH", path)
        .env("NETLOOM_RUN_DIR", &slurm.registry)
        .current_dir(&lab.dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "sbatch: {stderr}");
    let job = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // Polled here: `sbatch --wait` polls at growing intervals, 30 s more for this job.
    let state = || {
        let out = std::process::Command::new("scontrol")
            .args(["show", "job", "--oneliner", &job])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    wait_for(Duration::from_secs(120), "the batch job's end", || {
        let now = state();
        !["PENDING", "RUNNING", "COMPLETING"]
            .iter()
            .any(|s| now.contains(&format!("JobState={s}")))
    });
    let written = std::fs::read_to_string(&output).unwrap_or_default();
    let state = state();
    assert!(
        state.contains("JobState=COMPLETED") && state.contains("ExitCode=0:0"),
        "{state}\n{written}\n{}",
        slurm.logs()
    );
    for said in ["10 packets transmitted, 10 received", "hosts on 2 machines"] {
        assert!(
            written.contains(said),
            "{said:?} in the job's output:\n{written}"
        );
    }
}

/// The start-up benchmark (bench/live/cluster-start.sh, docs/performance.md): how long `netloom
/// run --detach` of STAR takes to have every host up on the lab's two nodes, its workers
/// started through srun inside a job, against the same nodes' workers started over SSH (an
/// sshd on each node's address). REPEAT runs of each (default 5), in turn; prints each and the
/// medians.
#[test]
#[ignore = "a benchmark: bench/live/cluster-start.sh runs it"]
fn start_up_through_srun_and_through_ssh() {
    require_slurm!();
    if let Some(why) = live_common::unavailable(&["ssh", "ssh-keygen", "/usr/sbin/sshd"]) {
        eprintln!("SKIPPED: the benchmark needs an SSH server and client: {why}");
        return;
    }
    let repeat: usize = std::env::var("REPEAT").map_or(5, |r| r.parse().unwrap());
    // The build measured: NETLOOM_BIN (bench/lib.sh's release build), else this test's.
    let bin = std::env::var("NETLOOM_BIN");
    let netloom = bin.as_deref().unwrap_or(env!("CARGO_BIN_EXE_netloom"));
    let lab = Lab::new("sb", STAR);
    let slurm = SlurmLab::new(&lab.name, &lab.dir.join("run"));
    let servers = ssh_lab::Servers::new(&lab.dir, &slurm.addresses, Some(&slurm.netns));
    let mut file = String::new();
    for (node, address) in NODES.iter().zip(&slurm.addresses) {
        let launcher: Vec<String> = servers
            .ssh(address)
            .iter()
            .map(|w| format!("{w:?}"))
            .collect();
        file += &format!(
            "[[machine]]\nname = \"{node}\"\naddress = \"{address}\"\ncpus = 1\nlauncher = [{}]\nnetloom = \"NETLOOM_RUN_DIR={} {netloom}\"\n",
            launcher.join(", "),
            slurm.registry.display()
        );
    }
    std::fs::write(lab.dir.join("ssh.toml"), file).unwrap();
    // One start, timed in the shell that makes it to the millisecond, then stopped.
    let script = |cluster: &str| {
        format!(
            "t0=$(date +%s%N); {netloom} run {topo} --name {name} --detach --cluster {cluster} >/dev/null || exit 1; \
             t1=$(date +%s%N); echo start $(( (t1 - t0) / 1000000 )); {netloom} stop --name {name} >/dev/null",
            topo = lab.dir.join("topo.toml").display(),
            name = lab.name,
        )
    };
    let start = |out: Output| -> f64 {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}\n{}", slurm.logs());
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("start ")?.parse().ok())
            .expect("a start's time")
    };
    let ssh_file = lab.dir.join("ssh.toml").display().to_string();
    let (mut srun, mut ssh) = (Vec::new(), Vec::new());
    // In turn, so that both see the machine's load alike.
    for _ in 0..repeat {
        srun.push(start(
            slurm
                .salloc(&["sh", "-c", &script("slurm")])
                .output()
                .unwrap(),
        ));
        let mut c = std::process::Command::new("sh");
        c.args(["-c", &script(&ssh_file)])
            .env("NETLOOM_RUN_DIR", &slurm.registry);
        ssh.push(start(c.output().unwrap()));
    }
    let median = |v: &[f64]| live_common::median(v.to_vec());
    println!(
        "start-up of `run --detach` of 4 hosts on two nodes, ms, {repeat} runs each, {netloom}, load at the end {}",
        std::fs::read_to_string("/proc/loadavg").unwrap().trim()
    );
    println!("srun: {srun:?}, median {}", median(&srun));
    println!("ssh:  {ssh:?}, median {}", median(&ssh));
    drop(servers);
    drop(slurm);
}
