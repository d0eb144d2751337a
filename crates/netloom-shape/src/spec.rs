//! The netconfig grammar in netloom's words: `client PORTS@ADDRS`, `server PORTS[@ADDRS]`,
//! `service PORTS[@ADDRS]`, owner and protocol options, then `IN …`, `OUT …` or `SHARED …` with
//! a topology link's `key=value` parameters (and `profile=NAME`).

use netloom_link::{Aqm, PipeConfig, PipeData, QueueLimit};
use netloom_time::{Duration, Rate};
use netloom_topo::{did_you_mean, LinkPatch, PatchError};
use serde_json::{Map, Value};
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// What a link selects, in the paper's three configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// This machine connects to servers at `PORTS@ADDRS`.
    Client,
    /// This machine serves `PORTS` (to clients at `ADDRS`, or anyone).
    Server,
    /// Both: a peer-to-peer application on well-known ports.
    Service,
}

impl Role {
    const NAMES: &'static [&'static str] = &["client", "server", "service"];

    fn name(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Server => "server",
            Role::Service => "service",
        }
    }
}

/// A transport protocol a selector may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proto {
    /// TCP (IP protocol 6).
    Tcp,
    /// UDP (IP protocol 17).
    Udp,
}

impl Proto {
    /// The IP protocol number.
    pub fn number(self) -> u8 {
        match self {
            Proto::Tcp => 6,
            Proto::Udp => 17,
        }
    }

    /// The name iptables and the grammar use.
    pub fn name(self) -> &'static str {
        match self {
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
        }
    }
}

/// Ports `lo` to `hi`, both included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PortRange {
    /// First port.
    pub lo: u16,
    /// Last port (equal to `lo` for one port).
    pub hi: u16,
}

impl PortRange {
    /// Is `port` in the range?
    pub fn contains(self, port: u16) -> bool {
        (self.lo..=self.hi).contains(&port)
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.lo == self.hi {
            true => write!(f, "{}", self.lo),
            false => write!(f, "{}-{}", self.lo, self.hi),
        }
    }
}

/// An address prefix, v4 or v6; the address has no bits set past the prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Prefix {
    /// The network address.
    pub addr: IpAddr,
    /// Its length in bits.
    pub len: u8,
}

impl Prefix {
    /// Does `addr` fall in the prefix? Never across families.
    pub fn contains(self, addr: IpAddr) -> bool {
        match (self.addr, addr) {
            (IpAddr::V4(net), IpAddr::V4(a)) => {
                masked(u32::from(a).into(), 32, self.len) == u32::from(net).into()
            }
            (IpAddr::V6(net), IpAddr::V6(a)) => masked(a.into(), 128, self.len) == net.into(),
            _ => false,
        }
    }

    fn parse(text: &str) -> Result<Prefix, SpecError> {
        let bad = |why: &str| SpecError::Prefix {
            text: text.to_string(),
            why: why.to_string(),
        };
        let (addr, len) = match text.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (text, None),
        };
        let addr: IpAddr = addr
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .map_err(|_| bad("not an IPv4 or IPv6 address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match len {
            None => max,
            Some(l) => l
                .parse::<u8>()
                .ok()
                .filter(|&l| l <= max)
                .ok_or_else(|| bad(&format!("the prefix length must be 0 to {max}")))?,
        };
        let network = match addr {
            IpAddr::V4(a) => IpAddr::V4((masked(u32::from(a).into(), 32, len) as u32).into()),
            IpAddr::V6(a) => IpAddr::V6(masked(a.into(), 128, len).into()),
        };
        if network != addr {
            return Err(bad(&format!(
                "it has bits set past /{len}; the network is {network}/{len}"
            )));
        }
        Ok(Prefix { addr, len })
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let max = if self.addr.is_ipv4() { 32 } else { 128 };
        match self.len == max {
            true => write!(f, "{}", self.addr),
            false => write!(f, "{}/{}", self.addr, self.len),
        }
    }
}

/// `value`'s top `len` of `width` bits.
fn masked(value: u128, width: u32, len: u8) -> u128 {
    let keep = u32::from(len).min(width);
    if keep == 0 {
        return 0;
    }
    let drop = width - keep;
    (value >> drop) << drop
}

