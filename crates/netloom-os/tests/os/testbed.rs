//! Root tests of `Testbed`: what a host gets, packets both ways through a TUN, teardown, and
//! the errors for names in use and invalid names. Each skips (saying so) without root.

use crate::common::{can_run, etc_entry_exists, netns_exists, unique, Leftovers};
use netloom_os::{
    enter_namespace, DeviceCounters, OsError, Poller, Testbed, TestbedSpec, TUN_NAME, VNET_HDR_LEN,
};
use std::io::ErrorKind;
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::unix::fs::MetadataExt;
use std::process::Command;
use std::time::{Duration, Instant};

fn spec(tag: &str, hosts: &[&str]) -> (TestbedSpec, Leftovers) {
    let spec = TestbedSpec::planned(&unique(tag), hosts.iter().copied());
    let leftovers = Leftovers(
        hosts
            .iter()
            .map(|h| netloom_os::namespace_name(&spec.name, h))
            .collect(),
    );
    (spec, leftovers)
}

/// A UDP socket bound to `addr` inside namespace `ns`, opened from a thread that entered it.
fn socket_in(ns: &str, addr: SocketAddr) -> UdpSocket {
    let ns = ns.to_string();
    std::thread::spawn(move || {
        enter_namespace(&ns).unwrap();
        let socket = UdpSocket::bind(addr).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        socket
    })
    .join()
    .unwrap()
}

/// `packet` behind a zeroed virtio_net_hdr (no offload), as a `Tun` takes it.
fn framed(packet: &[u8]) -> Vec<u8> {
    [&[0u8; VNET_HDR_LEN][..], packet].concat()
}

