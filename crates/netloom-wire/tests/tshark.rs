//! tshark's GENEVE dissector reads netloom's datagrams: the GENEVE header, the netloom option,
//! and the IP packet inside.

use netloom_engine::{Handoff, DESCRIPTOR_LEN};
use netloom_wire::{encode_batch, encode_packet, Header, GENEVE_PORT};
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::DataLink;
use std::process::Command;

fn tshark_available() -> bool {
    Command::new("tshark")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A data segment of flow 7 leaving pipe 5 at 1 ms, by its stable byte form.
fn handoff() -> Handoff {
    let mut b = [0u8; DESCRIPTOR_LEN];
    b[0..8].copy_from_slice(&1_000_000u64.to_be_bytes());
    b[8..12].copy_from_slice(&5u32.to_be_bytes());
    b[12..16].copy_from_slice(&1u32.to_be_bytes());
    b[18] = 64;
    b[20..24].copy_from_slice(&7u32.to_be_bytes());
    b[40..44].copy_from_slice(&1500u32.to_be_bytes());
    Handoff::from_bytes(&b).unwrap()
}

/// `payload` as the UDP datagram 192.0.2.1:40000 -> 192.0.2.2:6081 would carry it, from its
/// IPv4 header on (checksums left 0: tshark does not check them unless asked).
fn udp_ipv4(payload: &[u8]) -> Vec<u8> {
    let total = (20 + 8 + payload.len()) as u16;
    let mut p = vec![0x45, 0];
    p.extend_from_slice(&total.to_be_bytes());
    p.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2]);
    p.extend_from_slice(&40000u16.to_be_bytes());
    p.extend_from_slice(&GENEVE_PORT.to_be_bytes());
    p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    p
}

#[test]
fn tshark_shows_the_geneve_header_and_the_packet_inside() {
    if !tshark_available() {
        eprintln!("SKIPPED: tshark is not installed");
        return;
    }
    let header = Header {
        vni: 0x00_4E_4C,
        from: 1,
        to: 2,
        window: 9,
        part: 0,
        last: true,
        next_ns: 2_000_000,
    };
    // The inner packet: ICMP echo request 10.0.0.1 -> 10.0.0.2, checksums 0.
    let inner = [
        0x45, 0, 0, 28, 0, 1, 0, 0, 64, 1, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 8, 0, 0, 0, 0, 1, 0, 1,
    ];
    let mut packet = Vec::new();
    encode_packet(&header, &handoff(), &inner, &mut packet).unwrap();
    let batch = encode_batch(&header, &[handoff(), handoff()], 1400).unwrap();
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("netloom-wire.pcap");
    let mut w = PcapWriter::with_header(
        std::fs::File::create(&file).unwrap(),
        PcapHeader {
            datalink: DataLink::RAW,
            ..PcapHeader::default()
        },
    )
    .unwrap();
    for (i, d) in std::iter::once(packet).chain(batch).enumerate() {
        let frame = udp_ipv4(&d);
        let at = std::time::Duration::from_millis(i as u64);
        w.write_packet(&PcapPacket::new(at, frame.len() as u32, &frame))
            .unwrap();
    }
    drop(w);
    let out = Command::new("tshark")
        .arg("-r")
        .arg(&file)
        .arg("-V")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    std::fs::remove_file(&file).unwrap();
    let frames: Vec<&str> = text.split("\nFrame ").collect();
    assert_eq!(frames.len(), 2, "two datagrams:\n{text}");
    for f in &frames {
        assert!(
            f.contains("Generic Network Virtualization Encapsulation"),
            "{f}"
        );
        assert!(
            f.contains("Virtual Network Identifier (VNI): 0x004e4c"),
            "{f}"
        );
        assert!(f.contains("Class: Experimental"), "{f}");
    }
    // The first carries the real packet, which tshark dissects as IPv4 inside GENEVE.
    assert!(
        frames[0].contains("Protocol Type: IPv4 (0x0800)"),
        "{}",
        frames[0]
    );
    assert!(
        frames[0].contains("Src: 10.0.0.1, Dst: 10.0.0.2"),
        "{}",
        frames[0]
    );
    assert!(
        frames[0].contains("Internet Control Message Protocol"),
        "{}",
        frames[0]
    );
    // The second, a batch of descriptors under the experimental EtherType.
    assert!(frames[1].contains("(0x88b5)"), "{}", frames[1]);
    assert!(frames[1].contains("Data (128 bytes)"), "{}", frames[1]);
}
