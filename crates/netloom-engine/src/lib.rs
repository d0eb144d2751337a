//! The event engine: moves packet descriptors pipe by pipe along their routes, drives synthetic
//! traffic, and reports. Sans-I/O: drivers (virtual time in `sim`, real time elsewhere) supply time.

mod barrier;
mod descriptor;
mod engine;
pub mod epoch;
pub mod lockstep;
pub mod ownership;
mod packet;
pub mod repartition;
pub mod report;
mod scheduler;
pub mod series;
pub mod sim;
pub mod tap;
pub mod traffic;
pub mod workers;
pub mod workload;

pub use descriptor::{DescriptorError, HandoffBounds, OutOfBounds, DESCRIPTOR_LEN};
pub use engine::{
    derive_seed, Engine, EngineCounters, EngineError, FlowStats, HopCounting, Injected, Latencies,
    Migration, Output, Refusal, Remains,
};
pub use ownership::{Ownership, OwnershipError, Payload, MAX_WORKERS};
pub use packet::{Handoff, DEFAULT_TTL};
pub use report::Report;