/// The next packet on host `token`'s TUN whose destination is `dst` (skipping the kernel's own
/// IPv6 chatter such as router solicitations), within two seconds, without its virtio_net_hdr
/// (which must be zero: offloads are off until asked for).
fn read_packet_to(testbed: &Testbed, token: u32, dst: &[u8]) -> Vec<u8> {
    let tun = &testbed.tuns()[token as usize];
    let mut poller = Poller::new().unwrap();
    poller.add(tun.fd(), token).unwrap();
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut ready = Vec::new();
    let mut buf = vec![0u8; 65536];
    loop {
        match tun.read(&mut buf) {
            Ok(n) => {
                assert_eq!(buf[..VNET_HDR_LEN], [0; VNET_HDR_LEN], "no offload");
                let packet = &buf[VNET_HDR_LEN..n];
                let dst_field = match packet[0] >> 4 {
                    4 => &packet[16..20],
                    _ => &packet[24..40],
                };
                if dst_field == dst {
                    return packet.to_vec();
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                let left = deadline.saturating_duration_since(Instant::now());
                assert!(!left.is_zero(), "no packet to {dst:?} on TUN {token}");
                poller.wait(Some(left), &mut ready).unwrap();
            }
            Err(e) => panic!("TUN read: {e}"),
        }
    }
}

#[test]
fn two_hosts_come_up_carry_packets_both_ways_and_go_away() {
    if !can_run("two_hosts_come_up_carry_packets_both_ways_and_go_away") {
        return;
    }
    let (spec, _leftovers) = spec("two", &["h1", "h2"]);
    let mut testbed = Testbed::create(&spec).unwrap();
    let (ns1, ns2) = (testbed.namespace(0), testbed.namespace(1));
    let (h1, h2) = (&spec.hosts[0], &spec.hosts[1]);

    // Addresses, prefixes, MTU, up; loopback up.
    for (ns, host) in [(&ns1, h1), (&ns2, h2)] {
        let nl0 = addr_json(ns, TUN_NAME);
        assert_eq!(nl0["mtu"], 1500, "{nl0}");
        assert!(
            nl0["flags"].as_array().unwrap().iter().any(|f| f == "UP"),
            "{nl0}"
        );
        let addrs = nl0["addr_info"].as_array().unwrap();
        let find = |family: &str, local: String, prefix: u64| {
            addrs.iter().any(|a| {
                a["family"] == family
                    && a["local"] == local.as_str()
                    && a["prefixlen"] == prefix
                    && a.get("tentative").is_none()
            })
        };
        assert!(find("inet", host.ipv4.to_string(), 15), "{nl0}");
        assert!(find("inet6", host.ipv6.to_string(), 64), "{nl0}");
        // The plan's IPv6 address is the only one: no link-local address, so no router
        // solicitations (`no_router_solicitations_reach_the_tun`).
        let inet6 = addrs.iter().filter(|a| a["family"] == "inet6").count();
        assert_eq!(inet6, 1, "{nl0}");
        let lo = addr_json(ns, "lo");
        assert!(
            lo["flags"].as_array().unwrap().iter().any(|f| f == "UP"),
            "{lo}"
        );
    }

    // Host names resolve inside every namespace, both families, through netloom and through
    // `ip netns exec` (h2's /etc/netns entry is a link to h1's directory).
    for ns in [&ns1, &ns2] {
        let getent = ["getent", "ahosts", "h2"].map(String::from);
        let ip = ["ip", "netns", "exec", ns.as_str()].map(String::from);
        let outputs = [
            netloom_os::command(ns, &getent).unwrap().output().unwrap(),
            Command::new(&ip[0])
                .args(&ip[1..])
                .args(&getent)
                .output()
                .unwrap(),
        ];
        for out in outputs {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "getent in {ns}: {text}");
            assert!(
                text.contains("198.18.0.2") && text.contains("fd6e:6c00::2"),
                "in {ns}: {text}"
            );
        }
    }

    // Into the TUN: packets written to h1's TUN reach a socket inside h1.
    let sock4 = socket_in(&ns1, SocketAddr::from((h1.ipv4, 0)));
    let dst4 = match sock4.local_addr().unwrap() {
        SocketAddr::V4(a) => a,
        other => panic!("{other}"),
    };
    let src4 = SocketAddrV4::new(h2.ipv4, 40000);
    testbed.tuns()[0]
        .write(&framed(&udp4(src4, dst4, b"into h1 v4")))
        .unwrap();
    let mut buf = [0u8; 64];
    let (n, from) = sock4.recv_from(&mut buf).unwrap();
    assert_eq!(
        (&buf[..n], from),
        (&b"into h1 v4"[..], SocketAddr::V4(src4))
    );

    let sock6 = socket_in(&ns1, SocketAddr::from((h1.ipv6, 0)));
    let dst6 = match sock6.local_addr().unwrap() {
        SocketAddr::V6(a) => a,
        other => panic!("{other}"),
    };
    let src6 = SocketAddrV6::new(h2.ipv6, 40000, 0, 0);
    testbed.tuns()[0]
        .write(&framed(&udp6(src6, dst6, b"into h1 v6")))
        .unwrap();
    let (n, from) = sock6.recv_from(&mut buf).unwrap();
    assert_eq!(
        (&buf[..n], from),
        (&b"into h1 v6"[..], SocketAddr::V6(src6))
    );

    // Out of the TUN: what h1 sends to h2 comes out of h1's TUN, for both families.
    sock4.send_to(b"to h2 v4", (h2.ipv4, 9)).unwrap();
    let packet = read_packet_to(&testbed, 0, &h2.ipv4.octets());
    assert_eq!(packet[9], 17, "UDP");
    assert!(packet.ends_with(b"to h2 v4"));
    sock6.send_to(b"to h2 v6", (h2.ipv6, 9)).unwrap();
    let packet = read_packet_to(&testbed, 0, &h2.ipv6.octets());
    assert_eq!(packet[6], 17, "UDP");
    assert!(packet.ends_with(b"to h2 v6"));

    // An empty TUN does not block.
    let tun2 = &testbed.tuns()[1];
    let err = loop {
        match tun2.read(&mut buf) {
            Ok(_) => continue,
            Err(e) => break e,
        }
    };
    assert_eq!(err.kind(), ErrorKind::WouldBlock);

    // Teardown removes namespaces, /etc/netns directories and the registry entry; twice is fine.
    let registry = netloom_os::registry_dir().join(&spec.name);
    assert!(registry.join("experiment.json").exists());
    testbed.teardown().unwrap();
    testbed.teardown().unwrap();
    assert!(testbed.tuns().is_empty());
    for ns in [&ns1, &ns2] {
        assert!(!netns_exists(ns), "{ns} left behind");
        assert!(!etc_entry_exists(ns), "/etc/netns/{ns} left behind");
    }
    assert!(!registry.exists(), "registry entry left behind");
}

