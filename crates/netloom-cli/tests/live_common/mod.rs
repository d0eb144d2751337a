//! What the live test binaries (live.rs, live_programs.rs) share: the `Lab` (one experiment,
//! stopped and cleaned on drop, one at a time per process), the check for root, TUN and the
//! programs a test runs, small parsers of ping's output, and an iperf3 client.
//!
//! Each test binary uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

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
        if let Some(why) = live_common::unavailable(&[$($tool),*]) {
            eprintln!("SKIPPED: live test needs root, TUN and {:?}: {why}", [$($tool),*]);
            return;
        }
    };
}

/// Live tests run one at a time: two emulators spinning on a 2-vCPU machine would starve each
/// other and the programs under test, and the tests measure timing. (Test binaries run one after
/// another, so one lock per binary is enough.)
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// One experiment: a topology file and a private registry directory; stops and cleans on drop,
/// so a failing test leaves no namespace behind.
pub struct Lab {
    pub name: String,
    pub dir: PathBuf,
    pub child: Option<Child>,
    /// Programs started in the hosts with `spawn`; killed on drop if still running.
    pub background: Vec<Child>,
    _turn: MutexGuard<'static, ()>,
}

impl Lab {
    pub fn new(tag: &str, topology: &str) -> Lab {
        // A test that failed while holding the lock poisoned it; the next may still run.
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let name = format!("t{}{}", tag, std::process::id() % 100_000);
        let dir = std::env::temp_dir().join(format!("netloom-live-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("topo.toml"), topology).unwrap();
        Lab {
            name,
            dir,
            child: None,
            background: Vec::new(),
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
        self.stop_command();
        let out = self.child.take().unwrap().wait_with_output().unwrap();
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

/// A cgroup v1 `cpu` group made for a test, with no real-time budget (`cpu.rt_runtime_us` 0, as
/// every new group has); its processes are moved out and it is removed on drop.
pub struct NoRealtimeGroup {
    pub dir: PathBuf,
}

impl NoRealtimeGroup {
    pub const ROOT: &'static str = "/sys/fs/cgroup/cpu";

    /// `None` where the kernel has no cgroup v1 `cpu` controller with real-time budgets.
    pub fn make(tag: &str) -> Option<NoRealtimeGroup> {
        let root = Path::new(Self::ROOT);
        if !root.join("cpu.rt_runtime_us").exists() {
            return None;
        }
        let dir = root.join(format!("netloom-test-{tag}-{}", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        let group = NoRealtimeGroup { dir };
        std::fs::write(group.dir.join("cpu.rt_runtime_us"), "0").unwrap();
        Some(group)
    }
}

impl Drop for NoRealtimeGroup {
    fn drop(&mut self) {
        let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines() {
            let _ = std::fs::write(Path::new(Self::ROOT).join("cgroup.procs"), pid);
        }
        let _ = std::fs::remove_dir(&self.dir);
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
            "load {}cpu pressure {}{}\n{stats}",
            read("/proc/loadavg"),
            read("/proc/pressure/cpu"),
            softirq_threads()
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

/// What one phase of traffic measured: ping's round trips (ms) and when each echo was sent, and
/// iperf3's datagrams, lost and out of order.
pub struct Phase {
    pub rtts: Vec<f64>,
    /// When each echo of `rtts` was sent, ns since the run started (the run's own clock, which
    /// its report's epochs and moves use), to a few milliseconds (`Lab::started_at`).
    pub sent_ns: Vec<u64>,
    pub packets: u64,
    pub lost: u64,
    pub out_of_order: u64,
    /// Datagrams the receiving host's kernel dropped for want of room in a socket's receive
    /// buffer during the phase (its namespace's `Udp: RcvbufErrors` and `Udp6RcvbufErrors`):
    /// lost past netloom, which wrote them.
    pub receive_buffer_drops: u64,
    /// The receiving host kernel's other counts of packets it refused during the phase, those
    /// not zero (`Ip: InDiscards` or `Udp6InCsumErrors`, …): a packet netloom wrote that never
    /// reached the socket.
    pub kernel_drops: Vec<(String, u64)>,
    /// UDP datagrams the programs on the receiving host read during the phase (its kernel's
    /// `InDatagrams`, counted as a program takes one from its socket): iperf3's data, and its
    /// 4-byte hello, when nothing was lost on the way.
    pub udp_read: u64,
}

/// Every pipe's drops over the whole run of `report`: what the model dropped (a full queue, a
/// loss rate), as opposed to a datagram that vanished.
pub fn pipe_drops(report: &Value) -> u64 {
    report["pipes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["drops"].as_u64().unwrap())
        .sum()
}

/// Where a phase's lost datagrams may have gone: past netloom, the receiver's socket buffer
/// (`Phase::receive_buffer_drops`); in netloom (over the whole run), each pipe's drops by cause,
/// the accuracy's physical and TUN-queue drops, hand-offs passed on after a move, and where
/// packets between pipes, or from pipes to hosts, do not add up (`unbalanced`).
pub fn where_lost(p: &Phase, report: &Value) -> String {
    let pipes = report["pipes"].as_array().unwrap();
    let drops: Vec<String> = pipes
        .iter()
        .filter(|p| p["drops"].as_u64() > Some(0))
        .map(|p| format!("{}->{} {}", p["from"], p["to"], p["drops_by_cause"]))
        .collect();
    let a = &report["accuracy"];
    let kernel: Vec<String> = p
        .kernel_drops
        .iter()
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    format!(
        "{} UDP datagrams read at the receiver, {} dropped for its socket buffer, by its kernel otherwise [{}]; pipes' drops: [{}]; in flight at the stop {}; physical drops {}, TUN-queue drops {}, hand-offs passed on {}, handoff lateness max {} ns; where packets do not add up: [{}]",
        p.udp_read,
        p.receive_buffer_drops,
        kernel.join(", "),
        drops.join(", "),
        report["in_flight"],
        a["physical_drops"],
        a["tun_queue_drops"],
        a["forwarded_handoffs"],
        a["handoff_lateness_ns_max"],
        unbalanced(report).join(", ")
    )
}

/// Where the packets do not add up, as `r0->r1 in 10 out 8 dropped 1` (a pipe that let out
/// and dropped fewer than it took in: one lost inside it, its exit never handled), `r0 in 10
/// out 9` (a router whose pipes in let out more than its pipes out took in: one lost between
/// two pipes), `h2 in 10 written 9` (a host whose pipes in let out more than was written to
/// it) or `h1 read 10 refused 0 into pipes 9` (a packet read from a host that neither entered
/// its pipes out nor was refused: malformed, to an unknown address, spoofed). Routers answer
/// pings to other hosts only, which these tests do not send; a packet in flight at the stop
/// shows as one lost inside its pipe.
fn unbalanced(report: &Value) -> Vec<String> {
    let mut nodes = std::collections::BTreeMap::<&str, (u64, u64)>::new();
    let mut found = Vec::new();
    let mut sent = std::collections::BTreeMap::<&str, u64>::new();
    for p in report["pipes"].as_array().unwrap() {
        let count = |k: &str| p[k].as_u64().unwrap();
        let (from, to) = (p["from"].as_str().unwrap(), p["to"].as_str().unwrap());
        let (taken, left, dropped) = (count("packets_in"), count("packets_out"), count("drops"));
        if taken != left + dropped {
            found.push(format!(
                "{from}->{to} in {taken} out {left} dropped {dropped}"
            ));
        }
        nodes.entry(to).or_default().0 += count("packets_out");
        match from.starts_with('r') {
            true => nodes.entry(from).or_default().1 += count("packets_in"),
            false => *sent.entry(from).or_default() += taken,
        }
    }
    for h in report["hosts"].as_array().unwrap() {
        let name = h["name"].as_str().unwrap();
        let count = |k: &str| h[k].as_u64().unwrap_or(0);
        nodes.entry(name).or_default().1 = count("packets_out");
        let refused = ["malformed", "unknown_destination", "refused_gso", "spoofed"]
            .iter()
            .map(|&k| count(k))
            .sum::<u64>();
        let (read, into) = (count("packets_in"), sent.get(name).copied().unwrap_or(0));
        if read != refused + into {
            found.push(format!(
                "{name} read {read} refused {refused} into pipes {into}"
            ));
        }
    }
    found.extend(
        nodes
            .into_iter()
            .filter(|(_, (into, out))| into != out)
            .map(|(name, (into, out))| match name.starts_with('r') {
                true => format!("{name} in {into} out {out}"),
                false => format!("{name} in {into} written {out}"),
            }),
    );
    found
}

/// Prints, phase by phase, what the run with moves (`moving`, `report`) and the same traffic
/// without (`fixed`, `baseline`) lost, and where.
pub fn print_losses(moving: &[Phase], report: &Value, fixed: &[Phase], baseline: &Value) {
    for (k, (p, base)) in moving.iter().zip(fixed).enumerate() {
        eprintln!(
            "measured: phase {k}: {} lost of {} with moves ({}), {} of {} without ({})",
            p.lost,
            p.packets,
            where_lost(p, report),
            base.lost,
            base.packets,
            where_lost(base, baseline)
        );
    }
}

/// Checks that a repartitioned run's moves did not delay its round trips, against the run
/// itself: the echoes sent in epochs that began with a move against those sent in the others,
/// which alternate with them second by second, so a machine whose load changes between two runs
/// (a loaded CI VM moved a median by 0.3 ms between the run without moves and the one with)
/// moves both sides alike. A move stalls the workers for its `stall_ns` (a few hundred
/// microseconds) once, at its epoch's start: the median of the epoch's 50 echoes stays within
/// `slack_ms` of the others' unless the move slowed the path for the epoch. The path itself is
/// the one the run without moves (`fixed`) took: the least echo of each, which the machine's
/// load cannot lower, within 0.5 ms (a wrong path adds a link's 1 ms each way).
pub fn assert_moves_did_not_delay(
    fixed: &[Phase],
    moving: &[Phase],
    report: &Value,
    slack_ms: f64,
) {
    let epochs = report["repartition"]["epochs"].as_array().unwrap();
    let moved_at = |sent: u64| {
        epochs.iter().find_map(|e| {
            let (start, end) = (e["start_ns"].as_u64()?, e["end_ns"].as_u64()?);
            (start..end).contains(&sent).then(|| e["moved"] == true)
        })
    };
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for p in moving {
        for (&rtt, &sent) in p.rtts.iter().zip(&p.sent_ns) {
            match moved_at(sent) {
                Some(true) => with.push(rtt),
                Some(false) => without.push(rtt),
                None => {}
            }
        }
    }
    let all = |phases: &[Phase]| {
        phases
            .iter()
            .flat_map(|p| p.rtts.clone())
            .collect::<Vec<_>>()
    };
    let (least_fixed, least_moving) = (least(all(fixed)), least(all(moving)));
    eprintln!(
        "measured: least RTT {least_fixed:.3} ms without moves, {least_moving:.3} with; \
         {} echoes in epochs that began with a move, {} in the others",
        with.len(),
        without.len()
    );
    assert!(
        (least_moving - least_fixed).abs() <= 0.5,
        "the least round trip was {least_moving} ms with moves and {least_fixed} ms without: \
         not the same path"
    );
    // An epoch holds about 50 echoes; fewer on a side (the phases' 6 s fell in epochs of one
    // kind) leave nothing to compare.
    if with.len() < 20 || without.len() < 20 {
        eprintln!("measured: too few echoes on one side to compare medians");
        return;
    }
    let (m_with, m_without) = (median(with), median(without));
    eprintln!(
        "measured: RTT median {m_with:.3} ms in epochs with a move, {m_without:.3} in the others"
    );
    assert!(
        m_with <= m_without + slack_ms,
        "the round trips' median was {m_with} ms in epochs that began with a move and \
         {m_without} ms in the others"
    );
}

/// 3 s of UDP at 5 Mbit/s (1000-byte datagrams) from h1 to `to`, with a ping every 20 ms
/// beside it.
pub fn phase(lab: &mut Lab, to: &str) -> Phase {
    let before = snmp(lab, to);
    let started = lab.started_at();
    lab.spawn(to, &["iperf3", "-s", "-1"]);
    lab.wait_listening(to, 5201);
    let ping = lab
        .exec_cmd("h1", &["ping", "-D", "-i", "0.02", "-c", "150", to])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let udp = iperf3_client(
        lab,
        "h1",
        &["-c", to, "-u", "-b", "5M", "-l", "1000", "-t", "3"],
    );
    let echoes = ping.wait_with_output().unwrap();
    let rtts = ping_rtts(&echoes);
    let sent_ns = ping_answered_at(&echoes)
        .iter()
        .zip(&rtts)
        .map(|(at, rtt)| ((at - rtt / 1e3 - started) * 1e9).max(0.0) as u64)
        .collect();
    let sum = &udp["end"]["sum"];
    let count = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("iperf3: {udp}"));
    let after = snmp(lab, to);
    let delta = |name: &&str| after[*name] - before[*name];
    Phase {
        rtts,
        sent_ns,
        packets: count(&sum["packets"]),
        lost: count(&sum["lost_packets"]),
        out_of_order: count(&udp["end"]["streams"][0]["udp"]["out_of_order"]),
        receive_buffer_drops: BUFFER_DROPS.iter().map(delta).sum(),
        kernel_drops: KERNEL_DROPS
            .iter()
            .map(|name| (name.to_string(), delta(name)))
            .filter(|(_, n)| *n > 0)
            .collect(),
        udp_read: UDP_READ.iter().map(delta).sum(),
    }
}

/// The counts of a host's kernel of UDP datagrams its programs read, over IPv4 and IPv6.
const UDP_READ: &[&str] = &["Udp: InDatagrams", "Udp6InDatagrams"];

/// The counts of a host's kernel that say it dropped a UDP datagram for want of room in a
/// socket's receive buffer, over IPv4 and IPv6 (iperf3 picks the IPv6 address of a host's
/// name).
const BUFFER_DROPS: &[&str] = &["Udp: RcvbufErrors", "Udp6RcvbufErrors"];

/// The counts of a host's kernel that say it refused a packet arriving for it for another
/// reason, over IPv4 and IPv6.
const KERNEL_DROPS: &[&str] = &[
    "Ip: InHdrErrors",
    "Ip: InAddrErrors",
    "Ip: InDiscards",
    "Udp: InErrors",
    "Udp: InCsumErrors",
    "Udp: NoPorts",
    "Ip6InHdrErrors",
    "Ip6InAddrErrors",
    "Ip6InDiscards",
    "Ip6InTruncatedPkts",
    "Udp6InErrors",
    "Udp6InCsumErrors",
    "Udp6NoPorts",
];

/// Every count of `host`'s namespace's /proc/net/snmp, as `Protocol: Field`, and of its
/// /proc/net/snmp6, by its own name, read at once.
fn snmp(lab: &Lab, host: &str) -> std::collections::HashMap<String, u64> {
    let out = lab.exec(host, &["cat", "/proc/net/snmp", "/proc/net/snmp6"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut counts = std::collections::HashMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut words = line.split_whitespace();
        match words.next() {
            // /proc/net/snmp: a line of names, then one of values, each led by `Protocol:`.
            Some(protocol) if protocol.ends_with(':') => {
                let values = lines.next().unwrap_or_default().split_whitespace().skip(1);
                for (name, value) in words.zip(values) {
                    counts.insert(format!("{protocol} {name}"), value.parse().unwrap_or(0));
                }
            }
            // /proc/net/snmp6: a name and its value a line.
            Some(name) => {
                let value = words.next().and_then(|v| v.parse().ok()).unwrap_or(0);
                counts.insert(name.to_string(), value);
            }
            None => {}
        }
    }
    for name in BUFFER_DROPS.iter().chain(KERNEL_DROPS).chain(UDP_READ) {
        assert!(
            counts.contains_key(*name),
            "no {name} in {host}'s counts: {text}"
        );
    }
    counts
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
