//! Just enough IP parsing to route a packet: its version, addresses and ECN field (and marking
//! it CE). Packets come from applications, so nothing here trusts a length or panics on a short
//! buffer.

use crate::segment::fold;
use netloom_link::{Ecn, PacketMeta};
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

/// What a pipe needs to know of a packet whose header `endpoints` accepted: its ECN field, and
/// its flow as a hash of addresses, protocol and (TCP, UDP) ports, as FQ-CoDel hashes packets to
/// its queues.
pub fn meta(packet: &[u8]) -> PacketMeta {
    let (addresses, protocol, l4) = match packet.first().map(|b| b >> 4) {
        Some(4) if packet.len() >= 20 => {
            let header = usize::from(packet[0] & 0x0f) * 4;
            // Only a first fragment (offset 0) has the ports.
            let first = u16::from_be_bytes([packet[6], packet[7]]) & 0x1fff == 0;
            (&packet[12..20], packet[9], first.then_some(header))
        }
        Some(6) if packet.len() >= 40 => (&packet[8..40], packet[6], Some(40)),
        _ => (&packet[..0], 0, None),
    };
    let ports = match (protocol, l4) {
        (6 | 17, Some(at)) => packet.get(at..at + 4).unwrap_or_default(),
        _ => &[],
    };
    let mut h = DefaultHasher::new();
    (addresses, protocol, ports).hash(&mut h);
    PacketMeta {
        ecn: ecn(packet),
        flow: h.finish() as u32,
    }
}

/// The ECN field of an IPv4 packet's TOS byte or an IPv6 packet's traffic class; Not-ECT for
/// anything else or too short.
pub fn ecn(packet: &[u8]) -> Ecn {
    match (packet.first().map(|b| b >> 4), packet.get(1)) {
        (Some(4), Some(&tos)) => Ecn::from_bits(tos),
        (Some(6), Some(&b)) => Ecn::from_bits(b >> 4),
        _ => Ecn::NotEct,
    }
}

/// Sets the ECN field of an IPv4 or IPv6 packet to CE (a router's mark, RFC 3168), updating an
/// IPv4 header's checksum (`set_ipv4_word`); IPv6 has none. Anything else is left alone.
pub fn set_ce(packet: &mut [u8]) {
    match packet.first().map(|b| b >> 4) {
        Some(4) if packet.len() >= 20 => {
            let word = u16::from_be_bytes([packet[0], packet[1]]) | 0b11;
            set_ipv4_word(packet, 0, word);
        }
        Some(6) if packet.len() >= 40 => packet[1] |= 0b11 << 4,
        _ => {}
    }
}

/// Writes `word` at byte `at` (even, inside the header) of an IPv4 header and updates the header
/// checksum incrementally (RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m')), so a header is not summed
/// again for a one-field change (a CE mark, a TTL).
pub(crate) fn set_ipv4_word(header: &mut [u8], at: usize, word: u16) {
    let old = u16::from_be_bytes([header[at], header[at + 1]]);
    header[at..at + 2].copy_from_slice(&word.to_be_bytes());
    let hc = u16::from_be_bytes([header[10], header[11]]);
    let sum = fold(u32::from(!hc) + u32::from(!old) + u32::from(word));
    header[10..12].copy_from_slice(&(!sum).to_be_bytes());
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
    fn reads_the_ecn_field_and_marks_ce_with_a_checksum_that_still_holds() {
        use crate::segment::sum16;
        for tos in [0x00, 0x01, 0x02, 0xb9, 0xfe] {
            let mut p = v4(28, [198, 18, 0, 2]);
            p[1] = tos;
            p[8] = 64;
            p[9] = 6;
            let sum = !fold(sum16(&p[..20], 0));
            p[10..12].copy_from_slice(&sum.to_be_bytes());
            assert_eq!(ecn(&p), Ecn::from_bits(tos));
            set_ce(&mut p);
            assert_eq!(ecn(&p), Ecn::Ce);
            // DSCP bits untouched, and the header sums to 0xffff as a valid one does.
            assert_eq!(p[1] >> 2, tos >> 2);
            assert_eq!(fold(sum16(&p[..20], 0)), 0xffff, "tos {tos:#x}");
        }
        let mut v6 = vec![0u8; 40];
        v6[0] = 0x6a; // traffic class 0xa2: DSCP 0x28, ECT(0)
        v6[1] = 0x2f;
        assert_eq!(ecn(&v6), Ecn::Ect0);
        set_ce(&mut v6);
        assert_eq!((v6[0], v6[1]), (0x6a, 0x3f));
        assert_eq!(ecn(&v6), Ecn::Ce);
    }

    #[test]
    fn the_flow_hash_follows_addresses_and_ports() {
        let tcp = |src_port: u16| {
            let mut p = v4(28, [198, 18, 0, 2]);
            p[9] = 6;
            p[20..22].copy_from_slice(&src_port.to_be_bytes());
            p
        };
        let flow = |p: &[u8]| meta(p).flow;
        assert_eq!(flow(&tcp(1000)), flow(&tcp(1000)));
        assert_ne!(flow(&tcp(1000)), flow(&tcp(1001)));
        let mut elsewhere = tcp(1000);
        elsewhere[19] = 3;
        assert_ne!(flow(&tcp(1000)), flow(&elsewhere));
    }
}
