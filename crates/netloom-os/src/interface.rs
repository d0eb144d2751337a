//! Interface configuration inside the calling thread's namespace: links up, MTU, addresses.
//!
//! Plain `ioctl`s on a datagram socket opened in the namespace do most of what a host needs, and
//! one rtnetlink request the rest, so there is no `ip` process and no `/proc/sys` write per host.
//! `nl0` is a TUN device, which the kernel marks IFF_NOARP; IPv6 therefore skips duplicate
//! address detection on it, exactly as `nodad` would.

use crate::{netlink, OsError};
use std::ffi::CStr;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

/// The kernel's packet counters of one host's `nl0`, from the host's side: `tx` is what the host
/// sent into the TUN (towards the engine), `rx` what the engine wrote into it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceCounters {
    /// Packets the engine has read (the kernel counts them when they are read, not when sent).
    pub tx_packets: u64,
    /// Packets the host sent that the kernel dropped because the TUN's queue (500 packets, the
    /// device's txqueuelen) was full: the engine did not read fast enough. A physical drop.
    pub tx_dropped: u64,
    /// Packets the engine wrote.
    pub rx_packets: u64,
    /// Packets the engine wrote that the kernel dropped before the host received them (the
    /// receive `drop` column of `/proc/net/dev`).
    pub rx_dropped: u64,
}

/// Reads `dev`'s counters in the calling thread's namespace, from `/proc/thread-self/net/dev`
/// (`/proc/self/net` would show the namespace of the process's main thread).
pub(crate) fn counters(dev: &str) -> Result<DeviceCounters, OsError> {
    let path = "/proc/thread-self/net/dev";
    let text = std::fs::read_to_string(path).map_err(|e| OsError::io(format!("read {path}"), e))?;
    parse_counters(&text, dev).ok_or_else(|| {
        OsError::io(
            format!("find {dev} in {path}"),
            std::io::Error::from(std::io::ErrorKind::NotFound),
        )
    })
}

fn parse_counters(text: &str, dev: &str) -> Option<DeviceCounters> {
    let line = text
        .lines()
        .find(|l| l.trim_start().split(':').next() == Some(dev))?;
    let fields: Vec<u64> = line
        .split_once(':')?
        .1
        .split_whitespace()
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // Receive: bytes packets errs drop fifo frame compressed multicast; then transmit: bytes
    // packets errs drop ...
    Some(DeviceCounters {
        rx_packets: *fields.get(1)?,
        rx_dropped: *fields.get(3)?,
        tx_packets: *fields.get(9)?,
        tx_dropped: *fields.get(11)?,
    })
}

/// An `ifreq` naming `name`, every other field zero.
pub(crate) fn ifreq_for(name: &CStr) -> libc::ifreq {
    // SAFETY: `ifreq` is plain old data (a name array and a union of integers and sockaddrs), so
    // all-zero bytes are a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    let bytes = name.to_bytes();
    assert!(
        bytes.len() < libc::IFNAMSIZ,
        "interface names are short constants"
    );
    for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    req
}

/// Brings `lo` up and configures `dev`: MTU, the IPv4 address with its prefix, the IPv6 address
/// with its prefix, no IPv6 link-local address (`without_link_local`), then up. Call from a
/// thread inside the target namespace.
pub(crate) fn configure(
    dev: &CStr,
    mtu: u32,
    ipv4: (Ipv4Addr, u8),
    ipv6: (Ipv6Addr, u8),
) -> Result<(), OsError> {
    let inet = socket(libc::AF_INET)?;
    set_up(&inet, c"lo")?;

    let mut req = ifreq_for(dev);
    req.ifr_ifru.ifru_mtu = mtu as libc::c_int;
    ioctl(&inet, libc::SIOCSIFMTU, &mut req, || {
        format!("set MTU {mtu} on {dev:?}")
    })?;

    let mut req = ifreq_for(dev);
    req.ifr_ifru.ifru_addr = sockaddr_v4(ipv4.0);
    ioctl(&inet, libc::SIOCSIFADDR, &mut req, || {
        format!("add {} to {dev:?}", ipv4.0)
    })?;
    let mask = Ipv4Addr::from(u32::MAX.checked_shl(32 - u32::from(ipv4.1)).unwrap_or(0));
    let mut req = ifreq_for(dev);
    req.ifr_ifru.ifru_netmask = sockaddr_v4(mask);
    ioctl(&inet, libc::SIOCSIFNETMASK, &mut req, || {
        format!("set netmask /{} on {dev:?}", ipv4.1)
    })?;

    let mut req = ifreq_for(dev);
    ioctl(&inet, libc::SIOCGIFINDEX, &mut req, || {
        format!("find {dev:?}")
    })?;
    // SAFETY: SIOCGIFINDEX just filled the union's index member.
    let index = unsafe { req.ifr_ifru.ifru_ifindex };
    let inet6 = socket(libc::AF_INET6)?;
    let mut req6 = libc::in6_ifreq {
        ifr6_addr: libc::in6_addr {
            s6_addr: ipv6.0.octets(),
        },
        ifr6_prefixlen: u32::from(ipv6.1),
        ifr6_ifindex: index,
    };
    ioctl(&inet6, libc::SIOCSIFADDR, &mut req6, || {
        format!("add {} to {dev:?}", ipv6.0)
    })?;
    without_link_local(index)
        .map_err(|e| OsError::io(format!("turn off IPv6 link-local addresses on {dev:?}"), e))?;

    set_up(&inet, dev)
}

