//! `OsError`: what failed at the OS edge, and what the user can do about it.

use std::io;
use std::path::PathBuf;

/// An error of the OS edge. Messages name the operation that failed and, where there is one, the
/// remedy; the CLI prints them as they are.
#[derive(Debug, thiserror::Error)]
pub enum OsError {
    /// `what` needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN): the effective user is not root, or
    /// the kernel refused to create a namespace with EPERM.
    #[error("not root: {what} needs CAP_NET_ADMIN and CAP_SYS_ADMIN; run it as root (for example with sudo)")]
    NotRoot {
        /// The command or operation that was refused ("netloom run", "creating a network
        /// namespace").
        what: &'static str,
    },

    /// `/dev/net/tun` does not exist: the kernel has no TUN support loaded.
    #[error("/dev/net/tun is missing: load the tun module (`modprobe tun`) or run on a kernel with TUN support")]
    NoTun,

    /// An experiment or host name breaks the naming rules (1 to 63 characters of
    /// `A-Z a-z 0-9 _ . -`, starting with a letter or digit; a host name must not be a number or
    /// an address). Checked before anything is made.
    #[error("invalid {kind} name {}: {reason}", quoted(name))]
    InvalidName {
        /// `"experiment"` or `"host"`.
        kind: &'static str,
        /// The name as given.
        name: String,
        /// Which rule it breaks, as a sentence for the user.
        reason: String,
    },

    /// A `TestbedSpec` that cannot be brought up (no hosts, more hosts and routers than its
    /// address plan numbers, an MTU out of range, a host or address given twice, an address
    /// outside the plan), found before anything is made; `command` and `exec` also return it for
    /// an empty command line.
    #[error("invalid experiment {experiment:?}: {reason}")]
    InvalidSpec {
        /// The experiment's name; from `command` and `exec`, the namespace's name instead.
        experiment: String,
        /// What is wrong, as a sentence for the user.
        reason: String,
    },

    /// The experiment name is taken by a running experiment, whose owner process is `pid`.
    #[error("experiment {name:?} is already running (pid {pid}); stop it with `netloom stop --name {name}` or choose another --name")]
    InUse {
        /// The experiment name asked for.
        name: String,
        /// The owner of the running experiment; 0 if another process claimed the name but had
        /// not written its registry record yet.
        pid: u32,
    },

    /// `clean` was asked to clean an experiment whose owner process `pid` is still alive; it has
    /// to be stopped instead.
    #[error("experiment {name:?} is still running (pid {pid}); stop it with `netloom stop --name {name}` instead of cleaning it")]
    StillRunning {
        /// The experiment's name.
        name: String,
        /// Its owner process.
        pid: u32,
    },

    /// A network namespace the experiment is about to make (`/run/netns/<ns>`) already exists
    /// without being registered to it: made by hand, or by another experiment whose name and host
    /// name combine to the same `nl-E-H` (`a` + `b-c` and `a-b` + `c`). It is left alone.
    #[error("network namespace {ns:?} already exists and was not made by this experiment; remove it (`ip netns del {ns}`) if it is a leftover, or choose another --name")]
    NamespaceExists {
        /// The namespace's name, `nl-<experiment>-<host>`.
        ns: String,
    },

    /// The network namespace to run a program in or enter does not exist (`/run/netns/<ns>` is
    /// missing).
    #[error("no network namespace {ns:?}: is the experiment still running? (`netloom clean` removes leftovers)")]
    NoNamespace {
        /// The namespace's name.
        ns: String,
    },

    /// The experiment named to `find_host` is registered but its owner process `pid` is gone (it
    /// crashed or was killed); its leftovers are for `clean`.
    #[error("experiment {name:?} is not running (its process {pid} is gone); `netloom clean --name {name}` removes what it left")]
    NotRunning {
        /// The experiment's name.
        name: String,
        /// Its former owner process.
        pid: u32,
    },

    /// No experiment was named and no registered experiment has a live owner.
    #[error("no experiment is running; start one with `netloom run FILE`")]
    NoExperiment,

