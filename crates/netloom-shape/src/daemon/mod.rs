//! The shaping process: holds the NFQUEUE, runs the `Shaper` against the monotonic clock, keeps
//! the kernel's rules in step with its links, and answers requests on a Unix socket (one JSON
//! line in, one out) from root and from unprivileged users, each known by the socket's peer
//! credentials and held to their own links and limits. It ends on `stop` or SIGTERM (or, when
//! started by a first request, when its last link is deleted), and removes its rules as it goes.
//! A pipe's duplicates are sent from a raw socket with netloom's mark, which its rules skip.

mod housekeeping;
mod kernel_io;
mod packet_loop;
mod requests;
mod socket;

pub use housekeeping::{clean, sweep_dead};

use crate::kernel::{DUPLICATE_MARK, QUEUES};
use crate::limits::{config_path, LimitsError, Tenancy};
use crate::shaper::{LinkReport, UserReport};
use housekeeping::sweeper;
use kernel_io::{Installer, KernelIo, TOKEN_INSTALLED, TOKEN_REQUESTS};
use netloom_os::{NfQueue, OsError, Poller, RawSender, SocketTable};
use netloom_time::SystemClock;
use packet_loop::serve_loop;
use serde::{Deserialize, Serialize};
use socket::reader;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;

/// Bytes of each packet copied out of the kernel: enough for an IPv6 header and the ports.
const COPY: u32 = 128;
/// Bytes copied of each packet of the whole-copy queue: all of it (the kernel copies at most
/// what fits in a netlink attribute).
const COPY_WHOLE: u32 = 0xffff;
/// Packets the kernel holds for netloom at most; beyond, it drops.
const MAX_HELD: u32 = 65536;
/// Packets the daemon's pipes hold at most, over all users: past it, arriving packets go on
/// unshaped (counted for their link's owner), so the kernel's queue always has room for what
/// it has queued but the daemon has not read yet (a few batches) and never drops a packet for
/// want of room. With the queue's fail-open flag, this is the second of two guards.
const CAPACITY: u64 = MAX_HELD as u64 - 4096;

/// A request to the shaping process.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Request {
    /// Make or change a link: the request's words, and where its profiles are looked up.
    Set {
        /// The words after `netloom shape` (or `shape set`).
        words: Vec<String>,
        /// Directories for `profile=NAME`.
        profiles: Vec<PathBuf>,
    },
    /// Remove a link, by selector words or by id (one word, a number).
    Delete {
        /// The words after `delete`.
        words: Vec<String>,
    },
    /// List the links with their counters.
    Show,
    /// Remove every link and end.
    Stop,
}

/// The shaping process's answer.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Reply {
    /// What went wrong, if anything (one line).
    pub error: Option<String>,
    /// What was done, for the user.
    pub message: Option<String>,
    /// The links, for `show`.
    pub links: Vec<LinkReport>,
    /// What each user's pipes hold and what their limits turned away, for `show` (the
    /// caller's own; root: everyone's).
    #[serde(default)]
    pub users: Vec<UserReport>,
}

/// The network namespace a shaping process shapes: one process per namespace, which enters it
/// before opening anything, so its queue, rules and socket lookups are that namespace's. A
/// namespace is known by its inode, so its name and the id of a process in it reach the same
/// shaping process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Netns {
    /// The namespace netloom runs in.
    Own,
    /// Another one.
    Other {
        /// `/run/netns/NAME` or `/proc/PID/ns/net`.
        file: PathBuf,
        /// Its inode in nsfs: the namespace's identity.
        inode: u64,
        /// NAME or PID, as the user wrote it.
        name: String,
    },
}

/// Why a text does not name a network namespace (`Netns::parse`). The message starts with the
/// text as given; the caller puts what gave it (an option's name) first.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// Neither a name `ip netns` could give nor a number.
    #[error("{text:?}: a namespace's name (`ip netns list`) or a process id")]
    NotAName {
        /// As given.
        text: String,
    },
    /// No namespace by that name, or no process by that id.
    #[error("{text}: no network namespace {} (`ip netns list` names them; a number is a process id)", file.display())]
    NoNamespace {
        /// As given.
        text: String,
        /// The file looked for.
        file: PathBuf,
    },
}

