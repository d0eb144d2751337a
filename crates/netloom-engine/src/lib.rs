//! The event engine: moves packet descriptors pipe by pipe along their routes, drives synthetic
//! traffic, and reports. Sans-I/O: drivers (virtual time in `sim`, real time elsewhere) supply time.

mod engine;
mod packet;
pub mod report;
mod scheduler;
pub mod sim;
pub mod traffic;

pub use engine::{derive_seed, Engine, EngineCounters, EngineError, FlowStats, Output};
pub use report::Report;