/// `IFLA_AF_SPEC` of linux/if_link.h: per-family settings of a link.
const IFLA_AF_SPEC: u16 = 26;
/// `IFLA_INET6_ADDR_GEN_MODE` of linux/if_link.h, inside `IFLA_AF_SPEC`'s `AF_INET6`.
const IFLA_INET6_ADDR_GEN_MODE: u16 = 8;
/// `IN6_ADDR_GEN_MODE_NONE` of linux/if_link.h: the kernel makes no address of its own.
const IN6_ADDR_GEN_MODE_NONE: u8 = 1;

/// Tells the kernel (rtnetlink, `ip link set DEV addrgenmode none`) to make no IPv6 link-local
/// address on device `index` when it comes up. With one, the kernel would send router
/// solicitations on `nl0` for ever (no router answers; each reaches the driver as a packet for an
/// unknown address). The sysctl that stops them instead, `router_solicitations`, costs a lookup
/// of `/proc/sys/net` that grows with every namespace on the machine (docs/performance.md,
/// "10,000 hosts"); this request does not. Kernel routers' devices have no automatic link-local
/// address either.
fn without_link_local(index: libc::c_int) -> std::io::Result<()> {
    let fd = netlink::socket(libc::NETLINK_ROUTE, 0)?;
    let mut m = Vec::with_capacity(64);
    m.extend_from_slice(&0u32.to_ne_bytes()); // length, set below
    m.extend_from_slice(&libc::RTM_SETLINK.to_ne_bytes());
    m.extend_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16).to_ne_bytes());
    // Sequence number, then port id (0: the kernel's).
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    // struct ifinfomsg: family, padding, device type, index, flags, flags to change.
    m.extend_from_slice(&[libc::AF_UNSPEC as u8, 0, 0, 0]);
    m.extend_from_slice(&index.to_ne_bytes());
    m.extend_from_slice(&[0; 8]);
    netlink::put_nested(&mut m, IFLA_AF_SPEC, |m| {
        netlink::put_nested(m, libc::AF_INET6 as u16, |m| {
            netlink::put_attr(m, IFLA_INET6_ADDR_GEN_MODE, &[IN6_ADDR_GEN_MODE_NONE]);
        });
    });
    netlink::set_length(&mut m, 0);
    netlink::send(fd.as_fd(), &m)?;
    let mut buffer = [0u8; 1024];
    loop {
        let n = netlink::recv(fd.as_fd(), &mut buffer)?;
        let mut at = 0;
        while let Some((kind, body, next)) = netlink::message(&buffer[..n], at) {
            if let Some(verdict) = netlink::acknowledgement(kind, body) {
                return verdict;
            }
            at = next;
        }
    }
}

fn set_up(sock: &OwnedFd, dev: &CStr) -> Result<(), OsError> {
    let mut req = ifreq_for(dev);
    ioctl(sock, libc::SIOCGIFFLAGS, &mut req, || {
        format!("read flags of {dev:?}")
    })?;
    // SAFETY: SIOCGIFFLAGS just filled the union's flags member.
    let flags = unsafe { req.ifr_ifru.ifru_flags };
    req.ifr_ifru.ifru_flags = flags | (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    ioctl(sock, libc::SIOCSIFFLAGS, &mut req, || {
        format!("bring {dev:?} up")
    })
}

fn socket(family: libc::c_int) -> Result<OwnedFd, OsError> {
    // SAFETY: socket has no memory preconditions.
    let raw = unsafe { libc::socket(family, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(OsError::last("open a socket for interface configuration"));
    }
    // SAFETY: `raw` was just returned by socket and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Runs one interface `ioctl` whose argument is `*arg`.
fn ioctl<T>(
    sock: &OwnedFd,
    request: libc::Ioctl,
    arg: &mut T,
    what: impl FnOnce() -> String,
) -> Result<(), OsError> {
    // SAFETY: every request used here reads or writes exactly the structure its callers pass
    // (`ifreq`, or `in6_ifreq` for SIOCSIFADDR on an AF_INET6 socket), which outlives the call.
    if unsafe { libc::ioctl(sock.as_raw_fd(), request, arg as *mut T) } < 0 {
        return Err(OsError::last(what()));
    }
    Ok(())
}

fn sockaddr_v4(addr: Ipv4Addr) -> libc::sockaddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(addr).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: `sockaddr_in` and `sockaddr` have the same size (16 bytes) and the kernel reads the
    // union member as a `sockaddr_in` when the family is AF_INET.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_come_from_the_right_columns() {
        let text = "Inter-|   Receive                                                |  Transmit\n \
             face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
             lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0\n   \
             nl0:    2800      10    0    1    0     0          0         0    56000     200    0   77    0     0       0          0\n";
        let c = parse_counters(text, "nl0").unwrap();
        assert_eq!(
            c,
            DeviceCounters {
                rx_packets: 10,
                rx_dropped: 1,
                tx_packets: 200,
                tx_dropped: 77
            }
        );
        assert!(parse_counters(text, "nl1").is_none());
    }
}
