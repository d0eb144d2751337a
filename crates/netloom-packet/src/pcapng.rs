//! Owns the pcapng writer (interfaces, packets, statistics); not what is captured, nor when.
//!
//! pcapng as tcpdump, tshark and Wireshark read it, for packet captures: one interface per
//! captured pipe (named after it), link type raw IP (LINKTYPE_RAW, 101: the packets are IP
//! packets with no link-layer header), nanosecond timestamps (if_tsresol = 9), and a comment on
//! packets the pipe dropped saying why. Blocks are written with the `pcap-file` crate.

use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::blocks::interface_statistics::{
    InterfaceStatisticsBlock, InterfaceStatisticsOption,
};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;
use std::borrow::Cow;
use std::io::Write;

/// One captured pipe, as an interface of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    /// Its name (`if_name`), e.g. "r1->r2".
    pub name: String,
    /// What it is (`if_description`), e.g. "netloom link r1-r2, pipe a-b".
    pub description: String,
    /// The pipe's rate, bit/s (`if_speed`).
    pub speed_bps: u64,
}

/// A pcapng file being written to `W`: the section header and every interface first, then
/// packets and, at the end, each interface's statistics.
pub struct Pcapng<W: Write> {
    writer: PcapNgWriter<W>,
}

impl<W: Write> Pcapng<W> {
    /// Starts the file: its section header and one interface per element of `interfaces`,
    /// each keeping at most `snaplen` bytes of a packet.
    pub fn new(out: W, interfaces: &[Interface], snaplen: u32) -> std::io::Result<Pcapng<W>> {
        let mut writer = PcapNgWriter::new(out).map_err(other)?;
        for i in interfaces {
            let idb = InterfaceDescriptionBlock {
                linktype: DataLink::RAW,
                snaplen,
                options: vec![
                    InterfaceDescriptionOption::IfName(Cow::Owned(i.name.clone())),
                    InterfaceDescriptionOption::IfDescription(Cow::Owned(i.description.clone())),
                    InterfaceDescriptionOption::IfSpeed(i.speed_bps),
                    InterfaceDescriptionOption::IfTsResol(9),
                ],
            };
            writer.write_pcapng_block(idb).map_err(other)?;
        }
        Ok(Pcapng { writer })
    }

    /// A packet of interface `iface` at `epoch_ns` (ns since 1970), `original_len` bytes long of
    /// which `data` was kept; `dropped` names why the pipe dropped it, if it did; `lost` is how
    /// many packets the capture itself lost since the packet before (epb_dropcount).
    pub fn packet(
        &mut self,
        iface: u32,
        epoch_ns: u64,
        original_len: u32,
        data: &[u8],
        dropped: Option<&str>,
        lost: u64,
    ) -> std::io::Result<()> {
        let mut options = Vec::new();
        if let Some(cause) = dropped {
            let comment = format!("dropped: {cause}");
            options.push(EnhancedPacketOption::Comment(Cow::Owned(comment)));
        }
        if lost > 0 {
            options.push(EnhancedPacketOption::DropCount(lost));
        }
        let epb = EnhancedPacketBlock {
            interface_id: iface,
            timestamp: std::time::Duration::from_nanos(epoch_ns),
            original_len,
            data: Cow::Borrowed(data),
            options,
        };
        self.writer.write_pcapng_block(epb).map_err(other)?;
        Ok(())
    }

    /// Interface `iface`'s statistics at `epoch_ns`: packets the capture received and those it
    /// dropped (isb_ifrecv, isb_ifdrop).
    pub fn statistics(
        &mut self,
        iface: u32,
        epoch_ns: u64,
        received: u64,
        dropped: u64,
    ) -> std::io::Result<()> {
        let isb = InterfaceStatisticsBlock {
            interface_id: iface,
            timestamp: epoch_ns,
            options: vec![
                InterfaceStatisticsOption::IsbIfRecv(received),
                InterfaceStatisticsOption::IsbIfDrop(dropped),
            ],
        };
        self.writer.write_pcapng_block(isb).map_err(other)?;
        Ok(())
    }

    /// Where the file goes, to take what was written so far.
    pub fn get_mut(&mut self) -> &mut W {
        self.writer.get_mut()
    }

    /// Ends the file and returns where it went.
    pub fn into_inner(self) -> W {
        self.writer.into_inner()
    }
}

fn other(e: pcap_file::PcapError) -> std::io::Error {
    match e {
        pcap_file::PcapError::IoError(e) => e,
        e => std::io::Error::other(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcapng::{Block, PcapNgReader};

    #[test]
    fn a_file_reads_back_with_its_interfaces_packets_comments_and_statistics() {
        let interfaces = [
            Interface {
                name: "r1->r2".into(),
                description: "netloom link r1-r2, pipe a-b".into(),
                speed_bps: 10_000_000,
            },
            Interface {
                name: "r2->r1".into(),
                description: "netloom link r1-r2, pipe b-a".into(),
                speed_bps: 10_000_000,
            },
        ];
        let mut file = Pcapng::new(Vec::new(), &interfaces, 1500).unwrap();
        let ns = 1_700_000_000_123_456_789;
        file.packet(1, ns, 40, &[0x45; 20], None, 0).unwrap();
        file.packet(0, ns + 1, 40, &[0x45; 40], Some("red"), 2)
            .unwrap();
        file.statistics(0, ns + 2, 1, 3).unwrap();
        assert!(
            file.packet(2, ns, 1, &[0], None, 0).is_err(),
            "no such interface"
        );
        let bytes = file.into_inner();
        let mut reader = PcapNgReader::new(&bytes[..]).unwrap();
        let mut blocks = Vec::new();
        while let Some(block) = reader.next_block() {
            blocks.push(block.unwrap().into_owned());
        }
        let Block::InterfaceDescription(idb) = &blocks[0] else {
            panic!("{:?}", blocks[0])
        };
        assert_eq!(idb.linktype, DataLink::RAW);
        assert!(idb
            .options
            .contains(&InterfaceDescriptionOption::IfTsResol(9)));
        assert!(idb
            .options
            .contains(&InterfaceDescriptionOption::IfName("r1->r2".into())));
        let Block::EnhancedPacket(first) = &blocks[2] else {
            panic!("{:?}", blocks[2])
        };
        assert_eq!(
            (
                first.interface_id,
                first.timestamp.as_nanos(),
                first.original_len
            ),
            (1, u128::from(ns), 40)
        );
        assert_eq!(first.data.len(), 20);
        assert!(first.options.is_empty());
        let Block::EnhancedPacket(dropped) = &blocks[3] else {
            panic!("{:?}", blocks[3])
        };
        assert_eq!(
            dropped.options,
            [
                EnhancedPacketOption::Comment("dropped: red".into()),
                EnhancedPacketOption::DropCount(2)
            ]
        );
        let Block::InterfaceStatistics(isb) = &blocks[4] else {
            panic!("{:?}", blocks[4])
        };
        assert!(isb
            .options
            .contains(&InterfaceStatisticsOption::IsbIfDrop(3)));
        assert_eq!(blocks.len(), 5);
    }
}
