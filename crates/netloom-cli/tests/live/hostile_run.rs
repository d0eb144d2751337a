//! Hostile runs, names, logs, registry records and signals (issue 19): names that are paths,
//! planted links, clashing and failing `--detach`es, forged registry records, inherited
//! descriptors, signals and a closed stderr. Nothing may be made, truncated, signalled or
//! deleted outside what netloom made, and nothing may be left behind. Live cases need root and
//! skip without it; each runs in a private registry directory.

use crate::live_common::{self, netloom, Lab, NoRealtimeGroup};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A scratch directory, removed on drop, whose registry is `<dir>/a/run`, two levels below it,
/// so a name `../../x` would lead to `<dir>/x`.
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("netloom-hostile-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::write(dir.join("topo.toml"), live_common::two_hosts("1ms")).unwrap();
        Scratch { dir }
    }

    fn run_dir(&self) -> PathBuf {
        self.dir.join("a").join("run")
    }

    fn topo(&self) -> PathBuf {
        self.dir.join("topo.toml")
    }

    fn cmd(&self) -> Command {
        let mut c = netloom();
        c.env("NETLOOM_RUN_DIR", self.run_dir());
        c
    }

    fn netloom(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }

    fn detach(&self, name: &str) -> Output {
        let topo = self.topo();
        self.netloom(&["run", "--detach", "--name", name, topo.to_str().unwrap()])
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.run_dir().exists() {
            for entry in std::fs::read_dir(self.run_dir()).unwrap().flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if entry.path().is_dir() {
                    let _ = self.netloom(&["stop", "--name", &name]);
                }
            }
            let _ = self.netloom(&["clean"]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_name_that_is_a_path_is_refused_before_any_file_is_touched() {
    let _turn = live_common::turn();
    let s = Scratch::new("path");
    let outside = s.dir.join("x.log");
    std::fs::write(&outside, "precious\n").unwrap();
    let out = s.detach("../../x");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(r#"invalid experiment name "../../x""#),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious\n");
    assert!(
        !s.run_dir().exists(),
        "the registry was made for a refused name"
    );
    // Every command that takes a name refuses it the same way.
    for args in [["stop", "--name"], ["clean", "--name"]] {
        let out = s.netloom(&[args[0], args[1], "../../x"]);
        assert!(
            stderr(&out).contains("invalid experiment name"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert!(outside.exists());
}

#[test]
fn a_failed_detach_of_a_bad_topology_leaves_no_log() {
    let _turn = live_common::turn();
    let s = Scratch::new("badtopo");
    // A topology that loads, with a host name too long for a namespace: only the background
    // engine finds out, after the log was made.
    let long = "h".repeat(64);
    let topo = live_common::two_hosts("1ms").replace("h2", &long);
    std::fs::write(s.topo(), topo).unwrap();
    let out = s.detach("bad");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("it must have 1 to 63 characters"),
        "{}",
        stderr(&out)
    );
    assert!(!s.run_dir().join("bad.log").exists());
}

#[test]
fn detach_never_follows_a_planted_link_never_truncates_a_running_log_and_keeps_it_private() {
    require_live!("ip");
    // One live test at a time, as the Lab of the other live tests.
    let _turn = Lab::new("detach", "");
    let s = Scratch::new("detach");
    let name = format!("hd{}", std::process::id() % 100_000);
    std::fs::create_dir_all(s.run_dir()).unwrap();
    std::fs::set_permissions(s.run_dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let precious = s.dir.join("precious");
    std::fs::write(&precious, "precious\n").unwrap();
    let log = s.run_dir().join(format!("{name}.log"));
    std::os::unix::fs::symlink(&precious, &log).unwrap();

    let out = s.detach(&name);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious\n");
    assert!(!log.symlink_metadata().unwrap().is_symlink());
    assert_eq!(mode(&s.run_dir()), 0o700);
    assert_eq!(mode(&s.run_dir().join(&name)), 0o700);
    assert_eq!(
        mode(&s.run_dir().join(&name).join("experiment.json")),
        0o600
    );
    assert_eq!(mode(&log), 0o600);

    // A second detach of the same name: refused, and the running one's log is untouched.
    let before = std::fs::read_to_string(&log).unwrap();
    assert!(!before.is_empty());
    let out = s.detach(&name);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("is already running"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), before);

    let out = s.netloom(&["stop", "--name", &name]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!log.exists());
}

#[test]
fn a_detach_whose_engine_fails_leaves_no_log() {
    require_live!("ip");
    // One live test at a time, as the Lab of the other live tests.
    let _turn = Lab::new("fail", "");
    let s = Scratch::new("fail");
    let name = format!("hf{}", std::process::id() % 100_000);
    // A namespace of the experiment's name that is not its own: the engine refuses to start.
    let taken = format!("nl-{name}-h2");
    let _ns = Namespace::add(&taken);
    let out = s.detach(&name);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    assert!(!s.run_dir().join(format!("{name}.log")).exists());
    assert!(Path::new("/run/netns").join(&taken).exists());
}

/// A namespace made by hand (`ip netns add`), deleted on drop.
struct Namespace(String);

impl Namespace {
    fn add(name: &str) -> Namespace {
        let _ = Command::new("ip").args(["netns", "del", name]).status();
        let ok = Command::new("ip")
            .args(["netns", "add", name])
            .status()
            .unwrap();
        assert!(ok.success());
        Namespace(name.to_string())
    }

    fn exists(&self) -> bool {
        Path::new("/run/netns").join(&self.0).exists()
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// A process of ours for a forged record to name, killed on drop.
struct Sleeper(std::process::Child);

impl Sleeper {
    fn start() -> Sleeper {
        Sleeper(Command::new("sleep").arg("60").spawn().unwrap())
    }

    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }

    /// Field 22 of its /proc stat line: what netloom records as `pid_start`.
    fn start_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.0.id())).unwrap();
        let rest = &stat[stat.rfind(')').unwrap() + 1..];
        rest.split_whitespace().nth(19).unwrap().parse().unwrap()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Writes a registry record by hand, as an attacker (or a bug) would.
fn forge(run_dir: &Path, dir_name: &str, record: serde_json::Value) {
    let dir = run_dir.join(dir_name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("experiment.json"), record.to_string()).unwrap();
}

fn record(name: &str, pid: u32, pid_start: u64, ns: &str) -> serde_json::Value {
    serde_json::json!({
        "name": name, "pid": pid, "pid_start": pid_start, "created_unix": 0,
        "hosts": [{ "name": "h1", "ns": ns, "ipv4": "198.18.0.1", "ipv6": "fd6e:6c00::1" }]
    })
}

#[test]
fn forged_records_make_stop_and_clean_signal_and_delete_nothing() {
    require_live!("ip");
    // One live test at a time, as the Lab of the other live tests.
    let _turn = Lab::new("forged", "");
    let s = Scratch::new("forged");
    let name = format!("hg{}", std::process::id() % 100_000);
    let mut sleeper = Sleeper::start();
    // The record names our sleeper with its true start time, and a namespace of the right name
    // that netloom did not make.
    let ns = Namespace::add(&format!("nl-{name}-h1"));
    forge(
        &s.run_dir(),
        &name,
        record(&name, sleeper.0.id(), sleeper.start_ticks(), &ns.0),
    );
    // A record whose namespace is a path out of /run/netns and /etc/netns.
    let victim = s.dir.join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    let escape = format!("../../{}", victim.display());
    forge(
        &s.run_dir(),
        "esc",
        record("esc", sleeper.0.id(), 0, &escape),
    );

    let out = s.netloom(&["stop", "--name", &name]);
    assert!(
        sleeper.alive(),
        "stop signalled a process a forged record names"
    );
    assert!(ns.exists(), "stop removed a namespace netloom did not make");
    assert!(out.status.success(), "{}", stderr(&out));
    forge(
        &s.run_dir(),
        &name,
        record(&name, sleeper.0.id(), sleeper.start_ticks(), &ns.0),
    );
    let out = s.netloom(&["clean"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("left alone: namespace {}", ns.0)),
        "{text}"
    );
    assert!(text.contains("netloom names it \"nl-esc-h1\""), "{text}");
    assert!(
        sleeper.alive(),
        "clean signalled a process a forged record names"
    );
    assert!(
        ns.exists(),
        "clean removed a namespace netloom did not make"
    );
    assert!(
        victim.exists(),
        "clean removed a directory outside netloom's"
    );
    let out = s.netloom(&["clean", "--name", "esc"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(victim.exists());
}

/// The engine's pid, from the registry record of a running experiment.
fn engine_pid(run_dir: &Path, name: &str) -> u32 {
    let text = std::fs::read_to_string(run_dir.join(name).join("experiment.json")).unwrap();
    let record: serde_json::Value = serde_json::from_str(&text).unwrap();
    record["pid"].as_u64().unwrap() as u32
}

#[test]
fn a_detached_engine_keeps_no_descriptor_of_its_launcher() {
    require_live!("ip");
    // One live test at a time, as the Lab of the other live tests.
    let _turn = Lab::new("fds", "");
    let s = Scratch::new("fds");
    let name = format!("hx{}", std::process::id() % 100_000);
    let lock = s.dir.join("caller.lock");
    std::fs::write(&lock, "").unwrap();
    // The launcher inherits descriptor 7, open on the caller's lock file, as from a script.
    let out = Command::new("sh")
        .args(["-c", r#"exec 7>>"$0"; exec "$@""#])
        .arg(&lock)
        .arg(env!("CARGO_BIN_EXE_netloom"))
        .args(["run", "--detach", "--name", &name])
        .arg(s.topo())
        .env("NETLOOM_RUN_DIR", s.run_dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let pid = engine_pid(&s.run_dir(), &name);
    let held: Vec<PathBuf> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .collect();
    assert!(
        !held.contains(&lock),
        "the engine holds its launcher's descriptor on {}",
        lock.display()
    );
    let out = s.netloom(&["stop", "--name", &name]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Starts a foreground run, delivers `signal` (a `kill -s` name) once it is up, and checks that
/// it tore everything down: no namespace of the run, no registry entry.
fn ends_cleanly_on(signal: &str) {
    let mut lab = Lab::new(
        &format!("s{}", signal.to_lowercase().replace('+', "")),
        &live_common::two_hosts("1ms"),
    );
    lab.start(&["--duration", "30s"]);
    let pid = lab.child.as_ref().unwrap().id();
    let sent = Command::new("kill")
        .args(["-s", signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = lab.child.as_mut().unwrap().wait().unwrap();
    assert!(status.success(), "run ended with {status} on SIG{signal}");
    assert_nothing_left(&lab);
}

fn assert_nothing_left(lab: &Lab) {
    assert_eq!(
        lab.namespaces(),
        Vec::<String>::new(),
        "namespaces left behind"
    );
    let entries: Vec<_> = std::fs::read_dir(lab.dir.join("run"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        entries.is_empty(),
        "registry entries left behind: {entries:?}"
    );
}

#[test]
fn sigquit_tears_the_run_down() {
    require_live!("ip");
    let _turn = live_common::turn();
    ends_cleanly_on("QUIT");
}

#[test]
fn sigusr1_tears_the_run_down() {
    require_live!("ip");
    let _turn = live_common::turn();
    ends_cleanly_on("USR1");
}

/// SIGALRM, and a real-time signal, end a process by default as SIGTERM does: they stopped a
/// run without its teardown, leaving its namespaces.
#[test]
fn sigalrm_and_real_time_signals_tear_the_run_down() {
    require_live!("ip");
    let _turn = live_common::turn();
    ends_cleanly_on("ALRM");
    ends_cleanly_on("64"); // SIGRTMAX on Linux
}

#[test]
fn a_closed_stderr_does_not_end_the_run_before_its_teardown() {
    require_live!("ip");
    let lab = Lab::new("pipe", &live_common::two_hosts("1ms"));
    let (reader, writer) = std::io::pipe().unwrap();
    // Nobody reads: the first line the run writes meets a closed pipe (`2>&1 | head -1`).
    drop(reader);
    let mut child = lab
        .cmd()
        .args(["run", "--name", &lab.name, "--duration", "1s"])
        .arg(lab.dir.join("topo.toml"))
        .stdout(Stdio::null())
        .stderr(writer)
        .spawn()
        .unwrap();
    let give_up = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < give_up, "run did not end");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "run ended with {status}");
    assert_nothing_left(&lab);
}

/// Runs `lab`'s topology for 1 s in the foreground with `extra` arguments and standard output
/// on `stdout`; waits (30 s at most) for it to end.
fn run_for_a_second(lab: &Lab, extra: &[&str], stdout: Stdio) -> Output {
    let child = lab
        .cmd()
        .args(["run", "--name", &lab.name, "--duration", "1s"])
        .args(extra)
        .arg(lab.dir.join("topo.toml"))
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (done, waited) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output().unwrap()));
    waited
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("run did not end within 30 s")
        })
}

/// `netloom run > /dev/full`, as text or JSON: the report cannot be written, which is an error
/// (exit 2, one line saying why), not a panic, after the teardown; it exited 0 having lost it.
/// A reader that went away (`| head -0`) is not one: the run ends quietly, as other tools do.
#[test]
fn a_run_whose_report_cannot_be_written_says_so_and_exits_2() {
    require_live!("ip");
    let lab = Lab::new("full", &live_common::two_hosts("1ms"));
    for extra in [&[][..], &["--json"][..]] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = run_for_a_second(&lab, extra, full.into());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "run {extra:?}: {err}");
        assert!(
            err.ends_with(
                "netloom: writing to standard output: No space left on device (os error 28)\n"
            ),
            "run {extra:?}: {err}"
        );
        assert!(!err.contains("panicked"), "run {extra:?}: {err}");
        assert_nothing_left(&lab);
    }
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = run_for_a_second(&lab, &["--json"], writer.into());
    let err = stderr(&out);
    assert!(out.status.success(), "run | head -0: {err}");
    assert!(!err.contains("standard output"), "run | head -0: {err}");
    assert_nothing_left(&lab);
}

#[test]
fn demo_refuses_one_host_twice_and_zero_seconds_before_bringing_anything_up() {
    let _turn = live_common::turn();
    let s = Scratch::new("demo");
    let topo = s.topo();
    let topo = topo.to_str().unwrap();
    for (args, expected) in [
        (vec!["--from", "h1", "--to", "h1"], "name the same host"),
        (vec!["--seconds", "0"], "0 is not in 1..=3600"),
    ] {
        let started = Instant::now();
        let out = s.cmd().args(["demo", topo]).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{args:?} took {:?}",
            started.elapsed()
        );
    }
    assert!(!s.run_dir().exists(), "demo made a registry entry");
}

#[test]
fn a_demo_whose_reader_went_away_tears_down_without_a_panic() {
    require_live!("ping", "iperf3");
    // Each checks that no demo's namespace is left after its own, which another demo running
    // beside it would have up: the turn keeps them apart.
    let _turn = live_common::turn();
    let s = Scratch::new("dpipe");
    let (reader, writer) = std::io::pipe().unwrap();
    // `netloom demo | head -0`: every line the demo prints meets a closed pipe.
    drop(reader);
    let out = s
        .cmd()
        .args(["demo", s.topo().to_str().unwrap(), "--seconds", "1"])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success(), "demo: {}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    let namespaces = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&namespaces.stdout).contains("-demo"),
        "demo left namespaces"
    );
}

/// `netloom demo > /dev/full`: its results cannot be written once it has torn down, which is an
/// error (exit 2, saying why), where it exited 0 having printed nothing.
#[test]
fn a_demo_whose_results_cannot_be_written_says_so_and_exits_2() {
    require_live!("ping", "iperf3");
    // Each checks that no demo's namespace is left after its own, which another demo running
    // beside it would have up: the turn keeps them apart.
    let _turn = live_common::turn();
    let s = Scratch::new("dfull");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = s
        .cmd()
        .args(["demo", s.topo().to_str().unwrap(), "--seconds", "1"])
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "demo: {err}");
    assert!(
        err.ends_with(
            "netloom: writing to standard output: No space left on device (os error 28)\n"
        ),
        "demo: {err}"
    );
    let namespaces = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&namespaces.stdout).contains("-demo"),
        "demo left namespaces"
    );
}

/// A tmpfs of `size` mounted at `dir` (made), unmounted and removed on drop.
struct SmallDisk {
    dir: PathBuf,
}

impl SmallDisk {
    fn mount(dir: PathBuf, size: &str) -> SmallDisk {
        std::fs::create_dir_all(&dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(
            mounted.success(),
            "mount a {size} tmpfs at {}",
            dir.display()
        );
        SmallDisk { dir }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// `netloom capture h1 h2 -w FILE` against `lab` while h1 pings h2 `pings` times (`-s 1400`,
/// every 10 ms); waits for the capture to end (at most 30 s after the pings).
fn capture_while_pinging(lab: &Lab, file: &Path, pings: &str) -> Output {
    let capture = lab
        .cmd()
        .args(["capture", "h1", "h2", "--name", &lab.name, "-w"])
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // As many as the capture lets through before it ends: some may be lost to a stopped capture.
    let _ = lab.exec(
        "h1",
        &[
            "ping", "-4", "-q", "-c", pings, "-i", "0.01", "-s", "1400", "-W", "1", "h2",
        ],
    );
    let pid = capture.id();
    let give_up = Instant::now() + Duration::from_secs(30);
    let waiter = std::thread::spawn(move || capture.wait_with_output().unwrap());
    while !waiter.is_finished() {
        if Instant::now() > give_up {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    waiter.join().unwrap()
}

#[test]
fn capture_never_writes_through_a_planted_link_and_a_full_disk_is_an_error() {
    require_live!("ping", "mount");
    let mut lab = Lab::new("cpw", &live_common::two_hosts("1ms"));
    lab.start(&[]);
    // Root's file, and a user's links to it where the capture is to go.
    let precious = lab.dir.join("precious");
    std::fs::write(&precious, "precious\n").unwrap();
    let link = lab.dir.join("link.pcapng");
    std::os::unix::fs::symlink(&precious, &link).unwrap();
    let hard = lab.dir.join("hard.pcapng");
    std::fs::hard_link(&precious, &hard).unwrap();
    for (file, why) in [(&link, "is a symbolic link"), (&hard, "has 2 hard links")] {
        let out = lab
            .cmd()
            .args(["capture", "h1", "h2", "--name", &lab.name, "-w"])
            .arg(file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(why), "{}", stderr(&out));
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious\n");
    }

    // A capture the run refuses (no such node) leaves a file that was there as it was: it
    // removed it, even /dev/null.
    let mine = lab.dir.join("mine.pcapng");
    std::fs::write(&mine, "mine\n").unwrap();
    let out = lab
        .cmd()
        .args(["capture", "h9", "--name", &lab.name, "-w"])
        .arg(&mine)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine\n");

    // /dev/full: not one byte can be written.
    let out = capture_while_pinging(&lab, Path::new("/dev/full"), "3");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("capturing to /dev/full: cannot write: No space left"),
        "{err}"
    );
    assert!(err.contains("0 packets were written before it"), "{err}");

    // A disk that fills during the capture: the error says what was written, and the file
    // holds exactly that, whole blocks.
    let disk = SmallDisk::mount(lab.dir.join("small"), "64k");
    let file = disk.dir.join("c.pcapng");
    let out = capture_while_pinging(&lab, &file, "200");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("No space left"), "{err}");
    let written: u64 = err
        .split(" packets were written before it (")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no byte count in {err}"));
    assert!(written > 0, "{err}");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), written, "{err}");
    drop(disk);
    let report = lab.stop();
    assert_eq!(report["accuracy"]["physical_drops"], 0, "the run untouched");
}

#[test]
fn router_logs_refuses_a_linked_directory_before_anything_starts() {
    require_live!("ip");
    let lab = Lab::new("rl", &live_common::two_hosts("1ms"));
    let precious = lab.dir.join("etc");
    std::fs::create_dir_all(&precious).unwrap();
    let link = lab.dir.join("logs");
    std::os::unix::fs::symlink(&precious, &link).unwrap();
    let out = lab
        .cmd()
        .args([
            "run",
            "--name",
            &lab.name,
            "--duration",
            "1s",
            "--router-logs",
        ])
        .arg(&link)
        .arg(lab.dir.join("topo.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is a symbolic link"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_dir(&precious).unwrap().count(), 0);
    assert_nothing_left(&lab);
}

#[test]
fn a_cgroup_without_real_time_budget_runs_at_normal_priority_and_says_why() {
    require_live!("ip");
    let Some(group) = NoRealtimeGroup::make("rt") else {
        eprintln!("SKIPPED: no cgroup v1 cpu controller with cpu.rt_runtime_us");
        return;
    };
    let lab = Lab::new("nrt", &live_common::two_hosts("1ms"));
    // The run joins the group before it starts, as it would inside such a container.
    let out = Command::new("sh")
        .arg("-c")
        .arg("echo $$ > \"$0\" && exec \"$@\"")
        .arg(group.dir.join("cgroup.procs"))
        .arg(env!("CARGO_BIN_EXE_netloom"))
        .args(["run", "--name", &lab.name, "--duration", "1s", "--json"])
        .arg(lab.dir.join("topo.toml"))
        .env("NETLOOM_RUN_DIR", lab.dir.join("run"))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("netloom: warning: real-time priority 40 (SCHED_FIFO) was refused"),
        "{err}"
    );
    assert!(err.contains("cpu.rt_runtime_us is 0"), "{err}");
    assert!(err.contains("the workers run at normal priority"), "{err}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["priority"]["given"], "normal", "{report}");
    let refused = report["priority"]["refused"].as_str().unwrap_or_default();
    assert!(refused.contains("cpu.rt_runtime_us is 0"), "{report}");
    assert_nothing_left(&lab);
}

#[test]
fn a_long_node_name_given_to_exec_link_and_capture_is_quoted_by_a_prefix() {
    require_live!("true");
    let mut lab = Lab::new("ln", &live_common::two_hosts("1ms"));
    lab.start(&[]);
    let name = "x".repeat(3000);
    let shown = format!("\"{}\"… (3000 bytes)", "x".repeat(64));
    let cases: [&[&str]; 3] = [
        &["exec", "--name", &lab.name, &name, "--", "true"],
        &["link", "set", "--name", &lab.name, "h1", &name, "delay=2ms"],
        &["capture", "--name", &lab.name, &name, "-w", "-"],
    ];
    for args in cases {
        let out = lab.cmd().args(args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&shown), "{err}");
        assert!(err.len() < 400, "{} bytes: {err}", err.len());
    }
    lab.stop();
}

#[test]
fn router_logs_never_write_through_a_link_planted_in_the_directory() {
    require_live!("ip");
    if !Path::new("/usr/lib/frr/zebra").exists() {
        eprintln!("SKIPPED: needs FRR (Debian package frr)");
        return;
    }
    let ring = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/ospf-ring.toml");
    let lab = Lab::new("rf", &std::fs::read_to_string(ring).unwrap());
    // Root's file and directory; a user's directory for the logs, with links to them in it.
    let precious = lab.dir.join("precious");
    std::fs::write(&precious, "precious\n").unwrap();
    let precious_dir = lab.dir.join("etc");
    std::fs::create_dir_all(&precious_dir).unwrap();
    let logs = lab.dir.join("logs");
    std::fs::create_dir_all(logs.join("r1")).unwrap();
    std::os::unix::fs::symlink(&precious, logs.join("r1/zebra.log")).unwrap();
    std::os::unix::fs::symlink(&precious_dir, logs.join("r2")).unwrap();
    let out = lab
        .cmd()
        .args([
            "run",
            "--name",
            &lab.name,
            "--duration",
            "2s",
            "--router-logs",
        ])
        .arg(&logs)
        .arg(lab.dir.join("topo.toml"))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious\n");
    assert_eq!(std::fs::read_dir(&precious_dir).unwrap().count(), 0);
    assert!(err.contains("r1/zebra.log: is a symbolic link"), "{err}");
    assert!(err.contains("r2: is a symbolic link"), "{err}");
    // The rest is kept: r1's other files, and every file of the other routers.
    assert!(logs.join("r1/frr.conf").is_file(), "{err}");
    assert!(logs.join("r3/zebra.log").is_file(), "{err}");
    assert_nothing_left(&lab);
}
