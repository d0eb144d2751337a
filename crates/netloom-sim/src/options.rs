//! What a user asks of a virtual-time run, typed but not yet checked against itself: `SimPlan`
//! makes the checks and the decisions (ripgrep's low-level arguments before its high-level ones).

use netloom_engine::Payload;
use netloom_live::cluster::Cluster;
use netloom_partition::{Assignment, Method};
use netloom_time::Duration;
use std::path::PathBuf;
use std::process::Command;

/// The options of a virtual-time run. `Options::new` gives the defaults: one engine, no
/// partition, wall-clock figures in the report.
pub struct Options {
    /// Virtual time to simulate: the run covers [0, duration). Not zero.
    pub duration: Duration,
    /// Seeds every random choice (loss, jitter, traffic); the same seed gives the same run.
    pub seed: u64,
    /// Measure wall-clock time into the report (off for byte-identical reports).
    pub wall_clock: bool,
    /// Per-interval series of this length (not zero) in the report. One worker only.
    pub series: Option<Duration>,
    /// Pipes whose packets are written as pcapng. One worker only.
    pub captures: Vec<Capture>,
    /// Measure efficiency for this pipe → core assignment.
    pub assignment: Option<Assignment>,
    /// Partition the pipes over this many cores on the static weights, and measure efficiency.
    pub cores: Option<u32>,
    /// The partitioner for `cores`, `workers` and `repartition` (METIS if none).
    pub method: Option<Method>,
    /// METIS: the most loaded core may carry this many times the mean load.
    pub imbalance: f64,
    /// Run the engine partitioned over this many workers (1: one engine).
    pub workers: u32,
    /// What crosses between workers.
    pub payload: Payload,
    /// Pin each worker thread to a CPU, communicating workers on CPUs that share a cache (MX).
    pub pin: bool,
    /// Run workers 1 to N-1 as processes of their own, in lock-step over TCP (or MPI).
    pub processes: Option<Processes>,
    /// Count packets per pipe and per pair of consecutive pipes (what `partition --weights
    /// observed:FILE` reads), even where no partition needs them.
    pub observe: bool,
    /// Repartition every epoch of this length (not zero) on the traffic observed in the last.
    pub repartition: Option<Duration>,
}

impl Options {
    /// A run of `duration` with `seed` on one engine, with the defaults for the rest.
    pub fn new(duration: Duration, seed: u64) -> Options {
        Options {
            duration,
            seed,
            wall_clock: true,
            series: None,
            captures: Vec::new(),
            assignment: None,
            cores: None,
            method: None,
            imbalance: 1.03,
            workers: 1,
            payload: Payload::Cache,
            pin: false,
            processes: None,
            observe: false,
            repartition: None,
        }
    }
}

impl Options {
    /// The cluster whose machines run the workers, if any.
    pub(crate) fn cluster(&self) -> Option<&Cluster> {
        self.processes.as_ref().and_then(|p| p.cluster.as_ref())
    }

    /// How the workers count their hops: per pair of pipes when the pairs are observed or weigh
    /// the next partition (repartitioning); otherwise only what measures the run's own
    /// partition (its `partition` section), which costs nothing per hop.
    pub(crate) fn hop_counting(&self) -> netloom_engine::HopCounting {
        match self.observe || self.repartition.is_some() {
            true => netloom_engine::HopCounting::Pairs,
            false => netloom_engine::HopCounting::Crossings,
        }
    }
}

/// The pipes of a capture and the file they are written to, as pcapng.
pub struct Capture {
    /// Each pipe, with the interface its packets are recorded on.
    pub pipes: Vec<(netloom_topo::PipeId, netloom_packet::pcapng::Interface)>,
    /// The file, created (or truncated) when the run starts.
    pub path: PathBuf,
}

/// How worker processes are started, and where.
pub struct Processes {
    /// Who starts workers 1 to N−1.
    pub launch: Launch,
    /// The topology as the workers load it (sent to them with the assignment).
    pub topology: netloom_topo::Bundle,
    /// A cluster whose machine k runs worker k, this process being worker 0 on the first
    /// (`this_machine_first`); the run has as many workers. None: processes on this machine,
    /// over the loopback.
    pub cluster: Option<Cluster>,
}

/// Who starts the workers of a run over processes.
pub enum Launch {
    /// This process, with the command that starts worker k (1 ≤ k < workers): a program that
    /// calls `serve_worker` with k and the same options (this program again, as a rule).
    Spawn(Box<dyn Fn(usize) -> Command>),
    /// `mpirun`, which started every rank: this process is rank 0, the others call
    /// `serve_rank`. The workers are the ranks.
    #[cfg(feature = "mpi")]
    Mpi(std::rc::Rc<netloom_procs::mpi::Mpi>),
}
