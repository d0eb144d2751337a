//! Packet bytes, the floor shared by live runs, `netloom shape` and the sim's captures (as
//! smoltcp's `wire`): no engine, no clock read, no I/O of its own (`pcapng` writes to the
//! `Write` it is given). Packets come from applications and the kernel's queue (perhaps only
//! their first bytes), so nothing here trusts a length or panics on a short buffer.
//!
//! At the root, the small IP header helpers: where a packet's addresses, protocol and ports are
//! (`Layout`), its ECN field and a CE mark (with an IPv4 header's checksum updated in place),
//! and the Internet checksum's sum and fold. Modules, one job each: `ip` (addresses checked
//! against the length, `Malformed`, the flow hash), `segment` (GSO super-packets behind their
//! virtio_net_hdr), `icmp` (the errors routers send, their rate limit), `fragment` (IPv4
//! fragmentation) and `pcapng` (the capture files' writer).

pub mod fragment;
pub mod icmp;
pub mod ip;
pub mod pcapng;
pub mod segment;

use netloom_link::Ecn;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Where the fields a classifier or a flow hash reads sit in an IPv4 or IPv6 packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// 4 or 6.
    pub version: u8,
    /// The IP protocol number (IPv6: the first next header; extension headers are not
    /// followed).
    pub proto: u8,
    /// Where the transport header starts, if the packet has one to read: not for an IPv4
    /// fragment after the first.
    pub l4: Option<usize>,
}

impl Layout {
    /// The layout of the packet starting at `packet`'s first byte, if it is IPv4 or IPv6 and
    /// at least its fixed header is there.
    #[inline]
    pub fn of(packet: &[u8]) -> Option<Layout> {
        match packet.first()? >> 4 {
            4 if packet.len() >= 20 => {
                let ihl = usize::from(packet[0] & 0x0f) * 4;
                // A fragment after the first carries no ports.
                let offset = u16::from_be_bytes([packet[6], packet[7]]) & 0x1fff;
                Some(Layout {
                    version: 4,
                    proto: packet[9],
                    l4: (offset == 0).then_some(ihl),
                })
            }
            6 if packet.len() >= 40 => Some(Layout {
                version: 6,
                proto: packet[6],
                l4: Some(40),
            }),
            _ => None,
        }
    }

    /// The source and destination addresses' bytes, one after the other (8 or 32 bytes).
    #[inline]
    pub fn address_bytes<'a>(&self, packet: &'a [u8]) -> &'a [u8] {
        match self.version {
            4 => &packet[12..20],
            _ => &packet[8..40],
        }
    }

    /// The source and destination addresses.
    #[inline]
    pub fn addresses(&self, packet: &[u8]) -> (IpAddr, IpAddr) {
        let at = |from: usize| -> [u8; 16] { packet[from..from + 16].try_into().expect("16") };
        match self.version {
            4 => {
                let s: [u8; 4] = packet[12..16].try_into().expect("4 bytes");
                let d: [u8; 4] = packet[16..20].try_into().expect("4 bytes");
                (Ipv4Addr::from(s).into(), Ipv4Addr::from(d).into())
            }
            _ => (Ipv6Addr::from(at(8)).into(), Ipv6Addr::from(at(24)).into()),
        }
    }

    /// The TCP or UDP ports' four bytes (source, destination), if the packet is TCP or UDP and
    /// they are there.
    #[inline]
    pub fn port_bytes<'a>(&self, packet: &'a [u8]) -> Option<&'a [u8]> {
        match (self.proto, self.l4) {
            (6 | 17, Some(at)) => packet.get(at..at + 4),
            _ => None,
        }
    }

    /// The TCP or UDP (source, destination) ports, if the packet is TCP or UDP and they are
    /// there.
    #[inline]
    pub fn ports(&self, packet: &[u8]) -> Option<(u16, u16)> {
        self.port_bytes(packet).map(|p| {
            (
                u16::from_be_bytes([p[0], p[1]]),
                u16::from_be_bytes([p[2], p[3]]),
            )
        })
    }
}

