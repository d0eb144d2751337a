//! The window loop of one worker of a partitioned virtual-time run whose workers do not share
//! memory (processes, machines): the windows of `workers::run`, with its two barriers replaced by
//! two rounds of messages through an `Exchange`: one agrees on the earliest pending event of the
//! whole run (each worker's `poll_at`, a lower bound, exactly as the threads publish it), the
//! other hands over what crosses. The windows, and so the report, are those of threads.

use crate::engine::Engine;
use crate::packet::Handoff;
use netloom_time::{Duration, Instant};

/// How a worker trades with the others. Every worker makes the same calls in the same order.
pub trait Exchange {
    /// Why a trade failed (a peer died, a datagram was lost).
    type Error;

    /// Sends `next`, this worker's earliest pending event in ns (`u64::MAX`: none), to every
    /// other worker before window `window`; returns the least of all workers', this one's
    /// included.
    fn least(&mut self, window: u64, next: u64) -> Result<u64, Self::Error>;

    /// Ends window `window`: sends `out[k]` to each other worker k and leaves every `out[k]`
    /// empty; puts what the others sent this worker into `into`.
    fn hand_over(
        &mut self,
        window: u64,
        out: &mut [Vec<Handoff>],
        into: &mut Vec<Handoff>,
    ) -> Result<(), Self::Error>;
}

/// Runs `engine`, worker `me` of `workers` of a partitioned run over [0, `end`), in windows of
/// `lookahead`; returns the number of windows (the same on every worker and as with threads).
pub fn run<E: Exchange>(
    engine: &mut Engine,
    exchange: &mut E,
    (me, workers): (usize, usize),
    end: Instant,
    lookahead: Duration,
) -> Result<u64, E::Error> {
    let mut out: Vec<Vec<Handoff>> = (0..workers).map(|_| Vec::new()).collect();
    let mut into = Vec::new();
    let mut windows = 0;
    engine.adapt_wheel();
    loop {
        let next = engine.poll_at().map_or(u64::MAX, |t| t.as_nanos());
        let earliest = exchange.least(windows, next)?;
        if earliest >= end.as_nanos() {
            return Ok(windows);
        }
        // Every event before the horizon is final: nothing another worker does in this
        // window can reach back before it.
        let horizon = earliest
            .saturating_add(lookahead.as_nanos())
            .min(end.as_nanos());
        engine.advance(Instant::from_nanos(horizon - 1));
        windows += 1;
        for (to, batch) in out.iter_mut().enumerate() {
            batch.extend(engine.take_handoffs(to));
        }
        // What this worker hands itself needs no message.
        into.append(&mut out[me]);
        exchange.hand_over(windows, &mut out, &mut into)?;
        for handoff in into.drain(..) {
            engine.accept(handoff);
        }
    }
}