#[test]
fn hosts_share_the_first_hosts_etc_directory_through_links() {
    if !can_run("hosts_share_the_first_hosts_etc_directory_through_links") {
        return;
    }
    let (spec, _leftovers) = spec("etc", &["h1", "h2", "h3", "h4"]);
    let mut testbed = Testbed::create(&spec).unwrap();
    let namespaces: Vec<String> = (0..4).map(|i| testbed.namespace(i)).collect();
    let etc = |ns: &str| std::path::Path::new("/etc/netns").join(ns);
    assert!(std::fs::symlink_metadata(etc(&namespaces[0]))
        .unwrap()
        .is_dir());
    // h2's entry is a link to h1's directory; h3's and h4's are that same link (one inode), not
    // inodes of their own.
    let link = std::fs::symlink_metadata(etc(&namespaces[1])).unwrap();
    assert!(link.file_type().is_symlink());
    assert_eq!(
        std::fs::read_link(etc(&namespaces[1])).unwrap(),
        std::path::Path::new(&namespaces[0])
    );
    for ns in &namespaces[2..] {
        let meta = std::fs::symlink_metadata(etc(ns)).unwrap();
        assert_eq!(meta.ino(), link.ino(), "{ns}");
    }
    assert_eq!(link.nlink(), 3);
    // The last host resolves names through its link, with `ip netns exec` as with netloom's.
    let out = Command::new("ip")
        .args(["netns", "exec", &namespaces[3], "getent", "ahosts", "h1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("198.18.0.1"), "{text}");
    testbed.teardown().unwrap();
    for ns in &namespaces {
        assert!(!etc_entry_exists(ns), "/etc/netns/{ns} left behind");
    }
}

#[test]
fn no_router_solicitations_reach_the_tun() {
    if !can_run("no_router_solicitations_reach_the_tun") {
        return;
    }
    let (spec, _leftovers) = spec("rs", &["h1"]);
    let testbed = Testbed::create(&spec).unwrap();
    let tun = &testbed.tuns()[0];
    let mut poller = Poller::new().unwrap();
    poller.add(tun.fd(), 0).unwrap();
    // With a link-local address Linux sends its first solicitation as soon as the device is up,
    // and again 4 s later; a second covers the first.
    let deadline = Instant::now() + Duration::from_secs(1);
    let (mut ready, mut buf) = (Vec::new(), vec![0u8; 65536]);
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match tun.read(&mut buf) {
            Ok(n) => seen.push(buf[VNET_HDR_LEN..n].to_vec()),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                poller.wait(Some(left), &mut ready).unwrap()
            }
            Err(e) => panic!("TUN read: {e}"),
        }
    }
    // IPv6, next header ICMPv6 (58), type 133: a router solicitation.
    let solicitations = seen
        .iter()
        .filter(|p| p.len() > 40 && p[0] >> 4 == 6 && p[6] == 58 && p[40] == 133)
        .count();
    assert_eq!(solicitations, 0, "{} packets read", seen.len());
}

