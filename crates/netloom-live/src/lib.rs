//! netloom's live runs: the engine against a clock and hosts' packets. `Experiment` owns a run
//! (hosts brought up, one driver thread per worker, a control socket, events) and is what the
//! CLI and other clients start and observe; `Plan` says what to start. Clients speak to any run
//! through `run`'s traits: `Run` for its owner (wait, stop), `RunView` for reading it, changing
//! links and following events from any thread; implemented by `Experiment` (its `Handle` a
//! view), `cluster::ClusterRun`, and `Client`, a run of another process through its control
//! socket (a view only: the socket never returns the final report). Beneath it, `Driver` is
//! one worker's real-time loop, generic over its `Clock` and its hosts' `PacketIo`, so the loop
//! and its control are tested in memory with a `TestClock`, without root and without sleeping.
//!
//! Two floors. The run (`run/`): `plan`, `experiment` and `handle`, `control` (the run's side of
//! the orders to workers), `server`, `protocol` and `client` (the control socket), `event`,
//! `monitor` (accuracy alarms while a run goes on), `report`, `repartition` (its epochs' thread)
//! and `capture` (the streams written with netloom_packet's `pcapng`). Beneath it, one worker (the
//! crate root): `driver` (the loop, which calls on the owners beside it: `intake` for reads into
//! payload buffers, `routers` for what engine routers send of their own, `taps` for the captures
//! on its pipes, `moving` for its side of a live move), `payload` (packets' bytes and the hand-off
//! protocol between workers), `answer` (a worker's answers to orders), `wait` and `linger` (the
//! precision modes' waiting policy), `message` (the leaf of requests, orders, answers and
//! figures; the other leaves it takes are `accuracy`, `tap`, `traffic` and `moved`), `kernel`
//! (kernel routers' ports), and `tun_io`, `meta`, `pool` for the packets themselves (their bytes,
//! parsed, segmented, answered with ICMP errors and fragmented, are netloom-packet's). Beside
//! them: `cluster` (a run over several machines) and `calibration` (what this machine costs a
//! live run, `netloom calibrate`).

mod accuracy;
mod answer;
pub mod calibration;
// The clock lives with time (the shaping daemon takes one too); `crate::clock` still names it.
use netloom_time::clock;
pub mod cluster;
mod driver;
mod error;
mod intake;
mod io;
mod kernel;
mod linger;
mod mailbox;
mod message;
mod meta;
mod moved;
mod moving;
mod payload;
mod pool;
mod ration;
mod routers;
mod run;
mod tap;
mod taps;
mod traffic;
mod tun_drops;
mod tun_io;
mod wait;
mod worker;

pub use accuracy::{Accuracy, AccuracyReport, LatenessBucket, Thresholds, LATENESS_BUCKETS_NS};
pub use driver::{Driver, DriverConfig};
pub use error::{LiveError, RouterControlError};
pub use io::{Framing, PacketIo};
pub use message::{
    ChangeRefusal, Direction, HostCounters, LinkChange, PipeState, Request, Snapshot,
};
pub use moved::{EpochReport, MoveReport, RepartitionReport, MIN_EPOCH, MOVE_AHEAD};
pub use moved::{MovePhases, Moved};
pub use netloom_time::{Clock, SystemClock, TestClock};
pub use run::client::Client;
pub use run::control::{capture_pipes, ControlError, Controller, Pending, ANSWER_TIMEOUT};
pub use run::ending::Ending;
pub use run::event::{Event, Subscription};
pub use run::experiment::{Experiment, RouterControl};
pub use run::handle::Handle;
pub use run::plan::{this_machine, Options, Placement, Plan, PlanError, Split, REALTIME_PRIORITY};
pub use run::report::{
    CaptureReport, HostInfo, HostReport, LostHandoffs, PriorityReport, RefusedHandoffs, Report,
    RunInfo, WorkersInfo, WorkersReport,
};
pub use run::{protocol, Run, RunError, RunView, SharedView};
pub use tap::{When, SNAPLEN};
pub use tun_io::TunIo;
pub use wait::{Hybrid, Precision, Waiter};
pub use worker::WorkerError;
