//! The control channel between the coordinator and one machine's worker: one JSON object a
//! line, over the launcher's standard input and output (SSH's own channel, as Mininet's
//! cluster mode uses it), so a worker needs no port of its own for control and connects back
//! through whatever reached it.

use crate::message::{Request, Snapshot};
use crate::moved::Moved;
use crate::run::control::ControlError;
use crate::run::event::Event;
use crate::traffic::Traffic;
use netloom_engine::OwnershipError;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::net::SocketAddr;

/// What the coordinator tells a worker.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ToWorker {
    /// A clock exchange: the coordinator's wall clock (ns since 1970) as it sends this.
    Time { sent_ns: u64 },
    /// Bring up this machine's part of the run.
    Start(Box<Start>),
    /// A request of the control protocol for this machine's worker (link changes).
    Request(Request),
    /// This machine's figures so far.
    Figures,
    /// Measure the round trip to every other machine's hand-off socket.
    Probe,
    /// This machine's traffic since the last such order (a repartitioned run).
    Traffic,
    /// Move to the assignment (a worker per pipe) at `at_ns` on the run's clock, handing the
    /// other machines what changes owner straight to them (`links`).
    Move { assignment: Vec<u32>, at_ns: u64 },
    /// Stop, tear down, and send the last figures.
    Stop,
    /// Once every machine stopped (none sends hand-offs any more): the hand-off datagrams
    /// received from each worker so far (asked again while some are on their way); the
    /// worker exits when its input closes.
    Count,
}

/// Why a machine's worker could not do what the coordinator asked, as it says so on the
/// channel. An error of its part crosses as its message: its type stays on its machine.
#[derive(Debug, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PartError {
    /// Told to stop before it started its part.
    #[error("stopped before it started")]
    NotStarted,
    /// Told to move in a run that does not repartition.
    #[error("a move in a run that does not repartition")]
    NotRepartitioned,
    /// Asked a request that the coordinator answers itself (shown as `Debug` shows it).
    #[error("{0} is not forwarded to a machine")]
    NotForwarded(String),
    /// Its part refused or failed: the error's message.
    #[error("{0}")]
    Part(String),
}

impl From<ControlError> for PartError {
    fn from(e: ControlError) -> PartError {
        PartError::Part(e.to_string())
    }
}

impl From<OwnershipError> for PartError {
    fn from(e: OwnershipError) -> PartError {
        PartError::Part(e.to_string())
    }
}

/// What a worker tells the coordinator.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FromWorker {
    /// The first line: which netloom this is and how many CPUs the machine has.
    Hello { version: String, cpus: u32 },
    /// The answer to `Time`: the worker's wall clock as it answered.
    Time { sent_ns: u64, here_ns: u64 },
    /// Its hosts are up and its worker runs, at the priority it got (real-time may be refused
    /// on one machine and not on another: a container without real-time budget).
    Ready {
        priority: Option<crate::run::report::PriorityReport>,
    },
    /// The answer to a `Request`: the reply's body, or why not.
    Answer(Result<serde_json::Value, PartError>),
    /// The answer to `Figures`, and to `Stop` (the last ones).
    Figures(Result<Box<Figures>, PartError>),
    /// The answer to `Probe`: the least round trip (ns) to each worker's hand-off socket, by
    /// worker (`None` for itself and for a machine that did not echo).
    Probed(Vec<Option<u64>>),
    /// The answer to `Traffic`.
    Traffic(Result<Box<Traffic>, PartError>),
    /// The answer to `Move`, once every other machine's transfer is in.
    Moved(Result<Box<Moved>, PartError>),
    /// The answer to `Count`: hand-off datagrams received, by sending worker.
    Counted(Vec<u64>),
    /// Unasked: an accuracy alarm this machine's part raised, for the run's event stream.
    Alarm(Event),
    /// Unasked: the worker could not start, or stopped by itself (a failure, a signal).
    Failed(String),
}

/// One machine's part of a run, as the coordinator computed it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Start {
    /// The run's name (the coordinator's experiment).
    pub run: String,
    /// This machine's experiment: the run's name and the machine's, so that machines sharing a
    /// kernel (namespaces as machines) never share a namespace name or registry entry.
    pub name: String,
    /// The worker that runs here.
    pub worker: usize,
    /// The topology, with the data files it names.
    pub topology: netloom_topo::Bundle,
    /// Which worker owns each pipe (an assignment as `netloom partition` writes it).
    pub assignment: Vec<u32>,
    /// Where each worker takes hand-offs, by worker.
    pub peers: Vec<SocketAddr>,
    /// The run's secret, as hex (`netloom_wire::Key`): every datagram between the machines
    /// carries a tag made with it. It travels only on this channel, the launcher's.
    pub key: String,
    /// The run's options that every machine shares.
    pub seed: u64,
    pub mtu: Option<u32>,
    pub gso: bool,
    pub congestion_control: String,
    pub late_ns: u64,
    pub max_late_fraction: f64,
    /// `busy`, `hybrid` or `sleep` (hybrid with the learned spin).
    pub precision: String,
    pub realtime: bool,
    pub allow_spoofing: bool,
    /// The run's instant zero on the coordinator's wall clock (ns since 1970).
    pub zero_ns: u64,
    /// The repartitioning epoch (ns), when the coordinator repartitions: the worker counts
    /// its traffic.
    #[serde(default)]
    pub repartition_ns: Option<u64>,
    /// This machine's wall clock less the coordinator's, as the coordinator measured it (ns).
    pub offset_ns: i64,
}

/// One machine's figures: its worker's snapshot, the TUN-queue drops of every host of the
/// run (zeros for other machines' hosts), the hand-offs from each worker lost on their way
/// here (gaps in their sequence numbers), the hand-off datagrams sent to each worker and
/// those received from each, and those refused, to merge.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Figures {
    pub snapshot: Snapshot,
    pub tun_queue_drops: Vec<u64>,
    pub lost_handoffs: Vec<u64>,
    pub sent_handoffs: Vec<u64>,
    #[serde(default)]
    pub received_handoffs: Vec<u64>,
    /// Datagrams refused at this machine's hand-off port, by cause.
    #[serde(default)]
    pub refused_handoffs: crate::run::report::RefusedHandoffs,
}

/// Writes one message as a line and flushes it.
pub(crate) fn send<T: Serialize>(
    out: &mut (impl Write + ?Sized),
    message: &T,
) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}

/// Reads one message; `None` at the end of the input. A line that is not a message is an
/// error naming what it was (a launcher's own output, say, before netloom ever ran).
pub(crate) fn receive<T: for<'de> Deserialize<'de>>(
    input: &mut impl BufRead,
) -> std::io::Result<Option<T>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    serde_json::from_str(&line).map(Some).map_err(|e| {
        let shown: String = line.trim_end().chars().take(120).collect();
        std::io::Error::other(format!("not a netloom worker's message ({e}): {shown:?}"))
    })
}

/// The wall clock, ns since 1970.
pub(crate) fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
