//! Owns what a move handed over (`Moved`) and where its time went (`MovePhases`); not the move.
//!
//! Plain data, a leaf: a worker's `Answer::Moved`, summed over workers (`merge_moved`) and
//! moves, and the `Stamps` a hand-over collects on its way for the phases.

use netloom_time::Instant;
use serde::{Deserialize, Serialize};

/// When a hand-over passed each step of its way, ns on the run's clock (which every machine
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
/// hand-over to reach it: ns after the move's instant on the run's clock, those of the way
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
    /// The receiver went on, every hand-over in.
    pub resumed_ns: u64,
}

impl MovePhases {
    /// The phases of a move at `at`, ordered at `ordered`, whose last hand-over came with
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
    /// The longest a worker waited, from the move's instant, until it had every hand-over.
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
