//! The window loop of one worker of a partitioned virtual-time run whose workers do not share
//! memory (processes, machines): the windows of `workers::run`, with its barrier replaced by a
//! round of messages through an `Exchange`, one a window: each worker sends the others what it
//! hands them and the earliest time of anything it holds, hand-offs included
//! (`Engine::next_with_handoffs`, exactly as the threads publish it), and the least of those
//! starts the next window. The windows, and so the report, are those of threads.

use crate::engine::Engine;
use crate::packet::Handoff;
use netloom_time::{Duration, Instant};

/// How a worker trades with the others. Every worker makes the same calls in the same order.
pub trait Exchange {
    /// Why a trade failed (a peer died, a datagram was lost).
    type Error;

    /// Ends window `window` (0: the start, before the first): sends `out[k]` to each other
    /// worker k with `next`, this worker's earliest time in ns (`u64::MAX`: nothing), and
    /// leaves every `out[k]` empty; puts what the others sent this worker into `into`, and
    /// returns the least `next` of all workers, this one's included.
    fn trade(
        &mut self,
        window: u64,
        next: u64,
        out: &mut [Vec<Handoff>],
        into: &mut Vec<Handoff>,
    ) -> Result<u64, Self::Error>;
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
    let mut earliest = exchange.trade(windows, engine.next_with_handoffs(), &mut out, &mut into)?;
    loop {
        for handoff in into.drain(..) {
            engine.accept(handoff);
        }
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
        let next = engine.next_with_handoffs();
        for (to, batch) in out.iter_mut().enumerate() {
            batch.extend(engine.take_handoffs(to));
        }
        // What this worker hands itself needs no message.
        into.append(&mut out[me]);
        earliest = exchange.trade(windows, next, &mut out, &mut into)?;
    }
}
