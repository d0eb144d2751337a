//! Virtual-time runs whose workers are processes (`netloom sim --workers N --processes`): the
//! coordinator is worker 0 and starts workers 1 to N−1 as child processes (`spawn`), which trade
//! hand-offs in lock-step windows as sealed GENEVE batches over TCP (`tcp`, framed by
//! `frames`), and send their remains back for the merge. Control (the worker's version, the
//! set-up with the topology itself, the peers' addresses, the remains) goes over each child's
//! stdin and stdout as JSON lines, so a worker on another machine needs none of the
//! coordinator's files. With the feature `mpi`, the workers are instead the ranks `mpirun`
//! started (`mpi`): the same frames, carried as MPI messages.

mod exchange;
mod frames;
#[cfg(feature = "mpi")]
pub mod mpi;
mod spawn;
pub mod tcp;

pub use exchange::{Exchange, ExchangeError};
pub use frames::MAX_FRAME;
use netloom_engine::{Engine, Remains};
use netloom_time::Instant;
use serde::{Deserialize, Serialize};
pub use spawn::{serve, Processes};
use std::net::IpAddr;
pub use tcp::{Listener, Run, TcpExchange};

/// What the coordinator tells every worker process before the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Setup {
    /// Processes of the run, the coordinator (worker 0) included.
    pub workers: usize,
    /// The pipe → worker assignment, as the coordinator computed it.
    pub assignment: Vec<u32>,
    /// The run's GENEVE VNI.
    pub vni: u32,
    /// The run's secret, as hex (`netloom_wire::Key`), which seals every frame between the
    /// workers. It travels only here, on the worker's standard input (its launcher's channel).
    pub key: String,
    /// The address each worker listens at, worker 0 first (ports chosen by the system).
    pub addresses: Vec<IpAddr>,
    /// The topology, with the data files it names.
    pub topology: netloom_topo::Bundle,
}

/// Why a run over processes failed.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// A worker process could not be started.
    #[error("cannot start worker {worker}: {error}")]
    Spawn {
        /// The worker.
        worker: usize,
        /// Why.
        error: std::io::Error,
    },
    /// A worker process died or broke the protocol; the others were stopped.
    #[error("worker {worker} (pid {pid}) {what}; the run was stopped")]
    Worker {
        /// The worker.
        worker: usize,
        /// Its process id.
        pid: u32,
        /// What happened: died with which status, or said what.
        what: String,
    },
    /// A worker runs another netloom.
    #[error(
        "worker {worker} runs netloom {version}; this is netloom {}",
        spawn::VERSION
    )]
    Version {
        /// The worker.
        worker: usize,
        /// Its version.
        version: String,
    },
    /// A worker cannot listen at its address.
    #[error("worker {worker} cannot take hand-offs at {address}: {error}")]
    Bind {
        /// The worker.
        worker: usize,
        /// Its address.
        address: IpAddr,
        /// Why.
        error: std::io::Error,
    },
    /// The exchange failed.
    #[error(transparent)]
    Exchange(#[from] ExchangeError),
    /// This process's own I/O failed (stdin, stdout).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The worker's set-up (its engine) failed.
    #[error("{0}")]
    Build(String),
}

/// What a run over processes leaves: every worker's figures.
pub struct Outcome {
    /// Windows of the run (the same on every worker).
    pub windows: u64,
    /// Remains of workers 1 to N−1, in order.
    pub remains: Vec<Remains>,
    /// Wall time each worker spent waiting for the others, worker 0 first.
    pub waited: Vec<std::time::Duration>,
}

/// The report of a run over processes from worker 0's `engine` and the others' `remains`
/// (workers 1 to N−1, in order), as `workers::run` reports it from merged engines: `engine`
/// absorbs their pipe and engine counts, and each flow's figures come from the workers that
/// own its ends.
pub fn merge(
    engine: &mut Engine,
    remains: Vec<Remains>,
    seed: u64,
    end: Instant,
    wall: Option<std::time::Duration>,
) -> (netloom_engine::Report, Vec<Remains>) {
    let mut all = vec![engine.remains(end)];
    for r in &remains {
        engine.absorb_remains(r);
    }
    all.extend(remains);
    let mut report = netloom_engine::Report::build(engine, seed, end, wall);
    report.flows = engine.merge_flows(&all);
    (report, all)
}

/// The run's secret in `setup`.
pub(crate) fn key(setup: &Setup) -> Result<netloom_wire::Key, ProcError> {
    netloom_wire::Key::from_hex(&setup.key)
        .map_err(|e| ProcError::Build(format!("a bad set-up: {e}")))
}
