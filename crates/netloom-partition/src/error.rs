//! Why a partition could not be computed, read or applied.

use netloom_topo::PipeId;

/// An error of partitioning: bad options, an assignment or observation file that does not fit
/// the topology, or a flow graph METIS cannot take. Messages name the file kind and the pipe or
/// core at fault.
#[derive(Debug, thiserror::Error)]
pub enum PartitionError {
    /// Partitioning over 0 cores was asked for, or an assignment file says `"cores": 0`.
    #[error("the number of cores must be at least 1")]
    NoCores,
    /// An assignment or observation file lists a different number of pipes than the topology
    /// it is applied to has.
    #[error("{what} has {found} pipes, but topology {topology:?} has {expected}")]
    PipeCount {
        /// `"assignment"` or `"observation"`.
        what: &'static str,
        /// Pipes in the file (the length of its `pipes` or `packets`).
        found: usize,
        /// Pipes in the topology.
        expected: usize,
        /// The topology's name.
        topology: String,
    },
    /// An assignment or observation file names another topology than the one it is applied to.
    #[error("{what} is for topology {found:?}, not {expected:?}")]
    Topology {
        /// `"assignment"` or `"observation"`.
        what: &'static str,
        /// The topology the file names.
        found: String,
        /// The name of the topology it was applied to.
        expected: String,
    },
    /// An assignment file puts a pipe on a core that does not exist (the first such pipe).
    #[error("assignment: pipe {pipe} is on core {core}, but there are only {cores} cores (0 to {last})", last = cores - 1)]
    CoreOutOfRange {
        /// The pipe.
        pipe: PipeId,
        /// The core the file gives it, `cores` or above.
        core: u32,
        /// The file's number of cores (at least 1).
        cores: u32,
    },
    /// An observation file counts packets from pipe `from` into pipe `to`, but `to` does not
    /// leave the router `from` leads into (they do not meet, or meet at a host).
    #[error("observation: pipe {to} cannot follow pipe {from} in this topology")]
    NotConsecutive {
        /// The pipe the packets left.
        from: PipeId,
        /// The pipe they are said to have taken next.
        to: PipeId,
    },
    /// An observation file's transition names a pipe number the topology does not have; the
    /// field is that number.
    #[error("observation: pipe {0} does not exist")]
    NoSuchPipe(PipeId),
    /// The undirected flow graph has more adjacency entries than METIS's 32-bit indices can
    /// address.
    #[error("the flow graph is too large for METIS (its indices are 32-bit)")]
    TooLarge,
    /// The flow graph would be too large to build: pipe pairs meeting at routers grow with the
    /// square of a router's links, and a router with many hosts has many.
    #[error(
        "the flow graph would have {edges} pipe pairs (about {gib:.1} GiB, from routers with many \
         links such as {router:?} with {links}); partitioning allows {max} (a router with about \
         {per_router} links and nothing else)",
        gib = *edges as f64 * crate::graph::BYTES_PER_EDGE as f64 / f64::from(1u32 << 30),
        max = crate::graph::MAX_FLOW_EDGES,
        per_router = (crate::graph::MAX_FLOW_EDGES as f64).sqrt() as u64
    )]
    FlowGraphTooLarge {
        /// Pipe pairs the graph would have (at most).
        edges: u64,
        /// The router with the most links.
        router: String,
        /// Its links.
        links: u64,
    },
    /// The static weighting routes every ordered pair of hosts, which takes too long for this
    /// many hosts.
    #[error(
        "static weights route every ordered pair of hosts: {hosts} hosts make {pairs} pairs, more \
         than the {max} (about {max_hosts} hosts) that take about a minute; weigh by a traffic \
         pattern (netloom partition --weights traffic:SPEC or uniform) and run its assignment \
         (--assignment FILE)",
        pairs = (*hosts as u64) * (*hosts as u64).saturating_sub(1),
        max = crate::graph::MAX_STATIC_PAIRS,
        max_hosts = (crate::graph::MAX_STATIC_PAIRS as f64).sqrt() as u64
    )]
    TooManyHostPairs {
        /// Hosts in the topology.
        hosts: usize,
    },
    /// METIS refused the graph or failed to partition it; the field is METIS's error.
    #[error("METIS failed: {0}")]
    Metis(String),
    /// An assignment or observation file is not valid JSON of its format.
    #[error("{what}: {source}")]
    Json {
        /// `"assignment"` or `"observation"`.
        what: &'static str,
        /// The JSON parser's error, with line and column.
        source: serde_json::Error,
    },
}
