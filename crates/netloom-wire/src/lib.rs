//! netloom's hand-offs on the wire: GENEVE datagrams (RFC 8926) with a netloom option, carrying one
//! real IP packet with its hand-off, or a batch of hand-offs alone. Encoding, splitting and checked
//! decoding only; the sockets are the caller's. docs/wire.md draws every byte.

mod seal;

pub use seal::{BadKey, Key, Unsealed, TAG_LEN};

use netloom_engine::{DescriptorError, Handoff, DESCRIPTOR_LEN};

/// GENEVE's UDP port (IANA), under which tshark dissects the datagrams without being told.
pub const GENEVE_PORT: u16 = 6081;
/// The netloom option's class: the first of the classes RFC 8926 §7 and IANA's "Geneve Option
/// Class" registry keep for experimental use (0xFFF0–0xFFFF).
pub const OPTION_CLASS: u16 = 0xFFF0;
/// The netloom option's type: 0x4E ('N') with the critical bit (0x80) set, since a receiver that
/// does not know it must not take the inner packet for ordinary traffic.
pub const OPTION_TYPE: u8 = 0xCE;
/// Protocol type of a datagram whose payload is a batch of hand-offs: IEEE 802's Local
/// Experimental EtherType 1, so no dissector claims it.
pub const PROTOCOL_DESCRIPTORS: u16 = 0x88B5;
/// Protocol type of an IPv4 packet (an EtherType, as RFC 8926 §3.4 says).
pub const PROTOCOL_IPV4: u16 = 0x0800;
/// Protocol type of an IPv6 packet.
pub const PROTOCOL_IPV6: u16 = 0x86DD;
/// The layout of the netloom option's data, its first byte.
pub const VERSION: u8 = 1;
/// The largest VNI, which names the run: 24 bits.
pub const MAX_VNI: u32 = (1 << 24) - 1;

/// GENEVE's fixed header: version, options length, O and C bits, protocol type, VNI.
const GENEVE_LEN: usize = 8;
/// An option's own header: class, type, length.
const OPTION_HEADER_LEN: usize = 4;
/// The netloom option's fields before a descriptor (docs/wire.md).
const FIELDS_LEN: usize = 28;
/// The C bit of GENEVE's second byte: a critical option is present.
const CRITICAL: u8 = 0x40;
/// The critical bit of an option's type.
const TYPE_CRITICAL: u8 = 0x80;
/// The LAST flag of the netloom option: the sender's batch ends with this datagram.
const FLAG_LAST: u8 = 0x01;
/// Bytes before the payload of a batch datagram.
const BATCH_OVERHEAD: usize = GENEVE_LEN + OPTION_HEADER_LEN + FIELDS_LEN;

/// Who sends a datagram to whom, for which run and window, and where it stands in its batch:
/// the netloom option's fields (and the VNI).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The run (GENEVE's VNI, 24 bits): datagrams of another run are not mixed in.
    pub vni: u32,
    /// The sending worker.
    pub from: u16,
    /// The receiving worker.
    pub to: u16,
    /// The batch's sequence number: the lock-step window in virtual time, a counter live.
    pub window: u64,
    /// This datagram's place in its batch, from 0.
    pub part: u16,
    /// Whether the batch ends with this datagram.
    pub last: bool,
    /// The sender's earliest pending event when it sent the batch, in ns (`u64::MAX`: none),
    /// for the window barrier of a virtual-time run.
    pub next_ns: u64,
}

/// What a datagram carries.
#[derive(Debug)]
pub enum Payload<'a> {
    /// A batch of hand-offs, descriptors only (protocol type `PROTOCOL_DESCRIPTORS`).
    Descriptors(Vec<Handoff>),
    /// One real IP packet (protocol type 0x0800 or 0x86DD), its hand-off in the option.
    Packet {
        /// The packet's hand-off.
        handoff: Handoff,
        /// The IP packet, from its IP header on.
        ip: &'a [u8],
    },
}

/// A decoded datagram.
#[derive(Debug)]
pub struct Datagram<'a> {
    /// The netloom option's fields and the VNI.
    pub header: Header,
    /// What it carries.
    pub payload: Payload<'a>,
}