/// The traffic one emulated link takes: the part of a request before `IN`, `OUT` or `SHARED`.
/// Two requests with equal selectors (from the same owner) name the same link.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Selector {
    /// Client, server or service.
    pub role: Role,
    /// The well-known ports (the servers' for a client, this machine's for a server).
    pub ports: Vec<PortRange>,
    /// The remote parties' addresses; empty for anyone.
    pub peers: Vec<Prefix>,
    /// Only this protocol; `None` for TCP and UDP.
    pub proto: Option<Proto>,
    /// Only packets of sockets owned by this uid.
    pub uid: Option<u32>,
    /// Only packets of sockets owned by this gid (arriving: the owner's primary group; see
    /// `docs/shape.md`).
    pub gid: Option<u32>,
    /// Only packets of sockets in this cgroup v2 (its path from the cgroup2 mount, like
    /// `/system.slice/foo.service`), or in a cgroup below it.
    pub cgroup: Option<String>,
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let ports: Vec<String> = self.ports.iter().map(ToString::to_string).collect();
        write!(f, "{} {}", self.role.name(), ports.join(","))?;
        if !self.peers.is_empty() {
            let peers: Vec<String> = self.peers.iter().map(ToString::to_string).collect();
            write!(f, "@{}", peers.join(","))?;
        }
        if let Some(p) = self.proto {
            write!(f, " proto={}", p.name())?;
        }
        if let Some(u) = self.uid {
            write!(f, " uid={u}")?;
        }
        if let Some(g) = self.gid {
            write!(f, " gid={g}")?;
        }
        if let Some(c) = &self.cgroup {
            write!(f, " cgroup={c}")?;
        }
        Ok(())
    }
}

/// One pipe of a link: its parameters and the data files its profile names.
#[derive(Clone, Debug, PartialEq)]
pub struct PipeSpec {
    /// Its parameters.
    pub config: PipeConfig,
    /// The measured MAC profile or delivery trace its profile file names; none without one.
    pub data: PipeData,
}

/// The pipes of a link: one per direction (either may be absent: that direction is not
/// shaped, and its packets never leave the kernel), or one both directions share.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // one per request: boxing would save nothing that counts
pub enum Pipes {
    /// `IN …` and/or `OUT …`.
    Split {
        /// Packets arriving at this machine.
        inbound: Option<PipeSpec>,
        /// Packets leaving it.
        outbound: Option<PipeSpec>,
    },
    /// `SHARED …`: one pipe (a shared medium such as WiFi) for both.
    Shared(PipeSpec),
}

/// One request to make or change a link: its selector and its pipes.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    /// The traffic it takes.
    pub selector: Selector,
    /// The selector's `cgroup=`, found on this machine.
    pub cgroup: Option<Cgroup>,
    /// What that traffic goes through.
    pub pipes: Pipes,
}

