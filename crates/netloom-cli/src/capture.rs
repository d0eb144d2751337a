//! `netloom capture [--name N] A [B] -w FILE|-`: asks a running experiment for a capture of a
//! link (or of every link of a node) and copies the pcapng it streams to FILE or stdout, whole
//! blocks at a time, until the run stops or a signal ends it; then says how many packets were
//! captured and how many the capture itself lost. A file is opened without following a planted
//! link (`netloom_os::open_output`); one that cannot be written (a full disk) ends the capture
//! with an error that says how many packets were lost.

use anyhow::{bail, Context, Result};
use clap::Args;
use netloom_live::protocol::open;
use netloom_live::{Direction, Request, When};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketOption;
use pcap_file::pcapng::blocks::interface_statistics::InterfaceStatisticsOption;
use pcap_file::pcapng::{Block, PcapNgParser};
use pcap_file::PcapError;
use std::io::{Read, Write};
use std::path::PathBuf;

#[derive(Args)]
pub struct CaptureArgs {
    /// The experiment (needed only when several are running).
    #[arg(long)]
    name: Option<String>,
    /// A node: with a second node, the link between them; alone, every link it has (a host's
    /// access link).
    a: String,
    /// The link's other end.
    b: Option<String>,
    /// With a link: which direction, both, a-b (from A to B) or b-a.
    #[arg(long, default_value = "both", value_parser = crate::live::parse_direction)]
    direction: Direction,
    /// Which instant a packet is recorded at: when it left the pipe (exit) or entered it.
    #[arg(long, value_enum, default_value = "exit")]
    when: WhenArg,
    /// Bytes of each packet kept.
    #[arg(long, default_value_t = netloom_live::SNAPLEN)]
    snaplen: u32,
    /// Where the pcapng goes: a file, or - for stdout (`| tshark -r -`).
    #[arg(short = 'w', value_name = "FILE|-")]
    write: PathBuf,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum WhenArg {
    Enter,
    Exit,
}

/// What went by: packets written, and packets the capture lost.
#[derive(Debug, Default)]
struct Tally {
    packets: u64,
    lost: u64,
    /// Bytes written, all whole blocks.
    bytes: u64,
}

/// Why a copy stopped before the stream ended: the output refused a write.
#[derive(Debug)]
struct WriteFailed {
    source: std::io::Error,
    /// Packets written before the failed write.
    written: u64,
    /// Bytes written before it, all whole blocks.
    bytes: u64,
    /// Packets in the failed write.
    unwritten: u64,
}

impl std::fmt::Display for WriteFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot write: {}; {} packets were written before it ({} bytes, whole blocks), the {} that had arrived since were lost, and the capture stopped",
            self.source, self.written, self.bytes, self.unwritten
        )
    }
}

impl std::error::Error for WriteFailed {}

pub fn run(args: CaptureArgs) -> Result<()> {
    if args.b.is_none() && args.direction != Direction::Both {
        bail!("--direction is for a link: name its two ends");
    }
    let (socket, label) = crate::live::socket(args.name.as_deref())?;
    let to_stdout = args.write.as_os_str() == "-";
    // Before the request: a file that cannot be written leaves the run untouched. It is
    // emptied only once the capture runs, so a refused request leaves a user's file as it was.
    let file = match to_stdout {
        true => None,
        false => Some(
            netloom_os::open_output(&args.write)
                .with_context(|| format!("-w {}", args.write.display()))?,
        ),
    };
    let request = Request::Capture {
        a: args.a,
        b: args.b,
        direction: args.direction,
        when: match args.when {
            WhenArg::Enter => When::Enter,
            WhenArg::Exit => When::Exit,
        },
        snaplen: args.snaplen,
    };
    let opened = open(&socket, &request, crate::live::REPLY_WAIT);
    let reader = match opened {
        Ok((_, reader)) => reader,
        Err(e) => {
            // Removes only a file made above: never `-w /dev/null`, never a user's file.
            if let Some(file) = file {
                file.abandon();
            }
            return Err(e).context(label);
        }
    };
    // A signal ends the copy between two blocks, so the file stays whole.
    let stop = netloom_os::install_stop_handler()?;
    let target = match to_stdout {
        true => "standard output".to_string(),
        false => args.write.display().to_string(),
    };
    let tally = match file.map(netloom_os::OutputFile::begin).transpose()? {
        Some(f) => {
            let copied = copy(reader, &f, stop);
            // A full disk left part of a block: cut the file back to its whole blocks, so what
            // was written reads (a device such as /dev/full cannot be cut, nor needs to be).
            if let Err(Some(failed)) = copied.as_ref().map_err(|e| e.downcast_ref::<WriteFailed>())
            {
                let _ = f.set_len(failed.bytes);
            }
            copied
        }
        None => copy(reader, std::io::stdout().lock(), stop),
    }
    .with_context(|| format!("{label}: capturing to {target}"))?;
    eprintln!(
        "netloom: captured {} packets; the capture lost {} (its writer fell behind)",
        tally.packets, tally.lost
    );
    Ok(())
}