/// Why bytes are not a netloom datagram, or a datagram cannot be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Fewer bytes than the headers say there are.
    #[error("datagram of {got} bytes is cut short: its headers need {need}")]
    Short {
        /// Bytes needed.
        need: usize,
        /// Bytes there are.
        got: usize,
    },
    /// The GENEVE version (top 2 bits) is not 0, the only one RFC 8926 defines.
    #[error("GENEVE version {0}: only version 0 exists")]
    GeneveVersion(u8),
    /// A critical option netloom does not know (RFC 8926 §3.5: drop the datagram).
    #[error("unknown critical GENEVE option class {class:#06x} type {kind:#04x}")]
    UnknownCritical {
        /// Its class.
        class: u16,
        /// Its type.
        kind: u8,
    },
    /// No netloom option among the GENEVE options.
    #[error("no netloom option (class {OPTION_CLASS:#06x} type {OPTION_TYPE:#04x})")]
    NoOption,
    /// The netloom option's length does not fit its payload's kind.
    #[error("netloom option of {got} bytes where {want} are needed")]
    OptionLength {
        /// Its data's length.
        got: usize,
        /// The length its kind takes.
        want: usize,
    },
    /// The netloom option's layout version is not `VERSION`.
    #[error("netloom option version {0}: this netloom reads version {VERSION}")]
    Version(u8),
    /// A flag or reserved field that must be zero is not.
    #[error("netloom option has reserved bits set at byte {0} of its data")]
    Reserved(usize),
    /// A protocol type that is neither IP nor a batch of hand-offs.
    #[error(
        "protocol type {0:#06x} is neither IPv4 (0x0800), IPv6 (0x86dd) nor hand-offs (0x88b5)"
    )]
    Protocol(u16),
    /// A batch's payload is not `count` descriptors.
    #[error("a batch of {count} hand-offs needs {want} bytes of payload, not {got}")]
    Count {
        /// Descriptors the option announces.
        count: u16,
        /// Bytes they take.
        want: usize,
        /// Bytes there are.
        got: usize,
    },
    /// A datagram with an IP packet announces other than the one hand-off its option holds.
    #[error("a datagram with an IP packet carries 1 hand-off, not {0}")]
    PacketCount(u16),
    /// A descriptor does not decode.
    #[error("hand-off {index} of the datagram: {error}")]
    Descriptor {
        /// Its place in the datagram.
        index: usize,
        /// Why.
        error: DescriptorError,
    },
    /// An inner packet whose first nibble is not the IP version its protocol type says.
    #[error("the inner packet is not IPv4 or IPv6 (first byte {0:#04x})")]
    NotIp(u8),
    /// More than a datagram can hold: a VNI over 24 bits, more than 65,535 hand-offs, or a
    /// maximum datagram size with no room for one.
    #[error("does not fit a datagram: {0}")]
    TooBig(&'static str),
}

/// What one receiver of a live run got from one sender, by the sequence numbers of the sender's
/// datagrams (`Header::window`, from 0 on each channel): a number never seen below the highest
/// one seen is a datagram lost on the way (a full socket buffer, a dropped UDP datagram). One
/// that arrives out of order counts as lost until it comes; those lost after the last one to
/// arrive cannot be told from those still on their way.
///
/// A number is taken once: one seen before (a datagram replayed), one older than the last
/// `REPLAY_WINDOW` numbers (which cannot be told from a replay), or one more than `MAX_AHEAD`
/// past the highest (no sender loses that many in a row; counting them would make the lost
/// figure whatever the datagram says) is refused and counts nowhere, as an anti-replay window
/// does (RFC 4303, section 3.4.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Arrivals {
    /// One more than the highest sequence number seen (0: none yet).
    next: u64,
    /// Datagrams received.
    received: u64,
    /// Which of the `REPLAY_WINDOW` numbers below `next` arrived: bit i is number next-1-i.
    seen: u64,
}

/// How many numbers below the highest one seen may still arrive, once each.
pub const REPLAY_WINDOW: u64 = 64;
/// How far past the highest number seen a datagram may be numbered.
pub const MAX_AHEAD: u64 = 1 << 20;

