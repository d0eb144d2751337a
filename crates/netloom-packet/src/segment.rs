//! Owns GSO super-packets behind their virtio_net_hdr (split, rebuild, checksum); not TUN I/O.
//!
//! GSO super-packets: the virtio_net_hdr in front of every frame a TUN device with IFF_VNET_HDR
//! exchanges, the split of a TCP super-packet into the wire-size segments the engine times one by
//! one, and the headers of any run of consecutive segments, rebuilt so the run can be written as
//! one smaller super-packet (or one plain packet). No I/O. Frames come from hosts, so parsing
//! trusts no length or flag and never panics.

use crate::ip::Malformed;
use crate::{fold, sum16};
use std::ops::Range;

/// Bytes of `struct virtio_net_hdr` (the TUN device is set to exactly this size: netloom-live
/// checks that netloom-os's `VNET_HDR_LEN` is this one).
pub const VNET_HDR_LEN: usize = 10;
/// The longest head a segment run is written with: virtio_net_hdr, IPv4 header with options, TCP
/// header with options.
pub const MAX_HEAD: usize = VNET_HDR_LEN + 60 + 60;

/// virtio_net_hdr flag: the checksum at `csum_start + csum_offset` is to be finished over
/// everything from `csum_start` on.
const F_NEEDS_CSUM: u8 = 1;
const GSO_NONE: u8 = 0;
const GSO_TCPV4: u8 = 1;
const GSO_TCPV6: u8 = 4;
/// Added to a GSO type: the first segment carries CWR.
const GSO_ECN: u8 = 0x80;

/// The smallest segment size of a super-packet netloom splits: Linux's own (`TCP_MIN_GSO_SIZE`
/// in include/net/tcp.h, `TCP_MIN_SND_MSS` 48 less 40 bytes of TCP options), below which its TCP
/// never segments. A host that hands over less (a crafted frame) would make each byte of payload
/// a packet for the engine: 60,008 of them from one 64 KB frame at a segment size of 1.
pub const MIN_GSO_SIZE: u16 = 8;
/// The most segments one super-packet may split into: above what a host's TCP makes of 64 KB
/// at the smallest segment size a program may ask for (`TCP_MAXSEG` of `TCP_MIN_MSS`, 88
/// bytes, 76 of them payload with timestamps: 863 segments), so no real TCP is refused (at
/// netloom's smallest MTU, 1,280, a kernel makes 55). Bounds the engine work one frame can
/// cause to 1/59 of what a segment size of 1 made.
pub const MAX_GSO_SEGMENTS: u16 = 1024;

const TCP: u8 = 6;
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;
/// Where the checksum lies in a TCP header.
const TCP_CSUM_OFFSET: u16 = 16;

/// The fields of `struct virtio_net_hdr`, in the byte order of the machine (the legacy layout the
/// TUN device uses when neither TUNSETVNETLE nor TUNSETVNETBE is set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct VnetHdr {
    flags: u8,
    gso_type: u8,
    hdr_len: u16,
    gso_size: u16,
    csum_start: u16,
    csum_offset: u16,
}

impl VnetHdr {
    fn read(b: &[u8; VNET_HDR_LEN]) -> VnetHdr {
        let u16_at = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
        }
    }

    fn write(&self, out: &mut [u8; VNET_HDR_LEN]) {
        out[0] = self.flags;
        out[1] = self.gso_type;
        out[2..4].copy_from_slice(&self.hdr_len.to_ne_bytes());
        out[4..6].copy_from_slice(&self.gso_size.to_ne_bytes());
        out[6..8].copy_from_slice(&self.csum_start.to_ne_bytes());
        out[8..10].copy_from_slice(&self.csum_offset.to_ne_bytes());
    }
}

/// What a frame (virtio_net_hdr and packet) read from a host carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    /// One packet, to be written out as it was read.
    Single,
    /// A TCP super-packet: `Gso::segments` packets on the wire.
    Super(Gso),
}

/// The layout of a TCP super-packet, as far as splitting it needs: header sizes, the segment
/// size (`gso_size`, the MSS) and how much payload follows the headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gso {
    v6: bool,
    /// The first segment carries CWR and the GSO type said so (ECN).
    ecn: bool,
    ip_len: u16,
    tcp_len: u16,
    mss: u16,
    payload: u16,
    count: u16,
}

