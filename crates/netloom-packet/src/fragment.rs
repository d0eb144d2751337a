//! Owns IPv4 fragmentation as a router cuts a packet; not reassembly, nor when a router cuts one.
//!
//! IPv4 fragmentation as a router does it (RFC 791 3.2, RFC 1812 5.2.6) for a packet without
//! Don't Fragment that is larger than the next link's MTU.

use crate::{fold, sum16};

/// Whether `packet` (IPv4 or IPv6, header checked) may be cut into fragments on the way: an
/// IPv4 packet without Don't Fragment. IPv6 routers never fragment.
pub fn allowed(packet: &[u8]) -> bool {
    packet[0] >> 4 == 4 && packet[6] & 0x40 == 0
}

/// Cuts an IPv4 packet whose header `ip::endpoints` checked into fragments of at most `mtu`
/// bytes, each handed to `out` whole: the header (options included, as few hosts send any)
/// with its length, More Fragments flag, offset and checksum set, then its share of the data,
/// a multiple of 8 bytes but for the last. The packet may itself be a fragment. Returns false,
/// handing nothing, when `mtu` leaves no room for 8 bytes of data after the header.
pub fn split(packet: &[u8], mtu: u32, mut out: impl FnMut(&[u8])) -> bool {
    let ihl = usize::from(packet[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([packet[2], packet[3]]));
    let step = (mtu as usize).saturating_sub(ihl) & !7;
    if step == 0 {
        return false;
    }
    let flags_offset = u16::from_be_bytes([packet[6], packet[7]]);
    let (more, first) = (
        flags_offset & 0x2000 != 0,
        usize::from(flags_offset & 0x1fff),
    );
    let mut fragment = Vec::with_capacity(ihl + step);
    let data = &packet[ihl..total];
    for (k, piece) in data.chunks(step).enumerate() {
        let last = (k + 1) * step >= data.len();
        fragment.clear();
        fragment.extend_from_slice(&packet[..ihl]);
        fragment.extend_from_slice(piece);
        let len = fragment.len() as u16;
        fragment[2..4].copy_from_slice(&len.to_be_bytes());
        let offset = (first + k * step / 8) as u16;
        let mf = if last && !more { 0 } else { 0x2000 };
        fragment[6..8].copy_from_slice(&(mf | offset).to_be_bytes());
        fragment[10..12].fill(0);
        let check = !fold(sum16(&fragment[..ihl], 0));
        fragment[10..12].copy_from_slice(&check.to_be_bytes());
        out(&fragment);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1500-byte IPv4 packet without DF whose data bytes count up.
    fn big() -> Vec<u8> {
        let mut p = vec![0u8; 1500];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&1500u16.to_be_bytes());
        p[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
        p[8] = 63;
        p[9] = 17;
        for (i, b) in p[20..].iter_mut().enumerate() {
            *b = i as u8;
        }
        p
    }

    #[test]
    fn fragments_fit_the_mtu_carry_the_data_in_order_and_have_right_headers() {
        let p = big();
        let mut got: Vec<Vec<u8>> = Vec::new();
        assert!(split(&p, 1006, |f| got.push(f.to_vec())));
        // 1480 bytes of data in steps of 984 (1006 − 20, down to a multiple of 8).
        let lens: Vec<usize> = got.iter().map(Vec::len).collect();
        assert_eq!(lens, [1004, 516]);
        let mut data = Vec::new();
        for (k, f) in got.iter().enumerate() {
            assert_eq!(usize::from(u16::from_be_bytes([f[2], f[3]])), f.len());
            assert_eq!(&f[4..6], &p[4..6], "the same identification");
            let flags_offset = u16::from_be_bytes([f[6], f[7]]);
            assert_eq!(flags_offset & 0x2000 != 0, k == 0, "MF on all but the last");
            assert_eq!(usize::from(flags_offset & 0x1fff) * 8, data.len());
            assert_eq!(fold(sum16(&f[..20], 0)), 0xffff, "header checksum");
            data.extend_from_slice(&f[20..]);
        }
        assert_eq!(data, &p[20..]);
    }

    #[test]
    fn a_fragment_cut_again_keeps_its_offset_and_more_fragments() {
        let mut p = big();
        p[6..8].copy_from_slice(&(0x2000u16 | 100).to_be_bytes());
        let mut got: Vec<Vec<u8>> = Vec::new();
        assert!(split(&p, 1006, |f| got.push(f.to_vec())));
        let field = |f: &Vec<u8>| u16::from_be_bytes([f[6], f[7]]);
        assert_eq!(
            got.iter().map(field).collect::<Vec<_>>(),
            [0x2000 | 100, 0x2000 | 223]
        );
        assert!(!split(&p, 27, |_| panic!("no room for data")));
        assert!(allowed(&p) && !allowed(&[0x60; 40]));
    }
}
