//! `AddressPlan`: which IPv4 and IPv6 addresses a run's hosts and routers get, from a base range.
//!
//! By default IPv4 comes from the benchmarking range 198.18.0.0/15 (RFC 2544), so emulated hosts
//! never collide with real networks; a topology may choose another base (`[topology] addresses`,
//! for scripts that expect Mininet's 10.0.0.0/8). IPv6 always comes from the unique-local
//! fd6e:6c00::/64.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Prefix length of every host's IPv6 address: all hosts share fd6e:6c00::/64.
pub const IPV6_PREFIX_LEN: u8 = 64;
/// The shortest IPv4 prefix a plan may have: a /8 numbers 16 million nodes, more than a live run
/// can make, and a shorter one would reach into several of the reserved ranges.
pub const MIN_IPV4_PREFIX_LEN: u8 = 8;
/// The longest IPv4 prefix a plan may have: a /30 numbers two nodes, the fewest a run has.
pub const MAX_IPV4_PREFIX_LEN: u8 = 30;

const IPV6_BASE: Ipv6Addr = Ipv6Addr::new(0xfd6e, 0x6c00, 0, 0, 0, 0, 0, 0);

/// The IPv4 ranges no plan may use, each with what it is, for messages: a host there would not
/// be reachable (loopback, link-local, multicast, "this network") or its packets would not route.
const RESERVED: [(Ipv4Addr, u8, &str); 5] = [
    (Ipv4Addr::new(0, 0, 0, 0), 8, "\"this network\" (0.0.0.0/8)"),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback (127.0.0.0/8)"),
    (
        Ipv4Addr::new(169, 254, 0, 0),
        16,
        "link-local (169.254.0.0/16)",
    ),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast (224.0.0.0/4)"),
    (
        Ipv4Addr::new(255, 255, 255, 255),
        32,
        "the limited broadcast address (255.255.255.255)",
    ),
];

/// Where hosts' and routers' addresses come from: an IPv4 network (its base address and prefix
/// length) and the fixed IPv6 /64. Host `i` gets base + i + 1; router `j` gets the top of the
/// range minus `j`, so adding a host never renumbers a router.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AddressPlan {
    base: Ipv4Addr,
    prefix_len: u8,
}

/// Why a base range cannot be a plan.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// Not written as `a.b.c.d/len`.
    #[error("{0:?} is not an IPv4 network; write it like \"10.0.0.0/8\"")]
    Syntax(String),
    /// A prefix length outside 8..=30.
    #[error(
        "prefix length /{0} is out of range; use /{MIN_IPV4_PREFIX_LEN} to /{MAX_IPV4_PREFIX_LEN}"
    )]
    PrefixLength(u8),
    /// Bits set below the prefix.
    #[error("{given} has bits set past its prefix; did you mean {network}?")]
    HostBits {
        /// As written.
        given: String,
        /// The network it lies in.
        network: String,
    },
    /// The range overlaps a reserved one.
    #[error("{network} overlaps {what}, which hosts cannot use")]
    Reserved {
        /// The range asked for.
        network: String,
        /// The reserved range, named.
        what: &'static str,
    },
}

impl AddressPlan {
    /// netloom's own plan: 198.18.0.0/15, room for 131,070 hosts and routers.
    pub const DEFAULT: AddressPlan = AddressPlan {
        base: Ipv4Addr::new(198, 18, 0, 0),
        prefix_len: 15,
    };

    /// The plan of network `base`/`prefix_len`; refused unless the prefix is 8 to 30 long, `base`
    /// is the network's first address, and the network overlaps no reserved range.
    pub fn new(base: Ipv4Addr, prefix_len: u8) -> Result<AddressPlan, AddressError> {
        if !(MIN_IPV4_PREFIX_LEN..=MAX_IPV4_PREFIX_LEN).contains(&prefix_len) {
            return Err(AddressError::PrefixLength(prefix_len));
        }
        let network = Ipv4Addr::from(u32::from(base) & mask(prefix_len));
        if network != base {
            return Err(AddressError::HostBits {
                given: format!("{base}/{prefix_len}"),
                network: format!("{network}/{prefix_len}"),
            });
        }
        let plan = AddressPlan { base, prefix_len };
        if let Some(&(_, _, what)) = RESERVED
            .iter()
            .find(|&&(net, len, _)| overlap((base, prefix_len), (net, len)))
        {
            return Err(AddressError::Reserved {
                network: plan.to_string(),
                what,
            });
        }
        Ok(plan)
    }

