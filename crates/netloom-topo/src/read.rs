//! Reading an input file whole, bounded: every file netloom reads (topologies in any format,
//! traces, MAC delay profiles, observed weights, assignments, calibrations, cluster files, shape
//! limits, sim reports) goes through `read_text` with the size limit of its kind, so
//! `/dev/zero`, a FIFO or a huge file is refused at once.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// A kind of input file and the most bytes netloom reads of one (docs/limits.md says why).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    /// What the file is, for messages ("a topology file").
    pub name: &'static str,
    /// Its size limit in bytes.
    pub limit: u64,
}

const MIB: u64 = 1 << 20;

/// Topology files in every format. A 1,000,000-host native file is about 60 MB.
pub const TOPOLOGY: Kind = Kind {
    name: "a topology file",
    limit: 128 * MIB,
};
/// Mahimahi delivery traces: about 8 bytes a delivery opportunity, so hours of a fast link.
pub const TRACE: Kind = Kind {
    name: "a trace file",
    limit: 64 * MIB,
};
/// Measured MAC delay profiles (a few hundred sample lines in practice).
pub const PROFILE: Kind = Kind {
    name: "a MAC delay profile",
    limit: 16 * MIB,
};
/// JSON files a command is given beside the topology: observed weights, an assignment.
pub const SIDE_JSON: Kind = Kind {
    name: "a JSON input file",
    limit: 64 * MIB,
};

/// A calibration file (`netloom calibrate -o`): a few kilobytes.
pub const CALIBRATION: Kind = Kind {
    name: "a calibration file",
    limit: MIB,
};
/// A cluster file: a few lines a machine, and the nodes it places.
pub const CLUSTER: Kind = Kind {
    name: "a cluster file",
    limit: 16 * MIB,
};
/// `netloom shape`'s limits file: a table per user.
pub const SHAPE_LIMITS: Kind = Kind {
    name: "a limits file",
    limit: MIB,
};
/// A `netloom sim --json` report (`web --report`): about 300 bytes a pipe and a flow.
pub const SIM_REPORT: Kind = Kind {
    name: "a sim report",
    limit: 512 * MIB,
};

/// Why a file was not read. The message does not name the file: callers put its path first.
#[derive(Debug)]
pub enum ReadError {
    /// Not a regular file: a directory, a FIFO, a device such as /dev/zero, a socket.
    NotAFile {
        /// What it is instead.
        what: &'static str,
        /// The kind of file expected.
        kind: Kind,
    },
    /// Larger than its kind's limit.
    TooLarge {
        /// Its size in bytes (as stat says, or the bytes read before stopping).
        size: u64,
        /// The kind of file, with the limit.
        kind: Kind,
    },
    /// Bytes that are not UTF-8, first on this 1-based line.
    NotUtf8 {
        /// The line of the first invalid byte.
        line: usize,
    },
    /// The operating system's error (missing file, permission).
    Io(std::io::Error),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::NotAFile { what, kind } => write!(
                f,
                "cannot read: it is {what}, not a regular file; {} must be a regular file of at \
                 most {}",
                kind.name,
                size(kind.limit)
            ),
            ReadError::TooLarge { size: s, kind } => write!(
                f,
                "cannot read: {} is {s} bytes, above the limit of {}",
                kind.name,
                size(kind.limit)
            ),
            ReadError::NotUtf8 { line } => {
                write!(f, "line {line} is not UTF-8 text")
            }
            ReadError::Io(e) => write!(f, "cannot read: {e}"),
        }
    }
}

impl std::error::Error for ReadError {}

impl ReadError {
    /// The line the error is on, if it is about the contents.
    pub fn line(&self) -> Option<usize> {
        match self {
            ReadError::NotUtf8 { line } => Some(*line),
            _ => None,
        }
    }
}

/// A byte count as people write it: "128 MiB", or bytes below one MiB.
fn size(bytes: u64) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// The text of the regular file at `path`, at most `kind.limit` bytes of UTF-8. Anything else is
/// refused before reading (a directory, FIFO or device by its type, a large file by its size),
/// and a file that grows while read stops at the limit, so no input costs more than the limit.
pub fn read_text(path: &Path, kind: Kind) -> Result<String, ReadError> {
    // The type is checked before opening: opening a FIFO would wait for a writer.
    check_type(&std::fs::metadata(path).map_err(ReadError::Io)?, kind)?;
    let file = std::fs::File::open(path).map_err(ReadError::Io)?;
    // And again on what was opened, in case the path changed in between.
    let meta = file.metadata().map_err(ReadError::Io)?;
    check_type(&meta, kind)?;
    let mut bytes = Vec::with_capacity(meta.len().min(kind.limit) as usize);
    file.take(kind.limit + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > kind.limit {
        return Err(ReadError::TooLarge {
            size: meta.len().max(bytes.len() as u64),
            kind,
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        ReadError::NotUtf8 {
            line: valid.iter().filter(|&&b| b == b'\n').count() + 1,
        }
    })
}

fn check_type(meta: &std::fs::Metadata, kind: Kind) -> Result<(), ReadError> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    let what = if t.is_file() {
        if meta.len() > kind.limit {
            return Err(ReadError::TooLarge {
                size: meta.len(),
                kind,
            });
        }
        return Ok(());
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(ReadError::NotAFile { what, kind })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_directories_and_large_files_are_refused_before_reading() {
        let small = Kind {
            name: "a test file",
            limit: 10,
        };
        let zero = read_text(Path::new("/dev/zero"), TOPOLOGY).unwrap_err();
        assert!(zero.to_string().contains("a character device"), "{zero}");
        assert!(zero.to_string().contains("128 MiB"), "{zero}");
        let dir = read_text(Path::new("/"), small).unwrap_err();
        assert!(dir.to_string().contains("a directory"), "{dir}");
        let dir = std::env::temp_dir().join(format!("netloom-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f");
        std::fs::write(&file, "0123456789\n").unwrap();
        let large = read_text(&file, small).unwrap_err();
        assert!(large
            .to_string()
            .contains("11 bytes, above the limit of 10 bytes"));
        std::fs::write(&file, b"ok\n\xff\n").unwrap();
        let bad = read_text(&file, TOPOLOGY).unwrap_err();
        assert_eq!(bad.line(), Some(2));
        std::fs::write(&file, "ok\n").unwrap();
        assert_eq!(read_text(&file, small).unwrap(), "ok\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
