//! The owner of the local socket an arriving packet will reach, asked of the kernel's socket
//! table (NETLINK_SOCK_DIAG): a queued arriving packet carries no socket when the kernel has not
//! looked one up yet (always on loopback), and the shaping daemon must know whose it is.

use crate::netlink;
use crate::nfqueue::netlink_message;
use crate::OsError;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

/// `SOCK_DIAG_BY_FAMILY`, the request of one socket (linux/sock_diag.h).
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// Where `inet_diag_msg`'s uid sits: after family, state, timer, retrans (4), the socket id
/// (48), expires, rqueue and wqueue (12).
const UID_AT: usize = 64;

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

    /// The uid owning the socket that receives a TCP (6) or UDP (17) packet from `remote` to
    /// `local`, found by the kernel's own receive lookup (a connected socket, else a listener
    /// or bound one); `None` if no socket would take it.
    pub fn receiver_uid(
        &mut self,
        proto: u8,
        local: SocketAddr,
        remote: SocketAddr,
    ) -> Result<Option<u32>, OsError> {
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
        Ok(match netlink_message(&self.buffer[..n], 0) {
            Some((SOCK_DIAG_BY_FAMILY, body, _)) => body
                .get(UID_AT..UID_AT + 4)
                .map(|b| u32::from_ne_bytes(b.try_into().expect("4 bytes"))),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effective_uid;
    use std::net::{TcpListener, TcpStream, UdpSocket};

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_receiving_socket_of_tcp_and_udp_packets_is_found_with_its_owner() {
        let mut table = SocketTable::open().unwrap();
        let me = Some(effective_uid());
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = listener.local_addr().unwrap();
        // A SYN from anywhere reaches the listener.
        assert_eq!(
            table
                .receiver_uid(6, server, addr("127.0.0.1:40000"))
                .unwrap(),
            me
        );
        // A reply to a connected client reaches the client's socket.
        let client = TcpStream::connect(server).unwrap();
        let local = client.local_addr().unwrap();
        assert_eq!(table.receiver_uid(6, local, server).unwrap(), me);
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let bound = udp.local_addr().unwrap();
        assert_eq!(
            table
                .receiver_uid(17, bound, addr("127.0.0.1:40000"))
                .unwrap(),
            me
        );
        drop((listener, client, udp));
        assert_eq!(
            table
                .receiver_uid(6, server, addr("127.0.0.1:40000"))
                .unwrap(),
            None
        );
        assert_eq!(
            table
                .receiver_uid(17, bound, addr("127.0.0.1:40000"))
                .unwrap(),
            None
        );
    }
}