    /// The network's first address.
    pub fn base(&self) -> Ipv4Addr {
        self.base
    }

    /// The IPv4 prefix length every host's `nl0` gets.
    pub fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    /// How many hosts and routers together the plan numbers: the network without its network
    /// and broadcast addresses.
    pub fn capacity(&self) -> usize {
        (1usize << (32 - self.prefix_len)) - 2
    }

    /// The addresses of host `i` (0-based): base + i + 1 and fd6e:6c00::(i + 1).
    ///
    /// # Panics
    /// When `i >= capacity()`; runs are checked against `capacity` before they are numbered.
    pub fn host(&self, i: usize) -> (Ipv4Addr, Ipv6Addr) {
        assert!(i < self.capacity(), "host index {i} is beyond {self}");
        let v4 = u32::from(self.base) + i as u32 + 1;
        let v6 = u128::from(IPV6_BASE) + i as u128 + 1;
        (Ipv4Addr::from(v4), Ipv6Addr::from(v6))
    }

    /// The addresses of router `j` (0-based, in the topology's order of routers), one per router
    /// whatever its number of links: from the top of the range down (198.19.255.254 − j in the
    /// default plan) and fd6e:6c00::ff00:0:0:0 + j + 1. They meet the hosts' only when hosts and
    /// routers together outnumber `capacity()`.
    ///
    /// # Panics
    /// When `j >= capacity()`.
    pub fn router(&self, j: usize) -> (Ipv4Addr, Ipv6Addr) {
        assert!(j < self.capacity(), "router index {j} is beyond {self}");
        let v4 = u32::from(self.base) + self.capacity() as u32 - j as u32;
        let v6 = u128::from(IPV6_BASE) + (0xff00_u128 << 48) + j as u128 + 1;
        (Ipv4Addr::from(v4), Ipv6Addr::from(v6))
    }

    /// Whether `addr` is a usable address of the plan: inside the network, not its network or
    /// broadcast address.
    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        let offset = u32::from(addr).wrapping_sub(u32::from(self.base));
        offset > 0 && (offset as usize) <= self.capacity()
    }

    /// Whether `addr` is a usable host address of the IPv6 plan (inside the /64, not the
    /// subnet-router anycast address ::0).
    pub fn contains_ipv6(&self, addr: Ipv6Addr) -> bool {
        let offset = u128::from(addr).wrapping_sub(u128::from(IPV6_BASE));
        offset > 0 && offset < 1 << 64
    }

    /// Why `addr` can be no host's address, if it lies in a reserved range: that range, named.
    pub fn reserved(addr: Ipv4Addr) -> Option<&'static str> {
        RESERVED
            .iter()
            .find(|&&(net, len, _)| overlap((addr, 32), (net, len)))
            .map(|&(_, _, what)| what)
    }
}

impl Default for AddressPlan {
    fn default() -> Self {
        AddressPlan::DEFAULT
    }
}

impl fmt::Display for AddressPlan {
    /// `base/len`, as the topology file writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.base, self.prefix_len)
    }
}

impl std::str::FromStr for AddressPlan {
    type Err = AddressError;

    /// `"10.0.0.0/8"`, checked as `AddressPlan::new` checks it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let syntax = || AddressError::Syntax(s.to_string());
        let (addr, len) = s.trim().split_once('/').ok_or_else(syntax)?;
        let base: Ipv4Addr = addr.parse().map_err(|_| syntax())?;
        let len: u8 = len.parse().map_err(|_| syntax())?;
        if len > 32 {
            return Err(AddressError::PrefixLength(len));
        }
        AddressPlan::new(base, len)
    }
}

fn mask(prefix_len: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(prefix_len))
        .unwrap_or(0)
}

