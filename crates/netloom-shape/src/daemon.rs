//! The shaping process: holds the NFQUEUE, runs the `Shaper` against the monotonic clock, keeps
//! the kernel's rules in step with its links, and answers requests on a Unix socket (one JSON
//! line in, one out) from root and from unprivileged users, each known by the socket's peer
//! credentials and held to their own links and limits. It ends on `stop` or SIGTERM (or, when
//! started by a first request, when its last link is deleted), and removes its rules as it goes.

use crate::classifier::{Direction, Packet, ROOT};
use crate::kernel::{self, QUEUE};
use crate::limits::{config_path, Tenancy};
use crate::shaper::{Arrival, LinkReport, Shaper, Target};
use crate::spec::{parse_selector, LinkSpec, SYSTEM_PROFILES};
use netloom_os::{NfQueue, OsError, Poller, SocketTable, Verdict};
use netloom_time::Instant;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::mpsc;

/// Bytes of each packet copied out of the kernel: enough for an IPv6 header and the ports.
const COPY: u32 = 128;
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

impl Netns {
    /// `--netns NAME|PID`: a number is a process (a container's, say), anything else a name
    /// (`ip netns`). This process's own namespace, however named, is `Own`.
    pub fn parse(text: &str) -> Result<Netns, String> {
        let file = match text.parse::<u32>() {
            Ok(pid) => PathBuf::from(format!("/proc/{pid}/ns/net")),
            Err(_) if text.is_empty() || text.contains('/') => {
                return Err(format!(
                    "--netns {text:?}: a namespace's name (`ip netns list`) or a process id"
                ))
            }
            Err(_) => PathBuf::from("/run/netns").join(text),
        };
        let inode = |f: &std::path::Path| std::fs::metadata(f).map(|m| m.ino());
        let Ok(ino) = inode(&file) else {
            return Err(format!(
                "--netns {text}: no network namespace {} (`ip netns list` names them; a number is a process id)",
                file.display()
            ));
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
/// still runs (which removes its rules, in its namespace). Rules a process killed with SIGKILL
/// left in another namespace stay there (letting packets through) until the namespace goes.
/// Returns what was removed, for `netloom clean`.
pub fn clean() -> Vec<String> {
    let mut removed = Vec::new();
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

/// Why the shaping process could not start or went wrong.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// A socket, queue or poller.
    #[error(transparent)]
    Os(#[from] OsError),
    /// The limits file.
    #[error("{0}")]
    Limits(String),
    /// The control socket.
    #[error("{0}")]
    Io(String),
}

/// Runs the shaping process of `ns` until `stop` or SIGTERM, or, if `until_empty` (started by
/// a first request rather than as a service), until it has no link left after its first.
pub fn run(ns: &Netns, until_empty: bool) -> Result<(), DaemonError> {
    let mut tenancy = Tenancy::load(&config_path()).map_err(DaemonError::Limits)?;
    // First, so the queue, the sockets and the iptables it runs are the namespace's.
    if let Netns::Other { file, name, .. } = ns {
        netloom_os::enter_namespace_file(file, name)?;
    }
    let (socket_path, pid_path) = (ns.socket_path(), ns.pid_path());
    let dir = netloom_os::registry_dir();
    std::fs::create_dir_all(&dir)
        .map_err(|e| DaemonError::Io(format!("{}: {e}", dir.display())))?;
    let mut sockets = SocketTable::open()?;
    let mut queue = NfQueue::open()?;
    queue.bind(QUEUE, COPY, MAX_HELD)?;
    let _ = std::fs::remove_file(&socket_path);
    let listener = UnixListener::bind(&socket_path)
        .map_err(|e| DaemonError::Io(format!("{}: {e}", socket_path.display())))?;
    std::fs::set_permissions(&socket_path, std::fs::Permissions::from_mode(0o666))
        .map_err(|e| DaemonError::Io(format!("{}: {e}", socket_path.display())))?;
    std::fs::write(&pid_path, format!("{}\n", std::process::id()))
        .map_err(|e| DaemonError::Io(format!("{}: {e}", pid_path.display())))?;
    let stopping = netloom_os::install_stop_handler()?;
    let (woken, requests) = reader(listener)?;
    let mut poller = Poller::new()?;
    poller.add(queue.as_fd(), 0)?;
    poller.add(woken.as_fd(), 1)?;
    let start = std::time::Instant::now();
    let now = || Instant(start.elapsed().as_nanos() as u64);
    let mut shaper: Shaper<u32> = Shaper::new(std::process::id().into());
    let mut ready = Vec::new();
    let mut out = Vec::new();
    let (mut batch, mut fates) = (Vec::new(), Vec::new());
    let mut had_links = false;
    let result = loop {
        if stopping.load(std::sync::atomic::Ordering::Relaxed) {
            break Ok(());
        }
        let timeout = shaper
            .next_due()
            .map(|at| std::time::Duration::from_nanos(at.0.saturating_sub(now().0)));
        // Wake at least every 100 ms to notice SIGTERM.
        let cap = std::time::Duration::from_millis(100);
        poller.wait(Some(timeout.map_or(cap, |t| t.min(cap))), &mut ready)?;
        // Drain what the queue holds (one packet per read) and classify it as one batch.
        while batch.len() < BATCH {
            let read = queue.recv(|p| {
                let direction = match p.hook {
                    HOOK_INPUT => Some(Direction::In),
                    HOOK_OUTPUT => Some(Direction::Out),
                    _ => None,
                };
                let mut packet = direction.and_then(|d| Packet::parse(d, p.header, p.owner));
                if let Some(packet) = packet.as_mut().filter(|_| shaper.classifier().has_users()) {
                    packet.owner = packet.owner.or_else(|| receiver(&mut sockets, packet));
                }
                match packet {
                    Some(packet) => batch.push((packet, p.len, p.id)),
                    None => out.push((p.id, true)),
                }
            })?;
            if read == 0 {
                break;
            }
        }
        shaper.arrive_batch(now(), &mut batch, &mut fates);
        for (id, fate) in fates.drain(..) {
            match fate {
                Arrival::Held { .. } => {}
                Arrival::Unmatched => out.push((id, true)),
                Arrival::Dropped(_) => out.push((id, false)),
            }
        }
        shaper.due(now(), &mut out);
        for (id, accept) in out.drain(..) {
            let v = if accept {
                Verdict::Accept
            } else {
                Verdict::Drop
            };
            // A refused verdict (the kernel no longer holds the packet) is logged, not fatal:
            // ending here would leave every other held packet to the bypass.
            if let Err(e) = queue.verdict(QUEUE, id, v) {
                eprintln!("netloom shape: {e}");
            }
        }
        if ready.contains(&1) {
            // Drain the waker's bytes; each stands for a request in the channel.
            let mut drained = [0u8; 64];
            while matches!((&woken).read(&mut drained), Ok(n) if n > 0) {}
            let mut stop = false;
            while let Ok(asked) = requests.try_recv() {
                let (reply, stopped) =
                    serve(asked.uid, asked.request, &mut shaper, &mut tenancy, now());
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
    shaper.due(Instant(u64::MAX), &mut out);
    for (id, _) in out.drain(..) {
        let _ = queue.verdict(QUEUE, id, Verdict::Accept);
    }
    kernel::remove();
    let _ = std::fs::remove_file(&socket_path);
    let _ = std::fs::remove_file(&pid_path);
    result
}

/// The owner of the local socket an arriving packet will reach, for a packet the queue gave
/// without one (the kernel looks the socket up after INPUT on loopback): asked of the kernel's
/// socket table, so a user's IN pipes take only packets for that user's sockets. Its group is
/// not known (`u32::MAX`, which no gid rule matches). Leaving packets always carry theirs.
fn receiver(sockets: &mut SocketTable, packet: &Packet) -> Option<(u32, u32)> {
    if packet.direction != Direction::In || !matches!(packet.proto, 6 | 17) {
        return None;
    }
    let local = SocketAddr::new(packet.dst, packet.dport);
    let remote = SocketAddr::new(packet.src, packet.sport);
    match sockets.receiver_uid(packet.proto, local, remote) {
        Ok(uid) => uid.map(|u| (u, u32::MAX)),
        Err(e) => {
            eprintln!("netloom shape: {e}");
            None
        }
    }
}

/// Answers one request from `uid` (a line that did not parse is its error); true with it if it
/// was `stop`.
fn serve(
    uid: u32,
    request: Result<Request, String>,
    shaper: &mut Shaper<u32>,
    tenancy: &mut Tenancy,
    now: Instant,
) -> (Reply, bool) {
    // What the caller may see and change: root everything, a user their own links.
    let mine = (uid != ROOT).then_some(uid);
    let request = request.and_then(|r| tenancy.admit(uid, now).map(|()| r));
    match request {
        Err(e) => (error_reply(e), false),
        Ok(Request::Stop) if mine.is_some() => (
            error_reply(format!(
                "only root may stop the shaping process (you are uid {uid}); `netloom shape delete ID` removes one of your links"
            )),
            false,
        ),
        Ok(Request::Stop) => {
            // The rules go before the answer, so the caller finds them gone.
            kernel::remove();
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
            (set(shaper, tenancy, uid, now, &words, &profiles), false)
        }
        Ok(Request::Delete { words }) => (delete(shaper, mine, &words), false),
    }
}

/// A request read off the socket, for the packet loop to answer.
struct Asked {
    /// The caller, by the socket's peer credentials.
    uid: u32,
    /// The request, or why its line did not parse.
    request: Result<Request, String>,
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
fn read_request(stream: &UnixStream) -> Option<(u32, Result<Request, String>)> {
    let caller = netloom_os::peer_credentials(stream.as_fd()).ok()?;
    stream.set_read_timeout(Some(CALLER_PATIENCE)).ok()?;
    stream.set_write_timeout(Some(CALLER_PATIENCE)).ok()?;
    let mut line = String::new();
    BufReader::new(stream.take(MAX_REQUEST))
        .read_line(&mut line)
        .ok()?;
    let request = serde_json::from_str::<Request>(&line).map_err(|e| format!("bad request: {e}"));
    Some((caller.uid, request))
}

fn error_reply(error: String) -> Reply {
    Reply {
        error: Some(error),
        ..Reply::default()
    }
}

fn set(
    shaper: &mut Shaper<u32>,
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
        let (rules, pipes) = shaper.usage_with(uid, &spec);
        if let Err(e) = tenancy.allow(uid, rules, pipes) {
            return error_reply(e);
        }
    }
    let selector = spec.selector.clone();
    let before = shaper.classifier().rules().to_vec();
    let (id, replaced) = shaper.set(now, uid, spec, words.join(" "));
    // A change of parameters leaves the rules as they were: the kernel is not asked.
    if shaper.classifier().rules() != before.as_slice() {
        if let Err(e) = kernel::install(shaper.classifier().rules(), QUEUE) {
            if !replaced {
                let _ = shaper.delete(Some(uid), &Target::Selector(selector));
                let _ = kernel::install(shaper.classifier().rules(), QUEUE);
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

fn delete(shaper: &mut Shaper<u32>, mine: Option<u32>, words: &[String]) -> Reply {
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
                kernel::remove();
            } else if let Err(e) = kernel::install(shaper.classifier().rules(), QUEUE) {
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
