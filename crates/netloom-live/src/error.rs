//! Why a live run could not start, answer or stop cleanly (`LiveError`), for every part of the
//! run that reports to a client: the experiment, its handle, the cluster's coordinator.

use crate::cluster::channel::PartError;
use crate::run::control::ControlError;
use crate::run::plan::PlanError;
use crate::worker::WorkerError;
use netloom_os::OsError;

/// The error of a `RouterControl`, whatever its implementation's type.
pub type RouterControlError = Box<dyn std::error::Error + Send + Sync>;

/// Why a live run could not start, answer or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The plan does not fit.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The OS refused something (namespaces, TUN devices, priorities, the registry).
    #[error(transparent)]
    Os(#[from] OsError),
    /// A control request was refused or not answered.
    #[error(transparent)]
    Control(#[from] ControlError),
    /// An I/O error of the run's own machinery (the control socket, a thread).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// A machine of a run over several machines could not be reached, started or kept
    /// running (its name and why are in the message).
    #[error("{0}")]
    Machine(String),
    /// A worker stopped with an error.
    #[error("worker {worker}: {error}")]
    Worker {
        /// Which.
        worker: usize,
        /// What went wrong (in the message whole, so not also a source, which would print it
        /// twice in a chain).
        error: WorkerError,
    },
    /// A capture that cannot be made.
    #[error("{0}")]
    Capture(String),
    /// The `RouterControl` refused or failed; the message is its error's, whole (which is why
    /// that error is not also given as the source, which would print it twice in a chain).
    #[error("{0}")]
    Routers(RouterControlError),
    /// A host name the experiment does not have.
    #[error("experiment {experiment} has no host {host:?}{hint}")]
    UnknownHost {
        /// The experiment.
        experiment: String,
        /// The name asked for.
        host: String,
        /// A suggestion, or nothing.
        hint: String,
    },
}

// Here, not beside `PartError`: the control channel's messages import nothing of the run.
impl From<LiveError> for PartError {
    fn from(e: LiveError) -> PartError {
        PartError::Part(e.to_string())
    }
}

pub(crate) fn io_error(what: &str) -> impl FnOnce(std::io::Error) -> LiveError + '_ {
    move |source| LiveError::Io {
        what: what.to_string(),
        source,
    }
}