/// Why a request's words were refused. One line naming the word and what is valid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// Nothing, or only a role, was given.
    #[error("expected `client|server|service PORTS[@ADDRS] [proto=tcp|udp] [uid=N] [gid=N] [cgroup=PATH] (IN k=v... OUT k=v... | SHARED k=v...)`")]
    Usage,
    /// The first word is not a role.
    #[error("unknown configuration {word:?}{}; it is one of client, server, service", did_you_mean(.word, Role::NAMES))]
    Role {
        /// The word as given.
        word: String,
    },
    /// A port list that does not parse.
    #[error("bad port {text:?}: {why}; ports are 1-65535, as a list like 80,443 or a range like 8000-8099")]
    Port {
        /// The part that failed.
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// An address or prefix that does not parse.
    #[error("bad address {text:?}: {why}; addresses are like 10.0.0.1, 10.20.0.0/16, ::1 or 2001:db8::/32")]
    Prefix {
        /// The part that failed.
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// A client selector without `@ADDRS`.
    #[error(
        "a client names the servers it talks to: client PORTS@ADDRS (like client 443@10.0.0.0/8)"
    )]
    ClientWithoutPeers,
    /// An option between the selector and the pipes that is not one.
    #[error("unknown option {word:?}{}; before IN, OUT or SHARED come proto=tcp|udp, uid=N, gid=N, cgroup=PATH", did_you_mean(.word.split('=').next().unwrap_or(""), &["proto", "uid", "gid", "cgroup"]))]
    Option {
        /// The word as given.
        word: String,
    },
    /// No `IN`, `OUT` or `SHARED` part.
    #[error(
        "no pipe: add IN k=v..., OUT k=v... or SHARED k=v... (like IN delay=20ms OUT delay=20ms)"
    )]
    NoPipe,
    /// A part given twice, or `SHARED` beside `IN`/`OUT`.
    #[error("{0}")]
    Parts(String),
    /// A pipe's parameters, as a topology file's link would be refused.
    #[error("{part}: {error}")]
    Pipe {
        /// `IN`, `OUT` or `SHARED`.
        part: &'static str,
        /// The loader's words.
        error: String,
    },
    /// A profile that could not be read.
    #[error("{part}: profile {name:?}: {why}")]
    Profile {
        /// `IN`, `OUT` or `SHARED`.
        part: &'static str,
        /// The profile as named.
        name: String,
        /// What went wrong, with the places searched.
        why: String,
    },
    /// A parameter the pipe would silently ignore in this combination.
    #[error("{part}: {key}: {why}")]
    Mechanism {
        /// `IN`, `OUT` or `SHARED`.
        part: &'static str,
        /// The key refused.
        key: &'static str,
        /// Why.
        why: &'static str,
    },
    /// A `cgroup=` that is not a cgroup v2 of this machine.
    #[error("cgroup={path}: {why}")]
    Cgroup {
        /// The path as given.
        path: String,
        /// What is wrong, and what is valid.
        why: String,
    },
}

/// The system's profile directory, the last place `profile=NAME` is looked up, and the only one
/// for unprivileged users' requests to the shaping daemon.
pub const SYSTEM_PROFILES: &str = "/etc/netloom/profiles";

/// Where `profile=NAME` is looked up, in order: the directories of `$NETLOOM_PROFILES`
/// (colon-separated), then `/etc/netloom/profiles`. A name with a `/` is a path.
pub fn profile_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var("NETLOOM_PROFILES")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect();
    dirs.push(PathBuf::from(SYSTEM_PROFILES));
    dirs
}

/// The rate of a pipe whose request sets no `bw`: so fast that serialization takes no time.
pub const UNLIMITED: Rate = Rate(u64::MAX);

impl LinkSpec {
    /// Parses a request's words (after `netloom shape`), reading profiles from `profiles`.
    pub fn parse(words: &[impl AsRef<str>], profiles: &[PathBuf]) -> Result<LinkSpec, SpecError> {
        let words: Vec<&str> = words.iter().map(AsRef::as_ref).collect();
        let (selector, rest) = parse_selector(&words)?;
        let mut parts: Vec<(&'static str, Vec<&str>)> = Vec::new();
        for &word in rest {
            match word {
                "IN" | "OUT" | "SHARED" => {
                    let part = match word {
                        "IN" => "IN",
                        "OUT" => "OUT",
                        _ => "SHARED",
                    };
                    if parts.iter().any(|(p, _)| *p == part) {
                        return Err(SpecError::Parts(format!("{part} is given twice")));
                    }
                    parts.push((part, Vec::new()));
                }
                _ => match parts.last_mut() {
                    Some((_, ws)) => ws.push(word),
                    None => return Err(SpecError::Option { word: word.into() }),
                },
            }
        }
        let config = |part: &'static str, ws: &[&str]| pipe_config(part, ws, profiles);
        let find = |name: &str| parts.iter().find(|(p, _)| *p == name);
        let pipes = match (find("SHARED"), find("IN"), find("OUT")) {
            (None, None, None) => return Err(SpecError::NoPipe),
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return Err(SpecError::Parts(
                    "SHARED is one pipe for both directions; give it alone, or IN and OUT".into(),
                ))
            }
            (Some((p, ws)), None, None) => Pipes::Shared(config(p, ws)?),
            (None, i, o) => Pipes::Split {
                inbound: i.map(|(p, ws)| config(p, ws)).transpose()?,
                outbound: o.map(|(p, ws)| config(p, ws)).transpose()?,
            },
        };
        let cgroup = selector.cgroup.as_deref().map(Cgroup::find).transpose()?;
        Ok(LinkSpec {
            selector,
            cgroup,
            pipes,
        })
    }
}

