//! What the live binary's modules share: the turn (one test at a time), the `Lab` (one
//! experiment, stopped and cleaned on drop, holding the turn), the check for root, TUN and the
//! programs a test runs, small parsers of ping's output, and an iperf3 client.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod cgroup;
mod names;
mod phases;
mod turn;
pub use cgroup::NoRealtimeGroup;
pub use phases::*;
pub use turn::{turn, Turn};

pub fn netloom() -> Command {
    Command::new(env!("CARGO_BIN_EXE_netloom"))
}

/// Why live tests that run `tools` cannot run here, if they cannot.
pub fn unavailable(tools: &[&str]) -> Option<String> {
    // Root, from /proc/self/status's Uid line (no unsafe geteuid needed).
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid0 = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .is_some_and(|l| l.split_whitespace().nth(1) == Some("0"));
    if !uid0 {
        return Some("not root".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    for tool in std::iter::once(&"ip").chain(tools) {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!("{tool} is not installed"));
        }
    }
    None
}

/// Returns from the test, saying why, when it cannot run here: `require_live!("ping")`.
macro_rules! require_live {
    ($($tool:expr),*) => {
        if let Some(why) = $crate::live_common::unavailable(&[$($tool),*]) {
            eprintln!("SKIPPED: live test needs root, TUN and {:?}: {why}", [$($tool),*]);
            return;
        }
    };
}

/// One experiment: a topology file and a private registry directory; stops and cleans on drop,
/// so a failing test leaves no namespace behind.
pub struct Lab {
    pub name: String,
    pub dir: PathBuf,
    pub child: Option<Child>,
    /// Programs started in the hosts with `spawn`; killed on drop if still running.
    pub background: Vec<Child>,
    /// The machine's CPU time when the lab was made, for `circumstances`' steal.
    began: CpuTimes,
    _turn: Turn,
}

