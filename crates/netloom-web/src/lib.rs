//! netloom's HTTP side of a live run: Prometheus metrics (`metrics`) and the web view (`page`),
//! served by one small server (`server`) from a fixed set of threads, whatever its clients do,
//! that reads the run through a `Source`: the experiment in this process, or a running one's
//! control socket, shared by every reader for a moment (`Snapshots`). It never touches the
//! workers but through the calls the control socket makes.

mod counters;
mod host;
mod http;
mod listen;
mod metrics;
mod page;
mod routes;
mod server;
mod snapshots;
mod source;

pub use counters::Count;
pub use listen::Limits;
pub use metrics::exposition;
pub use routes::Routes;
pub use server::{token, Bound, WebError, WebServer};
pub use snapshots::{Snapshots, SNAPSHOT_EVERY};
pub use source::{Socket, Source, SourceError};