/// The selector at the start of `words`, and the words after its options.
pub fn parse_selector<'a>(words: &'a [&'a str]) -> Result<(Selector, &'a [&'a str]), SpecError> {
    let (Some(&role), Some(&target)) = (words.first(), words.get(1)) else {
        return Err(SpecError::Usage);
    };
    let role = match role {
        "client" => Role::Client,
        "server" => Role::Server,
        "service" => Role::Service,
        _ => return Err(SpecError::Role { word: role.into() }),
    };
    let (ports, peers) = match target.split_once('@') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let ports = ports
        .split(',')
        .map(parse_ports)
        .collect::<Result<Vec<_>, _>>()?;
    let peers = match peers {
        Some(a) => a
            .split(',')
            .map(Prefix::parse)
            .collect::<Result<Vec<_>, _>>()?,
        None if role == Role::Client => return Err(SpecError::ClientWithoutPeers),
        None => Vec::new(),
    };
    let mut selector = Selector {
        role,
        ports,
        peers,
        proto: None,
        uid: None,
        gid: None,
        cgroup: None,
    };
    let mut rest = &words[2..];
    while let Some(&word) = rest.first() {
        if matches!(word, "IN" | "OUT" | "SHARED") {
            break;
        }
        let bad = || SpecError::Option { word: word.into() };
        let (key, value) = word.split_once('=').ok_or_else(bad)?;
        match key {
            "proto" => {
                selector.proto = Some(match value {
                    "tcp" => Proto::Tcp,
                    "udp" => Proto::Udp,
                    _ => return Err(bad()),
                })
            }
            "uid" => selector.uid = Some(value.parse().map_err(|_| bad())?),
            "gid" => selector.gid = Some(value.parse().map_err(|_| bad())?),
            "cgroup" => selector.cgroup = Some(cgroup_path(value)?),
            _ => return Err(bad()),
        }
        rest = &rest[1..];
    }
    Ok((selector, rest))
}

/// A `cgroup=` path in the form iptables' cgroup match and this module compare: from the
/// cgroup2 mount, starting with `/`, without `.`, `..`, empty parts, a trailing `/`, blanks or
/// quotes (the path is written into iptables-restore's input).
fn cgroup_path(text: &str) -> Result<String, SpecError> {
    let bad = |why: &str| {
        SpecError::Cgroup {
        path: text.to_string(),
        why: format!("{why}; a cgroup v2 is named by its path from the cgroup2 mount, like /system.slice/foo.service (the `0::` line of /proc/PID/cgroup)"),
    }
    };
    let Some(rest) = text.strip_prefix('/') else {
        return Err(bad("it does not start with /"));
    };
    if text
        .chars()
        .any(|c| c.is_whitespace() || c == '"' || c == '\'')
    {
        return Err(bad("it has a blank or a quote"));
    }
    if !rest.is_empty() && rest.split('/').any(|p| matches!(p, "" | "." | "..")) {
        return Err(bad("it has an empty, . or .. part"));
    }
    Ok(text.to_string())
}

/// A cgroup v2 of this machine, found from its path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cgroup {
    /// Its path from the cgroup2 mount, as given.
    pub path: String,
    /// Its id: its directory's inode, which sock_diag reports for each of its sockets.
    pub id: u64,
    /// The uid owning its directory: a user may name only their own (a delegated subtree).
    pub owner: u32,
}