    /// No registry entry has the name asked for.
    #[error(
        "no experiment named {} is running; running: {}",
        quoted(name),
        list(running)
    )]
    UnknownExperiment {
        /// The name asked for.
        name: String,
        /// The names of the experiments running now (live owner), ascending; may be empty.
        running: Vec<String>,
    },

    /// No experiment was named and several are running, so none can be chosen.
    #[error("{} experiments are running ({}); choose one with --name", running.len(), running.join(", "))]
    Ambiguous {
        /// The names of the running experiments (two or more), ascending.
        running: Vec<String>,
    },

    /// The experiment has no host of the name asked for.
    #[error(
        "experiment {experiment:?} has no host {}; its hosts are: {}",
        quoted(host),
        list(hosts)
    )]
    UnknownHost {
        /// The experiment's name.
        experiment: String,
        /// The host name asked for.
        host: String,
        /// Every host name of the experiment, in topology order.
        hosts: Vec<String>,
    },

    /// A registry record exists but is not valid JSON of a record, so the namespaces it should
    /// list are unknown and only the user can decide what to remove.
    #[error("registry entry {}: {reason}; netloom cannot tell which namespaces it lists, so remove them (`ip netns list`) and the entry's directory by hand", path.display())]
    Registry {
        /// The record file, `<registry dir>/<experiment>/experiment.json`.
        path: PathBuf,
        /// The JSON parser's message.
        reason: String,
    },

    /// `stop` sent SIGTERM to the experiment's owner, but the owner was still alive when the
    /// timeout ran out.
    #[error("experiment {name:?} (pid {pid}) did not stop within {seconds} s; kill it (`kill -9 {pid}`) and run `netloom clean`")]
    StopTimeout {
        /// The experiment's name.
        name: String,
        /// Its owner process, still running.
        pid: u32,
        /// The timeout, in whole seconds (rounded down).
        seconds: u64,
    },

    /// A file or directory netloom was asked to write (`capture -w`, `--router-logs`) is a
    /// symbolic link, or a file there has other hard links: running as root, netloom writes
    /// through neither, since either could lead to any file on the machine.
    #[error("{}: {reason}; netloom does not write through it (it could lead to any file on the machine): remove it or give another path", path.display())]
    Planted {
        /// The link, or the file with several names.
        path: PathBuf,
        /// "is a symbolic link", "has 2 hard links".
        reason: String,
    },

    /// The kernel refused real-time priority (SCHED_FIFO) with EPERM, even to root: `cause` says
    /// why (no CAP_SYS_NICE, a cgroup without real-time budget).
    #[error("real-time priority {priority} (SCHED_FIFO) was refused: {cause}")]
    NoRealtime {
        /// The priority asked for.
        priority: u8,
        /// Why, as a sentence for the user.
        cause: String,
    },

    /// A system call or file operation failed for a reason none of the variants above covers.
    /// The OS's error is in the message and is not also the error's source, which an error
    /// chain (`{:#}`) would print a second time.
    #[error("{what}: {error}")]
    Io {
        /// The operation that failed, with what it acted on ("create namespace nl-x-h1").
        what: String,
        /// The error the OS returned.
        error: io::Error,
    },
}

impl OsError {
    /// Wraps an I/O error with the operation that failed ("create namespace nl-x-h1").
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> OsError {
        OsError::Io {
            what: what.into(),
            error: source,
        }
    }

    /// The error of the last failed libc call, with the operation that failed.
    pub(crate) fn last(what: impl Into<String>) -> OsError {
        OsError::io(what, io::Error::last_os_error())
    }
}

/// A name as given, quoted: its first 64 characters and its length when longer (as
/// `netloom_topo::shown` does, which this crate, below the topology, cannot use), so an error
/// never echoes a huge argument.
fn quoted(name: &str) -> String {
    match name.char_indices().nth(64) {
        Some((cut, _)) => format!("{:?}… ({} bytes)", &name[..cut], name.len()),
        None => format!("{name:?}"),
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}
