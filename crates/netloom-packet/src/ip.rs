//! Owns IP addresses (length-checked), `Malformed` and the flow hash; not a pipe's `PacketMeta`.
//!
//! Just enough IP parsing to route a packet: its version and addresses, checked against its
//! length, and its flow as FQ-CoDel hashes it (netloom-live makes the `PacketMeta` a pipe reads
//! of these; the header fields' places are the crate root's `Layout`). Packets come from
//! applications, so nothing here trusts a length or panics on a short buffer.

use crate::Layout;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why a packet from a host could not be routed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// Neither IPv4 nor IPv6 (or empty).
    NotIp,
    /// Shorter than its fixed header, or than the length its header claims.
    Truncated,
    /// A GSO super-packet netloom cannot split: not TCP, a GSO type or an IPv6 extension header
    /// the hosts' kernels do not send, a fragment, or a segment size of zero.
    Offload,
    /// A super-packet whose segment size is below `segment::MIN_GSO_SIZE` or that splits into
    /// more than `segment::MAX_GSO_SEGMENTS` segments: refused whole, so one frame cannot make
    /// tens of thousands of packets for the engine.
    Segments,
}

/// The destination address of an IPv4 or IPv6 packet, after checking its header fits.
pub fn destination(packet: &[u8]) -> Result<IpAddr, Malformed> {
    endpoints(packet).map(|(_, dst)| dst)
}

/// The source and destination addresses of an IPv4 or IPv6 packet, after checking its header
/// fits.
pub fn endpoints(packet: &[u8]) -> Result<(IpAddr, IpAddr), Malformed> {
    match packet.first().map(|b| b >> 4) {
        Some(4) => {
            if packet.len() < 20 {
                return Err(Malformed::Truncated);
            }
            let header = usize::from(packet[0] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([packet[2], packet[3]]));
            if header < 20 || total < header || total > packet.len() {
                return Err(Malformed::Truncated);
            }
            let s: [u8; 4] = packet[12..16].try_into().expect("4 bytes");
            let d: [u8; 4] = packet[16..20].try_into().expect("4 bytes");
            Ok((IpAddr::V4(Ipv4Addr::from(s)), IpAddr::V4(Ipv4Addr::from(d))))
        }
        Some(6) => {
            if packet.len() < 40 {
                return Err(Malformed::Truncated);
            }
            let payload = usize::from(u16::from_be_bytes([packet[4], packet[5]]));
            if 40 + payload > packet.len() {
                return Err(Malformed::Truncated);
            }
            let s: [u8; 16] = packet[8..24].try_into().expect("16 bytes");
            let d: [u8; 16] = packet[24..40].try_into().expect("16 bytes");
            Ok((IpAddr::V6(Ipv6Addr::from(s)), IpAddr::V6(Ipv6Addr::from(d))))
        }
        _ => Err(Malformed::NotIp),
    }
}

/// The flow of a packet whose header `endpoints` accepted, as a hash of its addresses, protocol
/// and (TCP, UDP) ports, as FQ-CoDel hashes packets to its queues.
pub fn flow_hash(packet: &[u8]) -> u32 {
    let (addresses, protocol, ports) = match Layout::of(packet) {
        Some(l) => (
            l.address_bytes(packet),
            l.proto,
            l.port_bytes(packet).unwrap_or_default(),
        ),
        None => (&packet[..0], 0, &[][..]),
    };
    let mut h = DefaultHasher::new();
    (addresses, protocol, ports).hash(&mut h);
    h.finish() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(total: u16, dst: [u8; 4]) -> Vec<u8> {
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p[16..20].copy_from_slice(&dst);
        p
    }

    #[test]
    fn reads_ipv4_and_ipv6_destinations() {
        assert_eq!(
            destination(&v4(28, [198, 18, 0, 2])),
            Ok("198.18.0.2".parse().unwrap())
        );
        let mut from = v4(28, [198, 18, 0, 2]);
        from[12..16].copy_from_slice(&[198, 18, 0, 9]);
        assert_eq!(
            endpoints(&from),
            Ok(("198.18.0.9".parse().unwrap(), "198.18.0.2".parse().unwrap()))
        );
        let mut p = vec![0u8; 48];
        p[0] = 0x60;
        p[4..6].copy_from_slice(&8u16.to_be_bytes());
        p[24..40].copy_from_slice(&"fd6e:6c00::2".parse::<Ipv6Addr>().unwrap().octets());
        assert_eq!(destination(&p), Ok("fd6e:6c00::2".parse().unwrap()));
    }

    #[test]
    fn refuses_what_is_not_a_whole_ip_packet() {
        assert_eq!(destination(&[]), Err(Malformed::NotIp));
        assert_eq!(destination(&[0x55; 40]), Err(Malformed::NotIp));
        assert_eq!(destination(&[0x45; 10]), Err(Malformed::Truncated));
        assert_eq!(
            destination(&v4(29, [1, 2, 3, 4])),
            Err(Malformed::Truncated)
        );
        let mut short_ihl = v4(28, [1, 2, 3, 4]);
        short_ihl[0] = 0x44;
        assert_eq!(destination(&short_ihl), Err(Malformed::Truncated));
        assert_eq!(destination(&[0x60; 39]), Err(Malformed::Truncated));
    }

    #[test]
    fn never_panics_on_any_prefix_of_any_byte_pattern() {
        for first in 0..=255u8 {
            for len in 0..64 {
                let mut p = vec![0xffu8; len];
                if let Some(b) = p.first_mut() {
                    *b = first;
                }
                let _ = destination(&p);
            }
        }
    }

    #[test]
    fn the_flow_hash_follows_addresses_and_ports() {
        let tcp = |src_port: u16| {
            let mut p = v4(28, [198, 18, 0, 2]);
            p[9] = 6;
            p[20..22].copy_from_slice(&src_port.to_be_bytes());
            p
        };
        let flow = flow_hash;
        assert_eq!(flow(&tcp(1000)), flow(&tcp(1000)));
        assert_ne!(flow(&tcp(1000)), flow(&tcp(1001)));
        let mut elsewhere = tcp(1000);
        elsewhere[19] = 3;
        assert_ne!(flow(&tcp(1000)), flow(&elsewhere));
    }
}
