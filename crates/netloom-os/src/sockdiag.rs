//! The local socket a packet belongs to (its owner, inode and cgroup v2), asked of the kernel's
//! socket table (NETLINK_SOCK_DIAG): a queued arriving packet carries no socket when the kernel
//! has not looked one up yet (always on loopback), and no queued packet carries its cgroup.

use crate::netlink;
use crate::OsError;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

/// `SOCK_DIAG_BY_FAMILY`, the request of one socket (linux/sock_diag.h).
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// Where `inet_diag_msg`'s uid sits: after family, state, timer, retrans (4), the socket id
/// (48), expires, rqueue and wqueue (12).
const UID_AT: usize = 64;
/// Where its inode sits, after the uid; the attributes start after it (`inet_diag_msg` is 72).
const INODE_AT: usize = 68;
const ATTRS_AT: usize = 72;
/// The attribute carrying the socket's cgroup v2 id (linux/inet_diag.h, since Linux 5.7).
const INET_DIAG_CGROUP_ID: u16 = 21;

/// What the kernel's socket table says of a socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SocketOwner {
    /// The uid that owns it.
    pub uid: u32,
    /// Its inode in sockfs (`socket:[INODE]` in `/proc/PID/fd`).
    pub inode: u32,
    /// The id of its cgroup v2 (the inode of the cgroup's directory), when the kernel says it.
    pub cgroup: Option<u64>,
}

/// A sock_diag netlink socket.
#[derive(Debug)]
pub struct SocketTable {
    fd: OwnedFd,
    message: Vec<u8>,
    buffer: Vec<u8>,
}

impl SocketTable {
    /// A blocking sock_diag socket (no privilege needed).
    pub fn open() -> Result<SocketTable, OsError> {
        let fd = netlink::socket(libc::NETLINK_SOCK_DIAG, 0)
            .map_err(|e| OsError::io("open a sock_diag socket", e))?;
        Ok(SocketTable {
            fd,
            message: Vec::with_capacity(72),
            buffer: vec![0; 8192],
        })
    }

    /// The socket of this machine that a TCP (6) or UDP (17) packet between `local` and
    /// `remote` belongs to, found by the kernel's own receive lookup (a connected socket, else
    /// a listener or bound one): the receiver of an arriving packet, the sender of a leaving one
    /// (its reply would reach it); `None` if no socket would take it.
    pub fn lookup(
        &mut self,
        proto: u8,
        local: SocketAddr,
        remote: SocketAddr,
    ) -> Result<Option<SocketOwner>, OsError> {
        let family = match local.ip() {
            IpAddr::V4(_) => libc::AF_INET,
            IpAddr::V6(_) => libc::AF_INET6,
        } as u8;
        // TCP's lookup reads the id as (local, remote), UDP's as (remote, local): the kernel
        // keeps UDP's historical swap (udp_dump_one).
        let (src, dst) = match proto {
            17 => (remote, local),
            _ => (local, remote),
        };
        let m = &mut self.message;
        m.clear();
        m.extend_from_slice(&72u32.to_ne_bytes());
        m.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        m.extend_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
        m.extend_from_slice(&[0; 8]); // sequence and port id
        m.extend_from_slice(&[family, proto, 0, 0]);
        m.extend_from_slice(&u32::MAX.to_ne_bytes()); // every state
        m.extend_from_slice(&src.port().to_be_bytes());
        m.extend_from_slice(&dst.port().to_be_bytes());
        for addr in [src.ip(), dst.ip()] {
            match addr {
                IpAddr::V4(a) => {
                    m.extend_from_slice(&a.octets());
                    m.extend_from_slice(&[0; 12]);
                }
                IpAddr::V6(a) => m.extend_from_slice(&a.octets()),
            }
        }
        m.extend_from_slice(&0u32.to_ne_bytes()); // any interface
        m.extend_from_slice(&[0xff; 8]); // INET_DIAG_NOCOOKIE
                                         // SAFETY: `m` is a live buffer of `m.len()` bytes.
        let sent = unsafe { libc::send(self.fd.as_raw_fd(), m.as_ptr().cast(), m.len(), 0) };
        if sent < 0 {
            return Err(OsError::last("ask sock_diag for a socket"));
        }
        let n = netlink::recv(self.fd.as_fd(), &mut self.buffer)
            .map_err(|e| OsError::io("read sock_diag's answer", e))?;
        // One message: the socket, or an error (ENOENT: no socket takes such a packet).
        Ok(match netlink::message(&self.buffer[..n], 0) {
            Some((SOCK_DIAG_BY_FAMILY, body, _)) => parse_socket(body),
            _ => None,
        })
    }
}

