//! Which core owns which pipe: the flow graph (one vertex per pipe, ModelNet §5.3), its
//! weightings, the random, k-cluster and METIS partitioners, the assignment file, and the
//! efficiency and capacity a partition gives (with measured costs, each worker's CPU and
//! lateness: `prediction`), its repartitioning epoch by epoch (`dynamic`), and the CPU each core
//! runs on (MX). It never moves a packet.

mod assignment;
mod dynamic;
mod error;
mod evaluation;
mod graph;
mod machine;
mod method;
mod model;
mod observation;
mod placement;
mod prediction;
mod weight;

pub use assignment::Assignment;
pub use dynamic::{match_overlap, Epoch, Repartitioning};
pub use error::PartitionError;
pub use evaluation::{CoreLoad, Evaluation, MeasuredCore, Measurement};
pub use graph::{FlowGraph, MAX_FLOW_EDGES, MAX_STATIC_PAIRS};
pub use machine::{CacheTopology, SharedCache};
pub use method::{partition, partition_shares, Method, Options};
pub use model::{Capacity, CapacityModel};
pub use observation::Observation;
pub use placement::{cross_core_traffic, place, Placement};
pub use prediction::{Prediction, TimerLateness, Work, WorkerCosts, WorkerLoad};
pub use weight::Demand;
