//! A lab of router namespaces joined by veth pairs, addressed as netloom addresses kernel
//! routers (unnumbered: the router's address on `lo` and on every link, the far end's as its
//! peer), removed on drop with every process inside, whatever the test did.

#![allow(dead_code)]

use netloom_routing::{Interface, Neighbour, RouterSpec};
use netloom_topo::KernelRouting as Routing;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::process::Command;

/// Whether these tests can run here (root, iproute2); prints why not.
pub fn can_run(test: &str) -> bool {
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
    });
    let reason = if !root {
        Some("needs root (namespaces)")
    } else if Command::new("ip").arg("-V").output().is_err() {
        Some("needs `ip` from iproute2")
    } else {
        None
    };
    if let Some(reason) = reason {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
    }
    reason.is_none()
}

/// Router `j`'s addresses, as the default `AddressPlan` numbers them.
pub fn address(j: usize) -> (Ipv4Addr, Ipv6Addr) {
    netloom_os::AddressPlan::DEFAULT.router(j)
}

/// Namespaces joined by veth pairs, and the directory of their routers' daemons.
pub struct Lab {
    /// Name prefix of every namespace and device.
    pub tag: String,
    /// Namespaces made, removed on drop.
    pub namespaces: Vec<String>,
    /// The routers' directories' parent, removed on drop.
    pub dir: PathBuf,
    links: usize,
}

impl Lab {
    pub fn new(tag: &str) -> Lab {
        let tag = format!("rt{}{tag}", std::process::id() % 100_000);
        let dir = std::env::temp_dir().join(format!("netloom-routing-{tag}"));
        Lab {
            tag,
            namespaces: Vec::new(),
            dir,
            links: 0,
        }
    }

    /// The namespace of node `name`.
    pub fn ns(&self, name: &str) -> String {
        format!("{}-{name}", self.tag)
    }

    /// Makes the namespace of node `name` with `lo` up carrying `addresses`, forwarding on.
    pub fn node(&mut self, name: &str, v4: Ipv4Addr, v6: Ipv6Addr) {
        let ns = self.ns(name);
        ip(&["netns", "add", &ns]);
        self.namespaces.push(ns.clone());
        ip(&["-n", &ns, "link", "set", "lo", "up"]);
        ip(&["-n", &ns, "addr", "add", &format!("{v4}/32"), "dev", "lo"]);
        ip(&["-n", &ns, "addr", "add", &format!("{v6}/128"), "dev", "lo"]);
        for sysctl in ["net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"] {
            run(Command::new("ip").args(["netns", "exec", &ns, "sysctl", "-qw", sysctl]));
        }
    }

    /// Joins nodes `a` and `b` (made by `node` with those addresses) by a veth pair that
    /// behaves as netloom's TUN devices do: no ARP or neighbour discovery (both ends share one
    /// MAC address, so each accepts what the other sends to "itself"), a link-local address of
    /// its own per end, and each end addressed `<own>/32 peer <far>/32` (and /128). Returns the
    /// two devices' names.
    pub fn link(
        &mut self,
        (a, a4, a6): (&str, Ipv4Addr, Ipv6Addr),
        (b, b4, b6): (&str, Ipv4Addr, Ipv6Addr),
    ) -> (String, String) {
        self.links += 1;
        let (da, db) = (format!("l{}a", self.links), format!("l{}b", self.links));
        let (na, nb) = (self.ns(a), self.ns(b));
        let mac = "02:6e:6c:00:00:01";
        ip(&[
            "link", "add", &da, "netns", &na, "address", mac, "type", "veth", "peer", "name", &db,
            "netns", &nb, "address", mac,
        ]);
        let ends = [(&na, &da, a4, a6, b4, b6, 1), (&nb, &db, b4, b6, a4, a6, 2)];
        for (ns, dev, mine4, mine6, far4, far6, side) in ends {
            ip(&[
                "-n",
                ns,
                "link",
                "set",
                dev,
                "arp",
                "off",
                "addrgenmode",
                "none",
                "up",
            ]);
            // IPv6 addresses after the link is up: added to a down link, the kernel makes the
            // route to the own address but not the one to the peer.
            let link_local = format!("fe80::{}:{side}/64", self.links);
            ip(&["-n", ns, "addr", "add", &link_local, "dev", dev, "nodad"]);
            let (own4, peer4) = (format!("{mine4}/32"), format!("{far4}/32"));
            ip(&["-n", ns, "addr", "add", &own4, "peer", &peer4, "dev", dev]);
            let (own6, peer6) = (format!("{mine6}/128"), format!("{far6}/128"));
            ip(&[
                "-n", ns, "addr", "add", &own6, "peer", &peer6, "dev", dev, "nodad",
            ]);
        }
        (da, db)
    }

