//! A two-node Slurm on this machine, for the tests and the start-up benchmark of `--cluster
//! slurm`: munged with a key of its own, slurmctld and node nl1's slurmd in this network
//! namespace, node nl2's slurmd in a namespace of its own (a veth pair between, so the nodes
//! have distinct addresses) with a private /tmp (a mount namespace). Every process, job,
//! namespace, device and file of it is gone when it is dropped, a failed test's too.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The daemons and tools a lab needs (besides what `require_live!` checks).
pub const PROGRAMS: &[&str] = &[
    "/usr/sbin/munged",
    "/usr/sbin/slurmctld",
    "/usr/sbin/slurmd",
    "salloc",
    "srun",
    "scontrol",
    "scancel",
    "squeue",
    "sinfo",
    "nsenter",
    "unshare",
];

/// The two nodes' names in Slurm (and the machines' names `--cluster slurm` makes of them).
pub const NODES: [&str; 2] = ["nl1", "nl2"];

/// A two-node Slurm, taken down on drop.
pub struct SlurmLab {
    /// Its state, keys, logs and configuration: under /run, which both nodes see (nl2's /tmp
    /// is its own).
    pub dir: PathBuf,
    /// slurm.conf: clients find it through SLURM_CONF, which this process sets.
    pub conf: PathBuf,
    /// nl2's network namespace.
    pub netns: String,
    /// The veth pair's end in this namespace (its peer is in `netns`).
    pub veth: String,
    /// The nodes' addresses: nl1's in this namespace, nl2's in `netns`.
    pub addresses: [String; 2],
    /// munged, slurmctld, nl1's slurmd, nl2's slurmd (each the process itself: nsenter and
    /// unshare exec it).
    daemons: Vec<Child>,
    /// The experiments the runs make on the nodes (`RUN-nl1`, `RUN-nl2`), cleaned on drop, and
    /// the registry they are in.
    pub run: String,
    pub registry: PathBuf,
}

/// What a lab leaves behind if anything: processes of its Slurm, its namespace, its veth, its
/// directory, its run's host namespaces.
#[derive(Clone, Debug)]
pub struct Traces {
    conf: PathBuf,
    dir: PathBuf,
    netns: String,
    veth: String,
    run: String,
}

