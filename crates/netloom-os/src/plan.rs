//! The address plan and the naming of namespaces: which addresses hosts get, which names are valid.
//!
//! IPv4 comes from the benchmarking range 198.18.0.0/15 (RFC 2544) and IPv6 from the unique-local
//! fd6e:6c00::/64, so emulated hosts never collide with real networks.

use crate::OsError;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Prefix length of every host's IPv4 address: all hosts share 198.18.0.0/15.
pub const IPV4_PREFIX_LEN: u8 = 15;
/// Prefix length of every host's IPv6 address: all hosts share fd6e:6c00::/64.
pub const IPV6_PREFIX_LEN: u8 = 64;
/// The MTU of `nl0` unless the experiment says otherwise.
pub const DEFAULT_MTU: u32 = 1500;
/// The smallest MTU allowed: IPv6 needs 1280 on every link.
pub const MIN_MTU: u32 = 1280;
/// The largest MTU allowed: an IPv4 or IPv6 packet without jumbogram options.
pub const MAX_MTU: u32 = 65535;
/// How many hosts the plan can number: the /15 without its network and broadcast addresses.
pub const MAX_HOSTS: usize = (1 << (32 - IPV4_PREFIX_LEN)) - 2;

const IPV4_BASE: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 0);
const IPV6_BASE: Ipv6Addr = Ipv6Addr::new(0xfd6e, 0x6c00, 0, 0, 0, 0, 0, 0);
const NAME_MAX_LEN: usize = 63;

/// The addresses of host `i` (0-based): 198.18.0.0 + i + 1 and fd6e:6c00::(i + 1).
///
/// # Panics
/// When `i >= MAX_HOSTS`; `Testbed::create` rejects such experiments before numbering them.
pub fn address_plan(i: usize) -> (Ipv4Addr, Ipv6Addr) {
    assert!(i < MAX_HOSTS, "host index {i} is beyond the address plan");
    let v4 = u32::from(IPV4_BASE) + i as u32 + 1;
    let v6 = u128::from(IPV6_BASE) + i as u128 + 1;
    (Ipv4Addr::from(v4), Ipv6Addr::from(v6))
}

/// The addresses of router `j` (0-based, in the topology's order of routers), one per router
/// whatever its number of links: from the top of the plan down, 198.19.255.254 − j and
/// fd6e:6c00::ff00:0:0:0 + j + 1, so adding a host never renumbers a router. They meet the hosts'
/// only when hosts and routers together outnumber `MAX_HOSTS` (`TestbedSpec` refuses that).
///
/// # Panics
/// When `j >= MAX_HOSTS`.
pub fn router_address(j: usize) -> (Ipv4Addr, Ipv6Addr) {
    assert!(j < MAX_HOSTS, "router index {j} is beyond the address plan");
    let v4 = u32::from(IPV4_BASE) + MAX_HOSTS as u32 - j as u32;
    let v6 = u128::from(IPV6_BASE) + (0xff00_u128 << 48) + j as u128 + 1;
    (Ipv4Addr::from(v4), Ipv6Addr::from(v6))
}

/// The network namespace of `host` in `experiment`: `nl-<experiment>-<host>`. The names are
/// not checked here; `check_experiment_name` and `check_host_name` do that.
pub fn namespace_name(experiment: &str, host: &str) -> String {
    format!("nl-{experiment}-{host}")
}

/// Checks an experiment name: 1 to 63 characters of `[A-Za-z0-9_.-]`, starting with a letter or
/// digit (it becomes part of namespace and directory names and of command lines).
pub fn check_experiment_name(name: &str) -> Result<(), OsError> {
    check_name("experiment", name)
}

/// Checks a host name like an experiment name; it must also not look like an IPv4 address, since
/// it is written into `/etc/hosts`.
pub fn check_host_name(name: &str) -> Result<(), OsError> {
    check_name("host", name)?;
    if name.parse::<Ipv4Addr>().is_ok() || name.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(invalid("host", name, "a host name must not be a number or an address, because it is resolved through /etc/hosts"));
    }
    Ok(())
}

