//! What carries a worker's window rounds to the others (`Exchange`: TCP, or MPI with the
//! feature), and why a round failed (`ExchangeError`).

use netloom_engine::lockstep;
use std::time::Duration;

/// A worker's channel to the others for the lock-step windows: the engine's round of messages
/// (`lockstep::Exchange`), and the wall time spent waiting in it, for the report.
pub trait Exchange: lockstep::Exchange<Error = ExchangeError> {
    /// Wall time spent waiting for the others so far.
    fn waited(&self) -> Duration;
}

/// Why a round, or the set-up of the channels, failed.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// A socket failed.
    #[error("worker {me}: TCP with worker {peer}: {error}")]
    Io {
        /// This worker.
        me: u16,
        /// The worker at the other end.
        peer: u16,
        /// What failed.
        error: std::io::Error,
    },
    /// Waiting for the peers failed (its listening socket, or epoll).
    #[error("worker {me}: waiting for its peers: {error}")]
    Wait {
        /// This worker.
        me: u16,
        /// What failed.
        error: String,
    },
    /// This worker cannot reach a peer's address.
    #[error("worker {me} cannot connect to worker {peer} at {address}: {error}")]
    Connect {
        /// This worker.
        me: u16,
        /// The worker it connects to.
        peer: u16,
        /// Where.
        address: std::net::SocketAddr,
        /// Why.
        error: std::io::Error,
    },
    /// Peers did not connect in time at the start.
    #[error(
        "worker {me}: worker(s) {} did not connect within {} s",
        missing.iter().map(u16::to_string).collect::<Vec<_>>().join(", "),
        waited.as_secs()
    )]
    NotConnected {
        /// This worker.
        me: u16,
        /// The workers that did not connect.
        missing: Vec<u16>,
        /// How long this worker waited.
        waited: Duration,
    },
    /// A peer's end closed while this worker still needed its batch: it died or stopped.
    #[error("worker {me}: worker {peer} closed its connection")]
    Closed {
        /// This worker.
        me: u16,
        /// The worker that is gone.
        peer: u16,
    },
    /// A peer sent what is not a frame of this run: without the run's tag, not netloom's
    /// GENEVE, too long, of another run, worker or round, or a part out of order. On a
    /// connection that was set up with the run's secret, that is a broken or hostile peer.
    #[error("worker {me}: a frame from worker {peer}: {what}")]
    Frame {
        /// This worker.
        me: u16,
        /// The peer.
        peer: u16,
        /// What is wrong with it.
        what: String,
    },
    /// The watcher said a peer is gone.
    #[error("{0}")]
    Peer(String),
    /// A peer's hand-off names what this worker's topology has not: the workers do not run
    /// the same topology (or a peer is broken); taking it in would corrupt the run.
    #[error("worker {me}: a hand-off from worker {peer}: {error}")]
    OutOfBounds {
        /// This worker.
        me: u16,
        /// The peer.
        peer: u16,
        /// What it names.
        error: netloom_engine::OutOfBounds,
    },
}
