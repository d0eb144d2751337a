//! Why a run's `wait` returned (`Ending`): plain data, shared by the one-machine run, the
//! cluster run and their `Run` trait.

use std::sync::atomic::{AtomicBool, Ordering};

/// Why `wait` returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The flag the caller passed was set (a signal, usually).
    Signal,
    /// The deadline passed.
    Deadline,
    /// A client asked the experiment to stop (the control protocol's `stop`).
    Requested,
    /// A worker failed; the others have stopped.
    WorkerFailed,
    /// The caller is done with it (a demo that ran its programs, a test).
    Done,
}

impl Ending {
    /// What a `wait` ends with now, if anything: the caller's flag first, then the deadline,
    /// a client's `stop`, a failed worker (`failed`, asked last).
    pub(crate) fn now(
        signal: &AtomicBool,
        deadline: Option<std::time::Instant>,
        now: std::time::Instant,
        stop_requested: &AtomicBool,
        failed: impl FnOnce() -> bool,
    ) -> Option<Ending> {
        if signal.load(Ordering::Relaxed) {
            Some(Ending::Signal)
        } else if deadline.is_some_and(|d| now >= d) {
            Some(Ending::Deadline)
        } else if stop_requested.load(Ordering::SeqCst) {
            Some(Ending::Requested)
        } else if failed() {
            Some(Ending::WorkerFailed)
        } else {
            None
        }
    }

    /// A word for it, as the `stopped` event's reason.
    pub fn name(&self) -> &'static str {
        match self {
            Ending::Signal => "signal",
            Ending::Deadline => "duration",
            Ending::Requested => "request",
            Ending::WorkerFailed => "worker failed",
            Ending::Done => "done",
        }
    }
}