/// What became of a datagram's sequence number (`Arrivals::arrive`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Not seen before: the datagram is taken.
    Fresh,
    /// Seen before, or too old to tell: refused.
    Replayed,
    /// Implausibly far ahead of the highest number seen: refused.
    TooFarAhead,
}

impl Arrivals {
    /// Notes the arrival of the datagram numbered `sequence`, if it is fresh.
    pub fn arrive(&mut self, sequence: u64) -> Arrival {
        if sequence >= self.next {
            let ahead = sequence - self.next;
            if ahead > MAX_AHEAD {
                return Arrival::TooFarAhead;
            }
            // The window moves up to `sequence`, which is bit 0.
            self.seen = match ahead + 1 {
                shift if shift >= REPLAY_WINDOW => 0,
                shift => self.seen << shift,
            } | 1;
            self.next = sequence + 1;
        } else {
            let back = self.next - 1 - sequence;
            if back >= REPLAY_WINDOW || self.seen & 1 << back != 0 {
                return Arrival::Replayed;
            }
            self.seen |= 1 << back;
        }
        self.received += 1;
        Arrival::Fresh
    }

    /// Datagrams received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Datagrams numbered below the highest one seen that have not arrived.
    pub fn lost(&self) -> u64 {
        self.next.saturating_sub(self.received)
    }
}

/// Appends a datagram carrying the IP packet `ip` (from its IP header on) with its hand-off.
pub fn encode_packet(
    header: &Header,
    handoff: &Handoff,
    ip: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    let protocol = match ip.first().map(|b| b >> 4) {
        Some(4) => PROTOCOL_IPV4,
        Some(6) => PROTOCOL_IPV6,
        _ => return Err(WireError::NotIp(ip.first().copied().unwrap_or(0))),
    };
    put_headers(header, protocol, 1, true, out)?;
    out.extend_from_slice(&handoff.to_bytes());
    out.extend_from_slice(ip);
    Ok(())
}

/// Appends a datagram carrying `handoffs` as one batch (at most 65,535).
pub fn encode_descriptors(
    header: &Header,
    handoffs: &[Handoff],
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    let count = u16::try_from(handoffs.len())
        .map_err(|_| WireError::TooBig("more than 65,535 hand-offs in one datagram"))?;
    put_headers(header, PROTOCOL_DESCRIPTORS, count, false, out)?;
    out.reserve(handoffs.len() * DESCRIPTOR_LEN);
    for h in handoffs {
        out.extend_from_slice(&h.to_bytes());
    }
    Ok(())
}

/// Hand-offs a batch datagram of at most `max_datagram` bytes (the UDP payload) holds.
pub fn descriptors_per_datagram(max_datagram: usize) -> usize {
    (max_datagram.saturating_sub(BATCH_OVERHEAD) / DESCRIPTOR_LEN).min(usize::from(u16::MAX))
}

/// `handoffs` as one batch of datagrams of at most `max_datagram` bytes each, parts numbered
/// from 0 and the last flagged (`header`'s `part` and `last` are set here). An empty batch is
/// one datagram with no hand-offs: it still carries the window and `next_ns`.
pub fn encode_batch(
    header: &Header,
    handoffs: &[Handoff],
    max_datagram: usize,
) -> Result<Vec<Vec<u8>>, WireError> {
    let per = descriptors_per_datagram(max_datagram);
    if per == 0 {
        return Err(WireError::TooBig(
            "the maximum datagram has no room for a hand-off",
        ));
    }
    let chunks: Vec<&[Handoff]> = if handoffs.is_empty() {
        vec![&[]]
    } else {
        handoffs.chunks(per).collect()
    };
    if chunks.len() > usize::from(u16::MAX) + 1 {
        return Err(WireError::TooBig("more than 65,536 datagrams in one batch"));
    }
    let parts = chunks.len();
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, chunk)| {
            let h = Header {
                part: i as u16,
                last: i + 1 == parts,
                ..*header
            };
            let mut out = Vec::with_capacity(BATCH_OVERHEAD + chunk.len() * DESCRIPTOR_LEN);
            encode_descriptors(&h, chunk, &mut out)?;
            Ok(out)
        })
        .collect()
}

