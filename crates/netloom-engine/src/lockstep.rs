//! The window loop of one worker of a partitioned virtual-time run whose workers do not share
//! memory (processes, machines): the windows of `workers::run`, each ending in one round of
//! messages with every other worker through an `Exchange`, in place of a barrier and inboxes.
//!
//! After advancing a window, a worker sends each other worker its hand-offs with a lower bound
//! on everything it will do next: its earliest pending event or hand-off sent. Everything
//! pending anywhere is in one of those bounds, so the least of them, which every worker
//! computes alike, is the earliest event of the whole run, and the next window ends a
//! lookahead after it, as with threads.

use crate::engine::Engine;
use crate::packet::Handoff;
use netloom_time::{Duration, Instant};

/// How a worker trades with the others at each window's end.
pub trait Exchange {
    /// Why a trade failed (a peer died, a datagram was lost).
    type Error;

    /// Ends window `window` (0: the start, before any): sends `out[k]` to each other worker
    /// k, and `next`, this worker's lower bound; leaves every `out[k]` empty; puts what every
    /// other worker sent for this window into `into`, in worker order; returns the least
    /// `next` of all workers, this one's included.
    fn trade(
        &mut self,
        window: u64,
        out: &mut [Vec<Handoff>],
        next: u64,
        into: &mut Vec<Handoff>,
    ) -> Result<u64, Self::Error>;
}

/// Runs `engine`, one of `workers` of a partitioned run over [0, `end`), in windows of
/// `lookahead`; returns the number of windows (the same on every worker and as with threads).
pub fn run<E: Exchange>(
    engine: &mut Engine,
    exchange: &mut E,
    workers: usize,
    end: Instant,
    lookahead: Duration,
) -> Result<u64, E::Error> {
    let mut out: Vec<Vec<Handoff>> = (0..workers).map(|_| Vec::new()).collect();
    let mut into = Vec::new();
    let first = engine.poll_at().map_or(u64::MAX, |t| t.as_nanos());
    let mut earliest = exchange.trade(0, &mut out, first, &mut into)?;
    let mut windows = 0;
    while earliest < end.as_nanos() {
        // Every event before the horizon is final: nothing another worker does in this
        // window can reach back before it.
        let horizon = earliest
            .saturating_add(lookahead.as_nanos())
            .min(end.as_nanos());
        engine.advance(Instant::from_nanos(horizon - 1));
        windows += 1;
        let mut next = engine.poll_at().map_or(u64::MAX, |t| t.as_nanos());
        for (to, batch) in out.iter_mut().enumerate() {
            batch.extend(engine.take_handoffs(to));
            next = batch.iter().map(|h| h.at().as_nanos()).fold(next, u64::min);
        }
        earliest = exchange.trade(windows, &mut out, next, &mut into)?;
        for handoff in into.drain(..) {
            engine.accept(handoff);
        }
    }
    Ok(windows)
}