impl Cgroup {
    /// The cgroup at `path` (checked by `cgroup_path`) under this machine's cgroup2 mount.
    pub fn find(path: &str) -> Result<Cgroup, SpecError> {
        let bad = |why: String| SpecError::Cgroup {
            path: path.to_string(),
            why,
        };
        let Some(mount) = netloom_os::cgroup2_mount() else {
            return Err(bad(
                "this machine has no cgroup v2 mounted (no cgroup2 in /proc/self/mountinfo)".into(),
            ));
        };
        let dir = mount.join(path.trim_start_matches('/'));
        let meta = std::fs::metadata(&dir).map_err(|e| {
            bad(format!(
                "no such cgroup v2: {}: {e} (`cat /proc/PID/cgroup` gives a process's, the line starting 0::)",
                dir.display()
            ))
        })?;
        if !meta.is_dir() || !dir.join("cgroup.procs").is_file() {
            return Err(bad(format!(
                "{} is not a cgroup v2 directory",
                dir.display()
            )));
        }
        use std::os::unix::fs::MetadataExt;
        Ok(Cgroup {
            path: path.to_string(),
            id: meta.ino(),
            owner: meta.uid(),
        })
    }

    /// The ids of this cgroup and of every cgroup below it now (none if it has gone).
    pub fn tree(&self) -> Vec<u64> {
        netloom_os::cgroup2_mount()
            .map(|mount| netloom_os::cgroup_tree(&mount.join(self.path.trim_start_matches('/'))))
            .unwrap_or_default()
    }
}

fn parse_ports(text: &str) -> Result<PortRange, SpecError> {
    let bad = |why: &str| SpecError::Port {
        text: text.to_string(),
        why: why.to_string(),
    };
    let port = |t: &str| {
        t.parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| bad("not a port number"))
    };
    let range = match text.split_once('-') {
        Some((lo, hi)) => PortRange {
            lo: port(lo)?,
            hi: port(hi)?,
        },
        None => {
            let p = port(text)?;
            PortRange { lo: p, hi: p }
        }
    };
    if range.lo > range.hi {
        return Err(bad("the range runs backwards"));
    }
    Ok(range)
}

/// One pipe from its words: the profile's table (if `profile=` names one) under the words' own,
/// checked as a topology file's link, with the data files the profile names read relative to
/// its directory; `bw` defaults to unlimited and `delay` to 0.
fn pipe_config(
    part: &'static str,
    words: &[&str],
    profiles: &[PathBuf],
) -> Result<PipeSpec, SpecError> {
    let pipe_error = |e: PatchError| SpecError::Pipe {
        part,
        error: e.to_string(),
    };
    let (profile, words): (Vec<&str>, Vec<&str>) =
        words.iter().partition(|w| w.starts_with("profile="));
    let (mut table, file) = match profile.as_slice() {
        [] => (Map::new(), None),
        [one] => {
            let (table, file) = read_profile(part, &one["profile=".len()..], profiles)?;
            (table, Some(file))
        }
        _ => return Err(SpecError::Parts(format!("{part}: profile= is given twice"))),
    };
    if !words.is_empty() {
        table.extend(LinkPatch::table_from_words(&words).map_err(pipe_error)?);
    }
    let queue_set = table.contains_key("queue");
    let (config, data) = if table.is_empty() {
        let config = PipeConfig {
            queue: default_queue(UNLIMITED, Duration::ZERO),
            ..PipeConfig::new(UNLIMITED, Duration::ZERO)
        };
        (config, PipeData::default())
    } else {
        // Words cannot name data files (`table_from_words` refuses their keys), so the data
        // files here are the profile's, read relative to it (and checked by `read_profile`).
        let patch = match &file {
            Some(file) => LinkPatch::from_file_table(&table, file),
            None => LinkPatch::from_table(&table),
        };
        let (mut config, data) = patch
            .and_then(|p| p.apply_with_data(&PipeConfig::new(UNLIMITED, Duration::ZERO)))
            .map_err(pipe_error)?;
        // A trace sets the pace; its mean rate stands in for a bw the request does not set
        // (the default queue and reports), as in a topology file.
        if let (Some(trace), false) = (&data.trace, table.contains_key("bw")) {
            config.rate = Rate::bps(trace.mean_rate_bps());
        }
        // The base's queue was made for an unlimited rate; one the request does not set follows
        // its own rate and delay, as in a topology file, but holds at least ten of the largest
        // packets: local traffic crosses loopback in segments of up to 64 KB.
        if !queue_set {
            config.queue = default_queue(config.rate, config.delay);
        }
        (config, data)
    };
    check_mechanism(part, &config)?;
    Ok(PipeSpec { config, data })
}

