//! `OsError`: what failed at the OS edge, and what the user can do about it.

use std::io;
use std::path::PathBuf;

/// An error of the OS edge. Messages name the operation that failed and, where there is one, the
/// remedy; the CLI prints them as they are.
#[derive(Debug, thiserror::Error)]
pub enum OsError {
    #[error("not root: {what} needs CAP_NET_ADMIN and CAP_SYS_ADMIN; run it as root (for example with sudo)")]
    NotRoot { what: &'static str },

    #[error("/dev/net/tun is missing: load the tun module (`modprobe tun`) or run on a kernel with TUN support")]
    NoTun,

    #[error("invalid {kind} name {name:?}: {reason}")]
    InvalidName {
        kind: &'static str,
        name: String,
        reason: String,
    },

    #[error("invalid experiment {experiment:?}: {reason}")]
    InvalidSpec { experiment: String, reason: String },

    #[error("experiment {name:?} is already running (pid {pid}); stop it with `netloom stop --name {name}` or choose another --name")]
    InUse { name: String, pid: u32 },

    #[error("experiment {name:?} is still running (pid {pid}); stop it with `netloom stop --name {name}` instead of cleaning it")]
    StillRunning { name: String, pid: u32 },

    #[error("network namespace {ns:?} already exists and was not made by this experiment; remove it (`ip netns del {ns}`) if it is a leftover, or choose another --name")]
    NamespaceExists { ns: String },

    #[error("no network namespace {ns:?}: is the experiment still running? (`netloom clean` removes leftovers)")]
    NoNamespace { ns: String },

    #[error("experiment {name:?} is not running (its process {pid} is gone); `netloom clean --name {name}` removes what it left")]
    NotRunning { name: String, pid: u32 },

    #[error("no experiment is running; start one with `netloom run FILE`")]
    NoExperiment,

    #[error("no experiment named {name:?} is running; running: {}", list(running))]
    UnknownExperiment { name: String, running: Vec<String> },

    #[error("{} experiments are running ({}); choose one with --name", running.len(), running.join(", "))]
    Ambiguous { running: Vec<String> },

    #[error(
        "experiment {experiment:?} has no host {host:?}; its hosts are: {}",
        list(hosts)
    )]
    UnknownHost {
        experiment: String,
        host: String,
        hosts: Vec<String>,
    },

    #[error("registry entry {}: {reason}; netloom cannot tell which namespaces it lists, so remove them (`ip netns list`) and the entry's directory by hand", path.display())]
    Registry { path: PathBuf, reason: String },

    #[error("experiment {name:?} (pid {pid}) did not stop within {seconds} s; kill it (`kill -9 {pid}`) and run `netloom clean`")]
    StopTimeout {
        name: String,
        pid: u32,
        seconds: u64,
    },

    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
}

impl OsError {
    /// Wraps an I/O error with the operation that failed ("create namespace nl-x-h1").
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> OsError {
        OsError::Io {
            what: what.into(),
            source,
        }
    }

    /// The error of the last failed libc call, with the operation that failed.
    pub(crate) fn last(what: impl Into<String>) -> OsError {
        OsError::io(what, io::Error::last_os_error())
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}