impl Netns {
    /// A namespace as `--netns NAME|PID` gives it: a number is a process (a container's, say),
    /// anything else a name (`ip netns`). This process's own namespace, however named, is `Own`.
    pub fn parse(text: &str) -> Result<Netns, NetnsError> {
        let file = match text.parse::<u32>() {
            Ok(pid) => PathBuf::from(format!("/proc/{pid}/ns/net")),
            Err(_) if text.is_empty() || text.contains('/') => {
                return Err(NetnsError::NotAName {
                    text: text.to_string(),
                })
            }
            Err(_) => PathBuf::from("/run/netns").join(text),
        };
        let inode = |f: &std::path::Path| std::fs::metadata(f).map(|m| m.ino());
        let Ok(ino) = inode(&file) else {
            return Err(NetnsError::NoNamespace {
                text: text.to_string(),
                file,
            });
        };
        if inode(std::path::Path::new("/proc/self/ns/net")).is_ok_and(|own| own == ino) {
            return Ok(Netns::Own);
        }
        Ok(Netns::Other {
            file,
            inode: ino,
            name: text.to_string(),
        })
    }

    /// What its shaping process's files are called in the registry directory.
    fn stem(&self) -> String {
        match self {
            Netns::Own => "shape".to_string(),
            Netns::Other { inode, .. } => format!("shape-netns-{inode}"),
        }
    }

    /// The words that name it on a command line (`--netns X`), none for this namespace.
    pub fn args(&self) -> Vec<String> {
        match self {
            Netns::Own => Vec::new(),
            Netns::Other { name, .. } => vec!["--netns".into(), name.clone()],
        }
    }

    /// The socket requests for it come on; anyone may connect (mode 0666): who is asking is
    /// read from the connection, not from the request.
    pub fn socket_path(&self) -> PathBuf {
        netloom_os::registry_dir().join(format!("{}.sock", self.stem()))
    }

    /// The file naming its shaping process's pid.
    pub fn pid_path(&self) -> PathBuf {
        netloom_os::registry_dir().join(format!("{}.pid", self.stem()))
    }

    /// Its shaping process's log, when a request started it.
    pub fn log_path(&self) -> PathBuf {
        netloom_os::registry_dir().join(format!("{}.log", self.stem()))
    }
}

/// Sends one request to the shaping process of `ns` and reads the reply.
pub fn request(ns: &Netns, req: &Request) -> std::io::Result<Reply> {
    let mut stream = UnixStream::connect(ns.socket_path())?;
    let mut line = serde_json::to_string(req).expect("a request serializes");
    line.push('\n');
    stream.write_all(line.as_bytes())?;
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply)?;
    serde_json::from_str(&reply).map_err(std::io::Error::other)
}

/// Why the shaping process could not start or went wrong.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// A socket, queue or poller.
    #[error(transparent)]
    Os(#[from] OsError),
    /// The limits file (its error's message whole; not also a source, which would print it
    /// twice in a chain).
    #[error("{0}")]
    Limits(LimitsError),
    /// The control socket.
    #[error("{0}")]
    Io(String),
    /// Started by a first request (`--until-empty`), which failed: nothing is left to shape.
    #[error("the first request failed, so the shaping process it started ends: {0}")]
    FirstRequest(String),
    /// Started by a first request (`--until-empty`) that never came: its caller went away.
    #[error("started for a first request that did not come within {}, so the shaping process ends", .0)]
    NoFirstRequest(netloom_time::Duration),
}

/// The packet loop's real-time priority (SCHED_FIFO), below the live workers' (40): both only
/// sleep between deadlines, and a live run's deadlines are the tighter.
const REALTIME_PRIORITY: u8 = 30;

