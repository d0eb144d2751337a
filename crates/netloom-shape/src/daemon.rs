//! The shaping process: holds the NFQUEUE, runs the `Shaper` against the monotonic clock, keeps
//! the kernel's rules in step with its links, and answers requests on a Unix socket (one JSON
//! line in, one out) from root and from unprivileged users, each known by the socket's peer
//! credentials and held to their own links and limits. It ends on `stop` or SIGTERM (or, when
//! started by a first request, when its last link is deleted), and removes its rules as it goes.
//! A pipe's duplicates are sent from a raw socket with netloom's mark, which its rules skip.

use crate::classifier::{Direction, Packet, Rule, ROOT};
use crate::kernel::KernelError;
use crate::kernel::{self, DUPLICATE_MARK, QUEUES};
use crate::limits::{config_path, LimitsError, Tenancy};
use crate::shaper::{Arrival, LinkReport, Shaper, Target};
use crate::spec::{parse_selector, Cgroup, LinkSpec, SYSTEM_PROFILES};
use netloom_os::{NfQueue, OsError, Poller, RawSender, SocketOwner, SocketTable, Verdict};
use netloom_time::{Clock, Instant, SystemClock};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

/// Bytes of each packet copied out of the kernel: enough for an IPv6 header and the ports.
const COPY: u32 = 128;
/// Bytes copied of each packet of the whole-copy queue: all of it (the kernel copies at most
/// what fits in a netlink attribute).
const COPY_WHOLE: u32 = 0xffff;
/// Packets the kernel holds for netloom at most; beyond, it drops.
const MAX_HELD: u32 = 65536;
/// Packets read from the queue before they are classified together (`Shaper::arrive_batch`);
/// fewer when the queue holds fewer. They share one arrival time, that of the wake-up.
const BATCH: usize = 64;
/// The netfilter hook numbers NFQUEUE reports.
const HOOK_INPUT: u8 = 1;
const HOOK_OUTPUT: u8 = 3;

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

/// Removes what shaping processes left (their rules, sockets and pid files), ending each that
/// still runs (which removes its rules, in its namespace); the rules of one killed with SIGKILL
/// in another namespace are removed there (`sweep_dead`). Returns what was removed, for
/// `netloom clean`.
pub fn clean() -> Vec<String> {
    let mut removed = sweep_dead();
    let dir = netloom_os::registry_dir();
    let pids: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("shape") && name.ends_with(".pid")
        })
        .collect();
    for pid_file in pids {
        end_process(&pid_file, &mut removed);
        let socket = pid_file.with_extension("sock");
        for path in [socket, pid_file] {
            if std::fs::remove_file(&path).is_ok() {
                removed.push(path.display().to_string());
            }
        }
    }
    if kernel::remove() {
        removed.push(format!(
            "iptables chains {} and {}",
            kernel::CHAIN_IN,
            kernel::CHAIN_OUT
        ));
    }
    removed
}

/// Removes what the shaping processes of other namespaces that died without cleaning up (`kill
/// -9`) left: for each `shape-netns-INODE.pid` whose process is gone, the namespace with that
/// inode is found (a name in `/run/netns`, or any process's `/proc/PID/ns/net`), its chains
/// are removed inside it (from a thread that enters it, so the iptables it runs are the
/// namespace's), and the pid and socket files go. A namespace no longer found has gone, and
/// its rules with it. Every shaping process does this as it starts and then every
/// `SWEEP_EVERY` while it runs, and `netloom clean`.
pub fn sweep_dead() -> Vec<String> {
    let mut removed = Vec::new();
    let dir = netloom_os::registry_dir();
    let dead: Vec<(PathBuf, u64, String)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let inode = name.strip_prefix("shape-netns-")?.strip_suffix(".pid")?;
            let pid = std::fs::read_to_string(e.path()).ok()?;
            Some((e.path(), inode.parse().ok()?, pid))
        })
        .filter(|(_, _, pid)| !pid.trim().parse::<u32>().is_ok_and(alive))
        .collect();
    for (pid_file, inode, pid) in dead {
        // A new shaping process of that namespace may have started meanwhile: its file, its
        // rules.
        if std::fs::read_to_string(&pid_file).ok().as_ref() != Some(&pid) {
            continue;
        }
        if let Some(file) = namespace_file(inode) {
            let name = file.display().to_string();
            let swept = std::thread::spawn(move || {
                netloom_os::enter_namespace_file(&file, &name).is_ok() && kernel::remove()
            })
            .join()
            .unwrap_or(false);
            if swept {
                removed.push(format!(
                    "iptables chains {} and {} in namespace {inode}",
                    kernel::CHAIN_IN,
                    kernel::CHAIN_OUT
                ));
            }
        }
        for path in [pid_file.with_extension("sock"), pid_file] {
            if std::fs::remove_file(&path).is_ok() {
                removed.push(path.display().to_string());
            }
        }
    }
    removed
}