/// GENEVE's header, the netloom option's header and fields; the option has room for a
/// descriptor when `with_descriptor`.
fn put_headers(
    h: &Header,
    protocol: u16,
    count: u16,
    with_descriptor: bool,
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    if h.vni > MAX_VNI {
        return Err(WireError::TooBig("a VNI over 24 bits"));
    }
    let data = FIELDS_LEN + if with_descriptor { DESCRIPTOR_LEN } else { 0 };
    let options = OPTION_HEADER_LEN + data;
    // Version 0 in the top two bits; options length in 4-byte words.
    out.push((options / 4) as u8);
    out.push(CRITICAL);
    out.extend_from_slice(&protocol.to_be_bytes());
    out.extend_from_slice(&(h.vni << 8).to_be_bytes());
    out.extend_from_slice(&OPTION_CLASS.to_be_bytes());
    out.push(OPTION_TYPE);
    out.push((data / 4) as u8);
    out.push(VERSION);
    out.push(if h.last { FLAG_LAST } else { 0 });
    out.extend_from_slice(&h.from.to_be_bytes());
    out.extend_from_slice(&h.to.to_be_bytes());
    out.extend_from_slice(&h.part.to_be_bytes());
    out.extend_from_slice(&h.window.to_be_bytes());
    out.extend_from_slice(&h.next_ns.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    Ok(())
}

/// A netloom datagram from `bytes` (a UDP payload). Never panics: whatever is wrong is a
/// `WireError`. Options other than netloom's are skipped unless critical.
pub fn decode(bytes: &[u8]) -> Result<Datagram<'_>, WireError> {
    let need = |n: usize| {
        if bytes.len() < n {
            Err(WireError::Short {
                need: n,
                got: bytes.len(),
            })
        } else {
            Ok(())
        }
    };
    need(GENEVE_LEN)?;
    if bytes[0] >> 6 != 0 {
        return Err(WireError::GeneveVersion(bytes[0] >> 6));
    }
    let options_end = GENEVE_LEN + usize::from(bytes[0] & 0x3F) * 4;
    need(options_end)?;
    let protocol = u16::from_be_bytes([bytes[2], bytes[3]]);
    let vni = u32::from_be_bytes([0, bytes[4], bytes[5], bytes[6]]);
    let mut at = GENEVE_LEN;
    let mut ours = None;
    while at < options_end {
        if options_end - at < OPTION_HEADER_LEN {
            return Err(WireError::Short {
                need: at + OPTION_HEADER_LEN,
                got: options_end,
            });
        }
        let class = u16::from_be_bytes([bytes[at], bytes[at + 1]]);
        let kind = bytes[at + 2];
        let len = usize::from(bytes[at + 3] & 0x1F) * 4;
        let data = at + OPTION_HEADER_LEN;
        if data + len > options_end {
            return Err(WireError::Short {
                need: data + len,
                got: options_end,
            });
        }
        if class == OPTION_CLASS && kind == OPTION_TYPE {
            ours.get_or_insert(&bytes[data..data + len]);
        } else if kind & TYPE_CRITICAL != 0 {
            return Err(WireError::UnknownCritical { class, kind });
        }
        at = data + len;
    }
    let option = ours.ok_or(WireError::NoOption)?;
    if option.len() < FIELDS_LEN {
        return Err(WireError::OptionLength {
            got: option.len(),
            want: FIELDS_LEN,
        });
    }
    if option[0] != VERSION {
        return Err(WireError::Version(option[0]));
    }
    if option[1] & !FLAG_LAST != 0 {
        return Err(WireError::Reserved(1));
    }
    if option[26] != 0 || option[27] != 0 {
        return Err(WireError::Reserved(26));
    }
    let u16_at = |i: usize| u16::from_be_bytes([option[i], option[i + 1]]);
    let u64_at = |i: usize| u64::from_be_bytes(option[i..i + 8].try_into().expect("8 bytes"));
    let header = Header {
        vni,
        from: u16_at(2),
        to: u16_at(4),
        part: u16_at(6),
        window: u64_at(8),
        next_ns: u64_at(16),
        last: option[1] & FLAG_LAST != 0,
    };
    let count = u16_at(24);
    let inner = &bytes[options_end..];
    let descriptor = |index: usize, b: &[u8]| {
        let b: &[u8; DESCRIPTOR_LEN] = b.try_into().expect("a descriptor's length");
        Handoff::from_bytes(b).map_err(|error| WireError::Descriptor { index, error })
    };
    let payload = match protocol {
        PROTOCOL_DESCRIPTORS => {
            if option.len() != FIELDS_LEN {
                return Err(WireError::OptionLength {
                    got: option.len(),
                    want: FIELDS_LEN,
                });
            }
            let want = usize::from(count) * DESCRIPTOR_LEN;
            if inner.len() != want {
                return Err(WireError::Count {
                    count,
                    want,
                    got: inner.len(),
                });
            }
            let handoffs = inner
                .chunks_exact(DESCRIPTOR_LEN)
                .enumerate()
                .map(|(i, b)| descriptor(i, b))
                .collect::<Result<_, _>>()?;
            Payload::Descriptors(handoffs)
        }
        PROTOCOL_IPV4 | PROTOCOL_IPV6 => {
            if option.len() != FIELDS_LEN + DESCRIPTOR_LEN {
                return Err(WireError::OptionLength {
                    got: option.len(),
                    want: FIELDS_LEN + DESCRIPTOR_LEN,
                });
            }
            if count != 1 {
                return Err(WireError::PacketCount(count));
            }
            let version = if protocol == PROTOCOL_IPV4 { 4 } else { 6 };
            match inner.first() {
                Some(&b) if b >> 4 == version => {}
                first => return Err(WireError::NotIp(first.copied().unwrap_or(0))),
            }
            Payload::Packet {
                handoff: descriptor(0, &option[FIELDS_LEN..])?,
                ip: inner,
            }
        }
        other => return Err(WireError::Protocol(other)),
    };
    Ok(Datagram { header, payload })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Hand-offs of random content: random descriptors, those that decode.
    fn handoffs(rng: &mut impl Rng, n: usize) -> Vec<Handoff> {
        std::iter::repeat_with(|| {
            let mut b = [0u8; DESCRIPTOR_LEN];
            rng.fill(&mut b[..]);
            b[17] &= 0b11;
            b[19] = 0;
            b[16] = 0;
            b[32..36].fill(0);
            Handoff::from_bytes(&b).ok()
        })
        .flatten()
        .take(n)
        .collect()
    }

    fn bytes(h: &[Handoff]) -> Vec<[u8; DESCRIPTOR_LEN]> {
        h.iter().map(Handoff::to_bytes).collect()
    }

    fn header() -> Header {
        Header {
            vni: 0xABCDEF,
            from: 3,
            to: 250,
            window: 1 << 40,
            part: 0,
            last: true,
            next_ns: 123_456_789,
        }
    }

    /// An IPv4 header (20 bytes, UDP, no checksum) and 4 bytes of data.
    const IPV4: [u8; 24] = [
        0x45, 0, 0, 24, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 1, 2, 3, 4,
    ];

    #[test]
    fn a_packet_and_its_handoff_come_back_whole() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let h = handoffs(&mut rng, 1);
        let mut out = Vec::new();
        encode_packet(&header(), &h[0], &IPV4, &mut out).unwrap();
        let d = decode(&out).unwrap();
        assert_eq!(d.header, header());
        let Payload::Packet { handoff, ip } = d.payload else {
            panic!("not a packet: {:?}", d.payload);
        };
        assert_eq!(handoff.to_bytes(), h[0].to_bytes());
        assert_eq!(ip, IPV4);
        // The protocol type follows the IP version.
        assert_eq!(u16::from_be_bytes([out[2], out[3]]), PROTOCOL_IPV4);
        let mut v6 = vec![0x60; 40];
        v6[0] = 0x60;
        out.clear();
        encode_packet(&header(), &h[0], &v6, &mut out).unwrap();
        assert_eq!(u16::from_be_bytes([out[2], out[3]]), PROTOCOL_IPV6);
        assert_eq!(
            encode_packet(&header(), &h[0], &[0x20, 1], &mut out),
            Err(WireError::NotIp(0x20))
        );
    }

    #[test]
    fn a_batch_split_into_datagrams_comes_back_whole_and_in_order() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
        let all = handoffs(&mut rng, 1000);
        for max in [BATCH_OVERHEAD + DESCRIPTOR_LEN, 1400, 9000, 65_507] {
            let per = descriptors_per_datagram(max);
            let datagrams = encode_batch(&header(), &all, max).unwrap();
            assert_eq!(datagrams.len(), all.len().div_ceil(per), "max {max}");
            let mut back = Vec::new();
            for (i, d) in datagrams.iter().enumerate() {
                assert!(d.len() <= max, "datagram of {} bytes over {max}", d.len());
                let d = decode(d).unwrap();
                assert_eq!(d.header.part as usize, i);
                assert_eq!(d.header.last, i + 1 == datagrams.len());
                assert_eq!(
                    (d.header.from, d.header.to, d.header.window),
                    (3, 250, 1 << 40)
                );
                let Payload::Descriptors(h) = d.payload else {
                    panic!("not a batch");
                };
                back.extend(h);
            }
            assert_eq!(bytes(&back), bytes(&all));
        }
        assert!(encode_batch(&header(), &all, BATCH_OVERHEAD + DESCRIPTOR_LEN - 1).is_err());
    }

    #[test]
    fn an_empty_batch_is_one_datagram_that_still_says_when_the_sender_is_next() {
        let datagrams = encode_batch(&header(), &[], 1400).unwrap();
        assert_eq!(datagrams.len(), 1);
        let d = decode(&datagrams[0]).unwrap();
        assert!(d.header.last);
        assert_eq!(d.header.next_ns, 123_456_789);
        assert!(matches!(d.payload, Payload::Descriptors(h) if h.is_empty()));
    }

    #[test]
    fn the_geneve_header_is_rfc_8926s() {
        let mut out = Vec::new();
        encode_descriptors(&header(), &[], &mut out).unwrap();
        assert_eq!(out[0] >> 6, 0, "version 0");
        assert_eq!(
            usize::from(out[0] & 0x3F) * 4,
            out.len() - GENEVE_LEN,
            "options length"
        );
        assert_eq!(out[1], 0x40, "O clear, C set (the option is critical)");
        assert_eq!(&out[2..4], &PROTOCOL_DESCRIPTORS.to_be_bytes());
        assert_eq!(
            &out[4..8],
            &[0xAB, 0xCD, 0xEF, 0],
            "VNI, then a reserved byte"
        );
        assert_eq!(&out[8..10], &OPTION_CLASS.to_be_bytes());
        assert_eq!(out[10], OPTION_TYPE);
        assert_eq!(usize::from(out[11]) * 4, FIELDS_LEN);
        let too_wide = Header {
            vni: MAX_VNI + 1,
            ..header()
        };
        assert!(encode_descriptors(&too_wide, &[], &mut out).is_err());
    }

    #[test]
    fn other_options_are_skipped_unless_critical() {
        let mut ours = Vec::new();
        encode_descriptors(&header(), &[], &mut ours).unwrap();
        // Another vendor's 4-byte option before ours: class 0x0102, type 0x03 (not critical).
        let with = |kind: u8| {
            let mut d = ours[..GENEVE_LEN].to_vec();
            d[0] += 2;
            d.extend_from_slice(&[0x01, 0x02, kind, 1, 9, 9, 9, 9]);
            d.extend_from_slice(&ours[GENEVE_LEN..]);
            d
        };
        assert_eq!(decode(&with(0x03)).unwrap().header, header());
        assert_eq!(
            decode(&with(0x83)).unwrap_err(),
            WireError::UnknownCritical {
                class: 0x0102,
                kind: 0x83
            }
        );
        let mut none = ours[..GENEVE_LEN].to_vec();
        none[0] = 0;
        assert_eq!(decode(&none).unwrap_err(), WireError::NoOption);
    }

    #[test]
    fn gaps_in_a_channels_sequence_numbers_are_the_datagrams_lost() {
        let mut a = Arrivals::default();
        assert_eq!(a.lost(), 0);
        for sequence in [0, 1, 2, 5, 6, 9] {
            a.arrive(sequence);
        }
        assert_eq!(
            (a.received(), a.lost()),
            (6, 4),
            "3, 4, 7 and 8 are missing"
        );
        // A datagram overtaken by a later one is not lost once it arrives.
        assert_eq!(a.arrive(8), Arrival::Fresh);
        assert_eq!(a.lost(), 3);
        // The sequence number the sender put in travels in the option's window field.
        let datagram = encode_batch(
            &Header {
                window: 41,
                ..header()
            },
            &[],
            1400,
        )
        .unwrap();
        let mut b = Arrivals::default();
        b.arrive(decode(&datagram[0]).unwrap().header.window);
        assert_eq!(b.lost(), 41, "numbers 0 to 40 never came");
    }

    #[test]
    fn a_sequence_number_is_taken_once_and_never_sets_the_lost_count_at_will() {
        let mut a = Arrivals::default();
        for sequence in 0..100 {
            assert_eq!(a.arrive(sequence), Arrival::Fresh);
        }
        // Replayed, within the window and below it: refused, counted nowhere.
        assert_eq!(a.arrive(99), Arrival::Replayed);
        assert_eq!(a.arrive(50), Arrival::Replayed);
        assert_eq!(a.arrive(100 - REPLAY_WINDOW - 1), Arrival::Replayed);
        assert_eq!((a.received(), a.lost()), (100, 0));
        // A forged number far ahead would have made billions lost.
        assert_eq!(a.arrive(u64::MAX), Arrival::TooFarAhead);
        assert_eq!(a.arrive(100 + MAX_AHEAD + 1), Arrival::TooFarAhead);
        assert_eq!((a.received(), a.lost()), (100, 0));
        // A real gap, then a late one inside the window: taken once.
        assert_eq!(a.arrive(110), Arrival::Fresh);
        assert_eq!(a.lost(), 10);
        assert_eq!(a.arrive(105), Arrival::Fresh);
        assert_eq!(a.arrive(105), Arrival::Replayed);
        assert_eq!((a.received(), a.lost()), (102, 9));
        // A jump past the window forgets it: what it held is too old now.
        assert_eq!(a.arrive(110 + REPLAY_WINDOW), Arrival::Fresh);
        assert_eq!(a.arrive(109), Arrival::Replayed);
    }

    /// Random bytes, and valid datagrams with random bytes changed, cut or added: each decodes
    /// or is refused, and nothing panics. What decodes encodes back to the same bytes when it
    /// carries nothing but the netloom option.
    #[test]
    fn bad_bytes_are_refused_without_panicking() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(16);
        let mut good = encode_batch(&header(), &handoffs(&mut rng, 5), 65_507).unwrap();
        let mut packet = Vec::new();
        encode_packet(&header(), &handoffs(&mut rng, 1)[0], &IPV4, &mut packet).unwrap();
        good.push(packet);
        let (mut decoded, mut refused) = (0, 0);
        for round in 0..200_000 {
            let mut b = if round % 4 == 0 {
                let mut b = vec![0u8; rng.gen_range(0..600)];
                rng.fill(&mut b[..]);
                b
            } else {
                let mut b = good[rng.gen_range(0..good.len())].clone();
                for _ in 0..rng.gen_range(1..4) {
                    let i = rng.gen_range(0..b.len());
                    b[i] = rng.gen();
                }
                b
            };
            match rng.gen_range(0..4) {
                0 => b.truncate(rng.gen_range(0..=b.len())),
                1 => b.push(rng.gen()),
                _ => {}
            }
            match decode(&b) {
                Ok(d) => {
                    decoded += 1;
                    let mut again = Vec::new();
                    match &d.payload {
                        Payload::Descriptors(h) => {
                            encode_descriptors(&d.header, h, &mut again).unwrap()
                        }
                        Payload::Packet { handoff, ip } => {
                            encode_packet(&d.header, handoff, ip, &mut again).unwrap()
                        }
                    }
                    // Only what the decoder ignores may differ: the O and C bits and the
                    // reserved bits of the headers (before byte 12), and other options.
                    if again.len() == b.len() && again[8..11] == b[8..11] {
                        assert_eq!(again[12..], b[12..]);
                    }
                }
                Err(_) => refused += 1,
            }
        }
        assert!(
            decoded > 1000 && refused > 1000,
            "{decoded} decoded, {refused} refused"
        );
    }
}
