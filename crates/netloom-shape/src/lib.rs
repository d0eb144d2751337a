//! `netloom shape`: Dummynet's classifier and netconfig on this machine's own traffic (paper 002).
//!
//! `spec` parses a request (`client 18080@127.0.0.1 IN delay=20ms OUT delay=20ms`), `classifier`
//! finds a packet's link through a per-tenant dispatch table, `shaper` holds packets in the
//! links' pipes (sans I/O: time is passed in), `kernel` writes the rules that send exactly the
//! selected packets to the NFQUEUE, `limits` says what each user may ask, and `daemon` is the
//! process that holds the queue and serves root and unprivileged users.

pub mod classifier;
pub mod daemon;
pub mod kernel;
mod ledger;
pub mod limits;
pub mod shaper;
pub mod spec;

pub use classifier::{Classifier, Direction, Packet, Rule};
pub use shaper::{Arrival, LinkReport, PipeReport, Quota, Shaper, Target, UserReport};
pub use spec::{Cgroup, LinkSpec, PipeSpec, Pipes, Selector, SpecError};