/// Does process `pid` run? A zombie does not: a shaping process started by a request outlives
/// its launcher, and once killed it may wait unreaped under a parent that does not reap.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command's closing parenthesis.
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// A file of the network namespace whose nsfs inode is `inode`: a name of `ip netns`, else a
/// process in it.
fn namespace_file(inode: u64) -> Option<PathBuf> {
    let named = std::fs::read_dir("/run/netns")
        .into_iter()
        .flatten()
        .flatten();
    let processes = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .map(|e| e.path().join("ns/net"));
    named
        .map(|e| e.path())
        .chain(processes)
        .find(|f| std::fs::metadata(f).is_ok_and(|m| m.ino() == inode))
}

/// Ends the shaping process `pid_file` names, if it runs, and waits a moment for it to go.
fn end_process(pid_file: &std::path::Path, removed: &mut Vec<String>) {
    if let Some(pid) = std::fs::read_to_string(pid_file)
        .ok()
        .and_then(|p| p.trim().parse::<u32>().ok())
    {
        if std::path::Path::new(&format!("/proc/{pid}")).exists()
            && netloom_os::terminate(pid).is_ok()
        {
            removed.push(format!("shaping process {pid}"));
            // It removes its own rules as it ends; give it a moment before doing so here.
            for _ in 0..50 {
                if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

/// How often a running shaping process looks for other namespaces' processes that were killed
/// (`sweep_dead`), so their rules go soon after, not at the next start.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Starts the thread that runs `sweep_dead` every `SWEEP_EVERY`, for the process's life.
fn sweeper() -> Result<(), DaemonError> {
    std::thread::Builder::new()
        .name("shape-sweeper".to_string())
        .spawn(|| loop {
            std::thread::sleep(SWEEP_EVERY);
            for what in sweep_dead() {
                eprintln!("netloom shape: removed {what} (its shaping process was killed)");
            }
        })
        .map(drop)
        .map_err(|e| DaemonError::Io(format!("start the sweeping thread: {e}")))
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
    let _ = std::fs::remove_file(&socket_path);
    let listener = UnixListener::bind(&socket_path)
        .map_err(|e| DaemonError::Io(format!("{}: {e}", socket_path.display())))?;
    std::fs::set_permissions(&socket_path, std::fs::Permissions::from_mode(0o666))
        .map_err(|e| DaemonError::Io(format!("{}: {e}", socket_path.display())))?;
    std::fs::write(&pid_path, format!("{}\n", std::process::id()))
        .map_err(|e| DaemonError::Io(format!("{}: {e}", pid_path.display())))?;
    let stopping = netloom_os::install_stop_handler()?;
    sweeper()?;
    let (woken, requests) = reader(listener)?;
    let mut poller = Poller::new()?;
    poller.add(queue.as_fd(), 0)?;
    poller.add(woken.as_fd(), 1)?;
    let mut io = KernelIo {
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
    let result = serve_loop(
        &mut io,
        &SystemClock::start(),
        &requests,
        stopping,
        until_empty,
        &mut tenancy,
    );
    let _ = std::fs::remove_file(&socket_path);
    let _ = std::fs::remove_file(&pid_path);
    let sent = io.queue.stats();
    eprintln!(
        "netloom shape: {} packets given verdicts in {} messages and {} sendto calls; {} duplicates not sent",
        sent.packets, sent.messages, sent.sends, io.unsent
    );
    result
}

/// A packet the kernel holds: its queue (header copy or whole copy) and its id there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Handle {
    /// It came through the whole-copy queue (its pipe may mark it CE).
    whole: bool,
    /// Its id in that queue, for the verdict.
    id: u32,
}

/// A packet the kernel queued, as the loop takes it.
struct Queued {
    /// Which packet, for the verdict.
    handle: Handle,
    /// Its length in bytes.
    len: u32,
    /// What the classifier reads of it; `None` for a packet it cannot read (let go at once).
    packet: Option<Packet>,
}

/// Everything the packet loop does outside itself: the kernel's queue, socket table and rules,
/// and waiting. The daemon's is `KernelIo`; a test's plays packets against a `TestClock`, so
/// the loop (and its timing) runs the same against either.
trait LoopIo {
    /// Waits until a packet or a request may be ready, or `timeout` has passed; true if
    /// requests may be waiting.
    fn wait(&mut self, timeout: std::time::Duration) -> Result<bool, DaemonError>;
    /// Appends what the kernel has queued since the last call, up to about `BATCH` packets.
    fn recv(&mut self, out: &mut Vec<Queued>) -> Result<(), DaemonError>;
    /// The local socket a TCP or UDP packet between `local` and `remote` belongs to.
    fn socket(&mut self, proto: u8, local: SocketAddr, remote: SocketAddr) -> Option<SocketOwner>;
    /// The primary group of user `uid`'s account.
    fn primary_group(&mut self, uid: u32) -> Option<u32>;
    /// The ids of the cgroups among `named` that the cgroup with id `id` is below.
    fn cgroups_above(&mut self, id: u64, named: &[&Cgroup]) -> Vec<u64>;
    /// Marks CE the held packets a pipe marked (their whole copies, given back at the verdict).
    fn mark(&mut self, marked: &[Handle]);
    /// Keeps the whole copies of held packets a pipe duplicated, as they are now (marked or
    /// not), for `send_copies`.
    fn duplicate(&mut self, duplicated: &[Handle]);
    /// Sends the kept copies whose exit has come (true), or forgets them (false).
    fn send_copies(&mut self, copies: &[(Handle, bool)]);
    /// Gives the verdicts (packet, accept) on held packets.
    fn verdicts(&mut self, decided: &[(Handle, bool)]);
    /// Makes the kernel's rules `rules`.
    fn install(&mut self, rules: &[Rule]) -> Result<(), KernelError>;
    /// Removes the kernel's rules.
    fn remove(&mut self);
}

/// The daemon's `LoopIo`: NFQUEUE, sock_diag, iptables and epoll.
struct KernelIo {
    queue: NfQueue,
    sockets: SocketTable,
    poller: Poller,
    /// A byte arrives here for each request the reader thread has posted.
    woken: UnixStream,
    ready: Vec<u32>,
    /// The verdicts of one turn, as each queue takes them.
    verdicts: Vec<(u32, Verdict)>,
    whole_verdicts: Vec<(u32, Verdict)>,
    /// The packets of the whole-copy queue held now, by id, each with whether it was marked.
    copies: HashMap<u32, (Vec<u8>, bool)>,
    /// Sends duplicates, marked so netloom's rules let them go.
    raw: RawSender,
    /// The duplicates pipes made, by the id of their original in the whole-copy queue, until
    /// their exit.
    duplicates: HashMap<u32, Vec<u8>>,
    /// Duplicates that could not be sent: their original came through the header-only queue
    /// (its link began duplicating while it was held), was longer than the queue copies, or
    /// the raw socket refused them.
    unsent: u64,
    /// Users' primary groups, read once each while the process runs.
    groups: HashMap<u32, Option<u32>>,
}

impl LoopIo for KernelIo {
    fn wait(&mut self, timeout: std::time::Duration) -> Result<bool, DaemonError> {
        self.poller.wait(Some(timeout), &mut self.ready)?;
        if !self.ready.contains(&1) {
            return Ok(false);
        }
        // Drain the waker's bytes; each stands for a request in the channel.
        let mut drained = [0u8; 64];
        while matches!((&self.woken).read(&mut drained), Ok(n) if n > 0) {}
        Ok(true)
    }

    fn recv(&mut self, out: &mut Vec<Queued>) -> Result<(), DaemonError> {
        // One packet per read: drain what the queue holds, so it is classified as one batch.
        while out.len() < BATCH {
            let copies = &mut self.copies;
            let read = self.queue.recv(|p| {
                let direction = match p.hook {
                    HOOK_INPUT => Some(Direction::In),
                    HOOK_OUTPUT => Some(Direction::Out),
                    _ => None,
                };
                let whole = p.queue == QUEUES.whole;
                // A packet longer than the copy is neither rewritten (the verdict's payload
                // would trim it) nor duplicated.
                if whole && p.header.len() == p.len as usize {
                    copies.insert(p.id, (p.header.to_vec(), false));
                }
                out.push(Queued {
                    handle: Handle { whole, id: p.id },
                    len: p.len,
                    packet: direction.and_then(|d| Packet::parse(d, p.header, p.owner)),
                });
            })?;
            if read == 0 {
                break;
            }
        }
        Ok(())
    }

    fn socket(&mut self, proto: u8, local: SocketAddr, remote: SocketAddr) -> Option<SocketOwner> {
        self.sockets
            .lookup(proto, local, remote)
            .unwrap_or_else(|e| {
                eprintln!("netloom shape: {e}");
                None
            })
    }

    fn primary_group(&mut self, uid: u32) -> Option<u32> {
        *self
            .groups
            .entry(uid)
            .or_insert_with(|| netloom_os::primary_group(uid))
    }

    fn cgroups_above(&mut self, id: u64, named: &[&Cgroup]) -> Vec<u64> {
        // Read afresh: a cgroup made below a named one after the link was set is found too.
        named
            .iter()
            .filter(|c| c.id != id && c.tree().contains(&id))
            .map(|c| c.id)
            .collect()
    }

    fn mark(&mut self, marked: &[Handle]) {
        for handle in marked.iter().filter(|h| h.whole) {
            if let Some((packet, marked)) = self.copies.get_mut(&handle.id) {
                netloom_packet::set_ce(packet);
                *marked = true;
            }
        }
    }

    fn duplicate(&mut self, duplicated: &[Handle]) {
        for handle in duplicated {
            match self.copies.get(&handle.id).filter(|_| handle.whole) {
                Some((packet, _)) => {
                    self.duplicates.insert(handle.id, packet.clone());
                }
                None => self.unsent += 1,
            }
        }
    }

    fn send_copies(&mut self, copies: &[(Handle, bool)]) {
        for &(handle, send) in copies {
            let Some(packet) = self.duplicates.remove(&handle.id).filter(|_| handle.whole) else {
                continue; // counted when it was duplicated
            };
            // Counted, not logged: a burst would flood the log; the count is logged at the end.
            if send && self.raw.send(&packet).is_err() {
                self.unsent += 1;
            }
        }
    }

    fn verdicts(&mut self, decided: &[(Handle, bool)]) {
        self.verdicts.clear();
        self.whole_verdicts.clear();
        for &(handle, accept) in decided {
            let verdict = match accept {
                true => Verdict::Accept,
                false => Verdict::Drop,
            };
            if !handle.whole {
                self.verdicts.push((handle.id, verdict));
                continue;
            }
            // A marked packet goes back rewritten, on its own; the rest as the other queue's.
            match self.copies.remove(&handle.id) {
                Some((packet, true)) if accept => {
                    if let Err(e) = self
                        .queue
                        .accept_rewritten(QUEUES.whole, handle.id, &packet)
                    {
                        eprintln!("netloom shape: {e}");
                        self.whole_verdicts.push((handle.id, verdict));
                    }
                }
                _ => self.whole_verdicts.push((handle.id, verdict)),
            }
        }
        // A verdict that could not be sent is logged, not fatal: ending here would leave every
        // other held packet to the bypass.
        for (queue, verdicts) in [
            (QUEUES.header, &self.verdicts),
            (QUEUES.whole, &self.whole_verdicts),
        ] {
            if let Err(e) = self.queue.verdicts(queue, verdicts) {
                eprintln!("netloom shape: {e}");
            }
        }
    }

    fn install(&mut self, rules: &[Rule]) -> Result<(), KernelError> {
        kernel::install(rules, QUEUES)
    }

    fn remove(&mut self) {
        kernel::remove();
    }
}

/// The packet loop: takes queued packets through the shaper at `clock`'s time, gives each its
/// verdict at its exit, answers requests, and ends on `stopping`, on `stop`, or (if
/// `until_empty`) when its last link is gone; then lets every held packet go and removes the
/// rules.
fn serve_loop(
    io: &mut impl LoopIo,
    clock: &impl Clock,
    requests: &mpsc::Receiver<Asked>,
    stopping: &AtomicBool,
    until_empty: bool,
    tenancy: &mut Tenancy,
) -> Result<(), DaemonError> {
    let mut shaper: Shaper<Handle> = Shaper::new(std::process::id().into());
    let (mut marked, mut duplicated, mut copies) = (Vec::new(), Vec::new(), Vec::new());
    let mut queued = Vec::new();
    let (mut batch, mut fates) = (Vec::new(), Vec::new());
    let mut out = Vec::new();
    let mut had_links = false;
    let result = loop {
        if stopping.load(Ordering::Relaxed) {
            break Ok(());
        }
        // Wake at least every 100 ms to notice SIGTERM.
        let cap = std::time::Duration::from_millis(100);
        let timeout = shaper.next_due().map_or(cap, |at| {
            std::time::Duration::from_nanos(at.0.saturating_sub(clock.now().0)).min(cap)
        });
        let asked = match io.wait(timeout) {
            Ok(asked) => asked,
            Err(e) => break Err(e),
        };
        if let Err(e) = io.recv(&mut queued) {
            break Err(e);
        }
        for q in queued.drain(..) {
            match q.packet {
                Some(mut packet) => {
                    find_socket(io, &mut shaper, &mut packet);
                    batch.push((packet, q.len, q.handle));
                }
                None => out.push((q.handle, true)),
            }
        }
        shaper.arrive_batch(clock.now(), &mut batch, &mut fates);
        for (id, fate) in fates.drain(..) {
            match fate {
                Arrival::Held {
                    duplicate: Some(_), ..
                } => duplicated.push(id),
                Arrival::Held { .. } | Arrival::Waiting { .. } => {}
                Arrival::Unmatched => out.push((id, true)),
                Arrival::Dropped(_) => out.push((id, false)),
            }
        }
        shaper.due(clock.now(), &mut out);
        shaper.take_marked(&mut marked);
        io.mark(&marked);
        marked.clear();
        // After the marks, so a marked packet's copy is marked too.
        io.duplicate(&duplicated);
        duplicated.clear();
        io.verdicts(&out);
        out.clear();
        // After the verdicts, so a copy leaving in the same turn as its original follows it.
        shaper.take_copies(&mut copies);
        io.send_copies(&copies);
        copies.clear();
        if asked {
            let mut stop = false;
            while let Ok(asked) = requests.try_recv() {
                let (reply, stopped) = serve(
                    io,
                    asked.uid,
                    asked.request,
                    &mut shaper,
                    tenancy,
                    clock.now(),
                );
                // The reader may have given up on a caller that went away: nothing to tell.
                let _ = asked.answer.send(reply);
                stop |= stopped;
            }
            had_links |= !shaper.is_empty();
            if stop || (until_empty && had_links && shaper.is_empty()) {
                break Ok(());
            }
        }
    };
    // Let held packets go before the queue closes, then take the rules away.
    shaper.drain(&mut out);
    io.verdicts(&out);
    io.remove();
    result
}

/// Fills in what the queue did not say of a packet's local socket and some rule needs, asked
/// of the kernel's socket table: the owner of the socket an arriving packet will reach (the
/// kernel looks it up after INPUT on loopback), so a user's IN pipes take only packets for
/// that user's sockets and IN rules with an owner can match, and, while a rule names a
/// cgroup, the socket's cgroup in either direction (the queue never reports it), and, the
/// first time a cgroup is seen since the links changed, which of the named cgroups it is below.
/// sock_diag gives a socket's uid, not a group: an arriving packet's group is its owner's
/// primary group (`u32::MAX`, which no gid rule matches, for a uid with no account). Leaving
/// packets carry their owner and group from the queue.
fn find_socket(io: &mut impl LoopIo, shaper: &mut Shaper<Handle>, packet: &mut Packet) {
    let classifier = shaper.classifier();
    let owner = packet.owner.is_none() && classifier.needs_receivers();
    if !(owner || classifier.has_cgroups()) || !matches!(packet.proto, 6 | 17) {
        return;
    }
    let (local, remote) = match packet.direction {
        Direction::In => (
            SocketAddr::new(packet.dst, packet.dport),
            SocketAddr::new(packet.src, packet.sport),
        ),
        Direction::Out => (
            SocketAddr::new(packet.src, packet.sport),
            SocketAddr::new(packet.dst, packet.dport),
        ),
    };
    if let Some(socket) = io.socket(packet.proto, local, remote) {
        if packet.owner.is_none() && packet.direction == Direction::In {
            let gid = io.primary_group(socket.uid).unwrap_or(u32::MAX);
            packet.owner = Some((socket.uid, gid));
        }
        packet.cgroup = socket.cgroup;
        let unknown = |id: &u64| classifier.has_cgroups() && !classifier.knows_cgroup(*id);
        if let Some(id) = socket.cgroup.filter(unknown) {
            let above = io.cgroups_above(id, &classifier.cgroups());
            shaper.learn_cgroup(id, above);
        }
    }
}

/// Answers one request from `uid` (a line that did not parse is its error); true with it if it
/// was `stop`.
fn serve(
    io: &mut impl LoopIo,
    uid: u32,
    request: Result<Request, serde_json::Error>,
    shaper: &mut Shaper<Handle>,
    tenancy: &mut Tenancy,
    now: Instant,
) -> (Reply, bool) {
    // What the caller may see and change: root everything, a user their own links.
    let mine = (uid != ROOT).then_some(uid);
    // An edited limits file applies from this request on; a broken one is logged and the
    // limits read before stay.
    if let Err(e) = tenancy.reload_if_changed() {
        eprintln!("netloom shape: {e}");
    }
    // A line that did not parse does not count against the user's rate.
    let request = match request {
        Ok(request) => tenancy.admit(uid, now).map(|()| request),
        Err(e) => return (error_reply(format!("bad request: {e}")), false),
    };
    match request {
        Err(e) => (error_reply(e.to_string()), false),
        Ok(Request::Stop) if mine.is_some() => (
            error_reply(format!(
                "only root may stop the shaping process (you are uid {uid}); `netloom shape delete ID` removes one of your links"
            )),
            false,
        ),
        Ok(Request::Stop) => {
            // The rules go before the answer, so the caller finds them gone.
            io.remove();
            let n = shaper.report(now, None).len();
            let message = Some(format!("stopped; removed {n} link(s)"));
            (
                Reply {
                    message,
                    ..Reply::default()
                },
                true,
            )
        }
        Ok(Request::Show) => (
            Reply {
                links: shaper.report(now, mine),
                ..Reply::default()
            },
            false,
        ),
        Ok(Request::Set { words, profiles }) => {
            (set(io, shaper, tenancy, uid, now, &words, &profiles), false)
        }
        Ok(Request::Delete { words }) => (delete(io, shaper, mine, &words), false),
    }
}

/// A request read off the socket, for the packet loop to answer.
struct Asked {
    /// The caller, by the socket's peer credentials.
    uid: u32,
    /// The request, or why its line did not parse.
    request: Result<Request, serde_json::Error>,
    /// Where the packet loop puts the reply.
    answer: mpsc::Sender<Reply>,
}

/// How long a caller has to send its line and read its reply.
const CALLER_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);
/// The longest request line read; a longer one is refused.
const MAX_REQUEST: u64 = 64 * 1024;

/// Starts the thread that accepts callers and reads their lines, so that a caller who connects
/// and sends nothing (or reads nothing) delays only other callers, never a held packet: the
/// packet loop gets whole requests through the channel, woken by a byte on the returned
/// socket. The thread ends with the process.
fn reader(listener: UnixListener) -> Result<(UnixStream, mpsc::Receiver<Asked>), DaemonError> {
    let (waker, woken) = UnixStream::pair().map_err(|e| DaemonError::Io(e.to_string()))?;
    woken
        .set_nonblocking(true)
        .map_err(|e| DaemonError::Io(e.to_string()))?;
    let (post, requests) = mpsc::channel();
    std::thread::Builder::new()
        .name("shape-requests".to_string())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let Some((uid, request)) = read_request(&stream) else {
                    continue;
                };
                let (answer, reply) = mpsc::channel();
                if post
                    .send(Asked {
                        uid,
                        request,
                        answer,
                    })
                    .is_err()
                {
                    return; // the packet loop has ended
                }
                let _ = (&waker).write_all(&[1]);
                if let Ok(reply) = reply.recv() {
                    let mut text = serde_json::to_string(&reply).expect("a reply serializes");
                    text.push('\n');
                    let _ = (&stream).write_all(text.as_bytes());
                }
            }
        })
        .map_err(|e| DaemonError::Io(format!("start the request thread: {e}")))?;
    Ok((woken, requests))
}

