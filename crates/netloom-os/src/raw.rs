//! `RawSender`: sends whole IP packets, header included, as they are (`IPPROTO_RAW`), each
//! carrying a socket mark, so `netloom shape` can put a pipe's duplicate of a held packet on
//! the wire without netloom's own rules (which skip that mark) queueing it again.

use crate::OsError;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A raw IPv4 and a raw IPv6 socket, both marked.
#[derive(Debug)]
pub struct RawSender {
    v4: OwnedFd,
    v6: OwnedFd,
}

impl RawSender {
    /// Raw sockets for both families whose packets carry `mark` (`SO_MARK`). Needs
    /// CAP_NET_RAW and CAP_NET_ADMIN (for the mark).
    pub fn open(mark: u32) -> Result<RawSender, OsError> {
        let open = |family| -> Result<OwnedFd, OsError> {
            // IPPROTO_RAW implies the header is included (IP_HDRINCL; for IPv6 too, since
            // Linux 2.6): the packet goes out as given, source address and all.
            // SAFETY: plain socket(2); the descriptor is owned from here on.
            let fd = unsafe {
                libc::socket(
                    family,
                    libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                    libc::IPPROTO_RAW,
                )
            };
            if fd < 0 {
                return Err(OsError::last("open a raw IP socket"));
            }
            // SAFETY: `fd` was just opened and is owned by nothing else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            // SAFETY: `mark` is a live u32 of the size given.
            let rc = unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_MARK,
                    (&mark as *const u32).cast(),
                    std::mem::size_of::<u32>() as libc::socklen_t,
                )
            };
            if rc != 0 {
                return Err(OsError::last("mark a raw IP socket (SO_MARK)"));
            }
            Ok(fd)
        };
        Ok(RawSender {
            v4: open(libc::AF_INET)?,
            v6: open(libc::AF_INET6)?,
        })
    }

    /// Sends `packet`, a whole IPv4 or IPv6 packet from its header on, to its destination
    /// address, without waiting (a full socket buffer is an error, not a wait). The kernel
    /// routes it by that address; an IPv4 header's checksum is computed again.
    pub fn send(&self, packet: &[u8]) -> Result<(), OsError> {
        let what = "send a duplicate packet";
        let rc = match packet.first().map(|b| b >> 4) {
            Some(4) if packet.len() >= 20 => {
                let dst = Ipv4Addr::new(packet[16], packet[17], packet[18], packet[19]);
                // SAFETY: an all-zero sockaddr_in is valid; its fields are set below.
                let mut addr: libc::sockaddr_in = unsafe { std::mem::zeroed() };
                addr.sin_family = libc::AF_INET as libc::sa_family_t;
                addr.sin_addr.s_addr = u32::from(dst).to_be();
                // SAFETY: `packet` and `addr` are live for the call, of the sizes given.
                unsafe {
                    libc::sendto(
                        self.v4.as_raw_fd(),
                        packet.as_ptr().cast(),
                        packet.len(),
                        libc::MSG_DONTWAIT,
                        (&addr as *const libc::sockaddr_in).cast(),
                        std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                    )
                }
            }
            Some(6) if packet.len() >= 40 => {
                let octets: [u8; 16] = packet[24..40].try_into().expect("16 bytes");
                // SAFETY: an all-zero sockaddr_in6 is valid; its fields are set below.
                let mut addr: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
                addr.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                addr.sin6_addr.s6_addr = octets;
                // SAFETY: `packet` and `addr` are live for the call, of the sizes given.
                unsafe {
                    libc::sendto(
                        self.v6.as_raw_fd(),
                        packet.as_ptr().cast(),
                        packet.len(),
                        libc::MSG_DONTWAIT,
                        (&addr as *const libc::sockaddr_in6).cast(),
                        std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
                    )
                }
            }
            _ => {
                return Err(OsError::io(
                    what,
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "not a whole IPv4 or IPv6 packet",
                    ),
                ))
            }
        };
        if rc < 0 {
            return Err(OsError::last(what));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    /// A UDP datagram from `src` to `dst`'s port, with a zero UDP checksum (none, for IPv4).
    fn udp4(src: Ipv4Addr, dst: Ipv4Addr, port: u16, payload: &[u8]) -> Vec<u8> {
        let total = (28 + payload.len()) as u16;
        let mut p = vec![0x45, 0];
        p.extend_from_slice(&total.to_be_bytes());
        p.extend_from_slice(&[0, 0, 0, 0, 64, 17, 0, 0]);
        p.extend_from_slice(&src.octets());
        p.extend_from_slice(&dst.octets());
        p.extend_from_slice(&40000u16.to_be_bytes());
        p.extend_from_slice(&port.to_be_bytes());
        p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn a_raw_packet_with_a_foreign_source_reaches_a_local_socket() {
        if crate::effective_uid() != 0 {
            eprintln!("skipped: needs root (raw sockets)");
            return;
        }
        let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
        receiver
            .set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let port = receiver.local_addr().unwrap().port();
        let sender = RawSender::open(0x4e4c).unwrap();
        // The source is not this machine's: the copy of an arriving packet keeps its sender's.
        let src = Ipv4Addr::new(192, 0, 2, 77);
        sender
            .send(&udp4(src, Ipv4Addr::LOCALHOST, port, b"copy"))
            .unwrap();
        let mut buf = [0u8; 16];
        let (n, from) = receiver.recv_from(&mut buf).unwrap();
        assert_eq!((&buf[..n], from.ip()), (&b"copy"[..], src.into()));
        assert!(sender.send(&[0x45, 0, 0]).is_err());
    }
}