#[test]
fn jumbo_frames_pass_whole() {
    if !can_run("jumbo_frames_pass_whole") {
        return;
    }
    let (mut spec, _leftovers) = spec("jumbo", &["a", "b"]);
    for host in &mut spec.hosts {
        host.mtu = 65535;
    }
    let testbed = Testbed::create(&spec).unwrap();
    let ns = testbed.namespace(0);
    assert_eq!(addr_json(&ns, TUN_NAME)["mtu"], 65535);
    let sock = socket_in(&ns, SocketAddr::from((spec.hosts[0].ipv4, 0)));
    let payload = vec![7u8; 60000];
    sock.send_to(&payload, (spec.hosts[1].ipv4, 9)).unwrap();
    let packet = read_packet_to(&testbed, 0, &spec.hosts[1].ipv4.octets());
    assert_eq!(
        packet.len(),
        20 + 8 + payload.len(),
        "one unfragmented packet"
    );
}

#[test]
fn device_counters_show_what_the_kernel_dropped_before_the_engine_read() {
    if !can_run("device_counters_show_what_the_kernel_dropped_before_the_engine_read") {
        return;
    }
    let (spec, _leftovers) = spec("count", &["h1", "h2"]);
    let testbed = Testbed::create(&spec).unwrap();
    let sock = socket_in(
        &testbed.namespace(0),
        SocketAddr::from((spec.hosts[0].ipv4, 0)),
    );
    // Nobody reads h1's TUN, so its queue (500 packets) overflows.
    for _ in 0..1000 {
        sock.send_to(b"x", (spec.hosts[1].ipv4, 9)).unwrap();
    }
    let counters = testbed.counter_reader().read().unwrap();
    assert_eq!(counters.len(), 2);
    let h1 = counters[0];
    assert_eq!(h1.tx_packets, 0, "{h1:?}");
    assert!(h1.tx_dropped >= 500, "{h1:?}");
    assert_eq!(counters[1], DeviceCounters::default());
    // The kernel counts a packet as sent when the engine reads it.
    let mut buf = [0u8; 2048];
    let mut read = 0;
    while testbed.tuns()[0].read(&mut buf).is_ok() {
        read += 1;
    }
    assert_eq!(read, 500, "the queue holds 500 packets");
    assert_eq!(testbed.counter_reader().read().unwrap()[0].tx_packets, 500);
}

#[test]
fn a_name_in_use_is_refused_and_the_running_experiment_survives() {
    if !can_run("a_name_in_use_is_refused_and_the_running_experiment_survives") {
        return;
    }
    let (spec, _leftovers) = spec("inuse", &["h1"]);
    let first = Testbed::create(&spec).unwrap();
    let err = Testbed::create(&spec).unwrap_err();
    assert!(
        matches!(err, OsError::InUse { pid, .. } if pid == std::process::id()),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.contains("is already running") && message.contains("--name"),
        "{message}"
    );
    assert!(netns_exists(&first.namespace(0)));
    let (record, host) = netloom_os::find_host(Some(&spec.name), "h1").unwrap();
    assert!(record.alive);
    assert_eq!(host.ns, first.namespace(0));
    let err = netloom_os::find_host(Some(&spec.name), "h9")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("has no host \"h9\"; its hosts are: h1"),
        "{err}"
    );
}

#[test]
fn invalid_names_are_refused_before_anything_is_made() {
    // Needs no root: names are checked first.
    crate::common::run_dir();
    for (testbed, host, expected) in [
        (
            "bad name",
            "h1",
            "invalid experiment name \"bad name\": ' ' is not allowed",
        ),
        ("ok", "h/1", "invalid host name \"h/1\": '/' is not allowed"),
        ("-x", "h1", "must start with a letter or a digit"),
        ("ok", "", "1 to 63 characters"),
    ] {
        let spec = TestbedSpec::planned(testbed, [host]);
        let err = Testbed::create(&spec).unwrap_err().to_string();
        assert!(err.contains(expected), "{err}");
    }
    let mut spec = TestbedSpec::planned("ok", ["h1"]);
    spec.hosts[0].ipv4 = "192.168.1.1".parse().unwrap();
    let err = Testbed::create(&spec).unwrap_err().to_string();
    assert!(err.contains("outside 198.18.0.0/15"), "{err}");
}