/// An `inet_diag_msg` and its attributes → the socket's owner, inode and cgroup.
fn parse_socket(body: &[u8]) -> Option<SocketOwner> {
    let u32_at = |at: usize| {
        body.get(at..at + 4)
            .map(|b| u32::from_ne_bytes(b.try_into().expect("4 bytes")))
    };
    let mut cgroup = None;
    let mut attrs = body.get(ATTRS_AT..).unwrap_or(&[]);
    while attrs.len() >= 4 {
        let len = usize::from(u16::from_ne_bytes([attrs[0], attrs[1]]));
        let kind = u16::from_ne_bytes([attrs[2], attrs[3]]);
        if kind == INET_DIAG_CGROUP_ID {
            cgroup = attrs
                .get(4..12)
                .map(|v| u64::from_ne_bytes(v.try_into().expect("8 bytes")));
        }
        attrs = attrs.get(len.next_multiple_of(4).max(4)..).unwrap_or(&[]);
    }
    Some(SocketOwner {
        uid: u32_at(UID_AT)?,
        inode: u32_at(INODE_AT)?,
        cgroup,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effective_uid;
    use std::net::{TcpListener, TcpStream, UdpSocket};

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    /// The uid of the socket `lookup` finds.
    fn uid(
        table: &mut SocketTable,
        proto: u8,
        local: SocketAddr,
        remote: SocketAddr,
    ) -> Option<u32> {
        table.lookup(proto, local, remote).unwrap().map(|s| s.uid)
    }

    #[test]
    fn the_receiving_socket_of_tcp_and_udp_packets_is_found_with_its_owner() {
        let mut table = SocketTable::open().unwrap();
        let me = Some(effective_uid());
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = listener.local_addr().unwrap();
        // A SYN from anywhere reaches the listener.
        assert_eq!(uid(&mut table, 6, server, addr("127.0.0.1:40000")), me);
        // A reply to a connected client reaches the client's socket.
        let client = TcpStream::connect(server).unwrap();
        let local = client.local_addr().unwrap();
        assert_eq!(uid(&mut table, 6, local, server), me);
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let bound = udp.local_addr().unwrap();
        assert_eq!(uid(&mut table, 17, bound, addr("127.0.0.1:40000")), me);
        drop((listener, client, udp));
        assert_eq!(uid(&mut table, 6, server, addr("127.0.0.1:40000")), None);
        assert_eq!(uid(&mut table, 17, bound, addr("127.0.0.1:40000")), None);
    }

    #[test]
    fn a_socket_comes_with_its_inode_and_the_id_of_its_cgroup_v2() {
        let (Some(mount), Some(path)) = (crate::cgroup2_mount(), crate::cgroup_of("self")) else {
            eprintln!("skipped: no cgroup v2 here");
            return;
        };
        let mut table = SocketTable::open().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = listener.local_addr().unwrap();
        let found = table
            .lookup(6, server, addr("127.0.0.1:40000"))
            .unwrap()
            .expect("the listener");
        // A cgroup's id is its directory's inode in cgroup2.
        let dir = mount.join(path.trim_start_matches('/'));
        let id = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&dir).unwrap());
        assert_eq!(found.cgroup, Some(id), "{}", dir.display());
        let fd = std::os::fd::AsRawFd::as_raw_fd(&listener);
        let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap();
        assert_eq!(link.to_string_lossy(), format!("socket:[{}]", found.inode));
    }
}