impl Lab {
    /// Takes the turn (once more, if the test holds it) and names the lab after `tag`, which
    /// must be the calling file's own (`names::lab_name`).
    #[track_caller]
    pub fn new(tag: &str, topology: &str) -> Lab {
        let turn = turn();
        let name = names::lab_name(tag, std::panic::Location::caller().file());
        let dir = std::env::temp_dir().join(format!("netloom-live-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("topo.toml"), topology).unwrap();
        Lab {
            name,
            dir,
            child: None,
            background: Vec::new(),
            began: CpuTimes::now(),
            _turn: turn,
        }
    }

    pub fn cmd(&self) -> Command {
        let mut c = netloom();
        c.env("NETLOOM_RUN_DIR", self.dir.join("run"));
        c
    }

    /// Starts `netloom run` in the foreground of a child process and waits until it is up
    /// (`is_up`).
    pub fn start(&mut self, extra: &[&str]) {
        let mut c = self.cmd();
        c.args(["run", "--name", &self.name, "--json"])
            .arg(self.dir.join("topo.toml"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        self.child = Some(c.spawn().expect("netloom run starts"));
        let give_up = Instant::now() + Duration::from_secs(30);
        while !self.is_up() {
            assert!(Instant::now() < give_up, "experiment not up after 30 s");
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                let out = self.child.take().unwrap().wait_with_output().unwrap();
                panic!(
                    "netloom run exited ({status}): {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether the hosts run programs and the control socket answers. The socket opens after
    /// the hosts and the workers: with `--precision busy` the workers spin on both vCPUs, and
    /// a `link set` sent as soon as `exec` worked once found no socket yet (a CI run, where
    /// `tcp_with_segmentation_offload_...` failed on its first control command).
    pub fn is_up(&self) -> bool {
        self.exec("h1", &["true"]).status.success()
            && self
                .cmd()
                .args(["stats", "--name", &self.name, "--top", "0"])
                .output()
                .is_ok_and(|out| out.status.success())
    }

    pub fn exec_cmd(&self, host: &str, argv: &[&str]) -> Command {
        let mut c = self.cmd();
        c.args(["exec", "--name", &self.name, host, "--"])
            .args(argv);
        c
    }

    pub fn exec(&self, host: &str, argv: &[&str]) -> Output {
        self.exec_cmd(host, argv).output().unwrap()
    }

    /// Starts `argv` on `host` in the background (its output discarded); returns its index in
    /// `background`.
    pub fn spawn(&mut self, host: &str, argv: &[&str]) -> usize {
        let child = self
            .exec_cmd(host, argv)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.background.push(child);
        self.background.len() - 1
    }

    /// Runs a program on `host` that ends with code 5 when SIGTERM reaches it, sends SIGTERM to
    /// its `netloom exec` (as `kill` or `timeout` would) once the program is ready, and returns
    /// the exit code `netloom exec` gave back and how long the program took to end.
    pub fn terminated_exec(&self, host: &str) -> (Option<i32>, Duration) {
        use std::io::BufRead;
        let script = "trap 'exit 5' TERM; echo ready; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done";
        let mut child = self
            .exec_cmd(host, &["sh", "-c", script])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready", "the program on {host} did not start");
        let sent = Instant::now();
        let kill = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let status = child.wait().unwrap();
        (status.code(), sent.elapsed())
    }

    /// Waits until something on `host` listens on TCP `port` (a server started with `spawn`).
    pub fn wait_listening(&self, host: &str, port: u16) {
        self.wait_for_socket(host, "-Hltn", "TCP", port);
    }

    /// Waits until a socket on `host` is bound to UDP `port` (a receiver started in the
    /// background).
    pub fn wait_bound_udp(&self, host: &str, port: u16) {
        self.wait_for_socket(host, "-Hlun", "UDP", port);
    }

    /// Polls `ss FLAGS 'sport = :PORT'` in `host` until it lists a socket, for 10 s at most.
    fn wait_for_socket(&self, host: &str, flags: &str, protocol: &str, port: u16) {
        let give_up = Instant::now() + Duration::from_secs(10);
        let filter = format!("sport = :{port}");
        loop {
            let out = self.exec(host, &["ss", flags, &filter]);
            if !out.stdout.is_empty() {
                return;
            }
            assert!(
                Instant::now() < give_up,
                "nothing on {host}'s {protocol} port {port} after 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs `netloom ARGS --name NAME` against this experiment (`link`, `stats`, `stop`),
    /// checks it succeeded, and returns what it printed.
    pub fn control(&self, args: &[&str]) -> Output {
        let out = self
            .cmd()
            .args(args)
            .args(["--name", &self.name])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Runs `netloom stop` on this experiment, checks it succeeded, and returns what it printed.
    pub fn stop_command(&self) -> Output {
        self.control(&["stop"])
    }

    /// Stops the foreground run (as Ctrl-C would) and returns its JSON report.
    pub fn stop(&mut self) -> serde_json::Value {
        // Its output is read while it stops, not after: a large run's report fills the pipe,
        // and a run blocked writing it never ends, so `netloom stop` (which waits for the end)
        // timed out on a 200-node topology.
        let child = self.child.take().unwrap();
        let reading = std::thread::spawn(move || child.wait_with_output().unwrap());
        self.stop_command();
        let out = reading.join().unwrap();
        assert!(
            out.status.success(),
            "run: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("run --json prints its report")
    }

    pub fn namespaces(&self) -> Vec<String> {
        let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(&format!("-{}-", self.name)))
            .map(str::to_string)
            .collect()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for mut child in self.background.drain(..) {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = self.cmd().args(["clean", "--name", &self.name]).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Two hosts joined by one 1 Gbit/s link of the given delay.
pub fn two_hosts(delay: &str) -> String {
    format!(
        r#"hosts = ["h1", "h2"]
[[link]]
a = "h1"
b = "h2"
bw = "1Gbit"
delay = "{delay}"
"#
    )
}

/// Round-trip times in ms that ping printed for each reply.
pub fn ping_rtts(out: &Output) -> Vec<f64> {
    assert!(
        out.status.success(),
        "ping failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split("time=").nth(1))
        .filter_map(|t| t.split_whitespace().next()?.parse().ok())
        .collect()
}

/// When each answered echo of a `ping -D` came back, s since the Unix epoch (the stamp ping
/// prints before each answer), in the order of `ping_rtts`.
pub fn ping_answered_at(out: &Output) -> Vec<f64> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("time="))
        .filter_map(|l| l.strip_prefix('[')?.split(']').next()?.parse().ok())
        .collect()
}

/// Now on the wall clock, s since the Unix epoch (the clock of `ping -D`).
pub fn wall_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The mean of the central 80 % of `v`: it uses every ordinary echo, as a mean does, and a
/// single echo the VM stalls for milliseconds does not move it, as a median does.
pub fn trimmed_mean(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let cut = v.len() / 10;
    mean(&v[cut..v.len() - cut])
}

/// The RTT in ms of a `ping -c 1` run, from its summary line ("rtt min/avg/max/mdev = ...").
fn summary_rtt(out: &Output) -> Option<f64> {
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("rtt "))?;
    line.split(" = ").nth(1)?.split('/').next()?.parse().ok()
}

impl Lab {
    /// RTTs in ms of `count` pings from `from` to `to`, `interval` s apart, in one ping run,
    /// after checking every echo was answered: for round trips under 1 ms, which ping prints to
    /// the microsecond. A first short ping warms up the caches; its times are not used.
    pub fn rtts(&self, from: &str, to: &str, count: usize, interval: &str) -> Vec<f64> {
        self.exec(from, &["ping", "-c", "3", "-i", "0.01", to]);
        let count_arg = count.to_string();
        let out = self.exec(from, &["ping", "-c", &count_arg, "-i", interval, to]);
        let rtts = ping_rtts(&out);
        assert_eq!(rtts.len(), count, "every echo answered: {rtts:?}");
        rtts
    }

    /// RTTs in ms of `count` echoes from `from` to `to`, about 50 ms apart, each its own
    /// `ping -c 1`. For round trips of milliseconds: ping prints each echo's time to three
    /// significant digits (0.1 ms steps from 10 ms, 10 µs from 1 ms), which biases a mean or
    /// median of echoes that jitter less than a step by up to half of one, but its summary line
    /// to the microsecond. A first short ping warms up the caches; its times are not used.
    pub fn exact_rtts(&self, from: &str, to: &str, count: usize) -> Vec<f64> {
        self.exec(from, &["ping", "-c", "3", "-i", "0.01", to]);
        (0..count)
            .map(|k| {
                std::thread::sleep(Duration::from_millis(50));
                let out = self.exec(from, &["ping", "-c", "1", "-W", "2", to]);
                summary_rtt(&out).unwrap_or_else(|| {
                    panic!(
                        "echo {k} of {count} unanswered: {}",
                        String::from_utf8_lossy(&out.stdout)
                    )
                })
            })
            .collect()
    }

    /// What the machine and the run were doing, for the message of a timing check that failed:
    /// load, CPU pressure, the kernel's softirq threads' scheduling, and the run's accuracy so
    /// far (`netloom stats`), which tells an engine that released packets late from hosts that
    /// were slow around it. Several fresh-clone CI runs saw every zero-delay probe of a
    /// baseline taken in a lab's first seconds come back about 0.5 ms slow, and no rerun
    /// reproduced it. 0.5 ms is the hybrid driver's linger, during which it spins at real-time
    /// priority: if a ksoftirqd thread was runnable on the driver's CPU, the kernel left it
    /// the packets the driver wrote into a TUN device, and they waited out the linger. The
    /// softirq threads' waits for a CPU (schedstat) before and after a slow baseline tell.
    pub fn circumstances(&self) -> String {
        let read = |f| std::fs::read_to_string(f).unwrap_or_default();
        let stats = self
            .cmd()
            .args(["stats", "--name", &self.name, "--top", "0"])
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
            .unwrap_or_default();
        format!(
            "load {}cpu pressure {}{}\n{}\n{stats}",
            read("/proc/loadavg"),
            read("/proc/pressure/cpu"),
            softirq_threads(),
            CpuTimes::now().steal_since(&self.began)
        )
    }

    /// When the run started on the wall clock, s since the Unix epoch: now less the uptime
    /// `netloom stats` reports, to within the time the query takes (milliseconds), which
    /// places ping's echoes in the run's epochs.
    pub fn started_at(&self) -> f64 {
        let before = wall_now();
        let out = self.control(&["stats", "--json"]);
        let after = wall_now();
        let stats: Value = serde_json::from_slice(&out.stdout).expect("stats --json");
        let uptime = stats["uptime_ns"].as_u64().expect("uptime_ns in stats") as f64;
        (before + after) / 2.0 - uptime / 1e9
    }

    /// The least of `count` exact RTTs (`exact_rtts`) in ms: what the emulated path takes when
    /// nothing else on the machine delays the hosts' programs (a probe's time can only gain
    /// from the machine's other work). A mean of single pings moved by 0.2 ms between two
    /// states of one path on a loaded VM while the engine released every packet on time.
    pub fn least_rtt(&self, from: &str, to: &str, count: usize) -> f64 {
        least(self.exact_rtts(from, to, count))
    }
}

/// The flags for a test that compares round trips of tens of milliseconds: the engine on CPU 1
/// and the other CPU kept from halting. On a VM whose idle vCPUs halt, a program's wake-up costs
/// the more the longer it waited (docs/live.md, "Keeping CPUs awake"), so without them a 20 to
/// 30 ms round trip came back up to 0.24 ms over what it should be.
pub const KEEP_AWAKE: &[&str] = &["--cpu", "1", "--keep-cpus-awake"];

/// How far, in ms, a round trip measured under `KEEP_AWAKE` may be from what it is compared
/// with: 0.2 ms and 0.5 % of the configured round trip, as what is left of the wake-up's cost
/// (the sleeping driver's own, and the program's) still grows with the wait (docs/live.md).
pub fn awake_tolerance_ms(configured_ms: f64) -> f64 {
    0.2 + 0.005 * configured_ms
}

/// The least of some times.
pub fn least(v: impl IntoIterator<Item = f64>) -> f64 {
    v.into_iter().fold(f64::INFINITY, f64::min)
}

/// Runs an iperf3 client on `host` (with `-J` added) and returns its JSON report.
pub fn iperf3_client(lab: &Lab, host: &str, args: &[&str]) -> Value {
    let mut argv = vec!["iperf3", "-J"];
    argv.extend_from_slice(args);
    let out = lab.exec(host, &argv);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "iperf3 {args:?} on {host} printed no JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        out.status.success() && report.get("error").is_none(),
        "iperf3 {args:?} on {host} failed: {}",
        report["error"]
    );
    report
}

/// Throughput the receiver measured over the whole test, Mbit/s.
pub fn received_mbps(report: &Value) -> f64 {
    report["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .expect("end.sum_received.bits_per_second")
        / 1e6
}

/// h1 behind r0; r0 leads to two subtrees, r1 with h2 and r2 with h3. 1 ms per link: the
/// lookahead between workers, longer than a move's stall. Traffic to one subtree, then to the
/// other, moves the partition that follows it (`--repartition`).
pub const TWO_SUBTREES: &str = r#"hosts = ["h1", "h2", "h3"]
routers = ["r0", "r1", "r2"]
[defaults]
bw = "100Mbit"
delay = "1ms"
[[link]]
a = "h1"
b = "r0"
[[link]]
a = "r0"
b = "r1"
[[link]]
a = "r1"
b = "h2"
[[link]]
a = "r0"
b = "r2"
[[link]]
a = "r2"
b = "h3"
"#;

/// The machine's CPU time so far, from /proc/stat's `cpu` line, in ticks (USER_HZ).
struct CpuTimes {
    /// Every state's ticks, summed over the CPUs.
    total: u64,
    /// The ticks the hypervisor gave another guest while this one had work (steal).
    steal: u64,
}

impl CpuTimes {
    fn now() -> CpuTimes {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let ticks: Vec<u64> = stat
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .skip(1)
            .filter_map(|f| f.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal guest guest_nice; guest time is
        // already counted in user and nice.
        CpuTimes {
            total: ticks.iter().take(8).sum(),
            steal: ticks.get(7).copied().unwrap_or(0),
        }
    }

    /// The steal since `began`, said so that a failure during a stall of the VM's host names
    /// it: a run whose engine lost its CPU to another guest shows it here.
    fn steal_since(&self, began: &CpuTimes) -> String {
        // Ticks are 1/100 s on Linux (USER_HZ).
        let steal = self.steal.saturating_sub(began.steal);
        let total = self.total.saturating_sub(began.total);
        format!(
            "steal since the lab began: {:.2} s of {:.2} CPU-s ({:.1} %)",
            steal as f64 / 100.0,
            total as f64 / 100.0,
            100.0 * steal as f64 / total.max(1) as f64
        )
    }
}

/// Each ksoftirqd thread's schedstat (ns on a CPU, ns waiting for one, times run), as
/// `ksoftirqd/0 run 1234 waited 56 times 7`, for `Lab::circumstances`.
fn softirq_threads() -> String {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return String::new();
    };
    let mut lines: Vec<String> = procs
        .flatten()
        .filter_map(|e| {
            let dir = e.path();
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
            let comm = comm.trim();
            comm.starts_with("ksoftirqd/").then_some(())?;
            let stat = std::fs::read_to_string(dir.join("schedstat")).ok()?;
            let f: Vec<&str> = stat.split_whitespace().collect();
            Some(format!(
                "{comm} run {} waited {} times {}",
                f.first()?,
                f.get(1)?,
                f.get(2)?
            ))
        })
        .collect();
    lines.sort();
    lines.join("; ")
}