/// Reads the virtio_net_hdr in front of `frame` and says whether the packet behind it is sent
/// as it is or is a TCP super-packet to split. Everything the kernel would refuse when the frame
/// is written to another host (a checksum position outside the packet, a GSO type other than
/// TCP, headers that do not fit) is `Malformed`, and so is a super-packet that would cost the
/// engine too much work (`Malformed::Segments`).
pub fn parse(frame: &[u8]) -> Result<Frame, Malformed> {
    let Some((hdr, packet)) = frame.split_first_chunk::<VNET_HDR_LEN>() else {
        return Err(Malformed::Truncated);
    };
    let hdr = VnetHdr::read(hdr);
    if hdr.flags & F_NEEDS_CSUM != 0
        && usize::from(hdr.csum_start) + usize::from(hdr.csum_offset) + 2 > packet.len()
    {
        return Err(Malformed::Truncated);
    }
    let v6 = match hdr.gso_type & !GSO_ECN {
        GSO_NONE => return Ok(Frame::Single),
        GSO_TCPV4 => false,
        GSO_TCPV6 => true,
        _ => return Err(Malformed::Offload),
    };
    let (ip_len, total) = if v6 { ipv6(packet)? } else { ipv4(packet)? };
    let tcp = packet.get(ip_len..total).ok_or(Malformed::Truncated)?;
    let tcp_len = match tcp.get(12) {
        Some(b) => usize::from(b >> 4) * 4,
        None => return Err(Malformed::Truncated),
    };
    if tcp_len < 20 || tcp_len > tcp.len() {
        return Err(Malformed::Truncated);
    }
    if hdr.gso_size == 0 {
        return Err(Malformed::Offload);
    }
    // Every length here is below 2^16: `total` is at most 40 + 65535 and the headers are at
    // least 40 bytes together.
    let payload = (tcp.len() - tcp_len) as u16;
    let count = payload.div_ceil(hdr.gso_size).max(1);
    if hdr.gso_size < MIN_GSO_SIZE || count > MAX_GSO_SEGMENTS {
        return Err(Malformed::Segments);
    }
    Ok(Frame::Super(Gso {
        v6,
        ecn: hdr.gso_type & GSO_ECN != 0 && tcp[13] & TCP_CWR != 0,
        ip_len: ip_len as u16,
        tcp_len: tcp_len as u16,
        mss: hdr.gso_size,
        payload,
        count,
    }))
}

/// Header length and end of an IPv4 packet carrying one whole TCP segment.
fn ipv4(packet: &[u8]) -> Result<(usize, usize), Malformed> {
    let [first, _, t0, t1, _, _, f0, f1, _, protocol, ..] = *packet else {
        return Err(Malformed::Truncated);
    };
    if first >> 4 != 4 {
        return Err(Malformed::NotIp);
    }
    let ip_len = usize::from(first & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([t0, t1]));
    if ip_len < 20 || total < ip_len || total > packet.len() {
        return Err(Malformed::Truncated);
    }
    // A fragment (more fragments, or an offset) cannot be a TCP super-packet.
    if protocol != TCP || u16::from_be_bytes([f0, f1]) & 0x3fff != 0 {
        return Err(Malformed::Offload);
    }
    Ok((ip_len, total))
}

/// Header length and end of an IPv6 packet whose next header is TCP. Extension headers are not
/// walked: the hosts' kernels put none on TCP.
fn ipv6(packet: &[u8]) -> Result<(usize, usize), Malformed> {
    let [first, _, _, _, p0, p1, next, ..] = *packet else {
        return Err(Malformed::Truncated);
    };
    if first >> 4 != 6 {
        return Err(Malformed::NotIp);
    }
    let total = 40 + usize::from(u16::from_be_bytes([p0, p1]));
    if packet.len() < 40 || total > packet.len() {
        return Err(Malformed::Truncated);
    }
    if next != TCP {
        return Err(Malformed::Offload);
    }
    Ok((40, total))
}

