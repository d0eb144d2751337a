//! netloom's HTTP side of a live run: Prometheus metrics (`metrics`) and the web view (`page`),
//! served by one small server (`server`) from a fixed set of threads, whatever its clients do,
//! that reads the run through any `netloom_live::RunView` (the experiment in this process, a run
//! over several machines, or a running one's control socket, `netloom_live::Client`), shared by
//! every reader for a moment (`Snapshots`). It never touches the workers but through the calls
//! the control socket makes.

mod counters;
mod host;
mod http;
mod listen;
mod metrics;
mod page;
mod routes;
mod server;
mod snapshots;

pub use counters::Count;
pub use listen::Limits;
pub use metrics::exposition;
pub use routes::Routes;
pub use server::{token, Bound, WebError, WebServer};
pub use snapshots::{Snapshots, SNAPSHOT_EVERY};
