//! Live tests of `netloom shape` on this machine's own traffic (needs root, iptables-legacy, nft
//! and curl): the issue's line with curl's connect time against a baseline taken in the same
//! test, show and delete, a 10 Mbit/s download, fail-open after kill -9 and `clean`, the paper's
//! Figure 4, and bad input leaving nothing behind.

use crate::live_common::{self, median, netloom};
use netloom_shape::kernel::DUPLICATE_MARK;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// A test's turn: its own registry directory, and on drop `netloom clean --name shape`, so a
/// failing test leaves no rule or process behind.
struct Turn {
    dir: PathBuf,
    /// The shaping process and its iptables chains are one per machine: one test at a time.
    _turn: live_common::Turn,
}

impl Turn {
    fn new(tag: &str) -> Turn {
        let turn = live_common::turn();
        let dir = std::env::temp_dir().join(format!("i-shape-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let t = Turn { dir, _turn: turn };
        t.clean();
        t
    }

    fn shape(&self, words: &str) -> Output {
        netloom()
            .arg("shape")
            .args(words.split_whitespace())
            .env("NETLOOM_RUN_DIR", &self.dir)
            .env("NETLOOM_PROFILES", &self.dir)
            .output()
            .unwrap()
    }

    fn ok(&self, words: &str) -> String {
        let out = self.shape(words);
        assert!(
            out.status.success(),
            "netloom shape {words}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Kills the other namespace's shaping process with SIGKILL and returns its pid file.
    fn kill_netns_process(&self) -> PathBuf {
        let pid_file = std::fs::read_dir(&self.dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            // By the file's name: the run directory's own name (i-shape-netns-watch-PID) has
            // "shape-netns-" in it too, and matching the whole path picked the root namespace's
            // shape.pid whenever the directory listed it first (a kill of the wrong process).
            .find(|p| {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                name.starts_with("shape-netns-") && name.ends_with(".pid")
            })
            .expect("the namespace's pid file");
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let killed = Command::new("kill")
            .args(["-9", pid.trim()])
            .status()
            .unwrap();
        assert!(killed.success());
        pid_file
    }

    fn clean(&self) -> String {
        let out = netloom()
            .args(["clean", "--name", "shape"])
            .env("NETLOOM_RUN_DIR", &self.dir)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.clean();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn chains() -> String {
    let out = Command::new("iptables-legacy")
        .args(["-t", "mangle", "-S"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("NETLOOM-SHAPE"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A tiny HTTP server on `addr` answering every request with `size` bytes, on a thread.
fn serve(addr: &str, size: usize) -> u16 {
    let listener = TcpListener::bind(addr).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let body = vec![b'x'; size];
        for stream in listener.incoming().flatten() {
            let body = body.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(&stream);
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let head = format!(
                    "HTTP/1.0 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = (&stream).write_all(head.as_bytes());
                let _ = (&stream).write_all(&body);
            });
        }
    });
    port
}

/// curl's connect and total times in seconds for a GET of `url`.
fn curl(url: &str) -> (f64, f64) {
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "--max-time",
            "20",
            "-w",
            "%{time_connect} %{time_total}",
            url,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut t = text.split_whitespace().map(|x| x.parse::<f64>().unwrap());
    (t.next().unwrap(), t.next().unwrap())
}

/// The median connect time in ms of `n` connections.
fn connect_ms(url: &str, n: usize) -> f64 {
    median((0..n).map(|_| curl(url).0 * 1000.0).collect())
}

#[test]
fn the_issue_line_adds_40ms_to_connect_and_delete_takes_it_away() {
    require_live!("iptables-legacy", "curl");
    let t = Turn::new("line");
    let port = serve("127.0.0.1:18080", 100);
    assert_eq!(port, 18080);
    let url = "http://127.0.0.1:18080/";
    let base = connect_ms(url, 7);
    t.ok("client 18080@127.0.0.1 IN delay=20ms OUT delay=20ms");
    let shaped = connect_ms(url, 7);
    let added = shaped - base;
    assert!(
        (39.5..48.0).contains(&added),
        "connect {base:.2} ms unshaped, {shaped:.2} ms shaped: {added:.2} ms added, expected 40"
    );
    let show = t.ok("show");
    assert!(
        show.contains("client 18080@127.0.0.1 IN delay=20ms OUT delay=20ms"),
        "{show}"
    );
    let json: serde_json::Value = serde_json::from_str(&t.ok("show --json")).unwrap();
    let packets = |i: usize| json[0]["pipes"][i]["packets"].as_u64().unwrap();
    assert!(packets(0) >= 7 && packets(1) >= 7, "{json}");
    assert!(t.ok("delete client 18080@127.0.0.1").contains("deleted"));
    let after = connect_ms(url, 7);
    assert!(
        after < base + 5.0,
        "connect {after:.2} ms after delete, {base:.2} ms before shaping"
    );
    // The last link gone, the process ended and took its rules with it.
    assert_eq!(chains(), "");
    assert!(!t.dir.join("shape.sock").exists());
}

#[test]
fn callers_that_send_nothing_do_not_hold_up_shaped_packets() {
    require_live!("iptables-legacy", "curl");
    let t = Turn::new("silent");
    serve("127.0.0.1:18083", 100);
    let url = "http://127.0.0.1:18083/";
    t.ok("client 18083@127.0.0.1 IN delay=5ms OUT delay=5ms");
    let shaped = connect_ms(url, 7);
    // While the next connects are timed, a caller connects to the shaping process every 20 ms
    // and says nothing for 150 ms. The process used to read requests in its packet loop, so
    // each such caller held every packet for up to 100 ms (curl's connects then failed: a
    // connect time of 0).
    let socket = t.dir.join("shape.sock");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let pester = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut silent = std::collections::VecDeque::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                silent.push_back(std::os::unix::net::UnixStream::connect(&socket).unwrap());
                if silent.len() > 7 {
                    silent.pop_front();
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        })
    };
    let pestered = connect_ms(url, 7);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    pester.join().unwrap();
    eprintln!("connect {shaped:.2} ms shaped, {pestered:.2} ms with silent callers");
    assert!(
        (pestered - shaped).abs() < 3.0,
        "connect {shaped:.2} ms shaped, {pestered:.2} ms while silent callers came and went"
    );
    assert!(t.ok("delete client 18083@127.0.0.1").contains("deleted"));
}

#[test]
fn a_download_at_10mbit_and_40ms_takes_what_tcp_needs_and_other_ports_are_unchanged() {
    require_live!("iptables-legacy", "curl");
    let t = Turn::new("bw");
    let size = 2_000_000;
    let shaped_port = serve("127.0.0.1:0", size);
    let other_port = serve("127.0.0.1:0", size);
    let other = format!("http://127.0.0.1:{other_port}/");
    let (_, other_before) = curl(&other);
    t.ok(&format!(
        "client {shaped_port}@127.0.0.1 IN bw=10Mbit delay=20ms OUT bw=10Mbit delay=20ms"
    ));
    let (connect, total) = curl(&format!("http://127.0.0.1:{shaped_port}/"));
    // Expected: the handshake (1 RTT), the request and first byte (1 RTT), the body at
    // 10 Mbit/s (1.6 s), plus slow start's first few RTTs before the window covers the path
    // (with loopback's 64 KB segments the initial window already holds 640 KB, so few).
    let transfer = size as f64 * 8.0 / 10e6;
    assert!((0.038..0.060).contains(&connect), "connect {connect}");
    assert!(
        total > transfer + 0.08 && total < transfer + 0.6,
        "download {total:.3} s; the body alone takes {transfer:.3} s at 10 Mbit/s"
    );
    let (_, other_during) = curl(&other);
    assert!(
        other_during < other_before + 0.05 && other_during < 0.2,
        "an unmatched port took {other_during:.3} s (before shaping {other_before:.3} s)"
    );
    // `stop` ends the process, which takes its rules with it.
    assert!(t.ok("stop").contains("removed 1 link"));
    assert_eq!(chains(), "");
    assert!(!t.dir.join("shape.sock").exists());
}

#[test]
fn kill_9_fails_open_and_clean_removes_only_netloom_rules() {
    require_live!("iptables-legacy", "nft", "curl");
    let t = Turn::new("kill");
    let foreign = "i_shape_foreign";
    let nft = |args: &[&str]| Command::new("nft").args(args).status().unwrap();
    // A table left by an earlier failed run; usually there is none, and nft would say so.
    let _ = Command::new("nft")
        .args(["delete", "table", "inet", foreign])
        .stderr(Stdio::null())
        .status();
    assert!(nft(&["add", "table", "inet", foreign]).success());
    assert!(nft(&["add", "chain", "inet", foreign, "c"]).success());
    let port = serve("127.0.0.1:0", 100);
    let url = format!("http://127.0.0.1:{port}/");
    let base = connect_ms(&url, 5);
    t.ok(&format!("server {port} IN delay=30ms"));
    assert!(connect_ms(&url, 3) > base + 25.0);
    let pid = std::fs::read_to_string(t.dir.join("shape.pid")).unwrap();
    assert!(Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .unwrap()
        .success());
    std::thread::sleep(std::time::Duration::from_millis(100));
    // The rules are still there (the duplicates' mark rule too), but with nobody on the queue
    // they let packets through.
    let left = chains();
    assert!(
        left.contains("NFQUEUE") && left.contains("--mark"),
        "{left}"
    );
    let after = connect_ms(&url, 5);
    assert!(
        after < base + 5.0,
        "connect {after:.2} ms after kill -9 (base {base:.2})"
    );
    let cleaned = t.clean();
    assert!(cleaned.contains("NETLOOM-SHAPE-IN"), "{cleaned}");
    assert_eq!(chains(), "");
    let listed = Command::new("nft")
        .args(["list", "table", "inet", foreign])
        .output()
        .unwrap();
    assert!(listed.status.success() && String::from_utf8_lossy(&listed.stdout).contains("chain c"));
    assert!(nft(&["delete", "table", "inet", foreign]).success());
}

#[test]
fn figure_4s_multihomed_client_sees_wifi_on_one_subnet_and_dsl_on_the_other() {
    require_live!("iptables-legacy", "curl");
    let t = Turn::new("fig4");
    let addrs = ["10.20.0.1/32", "10.21.0.1/32"];
    // Quiet: the first `del` finds nothing unless an earlier run failed half-way.
    let ip = |verb: &str, a: &str| {
        Command::new("ip")
            .args(["addr", verb, a, "dev", "lo"])
            .stderr(Stdio::null())
            .status()
            .unwrap()
    };
    for a in addrs {
        let _ = ip("del", a);
        assert!(ip("add", a).success());
        // The paper's client is on Ethernet-like links (1500 bytes), not loopback's 64 KB, whose
        // packets would take a second each down the 512 kbit/s line.
        let host = a.trim_end_matches("/32");
        let route = [
            "route", "replace", "local", host, "dev", "lo", "table", "local",
        ];
        assert!(Command::new("ip")
            .args(route)
            .args(["mtu", "lock", "1500"])
            .status()
            .unwrap()
            .success());
    }
    // Removes the addresses however the test ends.
    struct Addresses<'a>(&'a dyn Fn());
    impl Drop for Addresses<'_> {
        fn drop(&mut self) {
            (self.0)();
        }
    }
    let remove = || {
        for a in addrs {
            let _ = ip("del", a);
        }
    };
    let _addresses = Addresses(&remove);
    let wifi_port = serve("10.20.0.1:0", 100);
    let dsl_port = serve("10.21.0.1:0", 64_000);
    let wifi = format!("http://10.20.0.1:{wifi_port}/");
    let dsl = format!("http://10.21.0.1:{dsl_port}/");
    let (wifi_base, dsl_base) = (connect_ms(&wifi, 5), connect_ms(&dsl, 5));
    std::fs::write(
        t.dir.join("802.11b-11.toml"),
        "wireless = \"802.11b\"\nbw = \"11Mbit\"\ndelay = \"1ms\"\n",
    )
    .unwrap();
    t.ok(&format!(
        "client {wifi_port},443@10.20.0.0/16 SHARED profile=802.11b-11"
    ));
    t.ok(&format!(
        "client {dsl_port},443@10.21.0.0/24 IN bw=512kbit delay=8ms OUT bw=10Mbit delay=3ms"
    ));
    // DSL: the SYN takes 3 ms up, the SYN-ACK 8 ms down.
    let dsl_added = connect_ms(&dsl, 5) - dsl_base;
    assert!(
        (10.5..16.0).contains(&dsl_added),
        "DSL added {dsl_added:.2} ms to connect"
    );
    // WiFi: 1 ms each way plus the 802.11b MAC's time per frame.
    let wifi_added = connect_ms(&wifi, 5) - wifi_base;
    assert!(
        (2.0..12.0).contains(&wifi_added),
        "WiFi added {wifi_added:.2} ms"
    );
    // 64 KB down the 512 kbit/s side takes a second at least.
    let (_, total) = curl(&dsl);
    assert!(
        total > 64_000.0 * 8.0 / 512e3,
        "64 KB over DSL took {total:.3} s"
    );
    let show = t.ok("show");
    assert!(
        show.contains("SHARED") && show.contains("bw=512kbit"),
        "{show}"
    );
}

#[test]
fn the_shaping_process_keeps_no_descriptor_of_its_launcher() {
    require_live!("iptables-legacy", "flock");
    let t = Turn::new("fds");
    // The bug's scenario: the first request runs under `flock`, which holds the lock file open
    // (without close-on-exec) in the process it starts.
    let lock = t.dir.join("launcher.lock");
    let out = Command::new("flock")
        .arg(&lock)
        .arg(env!("CARGO_BIN_EXE_netloom"))
        .args(["shape", "server", "1", "OUT", "delay=1ms"])
        .env("NETLOOM_RUN_DIR", &t.dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pid = std::fs::read_to_string(t.dir.join("shape.pid")).unwrap();
    let fds: Vec<PathBuf> = std::fs::read_dir(format!("/proc/{}/fd", pid.trim()))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.unwrap().path()).ok())
        .collect();
    assert!(!fds.is_empty(), "the shaping process has no descriptor");
    assert!(
        !fds.contains(&lock),
        "it holds the launcher's {lock:?}: {fds:?}"
    );
    // So the lock is free while it runs.
    let free = Command::new("flock")
        .args(["-n"])
        .arg(&lock)
        .arg("true")
        .status()
        .unwrap();
    assert!(free.success(), "the launcher's lock is still held");
}

/// A user made for a test (`useradd`), removed when dropped, even if the test fails.
struct User {
    name: String,
    uid: u32,
    gid: u32,
}

impl User {
    fn new(tag: &str) -> User {
        let name = format!("ishape{tag}{}", std::process::id());
        // One left by an earlier run killed before its guard ran.
        let _ = Command::new("userdel")
            .arg(&name)
            .stderr(Stdio::null())
            .status();
        let made = Command::new("useradd")
            .args(["-M", "-N", "-s", "/usr/sbin/nologin", &name])
            .status()
            .unwrap();
        assert!(made.success(), "useradd {name}");
        let id = |flag: &str| -> u32 {
            let out = Command::new("id").args([flag, &name]).output().unwrap();
            String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
        };
        let (uid, gid) = (id("-u"), id("-g"));
        User { name, uid, gid }
    }

    /// `program` run as this user, with no supplementary group.
    fn command(&self, program: &str) -> Command {
        let mut c = Command::new("setpriv");
        c.arg(format!("--reuid={}", self.uid))
            .arg(format!("--regid={}", self.gid))
            .arg("--clear-groups")
            .arg(program);
        c
    }

    /// `netloom shape WORDS` as this user, against the test's daemon.
    fn shape(&self, t: &Turn, words: &str) -> Output {
        self.command(env!("CARGO_BIN_EXE_netloom"))
            .arg("shape")
            .args(words.split_whitespace())
            .env("NETLOOM_RUN_DIR", &t.dir)
            .output()
            .unwrap()
    }

    /// The median connect time in ms of `n` of this user's connections to `url`.
    fn connect_ms(&self, url: &str, n: usize) -> f64 {
        let times = (0..n)
            .map(|_| {
                let out = self
                    .command("curl")
                    .args(["-s", "-o", "/dev/null", "--max-time", "10"])
                    .args(["-w", "%{time_connect}", url])
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&out.stdout).parse::<f64>().unwrap() * 1000.0
            })
            .collect();
        median(times)
    }
}

impl Drop for User {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).status();
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn two_users_each_shape_only_their_own_traffic_and_see_only_their_own_links() {
    require_live!("iptables-legacy", "curl", "setpriv", "useradd");
    let t = Turn::new("users");
    let (a, b) = (User::new("a"), User::new("b"));
    let port = serve("127.0.0.1:0", 100);
    let url = format!("http://127.0.0.1:{port}/");
    let link = format!("client {port}@127.0.0.1");

    // No daemon: a user cannot start one and is told how.
    let out = a.shape(&t, &format!("{link} OUT delay=30ms"));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("root starts it"), "{}", stderr(&out));

    // The daemon as the unit file runs it, with a limit of one rule per user.
    let config = t.dir.join("shape.toml");
    std::fs::write(&config, "[default]\nrules = 1\n").unwrap();
    let mut daemon = netloom()
        .args(["shape", "daemon"])
        .env("NETLOOM_RUN_DIR", &t.dir)
        .env("NETLOOM_SHAPE_CONFIG", &config)
        .stderr(std::fs::File::create(t.dir.join("daemon.log")).unwrap())
        .spawn()
        .unwrap();
    for _ in 0..300 {
        if t.dir.join("shape.pid").exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let base_a = a.connect_ms(&url, 5);
    let base_b = b.connect_ms(&url, 5);

    // A writes a rule for the very port B talks to: it shapes A's connections only.
    let out = a.shape(&t, &format!("{link} IN delay=30ms OUT delay=30ms"));
    assert!(out.status.success(), "{}", stderr(&out));
    let shaped_a = a.connect_ms(&url, 5);
    let shaped_b = b.connect_ms(&url, 5);
    assert!(
        shaped_a > base_a + 55.0,
        "A's own traffic: {base_a} -> {shaped_a} ms"
    );
    assert!(
        shaped_b < base_b + 10.0,
        "B's traffic changed: {base_b} -> {shaped_b} ms"
    );

    // Each sees only their own links; root sees all, with the owner.
    let show_a = String::from_utf8_lossy(&a.shape(&t, "show").stdout).into_owned();
    assert!(show_a.contains(&format!("(uid {})", a.uid)), "{show_a}");
    let show_b = String::from_utf8_lossy(&b.shape(&t, "show").stdout).into_owned();
    assert!(show_b.contains("no link is shaped"), "{show_b}");
    let show_root = t.ok("show");
    assert!(
        show_root.contains(&format!("(uid {}): {link}", a.uid)),
        "{show_root}"
    );
    // B can neither delete A's link (by id or selector) nor stop the daemon.
    for words in ["delete 1", &format!("delete {link}"), "stop"] {
        let out = b.shape(&t, words);
        assert!(!out.status.success(), "B ran `{words}`");
    }
    assert!(t.ok("show").contains(&link));
    // Nor can a user ask for another's traffic by naming their uid.
    let out = a.shape(&t, &format!("server 9 uid={} OUT delay=1ms", b.uid));
    assert!(
        stderr(&out).contains("only their own traffic"),
        "{}",
        stderr(&out)
    );

    // Over the limit: a clear error naming it and the file, and nothing installed.
    let rules_before = chains();
    let out = a.shape(&t, "server 9 OUT delay=1ms");
    assert!(!out.status.success());
    let error = stderr(&out);
    assert!(
        error.contains("at most 1 rules") && error.contains(&config.display().to_string()),
        "{error}"
    );
    assert_eq!(chains(), rules_before);
    assert!(!t.ok("show").contains("server 9"));
    // Raised in the file, the limit applies from the next request, without a restart.
    std::fs::write(&config, "[default]\nrules = 2\n").unwrap();
    let out = a.shape(&t, "server 9 OUT delay=1ms");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(a.shape(&t, "delete server 9").status.success());

    // A deletes their own link; the daemon (a service) stays for the next request.
    assert!(a.shape(&t, "delete 1").status.success());
    assert!(t.ok("show").contains("no link is shaped"));
    assert!(daemon.try_wait().unwrap().is_none());
    t.ok("stop");
    assert!(daemon.wait().unwrap().success());
}

#[test]
fn fq_codel_pipes_hold_packets_until_their_scheduler_sends_them() {
    require_live!("iptables-legacy", "curl");
    let t = Turn::new("fq");
    let port = serve("127.0.0.1:0", 2_000_000);
    let url = format!("http://127.0.0.1:{port}/");
    let base = connect_ms(&url, 7);
    t.ok(&format!(
        "client {port}@127.0.0.1 IN bw=20Mbit delay=10ms aqm=fq_codel OUT delay=10ms aqm=fq_codel"
    ));
    let shaped = connect_ms(&url, 7);
    // 20 ms, less the baseline's own noise under a loaded machine (a median of 2 ms was seen).
    assert!(
        (18.0..30.0).contains(&(shaped - base)),
        "connect {base:.2} -> {shaped:.2} ms through 10 ms FQ-CoDel pipes each way"
    );
    // 2 MB down a 20 Mbit/s FQ-CoDel pipe: at least the body's 0.8 s, and it completes.
    let (_, total) = curl(&url);
    assert!((0.8..3.0).contains(&total), "download {total:.3} s");
    let json: serde_json::Value = serde_json::from_str(&t.ok("show --json")).unwrap();
    assert!(
        json[0]["pipes"][0]["packets"].as_u64().unwrap() > 20,
        "{json}"
    );
    t.ok("stop");
}

/// A cgroup v2 made for a test under the cgroup2 mount (`netloom-test-TAG-PID`), removed when
/// dropped, even if the test fails (its processes are gone by then: each is a finished curl).
struct TestCgroup {
    dir: PathBuf,
    /// Its path from the mount, as `cgroup=` takes it.
    path: String,
}

impl TestCgroup {
    fn new(tag: &str) -> Option<TestCgroup> {
        let mount = netloom_os::cgroup2_mount()?;
        let name = format!("netloom-test-{tag}-{}", std::process::id());
        let dir = mount.join(&name);
        let _ = std::fs::remove_dir(&dir);
        std::fs::create_dir(&dir).unwrap();
        Some(TestCgroup {
            dir,
            path: format!("/{name}"),
        })
    }

    /// A cgroup made below this one (dropped before it, when declared after it).
    fn child(&self, name: &str) -> TestCgroup {
        let dir = self.dir.join(name);
        std::fs::create_dir(&dir).unwrap();
        TestCgroup {
            dir,
            path: format!("{}/{name}", self.path),
        }
    }

    /// The median connect time in ms of `n` connections to `url` by curls in this cgroup.
    fn connect_ms(&self, url: &str, n: usize) -> f64 {
        let procs = self.dir.join("cgroup.procs");
        let times = (0..n)
            .map(|_| {
                let out = Command::new("sh")
                    .arg("-c")
                    .arg(format!(
                        "echo $$ > {} && exec curl -s -o /dev/null --max-time 10 -w %{{time_connect}} {url}",
                        procs.display()
                    ))
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&out.stdout).parse::<f64>().unwrap() * 1000.0
            })
            .collect();
        median(times)
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // rmdir fails while a process is still in it; a finished curl may take a moment to go.
        for _ in 0..100 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

#[test]
fn a_cgroup_link_shapes_only_the_processes_of_that_cgroup() {
    require_live!("iptables-legacy", "curl");
    let t = Turn::new("cgroup");
    let (Some(a), Some(b)) = (TestCgroup::new("a"), TestCgroup::new("b")) else {
        eprintln!("SKIPPED: no cgroup v2 mounted");
        return;
    };
    let port = serve("127.0.0.1:0", 100);
    let url = format!("http://127.0.0.1:{port}/");
    let (base_a, base_b) = (a.connect_ms(&url, 7), b.connect_ms(&url, 7));
    // Both directions: the SYN leaves through OUT (the kernel's cgroup match, then sock_diag),
    // the SYN-ACK arrives through IN (sock_diag's cgroup of the receiving socket only).
    t.ok(&format!(
        "client {port}@127.0.0.1 cgroup={} IN delay=20ms OUT delay=20ms",
        a.path
    ));
    let (shaped_a, shaped_b) = (a.connect_ms(&url, 7), b.connect_ms(&url, 7));
    // The other cgroup's SYN-ACKs cross user space (the IN rules cannot tell cgroups apart), so
    // under a loaded machine they may wait for the daemon's wake-up: a few ms, never 40.
    assert!(
        (shaped_a - base_a) > 38.0 && (shaped_a - base_a) < 55.0,
        "the cgroup's own connects: {base_a:.2} -> {shaped_a:.2} ms, expected +40"
    );
    assert!(
        shaped_b < base_b + 10.0,
        "the other cgroup's connects changed: {base_b:.2} -> {shaped_b:.2} ms"
    );
    // The kernel's OUT rules carry the path; the IN ones cannot.
    let rules = chains();
    assert!(
        rules.contains(&format!("-m cgroup --path \"{}\"", a.path))
            || rules.contains(&format!("-m cgroup --path {}", a.path)),
        "{rules}"
    );
    // A cgroup that does not exist: exit 2, named, nothing changed.
    let out = t.shape(&format!(
        "client {port}@127.0.0.1 cgroup=/netloom-no-such OUT delay=1ms"
    ));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no such cgroup v2"),
        "{}",
        stderr(&out)
    );
    assert_eq!(chains(), rules);
    t.ok("stop");
}

#[test]
fn a_cgroup_link_shapes_the_cgroups_below_it_both_ways() {
    require_live!("iptables-legacy", "curl");
    let t = Turn::new("cgroup-below");
    let Some(a) = TestCgroup::new("above") else {
        eprintln!("SKIPPED: no cgroup v2 mounted");
        return;
    };
    let port = serve("127.0.0.1:0", 100);
    let url = format!("http://127.0.0.1:{port}/");
    let base = a.connect_ms(&url, 7);
    t.ok(&format!(
        "client {port}@127.0.0.1 cgroup={} IN delay=20ms OUT delay=20ms",
        a.path
    ));
    // A cgroup made below the named one after the link was set, and one below that: the SYN
    // (OUT) and the SYN-ACK (IN) of their curls each see 20 ms, as the kernel's `--path`
    // match takes descendants.
    let child = a.child("child");
    let grandchild = child.child("grandchild");
    for (cgroup, name) in [(&child, "child"), (&grandchild, "grandchild")] {
        let shaped = cgroup.connect_ms(&url, 7);
        assert!(
            (shaped - base) > 38.0 && (shaped - base) < 55.0,
            "the {name}'s connects: {base:.2} -> {shaped:.2} ms, expected +40"
        );
    }
    let shown = t.ok("show");
    let counted = |dir: &str| {
        shown
            .lines()
            .find(|l| l.trim_start().starts_with(dir))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    };
    assert!(counted("IN") >= 14 && counted("OUT") >= 14, "{shown}");
    t.ok("stop");
}

#[test]
fn an_in_pipe_with_a_group_takes_only_replies_to_that_groups_users() {
    require_live!("iptables-legacy", "curl", "setpriv", "useradd");
    let t = Turn::new("gid");
    let a = User::new("g");
    let port = serve("127.0.0.1:0", 100);
    let url = format!("http://127.0.0.1:{port}/");
    let (base_a, base_root) = (a.connect_ms(&url, 7), connect_ms(&url, 7));
    // The SYN-ACK arriving for A's socket: its owner from sock_diag, its group A's primary one.
    t.ok(&format!(
        "client {port}@127.0.0.1 gid={} IN delay=30ms",
        a.gid
    ));
    let (shaped_a, shaped_root) = (a.connect_ms(&url, 7), connect_ms(&url, 7));
    assert!(
        (28.0..45.0).contains(&(shaped_a - base_a)),
        "A's connects: {base_a:.2} -> {shaped_a:.2} ms, expected +30"
    );
    assert!(
        shaped_root < base_root + 10.0,
        "root's connects changed: {base_root:.2} -> {shaped_root:.2} ms"
    );
    t.ok("stop");
}

/// A network namespace made by the test with a veth pair to this one (10.199.N.1 here, .2
/// there), removed with the pair when dropped, even if the test fails.
struct Namespace {
    name: String,
    here: String,
}

impl Namespace {
    fn new() -> Namespace {
        let n = std::process::id() % 250 + 1;
        let ns = Namespace {
            name: format!("ishape-{}", std::process::id()),
            here: format!("ishp{}", std::process::id()),
        };
        ns.remove();
        let ip = |args: &str| {
            let ok = Command::new("ip")
                .args(args.split_whitespace())
                .status()
                .unwrap();
            assert!(ok.success(), "ip {args}");
        };
        ip(&format!("netns add {}", ns.name));
        ip(&format!(
            "link add {} type veth peer name eth0 netns {}",
            ns.here, ns.name
        ));
        ip(&format!("addr add 10.199.{n}.1/24 dev {}", ns.here));
        ip(&format!("link set {} up", ns.here));
        ip(&format!("-n {} addr add 10.199.{n}.2/24 dev eth0", ns.name));
        ip(&format!("-n {} link set eth0 up", ns.name));
        ip(&format!("-n {} link set lo up", ns.name));
        ns
    }

    fn address_here(&self) -> String {
        format!("10.199.{}.1", std::process::id() % 250 + 1)
    }

    fn exec(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// Whether netloom's shaping chains are in this namespace's mangle table.
    fn has_shape_chains(&self) -> bool {
        let out = self
            .exec("iptables-legacy")
            .args(["-t", "mangle", "-S"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).contains("NETLOOM-SHAPE")
    }

    fn remove(&self) {
        let quiet = |args: &[&str]| {
            let _ = Command::new("ip").args(args).stderr(Stdio::null()).status();
        };
        quiet(&["link", "del", &self.here]);
        quiet(&["netns", "del", &self.name]);
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        self.remove();
    }
}

#[test]
fn netns_shapes_a_namespaces_traffic_with_rules_inside_it() {
    require_live!("iptables-legacy", "curl", "ip");
    let t = Turn::new("netns");
    let ns = Namespace::new();
    let server = format!("{}:0", ns.address_here());
    let port = serve(&server, 100);
    let url = format!("http://{}:{port}/", ns.address_here());
    let connect = |n: usize| {
        let times = (0..n)
            .map(|_| {
                let out = ns
                    .exec("curl")
                    .args(["-s", "-o", "/dev/null", "--max-time", "10"])
                    .args(["-w", "%{time_connect}", &url])
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&out.stdout).parse::<f64>().unwrap() * 1000.0
            })
            .collect();
        median(times)
    };
    let base = connect(5);
    let link = format!("client {port}@{}", ns.address_here());
    t.ok(&format!(
        "--netns {} {link} IN delay=10ms OUT delay=10ms",
        ns.name
    ));
    let shaped = connect(5);
    assert!(
        shaped > base + 19.0 && shaped < base + 30.0,
        "the namespace's connections: {base} -> {shaped} ms"
    );
    // The rules are in the namespace, not here; this namespace's own traffic is untouched.
    let inside = ns
        .exec("iptables-legacy")
        .args(["-t", "mangle", "-S"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&inside.stdout).contains("NETLOOM-SHAPE-OUT"));
    assert!(chains().is_empty(), "rules here: {}", chains());
    assert!(t.ok(&format!("--netns {} show", ns.name)).contains(&link));
    assert!(t.ok("show").contains("no link is shaped"));
    // A namespace that does not exist: exit 2, nothing started.
    let out = t.shape(&format!("--netns ishape-none {link} OUT delay=1ms"));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no network namespace"),
        "{}",
        stderr(&out)
    );
    // By the id of a process inside (a container's, say): the same namespace, so the same
    // shaping process, which `stop` ends.
    let mut sleeper = ns.exec("sleep").arg("30").spawn().unwrap();
    let pid = sleeper.id();
    // `ip netns exec` becomes sleep once it has entered the namespace.
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(t.ok(&format!("--netns {pid} show")).contains(&link));
    t.ok(&format!("--netns {pid} stop"));
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert!(t
        .ok(&format!("--netns {} show", ns.name))
        .contains("no link is shaped"));
    let after = connect(5);
    assert!(after < base + 5.0, "after stop: {base} -> {after} ms");
}

#[test]
fn bad_input_exits_2_and_installs_nothing() {
    require_live!("iptables-legacy");
    let t = Turn::new("bad");
    for (words, expected) in [
        (
            "client 80@10.0.0.1/8 IN delay=1ms",
            "the network is 10.0.0.0/8",
        ),
        ("client 70000@1.2.3.4 IN delay=1ms", "ports are 1-65535"),
        ("client 80@1.2.3.4 SHARED profile=missing", "missing.toml"),
        ("client 80@1.2.3.4 IN delay=1ms bw=fast", "bw"),
    ] {
        let out = t.shape(words);
        assert_eq!(out.status.code(), Some(2), "{words}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected), "{words}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert_eq!(chains(), "");
    assert!(!t.dir.join("shape.sock").exists());
    let out = t.shape("delete 3");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn rules_a_killed_namespace_process_left_go_when_the_next_shaping_process_starts() {
    require_live!("iptables-legacy", "ip");
    let t = Turn::new("netns-kill");
    let ns = Namespace::new();
    let inside = || ns.has_shape_chains();
    t.ok(&format!(
        "--netns {} client 9@{} OUT delay=1ms",
        ns.name,
        ns.address_here()
    ));
    let pid_file = t.kill_netns_process();
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(
        inside(),
        "the killed process's rules are still in the namespace"
    );
    // The next shaping process anywhere (here, the root namespace's, started by a request)
    // removes them, in the namespace, and the dead process's files.
    t.ok("client 9@127.0.0.1 OUT delay=1ms");
    assert!(!inside(), "the namespace's rules were not removed");
    assert!(!pid_file.exists());
    assert!(t.ok("show").contains("client 9@127.0.0.1"));
    t.ok("stop");
}

#[test]
fn a_running_shaping_process_removes_what_a_killed_namespace_process_left() {
    require_live!("iptables-legacy", "ip");
    let t = Turn::new("netns-watch");
    let ns = Namespace::new();
    let inside = || ns.has_shape_chains();
    // This namespace's shaping process runs first, then the other namespace's.
    t.ok("client 9@127.0.0.1 OUT delay=1ms");
    t.ok(&format!(
        "--netns {} client 9@{} OUT delay=1ms",
        ns.name,
        ns.address_here()
    ));
    assert!(inside());
    let pid_file = t.kill_netns_process();
    // No request and no new process: the running one notices within its sweep period.
    let start = std::time::Instant::now();
    while (inside() || pid_file.exists()) && start.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let took = start.elapsed();
    // What each shaping process is doing (state, wait channel), for a sweep that did not come.
    let processes = || {
        let out = Command::new("ps")
            .args(["-eLo", "pid,tid,stat,wchan:32,args"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains("shape") || l.contains("iptables"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let listing: Vec<_> = std::fs::read_dir(&t.dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        !inside() && !pid_file.exists(),
        "after {took:?}: rules left {}, pid file left {} ({:?}); the running process said: {}\n\
         run dir: {listing:?}\nprocesses:\n{}",
        inside(),
        pid_file.exists(),
        std::fs::read_to_string(&pid_file).unwrap_or_default(),
        std::fs::read_to_string(t.dir.join("shape.log")).unwrap_or_default(),
        processes()
    );
    // The running process is untouched.
    assert!(t.ok("show").contains("client 9@127.0.0.1"));
    t.ok("stop");
}

/// Sends `count` 1000-byte UDP datagrams with ECN field `ecn` to `port` on 127.0.0.1 as fast as
/// it can and returns (datagrams received, datagrams received marked CE), read with IP_RECVTOS.
fn udp_marks(port: u16, count: u32, ecn: u8) -> (u32, u32) {
    const SCRIPT: &str = r#"
import socket, sys
port, count, tos = (int(a) for a in sys.argv[1:4])
IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)
r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
r.bind(("127.0.0.1", port))
r.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
r.settimeout(1.5)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
for _ in range(count):
    s.sendto(b"x" * 1000, ("127.0.0.1", port))
got = ce = 0
try:
    while True:
        _, ancillary, _, _ = r.recvmsg(2048, 64)
        got += 1
        ce += any(t == socket.IP_TOS and d[0] & 3 == 3 for _, t, d in ancillary)
except socket.timeout:
    pass
print(got, ce)
"#;
    let out = Command::new("python3")
        .args(["-c", SCRIPT])
        .args([port.to_string(), count.to_string(), ecn.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut n = text.split_whitespace().map(|x| x.parse::<u32>().unwrap());
    match (n.next(), n.next()) {
        (Some(got), Some(ce)) => (got, ce),
        _ => panic!("udp_marks: {}", String::from_utf8_lossy(&out.stderr)),
    }
}

#[test]
fn an_ecn_pipe_marks_ect_packets_ce_in_the_packet_and_drops_not_ect_ones() {
    require_live!("iptables-legacy", "python3");
    let t = Turn::new("ecn");
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    const ECT0: u8 = 0b10;
    // Unshaped, nothing marks: every datagram arrives as sent.
    assert_eq!(udp_marks(port, 50, ECT0), (50, 0));
    // RED past max_th as soon as a packet waits (weight 1, max_p 1): it marks every packet
    // queued behind another if it can, and drops it if not. 1 Mbit/s makes 50 datagrams queue.
    t.ok(&format!(
        "client {port}@127.0.0.1 proto=udp OUT bw=1Mbit aqm=red red.min_th=1 red.max_th=2 \
         red.weight=1 red.max_p=1 queue=1000 ecn=true"
    ));
    let (got, ce) = udp_marks(port, 50, ECT0);
    // All arrive (a marked IPv4 header with a wrong checksum would be dropped), most marked.
    assert_eq!(got, 50, "ECT(0): {got} received, {ce} marked CE");
    assert!(ce >= 40, "ECT(0): {got} received, {ce} marked CE");
    let (got, ce) = udp_marks(port, 50, 0);
    assert_eq!(ce, 0, "Not-ECT: {got} received, {ce} marked CE");
    assert!(
        got <= 10,
        "Not-ECT: {got} of 50 received through the same RED pipe"
    );
    t.ok("stop");
}

/// A UDP port free on `addr` now.
fn free_udp_port(addr: &str) -> u16 {
    std::net::UdpSocket::bind((addr, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Sends `count` small UDP datagrams, 2 ms apart, from a socket marked `mark` (0: none) to a
/// receiver on `addr`:`port` (IPv4 or IPv6) and returns (datagrams received, the least time in
/// ms any of them took from its send to its receipt).
fn udp_copies(addr: &str, port: u16, count: u32, mark: u32) -> (u32, f64) {
    const SCRIPT: &str = r#"
import socket, struct, sys, time
addr, port, count, mark = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
family = socket.AF_INET6 if ":" in addr else socket.AF_INET
r = socket.socket(family, socket.SOCK_DGRAM)
r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
r.bind((addr, port))
s = socket.socket(family, socket.SOCK_DGRAM)
if mark:
    s.setsockopt(socket.SOL_SOCKET, 36, mark)  # SO_MARK
for _ in range(count):
    s.sendto(struct.pack("d", time.monotonic()), (addr, port))
    time.sleep(0.002)
r.settimeout(1.0)
got, least = 0, 1e9
try:
    while True:
        data = r.recv(64)
        got += 1
        least = min(least, (time.monotonic() - struct.unpack("d", data)[0]) * 1000)
except socket.timeout:
    pass
print(got, least)
"#;
    let out = Command::new("python3")
        .args(["-c", SCRIPT, addr])
        .args([port.to_string(), count.to_string(), mark.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut n = text.split_whitespace();
    match (n.next().map(str::parse), n.next().map(str::parse)) {
        (Some(Ok(got)), Some(Ok(least))) => (got, least),
        _ => panic!("udp_copies: {}", String::from_utf8_lossy(&out.stderr)),
    }
}

#[test]
fn a_duplicating_pipe_doubles_what_a_local_receiver_gets_after_the_pipes_delay() {
    require_live!("iptables-legacy", "python3");
    let t = Turn::new("dup");
    let port = free_udp_port("127.0.0.1");
    // Unshaped: what arrives of 40 datagrams (all of them, on loopback) and how fast.
    let (base, fastest) = udp_copies("127.0.0.1", port, 40, 0);
    assert!(base > 0, "no datagram arrived unshaped");
    // OUT: every datagram and its copy, both after the pipe's 20 ms.
    t.ok(&format!(
        "client {port}@127.0.0.1 proto=udp OUT delay=20ms duplicate=100%"
    ));
    let rules = chains();
    assert!(
        rules.contains(&format!(
            "-A NETLOOM-SHAPE-OUT -m mark --mark {DUPLICATE_MARK:#x} -j RETURN"
        )) && rules.contains("--queue-num 47001"),
        "{rules}"
    );
    let (got, least) = udp_copies("127.0.0.1", port, 40, 0);
    assert_eq!(
        got,
        2 * base,
        "OUT duplicate=100%: {got} received, {base} unshaped"
    );
    assert!(
        least >= 19.0 && fastest < 10.0,
        "the first copy arrived after {least:.2} ms (unshaped {fastest:.2})"
    );
    // A packet carrying netloom's mark is never queued: it skips the pipe's 20 ms.
    let (got, least) = udp_copies("127.0.0.1", port, 40, DUPLICATE_MARK);
    assert!(
        got == base && least < 10.0,
        "marked: {got} received (unshaped {base}), fastest {least:.2} ms"
    );
    // 0 % (a change of the same link) copies nothing.
    t.ok(&format!(
        "client {port}@127.0.0.1 proto=udp OUT delay=20ms duplicate=0%"
    ));
    assert_eq!(udp_copies("127.0.0.1", port, 40, 0).0, base);
    // IN: the copy re-sent to this machine reaches the socket once (were it queued again, a
    // 100 % pipe would copy it again, and again). The OUT link's 0 % pipe leaves it alone.
    t.ok(&format!(
        "server {port} proto=udp IN delay=20ms duplicate=100%"
    ));
    let (got, least) = udp_copies("127.0.0.1", port, 40, 0);
    assert_eq!(
        got,
        2 * base,
        "IN duplicate=100%: {got} received, {base} unshaped"
    );
    assert!(
        least >= 19.0,
        "IN: the first copy arrived after {least:.2} ms"
    );
    // IPv6, OUT (the IN link, which would take IPv6 too, gone first).
    t.ok(&format!("delete server {port} proto=udp"));
    t.ok(&format!(
        "client {port}@::1 proto=udp OUT delay=20ms duplicate=100%"
    ));
    let (base6, _) = udp_copies("::1", free_udp_port("::1"), 40, 0);
    let (got, least) = udp_copies("::1", port, 40, 0);
    assert_eq!(
        got,
        2 * base6,
        "IPv6 duplicate=100%: {got} received, {base6} unshaped"
    );
    assert!(
        least >= 19.0,
        "IPv6: the first copy arrived after {least:.2} ms"
    );
    // Stopping removes every rule, the mark's too.
    t.ok("stop");
    assert_eq!(chains(), "");
}
