//! Per-host CPU limits in a live run (`cpu = 0.25` in a host's table): a busy loop started with
//! `netloom exec` in a limited host runs in the host's cgroup and gets about a quarter of one
//! CPU, beside one in an unlimited host that gets far more; the cgroup goes with the run. Each
//! test skips, saying why, where it cannot run.

use crate::live_common::Lab;
use std::path::Path;

const TOPOLOGY: &str = r#"hosts = [{ name = "h1", cpu = 0.25 }, "h2"]
routers = ["r1"]
[[link]]
a = "h1"
b = "r1"
bw = "1Gbit"
delay = "1ms"
[[link]]
a = "h2"
b = "r1"
bw = "1Gbit"
delay = "1ms"
"#;

/// Seconds each busy loop runs.
const SECONDS: f64 = 4.0;

/// A busy loop started in the background of a shell in the host; after `SECONDS` the shell
/// prints the loop's cgroup line, its user and system CPU time and start time in clock ticks,
/// and the machine's uptime, and ends it. The loop runs in a session of its own whose
/// scheduling group has nice -19 (autogroups: each session competes as one, whatever its
/// processes' nice), so that the machine's other work (other tests, builds) takes little from
/// it: what holds the limited one back is its limit.
fn busy_loop_script() -> String {
    format!(
        "setsid sh -c 'echo -19 > /proc/self/autogroup 2>/dev/null; while :; do :; done' & \
         pid=$!; sleep {SECONDS}; \
         grep -E ':cpu(,cpuacct)?:|^0::' /proc/$pid/cgroup | head -1; \
         cut -d' ' -f14,15,22 /proc/$pid/stat; cut -d' ' -f1 /proc/uptime; kill $pid"
    )
}

/// The share of one CPU the loop got over its life, and the cgroup line, from the script's
/// output.
fn share(out: &std::process::Output) -> (f64, String) {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    let ticks: Vec<f64> = lines[1]
        .split_whitespace()
        .map(|t| t.parse::<f64>().unwrap())
        .collect();
    let uptime: f64 = lines[2].parse().unwrap();
    // Clock ticks are 1/100 s on Linux (USER_HZ).
    let ran = uptime - ticks[2] / 100.0;
    ((ticks[0] + ticks[1]) / 100.0 / ran, lines[0].to_string())
}

#[test]
fn a_limited_host_s_busy_loop_gets_a_quarter_of_a_cpu_beside_an_unlimited_one() {
    require_live!("sh");
    let mut lab = Lab::new("cpu", TOPOLOGY);
    lab.start(&[]);
    let ns = format!("nl-{}-h1", lab.name);
    let dir = netloom_cgroup(&ns);
    assert!(dir.is_dir(), "{}", dir.display());
    // The limited loop's groups (the host's and netloom's above it) get the weight the other's
    // session has (its cgroup, not a session, is what competes for it), so that only its
    // quota holds it back.
    let weight = match dir.join("cpu.shares").exists() {
        true => ("cpu.shares", "262144"),
        false => ("cpu.weight", "10000"),
    };
    for group in [&dir, dir.parent().unwrap()] {
        std::fs::write(group.join(weight.0), weight.1).unwrap();
    }
    let script = busy_loop_script();
    let (limited, unlimited) = std::thread::scope(|s| {
        let one = s.spawn(|| lab.exec("h1", &["sh", "-c", &script]));
        let two = s.spawn(|| lab.exec("h2", &["sh", "-c", &script]));
        (share(&one.join().unwrap()), share(&two.join().unwrap()))
    });
    eprintln!("h1 (cpu = 0.25): {limited:?}; h2: {unlimited:?}");
    assert!(
        limited.1.ends_with(&format!("/netloom/{ns}")),
        "{limited:?}"
    );
    assert!(!unlimited.1.contains("/netloom/"), "{unlimited:?}");
    assert!(
        (0.20..=0.30).contains(&limited.0),
        "h1's loop got {:.2} of a CPU with cpu = 0.25",
        limited.0
    );
    assert!(
        unlimited.0 > 2.0 * limited.0,
        "h2's loop got {:.2} of a CPU, h1's {:.2}",
        unlimited.0,
        limited.0
    );
    lab.stop();
    assert!(!dir.exists(), "{} outlived the run", dir.display());
}

#[test]
fn clean_removes_the_cgroup_of_a_run_that_died() {
    require_live!("sh");
    let mut lab = Lab::new("cpuclean", TOPOLOGY);
    lab.start(&[]);
    let dir = netloom_cgroup(&format!("nl-{}-h1", lab.name));
    assert!(dir.is_dir(), "{}", dir.display());
    // The run dies without tearing down (SIGKILL): its cgroup stays until clean.
    let mut run = lab.child.take().unwrap();
    run.kill().unwrap();
    run.wait().unwrap();
    assert!(dir.is_dir(), "{}", dir.display());
    let out = lab
        .cmd()
        .args(["clean", "--name", &lab.name])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dir.exists(), "{} outlived netloom clean", dir.display());
}

/// Where the run makes the cgroup of the host of namespace `ns`: under v2's mount when it has
/// the cpu controller, else under v1's cpu controller.
fn netloom_cgroup(ns: &str) -> std::path::PathBuf {
    let v2 = Path::new("/sys/fs/cgroup");
    let v2_has_cpu = std::fs::read_to_string(v2.join("cgroup.controllers"))
        .is_ok_and(|c| c.split_whitespace().any(|w| w == "cpu"));
    let root = if v2_has_cpu {
        v2.to_path_buf()
    } else {
        v2.join("cpu")
    };
    root.join("netloom").join(ns)
}
