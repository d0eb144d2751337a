//! Where the server reads a run from: a `Source` is the experiment in this process (its
//! `Handle`) or a running experiment's control socket (`Socket`); both answer the same figures
//! and make the same link change, `netloom link set`'s.

use netloom_live::protocol::{call, CallError};
use netloom_live::{Direction, Handle, LinkChange, LiveError, Report, Request, RunInfo};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::time::Duration;

/// Why a source could not answer; `Display` is the one line to show.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The experiment in this process refused or did not answer.
    #[error(transparent)]
    Live(#[from] LiveError),
    /// The experiment's control socket could not be reached, or it refused.
    #[error("{}: {source}", path.display())]
    Call {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: CallError,
    },
    /// The experiment's reply is not the answer asked for.
    #[error("the experiment's reply: {0}")]
    Reply(#[source] serde_json::Error),
    /// There is no run to read or change: the server shows a report only.
    #[error("no run: this server shows a sim report")]
    NoRun,
    /// Why the snapshot every reader shares could not be taken (`Snapshots`).
    #[error("{0}")]
    Shared(String),
}

/// A running experiment as the server sees it; errors are the one line to show.
pub trait Source: Send + Sync {
    /// What the run is (hosts, links, where nodes are).
    fn info(&self) -> Result<RunInfo, SourceError>;
    /// The figures now.
    fn stats(&self) -> Result<Report, SourceError>;
    /// Changes the link between `a` and `b` as `netloom link set` does.
    fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, SourceError>;
}

impl Source for Handle {
    fn info(&self) -> Result<RunInfo, SourceError> {
        Ok(Handle::info(self).clone())
    }

    fn stats(&self) -> Result<Report, SourceError> {
        Ok(Handle::stats(self)?)
    }

    fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, SourceError> {
        Ok(Handle::link_set(self, a, b, direction, set)?)
    }
}

/// How long a request through the control socket waits: the experiment's own wait for its
/// workers, and more.
const REPLY_WAIT: Duration = Duration::from_secs(10);

/// A running experiment reached through its control socket.
pub struct Socket {
    path: PathBuf,
}

impl Socket {
    /// The experiment whose control socket is `path` (`protocol::socket_path`).
    pub fn new(path: PathBuf) -> Socket {
        Socket { path }
    }

    fn ask<T: serde::de::DeserializeOwned>(&self, request: &Request) -> Result<T, SourceError> {
        let body = call(&self.path, request, REPLY_WAIT).map_err(|source| SourceError::Call {
            path: self.path.clone(),
            source,
        })?;
        serde_json::from_value(body).map_err(SourceError::Reply)
    }
}

impl Source for Socket {
    fn info(&self) -> Result<RunInfo, SourceError> {
        self.ask(&Request::Info)
    }

    fn stats(&self) -> Result<Report, SourceError> {
        self.ask(&Request::Stats)
    }

    fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, SourceError> {
        self.ask(&Request::LinkSet {
            a: a.into(),
            b: b.into(),
            direction,
            set: set.clone(),
        })
    }
}
