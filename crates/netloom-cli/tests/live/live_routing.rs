//! Kernel routers running real routing daemons (root, namespaces, TUN, FRR): the bundled OSPF
//! ring routes every host to every other and reroutes around a link taken down, with the
//! outage measured and printed for fast hellos and for FRR's default timers; two ASes exchange
//! routes over eBGP with OSPF inside and the inter-AS link's delay shows in the round trip;
//! no daemon outlives its run, also after `kill -9` and `netloom clean`; bad routing input is
//! refused before anything starts. Each test skips, saying why, where it cannot run.

use crate::live_common::{self, median, Lab};
use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Returns from the test when FRR is not installed (Debian package frr).
macro_rules! require_frr {
    () => {
        require_live!("ping");
        if !std::path::Path::new("/usr/lib/frr/zebra").exists() {
            eprintln!("SKIPPED: needs FRR (Debian package frr)");
            return;
        }
    };
}

const DAEMONS: [&str; 6] = ["zebra", "staticd", "ospfd", "ospf6d", "bgpd", "bird"];

/// The bundled examples/ospf-ring.toml.
fn ring_example() -> String {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/ospf-ring.toml");
    std::fs::read_to_string(path).unwrap()
}

/// The routing daemons running in the experiment's namespaces (pids).
fn daemons(lab: &Lab) -> Vec<u32> {
    let mut pids = Vec::new();
    for ns in lab.namespaces() {
        let out = std::process::Command::new("ip")
            .args(["netns", "pids", &ns])
            .output()
            .unwrap();
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if DAEMONS.contains(&comm.trim()) {
                pids.push(pid.parse().unwrap());
            }
        }
    }
    pids
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// Waits up to `seconds` until every host answers a ping from every other, over IPv4 and
/// over IPv6 (each protocol version converges on its own).
fn wait_full_mesh(lab: &Lab, hosts: &[&str], seconds: u64) {
    let give_up = Instant::now() + Duration::from_secs(seconds);
    for from in hosts {
        for to in hosts.iter().filter(|to| *to != from) {
            for family in ["-4", "-6"] {
                let ping = ["ping", family, "-c", "1", "-W", "1", to];
                while !lab.exec(from, &ping).status.success() {
                    assert!(
                        Instant::now() < give_up,
                        "{from} never reached {to} ({family})"
                    );
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
    }
}

/// The device through which router `router` sends to `address` (`ip route get`): kernel
/// routers name each device after the node at its far end.
fn next_device(lab: &Lab, router: &str, address: &str) -> String {
    let out = lab.exec(router, &["ip", "route", "get", address]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let words: Vec<&str> = text.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "dev").expect("a route") + 1;
    words[at].to_string()
}

/// Pings `to` from `from` every 50 ms while `link down a b` happens 2 s in; returns the longest
/// time between two replies (the outage) in seconds, after checking replies came back after it.
fn outage(lab: &Lab, from: &str, to: &str, (a, b): (&str, &str), dead_s: u64) -> f64 {
    let seconds = (dead_s + 12).to_string();
    let mut ping = lab
        .exec_cmd(
            from,
            &[
                "ping", "-4", "-D", "-i", "0.05", "-w", &seconds, "-W", "1", to,
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    lab.control(&["link", "down", a, b]);
    let mut text = String::new();
    ping.stdout
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let _ = ping.wait();
    let times: Vec<f64> = text
        .lines()
        .filter(|l| l.contains("bytes from"))
        .filter_map(|l| l.strip_prefix('[')?.split(']').next()?.parse().ok())
        .collect();
    let gaps: Vec<(usize, f64)> = times.windows(2).map(|w| w[1] - w[0]).enumerate().collect();
    let (at, gap) = gaps
        .iter()
        .copied()
        .max_by(|x, y| x.1.total_cmp(&y.1))
        .expect("replies");
    assert!(
        times.len() - at > 20,
        "ping did not resume after the outage ({} replies after it)",
        times.len() - at - 1
    );
    gap
}

/// The ring example with `timers` (hello, dead in seconds) in place of its own: the outage
/// when the ring link on h1's path to h3 goes down, checked to be the protocol's doing.
fn ring_outage(tag: &str, timers: (u64, u64), keep_logs: Option<&std::path::Path>) -> f64 {
    let text = ring_example()
        .replace("hello = \"1s\"", &format!("hello = \"{}s\"", timers.0))
        .replace("dead = \"4s\"", &format!("dead = \"{}s\"", timers.1));
    let mut lab = Lab::new(tag, &text);
    let logs = keep_logs.map(|d| d.display().to_string());
    let extra: Vec<&str> = logs
        .iter()
        .flat_map(|d| ["--router-logs", d.as_str()])
        .collect();
    lab.start(&extra);
    let hosts = ["h1", "h2", "h3", "h4"];
    wait_full_mesh(&lab, &hosts, timers.1 + 30);
    // Routes are OSPF's: r1 knows h3's address from it, and a plain vtysh shows them.
    let routes = lab.exec("r1", &["vtysh", "-c", "show ip route"]);
    let routes = String::from_utf8_lossy(&routes.stdout).into_owned();
    assert!(routes.contains("O>* 198.18.0.3/32"), "{routes}");
    let before = next_device(&lab, "r1", "198.18.0.3");
    let gap = outage(&lab, "h1", "h3", ("r1", &before), timers.1);
    let after = next_device(&lab, "r1", "198.18.0.3");
    assert_ne!(
        before, after,
        "r1 still sends toward h3 over the link that is down"
    );
    println!(
        "OSPF ring, hello {}s dead {}s: link r1-{before} down, h1 -> h3 ping outage {gap:.2} s",
        timers.0, timers.1
    );
    // The outage is the dead interval at most (plus the time to recompute and install), and
    // more than a few pings' worth: the link was on the path and OSPF, not luck, rerouted.
    assert!(gap > 0.5 && gap < timers.1 as f64 + 3.0, "outage {gap} s");
    let running = daemons(&lab);
    assert!(
        running.len() >= 12,
        "zebra, ospfd and ospf6d on every router: {running:?}"
    );
    lab.stop();
    assert!(
        !running.iter().any(|&pid| alive(pid)),
        "daemons outlived the run"
    );
    gap
}

#[test]
fn ospf_ring_reroutes_around_a_link_down_with_fast_hellos() {
    require_frr!();
    let _turn = live_common::turn();
    let logs = std::env::temp_dir().join(format!("netloom-router-logs-{}", std::process::id()));
    ring_outage("ofast", (1, 4), Some(&logs));
    // The logs and configurations outlive the run where asked.
    let ospfd = std::fs::read_to_string(logs.join("r1/ospfd.log")).unwrap_or_default();
    let config = std::fs::read_to_string(logs.join("r1/frr.conf")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&logs);
    assert!(ospfd.contains("OSPF"), "r1's ospfd log: {ospfd}");
    assert!(config.contains("router ospf") && config.contains("ip ospf dead-interval 4"));
}

#[test]
fn ospf_ring_reroutes_around_a_link_down_with_default_timers() {
    require_frr!();
    let _turn = live_common::turn();
    ring_outage("odef", (10, 40), None);
}

#[test]
fn two_ases_exchange_routes_and_the_inter_as_link_sets_the_rtt() {
    require_frr!();
    let text = r#"hosts = ["h1", "h2"]
routers = [{ name = "a1", group = "west" }, { name = "a2", group = "west" }, { name = "b1", group = "east" }, { name = "b2", group = "east" }]

[topology]
kernel_routers = true

[routing]
protocol = "ospf"
hello = "1s"
dead = "4s"
asn = { west = 65001, east = 65002 }

[defaults]
bw = "1Gbit"
delay = "1ms"

[[link]]
a = "h1"
b = "a1"
[[link]]
a = "a1"
b = "a2"
[[link]]
a = "a2"
b = "b1"
[[link]]
a = "b1"
b = "b2"
[[link]]
a = "b2"
b = "h2"
"#;
    let mut lab = Lab::new("bgp", text);
    lab.start(&[]);
    wait_full_mesh(&lab, &["h1", "h2"], 60);
    // a2 learned h2's address over eBGP from b1; a1 learned it from a2 over OSPF.
    let bgp = lab.exec("a2", &["vtysh", "-c", "show ip bgp"]);
    let bgp = String::from_utf8_lossy(&bgp.stdout).into_owned();
    assert!(
        bgp.contains("198.18.0.2/32") && bgp.contains("65002"),
        "{bgp}"
    );
    let ospf = lab.exec("a1", &["vtysh", "-c", "show ip route ospf"]);
    assert!(String::from_utf8_lossy(&ospf.stdout).contains("198.18.0.2/32"));
    let base = median(lab.exact_rtts("h1", "h2", 10));
    lab.control(&["link", "set", "a2", "b1", "delay=21ms"]);
    let slower = median(lab.exact_rtts("h1", "h2", 10));
    println!("two ASes: h1 -> h2 RTT {base:.2} ms, {slower:.2} ms with the inter-AS link at 21 ms");
    // 20 ms more each way on the inter-AS link: 40 ms more per round trip.
    assert!((slower - base - 40.0).abs() < 2.0, "{base} -> {slower} ms");
    lab.stop();
}

#[test]
fn daemons_go_with_clean_after_kill_9() {
    require_frr!();
    let mut lab = Lab::new("k9", &ring_example());
    lab.start(&[]);
    let give_up = Instant::now() + Duration::from_secs(20);
    while daemons(&lab).len() < 12 {
        assert!(Instant::now() < give_up, "daemons: {:?}", daemons(&lab));
        std::thread::sleep(Duration::from_millis(100));
    }
    let running = daemons(&lab);
    // SIGKILL: netloom has no chance to stop anything; the daemons run on in the namespaces.
    let mut child = lab.child.take().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(running.iter().all(|&pid| alive(pid)));
    lab.control(&["clean"]);
    assert!(
        !running.iter().any(|&pid| alive(pid)),
        "daemons outlived clean"
    );
    assert!(lab.namespaces().is_empty());
}

#[test]
fn bad_routing_input_is_refused_before_anything_starts() {
    require_frr!();
    let ring = ring_example();
    // A user configuration FRR refuses: FRR's own words, the router named.
    let bad = ring.replace(
        "routers = [\"r1\", \"r2\", \"r3\", \"r4\"]",
        "routers = [{ name = \"r1\", config = \"r1.conf\" }, \"r2\", \"r3\", \"r4\"]",
    );
    let lab = Lab::new("bad", &bad);
    std::fs::write(
        lab.dir.join("r1.conf"),
        "router ospf\n ospf router-id 1.1.1.1\n bogus words\n",
    )
    .unwrap();
    let out = lab
        .cmd()
        .args(["run", "--name", &lab.name, "--duration", "1s"])
        .arg(lab.dir.join("topo.toml"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("router r1: configuration") && said.contains("line 3"),
        "{said}"
    );
    assert!(said.contains("bogus words"), "{said}");
    assert!(lab.namespaces().is_empty(), "something started");
    // A protocol on an engine router: the file and line.
    let engine = ring.replace(
        "routers = [\"r1\", \"r2\", \"r3\", \"r4\"]",
        "routers = [{ name = \"r1\", kernel = false, routing = \"ospf\" }, \"r2\", \"r3\", \"r4\"]",
    );
    std::fs::write(lab.dir.join("topo.toml"), engine).unwrap();
    let out = lab
        .cmd()
        .args(["run", "--name", &lab.name, "--duration", "1s"])
        .arg(lab.dir.join("topo.toml"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    let line = 1 + ring
        .lines()
        .position(|l| l.starts_with("routers ="))
        .unwrap();
    let expected = format!("topo.toml:{line}: router r1: `routing` applies to kernel routers only");
    assert!(said.contains(&expected), "{said}");
    assert!(lab.namespaces().is_empty(), "something started");
}
