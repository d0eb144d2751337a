//! A virtual-time run as a library: `netloom-sim` owns a run of `netloom sim` as `netloom-live`
//! owns a live one.
//!
//! `SimPlan::new(topology, traffic, options)` makes every check of the options once, typed,
//! and decides how the run is split; `SimPlan::run` runs it on one engine, on worker threads
//! or on worker processes (on this machine or a cluster's machines, `serve_worker` being the
//! other end), and returns the report. A front end only turns its input into `Options` and
//! prints the `SimReport`.
//!
//! ```text
//!  cli (flags -> Options, printing)
//!   |
//!  sim: plan <- run -> runner: one engine | epochs | threads | processes (procs)
//!   |
//!  partition (the split) · engine (the network, the traffic) · route · topo · time
//! ```

mod capture;
mod epochs;
mod error;
mod options;
mod plan;
mod processes;
mod report;
mod run;
mod single;
pub mod split;
mod threads;

pub use error::{PlanError, SimError};
pub use options::{Capture, Launch, Options, Processes};
pub use plan::{Observer, SimPlan};
#[cfg(feature = "mpi")]
pub use processes::serve_rank;
pub use processes::{serve_worker, this_machine_first};
pub use report::{EpochRow, RepartitionReport, SimReport, WorkersReport};
