//! netloom's HTTP side of a live run: Prometheus metrics (`metrics`) and the web view (`page`),
//! served by one small server (`server`) on a thread of its own that reads the run through a
//! `Source`: the experiment in this process, or a running one's control socket. It never
//! touches the workers but through the calls the control socket makes.

mod metrics;
mod page;
mod server;
mod source;

pub use metrics::exposition;
pub use server::{token, Bound, Routes, WebError, WebServer};
pub use source::{Socket, Source, SourceError};