impl Gso {
    /// Packets on the wire: the payload in `gso_size` pieces, at least one.
    pub fn segments(&self) -> u16 {
        self.count
    }

    /// Bytes on the wire of segment `k` (IP packet: headers and its piece of payload).
    pub fn wire_len(&self, k: u16) -> u32 {
        let piece = self.payload_range(k..k + 1);
        u32::from(self.ip_len + self.tcp_len) + (piece.end - piece.start) as u32
    }

    /// Bytes on the wire of all segments together.
    pub fn wire_total(&self) -> u32 {
        u32::from(self.count) * u32::from(self.ip_len + self.tcp_len) + u32::from(self.payload)
    }

    /// Where the payload of segments `run` lies, counted from the end of the headers.
    fn payload_range(&self, run: Range<u16>) -> Range<usize> {
        let mss = usize::from(self.mss);
        let payload = usize::from(self.payload);
        (usize::from(run.start) * mss).min(payload)..(usize::from(run.end) * mss).min(payload)
    }

    /// Builds in `head` the virtio_net_hdr and IP and TCP headers of segments `run` (consecutive,
    /// non-empty, within `segments()`) of `frame`, the frame this `Gso` was parsed from, and
    /// returns the head's length and where the run's payload lies in `frame`: the run is written
    /// as the head followed by that payload. More than one segment go as a super-packet with
    /// `gso_size` kept; one goes as a plain packet. Either way the TCP checksum is left for the
    /// receiving kernel to finish (NEEDS_CSUM with the pseudo-header sum in place, as the
    /// kernel's own TSO packets carry it), and the IPv4 header checksum is computed.
    ///
    /// As Linux's own segmentation does: IPv4 identification and TCP sequence number advance by
    /// segment, FIN and PSH stay on the last segment only and CWR on the first only.
    pub fn build(
        &self,
        frame: &[u8],
        run: Range<u16>,
        head: &mut [u8; MAX_HEAD],
    ) -> (usize, Range<usize>) {
        debug_assert!(run.start < run.end && run.end <= self.count, "{run:?}");
        let (ip_len, tcp_len) = (usize::from(self.ip_len), usize::from(self.tcp_len));
        let headers = ip_len + tcp_len;
        let head_len = VNET_HDR_LEN + headers;
        head[VNET_HDR_LEN..head_len].copy_from_slice(&frame[VNET_HDR_LEN..head_len]);
        let piece = self.payload_range(run.clone());
        let bytes = piece.end - piece.start;
        let (ip, tcp) = head[VNET_HDR_LEN..head_len].split_at_mut(ip_len);
        // The lengths fit 16 bits: a run is never longer than the packet it came from.
        if self.v6 {
            ip[4..6].copy_from_slice(&((tcp_len + bytes) as u16).to_be_bytes());
        } else {
            ip[2..4].copy_from_slice(&((headers + bytes) as u16).to_be_bytes());
            let id = u16::from_be_bytes([ip[4], ip[5]]).wrapping_add(run.start);
            ip[4..6].copy_from_slice(&id.to_be_bytes());
            ip[10..12].fill(0);
            let sum = !fold(sum16(ip, 0));
            ip[10..12].copy_from_slice(&sum.to_be_bytes());
        }
        let seq = u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]])
            .wrapping_add(u32::from(run.start) * u32::from(self.mss));
        tcp[4..8].copy_from_slice(&seq.to_be_bytes());
        if run.end < self.count {
            tcp[13] &= !(TCP_FIN | TCP_PSH);
        }
        if run.start > 0 {
            tcp[13] &= !TCP_CWR;
        }
        let (src, dst) = if self.v6 {
            (&ip[8..24], &ip[24..40])
        } else {
            (&ip[12..16], &ip[16..20])
        };
        let pseudo = sum16(dst, sum16(src, u32::from(TCP) + (tcp_len + bytes) as u32));
        tcp[16..18].copy_from_slice(&fold(pseudo).to_be_bytes());
        let (gso_type, gso_size) = if run.end - run.start > 1 {
            let base = if self.v6 { GSO_TCPV6 } else { GSO_TCPV4 };
            let ecn = if self.ecn && run.start == 0 {
                GSO_ECN
            } else {
                0
            };
            (base | ecn, self.mss)
        } else {
            (GSO_NONE, 0)
        };
        let vnet = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type,
            hdr_len: headers as u16,
            gso_size,
            csum_start: self.ip_len,
            csum_offset: TCP_CSUM_OFFSET,
        };
        let (vnet_bytes, _) = head
            .split_first_chunk_mut::<VNET_HDR_LEN>()
            .expect("MAX_HEAD");
        vnet.write(vnet_bytes);
        let start = head_len + piece.start;
        (head_len, start..head_len + piece.end)
    }
}