/// The ECN field of an IPv4 packet's TOS byte or an IPv6 packet's traffic class; Not-ECT for
/// anything else or too short.
#[inline]
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
pub fn set_ipv4_word(header: &mut [u8], at: usize, word: u16) {
    let old = u16::from_be_bytes([header[at], header[at + 1]]);
    header[at..at + 2].copy_from_slice(&word.to_be_bytes());
    let hc = u16::from_be_bytes([header[10], header[11]]);
    let sum = fold(u32::from(!hc) + u32::from(!old) + u32::from(word));
    header[10..12].copy_from_slice(&(!sum).to_be_bytes());
}

/// Adds `bytes` as big-endian 16-bit words (an odd last byte padded with zero) to `sum`: the
/// Internet checksum's sum, not folded. Sums of up to 64 KB cannot overflow 32 bits from below
/// 2^16 · 2^16.
pub fn sum16(bytes: &[u8], mut sum: u32) -> u32 {
    let mut words = bytes.chunks_exact(2);
    for w in &mut words {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

/// The ones'-complement sum folded to 16 bits (not inverted).
pub fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(proto: u8, fragment_offset: u16) -> Vec<u8> {
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[6..8].copy_from_slice(&fragment_offset.to_be_bytes());
        p[9] = proto;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        p[20..24].copy_from_slice(&[0x9c, 0x40, 0x00, 0x50]);
        p
    }

    #[test]
    fn the_layout_finds_addresses_and_ports_of_both_families() {
        let p = v4(6, 0);
        let l = Layout::of(&p).unwrap();
        assert_eq!(
            l.addresses(&p),
            ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap())
        );
        assert_eq!(l.ports(&p), Some((40000, 80)));
        assert_eq!(l.address_bytes(&p), &[10, 0, 0, 1, 10, 0, 0, 2]);
        // A later fragment and a protocol without ports have none.
        assert_eq!(Layout::of(&v4(6, 185)).unwrap().ports(&v4(6, 185)), None);
        assert_eq!(Layout::of(&v4(1, 0)).unwrap().ports(&v4(1, 0)), None);
        let mut six = vec![0u8; 44];
        six[0] = 0x60;
        six[6] = 17;
        six[23] = 1;
        six[39] = 2;
        six[40..44].copy_from_slice(&[0, 53, 0x9c, 0x40]);
        let l = Layout::of(&six).unwrap();
        assert_eq!(
            l.addresses(&six),
            ("::1".parse().unwrap(), "::2".parse().unwrap())
        );
        assert_eq!(l.ports(&six), Some((53, 40000)));
        // Ports cut off by a short copy are not read.
        assert_eq!(l.ports(&six[..42]), None);
    }

    #[test]
    fn never_panics_on_any_prefix_of_any_byte_pattern() {
        for first in 0..=255u8 {
            for len in 0..64 {
                let mut p = vec![0xffu8; len];
                if let Some(b) = p.first_mut() {
                    *b = first;
                }
                if let Some(l) = Layout::of(&p) {
                    let _ = (l.addresses(&p), l.ports(&p), l.address_bytes(&p));
                }
                let _ = ecn(&p);
                set_ce(&mut p);
            }
        }
    }

    #[test]
    fn reads_the_ecn_field_and_marks_ce_with_a_checksum_that_still_holds() {
        for tos in [0x00, 0x01, 0x02, 0xb9, 0xfe] {
            let mut p = v4(6, 0);
            p[1] = tos;
            p[8] = 64;
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
    fn the_checksum_sums_odd_lengths_and_folds_carries() {
        assert_eq!(sum16(&[0x12, 0x34, 0x56], 0), 0x1234 + 0x5600);
        assert_eq!(fold(0x1_fffe), 0xffff);
        assert_eq!(fold(0x2_0001), 0x0003);
    }
}
