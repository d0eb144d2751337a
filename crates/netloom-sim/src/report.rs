//! What a virtual-time run reports: the engine's report with the sections a split run adds
//! (the partition measured, the workers, the epochs), as docs/json.md and docs/partition.md
//! describe them.

use netloom_engine::workers::ParallelReport;
use netloom_engine::Report;
use netloom_partition::{Measurement, Observation};
use serde::Serialize;

/// The report of a virtual-time run: the engine's fields, then the optional `partition`,
/// `workers` and `repartition` sections.
#[derive(Serialize)]
pub struct SimReport {
    /// The engine's report (flows, pipes, totals).
    #[serde(flatten)]
    pub report: Report,
    /// The partition measured or run on, measured on the run's own packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<Measurement>,
    /// How a run over workers went.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<WorkersReport>,
    /// The static against the dynamic partition, epoch by epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repartition: Option<RepartitionReport>,
    /// The packets counted per pipe and per pair of pipes (what `partition --weights
    /// observed:FILE` reads); empty unless the run counted them.
    #[serde(skip)]
    pub observation: Observation,
}

/// Static against dynamic partition, epoch by epoch.
#[derive(Serialize)]
pub struct RepartitionReport {
    /// The epoch's length.
    pub epoch_ns: u64,
    /// The partitioner.
    pub method: &'static str,
    /// Its balance constraint.
    pub imbalance: f64,
    /// One row an epoch.
    pub epochs: Vec<EpochRow>,
}

/// One epoch of a repartitioned run.
#[derive(Serialize)]
pub struct EpochRow {
    /// Its start, virtual time.
    pub start_ns: u64,
    /// Its end.
    pub end_ns: u64,
    /// Both partitions measured on it.
    #[serde(flatten)]
    pub epoch: netloom_partition::Epoch,
}

/// How a run over workers went.
#[derive(Serialize)]
pub struct WorkersReport {
    /// The workers' windows and waits.
    #[serde(flatten)]
    pub parallel: ParallelReport,
    /// What crossed between workers: the descriptor (`cache`) or the whole packet (`ship`).
    pub payload: &'static str,
    /// Hops from a pipe of one worker into a pipe of another.
    pub cross_core_hops: u64,
    /// Their bytes.
    pub cross_core_bytes: u64,
    /// Pipes moved to the worker of the host that sends into them.
    pub moved_pipes: usize,
    /// The CPU of each worker, when pinned.
    pub cpus: Option<Vec<usize>>,
}

/// What a runner hands back: the engine (merged, for workers), its report, and the sections
/// the run adds.
pub(crate) struct Ran {
    pub(crate) engine: netloom_engine::Engine,
    pub(crate) report: netloom_engine::Report,
    pub(crate) workers: Option<WorkersReport>,
    /// The partition the run measured, as it ran (host pipes moved to their host's worker).
    pub(crate) assignment: Option<netloom_partition::Assignment>,
    pub(crate) repartition: Option<RepartitionReport>,
}
