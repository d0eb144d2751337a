//! A virtual-time run cut into epochs: at each epoch's end the caller gets the packets that
//! epoch offered to each pipe and sent over each pair of consecutive pipes, which is what dynamic
//! repartitioning observes (ModelNet §5.4).

use crate::engine::Engine;
use crate::report::Report;
use netloom_time::{Duration, Instant};
use netloom_topo::PipeId;
use std::collections::BTreeMap;

/// The traffic of one epoch, [start, end).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpochCounts {
    /// The epoch's first instant.
    pub start: Instant,
    /// The instant after its last: the next epoch's start, or the run's end.
    pub end: Instant,
    /// `packets[p]`: packets offered to pipe p in the epoch.
    pub packets: Vec<u64>,
    /// (pipe, next pipe, packets that left the first for the second in the epoch), ascending,
    /// without zeros.
    pub transitions: Vec<(PipeId, PipeId, u64)>,
}

/// Turns an engine's running totals (`Engine::hop_counts`) into per-epoch counts.
#[derive(Default)]
pub struct EpochCounter {
    packets: Vec<u64>,
    transitions: BTreeMap<(PipeId, PipeId), u64>,
}

impl EpochCounter {
    /// The counts of `engine` since the last call (since it started, at the first), for the
    /// epoch [start, end). The engine must count transitions (`enable_transition_counts`).
    pub fn close(&mut self, engine: &Engine, start: Instant, end: Instant) -> EpochCounts {
        let (packets, transitions) = engine.hop_counts();
        self.close_totals(packets, transitions, start, end)
    }

    /// As `close`, from running totals in the form of `Engine::hop_counts` (summed over the
    /// workers of a partitioned run).
    pub fn close_totals(
        &mut self,
        packets: Vec<u64>,
        transitions: Vec<(PipeId, PipeId, u64)>,
        start: Instant,
        end: Instant,
    ) -> EpochCounts {
        self.packets.resize(packets.len(), 0);
        let epoch_packets = packets
            .iter()
            .zip(&self.packets)
            .map(|(now, before)| now - before)
            .collect();
        let epoch_transitions = transitions
            .iter()
            .filter_map(|&(p, q, n)| {
                let before = self.transitions.insert((p, q), n).unwrap_or(0);
                (n > before).then_some((p, q, n - before))
            })
            .collect();
        self.packets = packets;
        EpochCounts {
            start,
            end,
            packets: epoch_packets,
            transitions: epoch_transitions,
        }
    }
}

/// Runs `engine` over [0, duration) in epochs of `epoch` (the last one shorter if `duration` is
/// not a multiple), calling `on_epoch` with each epoch's counts at its end, and reports the
/// whole run as `sim::run` does (the same figures: the epochs change nothing in the run).
/// `wall_clock` measures the loop's wall time into the report.
pub fn run(
    engine: &mut Engine,
    duration: Duration,
    epoch: Duration,
    seed: u64,
    wall_clock: bool,
    on_epoch: &mut dyn FnMut(EpochCounts),
) -> Report {
    assert!(epoch.as_nanos() > 0, "an epoch lasts some time");
    engine.enable_transition_counts();
    engine.adapt_wheel();
    let started = std::time::Instant::now();
    let end = Instant::ZERO + duration;
    let mut counter = EpochCounter::default();
    let mut start = Instant::ZERO;
    while start < end {
        let stop = Instant::from_nanos(start.as_nanos().saturating_add(epoch.as_nanos())).min(end);
        // Everything before the epoch's end, nothing at it: it belongs to the next epoch.
        engine.advance(Instant::from_nanos(stop.as_nanos() - 1));
        on_epoch(counter.close(engine, start, stop));
        start = stop;
    }
    let wall = wall_clock.then(|| started.elapsed());
    Report::build(engine, seed, end, wall)
}
