//! `[topology] addresses` and a host's `ipv4` and `cpu`: the plan a topology chooses, and every
//! bad value one clear error with file, line and the node named.

use crate::common::{load, one_error};
use std::net::Ipv4Addr;

/// h1 h2 h3 on router r1 (and r2 beyond it); `meta` goes into `[topology]`, `hosts` replaces
/// the hosts line.
fn star(meta: &str, hosts: &str) -> String {
    format!(
        r#"{hosts}
routers = ["r1", "r2"]

[topology]
{meta}

[defaults]
bw = "1Gbit"
delay = "1ms"

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
a = "r1"
b = "r2"
"#
    )
}

const HOSTS: &str = r#"hosts = ["h1", "h2", "h3"]"#;

fn v4(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

#[test]
fn without_addresses_hosts_and_routers_take_netloom_s_plan() {
    let t = load(&star("", HOSTS));
    assert_eq!(t.addresses.to_string(), "198.18.0.0/15");
    assert_eq!(t.host_address(1).0, v4("198.18.0.2"));
    assert_eq!(t.router_address(0).0, v4("198.19.255.254"));
}

#[test]
fn a_base_numbers_hosts_in_order_and_routers_from_its_top() {
    let t = load(&star(r#"addresses = "10.0.0.0/8""#, HOSTS));
    let hosts: Vec<_> = (0..3).map(|i| t.host_address(i).0).collect();
    assert_eq!(hosts, [v4("10.0.0.1"), v4("10.0.0.2"), v4("10.0.0.3")]);
    assert_eq!(t.router_address(1).0, v4("10.255.255.253"));
    // IPv6 stays on netloom's /64.
    assert_eq!(t.host_address(0).1.to_string(), "fd6e:6c00::1");
}

#[test]
fn a_host_s_own_address_replaces_the_plan_s_and_the_others_keep_their_places() {
    let hosts = r#"hosts = ["h1", { name = "h2", ipv4 = "10.0.0.100" }, "h3"]"#;
    let t = load(&star(r#"addresses = "10.0.0.0/8""#, hosts));
    let got: Vec<_> = (0..3).map(|i| t.host_address(i).0).collect();
    assert_eq!(got, [v4("10.0.0.1"), v4("10.0.0.100"), v4("10.0.0.3")]);
}

#[test]
fn bad_bases_name_the_line_and_say_why() {
    let m = one_error(&star(r#"addresses = "127.0.0.0/8""#, HOSTS));
    assert!(
        m.starts_with("topo.toml:5: [topology]: ") && m.contains("loopback (127.0.0.0/8)"),
        "{m}"
    );
    let m = one_error(&star(r#"addresses = "10.0.0.0/31""#, HOSTS));
    assert!(m.contains("/31 is out of range; use /8 to /30"), "{m}");
    let m = one_error(&star(r#"addresses = "10.0.0.5/8""#, HOSTS));
    assert!(m.contains("did you mean 10.0.0.0/8?"), "{m}");
    // Three hosts and two routers do not fit a /30's two addresses.
    let m = one_error(&star(r#"addresses = "10.0.0.0/30""#, HOSTS));
    assert!(
        m.contains("room for 2 hosts and routers") && m.contains("3 hosts and 2 routers"),
        "{m}"
    );
}

#[test]
fn bad_host_addresses_name_the_host_and_its_line() {
    let with = |addr: &str| {
        star(
            r#"addresses = "10.0.0.0/8""#,
            &format!("hosts = [\"h1\",\n  {{ name = \"h2\", ipv4 = \"{addr}\" }}, \"h3\"]"),
        )
    };
    let m = one_error(&with("11.0.0.1"));
    assert!(
        m.starts_with("topo.toml:2: host h2: ")
            && m.contains("outside the address plan 10.0.0.0/8"),
        "{m}"
    );
    for (addr, what) in [
        ("127.0.0.1", "loopback"),
        ("224.0.0.5", "multicast"),
        ("169.254.3.4", "link-local"),
        ("0.1.2.3", "\"this network\""),
        ("255.255.255.255", "limited broadcast"),
    ] {
        let m = one_error(&with(addr));
        assert!(
            m.contains(&format!("ipv4 {addr} is in")) && m.contains(what),
            "{m}"
        );
    }
    let m = one_error(&with("10.255.255.255"));
    assert!(m.contains("network or broadcast address"), "{m}");
    let m = one_error(&with("10.0.0.7/8"));
    assert!(
        m.contains("write the address alone, ipv4 = \"10.0.0.7\""),
        "{m}"
    );
    let m = one_error(&with("ten"));
    assert!(m.contains("like \"10.0.0.7\""), "{m}");
}

#[test]
fn two_nodes_with_one_address_are_refused_naming_both() {
    // h2 takes h3's place in the plan.
    let m = one_error(&star(
        r#"addresses = "10.0.0.0/8""#,
        r#"hosts = ["h1", { name = "h2", ipv4 = "10.0.0.3" }, "h3"]"#,
    ));
    assert!(
        m.starts_with("topo.toml:1: host h2: ")
            && m.contains("address 10.0.0.3 is host h3's too (the plan's for its place)"),
        "{m}"
    );
    // A host on the first router's address, with the default plan.
    let m = one_error(&star(
        "",
        r#"hosts = ["h1", "h2", { name = "h3", ipv4 = "198.19.255.254" }]"#,
    ));
    assert!(
        m.contains("is router r1's too (the plan's for its place)"),
        "{m}"
    );
}

#[test]
fn cpu_limits_are_kept_for_hosts_and_refused_out_of_range_or_on_routers() {
    let t = load(&star(
        "",
        r#"hosts = [{ name = "h1", cpu = 0.25 }, "h2", "h3"]"#,
    ));
    assert_eq!(t.node(t.node_id("h1").unwrap()).cpu, Some(0.25));
    assert_eq!(t.node(t.node_id("h2").unwrap()).cpu, None);
    for bad in ["0", "-1", "0.001", "2000"] {
        let m = one_error(&star(
            "",
            &format!("hosts = [{{ name = \"h1\", cpu = {bad} }}, \"h2\", \"h3\"]"),
        ));
        assert!(
            m.starts_with("topo.toml:1: host h1: ") && m.contains("out of range"),
            "{m}"
        );
    }
    for (router, key) in [
        (r#"{ name = "r1", cpu = 1 }"#, "cpu"),
        (r#"{ name = "r1", ipv4 = "198.18.0.9" }"#, "ipv4"),
    ] {
        let text = star("", HOSTS).replace(
            r#"routers = ["r1", "r2"]"#,
            &format!("routers = [{router}, \"r2\"]"),
        );
        let m = one_error(&text);
        assert!(
            m.starts_with("topo.toml:2: router r1: ")
                && m.contains(&format!("`{key}` applies to hosts only")),
            "{m}"
        );
    }
}