/// The caller's uid and request line, or None when the caller cannot be known or sent no
/// line in time (it is dropped without an answer).
fn read_request(stream: &UnixStream) -> Option<(u32, Result<Request, serde_json::Error>)> {
    let caller = netloom_os::peer_credentials(stream.as_fd()).ok()?;
    stream.set_read_timeout(Some(CALLER_PATIENCE)).ok()?;
    stream.set_write_timeout(Some(CALLER_PATIENCE)).ok()?;
    let mut line = String::new();
    BufReader::new(stream.take(MAX_REQUEST))
        .read_line(&mut line)
        .ok()?;
    let request = serde_json::from_str::<Request>(&line);
    Some((caller.uid, request))
}

fn error_reply(error: String) -> Reply {
    Reply {
        error: Some(error),
        ..Reply::default()
    }
}

fn set(
    io: &mut impl LoopIo,
    shaper: &mut Shaper<Handle>,
    tenancy: &Tenancy,
    uid: u32,
    now: Instant,
    words: &[String],
    profiles: &[PathBuf],
) -> Reply {
    // The daemon reads profiles as root: a user's come from the system directory only, by name.
    let system = [PathBuf::from(SYSTEM_PROFILES)];
    let profiles = match uid {
        ROOT => profiles,
        _ => {
            if let Some(w) = words
                .iter()
                .find(|w| w.starts_with("profile=") && w.contains('/'))
            {
                return error_reply(format!(
                    "{w}: a user's profile is a name in {SYSTEM_PROFILES}, not a path (the shaping process reads it as root)"
                ));
            }
            &system[..]
        }
    };
    let spec = match LinkSpec::parse(words, profiles) {
        Ok(spec) => spec,
        Err(e) => return error_reply(e.to_string()),
    };
    if uid != ROOT {
        if let Some(other) = spec.selector.uid.filter(|&u| u != uid) {
            return error_reply(format!(
                "uid={other}: a user shapes only their own traffic (you are uid {uid}; your links match your sockets without uid=)"
            ));
        }
        if let Some(c) = &spec.cgroup {
            if let Err(e) = may_name(uid, c) {
                return error_reply(e.to_string());
            }
        }
        let (rules, pipes) = shaper.usage_with(uid, &spec);
        if let Err(e) = tenancy.allow(uid, rules, pipes) {
            return error_reply(e.to_string());
        }
    }
    let selector = spec.selector.clone();
    let before = shaper.classifier().rules().to_vec();
    let (id, replaced) = shaper.set(now, uid, spec, words.join(" "));
    // A change of parameters leaves the rules as they were: the kernel is not asked.
    if shaper.classifier().rules() != before.as_slice() {
        if let Err(e) = io.install(shaper.classifier().rules()) {
            if !replaced {
                let _ = shaper.delete(Some(uid), &Target::Selector(selector));
                let _ = io.install(shaper.classifier().rules());
            }
            return error_reply(e.to_string());
        }
    }
    Reply {
        message: Some(match replaced {
            true => format!("link {id} changed"),
            false => format!("link {id} made"),
        }),
        ..Reply::default()
    }
}

