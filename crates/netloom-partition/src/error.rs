//! Why a partition could not be computed, read or applied.

use netloom_topo::PipeId;

#[derive(Debug, thiserror::Error)]
pub enum PartitionError {
    #[error("the number of cores must be at least 1")]
    NoCores,
    #[error("{what} has {found} pipes, but topology {topology:?} has {expected}")]
    PipeCount {
        what: &'static str,
        found: usize,
        expected: usize,
        topology: String,
    },
    #[error("{what} is for topology {found:?}, not {expected:?}")]
    Topology {
        what: &'static str,
        found: String,
        expected: String,
    },
    #[error("assignment: pipe {pipe} is on core {core}, but there are only {cores} cores (0 to {last})", last = cores - 1)]
    CoreOutOfRange { pipe: PipeId, core: u32, cores: u32 },
    #[error("observation: pipe {to} cannot follow pipe {from} in this topology")]
    NotConsecutive { from: PipeId, to: PipeId },
    #[error("observation: pipe {0} does not exist")]
    NoSuchPipe(PipeId),
    #[error("the flow graph is too large for METIS (its indices are 32-bit)")]
    TooLarge,
    #[error("METIS failed: {0}")]
    Metis(String),
    #[error("{what}: {source}")]
    Json {
        what: &'static str,
        source: serde_json::Error,
    },
}
