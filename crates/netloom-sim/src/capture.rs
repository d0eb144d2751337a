//! Owns a virtual-time run's captures (`SimCapture`); not the pcapng format, nor which pipes.
//!
//! Captures of virtual-time runs (`netloom sim --capture`): the engine's synthetic packets
//! written as pcapng with real headers, IPv4 from and to the addresses the hosts would have live
//! (`Topology::host_address`: their own, or the topology's address plan's), TCP for AIMD flows (sequence and acknowledgement numbers from
//! the segment numbers) and UDP for the others, ports from the flow's number, checksums right,
//! payload zeros. Timestamps are virtual time since the Unix epoch, so the same seed gives the
//! same bytes.

use netloom_engine::tap::{cause_name, Carried, Seen, Tapped};
use netloom_engine::traffic::SourceKind;
use netloom_engine::Engine;
use netloom_packet::pcapng::{Interface, Pcapng};
use netloom_packet::{fold, sum16};
use netloom_topo::PipeId;
use std::io::Write;
use std::net::Ipv4Addr;

/// The first source port; flow k sends from `PORT_BASE + k` (modulo the range above it).
const PORT_BASE: u16 = 10_000;
/// Every flow's destination port (iperf3's).
const DEST_PORT: u16 = 5201;
const IPV4_HEADER: usize = 20;
const TCP_HEADER: usize = 20;
const UDP_HEADER: usize = 8;

/// One flow as packets on the wire show it.
struct Wire {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    port: u16,
    /// TCP (AIMD) with this many payload bytes per segment, or UDP.
    mss: Option<u32>,
}

/// A capture of some pipes of a virtual-time run, written as the run goes (`record` every
/// `Engine::drain_tapped`).
pub struct SimCapture<W: Write> {
    file: Pcapng<W>,
    /// The interface of each pipe of the topology, if captured.
    interfaces: Vec<Option<u32>>,
    flows: Vec<Wire>,
}

impl<W: Write> SimCapture<W> {
    /// Starts a capture of `pipes` of `engine` (its flows added) into `out`, and taps them.
    pub fn new(
        out: W,
        engine: &mut Engine,
        pipes: Vec<(PipeId, Interface)>,
    ) -> std::io::Result<SimCapture<W>> {
        let mut interfaces = vec![None; engine.topology().pipes.len()];
        for (k, (pipe, _)) in pipes.iter().enumerate() {
            interfaces[*pipe as usize] = Some(k as u32);
            engine.set_tap(*pipe, true);
        }
        let address = |node| {
            let host = engine.routes().host_index(node).expect("flows join hosts");
            engine.topology().host_address(host as usize).0
        };
        let flows = engine
            .flows()
            .enumerate()
            .map(|(k, (spec, ..))| Wire {
                src: address(spec.src),
                dst: address(spec.dst),
                port: PORT_BASE + (k % usize::from(u16::MAX - PORT_BASE)) as u16,
                mss: match spec.kind {
                    SourceKind::Aimd { mss } => Some(mss),
                    _ => None,
                },
            })
            .collect();
        let described: Vec<Interface> = pipes.into_iter().map(|(_, i)| i).collect();
        let file = Pcapng::new(out, &described, u32::from(u16::MAX))?;
        Ok(SimCapture {
            file,
            interfaces,
            flows,
        })
    }

    /// Writes what a tapped pipe saw: packets as they leave it, and drops with their cause.
    pub fn record(&mut self, t: &Tapped) -> std::io::Result<()> {
        let dropped = match t.seen {
            Seen::Entered => return Ok(()),
            Seen::Left => None,
            Seen::Dropped(cause) => Some(cause_name(cause)),
        };
        let Some(iface) = self.interfaces[t.pipe as usize] else {
            return Ok(());
        };
        let data = match t.carried {
            Carried::External { .. } => return Ok(()),
            Carried::Data { flow, seq } => self.packet(flow, Some(seq), None, t.bytes),
            Carried::Ack { flow, next } => self.packet(flow, None, Some(next), t.bytes),
        };
        self.file
            .packet(iface, t.at.as_nanos(), t.bytes, &data, dropped, 0)
    }

    /// Ends the file and returns where it went.
    pub fn finish(self) -> W {
        self.file.into_inner()
    }

    /// A data segment `seq` or an ACK of everything below `next` of flow `flow`, `bytes` long
    /// on the wire (headers at least).
    fn packet(&self, flow: u32, seq: Option<u64>, next: Option<u64>, bytes: u32) -> Vec<u8> {
        let f = &self.flows[flow as usize];
        // An ACK goes back from the flow's destination to its source.
        let (src, dst, sport, dport) = match next {
            None => (f.src, f.dst, f.port, DEST_PORT),
            Some(_) => (f.dst, f.src, DEST_PORT, f.port),
        };
        let transport = match f.mss {
            Some(_) => TCP_HEADER,
            None => UDP_HEADER,
        };
        let len = (bytes as usize)
            .max(IPV4_HEADER + transport)
            .min(usize::from(u16::MAX));
        let mut p = vec![0u8; len];
        let protocol = match f.mss {
            Some(_) => 6,
            None => 17,
        };
        // IPv4: version 4, header 5 words, total length, don't fragment, TTL 64.
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        p[6] = 0x40;
        p[8] = 64;
        p[9] = protocol;
        p[12..16].copy_from_slice(&src.octets());
        p[16..20].copy_from_slice(&dst.octets());
        let sum = !fold(sum16(&p[..IPV4_HEADER], 0));
        p[10..12].copy_from_slice(&sum.to_be_bytes());
        let l4 = &mut p[IPV4_HEADER..];
        l4[0..2].copy_from_slice(&sport.to_be_bytes());
        l4[2..4].copy_from_slice(&dport.to_be_bytes());
        let checksum_at = match f.mss {
            Some(mss) => {
                // Sequence numbers count bytes: segment k starts at k × mss.
                let seq_no = seq.map_or(0, |s| (s * u64::from(mss)) as u32);
                let ack_no = next.map_or(0, |n| (n * u64::from(mss)) as u32);
                l4[4..8].copy_from_slice(&seq_no.to_be_bytes());
                l4[8..12].copy_from_slice(&ack_no.to_be_bytes());
                l4[12] = 0x50; // 5 words of header
                l4[13] = if next.is_some() { 0x10 } else { 0x18 }; // ACK; PSH ACK
                l4[14..16].copy_from_slice(&u16::MAX.to_be_bytes());
                16
            }
            None => {
                l4[4..6].copy_from_slice(&((len - IPV4_HEADER) as u16).to_be_bytes());
                6
            }
        };
        // The pseudo-header: addresses, protocol, transport length.
        let mut sum = sum16(&src.octets(), 0);
        sum = sum16(&dst.octets(), sum);
        sum += u32::from(protocol) + (len - IPV4_HEADER) as u32;
        let sum = !fold(sum16(l4, sum));
        // UDP sends a computed zero as all ones (zero means "no checksum").
        let sum = if sum == 0 && protocol == 17 {
            0xffff
        } else {
            sum
        };
        l4[checksum_at..checksum_at + 2].copy_from_slice(&sum.to_be_bytes());
        p
    }
}
