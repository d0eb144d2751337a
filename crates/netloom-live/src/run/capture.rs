//! Live packet capture (`netloom capture`, docs/live.md#capture): a `Tap` (`tap`) the driver
//! holds for each running capture, which copies the bytes of packets its pipes take in, let out or drop
//! into a bounded queue, and the `CaptureStream` that a control-socket client's thread drains
//! into pcapng. When the writer falls behind, copies are dropped and counted in the capture's
//! own statistics; the emulated packets never wait for it.

use crate::run::server::{Next, Stream};
use crate::tap::{CaptureStats, Record, Tap, When};
use netloom_engine::tap::cause_name;
use netloom_packet::pcapng::{Interface, Pcapng};
use netloom_topo::PipeId;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

/// Packet copies a capture's queue holds before it drops new ones.
pub const QUEUE: usize = 8192;
/// Most records written in one piece of the stream.
const BATCH: usize = 256;

/// A new capture's two sides: the tap for the driver and the stream for the client.
pub(crate) fn capture(
    pipes: Vec<(PipeId, Interface)>,
    when: When,
    snaplen: u32,
    epoch_ns: u64,
) -> (Tap, CaptureStream) {
    let (queue, rx) = mpsc::sync_channel(QUEUE);
    let stats = Arc::new(CaptureStats::default());
    let (ids, interfaces) = pipes.into_iter().unzip();
    let tap = Tap {
        pipes: ids,
        when,
        snaplen,
        queue,
        stats: stats.clone(),
        gone: false,
    };
    let stream = CaptureStream {
        rx,
        interfaces,
        snaplen,
        epoch_ns,
        stats,
        file: None,
        told: 0,
        ended: false,
    };
    (tap, stream)
}

/// A capture as pcapng bytes, pulled by the client's thread: the header and interfaces first,
/// then packets as they come, then, once the run stops, each interface's statistics.
pub(crate) struct CaptureStream {
    rx: Receiver<Record>,
    interfaces: Vec<Interface>,
    snaplen: u32,
    /// Wall-clock time of the run's instant zero, ns since 1970.
    epoch_ns: u64,
    stats: Arc<CaptureStats>,
    /// The file, once its header is written.
    file: Option<Pcapng<Vec<u8>>>,
    /// The capture's drops already told in the file (as the next packet's epb_dropcount).
    told: u64,
    ended: bool,
}

impl CaptureStream {
    /// The figures this capture shares with its tap.
    pub fn stats(&self) -> Arc<CaptureStats> {
        self.stats.clone()
    }

    /// What the file holds so far, taken out of it.
    fn take(&mut self) -> Next {
        let file = self.file.as_mut().expect("the header is written first");
        Next::Bytes(std::mem::take(file.get_mut()))
    }
}

impl Stream for CaptureStream {
    fn next(&mut self, wait: Duration) -> Next {
        if self.ended {
            return Next::End;
        }
        if self.file.is_none() {
            return match Pcapng::new(Vec::new(), &self.interfaces, self.snaplen) {
                Ok(file) => {
                    self.file = Some(file);
                    self.take()
                }
                Err(_) => Next::End,
            };
        }
        let first = match self.rx.recv_timeout(wait) {
            Ok(record) => record,
            Err(RecvTimeoutError::Timeout) => return Next::Idle,
            Err(RecvTimeoutError::Disconnected) => {
                // The run stopped: the statistics close the file.
                self.ended = true;
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
                let captured = self.stats.captured.load(Ordering::Relaxed);
                let dropped = self.stats.dropped.load(Ordering::Relaxed);
                let file = self.file.as_mut().expect("the header is written first");
                // Per file, not per interface: the queue is the capture's, shared by its pipes.
                if file
                    .statistics(0, now, captured + dropped, dropped)
                    .is_err()
                {
                    return Next::End;
                }
                return self.take();
            }
        };
        let file = self.file.as_mut().expect("the header is written first");
        // Drops so far go with the first packet written after them: counted by the tap, they
        // happened after every packet already written.
        let dropped = self.stats.dropped.load(Ordering::Relaxed);
        let mut written = write(file, self.epoch_ns, &first, dropped - self.told);
        self.told = dropped;
        for record in self.rx.try_iter().take(BATCH - 1) {
            written = written.and_then(|()| write(file, self.epoch_ns, &record, 0));
        }
        match written {
            Ok(()) => self.take(),
            Err(_) => Next::End,
        }
    }
}

/// Writes `record` into `file`, whose run started at `epoch_ns`, with the capture's `lost`
/// packets since the one before.
fn write(
    file: &mut Pcapng<Vec<u8>>,
    epoch_ns: u64,
    record: &Record,
    lost: u64,
) -> std::io::Result<()> {
    file.packet(
        record.iface,
        epoch_ns + record.at.as_nanos(),
        record.original_len,
        &record.data,
        record.dropped.map(cause_name),
        lost,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use netloom_link::DropCause;
    use netloom_time::Instant;
    use pcap_file::pcapng::{Block, PcapNgReader};

    fn record(iface: u32, at: u64, dropped: Option<DropCause>) -> Record {
        Record {
            iface,
            at: Instant(at),
            original_len: 60,
            data: vec![0x45; 20],
            dropped,
        }
    }

    #[test]
    fn a_full_queue_drops_copies_counted_and_the_stream_ends_with_its_statistics() {
        let iface = |name: &str| Interface {
            name: name.into(),
            description: String::new(),
            speed_bps: 1,
        };
        let (mut tap, mut stream) = capture(
            vec![(0, iface("a->b")), (1, iface("b->a"))],
            When::Exit,
            100,
            1_000_000_000,
        );
        for k in 0..QUEUE as u64 + 5 {
            assert!(tap.offer(record((k % 2) as u32, k, None)));
        }
        assert!(
            tap.offer(record(0, 9, Some(DropCause::Loss))),
            "counted, not queued"
        );
        assert_eq!(stream.stats().dropped.load(Ordering::Relaxed), 6);
        assert_eq!(
            stream.stats().captured.load(Ordering::Relaxed),
            QUEUE as u64
        );
        drop(tap);
        let mut bytes = Vec::new();
        loop {
            match stream.next(Duration::ZERO) {
                Next::Bytes(b) => bytes.extend(b),
                Next::Idle => panic!("the tap is gone: the stream ends"),
                Next::End => break,
            }
        }
        let mut reader = PcapNgReader::new(&bytes[..]).unwrap();
        let (mut packets, mut stats) = (0, None);
        while let Some(block) = reader.next_block() {
            match block.unwrap() {
                Block::EnhancedPacket(p) => {
                    assert_eq!(p.timestamp.as_nanos(), 1_000_000_000 + packets);
                    let lost = p.options.iter().find_map(|o| match o {
                        pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketOption::DropCount(n) => Some(*n),
                        _ => None,
                    });
                    assert_eq!(lost, (packets == 0).then_some(6), "told once");
                    packets += 1;
                }
                Block::InterfaceStatistics(s) => stats = Some(s.into_owned().options),
                _ => {}
            }
        }
        assert_eq!(packets, QUEUE as u128);
        let stats = stats.expect("statistics at the end");
        use pcap_file::pcapng::blocks::interface_statistics::InterfaceStatisticsOption as O;
        assert!(stats.contains(&O::IsbIfRecv(QUEUE as u64 + 6)), "{stats:?}");
        assert!(stats.contains(&O::IsbIfDrop(6)), "{stats:?}");
    }
}
