//! Kernel routers: a network namespace per router with one TUN device per link, the router's
//! plan address on `lo` and (unnumbered, point to point) on every device, forwarding on and
//! static routes, brought up by `Testbed` (docs/live.md, "Kernel routers").

use crate::{netns, registry, OsError, Tun};
use std::ffi::CString;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::process::{Command, Stdio};

/// The longest interface name Linux accepts (IFNAMSIZ less the terminating NUL).
pub const MAX_DEVICE_NAME: usize = 15;

/// One link of a kernel router: the TUN device at its end in the router's namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInterface {
    /// The device's name: the peer's name, cut to 15 characters and suffixed `-2`, `-3`... when
    /// taken (`device_names`).
    pub device: String,
    /// The node at the other end of the link.
    pub peer: String,
    /// Whether that node is a host (else a router, engine or kernel).
    pub peer_is_host: bool,
    /// The peer's plan address, the device's IPv4 peer address.
    pub peer_ipv4: Ipv4Addr,
    /// The peer's plan address, the device's IPv6 peer address.
    pub peer_ipv6: Ipv6Addr,
    /// The device's link-local address (`link_local`), the same on every device of a router.
    pub link_local: Ipv6Addr,
    /// The device's MTU: the MTU of the link's direction away from the router.
    pub mtu: u32,
    /// The link's delay away from the router, in nanoseconds (for protocol timers and costs).
    pub delay_ns: u64,
    /// The link's bandwidth away from the router, in bits per second.
    pub bandwidth_bps: u64,
}

/// A route a kernel router gets at start: `destination` (a /32 or /128) through interface
/// number `interface` of its `KernelRouterSpec::interfaces`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticRoute {
    /// A host's or router's plan address.
    pub destination: IpAddr,
    /// Index into `KernelRouterSpec::interfaces`.
    pub interface: usize,
}

/// One kernel router: what `Testbed` brings up for it, and what routing daemons are
/// configured from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRouterSpec {
    /// The router's name, by the rules of `HostSpec::name`.
    pub name: String,
    /// Its namespace, `nl-<experiment>-<name>` (`namespace_name`).
    pub namespace: String,
    /// Its IPv4 plan address (`AddressPlan::router`), on `lo` and every device.
    pub ipv4: Ipv4Addr,
    /// Its IPv6 plan address, on `lo` and every device.
    pub ipv6: Ipv6Addr,
    /// One device per link, in the topology's link order.
    pub interfaces: Vec<KernelInterface>,
    /// Installed when the router comes up: every other host's and router's addresses, for
    /// static routing; empty when routing daemons fill the table instead.
    pub routes: Vec<StaticRoute>,
}

/// The link-local address of every device of the router whose plan address is `ipv6`: fe80::
/// with the plan address's interface identifier, so it is unique per router.
pub fn link_local(ipv6: Ipv6Addr) -> Ipv6Addr {
    let id = u128::from(ipv6) & u128::from(u64::MAX);
    Ipv6Addr::from(0xfe80_u128 << 112 | id)
}

/// Device names for links to `peers` (in order): each peer's name cut to `MAX_DEVICE_NAME`
/// characters, and when that is taken (parallel links, long names alike at the start, `lo`),
/// cut shorter and suffixed `-2`, `-3`...
pub fn device_names<'a>(peers: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut taken = vec!["lo".to_string()];
    for peer in peers {
        let cut = |s: &str, n: usize| s.chars().take(n).collect::<String>();
        let mut name = cut(peer, MAX_DEVICE_NAME);
        let mut k = 2;
        while taken.contains(&name) {
            let suffix = format!("-{k}");
            name = cut(peer, MAX_DEVICE_NAME - suffix.len()) + &suffix;
            k += 1;
        }
        taken.push(name);
    }
    taken.split_off(1)
}

/// Brings router `spec` up: its namespace (marked in the registry directory `registry`), its
/// devices and settings; returns the devices in interface order. Runs on a thread of its own,
/// which enters the namespace and ends. The namespace is left for the caller to remove, also on
/// error (`made` says whether it exists).
pub(crate) fn bring_up(
    spec: &KernelRouterSpec,
    registry: &Path,
    made: &mut bool,
) -> Result<Vec<Tun>, OsError> {
    let ns = &spec.namespace;
    let tuns = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                netns::create_and_enter(ns)?;
                registry::mark_namespace(registry, ns)?;
                devices(spec)
            })
            .join()
            .expect("bringing a router up does not panic")
    });
    *made = netns::exists(ns);
    let tuns = tuns?;
    configure(spec)?;
    Ok(tuns)
}

