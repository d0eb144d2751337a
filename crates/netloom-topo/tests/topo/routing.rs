//! Kernel routers' routing keys: layered from built-in defaults, `[routing]` and the router's
//! own table; every bad value one clear error with file, line and router.

use crate::common::one_error;
use netloom_time::Duration;
use netloom_topo::{load_str, Format, KernelRouting, RoutingDaemon, RoutingProtocol, Topology};
use std::net::Ipv4Addr;

/// Two ASes of two kernel routers each (a1, a2 in group "west"; b1, b2 in "east"), a host on
/// a1 and on b2, a chain h1 a1 a2 b1 b2 h2; `routers` replaces the routers line, `extra` is
/// appended.
fn two_ases(routers: &str, extra: &str) -> String {
    format!(
        r#"hosts = ["h1", "h2"]
{routers}

[topology]
kernel_routers = true

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
{extra}"#
    )
}

const ROUTERS: &str = r#"routers = [{ name = "a1", group = "west" }, { name = "a2", group = "west" }, { name = "b1", group = "east" }, { name = "b2", group = "east" }]"#;

const AS_SECTION: &str = "
[routing]
protocol = \"ospf\"
asn = { west = 65001, east = 65002 }
";

fn routing(topo: &Topology, name: &str) -> Option<KernelRouting> {
    topo.node(topo.node_id(name).unwrap()).routing.clone()
}

#[test]
fn two_ases_take_their_numbers_from_their_groups() {
    let topo = load_str(&two_ases(ROUTERS, AS_SECTION), Format::Toml, "topo.toml").unwrap();
    for (name, asn) in [("a1", 65001), ("a2", 65001), ("b1", 65002), ("b2", 65002)] {
        let r = routing(&topo, name).unwrap();
        assert_eq!(
            (r.protocol, r.asn),
            (RoutingProtocol::Ospf, Some(asn)),
            "{name}"
        );
        assert_eq!(
            (r.hello, r.dead),
            (Duration::from_secs(10), Duration::from_secs(40))
        );
        assert_eq!(
            (r.daemon, r.area),
            (RoutingDaemon::Frr, Ipv4Addr::UNSPECIFIED)
        );
    }
    assert_eq!(routing(&topo, "h1"), None);
}

#[test]
fn a_router_s_own_keys_override_the_section() {
    let routers = r#"routers = [{ name = "a1", group = "west", asn = 7, routing = "bgp" }, { name = "a2", group = "west", area = 1, hello = "1s", dead = "4s" }, { name = "b1", group = "east", daemon = "bird" }, { name = "b2", kernel = false }]"#;
    let topo = load_str(&two_ases(routers, AS_SECTION), Format::Toml, "topo.toml").unwrap();
    let a1 = routing(&topo, "a1").unwrap();
    assert_eq!((a1.protocol, a1.asn), (RoutingProtocol::Bgp, Some(7)));
    let a2 = routing(&topo, "a2").unwrap();
    assert_eq!(a2.area, Ipv4Addr::new(0, 0, 0, 1));
    assert_eq!(
        (a2.hello, a2.dead),
        (Duration::from_secs(1), Duration::from_secs(4))
    );
    assert_eq!(routing(&topo, "b1").unwrap().daemon, RoutingDaemon::Bird);
    // An engine router has no routing of its own.
    assert_eq!(routing(&topo, "b2"), None);
    // Without [routing], kernel routers route statically.
    let topo = load_str(&two_ases(ROUTERS, ""), Format::Toml, "topo.toml").unwrap();
    assert_eq!(routing(&topo, "a1").unwrap(), KernelRouting::default());
}

#[test]
fn a_protocol_on_an_engine_router_is_refused() {
    let routers =
        r#"routers = [{ name = "a1", kernel = false, routing = "ospf" }, "a2", "b1", "b2"]"#;
    let m = one_error(&two_ases(routers, ""));
    assert!(
        m.starts_with("topo.toml:2: router a1: `routing` applies to kernel routers only"),
        "{m}"
    );
    assert!(m.contains("kernel = true"), "{m}");
    let text = two_ases(ROUTERS, "").replace(
        r#"hosts = ["h1", "h2"]"#,
        r#"hosts = [{ name = "h1", asn = 1 }, "h2"]"#,
    );
    let m = one_error(&text);
    assert!(
        m.contains("host h1: `asn` applies to kernel routers only"),
        "{m}"
    );
}

#[test]
fn bad_values_name_the_router_and_what_is_valid() {
    let with = |a1: &str| {
        two_ases(
            &format!(
                r#"routers = [{{ name = "a1", group = "west", {a1} }}, {{ name = "a2", group = "west" }}, {{ name = "b1", group = "east" }}, {{ name = "b2", group = "east" }}]"#
            ),
            AS_SECTION,
        )
    };
    for (keys, expected) in [
        ("routing = \"opsf\"", "routing \"opsf\" is not known (did you mean \"ospf\"?); write \"static\", \"ospf\", \"bgp\""),
        ("asn = 0", "asn 0 is out of range; AS numbers go from 1 to 4294967294"),
        ("asn = 4294967295", "asn 4294967295 is out of range"),
        ("daemon = \"quagga\"", "daemon \"quagga\" is not known"),
        ("area = \"backbone\"", "area \"backbone\" is not an OSPF area"),
        ("hello = \"500ms\"", "hello \"500ms\" is not a whole number of seconds"),
        ("hello = \"5\"", "hello \"5\" has no unit"),
        ("dead = \"5s\", hello = \"5s\"", "dead = 5s must be longer than hello = 5s"),
        ("routing = \"bgp\", daemon = \"bird\"", "BGP configurations for daemon = \"frr\" only"),
        ("config = \"no-such-file.conf\"", "config file no-such-file.conf does not exist"),
    ] {
        let m = one_error(&with(keys));
        assert!(m.starts_with("topo.toml:2: router a1: "), "{keys}: {m}");
        assert!(m.contains(expected), "{keys}: {m}");
    }
    // BGP needs an AS number; without [routing] asn, a1 has none.
    let m = one_error(&two_ases(
        r#"routers = [{ name = "a1", routing = "bgp" }, "a2", "b1", "b2"]"#,
        "",
    ));
    assert!(
        m.contains("router a1: routing = \"bgp\" needs the router's AS number"),
        "{m}"
    );
    // A group that no router is in.
    let m = one_error(&two_ases(ROUTERS, &AS_SECTION.replace("east =", "eats =")));
    assert!(
        m.contains("[routing]: no router is in group \"eats\" (did you mean \"east\"?)"),
        "{m}"
    );
    let m = one_error(&two_ases(ROUTERS, "\n[routing]\nprotocl = \"ospf\"\n"));
    assert!(m.contains("(did you mean \"protocol\"?)"), "{m}");
}

#[test]
fn config_files_are_found_beside_the_topology_file() {
    let dir = std::env::temp_dir().join(format!("netloom-topo-routing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a1.conf"), "hostname a1\n").unwrap();
    let label = dir.join("topo.toml");
    let text = two_ases(
        r#"routers = [{ name = "a1", routing = "ospf", config = "a1.conf" }, "a2", "b1", "b2"]"#,
        "",
    );
    let loaded = load_str(&text, Format::Toml, &label.display().to_string());
    std::fs::remove_dir_all(&dir).unwrap();
    let topo = loaded.unwrap();
    assert_eq!(
        routing(&topo, "a1").unwrap().config,
        Some(dir.join("a1.conf"))
    );
}
