//! Sans-I/O pipes (Dummynet's pipe, ModelNet's hop): one direction of a link, or a shared medium.
//!
//! A pipe never holds packets or reads a clock. The caller offers a packet's size at `now`; the
//! pipe decides (queue, AQM, loss, wireless retries) and answers with the instant the packet
//! leaves the far end. The caller keeps the packet until then and calls `release`, which counts
//! it out (or drops it if the link went down meanwhile).
//!
//! Time-varying links are variations (`Variation`: a schedule or a Markov graph of states) that a
//! `Timeline` steps through; the driver applies each state's configuration with `set_config`.

mod backlog;
mod codel;
mod config;
pub mod empirical;
mod fq;
mod loss;
mod markov;
pub mod per;
mod pipe;
pub mod profile;
mod red;
mod rng;
mod schedule;
pub mod trace;
mod variation;
mod wireless;

pub use config::*;
pub use markov::{Markov, MarkovError, MarkovState};
pub use pipe::*;
pub use profile::{DelayProfile, ProfileError, ProfileProblem};
pub use schedule::{Schedule, ScheduleError, MAX_STEPS, MIN_STEP};
pub use trace::{Trace, TraceError};
pub use variation::{Timeline, Variation};
pub use wireless::MAC_FRAMING_BYTES;