/// Finishes the checksum a plain frame (virtio_net_hdr and packet; `parse` said `Single`)
/// leaves to its receiver, and clears the flag: a router that cuts the packet into fragments
/// must hand on a finished checksum, which only the whole packet gives.
pub fn finish_checksum(frame: &mut [u8]) {
    let (hdr, packet) = frame
        .split_first_chunk_mut::<VNET_HDR_LEN>()
        .expect("a parsed frame");
    let mut h = VnetHdr::read(hdr);
    if h.flags & F_NEEDS_CSUM == 0 {
        return;
    }
    let (start, at) = (
        usize::from(h.csum_start),
        usize::from(h.csum_start + h.csum_offset),
    );
    // A computed zero goes out as all ones, the same number in ones' complement, as Linux
    // finishes one (skb_checksum_help): in UDP a zero means "no checksum", which IPv6 forbids,
    // so the receiving kernel dropped the datagram (Udp6InCsumErrors), one in 65,536.
    let sum = match !fold(sum16(&packet[start..], 0)) {
        0 => 0xffff,
        sum => sum,
    };
    packet[at..at + 2].copy_from_slice(&sum.to_be_bytes());
    h.flags &= !F_NEEDS_CSUM;
    h.write(hdr);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Finishes a frame as the receiving kernel would and returns its wire packets: a plain frame
    /// gives its packet, a super-packet its segments; NEEDS_CSUM checksums are completed.
    fn on_the_wire(frame: &[u8]) -> Vec<Vec<u8>> {
        let mut packets = Vec::new();
        let mut singles = Vec::new();
        match parse(frame).expect("a valid frame") {
            Frame::Single => singles.push(frame.to_vec()),
            Frame::Super(g) => {
                for k in 0..g.segments() {
                    let mut head = [0u8; MAX_HEAD];
                    let (n, payload) = g.build(frame, k..k + 1, &mut head);
                    let mut one = head[..n].to_vec();
                    one.extend_from_slice(&frame[payload]);
                    singles.push(one);
                }
            }
        }
        for mut one in singles {
            finish_checksum(&mut one);
            packets.push(one[VNET_HDR_LEN..].to_vec());
        }
        packets
    }

    /// Whether the IPv4 header checksum (if any) and the TCP checksum of `packet` hold.
    fn checksums_hold(packet: &[u8]) -> bool {
        let (ip_len, src, dst) = if packet[0] >> 4 == 4 {
            let ip_len = usize::from(packet[0] & 0x0f) * 4;
            if fold(sum16(&packet[..ip_len], 0)) != 0xffff {
                return false;
            }
            (ip_len, &packet[12..16], &packet[16..20])
        } else {
            (40, &packet[8..24], &packet[24..40])
        };
        let tcp = &packet[ip_len..];
        let pseudo = sum16(dst, sum16(src, u32::from(TCP) + tcp.len() as u32));
        fold(sum16(tcp, pseudo)) == 0xffff
    }

    struct Spec {
        v6: bool,
        mss: u16,
        payload: usize,
        ip_options: usize,
        tcp_options: usize,
        flags: u8,
        ecn: bool,
    }

    const SPEC: Spec = Spec {
        v6: false,
        mss: 1448,
        payload: 64_000,
        ip_options: 0,
        tcp_options: 12,
        flags: 0x18, // PSH, ACK
        ecn: false,
    };

    /// A super-packet as a host's kernel hands it over: NEEDS_CSUM with the pseudo-header sum
    /// of the whole super-packet in the TCP checksum, payload bytes numbered by position.
    fn super_frame(s: &Spec) -> Vec<u8> {
        let ip_len = if s.v6 { 40 } else { 20 + s.ip_options };
        let tcp_len = 20 + s.tcp_options;
        let mut p = vec![0u8; ip_len + tcp_len + s.payload];
        let total = p.len();
        if s.v6 {
            p[0] = 0x60;
            p[4..6].copy_from_slice(&((total - 40) as u16).to_be_bytes());
            p[6] = TCP;
            p[7] = 64;
            p[8..24].copy_from_slice(&[0xfd, 0x6e, 0x6c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
            p[24..40].copy_from_slice(&[0xfd, 0x6e, 0x6c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        } else {
            p[0] = 0x40 | (ip_len / 4) as u8;
            p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            p[4..6].copy_from_slice(&0xfffeu16.to_be_bytes()); // wraps at the third segment
            p[6] = 0x40; // DF
            p[8] = 64;
            p[9] = TCP;
            p[12..16].copy_from_slice(&[198, 18, 0, 1]);
            p[16..20].copy_from_slice(&[198, 18, 0, 2]);
            for (i, b) in p[20..ip_len].iter_mut().enumerate() {
                *b = if i + 1 == s.ip_options { 0 } else { 1 }; // NOPs, then end of options
            }
            let sum = !fold(sum16(&p[..ip_len], 0));
            p[10..12].copy_from_slice(&sum.to_be_bytes());
        }
        let t = &mut p[ip_len..];
        t[0..2].copy_from_slice(&40000u16.to_be_bytes());
        t[2..4].copy_from_slice(&5201u16.to_be_bytes());
        t[4..8].copy_from_slice(&0xffff_f000u32.to_be_bytes()); // wraps within the packet
        t[8..12].copy_from_slice(&7u32.to_be_bytes());
        t[12] = ((tcp_len / 4) as u8) << 4;
        t[13] = s.flags;
        t[14..16].copy_from_slice(&64000u16.to_be_bytes());
        t[20..tcp_len].fill(1);
        for (i, b) in t[tcp_len..].iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        let (src, dst) = if s.v6 {
            (p[8..24].to_vec(), p[24..40].to_vec())
        } else {
            (p[12..16].to_vec(), p[16..20].to_vec())
        };
        let pseudo = sum16(&dst, sum16(&src, u32::from(TCP) + (total - ip_len) as u32));
        p[ip_len + 16..ip_len + 18].copy_from_slice(&fold(pseudo).to_be_bytes());
        let base = if s.v6 { GSO_TCPV6 } else { GSO_TCPV4 };
        let hdr = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: base | if s.ecn { GSO_ECN } else { 0 },
            // What the kernel fills in is the length of the skb's linear part, not the headers.
            hdr_len: 128,
            gso_size: s.mss,
            csum_start: ip_len as u16,
            csum_offset: TCP_CSUM_OFFSET,
        };
        let mut frame = vec![0u8; VNET_HDR_LEN];
        hdr.write((&mut frame[..]).try_into().unwrap());
        frame.extend_from_slice(&p);
        frame
    }

    /// The segments Linux would put on the wire for `s`, built field by field with checksums
    /// computed from scratch, independently of `build`.
    fn expected_segments(s: &Spec) -> Vec<Vec<u8>> {
        let frame = super_frame(s);
        let p = &frame[VNET_HDR_LEN..];
        let ip_len = if s.v6 { 40 } else { 20 + s.ip_options };
        let headers = ip_len + 20 + s.tcp_options;
        let pieces: Vec<&[u8]> = p[headers..].chunks(usize::from(s.mss)).collect();
        let n = pieces.len().max(1);
        (0..n)
            .map(|k| {
                let piece = pieces.get(k).copied().unwrap_or(&[]);
                let mut q = p[..headers].to_vec();
                q.extend_from_slice(piece);
                let len = q.len();
                if s.v6 {
                    q[4..6].copy_from_slice(&((len - 40) as u16).to_be_bytes());
                } else {
                    q[2..4].copy_from_slice(&(len as u16).to_be_bytes());
                    let id = 0xfffeu16.wrapping_add(k as u16);
                    q[4..6].copy_from_slice(&id.to_be_bytes());
                    q[10..12].fill(0);
                    let sum = !fold(sum16(&q[..ip_len], 0));
                    q[10..12].copy_from_slice(&sum.to_be_bytes());
                }
                let seq = 0xffff_f000u32.wrapping_add(k as u32 * u32::from(s.mss));
                q[ip_len + 4..ip_len + 8].copy_from_slice(&seq.to_be_bytes());
                if k + 1 < n {
                    q[ip_len + 13] &= !(TCP_FIN | TCP_PSH);
                }
                if k > 0 {
                    q[ip_len + 13] &= !TCP_CWR;
                }
                q[ip_len + 16..ip_len + 18].fill(0);
                let (src, dst) = if s.v6 {
                    (q[8..24].to_vec(), q[24..40].to_vec())
                } else {
                    (q[12..16].to_vec(), q[16..20].to_vec())
                };
                let tcp_bytes = (len - ip_len) as u32;
                let sum = !fold(sum16(
                    &q[ip_len..],
                    sum16(&dst, sum16(&src, u32::from(TCP) + tcp_bytes)),
                ));
                q[ip_len + 16..ip_len + 18].copy_from_slice(&sum.to_be_bytes());
                q
            })
            .collect()
    }

    /// Writes `frame` as the runs given by their lengths, as the driver does, and returns the
    /// frames written.
    fn write_in_runs(frame: &[u8], g: &Gso, runs: &[u16]) -> Vec<Vec<u8>> {
        let mut start = 0;
        runs.iter()
            .map(|&len| {
                let mut head = [0u8; MAX_HEAD];
                let (n, payload) = g.build(frame, start..start + len, &mut head);
                start += len;
                let mut out = head[..n].to_vec();
                out.extend_from_slice(&frame[payload]);
                out
            })
            .collect()
    }

    fn gso_of(frame: &[u8]) -> Gso {
        match parse(frame) {
            Ok(Frame::Super(g)) => g,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_super_packet_splits_into_the_segments_linux_would_send() {
        let specs = [
            SPEC,
            Spec { v6: true, ..SPEC },
            Spec {
                ip_options: 8,
                tcp_options: 40,
                payload: 3 * 1000 + 1,
                mss: 1000,
                flags: 0x80 | 0x19, // CWR, ACK, PSH, FIN
                ecn: true,
                ..SPEC
            },
            Spec {
                payload: 1448 * 3,
                flags: 0x11, // FIN, ACK
                ..SPEC
            },
            Spec { payload: 1, ..SPEC },
            Spec { payload: 0, ..SPEC },
        ];
        for s in &specs {
            let frame = super_frame(s);
            let g = gso_of(&frame);
            let expected = expected_segments(s);
            assert_eq!(usize::from(g.segments()), expected.len());
            let wire = on_the_wire(&frame);
            assert_eq!(wire, expected, "v6 {} payload {}", s.v6, s.payload);
            for (k, packet) in wire.iter().enumerate() {
                assert!(checksums_hold(packet), "segment {k}");
                assert_eq!(g.wire_len(k as u16) as usize, packet.len());
            }
            let total: usize = wire.iter().map(Vec::len).sum();
            assert_eq!(g.wire_total() as usize, total);
        }
    }

    #[test]
    fn any_runs_written_as_smaller_super_packets_give_the_same_wire_packets() {
        for v6 in [false, true] {
            let s = Spec {
                v6,
                flags: 0x80 | 0x19,
                ecn: true,
                ..SPEC
            };
            let frame = super_frame(&s);
            let g = gso_of(&frame);
            let expected = expected_segments(&s);
            // 45 segments: singles at both ends, long and short runs between.
            for runs in [
                vec![45],
                vec![1, 43, 1],
                vec![2, 3, 5, 7, 11, 13, 4],
                vec![1; 45],
                vec![44, 1],
            ] {
                assert_eq!(runs.iter().sum::<u16>(), g.segments());
                let written = write_in_runs(&frame, &g, &runs);
                let mut wire = Vec::new();
                for (run, out) in runs.iter().zip(&written) {
                    let hdr = VnetHdr::read(out[..VNET_HDR_LEN].try_into().unwrap());
                    if *run > 1 {
                        let base = if v6 { GSO_TCPV6 } else { GSO_TCPV4 };
                        assert_eq!(hdr.gso_type & !GSO_ECN, base);
                        assert_eq!(hdr.gso_size, s.mss);
                        assert_eq!(usize::from(hdr.hdr_len), if v6 { 72 } else { 52 });
                    } else {
                        assert_eq!(hdr.gso_type, GSO_NONE);
                    }
                    wire.extend(on_the_wire(out));
                }
                assert_eq!(wire, expected, "runs {runs:?}");
            }
        }
    }

    #[test]
    fn a_finished_checksum_that_computes_to_zero_goes_as_all_ones() {
        // An IPv6 UDP datagram whose checksum the sender's kernel left to finish, its last
        // payload word chosen so that the finished checksum computes to zero.
        let mut frame = vec![0u8; VNET_HDR_LEN + 40 + 8 + 8];
        let hdr = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_NONE,
            hdr_len: 0,
            gso_size: 0,
            csum_start: 40,
            csum_offset: 6,
        };
        hdr.write((&mut frame[..VNET_HDR_LEN]).try_into().unwrap());
        let udp = &mut frame[VNET_HDR_LEN + 40..];
        udp[..8].copy_from_slice(&[0x9c, 0x40, 0x14, 0x51, 0, 16, 0x12, 0x34]);
        udp[8..14].copy_from_slice(b"netlom");
        let rest = fold(sum16(&udp[..14], 0));
        udp[14..16].copy_from_slice(&(0xffff - rest).to_be_bytes());
        assert_eq!(!fold(sum16(udp, 0)), 0, "the sum computes to zero");
        finish_checksum(&mut frame);
        let udp = &frame[VNET_HDR_LEN + 40..];
        assert_eq!(&udp[6..8], &[0xff, 0xff]);
        // The receiver adds the pseudo-header (the sum the sender's kernel had left in place).
        assert_eq!(fold(sum16(udp, 0x1234)), 0xffff, "and checks");
        assert_eq!(
            VnetHdr::read(frame[..VNET_HDR_LEN].try_into().unwrap()).flags,
            0
        );
    }

    #[test]
    fn single_packets_pass_and_bad_offloads_are_refused() {
        let mut plain = vec![0u8; VNET_HDR_LEN];
        plain.extend_from_slice(&[0x45; 28]);
        assert_eq!(parse(&plain), Ok(Frame::Single));
        assert_eq!(parse(&plain[..VNET_HDR_LEN - 1]), Err(Malformed::Truncated));
        // NEEDS_CSUM pointing past the packet.
        let mut csum = plain.clone();
        csum[0] = F_NEEDS_CSUM;
        csum[6..8].copy_from_slice(&20u16.to_ne_bytes());
        csum[8..10].copy_from_slice(&7u16.to_ne_bytes());
        assert_eq!(parse(&csum), Err(Malformed::Truncated));
        csum[8..10].copy_from_slice(&6u16.to_ne_bytes());
        assert_eq!(parse(&csum), Ok(Frame::Single));

        let good = super_frame(&SPEC);
        let mut udp = good.clone();
        udp[1] = 5; // GSO_UDP_L4
        assert_eq!(parse(&udp), Err(Malformed::Offload));
        let mut zero = good.clone();
        zero[4..6].fill(0);
        assert_eq!(parse(&zero), Err(Malformed::Offload));
        let mut not_tcp = good.clone();
        not_tcp[VNET_HDR_LEN + 9] = 17;
        assert_eq!(parse(&not_tcp), Err(Malformed::Offload));
        let mut fragment = good.clone();
        fragment[VNET_HDR_LEN + 6] |= 0x20; // MF
        assert_eq!(parse(&fragment), Err(Malformed::Offload));
        let mut family = good.clone();
        family[1] = GSO_TCPV6;
        assert_eq!(parse(&family), Err(Malformed::NotIp));
        let mut v6 = super_frame(&Spec { v6: true, ..SPEC });
        v6[VNET_HDR_LEN + 6] = 0; // hop-by-hop options first
        assert_eq!(parse(&v6), Err(Malformed::Offload));
        let mut long = good.clone();
        long.truncate(long.len() - 1);
        assert_eq!(parse(&long), Err(Malformed::Truncated));
        let mut doff = good;
        doff[VNET_HDR_LEN + 20 + 12] = 0x40; // TCP header of 16 bytes
        assert_eq!(parse(&doff), Err(Malformed::Truncated));
    }

    #[test]
    fn super_packets_that_would_cost_too_much_work_are_refused() {
        let at = |mss: u16, payload: usize| {
            parse(&super_frame(&Spec {
                mss,
                payload,
                ..SPEC
            }))
        };
        // A segment size of 1: 60,008 segments from one frame, before.
        assert_eq!(at(1, 60_008), Err(Malformed::Segments));
        assert_eq!(at(MIN_GSO_SIZE - 1, 10), Err(Malformed::Segments));
        assert!(matches!(at(MIN_GSO_SIZE, 10), Ok(Frame::Super(_))));
        let most = usize::from(MAX_GSO_SEGMENTS);
        assert!(
            matches!(at(60, 60 * most), Ok(Frame::Super(g)) if g.segments() == MAX_GSO_SEGMENTS)
        );
        assert_eq!(at(60, 60 * most + 1), Err(Malformed::Segments));
        // What a host's TCP sends at the smallest MSS a program may set, and at netloom's
        // smallest MTU, passes.
        assert!(matches!(at(76, 65_000), Ok(Frame::Super(_))));
        assert!(matches!(at(1208, 65_000), Ok(Frame::Super(_))));
    }

    /// xorshift64*: enough randomness for mutations, no dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Parses `frame` and, if it is a super-packet, builds every segment and a few runs,
    /// checking that what would be written stays inside the head and the frame.
    fn exercise(frame: &[u8], rng: &mut Rng) {
        let Ok(Frame::Super(g)) = parse(frame) else {
            return;
        };
        let n = g.segments();
        assert!(n >= 1);
        let mut head = [0u8; MAX_HEAD];
        let mut covered = 0;
        let mut start = 0;
        while start < n {
            let len = 1 + rng.below(usize::from(n - start)) as u16;
            let (h, payload) = g.build(frame, start..start + len, &mut head);
            assert!(h <= MAX_HEAD && payload.start >= h && payload.end <= frame.len());
            covered += h - VNET_HDR_LEN + payload.len();
            start += len;
            let out = [&head[..h], &frame[payload]].concat();
            // What is written is itself a frame netloom would accept.
            assert!(parse(&out).is_ok());
        }
        let singles: u32 = (0..n).map(|k| g.wire_len(k)).sum();
        assert_eq!(singles, g.wire_total());
        assert!(covered as u32 <= g.wire_total());
    }

    #[test]
    fn never_panics_on_mutated_or_truncated_frames() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let seeds = [
            super_frame(&SPEC),
            super_frame(&Spec { v6: true, ..SPEC }),
            super_frame(&Spec {
                payload: 3000,
                mss: 25,
                ip_options: 40,
                tcp_options: 40,
                ..SPEC
            }),
        ];
        for seed in &seeds {
            // Every prefix (the packet claims more than it has, headers cut anywhere).
            for len in 0..200.min(seed.len()) {
                exercise(&seed[..len], &mut rng);
            }
            for _ in 0..3000 {
                let mut f = seed.clone();
                for _ in 0..1 + rng.below(6) {
                    // Mostly the headers, where the lengths and types are.
                    let at = if rng.below(4) == 0 {
                        rng.below(f.len())
                    } else {
                        rng.below(140.min(f.len()))
                    };
                    f[at] = rng.next() as u8;
                }
                if rng.below(3) == 0 {
                    f.truncate(rng.below(f.len() + 1));
                }
                exercise(&f, &mut rng);
            }
        }
        // And noise of every length.
        for len in 0..400 {
            let f: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            exercise(&f, &mut rng);
            let mut g = f.clone();
            if g.len() > 20 {
                g[1] = GSO_TCPV4;
                g[VNET_HDR_LEN] = 0x45;
                exercise(&g, &mut rng);
            }
        }
    }
}
