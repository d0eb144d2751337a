//! Where the server reads a run from: a `Source` is the experiment in this process (its
//! `Handle`) or a running experiment's control socket (`Socket`); both answer the same figures
//! and make the same link change, `netloom link set`'s.

use netloom_live::protocol::call;
use netloom_live::{Direction, Handle, LinkChange, Report, Request, RunInfo};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::time::Duration;

/// A running experiment as the server sees it; errors are the one line to show.
pub trait Source: Send + Sync {
    /// What the run is (hosts, links, where nodes are).
    fn info(&self) -> Result<RunInfo, String>;
    /// The figures now.
    fn stats(&self) -> Result<Report, String>;
    /// Changes the link between `a` and `b` as `netloom link set` does.
    fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, String>;
}

impl Source for Handle {
    fn info(&self) -> Result<RunInfo, String> {
        Ok(Handle::info(self).clone())
    }

    fn stats(&self) -> Result<Report, String> {
        Handle::stats(self).map_err(|e| e.to_string())
    }

    fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, String> {
        Handle::link_set(self, a, b, direction, set).map_err(|e| e.to_string())
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

    fn ask<T: serde::de::DeserializeOwned>(&self, request: &Request) -> Result<T, String> {
        let body = call(&self.path, request, REPLY_WAIT)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        serde_json::from_value(body).map_err(|e| format!("the experiment's reply: {e}"))
    }
}

impl Source for Socket {
    fn info(&self) -> Result<RunInfo, String> {
        self.ask(&Request::Info)
    }

    fn stats(&self) -> Result<Report, String> {
        self.ask(&Request::Stats)
    }

    fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, String> {
        self.ask(&Request::LinkSet {
            a: a.into(),
            b: b.into(),
            direction,
            set: set.clone(),
        })
    }
}