impl SlurmLab {
    /// Starts the lab for run `run` (whose nodes' experiments are registered in `registry`),
    /// named after it, and waits until both nodes are idle. Sets SLURM_CONF in this process,
    /// so that every Slurm command it starts, and every program those start, finds it.
    pub fn new(run: &str, registry: &Path) -> SlurmLab {
        let tag = run.trim_start_matches('t');
        let dir = PathBuf::from(format!("/run/netloom-slurm-{tag}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("state")).unwrap();
        // nl2's /tmp: writable by all, as /tmp is.
        std::fs::create_dir_all(dir.join("tmp2")).unwrap();
        set_mode(&dir.join("tmp2"), 0o1777);
        let subnet = format!("10.252.{}", std::process::id() % 250 + 1);
        let mut lab = SlurmLab {
            conf: dir.join("slurm.conf"),
            dir,
            netns: format!("nls{tag}"),
            veth: format!("nls{tag}a"),
            addresses: [format!("{subnet}.1"), format!("{subnet}.2")],
            daemons: Vec::new(),
            run: run.to_string(),
            registry: registry.to_path_buf(),
        };
        lab.network();
        lab.munge();
        std::fs::write(&lab.conf, lab.slurm_conf()).unwrap();
        std::env::set_var("SLURM_CONF", &lab.conf);
        let conf = lab.conf.display().to_string();
        lab.daemon(Command::new("/usr/sbin/slurmctld").args(["-D", "-i", "-f", &conf]));
        lab.daemon(Command::new("/usr/sbin/slurmd").args(["-D", "-f", &conf, "-N", NODES[0]]));
        // nl2: its own network and, by a bind mount in its own mount namespace, its own /tmp;
        // `slave` so that nothing it mounts reaches this namespace.
        // A build under /tmp (a clone there, as CI's may be) stays visible to nl2 at its own
        // path: its directory is held by a bind mount before /tmp is covered, then bound back
        // in place inside the private /tmp (nl2 found no netloom to run otherwise).
        let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_netloom"))
            .parent()
            .unwrap();
        let keep_build = match bin_dir.starts_with("/tmp") {
            true => {
                let hold = lab.dir.join("build");
                std::fs::create_dir_all(&hold).unwrap();
                let (hold, bin) = (hold.display(), bin_dir.display());
                (
                    format!("mount --bind {bin} {hold} && "),
                    format!(" && mkdir -p {bin} && mount --bind {hold} {bin}"),
                )
            }
            false => (String::new(), String::new()),
        };
        let private_tmp = format!(
            "{}mount --bind {} /tmp{} && exec /usr/sbin/slurmd -D -f {conf} -N {}",
            keep_build.0,
            lab.dir.join("tmp2").display(),
            keep_build.1,
            NODES[1]
        );
        lab.daemon(
            Command::new("nsenter")
                .arg(format!("--net=/run/netns/{}", lab.netns))
                .args(["--", "unshare", "--mount", "--propagation", "slave"])
                .args(["sh", "-c", &private_tmp]),
        );
        lab.wait_idle();
        lab
    }

    /// nl2's namespace and the veth pair, nl1's address on this namespace's end.
    fn network(&self) {
        let peer = format!("{}b", &self.veth[..self.veth.len() - 1]);
        let ip = |args: &[&str]| run_ok(Command::new("ip").args(args));
        ip(&["netns", "add", &self.netns]);
        ip(&["-n", &self.netns, "link", "set", "lo", "up"]);
        ip(&[
            "link", "add", &self.veth, "type", "veth", "peer", "name", &peer,
        ]);
        ip(&["link", "set", &peer, "netns", &self.netns]);
        let [one, two] = &self.addresses;
        ip(&["addr", "add", &format!("{one}/24"), "dev", &self.veth]);
        ip(&["link", "set", &self.veth, "up"]);
        ip(&[
            "-n",
            &self.netns,
            "addr",
            "add",
            &format!("{two}/24"),
            "dev",
            &peer,
        ]);
        ip(&["-n", &self.netns, "link", "set", &peer, "up"]);
    }

    /// munged with a key of its own, on a socket of its own, waited for.
    fn munge(&mut self) {
        let key = self.dir.join("munge.key");
        let mut bytes = vec![0u8; 1024];
        use std::io::Read;
        std::fs::File::open("/dev/urandom")
            .unwrap()
            .read_exact(&mut bytes)
            .unwrap();
        std::fs::write(&key, bytes).unwrap();
        set_mode(&key, 0o400);
        let path = |name: &str| format!("{}", self.dir.join(name).display());
        self.daemon(Command::new("/usr/sbin/munged").args([
            "--foreground".to_string(),
            "--force".into(),
            format!("--socket={}", path("munge.sock")),
            format!("--key-file={}", key.display()),
            format!("--pid-file={}", path("munged.pid")),
            format!("--log-file={}", path("munged.log")),
            format!("--seed-file={}", path("munged.seed")),
        ]));
        let socket = self.dir.join("munge.sock");
        wait_for(Duration::from_secs(10), "munged's socket", || {
            socket.exists()
        });
    }

    /// The configuration: the two nodes at their addresses, ports of their own, root running
    /// everything, no cgroups or accounting (there is no systemd here).
    fn slurm_conf(&self) -> String {
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        let [one, two] = &self.addresses;
        let d = |name: &str| self.dir.join(name).display().to_string();
        let [ctld_port, slurmd_port] = [free_port(), free_port()];
        format!(
            "ClusterName=netloomtest\n\
             SlurmctldHost={host}({one})\n\
             SlurmctldPort={ctld_port}\nSlurmdPort={slurmd_port}\n\
             AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={sock}\n\
             SlurmUser=root\nSlurmdUser=root\n\
             StateSaveLocation={state}\nSlurmdSpoolDir={spool}\n\
             SlurmctldPidFile={ctld_pid}\nSlurmdPidFile={slurmd_pid}\n\
             SlurmctldLogFile={ctld_log}\nSlurmdLogFile={slurmd_log}\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n\
             SchedulerType=sched/builtin\nJobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\nMpiDefault=none\n\
             SwitchType=switch/none\nReturnToService=2\nPlugStackConfig=/dev/null\n\
             NodeName={n1} NodeAddr={one} CPUs=2 State=UNKNOWN\n\
             NodeName={n2} NodeAddr={two} CPUs=2 State=UNKNOWN\n\
             PartitionName=test Nodes={n1},{n2} Default=YES MaxTime=INFINITE State=UP\n",
            host = hostname.trim(),
            sock = d("munge.sock"),
            state = d("state"),
            spool = d("spool-%n"),
            ctld_pid = d("slurmctld.pid"),
            slurmd_pid = d("slurmd-%n.pid"),
            ctld_log = d("slurmctld.log"),
            slurmd_log = d("slurmd-%n.log"),
            n1 = NODES[0],
            n2 = NODES[1],
        )
    }

    fn daemon(&mut self, command: &mut Command) {
        command
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        self.daemons.push(command.spawn().unwrap());
    }

    /// Waits (60 s at most) until both nodes are idle.
    fn wait_idle(&self) {
        wait_for(Duration::from_secs(60), "both nodes idle", || {
            let out = Command::new("sinfo")
                .args(["-h", "-N", "-o", "%N %T"])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            NODES
                .iter()
                .all(|n| text.lines().any(|l| l == format!("{n} idle")))
        });
    }

    /// `salloc` of both nodes running `argv` (the job's own environment with NETLOOM_RUN_DIR
    /// as the lab's), its output piped, in a process group of its own.
    pub fn salloc(&self, argv: &[&str]) -> Command {
        let mut c = Command::new("salloc");
        c.args([
            "-N2",
            "--time=10",
            &format!("--job-name={}", self.run),
            "--",
        ])
        .args(argv)
        .env("NETLOOM_RUN_DIR", &self.registry)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        c
    }

    /// The last lines of the daemons' logs, for a failure's message.
    pub fn logs(&self) -> String {
        ["slurmctld.log", "slurmd-nl1.log", "slurmd-nl2.log"]
            .iter()
            .map(|name| {
                let text = std::fs::read_to_string(self.dir.join(name)).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                format!(
                    "{name}:\n{}",
                    lines[lines.len().saturating_sub(8)..].join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// What to look for once the lab is dropped.
    pub fn traces(&self) -> Traces {
        Traces {
            conf: self.conf.clone(),
            dir: self.dir.clone(),
            netns: self.netns.clone(),
            veth: self.veth.clone(),
            run: self.run.clone(),
        }
    }
}

impl Drop for SlurmLab {
    fn drop(&mut self) {
        // The jobs first: their steps (the workers) are told to stop, and stop tearing down.
        // SLURM_CONF given here too: a lab that failed to start may not have set it.
        let _ = Command::new("scancel")
            .env("SLURM_CONF", &self.conf)
            .args(["--full", &format!("--name={}", self.run)])
            .output();
        let no_jobs = || {
            Command::new("squeue")
                .env("SLURM_CONF", &self.conf)
                .args(["-h", "-o", "%i"])
                .output()
                .is_ok_and(|o| o.stdout.is_empty())
        };
        let give_up = Instant::now() + Duration::from_secs(10);
        while !no_jobs() && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(100));
        }
        // What the nodes' workers left, each cleaned where it ran: nl2's in its namespaces.
        let netloom = env!("CARGO_BIN_EXE_netloom");
        let nl2 = self.daemons.last().map(|d| d.id());
        for (node, pid) in [(NODES[0], None), (NODES[1], nl2)] {
            let mut c = match pid {
                Some(pid) => {
                    let mut c = Command::new("nsenter");
                    c.args(["-t", &pid.to_string(), "--net", "--mount", "--"]);
                    c.arg(netloom);
                    c
                }
                None => Command::new(netloom),
            };
            let _ = c
                .env("NETLOOM_RUN_DIR", &self.registry)
                .args(["clean", "--name", &format!("{}-{node}", self.run)])
                .output();
        }
        // Every process of this Slurm (the daemons, salloc and what it runs, srun, step
        // daemons, workers) carries its SLURM_CONF.
        for pid in self.traces().processes() {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        for mut daemon in self.daemons.drain(..) {
            let _ = daemon.kill();
            let _ = daemon.wait();
        }
        // nl2's hosts' namespaces, should its worker have died before cleaning them.
        for ns in self.traces().host_namespaces() {
            let _ = Command::new("ip").args(["netns", "del", &ns]).output();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.netns])
            .output();
        let _ = Command::new("ip")
            .args(["link", "del", &self.veth])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
        std::env::remove_var("SLURM_CONF");
    }
}

impl Traces {
    /// Processes of the lab's Slurm still running: those whose environment holds its
    /// SLURM_CONF, but this one.
    pub fn processes(&self) -> Vec<u32> {
        let wanted = format!("SLURM_CONF={}\0", self.conf.display()).into_bytes();
        let me = std::process::id();
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| pid != me)
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.windows(wanted.len()).any(|w| w == wanted))
            })
            .collect()
    }

