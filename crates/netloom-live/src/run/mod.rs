//! The run, above its workers: what says what to start (`plan`), the one-machine run
//! (`experiment`, with `handle`, what its clients share, and `ending`), the orders to the workers
//! (`control`), the control socket (`server`, `protocol`, `client`), `event`s, accuracy alarms
//! (`monitor`), the `report`, repartitioning epochs (`repartition`) and capture streams
//! (`capture`); and here, the traits every client of any run speaks to.
//!
//! What a client does to a live run, whichever run it is: `RunView` (read it, change its links,
//! follow its events) and `Run` (that, plus wait for its end and stop it), implemented by the
//! one-machine run (`Experiment`, its `Handle`), the run over several machines (`ClusterRun`)
//! and the control-socket client (`Client`, a view only). Not how any of them works.
//!
//! Two traits, not one, because the calls differ in who may make them. Reading and changing a
//! run is safe from any thread at any time, so `RunView` takes `&self`, and what a web server's
//! threads share is a `SharedView` (`Arc<dyn RunView + Send + Sync>`, from `Run::view`); the
//! owner itself need not be `Sync` (it holds its threads' handles). Waiting for the end
//! and stopping belong to the one owner of the run: `stop` consumes it (`Box<Self>`), so nothing
//! can use a run after it is gone, and its threads and hosts go with it. A view outlives the run
//! safely: once it is stopped, the view's calls return an error saying so.
//!
//! The control-socket client is a view and not a `Run`: the protocol can ask a run to stop but
//! never returns its final report (the owner prints it), so a `stop` through the socket could not
//! keep `Run::stop`'s promise.
//!
//! Events: `subscribe` returns the run's events from now on where the implementation has them
//! (all three here do); one that has none returns an error (`RunError::NoRun` for a report
//! viewer), never a subscription that stays silent.

pub(crate) mod capture;
pub(crate) mod client;
pub(crate) mod control;
pub(crate) mod ending;
pub(crate) mod event;
pub(crate) mod experiment;
pub(crate) mod handle;
pub(crate) mod monitor;
pub(crate) mod plan;
pub mod protocol;
pub(crate) mod repartition;
pub(crate) mod report;
pub(crate) mod server;

use crate::cluster::MachineClock;
use crate::error::LiveError;
use crate::message::{Direction, LinkChange};
use crate::run::ending::Ending;
use crate::run::event::Subscription;
use crate::run::protocol::CallError;
use crate::run::report::{Report, RunInfo};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Why a client's call on a run failed; `Display` is the one line to show.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The run in this process refused or did not answer.
    #[error(transparent)]
    Live(#[from] LiveError),
    /// The run's control socket could not be reached, or the run refused.
    #[error("{}: {source}", path.display())]
    Call {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: CallError,
    },
    /// The run's reply is not the answer asked for.
    #[error("the experiment's reply: {0}")]
    Reply(#[source] serde_json::Error),
    /// There is no run to read or change: whoever serves this shows a report only.
    #[error("no run: this server shows a sim report")]
    NoRun,
    /// The error of an answer shared between several callers (`netloom_web::Snapshots`), as it
    /// was when it was taken.
    #[error("{0}")]
    Shared(Arc<RunError>),
}

/// A view that any thread may hold and call: what a web server's threads share.
pub type SharedView = Arc<dyn RunView + Send + Sync>;

/// What any client may do to a run: read it, change its links, follow its events. Every call
/// takes `&self`; a view shared between threads is a `SharedView`. See the module's doc for why
/// this is apart from `Run`.
pub trait RunView {
    /// What the run is (hosts, links, where nodes are).
    fn info(&self) -> Result<RunInfo, RunError>;
    /// The figures now.
    fn stats(&self) -> Result<Report, RunError>;
    /// Changes the link between `a` and `b` from now on, in `direction`; `set` has the topology
    /// file's link keys (`{"delay": "5ms"}`), as `netloom link set` does.
    fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, RunError>;
    /// Takes the link between `a` and `b` down or brings it up, from now on.
    fn link_state(&self, a: &str, b: &str, up: bool) -> Result<LinkChange, RunError>;
    /// The run's `Started` event, then every event from now on; it ends after `Stopped` or when
    /// the run is gone. An implementation without events returns an error instead.
    fn subscribe(&self) -> Result<Subscription, RunError>;
}

/// A run as its one owner holds it: a view, and the end of the run. `netloom run` drives any
/// `Run` through one lifecycle, whether it runs on one machine or several.
pub trait Run: RunView {
    /// A view of this run for other threads (a web server's): it answers while the run lasts,
    /// and errors once it stopped.
    fn view(&self) -> SharedView;
    /// What to tell the user once the run is up that its plan could not know before it started
    /// (the run over several machines measures the way between them). None by default.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
    /// Waits until `signal` is set, `deadline` passes, a client asks the run to stop, or a
    /// worker fails, and says which. The run goes on: call `stop` next.
    fn wait(&self, signal: &AtomicBool, deadline: Option<std::time::Instant>) -> Ending;
    /// Each machine's clock against this one's, at the start and as last measured, to be said
    /// at the end; none where the run has one clock (one machine, the default).
    fn clocks(&self) -> Vec<MachineClock> {
        Vec::new()
    }
    /// What moved during the run that makes its timing doubtful (machines' clocks drifting
    /// apart by more than the lookahead), asked after `wait` and before `stop`. None by
    /// default.
    fn drift_warnings(&self) -> Vec<String> {
        Vec::new()
    }
    /// Stops the run everywhere and returns its final report; `reason` goes into the `stopped`
    /// event. Whatever the run made is removed, on error too.
    fn stop(self: Box<Self>, reason: &Ending) -> Result<Report, RunError>;
}
