//! Sans-I/O pipes (Dummynet's pipe, ModelNet's hop): one direction of a link, or a shared medium.
//!
//! A pipe never holds packets or reads a clock. The caller offers a packet's size at `now`; the
//! pipe decides (queue, AQM, loss) and answers with the instant the packet leaves the far end.
//! The caller keeps the packet until then and calls `release`, which counts it out (or drops it if
//! the link went down meanwhile).

mod backlog;
mod config;
mod loss;
mod pipe;
mod red;
mod rng;

pub use config::*;
pub use pipe::*;
