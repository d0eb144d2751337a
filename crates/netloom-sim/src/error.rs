//! What can stop a virtual-time run: options that do not go together (`PlanError`, found
//! before anything runs) and what fails while planning or running (`SimError`).

use std::path::PathBuf;

/// Options that do not go together. The messages name options as the library does; a
/// front end says them in its own words (the CLI names its flags).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    /// No workers.
    #[error("a run needs at least one worker")]
    NoWorkers,
    /// Series are recorded by one engine.
    #[error("series need one worker, not {workers}")]
    SeriesNeedOneWorker {
        /// The workers asked for.
        workers: u32,
    },
    /// Captures are written by one engine.
    #[error("captures need one worker, not {workers}")]
    CapturesNeedOneWorker {
        /// The workers asked for.
        workers: u32,
    },
    /// A partitioner but nothing to partition.
    #[error("a partitioning method needs cores or workers")]
    MethodWithoutCores,
    /// Cores to partition over and workers to run on, in different numbers.
    #[error("{cores} cores and {workers} workers: give one, or the same number")]
    CoresAndWorkers {
        /// The cores asked for.
        cores: u32,
        /// The workers asked for.
        workers: u32,
    },
    /// Worker processes for one worker.
    #[error("worker processes need two workers or more")]
    ProcessesNeedWorkers,
    /// Repartitioning with no partition to start from.
    #[error("repartitioning needs a partition to start from: cores or an assignment")]
    RepartitionWithoutPartition,
    /// Repartitioning with series or captures, which do not run in epochs.
    #[error("repartitioning runs in epochs, without series or captures")]
    RepartitionWithSeriesOrCaptures,
    /// Repartitioning worker processes.
    #[error("repartitioning moves pipes between threads only, not processes")]
    RepartitionWithProcesses,
    /// An assignment of another number of cores than workers.
    #[error("the assignment has {cores} cores and the run {workers} workers: they must be equal")]
    AssignmentCores {
        /// The assignment's cores.
        cores: u32,
        /// The run's workers.
        workers: u32,
    },
    /// A pipe whose packets wait in flow queues cannot move between workers.
    #[error("pipe {pipe} holds its packets in flow queues (fq_codel), which cannot move between workers yet")]
    ImmovablePipe {
        /// The pipe's name.
        pipe: String,
    },
}

/// Why a virtual-time run could not be planned or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Options that do not go together.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The topology is too large to partition or to route.
    #[error(transparent)]
    Topology(Box<dyn std::error::Error + Send + Sync>),
    /// The traffic does not fit the topology.
    #[error(transparent)]
    Traffic(#[from] netloom_engine::traffic::TrafficError),
    /// The engine refused a flow or a partition.
    #[error(transparent)]
    Engine(#[from] netloom_engine::EngineError),
    /// A partition that cannot run.
    #[error(transparent)]
    Ownership(#[from] netloom_engine::OwnershipError),
    /// Partitioning or measuring a partition failed.
    #[error(transparent)]
    Partition(#[from] netloom_partition::PartitionError),
    /// Repartitioning failed at the end of an epoch.
    #[error(transparent)]
    Repartition(Box<dyn std::error::Error + Send + Sync>),
    /// A cluster's machines cannot take the run (`file` names the cluster file).
    #[error("{file}: {reason}")]
    Cluster {
        /// The cluster file.
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// A capture file could not be opened (a planted link: `netloom_os::open_output`).
    #[error(transparent)]
    CaptureFile(#[from] netloom_os::OsError),
    /// A capture file could not be written.
    #[error("{}: {error}", path.display())]
    Capture {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// Worker processes failed.
    #[error(transparent)]
    Processes(#[from] netloom_procs::ProcError),
    /// A machine of the cluster runs another version of netloom.
    #[error("machine {machine} runs netloom {version}; this is netloom {}: install the same version on every machine", env!("CARGO_PKG_VERSION"))]
    Version {
        /// The machine.
        machine: String,
        /// Its version.
        version: String,
    },
}