    /// The namespaces of the run's hosts, on either node.
    pub fn host_namespaces(&self) -> Vec<String> {
        let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| n.starts_with(&format!("nl-{}-", self.run)))
            .map(str::to_string)
            .collect()
    }

    /// Fails, naming them, if any of the lab's processes, jobs' workers, namespaces, veth or
    /// files is left (waiting 5 s for processes being killed to go).
    pub fn assert_gone(&self) {
        let give_up = Instant::now() + Duration::from_secs(5);
        while !self.processes().is_empty() && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(50));
        }
        let netns = Command::new("ip").args(["netns", "list"]).output().unwrap();
        let link = Command::new("ip")
            .args(["link", "show", &self.veth])
            .output()
            .unwrap();
        let left = (
            self.processes(),
            String::from_utf8_lossy(&netns.stdout).contains(&self.netns),
            link.status.success(),
            self.dir.exists(),
            self.host_namespaces(),
        );
        assert_eq!(
            left,
            (Vec::new(), false, false, false, Vec::new()),
            "left behind: (processes, namespace, veth, directory, hosts' namespaces)"
        );
    }
}

/// A TCP port nothing listens on now (the system's choice), for a daemon to take.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind(("0.0.0.0", 0)).unwrap();
    listener.local_addr().unwrap().port()
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn run_ok(command: &mut Command) {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Polls `done` every 50 ms until it holds; fails naming `what` after `limit`.
pub fn wait_for(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let give_up = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < give_up, "{what}: not after {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