/// Readies the calling thread, the packet loop's, to release held packets on time: precise
/// timers and real-time priority, so that its wake-ups wait neither for the timer slack nor
/// behind the machine's other work (at normal priority, on a 2-vCPU VM at load 9, a 20 ms pipe
/// added 30 to 50 ms). The threads started before it (the callers', the installer's) stay at
/// normal priority. Refused real-time priority (a container without real-time budget), it
/// runs on at normal priority and says so in its log.
fn keep_time() {
    netloom_os::set_timer_slack_ns(1);
    if let Err(e) = netloom_os::set_realtime_priority(REALTIME_PRIORITY) {
        eprintln!("netloom shape: warning: {e}; packets are released at normal priority, late by whatever else runs");
    }
}

/// Runs the shaping process of `ns` until `stop` or SIGTERM, or, if `until_empty` (started by
/// a first request rather than as a service), until it has no link left after its first.
pub fn run(ns: &Netns, until_empty: bool) -> Result<(), DaemonError> {
    let mut tenancy = Tenancy::load(&config_path()).map_err(DaemonError::Limits)?;
    // Before entering a namespace: the others' files are reached from here.
    for what in sweep_dead() {
        eprintln!("netloom shape: removed {what} (its shaping process was killed)");
    }
    // First, so the queue, the sockets and the iptables it runs are the namespace's.
    if let Netns::Other { file, name, .. } = ns {
        netloom_os::enter_namespace_file(file, name)?;
    }
    let (socket_path, pid_path) = (ns.socket_path(), ns.pid_path());
    let dir = netloom_os::registry_dir();
    std::fs::create_dir_all(&dir)
        .map_err(|e| DaemonError::Io(format!("{}: {e}", dir.display())))?;
    let sockets = SocketTable::open()?;
    let raw = RawSender::open(DUPLICATE_MARK)?;
    let mut queue = NfQueue::open()?;
    queue.bind(QUEUES.header, COPY, MAX_HELD)?;
    queue.bind(QUEUES.whole, COPY_WHOLE, MAX_HELD)?;
    // Bound under another name and opened to users before it takes its own, so no user finds
    // the socket while it is still root's alone (their request would be refused by its mode).
    let fresh = socket_path.with_extension("sock.new");
    let io = |path: &std::path::Path, e: std::io::Error| {
        DaemonError::Io(format!("{}: {e}", path.display()))
    };
    let _ = std::fs::remove_file(&fresh);
    let listener = UnixListener::bind(&fresh).map_err(|e| io(&fresh, e))?;
    std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o666))
        .map_err(|e| io(&fresh, e))?;
    std::fs::rename(&fresh, &socket_path).map_err(|e| io(&socket_path, e))?;
    std::fs::write(&pid_path, format!("{}\n", std::process::id()))
        .map_err(|e| DaemonError::Io(format!("{}: {e}", pid_path.display())))?;
    let stopping = netloom_os::install_stop_handler()?;
    sweeper()?;
    let (woken, requests, answering) = reader(listener)?;
    let installer = Installer::start()?;
    let mut poller = Poller::new()?;
    poller.add(queue.as_fd(), 0)?;
    poller.add(woken.as_fd(), TOKEN_REQUESTS)?;
    poller.add(installer.fd(), TOKEN_INSTALLED)?;
    let mut io = KernelIo {
        installer,
        queue,
        sockets,
        poller,
        woken,
        ready: Vec::new(),
        verdicts: Vec::new(),
        whole_verdicts: Vec::new(),
        copies: HashMap::new(),
        raw,
        duplicates: HashMap::new(),
        unsent: 0,
        groups: HashMap::new(),
    };
    keep_time();
    let result = serve_loop(
        &mut io,
        &SystemClock::start(),
        &requests,
        stopping,
        until_empty,
        &mut tenancy,
        CAPACITY,
    );
    let _ = std::fs::remove_file(&socket_path);
    let _ = std::fs::remove_file(&pid_path);
    // The last replies (the delete that ended the loop) reach their callers before the process
    // ends; requests the loop never took are abandoned (their callers see the socket close).
    drop(requests);
    answering.wait(socket::CALLER_PATIENCE);
    let sent = io.queue.stats();
    eprintln!(
        "netloom shape: {} packets given verdicts in {} messages and {} sendto calls; {} duplicates not sent",
        sent.packets, sent.messages, sent.sends, io.unsent
    );
    if let Err(e) = &result {
        eprintln!("netloom shape: {e}");
    }
    result
}
