//! Owns the ICMP errors routers send, the TTL and the errors' rate limit; not routing or sending.
//!
//! ICMP and ICMPv6 errors a router sends about a packet it refused (RFC 792, RFC 4443), the
//! TTL in an IP header, and the per-router rate limit of errors Linux applies.

use crate::{fold, set_ipv4_word, sum16};
use netloom_time::{Duration, Instant};
use std::net::IpAddr;

/// Why a router answers with an error; each maps to one ICMP and one ICMPv6 type and code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The TTL or hop limit ran out: ICMP 11/0, ICMPv6 3/0.
    TimeExceeded,
    /// No route to the destination (none exists, or a link down left none): ICMP 3/0 (net
    /// unreachable), ICMPv6 1/0 (no route to destination), as Linux answers without a route.
    NoRoute,
    /// The address belongs to no host: ICMP 3/1 (host unreachable), ICMPv6 1/3 (address
    /// unreachable), as Linux answers when nothing on the link has the address.
    NoSuchHost,
    /// A UDP datagram for a router, which has no socket to take it: ICMP 3/3 (port
    /// unreachable), ICMPv6 1/4, as a Linux router answers traceroute's probes to it.
    PortUnreachable,
    /// Larger than the next link's MTU: ICMP 3/4 (fragmentation needed, with the MTU) for an
    /// IPv4 packet with DF set, ICMPv6 2/0 (packet too big).
    TooBig {
        /// The next link's MTU, in bytes.
        mtu: u32,
    },
}

impl Error {
    /// Type, code and the 32 bits after the checksum, for IPv4 or IPv6.
    fn header(self, v6: bool) -> (u8, u8, u32) {
        match (self, v6) {
            (Error::TimeExceeded, false) => (11, 0, 0),
            (Error::TimeExceeded, true) => (3, 0, 0),
            (Error::NoRoute, false) => (3, 0, 0),
            (Error::NoRoute, true) => (1, 0, 0),
            (Error::NoSuchHost, false) => (3, 1, 0),
            (Error::NoSuchHost, true) => (1, 3, 0),
            (Error::PortUnreachable, false) => (3, 3, 0),
            (Error::PortUnreachable, true) => (1, 4, 0),
            (Error::TooBig { mtu }, false) => (3, 4, mtu.min(0xffff)),
            (Error::TooBig { mtu }, true) => (2, 0, mtu),
        }
    }

    /// Whether Linux's rate limit applies (`icmp_ratemask` by default spares fragmentation
    /// needed, and ICMPv6's `ratemask` spares packet too big): path MTU discovery must not
    /// stall.
    pub fn is_limited(self) -> bool {
        !matches!(self, Error::TooBig { .. })
    }
}

/// ICMP's protocol number in IPv4, ICMPv6's next header in IPv6.
const ICMP: u8 = 1;
const ICMPV6: u8 = 58;
/// The TTL of the errors a router sends (Linux's default).
pub const ERROR_TTL: u8 = 64;
/// The most an IPv4 error quotes, as RFC 1812 4.3.2.3 allows: the error is at most 576 bytes.
const MAX_V4_ERROR: usize = 576;
/// The most an ICMPv6 error takes, as RFC 4443 2.4 (c) asks: the IPv6 minimum MTU.
const MAX_V6_ERROR: usize = 1280;
/// The most any error takes.
pub const MAX_ERROR: usize = MAX_V6_ERROR;

/// The TTL of an IPv4 packet or the hop limit of an IPv6 one (`ip::endpoints` checked the header).
pub fn ttl(packet: &[u8]) -> u8 {
    if packet[0] >> 4 == 4 {
        packet[8]
    } else {
        packet[7]
    }
}

/// Sets the TTL (IPv4, updating the header checksum: `ip::set_ipv4_word`) or the hop limit (IPv6).
pub fn set_ttl(packet: &mut [u8], ttl: u8) {
    if packet[0] >> 4 != 4 {
        packet[7] = ttl;
        return;
    }
    // The TTL shares its 16-bit word with the protocol.
    set_ipv4_word(packet, 8, u16::from_be_bytes([ttl, packet[9]]));
}