/// The queue of a pipe whose request does not set one: the topology file's default
/// (bandwidth × 2 × delay, at least ten 1500-byte packets), but at least ten 64 KB packets.
pub fn default_queue(rate: Rate, delay: Duration) -> QueueLimit {
    match QueueLimit::default_for(rate, delay) {
        QueueLimit::Bytes(b) => QueueLimit::Bytes(b.max(LOOPBACK_QUEUE_BYTES)),
        packets => packets,
    }
}

/// Ten packets of loopback's largest size (its MTU, 65536).
const LOOPBACK_QUEUE_BYTES: u64 = 10 * 65536;

/// Refuses what a pipe would not do: FQ-CoDel's deferred interface sends each packet once, so
/// an FQ-CoDel pipe makes no duplicate (in a run neither); the user is told rather than ignored.
fn check_mechanism(part: &'static str, config: &PipeConfig) -> Result<(), SpecError> {
    let refuse = |key, why| Err(SpecError::Mechanism { part, key, why });
    if config.duplicate > 0.0 && matches!(config.aqm, Aqm::FqCodel(_)) {
        return refuse(
            "duplicate",
            "an FQ-CoDel pipe makes no copies (its scheduler sends each packet once); use duplicate with a FIFO queue, aqm=red or aqm=codel",
        );
    }
    Ok(())
}

/// The table of a profile file and its path: TOML with the keys of a topology file's link
/// class, data files (`mac_profile`, `trace`) included, relative to the profile's directory.
fn read_profile(
    part: &'static str,
    name: &str,
    dirs: &[PathBuf],
) -> Result<(Map<String, Value>, PathBuf), SpecError> {
    let error = |why: String| SpecError::Profile {
        part,
        name: name.to_string(),
        why,
    };
    let candidates: Vec<PathBuf> = if name.contains('/') {
        vec![PathBuf::from(name)]
    } else {
        dirs.iter()
            .map(|d| d.join(format!("{name}.toml")))
            .collect()
    };
    let Some(path) = candidates.iter().find(|p| p.is_file()) else {
        let searched: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
        return Err(error(format!(
            "no such file (looked for {}; set NETLOOM_PROFILES to add directories)",
            searched.join(", ")
        )));
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| error(format!("{}: {e}", display(path))))?;
    let value: Value =
        toml::from_str(&text).map_err(|e| error(format!("{}: {}", display(path), e.message())))?;
    let Value::Object(table) = value else {
        return Err(error(format!("{}: not a table", display(path))));
    };
    // Checked alone first, so that what is wrong in it (a data file that cannot be read
    // included) is said of the profile file rather than of the request's words.
    if !table.is_empty() {
        LinkPatch::from_file_table(&table, path)
            .map_err(|e| error(format!("{}: {e}", display(path))))?;
    }
    Ok((table, path.clone()))
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

/// A link's pipes in order, with the index of each direction's.
pub(crate) struct Layout {
    pub(crate) pipes: Vec<(&'static str, PipeSpec)>,
    pub(crate) inbound: Option<usize>,
    pub(crate) outbound: Option<usize>,
}

/// `pipes` as a link holds them: one shared pipe, or an inbound and an outbound one, named as
/// iptables rules and reports name them.
pub(crate) fn layout(pipes: &Pipes) -> Layout {
    match pipes {
        Pipes::Shared(pipe) => Layout {
            pipes: vec![("SHARED", pipe.clone())],
            inbound: Some(0),
            outbound: Some(0),
        },
        Pipes::Split { inbound, outbound } => {
            let mut layout = Layout {
                pipes: Vec::new(),
                inbound: None,
                outbound: None,
            };
            if let Some(c) = inbound {
                layout.inbound = Some(layout.pipes.len());
                layout.pipes.push(("IN", c.clone()));
            }
            if let Some(c) = outbound {
                layout.outbound = Some(layout.pipes.len());
                layout.pipes.push(("OUT", c.clone()));
            }
            layout
        }
    }
}

#[cfg(test)]
mod tests;