    /// Whether `ip route` (or `ip -6 route`) in node `name`'s namespace shows `prefix` from
    /// protocol `proto`.
    pub fn has_route(&self, name: &str, v6: bool, prefix: &str, proto: &str) -> bool {
        let family = if v6 { "-6" } else { "-4" };
        let out = Command::new("ip")
            .args([
                "-n",
                &self.ns(name),
                family,
                "route",
                "show",
                prefix,
                "proto",
                proto,
            ])
            .output()
            .expect("run ip route");
        !String::from_utf8_lossy(&out.stdout).trim().is_empty()
    }

    /// Polls `done` every 100 ms for up to `seconds`; whether it came true.
    pub fn wait(seconds: u64, mut done: impl FnMut() -> bool) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
        while std::time::Instant::now() < deadline {
            if done() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        done()
    }

    /// Every namespace's IPv4 and IPv6 routes, for a failure's message.
    pub fn routes(&self) -> String {
        let mut text = String::new();
        for ns in &self.namespaces {
            for family in ["-4", "-6"] {
                let out = Command::new("ip")
                    .args(["-n", ns, family, "route"])
                    .output()
                    .expect("run ip route");
                text.push_str(&format!(
                    "{ns} {family}:\n{}",
                    String::from_utf8_lossy(&out.stdout)
                ));
            }
        }
        text
    }

    /// Pids of the processes inside node `name`'s namespace.
    pub fn pids(&self, name: &str) -> Vec<u32> {
        let out = Command::new("ip")
            .args(["netns", "pids", &self.ns(name)])
            .output()
            .expect("run ip netns pids");
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }
}

/// A chain h — r0 — r1 — ... of routers, `routings[j]` on router j (plan index j), host h
/// (the plan's first host address) on r0 with default routes through it; returns the lab and
/// each router's description.
pub fn chain(tag: &str, routings: Vec<Routing>) -> (Lab, Vec<RouterSpec>) {
    let mut lab = Lab::new(tag);
    let host = netloom_os::AddressPlan::DEFAULT.host(0);
    lab.node("h", host.0, host.1);
    let name = |j: usize| format!("r{j}");
    for j in 0..routings.len() {
        let (v4, v6) = address(j);
        lab.node(&name(j), v4, v6);
    }
    let end = |j: usize| {
        let (v4, v6) = address(j);
        (name(j), v4, v6)
    };
    let interface = |device: String, peer: String, (v4, v6), neighbour| Interface {
        device,
        peer,
        neighbour,
        peer_ipv4: v4,
        peer_ipv6: v6,
        cost: 10,
    };
    // interfaces[j]: router j's.
    let mut interfaces: Vec<Vec<Interface>> = vec![Vec::new(); routings.len()];
    let (r0, r0_v4, r0_v6) = end(0);
    let (h_dev, r0_dev) = lab.link(("h", host.0, host.1), (&r0, r0_v4, r0_v6));
    for family in ["-4", "-6"] {
        ip(&[
            "-n",
            &lab.ns("h"),
            family,
            "route",
            "add",
            "default",
            "dev",
            &h_dev,
        ]);
    }
    interfaces[0].push(interface(r0_dev, "h".into(), host, Neighbour::Passive));
    for j in 1..routings.len() {
        let (a, a4, a6) = end(j - 1);
        let (b, b4, b6) = end(j);
        let (da, db) = lab.link((&a, a4, a6), (&b, b4, b6));
        let neighbour = |k: usize| Neighbour::Router {
            asn: routings[k].asn,
        };
        interfaces[j - 1].push(interface(da, b, (b4, b6), neighbour(j)));
        interfaces[j].push(interface(db, a, (a4, a6), neighbour(j - 1)));
    }
    let specs = routings
        .into_iter()
        .enumerate()
        .map(|(j, routing)| {
            let (ipv4, ipv6) = address(j);
            RouterSpec {
                name: name(j),
                namespace: lab.ns(&name(j)),
                ipv4,
                ipv6,
                interfaces: interfaces[j].clone(),
                routing,
            }
        })
        .collect();
    (lab, specs)
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            for pid in Command::new("ip")
                .args(["netns", "pids", ns])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default()
                .split_whitespace()
            {
                let _ = Command::new("kill").args(["-9", pid]).status();
            }
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ip(args: &[&str]) {
    run(Command::new("ip").args(args));
}

fn run(command: &mut Command) {
    let out = command.output().expect("run a command");
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