/// Writes into `out` the error `from` sends back to the source of `original` (an IP packet
/// whose header `ip::endpoints` checked) and returns its length; `None` when no error may be
/// sent about it (RFC 1122 3.2.2, RFC 1812 4.3.2.7, RFC 4443 2.4 (e)): it is itself an ICMP
/// error, an IPv4 fragment other than the first, or for a multicast or broadcast address (but
/// for packet too big in IPv6), or `from` is not of its IP version. `out` must hold
/// `MAX_ERROR` bytes.
pub fn error(original: &[u8], from: IpAddr, why: Error, out: &mut [u8]) -> Option<usize> {
    let v6 = original[0] >> 4 == 6;
    // (The header of the error, the original's transport protocol and where its header starts.)
    let (header, proto, transport, max) = if v6 {
        (40, original[6], 40, MAX_V6_ERROR)
    } else {
        let offset = u16::from_be_bytes([original[6], original[7]]) & 0x1fff;
        if offset != 0 {
            return None;
        }
        (
            20,
            original[9],
            usize::from(original[0] & 0x0f) * 4,
            MAX_V4_ERROR,
        )
    };
    let icmp = if v6 { ICMPV6 } else { ICMP };
    if proto == icmp && original.get(transport).is_some_and(|&t| is_error(t, v6)) {
        return None;
    }
    let group = if v6 {
        original[24] == 0xff && !matches!(why, Error::TooBig { .. })
    } else {
        original[16] >> 4 == 0xe || original[16..20] == [0xff; 4]
    };
    if group {
        return None;
    }
    let quoted = original.len().min(max - header - 8);
    let total = header + 8 + quoted;
    let (t, code, rest) = why.header(v6);
    let (icmp_head, tail) = out[..total].split_at_mut(header);
    tail[0] = t;
    tail[1] = code;
    tail[2..4].fill(0);
    tail[4..8].copy_from_slice(&rest.to_be_bytes());
    tail[8..].copy_from_slice(&original[..quoted]);
    let sum = match (from, v6) {
        (IpAddr::V4(src), false) => {
            let h = icmp_head;
            h[0] = 0x45;
            h[1] = 0xc0; // precedence "internetwork control", as Linux sends errors
            h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            h[4..8].fill(0);
            h[8] = ERROR_TTL;
            h[9] = ICMP;
            h[10..12].fill(0);
            h[12..16].copy_from_slice(&src.octets());
            h[16..20].copy_from_slice(&original[12..16]);
            let check = !fold(sum16(h, 0));
            h[10..12].copy_from_slice(&check.to_be_bytes());
            sum16(tail, 0)
        }
        (IpAddr::V6(src), true) => {
            let h = icmp_head;
            h[0..4].copy_from_slice(&[0x60, 0, 0, 0]);
            h[4..6].copy_from_slice(&((total - header) as u16).to_be_bytes());
            h[6] = ICMPV6;
            h[7] = ERROR_TTL;
            h[8..24].copy_from_slice(&src.octets());
            h[24..40].copy_from_slice(&original[8..24]);
            let pseudo = sum16(&h[8..40], (total - header) as u32 + u32::from(ICMPV6));
            sum16(tail, pseudo)
        }
        _ => return None,
    };
    tail[2..4].copy_from_slice(&(!fold(sum)).to_be_bytes());
    Some(total)
}

/// What a router answers a packet addressed to it with (`from` is its address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToRouter {
    /// An echo request: the reply, `len` bytes in `out`, not rate-limited (as Linux).
    Echo(usize),
    /// A UDP datagram: port unreachable.
    Udp,
    /// Anything else: nothing.
    Other,
}