/// Inside the router's namespace: the settings of a router, then its TUN devices (settings
/// under `default` apply to devices made afterwards).
fn devices(spec: &KernelRouterSpec) -> Result<Vec<Tun>, OsError> {
    for (key, value) in [
        ("ipv4/ip_forward", "1"),
        ("ipv6/conf/all/forwarding", "1"),
        ("ipv4/conf/all/rp_filter", "0"),
        ("ipv4/conf/default/rp_filter", "0"),
        // Addresses are the plan's: no automatic link-local address, no duplicate detection
        // (each device has one peer, which has other addresses).
        ("ipv6/conf/default/addr_gen_mode", "1"),
        ("ipv6/conf/default/accept_dad", "0"),
        ("ipv6/conf/default/router_solicitations", "0"),
    ] {
        let path = format!("/proc/sys/net/{key}");
        std::fs::write(&path, value).map_err(|e| OsError::io(format!("write {path}"), e))?;
    }
    spec.interfaces
        .iter()
        .map(|i| {
            let name = CString::new(i.device.as_str()).map_err(|_| OsError::InvalidSpec {
                experiment: spec.namespace.clone(),
                reason: format!("device name {:?} has a NUL byte", i.device),
            })?;
            Tun::create_here(&name)
        })
        .collect()
}

/// The `ip -batch` commands that address the router and install its static routes.
fn commands(spec: &KernelRouterSpec) -> String {
    let (v4, v6) = (spec.ipv4, spec.ipv6);
    let mut text =
        format!("link set lo up\naddress add {v4}/32 dev lo\naddress add {v6}/128 dev lo nodad\n");
    for i in &spec.interfaces {
        let dev = &i.device;
        text.push_str(&format!(
            "link set {dev} mtu {mtu} up\n\
             address add {v4}/32 peer {p4}/32 dev {dev}\n\
             address add {v6}/128 peer {p6}/128 dev {dev} nodad\n\
             address add {ll}/64 dev {dev} nodad\n",
            mtu = i.mtu,
            p4 = i.peer_ipv4,
            p6 = i.peer_ipv6,
            ll = i.link_local,
        ));
    }
    for route in &spec.routes {
        let dev = &spec.interfaces[route.interface].device;
        text.push_str(&match route.destination {
            IpAddr::V4(d) => format!("route replace {d}/32 dev {dev} src {v4} proto static\n"),
            IpAddr::V6(d) => format!("route replace {d}/128 dev {dev} src {v6} proto static\n"),
        });
    }
    text
}

/// Addresses and routes, in one `ip -n <ns> -batch -` (iproute2 speaks netlink for us).
fn configure(spec: &KernelRouterSpec) -> Result<(), OsError> {
    let what = format!("configure router {} (ip -batch)", spec.name);
    let mut child = Command::new(crate::exec::ip_binary())
        .args(["-n", &spec.namespace, "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| OsError::io(format!("{what}: start ip (is iproute2 installed?)"), e))?;
    let written = child
        .stdin
        .take()
        .expect("piped")
        .write_all(commands(spec).as_bytes());
    let output = child
        .wait_with_output()
        .map_err(|e| OsError::io(what.clone(), e))?;
    written.map_err(|e| OsError::io(what.clone(), e))?;
    if !output.status.success() {
        return Err(OsError::InvalidSpec {
            experiment: spec.namespace.clone(),
            reason: format!(
                "{what} failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_fit_and_differ() {
        let long = "a-very-long-router-name";
        assert_eq!(
            device_names(["r2", "h1", "r2", long, long, "lo"]),
            [
                "r2",
                "h1",
                "r2-2",
                "a-very-long-rou",
                "a-very-long-r-2",
                "lo-2"
            ]
        );
    }

    #[test]
    fn link_local_keeps_the_plan_interface_id() {
        let (_, v6) = crate::AddressPlan::DEFAULT.router(0);
        assert_eq!(
            link_local(v6),
            "fe80::ff00:0:0:1".parse::<Ipv6Addr>().unwrap()
        );
    }

    #[test]
    fn commands_address_every_device_and_route_by_it() {
        let (ipv4, ipv6) = crate::AddressPlan::DEFAULT.router(0);
        let (peer_ipv4, peer_ipv6) = crate::AddressPlan::DEFAULT.host(0);
        let spec = KernelRouterSpec {
            name: "r1".into(),
            namespace: "nl-lab-r1".into(),
            ipv4,
            ipv6,
            interfaces: vec![KernelInterface {
                device: "h1".into(),
                peer: "h1".into(),
                peer_is_host: true,
                peer_ipv4,
                peer_ipv6,
                link_local: link_local(ipv6),
                mtu: 1500,
                delay_ns: 0,
                bandwidth_bps: 1_000_000,
            }],
            routes: vec![StaticRoute {
                destination: crate::AddressPlan::DEFAULT.host(1).0.into(),
                interface: 0,
            }],
        };
        let text = commands(&spec);
        assert!(text.contains(
            "address add 198.19.255.254/32 peer 198.18.0.1/32 dev h1\n\
             address add fd6e:6c00::ff00:0:0:1/128 peer fd6e:6c00::1/128 dev h1 nodad\n\
             address add fe80::ff00:0:0:1/64 dev h1 nodad\n"
        ));
        assert!(
            text.ends_with("route replace 198.18.0.2/32 dev h1 src 198.19.255.254 proto static\n")
        );
    }
}
