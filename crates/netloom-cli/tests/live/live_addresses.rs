//! A topology's own addresses in a live run (`[topology] addresses`, a host's `ipv4`): hosts
//! reach each other by address and by name, routers (engine and kernel) answer from the
//! range's top, and a run whose addresses clash is refused naming the host. Each live test
//! skips, saying why, where it cannot run.

use crate::live_common::{self, netloom, Lab};

/// h1 – r1 – r2 – h2 numbered from 10.0.0.0/8, h2 at its own 10.0.0.100; `r1` is r1's entry.
fn chain(r1: &str) -> String {
    let mut text = format!(
        "hosts = [\"h1\", {{ name = \"h2\", ipv4 = \"10.0.0.100\" }}]\n\
         routers = [{r1}, \"r2\"]\n\
         [topology]\naddresses = \"10.0.0.0/8\"\n"
    );
    for (a, b) in [("h1", "r1"), ("r1", "r2"), ("r2", "h2")] {
        text.push_str(&format!(
            "[[link]]\na = \"{a}\"\nb = \"{b}\"\nbw = \"1Gbit\"\ndelay = \"1ms\"\n"
        ));
    }
    text
}

fn text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// The addresses every host and router of `chain` has, as its hosts see them.
fn check_addresses_and_reach(lab: &Lab) {
    let addr = text(&lab.exec("h1", &["ip", "-4", "-o", "addr", "show", "nl0"]));
    assert!(addr.contains("inet 10.0.0.1/8 "), "{addr}");
    let addr = text(&lab.exec("h2", &["ip", "-4", "-o", "addr", "show", "nl0"]));
    assert!(addr.contains("inet 10.0.0.100/8 "), "{addr}");
    for (name, want) in [
        ("h2", "10.0.0.100"),
        ("r1", "10.255.255.254"),
        ("r2", "10.255.255.253"),
    ] {
        let out = text(&lab.exec("h1", &["getent", "ahostsv4", name]));
        assert!(out.starts_with(&format!("{want} ")), "{name}: {out}");
    }
    for dest in ["10.0.0.100", "h2"] {
        let out = lab.exec(
            "h1",
            &["ping", "-4", "-n", "-c", "2", "-i", "0.2", "-W", "2", dest],
        );
        assert!(out.status.success(), "ping {dest}: {}", text(&out));
        assert!(text(&out).contains("from 10.0.0.100"), "{}", text(&out));
    }
    let out = lab.exec("h2", &["ping", "-n", "-c", "1", "-W", "2", "10.0.0.1"]);
    assert!(out.status.success(), "{}", text(&out));
    // Each router answers a probe whose TTL runs out there from its own address.
    let out = lab.exec(
        "h1",
        &["traceroute", "-n", "-q", "1", "-N", "1", "10.0.0.100"],
    );
    let trace = text(&out);
    assert!(out.status.success(), "{trace}");
    let hops: Vec<&str> = trace
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert_eq!(
        hops,
        ["10.255.255.254", "10.255.255.253", "10.0.0.100"],
        "{trace}"
    );
}

#[test]
fn hosts_and_engine_routers_take_the_topology_s_addresses() {
    require_live!("ping", "traceroute", "getent");
    let mut lab = Lab::new("addr", &chain("\"r1\""));
    lab.start(&[]);
    check_addresses_and_reach(&lab);
    lab.stop();
}

#[test]
fn a_kernel_router_takes_the_topology_s_addresses() {
    require_live!("ping", "traceroute", "getent");
    let mut lab = Lab::new("addrk", &chain("{ name = \"r1\", kernel = true }"));
    lab.start(&[]);
    let lo = text(&lab.exec("r1", &["ip", "-4", "-o", "addr", "show", "lo"]));
    assert!(lo.contains("10.255.255.254"), "{lo}");
    check_addresses_and_reach(&lab);
    lab.stop();
}

#[test]
fn a_run_whose_addresses_clash_is_refused_naming_the_host() {
    let _turn = live_common::turn();
    // Refused at load, before anything is made: no root needed.
    let dir = std::env::temp_dir().join(format!("netloom-clash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("topo.toml");
    std::fs::write(&file, chain("\"r1\"").replace("10.0.0.100", "10.0.0.1")).unwrap();
    let out = netloom()
        .env("NETLOOM_RUN_DIR", dir.join("run"))
        .args(["run", "--name", "clash"])
        .arg(&file)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("topo.toml:1: host h2: address 10.0.0.1 is host h1's too"),
        "{err}"
    );
}
