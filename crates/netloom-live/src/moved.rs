//! Owns what a move hands over (`Transfer`), what it handed over (`Moved`), where its time went
//! (`MovePhases`), and the report of a repartitioned run's epochs and moves
//! (`RepartitionReport`); not the move (`moving`) nor the epochs' thread (`repartition`).
//!
//! Plain data, a leaf: a worker's `Answer::Moved`, summed over workers (`merge_moved`) and
//! moves, and the `Stamps` a transfer collects on its way for the phases.

use crate::ration::Bucket;
use netloom_engine::Migration;
use netloom_time::{Duration, Instant};
use serde::{Deserialize, Serialize};

/// The shortest epoch: gathering the counts and partitioning take a few milliseconds, and a
/// move stalls every worker briefly, so shorter epochs would spend the run moving.
pub const MIN_EPOCH: Duration = Duration::from_millis(100);
/// How far ahead of the order a move is set: long enough for every worker, woken by the order,
/// to take it before the instant comes (a turn is microseconds; a sleeping worker's wake-up up
/// to a few hundred on this VM).
pub const MOVE_AHEAD: Duration = Duration::from_millis(2);

/// What one worker hands another at a move: the engine's part, the hosts the other reads
/// from now on, each with its ration's bucket, and, when payloads are shipped, the packet of
/// each pending exit or entry of the migration (in its order; empty when payloads are cached).
/// A worker on another machine is sent it in binary (`cluster::transfer`).
pub(crate) struct Transfer {
    pub migration: Migration,
    pub hosts: Vec<(u32, Bucket)>,
    pub payloads: Vec<Box<[u8]>>,
    /// When it passed each step of its way, for `MovePhases`.
    pub stamps: Stamps,
}

impl Transfer {
    /// The packets it carries (pending exits and entries of the migration).
    pub fn packets(&self) -> u64 {
        self.migration.counts().1 as u64
    }
}

impl std::fmt::Debug for Transfer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (pipes, packets) = self.migration.counts();
        f.debug_struct("Transfer")
            .field("pipes", &pipes)
            .field("packets", &packets)
            .field("hosts", &self.hosts.len())
            .finish()
    }
}

/// One move of a repartitioned live run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MoveReport {
    /// Its instant, ns since the run started.
    pub at_ns: u64,
    /// What changed hands, its stall and where the stall's time went.
    #[serde(flatten)]
    pub moved: Moved,
}

/// One epoch of a repartitioned live run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpochReport {
    /// When it started and ended, ns since the run started.
    pub start_ns: u64,
    /// (see `start_ns`)
    pub end_ns: u64,
    /// Efficiency of the partition that ran in it (`netloom partition`); none without traffic.
    pub efficiency: Option<f64>,
    /// Efficiency the first partition would have had.
    pub static_efficiency: Option<f64>,
    /// Whether a move happened at its start.
    pub moved: bool,
    /// Packets released in it, and the 99th percentile of their lateness.
    pub releases: u64,
    /// (see `releases`)
    pub lateness_p99_ns: u64,
}

/// A repartitioned live run's moves so far.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RepartitionReport {
    /// The epoch, ns.
    pub epoch_ns: u64,
    /// Moves made (epochs after which the partition changed).
    pub moves: u64,
    /// Over all moves: what changed hands, and the longest stall.
    #[serde(flatten)]
    pub moved: Moved,
    /// Every epoch closed so far.
    pub epochs: Vec<EpochReport>,
    /// Every move so far.
    #[serde(default)]
    pub each_move: Vec<MoveReport>,
    /// Why repartitioning stopped before the run did, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

impl RepartitionReport {
    /// The 99th percentile of lateness in the epochs with a move (`true`) or without, the worst
    /// of those epochs; none when there is no such epoch with releases.
    pub fn worst_p99_ns(&self, moved: bool) -> Option<u64> {
        self.epochs
            .iter()
            .filter(|e| e.moved == moved && e.releases > 0)
            .map(|e| e.lateness_p99_ns)
            .max()
    }
}

/// When a transfer passed each step of its way, ns on the run's clock (which every machine
/// keeps by its measured offset). The steps of the way between machines (`sent` to `parsed`)
/// are `None` between threads.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Stamps {
    /// The sender's engine had processed everything before the move's instant.
    pub paused: u64,
    /// Its migration (and, shipped, its packets' bytes) was out of the engine.
    pub extracted: u64,
    /// The sender's worker began encoding it for the connection to the receiver's.
    pub sent: Option<u64>,
    /// Its first bytes were in at the receiver's machine.
    pub read: Option<u64>,
    /// The receiver's machine had decoded it.
    pub parsed: Option<u64>,
}

/// Where a move's time went on the worker that waited longest for it, through the last
/// transfer to reach it: ns after the move's instant on the run's clock, those of the way
/// between machines `None` between threads. `resumed_ns` is the move's stall.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovePhases {
    /// How long before the instant the order reached the worker's engine (0: after it).
    pub ordered_ahead_ns: u64,
    /// (see `Stamps`)
    pub paused_ns: u64,
    /// (see `Stamps`)
    pub extracted_ns: u64,
    /// (see `Stamps`)
    pub sent_ns: Option<u64>,
    /// (see `Stamps`)
    pub read_ns: Option<u64>,
    /// (see `Stamps`)
    pub parsed_ns: Option<u64>,
    /// The receiver had taken it into its engine.
    pub installed_ns: u64,
    /// The receiver went on, every transfer in.
    pub resumed_ns: u64,
}

impl MovePhases {
    /// The phases of a move at `at`, ordered at `ordered`, whose last transfer came with
    /// `stamps`, was installed at `installed`, and after which the worker resumed at `resumed`.
    pub(crate) fn of(
        at: Instant,
        ordered: Instant,
        stamps: &Stamps,
        [installed, resumed]: [Instant; 2],
    ) -> MovePhases {
        let after = |ns: u64| ns.saturating_sub(at.as_nanos());
        MovePhases {
            ordered_ahead_ns: at.saturating_since(ordered).as_nanos(),
            paused_ns: after(stamps.paused),
            extracted_ns: after(stamps.extracted),
            sent_ns: stamps.sent.map(after),
            read_ns: stamps.read.map(after),
            parsed_ns: stamps.parsed.map(after),
            installed_ns: after(installed.as_nanos()),
            resumed_ns: after(resumed.as_nanos()),
        }
    }
}

/// What changed hands at one move, or at all moves together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moved {
    /// Pipes that changed owner (counted by the experiment, which knows both ownerships).
    pub pipes: u64,
    /// Pending exits and entries handed over with them (counted by the workers).
    pub packets: u64,
    /// Hosts whose reading (TUN device and ration) changed worker.
    pub hosts: u64,
    /// The longest a worker waited, from the move's instant, until it had every transfer.
    pub stall_ns: u64,
    /// Where the longest stall's time went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<MovePhases>,
}

impl Moved {
    /// Adds another worker's or move's: counts summed, the longest stall kept.
    pub(crate) fn add(&mut self, other: Moved) {
        self.pipes += other.pipes;
        self.packets += other.packets;
        self.hosts += other.hosts;
        if other.stall_ns >= self.stall_ns {
            self.stall_ns = other.stall_ns;
            self.phases = other.phases.or(self.phases);
        }
    }
}

/// Sums workers' move answers.
pub(crate) fn merge_moved(answers: impl IntoIterator<Item = Moved>) -> Moved {
    let mut all = Moved::default();
    for m in answers {
        all.add(m);
    }
    all
}