/// Says what a router does with `packet` (header checked) addressed to it, writing an echo
/// reply into `out` (`MAX_ERROR` bytes; a larger request is not answered).
pub fn to_router(packet: &[u8], out: &mut [u8]) -> ToRouter {
    let v6 = packet[0] >> 4 == 6;
    let (header, proto, echo_request, echo_reply) = if v6 {
        (40, packet[6], 128, 129)
    } else {
        (usize::from(packet[0] & 0x0f) * 4, packet[9], 8, 0)
    };
    let total = if v6 {
        40 + usize::from(u16::from_be_bytes([packet[4], packet[5]]))
    } else {
        usize::from(u16::from_be_bytes([packet[2], packet[3]]))
    };
    let icmp = if v6 { ICMPV6 } else { ICMP };
    match proto {
        17 => return ToRouter::Udp,
        p if p != icmp || total > out.len() || total < header + 8 => return ToRouter::Other,
        _ if packet[header] != echo_request => return ToRouter::Other,
        _ => {}
    }
    let reply = &mut out[..total];
    reply.copy_from_slice(&packet[..total]);
    let (src, dst) = if v6 {
        (8..24, 24..40)
    } else {
        (12..16, 16..20)
    };
    reply[src.clone()].copy_from_slice(&packet[dst.clone()]);
    reply[dst].copy_from_slice(&packet[src]);
    let (h, body) = reply.split_at_mut(header);
    body[0] = echo_reply;
    body[2..4].fill(0);
    let sum = if v6 {
        h[7] = ERROR_TTL;
        sum16(&h[8..40], body.len() as u32 + u32::from(ICMPV6))
    } else {
        h[8] = ERROR_TTL;
        h[10..12].fill(0);
        let check = !fold(sum16(h, 0));
        h[10..12].copy_from_slice(&check.to_be_bytes());
        0
    };
    let check = !fold(sum16(body, sum));
    body[2..4].copy_from_slice(&check.to_be_bytes());
    ToRouter::Echo(total)
}

/// Whether an ICMP (`v6` false) or ICMPv6 type is an error message.
fn is_error(kind: u8, v6: bool) -> bool {
    if v6 {
        kind < 128
    } else {
        matches!(kind, 3 | 4 | 5 | 11 | 12)
    }
}

/// One router's rate limit of errors, as Linux's per-destination limit (`icmp_ratelimit`,
/// 1000 ms; a token bucket holding up to 6 tokens, one spent per error).
#[derive(Clone, Copy, Debug)]
pub struct Bucket {
    /// Credit in nanoseconds, up to `BURST` intervals.
    credit: u64,
    last: Instant,
}

/// `net.ipv4.icmp_ratelimit` and `net.ipv6.icmp.ratelimit`: one error per second...
pub const INTERVAL: Duration = Duration(1_000_000_000);
/// ...after a burst of 6 (Linux's `XRLIM_BURST_FACTOR`).
pub const BURST: u64 = 6;

impl Bucket {
    /// A full bucket at `now`.
    pub fn new(now: Instant) -> Bucket {
        Bucket {
            credit: BURST * INTERVAL.as_nanos(),
            last: now,
        }
    }