/// `ip -n <ns> -j addr show dev <dev>` as JSON.
fn addr_json(ns: &str, dev: &str) -> serde_json::Value {
    let out = Command::new("ip")
        .args(["-n", ns, "-j", "addr", "show", "dev", dev])
        .output()
        .expect("ip runs");
    assert!(
        out.status.success(),
        "ip -n {ns} addr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut list: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("ip -j gives JSON");
    list[0].take()
}

/// An IPv4 UDP packet (UDP checksum 0, which IPv4 allows).
fn udp4(src: std::net::SocketAddrV4, dst: std::net::SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    let total = 20 + 8 + payload.len();
    let mut p = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0];
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p.extend_from_slice(&src.ip().octets());
    p.extend_from_slice(&dst.ip().octets());
    let sum = checksum(0, &p);
    p[10..12].copy_from_slice(&sum.to_be_bytes());
    p.extend_from_slice(&src.port().to_be_bytes());
    p.extend_from_slice(&dst.port().to_be_bytes());
    p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    p
}

/// An IPv6 UDP packet with its (mandatory) checksum.
fn udp6(src: std::net::SocketAddrV6, dst: std::net::SocketAddrV6, payload: &[u8]) -> Vec<u8> {
    let len = (8 + payload.len()) as u16;
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&len.to_be_bytes());
    p.extend_from_slice(&[17, 64]);
    p.extend_from_slice(&src.ip().octets());
    p.extend_from_slice(&dst.ip().octets());
    let mut udp = Vec::new();
    udp.extend_from_slice(&src.port().to_be_bytes());
    udp.extend_from_slice(&dst.port().to_be_bytes());
    udp.extend_from_slice(&len.to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&p[8..40]);
    pseudo.extend_from_slice(&u32::from(len).to_be_bytes());
    pseudo.extend_from_slice(&[0, 0, 0, 17]);
    let sum = checksum(checksum_partial(&pseudo), &udp);
    udp[6..8].copy_from_slice(&sum.to_be_bytes());
    p.extend_from_slice(&udp);
    p
}

fn checksum_partial(data: &[u8]) -> u32 {
    data.chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum()
}

fn checksum(initial: u32, data: &[u8]) -> u16 {
    let mut sum = initial + checksum_partial(data);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The congestion control of namespace `ns`, read from inside it.
fn congestion_control_in(ns: &str) -> String {
    let ns = ns.to_string();
    std::thread::spawn(move || {
        enter_namespace(&ns).unwrap();
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap()
    })
    .join()
    .unwrap()
    .trim()
    .to_string()
}

#[test]
fn every_host_gets_the_congestion_control_asked_for_when_it_is_not_the_machines() {
    let test = "every_host_gets_the_congestion_control_asked_for_when_it_is_not_the_machines";
    if !can_run(test) {
        return;
    }
    let machine = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap();
    let other = netloom_os::available_congestion_controls()
        .unwrap()
        .into_iter()
        .find(|cc| cc != machine.trim());
    let Some(other) = other else {
        eprintln!("SKIPPED {test}: this kernel has one congestion control only");
        return;
    };
    // Enough hosts that each thread bringing them up writes through more than one private
    // procfs instance (64 writes each), so a fresh instance's first write is checked too.
    let hosts: Vec<String> = (1..=300).map(|i| format!("h{i}")).collect();
    let names: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let (mut spec, _leftovers) = spec("cc", &names);
    spec.congestion_control = other.clone();
    let testbed = Testbed::create(&spec).unwrap();
    for (i, host) in hosts.iter().enumerate() {
        assert_eq!(
            congestion_control_in(&testbed.namespace(i)),
            other,
            "{host}"
        );
    }
    // The machine's own is left as it was.
    assert_eq!(
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap(),
        machine
    );
}