/// Whether two networks share an address: the shorter prefix's network contains the other's base.
fn overlap((a, a_len): (Ipv4Addr, u8), (b, b_len): (Ipv4Addr, u8)) -> bool {
    let len = a_len.min(b_len);
    u32::from(a) & mask(len) == u32::from(b) & mask(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_plan_numbers_hosts_from_one_and_routers_from_the_top() {
        let plan = AddressPlan::DEFAULT;
        assert_eq!(
            plan.host(0),
            (
                Ipv4Addr::new(198, 18, 0, 1),
                "fd6e:6c00::1".parse().unwrap()
            )
        );
        assert_eq!(plan.host(299).0, Ipv4Addr::new(198, 18, 1, 44));
        assert_eq!(plan.capacity(), 131_070);
        assert_eq!(
            plan.router(0),
            (
                Ipv4Addr::new(198, 19, 255, 254),
                "fd6e:6c00::ff00:0:0:1".parse().unwrap()
            )
        );
        let (v4, v6) = plan.router(plan.capacity() - 1);
        assert_eq!(v4, plan.host(0).0);
        assert_eq!(v6, "fd6e:6c00::ff00:0:1:fffe".parse::<Ipv6Addr>().unwrap());
        assert!(plan.contains(v4) && plan.contains_ipv6(v6));
    }

    #[test]
    fn another_base_numbers_the_same_way_inside_its_own_range() {
        let plan: AddressPlan = "10.0.0.0/8".parse().unwrap();
        assert_eq!(plan.host(1).0, Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(plan.router(0).0, Ipv4Addr::new(10, 255, 255, 254));
        assert_eq!(plan.to_string(), "10.0.0.0/8");
        let small: AddressPlan = "192.168.5.0/30".parse().unwrap();
        assert_eq!(small.capacity(), 2);
        assert_eq!(small.host(0).0, Ipv4Addr::new(192, 168, 5, 1));
        assert_eq!(small.router(0).0, Ipv4Addr::new(192, 168, 5, 2));
        assert!(!small.contains(Ipv4Addr::new(192, 168, 5, 3)));
        assert!(!small.contains(Ipv4Addr::new(192, 168, 5, 0)));
    }

    #[test]
    fn ranges_exclude_network_broadcast_and_outsiders() {
        let plan = AddressPlan::DEFAULT;
        assert!(!plan.contains(Ipv4Addr::new(198, 18, 0, 0)));
        assert!(!plan.contains(Ipv4Addr::new(198, 19, 255, 255)));
        assert!(!plan.contains(Ipv4Addr::new(198, 20, 0, 1)));
        assert!(!plan.contains(Ipv4Addr::new(10, 0, 0, 1)));
        assert!(plan.contains_ipv6("fd6e:6c00::ffff:ffff:ffff:ffff".parse().unwrap()));
        assert!(!plan.contains_ipv6("fd6e:6c00::".parse().unwrap()));
        assert!(!plan.contains_ipv6("fd6e:6c00:0:1::1".parse().unwrap()));
    }

    #[test]
    fn bad_bases_are_refused_saying_why() {
        let err = |s: &str| s.parse::<AddressPlan>().unwrap_err().to_string();
        assert!(err("10.0.0.0").contains("write it like"));
        assert!(err("10.0.0/8").contains("not an IPv4 network"));
        assert!(err("10.0.0.0/7").contains("/7 is out of range"));
        assert!(err("10.0.0.0/31").contains("/31 is out of range"));
        assert!(err("10.0.0.0/33").contains("/33 is out of range"));
        assert!(err("10.0.0.1/8").contains("did you mean 10.0.0.0/8"));
        assert!(err("127.0.0.0/8").contains("loopback (127.0.0.0/8)"));
        assert!(err("169.254.1.0/24").contains("link-local"));
        assert!(err("224.0.0.0/8").contains("multicast"));
        assert!(err("0.0.0.0/8").contains("this network"));
        assert!(err("255.255.255.0/24").contains("limited broadcast"));
        // Overlap either way: a range holding a reserved one, or inside one.
        assert!("168.0.0.0/8".parse::<AddressPlan>().is_ok());
        assert!(err("169.0.0.0/8").contains("link-local"));
        assert_eq!(
            AddressPlan::reserved(Ipv4Addr::new(127, 0, 0, 2)),
            Some("loopback (127.0.0.0/8)")
        );
        assert_eq!(AddressPlan::reserved(Ipv4Addr::new(10, 0, 0, 2)), None);
    }
}