    /// Whether an error may be sent at `now` (spending a token if so).
    pub fn allow(&mut self, now: Instant) -> bool {
        let earned = now.saturating_since(self.last).as_nanos();
        self.credit = (self.credit + earned).min(BURST * INTERVAL.as_nanos());
        self.last = now;
        if self.credit >= INTERVAL.as_nanos() {
            self.credit -= INTERVAL.as_nanos();
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ones'-complement sum of `bytes` as RFC 1071 computes it, written apart from the
    /// code under test: a packet whose checksum holds sums to 0xffff.
    fn rfc1071(bytes: &[u8]) -> u16 {
        let mut sum: u64 = 0;
        for pair in bytes.chunks(2) {
            sum += u64::from(pair[0]) << 8 | u64::from(*pair.get(1).unwrap_or(&0));
        }
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum as u16
    }

    /// A UDP probe of `len` bytes from 198.18.0.1 to 198.18.0.2 with TTL 1 and DF set.
    fn udp4(len: usize) -> Vec<u8> {
        let mut p = vec![0u8; len];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        p[6] = 0x40;
        p[8] = 1;
        p[9] = 17;
        p[12..16].copy_from_slice(&[198, 18, 0, 1]);
        p[16..20].copy_from_slice(&[198, 18, 0, 2]);
        let check = !rfc1071(&p[..20]);
        p[10..12].copy_from_slice(&check.to_be_bytes());
        p[20..22].copy_from_slice(&33434u16.to_be_bytes());
        p
    }

    fn udp6(len: usize) -> Vec<u8> {
        let mut p = vec![0u8; len];
        p[0] = 0x60;
        p[4..6].copy_from_slice(&((len - 40) as u16).to_be_bytes());
        p[6] = 17;
        p[7] = 1;
        p[8..24].copy_from_slice(
            &"fd6e:6c00::1"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets(),
        );
        p[24..40].copy_from_slice(
            &"fd6e:6c00::2"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets(),
        );
        p
    }

    #[test]
    fn an_ipv4_error_has_right_checksums_and_quotes_the_original() {
        let original = udp4(60);
        let router: IpAddr = "198.19.255.254".parse().unwrap();
        let mut out = vec![0; MAX_ERROR];
        for (why, t, code, rest) in [
            (Error::TimeExceeded, 11, 0, 0),
            (Error::NoRoute, 3, 0, 0),
            (Error::NoSuchHost, 3, 1, 0),
            (Error::TooBig { mtu: 1400 }, 3, 4, 1400u32),
        ] {
            let len = error(&original, router, why, &mut out).unwrap();
            let e = &out[..len];
            assert_eq!(len, 20 + 8 + 60);
            assert_eq!(rfc1071(&e[..20]), 0xffff, "IP header checksum");
            assert_eq!(rfc1071(&e[20..]), 0xffff, "ICMP checksum");
            assert_eq!(u16::from_be_bytes([e[2], e[3]]) as usize, len);
            assert_eq!(
                (e[9], &e[12..16], &e[16..20]),
                (1, &[198, 19, 255, 254][..], &[198, 18, 0, 1][..])
            );
            assert_eq!((e[20], e[21]), (t, code));
            assert_eq!(u32::from_be_bytes(e[24..28].try_into().unwrap()), rest);
            assert_eq!(&e[28..], &original[..]);
        }
        // A large original is quoted up to 576 bytes of error in all.
        let len = error(&udp4(1500), router, Error::TimeExceeded, &mut out).unwrap();
        assert_eq!(len, 576);
        assert_eq!(rfc1071(&out[20..len]), 0xffff);
    }

    #[test]
    fn an_ipv6_error_has_the_pseudo_header_checksum_and_fits_1280_bytes() {
        let original = udp6(1500);
        let router: IpAddr = "fd6e:6c00::ff00:0:0:1".parse().unwrap();
        let mut out = vec![0; MAX_ERROR];
        for (why, t, code, rest) in [
            (Error::TimeExceeded, 3, 0, 0),
            (Error::NoRoute, 1, 0, 0),
            (Error::NoSuchHost, 1, 3, 0),
            (Error::TooBig { mtu: 1400 }, 2, 0, 1400u32),
        ] {
            let len = error(&original, router, why, &mut out).unwrap();
            let e = &out[..len];
            assert_eq!(len, 1280);
            assert_eq!(usize::from(u16::from_be_bytes([e[4], e[5]])), len - 40);
            assert_eq!((e[6], &e[24..40]), (58, &original[8..24]));
            let mut pseudo = e[8..40].to_vec();
            pseudo.extend_from_slice(&((len - 40) as u32).to_be_bytes());
            pseudo.extend_from_slice(&[0, 0, 0, 58]);
            pseudo.extend_from_slice(&e[40..]);
            assert_eq!(rfc1071(&pseudo), 0xffff, "ICMPv6 checksum");
            assert_eq!((e[40], e[41]), (t, code));
            assert_eq!(u32::from_be_bytes(e[44..48].try_into().unwrap()), rest);
            assert_eq!(&e[48..], &original[..1280 - 48]);
        }
    }

    #[test]
    fn no_error_about_an_error_a_later_fragment_or_across_versions() {
        let router: IpAddr = "198.19.255.254".parse().unwrap();
        let mut out = vec![0; MAX_ERROR];
        let mut icmp_error = udp4(60);
        icmp_error[9] = ICMP;
        icmp_error[20] = 11;
        assert_eq!(error(&icmp_error, router, Error::NoRoute, &mut out), None);
        icmp_error[20] = 8; // an echo request is answered
        assert!(error(&icmp_error, router, Error::NoRoute, &mut out).is_some());
        let mut fragment = udp4(60);
        fragment[7] = 1;
        assert_eq!(error(&fragment, router, Error::NoRoute, &mut out), None);
        assert_eq!(error(&udp6(100), router, Error::NoRoute, &mut out), None);
        // Nothing about a packet for a group: IPv6 neighbour discovery, IPv4 multicast or
        // broadcast; but packet too big is sent for IPv6 multicast (RFC 4443 2.4 (e.3)).
        let mut group = udp4(60);
        for dst in [[224, 0, 0, 251], [255; 4]] {
            group[16..20].copy_from_slice(&dst);
            assert_eq!(error(&group, router, Error::NoSuchHost, &mut out), None);
        }
        let router6: IpAddr = "fd6e:6c00::ff00:0:0:1".parse().unwrap();
        let mut group = udp6(100);
        group[24] = 0xff;
        assert_eq!(error(&group, router6, Error::NoSuchHost, &mut out), None);
        assert!(error(&group, router6, Error::TooBig { mtu: 1280 }, &mut out).is_some());
    }

    #[test]
    fn a_router_answers_an_echo_request_to_it_with_a_reply_from_it() {
        let mut request = udp4(64);
        request[9] = ICMP;
        request[20] = 8;
        request[24..28].copy_from_slice(&[0, 7, 0, 1]); // identifier 7, sequence 1
        let mut out = vec![0; MAX_ERROR];
        assert_eq!(to_router(&request, &mut out), ToRouter::Echo(64));
        let reply = &out[..64];
        assert_eq!(
            (&reply[12..16], &reply[16..20]),
            (&request[16..20], &request[12..16])
        );
        assert_eq!((reply[20], &reply[24..]), (0, &request[24..]));
        assert_eq!(rfc1071(&reply[..20]), 0xffff);
        assert_eq!(rfc1071(&reply[20..]), 0xffff);
        let mut request = udp6(64);
        request[6] = ICMPV6;
        request[40] = 128;
        assert_eq!(to_router(&request, &mut out), ToRouter::Echo(64));
        let mut pseudo = out[8..40].to_vec();
        pseudo.extend_from_slice(&[0, 0, 0, 24, 0, 0, 0, 58]);
        pseudo.extend_from_slice(&out[40..64]);
        assert_eq!((out[40], rfc1071(&pseudo)), (129, 0xffff));
        assert_eq!(to_router(&udp4(64), &mut out), ToRouter::Udp);
        request[40] = 135; // neighbour solicitation
        assert_eq!(to_router(&request, &mut out), ToRouter::Other);
    }

    #[test]
    fn setting_the_ttl_keeps_the_ipv4_checksum_right() {
        let mut p = udp4(60);
        set_ttl(&mut p, 61);
        assert_eq!((ttl(&p), rfc1071(&p[..20])), (61, 0xffff));
        let mut p = udp6(60);
        set_ttl(&mut p, 61);
        assert_eq!(ttl(&p), 61);
    }

    #[test]
    fn the_rate_limit_allows_a_burst_of_six_then_one_a_second() {
        let mut b = Bucket::new(Instant::ZERO);
        assert!((0..6).all(|_| b.allow(Instant::ZERO)));
        assert!(!b.allow(Instant::ZERO));
        assert!(!b.allow(Instant(999_999_999)));
        assert!(b.allow(Instant(1_000_000_000)));
        assert!(!b.allow(Instant(1_000_000_000)));
        assert!(!Error::TooBig { mtu: 1400 }.is_limited() && Error::TimeExceeded.is_limited());
    }
}