/// A cgroup a user may not name: they do not own its directory.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cgroup={path}: a user names only a cgroup whose directory they own (it is uid {owner}'s; you are uid {uid}), such as one under their systemd user@{uid}.service")]
struct NotTheirCgroup {
    /// The cgroup, as named.
    path: String,
    /// The owner of its directory.
    owner: u32,
    /// The user who named it.
    uid: u32,
}

/// May user `uid` name cgroup `c`? Only if they own its directory: what systemd gives a user
/// as a delegated subtree (`user@UID.service` and below), and what they can put processes in;
/// their rules also carry their uid, so even so they take only their own sockets in it.
fn may_name(uid: u32, c: &Cgroup) -> Result<(), NotTheirCgroup> {
    match c.owner == uid {
        true => Ok(()),
        false => Err(NotTheirCgroup {
            path: c.path.clone(),
            owner: c.owner,
            uid,
        }),
    }
}

fn delete(
    io: &mut impl LoopIo,
    shaper: &mut Shaper<Handle>,
    mine: Option<u32>,
    words: &[String],
) -> Reply {
    let target = match words {
        [one] if one.parse::<u32>().is_ok() => Target::Id(one.parse().expect("a number")),
        _ => {
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            match parse_selector(&words) {
                Ok((selector, [])) => Target::Selector(selector),
                Ok((_, rest)) => {
                    return error_reply(format!(
                        "delete takes a link's id or its selector, not its pipes ({:?} ...)",
                        rest[0]
                    ))
                }
                Err(e) => return error_reply(e.to_string()),
            }
        }
    };
    match shaper.delete(mine, &target) {
        Ok(id) => {
            // The last link gone, the process ends: its chains go before the answer.
            if shaper.is_empty() {
                io.remove();
            } else if let Err(e) = io.install(shaper.classifier().rules()) {
                return error_reply(e.to_string());
            }
            Reply {
                message: Some(format!("link {id} deleted")),
                ..Reply::default()
            }
        }
        Err(e) => error_reply(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netloom_time::{Duration, TestClock};
    use std::collections::VecDeque;

    /// A `LoopIo` that plays packets and requests at given times on a `TestClock` (moved on in
    /// `wait`, where the daemon sleeps) and records each verdict with the time it was given.
    struct TestIo {
        clock: TestClock,
        packets: VecDeque<(Instant, Queued)>,
        requests: VecDeque<(Instant, Request)>,
        post: mpsc::Sender<Asked>,
        replies: Vec<mpsc::Receiver<Reply>>,
        verdicts: Vec<(Instant, u32, bool)>,
        marked: Vec<u32>,
        /// Copies kept, then sent (with the time) or forgotten.
        duplicated: Vec<u32>,
        sent: Vec<(Instant, u32, bool)>,
        installs: usize,
        removed: bool,
        /// The socket every lookup finds, and the cgroup ids whose place was asked for.
        socket: Option<SocketOwner>,
        placed: Vec<u64>,
    }

    impl TestIo {
        /// Plays `packets` and root's `requests` on `clock`, posting the requests to `post`.
        fn new(
            clock: &TestClock,
            packets: Vec<(Instant, Queued)>,
            requests: Vec<(Instant, Request)>,
            post: mpsc::Sender<Asked>,
        ) -> TestIo {
            TestIo {
                clock: clock.clone(),
                packets: packets.into(),
                requests: requests.into(),
                post,
                replies: Vec::new(),
                verdicts: Vec::new(),
                marked: Vec::new(),
                duplicated: Vec::new(),
                sent: Vec::new(),
                installs: 0,
                removed: false,
                socket: None,
                placed: Vec::new(),
            }
        }
    }

    impl LoopIo for TestIo {
        fn wait(&mut self, timeout: std::time::Duration) -> Result<bool, DaemonError> {
            let now = self.clock.now();
            let next = [
                self.packets.front().map(|p| p.0),
                self.requests.front().map(|r| r.0),
            ];
            let until = next
                .into_iter()
                .flatten()
                .fold(now + Duration(timeout.as_nanos() as u64), Instant::min);
            self.clock.set(until);
            let mut asked = false;
            while self.requests.front().is_some_and(|r| r.0 <= until) {
                let (_, request) = self.requests.pop_front().expect("a request");
                let (answer, reply) = mpsc::channel();
                let uid = ROOT;
                let request = Ok(request);
                self.post
                    .send(Asked {
                        uid,
                        request,
                        answer,
                    })
                    .expect("the loop");
                self.replies.push(reply);
                asked = true;
            }
            Ok(asked)
        }

        fn recv(&mut self, out: &mut Vec<Queued>) -> Result<(), DaemonError> {
            while self
                .packets
                .front()
                .is_some_and(|p| p.0 <= self.clock.now())
            {
                out.push(self.packets.pop_front().expect("a packet").1);
            }
            Ok(())
        }

        fn socket(&mut self, _: u8, _: SocketAddr, _: SocketAddr) -> Option<SocketOwner> {
            self.socket
        }

        fn primary_group(&mut self, _: u32) -> Option<u32> {
            None
        }

        /// Every cgroup is below every named one.
        fn cgroups_above(&mut self, id: u64, named: &[&Cgroup]) -> Vec<u64> {
            self.placed.push(id);
            named.iter().map(|c| c.id).collect()
        }

        fn mark(&mut self, marked: &[Handle]) {
            self.marked.extend(marked.iter().map(|h| h.id));
        }

        fn duplicate(&mut self, duplicated: &[Handle]) {
            self.duplicated.extend(duplicated.iter().map(|h| h.id));
        }

        fn send_copies(&mut self, copies: &[(Handle, bool)]) {
            let now = self.clock.now();
            self.sent
                .extend(copies.iter().map(|&(h, send)| (now, h.id, send)));
        }

        fn verdicts(&mut self, decided: &[(Handle, bool)]) {
            let now = self.clock.now();
            self.verdicts
                .extend(decided.iter().map(|&(h, accept)| (now, h.id, accept)));
        }

        fn install(&mut self, _: &[Rule]) -> Result<(), KernelError> {
            self.installs += 1;
            Ok(())
        }

        fn remove(&mut self) {
            self.removed = true;
        }
    }

    const MS: u64 = 1_000_000;

    fn to_port(id: u32, dport: u16) -> Queued {
        let packet = Packet {
            direction: Direction::Out,
            proto: 6,
            src: "127.0.0.1".parse().unwrap(),
            dst: "127.0.0.1".parse().unwrap(),
            sport: 40000,
            dport,
            owner: Some((0, 0)),
            cgroup: None,
            ecn: netloom_link::Ecn::NotEct,
        };
        Queued {
            handle: Handle { whole: false, id },
            len: 60,
            packet: Some(packet),
        }
    }

    /// A request to make the link `text` describes.
    fn set(text: &str) -> Request {
        Request::Set {
            words: text.split_whitespace().map(String::from).collect(),
            profiles: Vec::new(),
        }
    }

    /// A request to delete the link `text` names.
    fn delete(text: &str) -> Request {
        Request::Delete {
            words: text.split_whitespace().map(String::from).collect(),
        }
    }

    /// Runs the loop over `io` on `clock`, with no limits, until it ends.
    fn serve(
        io: &mut TestIo,
        clock: &TestClock,
        requests: &mpsc::Receiver<Asked>,
        until_empty: bool,
    ) {
        let mut tenancy = Tenancy::load(std::path::Path::new("/nonexistent")).unwrap();
        let stopping = AtomicBool::new(false);
        serve_loop(io, clock, requests, &stopping, until_empty, &mut tenancy).unwrap();
    }

    #[test]
    fn the_loop_gives_each_verdict_at_its_packets_exit_on_the_clock_it_is_given() {
        let clock = TestClock::new();
        let (post, requests) = mpsc::channel();
        let mut io = TestIo::new(
            &clock,
            vec![
                (Instant(MS), to_port(1, 80)),
                (Instant(2 * MS), to_port(2, 81)),
                (Instant(5 * MS), to_port(3, 80)),
            ],
            vec![
                (
                    Instant(0),
                    set("client 80@127.0.0.1 IN delay=20ms OUT delay=20ms"),
                ),
                (Instant(40 * MS), delete("1")),
            ],
            post,
        );
        // Until empty: the loop ends with the delete at 40 ms.
        serve(&mut io, &clock, &requests, true);
        // An unlimited pipe takes 1 ns to serialize.
        let one_ns = crate::spec::UNLIMITED.tx_time(60).0;
        assert_eq!(
            io.verdicts,
            vec![
                (Instant(2 * MS), 2, true),
                (Instant(21 * MS + one_ns), 1, true),
                (Instant(25 * MS + one_ns), 3, true),
            ]
        );
        assert_eq!(clock.now(), Instant(40 * MS));
        assert_eq!((io.installs, io.removed), (1, true));
        let messages: Vec<Option<String>> = io
            .replies
            .iter()
            .map(|r| r.try_recv().expect("answered").message)
            .collect();
        assert_eq!(
            messages,
            vec![Some("link 1 made".into()), Some("link 1 deleted".into())]
        );
    }

    #[test]
    fn the_loop_sends_a_duplicate_at_its_exit_after_its_originals_verdict() {
        let clock = TestClock::new();
        let (post, requests) = mpsc::channel();
        let mut io = TestIo::new(
            &clock,
            vec![(Instant(MS), to_port(1, 80)), (Instant(MS), to_port(2, 81))],
            vec![
                (
                    Instant(0),
                    set("client 80@127.0.0.1 OUT bw=12Mbit delay=20ms duplicate=100%"),
                ),
                (Instant(40 * MS), delete("1")),
            ],
            post,
        );
        serve(&mut io, &clock, &requests, true);
        // 60 bytes at 12 Mbit/s: 40 µs each; the copy is serialized behind its original.
        let tx = netloom_time::Rate::bps(12_000_000).tx_time(60).0;
        assert_eq!(
            io.verdicts,
            vec![(Instant(MS), 2, true), (Instant(21 * MS + tx), 1, true)]
        );
        assert_eq!(io.duplicated, vec![1]);
        assert_eq!(io.sent, vec![(Instant(21 * MS + 2 * tx), 1, true)]);
    }

    /// A packet arriving from 127.0.0.1:`sport`, whose socket the queue did not report.
    fn from_port(id: u32, sport: u16) -> Queued {
        let mut queued = to_port(id, 40000);
        let packet = queued.packet.as_mut().expect("a packet");
        packet.direction = Direction::In;
        (packet.sport, packet.dport, packet.owner) = (sport, 40000, None);
        queued
    }

    #[test]
    fn the_loop_places_a_sockets_cgroup_once_and_only_while_a_rule_names_a_cgroup() {
        if netloom_os::cgroup2_mount().is_none() {
            eprintln!("skipped: no cgroup v2 here");
            return;
        }
        let clock = TestClock::new();
        let (post, requests) = mpsc::channel();
        let mut io = TestIo::new(
            &clock,
            vec![
                (Instant(MS), from_port(1, 80)),
                (Instant(2 * MS), from_port(2, 80)),
                (Instant(11 * MS), from_port(3, 81)),
                (Instant(12 * MS), from_port(4, 81)),
            ],
            vec![
                // A group on IN: each arriving packet's socket is looked up, for its owner.
                (Instant(0), set("client 80@127.0.0.1 gid=5 IN delay=1ms")),
                (
                    Instant(10 * MS),
                    set("client 81@127.0.0.1 cgroup=/ IN delay=1ms"),
                ),
                (Instant(20 * MS), Request::Stop),
            ],
            post,
        );
        io.socket = Some(SocketOwner {
            uid: 0,
            inode: 1,
            cgroup: Some(7),
        });
        serve(&mut io, &clock, &requests, false);
        // Cgroup 7 is placed once, after a rule names a cgroup; its packets then take that rule.
        assert_eq!(io.placed, vec![7]);
        let one_ns = crate::spec::UNLIMITED.tx_time(60).0;
        assert_eq!(
            io.verdicts,
            vec![
                (Instant(MS), 1, true),
                (Instant(2 * MS), 2, true),
                (Instant(12 * MS + one_ns), 3, true),
                (Instant(13 * MS + one_ns), 4, true),
            ]
        );
    }

    #[test]
    fn a_user_names_only_a_cgroup_they_own() {
        let c = Cgroup {
            path: "/user.slice/user-1001.slice/user@1001.service/app".into(),
            id: 40,
            owner: 1001,
        };
        assert_eq!(may_name(1001, &c), Ok(()));
        let refused = may_name(1002, &c).unwrap_err().to_string();
        assert!(
            refused.contains("uid 1001's; you are uid 1002"),
            "{refused}"
        );
    }
}