fn check_name(kind: &'static str, name: &str) -> Result<(), OsError> {
    if name.is_empty() || name.len() > NAME_MAX_LEN {
        return Err(invalid(
            kind,
            name,
            &format!("it must have 1 to {NAME_MAX_LEN} characters"),
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        return Err(invalid(
            kind,
            name,
            &format!("{c:?} is not allowed; use letters, digits, '_', '.' and '-'"),
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(invalid(
            kind,
            name,
            "it must start with a letter or a digit",
        ));
    }
    Ok(())
}

fn invalid(kind: &'static str, name: &str, reason: &str) -> OsError {
    OsError::InvalidName {
        kind,
        name: name.to_string(),
        reason: reason.to_string(),
    }
}

/// Whether `addr` is a usable host address of the IPv4 plan (inside the /15, not its network or
/// broadcast address).
pub(crate) fn is_plan_ipv4(addr: Ipv4Addr) -> bool {
    let offset = u32::from(addr).wrapping_sub(u32::from(IPV4_BASE));
    offset > 0 && (offset as usize) <= MAX_HOSTS
}

/// Whether `addr` is a usable host address of the IPv6 plan (inside the /64, not the
/// subnet-router anycast address ::0).
pub(crate) fn is_plan_ipv6(addr: Ipv6Addr) -> bool {
    let offset = u128::from(addr).wrapping_sub(u128::from(IPV6_BASE));
    offset > 0 && offset < 1 << 64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routers_are_numbered_from_the_top_of_the_plan() {
        assert_eq!(
            router_address(0),
            (
                Ipv4Addr::new(198, 19, 255, 254),
                "fd6e:6c00::ff00:0:0:1".parse().unwrap()
            )
        );
        let (v4, v6) = router_address(MAX_HOSTS - 1);
        assert_eq!(
            (v4, v6),
            (
                address_plan(0).0,
                "fd6e:6c00::ff00:0:1:fffe".parse().unwrap()
            )
        );
        assert!(is_plan_ipv4(v4) && is_plan_ipv6(v6));
    }

    #[test]
    fn plan_numbers_hosts_from_one() {
        assert_eq!(
            address_plan(0),
            (
                Ipv4Addr::new(198, 18, 0, 1),
                "fd6e:6c00::1".parse().unwrap()
            )
        );
        assert_eq!(
            address_plan(299),
            (
                Ipv4Addr::new(198, 18, 1, 44),
                "fd6e:6c00::12c".parse().unwrap()
            )
        );
        let (last, _) = address_plan(MAX_HOSTS - 1);
        assert_eq!(last, Ipv4Addr::new(198, 19, 255, 254));
        assert!(is_plan_ipv4(last));
    }

    #[test]
    fn plan_ranges_exclude_network_broadcast_and_outsiders() {
        assert!(!is_plan_ipv4(Ipv4Addr::new(198, 18, 0, 0)));
        assert!(!is_plan_ipv4(Ipv4Addr::new(198, 19, 255, 255)));
        assert!(!is_plan_ipv4(Ipv4Addr::new(198, 20, 0, 1)));
        assert!(!is_plan_ipv4(Ipv4Addr::new(10, 0, 0, 1)));
        assert!(is_plan_ipv6(
            "fd6e:6c00::ffff:ffff:ffff:ffff".parse().unwrap()
        ));
        assert!(!is_plan_ipv6("fd6e:6c00::".parse().unwrap()));
        assert!(!is_plan_ipv6("fd6e:6c00:0:1::1".parse().unwrap()));
        assert!(!is_plan_ipv6("2001:db8::1".parse().unwrap()));
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(namespace_name("lab", "h1"), "nl-lab-h1");
        for good in ["h1", "core.r-2", "A_b", "1x"] {
            assert!(check_host_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "-x",
            ".",
            "..",
            "a b",
            "a/b",
            "héllo",
            "12",
            "1.2.3.4",
            &"x".repeat(64),
        ] {
            let err = check_host_name(bad).unwrap_err().to_string();
            assert!(err.starts_with("invalid host name"), "{bad}: {err}");
        }
        assert!(check_experiment_name("dumbbell-2").is_ok());
        assert!(check_experiment_name("a;rm").is_err());
    }
}
