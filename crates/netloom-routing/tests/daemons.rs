//! Live: routing daemons in namespaces joined by veth pairs, addressed as netloom's kernel
//! routers are, learn each other's addresses from the configurations netloom generates, answer
//! a plain `vtysh` run under their router's socket mount, and leave nothing running when
//! stopped. Needs root and FRR (BIRD for its test); each test skips, saying so, without them.

mod common;

use common::{address, can_run, chain, Lab};
use netloom_routing::{check_installation, socket_mount, RouterDaemons};
use netloom_time::Duration;
use netloom_topo::{
    KernelRouting as Routing, RoutingDaemon as Daemon, RoutingProtocol as Protocol,
};

/// FRR's fast hellos: 1 s, a neighbour dead after 4 s.
fn fast(protocol: Protocol, daemon: Daemon, asn: Option<u32>) -> Routing {
    Routing {
        protocol,
        daemon,
        asn,
        hello: Duration::from_secs(1),
        dead: Duration::from_secs(4),
        ..Routing::default()
    }
}

fn ready(test: &str, daemon: Daemon) -> bool {
    if !can_run(test) {
        return false;
    }
    if let Err(e) = check_installation("any", daemon) {
        eprintln!("SKIPPED {test}: {e}");
        return false;
    }
    true
}

/// Starts every router's daemons, each in `<lab dir>/<router>`.
fn start(lab: &Lab, specs: &[netloom_routing::RouterSpec]) -> Vec<RouterDaemons> {
    specs
        .iter()
        .map(|spec| RouterDaemons::start(spec, &lab.dir.join(&spec.name)).unwrap())
        .collect()
}

/// `ping` from the lab's host to `target`: whether one reply came back.
fn ping(lab: &Lab, target: &str) -> bool {
    std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            &lab.ns("h"),
            "ping",
            "-c",
            "1",
            "-W",
            "1",
            target,
        ])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn ospf_carries_host_and_router_addresses_along_a_chain() {
    if !ready(
        "ospf_carries_host_and_router_addresses_along_a_chain",
        Daemon::Frr,
    ) {
        return;
    }
    let routing = |_| fast(Protocol::Ospf, Daemon::Frr, None);
    let (lab, specs) = chain("o", (0..3).map(routing).collect());
    let mut daemons = start(&lab, &specs);
    assert_eq!(daemons[1].programs(), ["zebra", "ospfd", "ospf6d"]);

    // The host's address reaches the far router through OSPFv2 and OSPFv3 (redistributed as
    // connected at r0); the far router's own address comes back.
    let (host4, host6) = netloom_os::AddressPlan::DEFAULT.host(0);
    let learned = Lab::wait(30, || {
        lab.has_route("r2", false, &format!("{host4}/32"), "ospf")
            && lab.has_route("r2", true, &format!("{host6}/128"), "ospf")
    });
    assert!(learned, "r2 never learned h's addresses through OSPF");
    let (r2_v4, r2_v6) = address(2);
    assert!(
        Lab::wait(10, || ping(&lab, &r2_v4.to_string())),
        "h cannot reach r2:\n{}",
        lab.routes()
    );
    assert!(
        Lab::wait(10, || ping(&lab, &r2_v6.to_string())),
        "h cannot reach r2 over IPv6"
    );

    // A plain vtysh under r1's socket mount talks to r1's daemons: both neighbours are Full.
    let (source, target) = socket_mount(daemons[1].dir()).expect("r1 runs FRR");
    let out = netloom_os::command_with_bind(
        &lab.ns("r1"),
        &["vtysh".into(), "-c".into(), "show ip ospf neighbor".into()],
        &source,
        target,
    )
    .unwrap()
    .output()
    .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(said.matches("Full").count(), 2, "{said}");
    assert!(said.contains(&address(0).0.to_string()) && said.contains(&r2_v4.to_string()));

    // Stopping leaves no process in the namespace and the logs in the router's directory.
    let r1_dir = daemons[1].dir().to_path_buf();
    daemons[1].stop(Duration::from_secs(2));
    assert!(
        Lab::wait(2, || lab.pids("r1").is_empty()),
        "left running: {:?}",
        lab.pids("r1")
    );
    for log in ["zebra.log", "ospfd.log", "ospf6d.log", "vtysh.log"] {
        assert!(
            r1_dir.join(log).is_file(),
            "{log} missing from {}",
            r1_dir.display()
        );
    }
    // And r1's going makes r0 lose r2 once the dead interval has passed.
    let (r2_v4, _) = address(2);
    assert!(Lab::wait(10, || !lab.has_route(
        "r0",
        false,
        &format!("{r2_v4}/32"),
        "ospf"
    )));
}

#[test]
fn ebgp_joins_two_ases_with_ospf_inside() {
    if !ready("ebgp_joins_two_ases_with_ospf_inside", Daemon::Frr) {
        return;
    }
    // r0 and r1 in AS 65001 (OSPF between them), r2 in AS 65002; r1–r2 is eBGP.
    let routings = vec![
        fast(Protocol::Ospf, Daemon::Frr, Some(65001)),
        fast(Protocol::Ospf, Daemon::Frr, Some(65001)),
        fast(Protocol::Bgp, Daemon::Frr, Some(65002)),
    ];
    let (lab, specs) = chain("b", routings);
    let daemons = start(&lab, &specs);
    assert_eq!(daemons[1].programs(), ["zebra", "ospfd", "ospf6d", "bgpd"]);
    assert_eq!(daemons[2].programs(), ["zebra", "bgpd"]);
    let (host4, host6) = netloom_os::AddressPlan::DEFAULT.host(0);
    let (r2_v4, r2_v6) = address(2);
    // The host's addresses cross OSPF then eBGP; r2's come back over eBGP then OSPF (as
    // externals redistributed at the border).
    let exchanged = Lab::wait(60, || {
        lab.has_route("r2", false, &format!("{host4}/32"), "bgp")
            && lab.has_route("r2", true, &format!("{host6}/128"), "bgp")
            && lab.has_route("r0", false, &format!("{r2_v4}/32"), "ospf")
            && lab.has_route("r0", true, &format!("{r2_v6}/128"), "ospf")
    });
    assert!(exchanged, "routes were not exchanged between the ASes");
    assert!(
        Lab::wait(10, || ping(&lab, &r2_v4.to_string())),
        "h cannot reach AS 65002"
    );
    // r1 does not hand AS 65002's routes back to it as AS 65001's own.
    assert!(!lab.has_route("r2", false, &format!("{r2_v4}/32"), "bgp"));
}

#[test]
fn bird_runs_ospf_along_a_chain() {
    if !ready("bird_runs_ospf_along_a_chain", Daemon::Bird) {
        return;
    }
    let routing = |_| fast(Protocol::Ospf, Daemon::Bird, None);
    let (lab, specs) = chain("i", (0..3).map(routing).collect());
    let daemons = start(&lab, &specs);
    assert_eq!(daemons[0].programs(), ["bird"]);
    let (host4, host6) = netloom_os::AddressPlan::DEFAULT.host(0);
    let learned = Lab::wait(30, || {
        lab.has_route("r2", false, &format!("{host4}/32"), "bird")
            && lab.has_route("r2", true, &format!("{host6}/128"), "bird")
    });
    assert!(learned, "r2 never learned h's addresses from BIRD");
    assert!(Lab::wait(10, || ping(&lab, &address(2).0.to_string())));
}