/// Copies whole pcapng blocks from `from` to `to` until `from` ends or `stop` is set, counting
/// packets and the capture's losses (epb_dropcount, and the closing statistics' isb_ifdrop).
fn copy(
    mut from: impl Read,
    mut to: impl Write,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Tally> {
    let mut tally = Tally::default();
    let mut pending: Vec<u8> = Vec::new();
    let mut parser: Option<PcapNgParser> = None;
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = match from.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        pending.extend_from_slice(&chunk[..n]);
        let before = tally.packets;
        let whole = blocks(&mut parser, &pending, &mut tally)?;
        match to.write_all(&pending[..whole]).and_then(|()| to.flush()) {
            Ok(()) => tally.bytes += whole as u64,
            // The reader of stdout left (`| head`): nothing more to do.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(tally),
            // Anything else (a full disk, `-w /dev/full`) loses what arrived: an error.
            Err(source) => {
                return Err(WriteFailed {
                    source,
                    written: before,
                    bytes: tally.bytes,
                    unwritten: tally.packets - before,
                }
                .into())
            }
        }
        pending.drain(..whole);
    }
    if !pending.is_empty() {
        bail!("the stream ended inside a block ({} bytes)", pending.len());
    }
    Ok(tally)
}

/// How many bytes at the start of `bytes` are whole blocks, counting what they hold.
fn blocks(parser: &mut Option<PcapNgParser>, bytes: &[u8], tally: &mut Tally) -> Result<usize> {
    let incomplete = |e: &PcapError| matches!(e, PcapError::IncompleteBuffer);
    let mut rest = bytes;
    if parser.is_none() {
        match PcapNgParser::new(rest) {
            Ok((after, p)) => {
                *parser = Some(p);
                rest = after;
            }
            Err(e) if incomplete(&e) => return Ok(0),
            Err(e) => bail!("the capture is not pcapng: {e}"),
        }
    }
    let parser = parser.as_mut().expect("made above");
    loop {
        match parser.next_block(rest) {
            Ok((after, block)) => {
                match block {
                    Block::EnhancedPacket(p) => {
                        tally.packets += 1;
                        for o in &p.options {
                            if let EnhancedPacketOption::DropCount(n) = o {
                                tally.lost += n;
                            }
                        }
                    }
                    Block::InterfaceStatistics(s) => {
                        for o in &s.options {
                            if let InterfaceStatisticsOption::IsbIfDrop(n) = o {
                                tally.lost = tally.lost.max(*n);
                            }
                        }
                    }
                    _ => {}
                }
                rest = after;
            }
            Err(e) if incomplete(&e) => break,
            Err(e) => bail!("the capture is not pcapng: {e}"),
        }
    }
    Ok(bytes.len() - rest.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use netloom_packet::pcapng::{Interface, Pcapng};

    #[test]
    fn whole_blocks_are_copied_however_the_bytes_arrive_and_losses_are_counted() {
        let iface = Interface {
            name: "a->b".into(),
            description: String::new(),
            speed_bps: 1,
        };
        let mut file = Pcapng::new(Vec::new(), &[iface], 100).unwrap();
        file.packet(0, 1, 60, &[0x45; 60], None, 0).unwrap();
        file.packet(0, 2, 60, &[0x45; 60], Some("queue"), 3)
            .unwrap();
        file.statistics(0, 3, 5, 3).unwrap();
        let bytes = file.into_inner();
        // One byte at a time: every read ends inside a block.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.len().min(1).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut out = Vec::new();
        let stop = std::sync::atomic::AtomicBool::new(false);
        let tally = copy(Trickle(&bytes), &mut out, &stop).unwrap();
        assert_eq!(out, bytes);
        assert_eq!((tally.packets, tally.lost), (2, 3));
        let cut = copy(&bytes[..bytes.len() - 1], Vec::new(), &stop);
        assert!(cut
            .unwrap_err()
            .to_string()
            .contains("ended inside a block"));
    }

    #[test]
    fn a_write_that_fails_is_an_error_saying_what_was_lost() {
        let iface = Interface {
            name: "a->b".into(),
            description: String::new(),
            speed_bps: 1,
        };
        let mut file = Pcapng::new(Vec::new(), &[iface], 100).unwrap();
        file.packet(0, 1, 60, &[0x45; 60], None, 0).unwrap();
        let bytes = file.into_inner();
        // A disk with room for the header and nothing more, as /dev/full has none at all.
        struct Full(usize);
        impl Write for Full {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                match self.0 {
                    0 => Err(std::io::Error::from_raw_os_error(28)),
                    room => {
                        let n = room.min(buf.len());
                        self.0 -= n;
                        Ok(n)
                    }
                }
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let stop = std::sync::atomic::AtomicBool::new(false);
        let err = copy(&bytes[..], Full(10), &stop).unwrap_err();
        let failed = err.downcast_ref::<WriteFailed>().expect("a write failure");
        assert_eq!((failed.written, failed.unwritten, failed.bytes), (0, 1, 0));
        assert!(err.to_string().contains("No space left on device"), "{err}");
    }
}
