//! A worker's answers to the experiment's orders: a change applied to its engine at the time
//! the change was made, a snapshot of what it owns, and the traffic of an epoch. No I/O, no mailbox: the driver takes
//! the order from its inbox and sends back what these return.

use crate::accuracy::Accuracy;
use crate::message::{Change, ChangeKind, ChangeRefusal, HostCounters, PipeState, Snapshot};
use crate::traffic::{lateness_histogram, Traffic};
use hdrhistogram::Histogram;
use netloom_engine::report::PipeReport;
use netloom_engine::Engine;
use netloom_link::{Aqm, PipeCounters};
use netloom_time::Instant;
use netloom_topo::doc::LinkParams;
use netloom_topo::PipeId;

/// What `engine` carried since the last call (packets per pipe and per pair of consecutive
/// pipes), and the lateness of the releases `epoch_lateness` recorded meanwhile, which starts
/// afresh.
pub(crate) fn traffic(engine: &mut Engine, epoch_lateness: Option<&mut Histogram<u64>>) -> Traffic {
    let (packets, transitions) = engine.hop_counts();
    let lateness_ns = match epoch_lateness {
        Some(h) => std::mem::replace(h, lateness_histogram()),
        None => lateness_histogram(),
    };
    Traffic {
        packets,
        transitions,
        lateness_ns,
    }
}

/// Applies `change` to `engine`: everything due before the change's time happens first, then
/// the change, so the next packet meets it from that instant on (or from the engine's time, if
/// the engine is already past it). Every worker applies every change, to the pipes it owns and
/// to its replicas of the others', so all agree on whether it is valid. A run that
/// repartitions (`movable`) refuses fq_codel, whose flow queues cannot move between workers.
pub(crate) fn apply(
    engine: &mut Engine,
    change: &Change,
    movable: bool,
) -> Result<(), ChangeRefusal> {
    match &change.what {
        ChangeKind::Patch { pipes, patch } => {
            let configs = pipes
                .iter()
                .map(|&p| {
                    let config = patch.apply(engine.pipe(p).config())?;
                    // The one rule the patch cannot check: it does not see the pipe's data files.
                    let traced = engine.topology().pipes[p as usize].data.trace.is_some();
                    if traced && config.wireless.is_some() {
                        return Err(ChangeRefusal::WirelessTraced);
                    }
                    if movable && matches!(config.aqm, Aqm::FqCodel(_)) {
                        return Err(ChangeRefusal::FqCodelMoves);
                    }
                    Ok((p, config))
                })
                .collect::<Result<Vec<_>, _>>()?;
            engine.set_pipe_configs(change.at, &configs);
        }
        ChangeKind::LinkUp { link, up } => engine.set_link_up(change.at, *link, *up),
    }
    Ok(())
}

/// This worker's figures at `now`: the pipes it owns with their queues (and the counts on its
/// replicas of others'), the packets it read and wrote per host, its lateness, and the packets
/// inside its part of the network.
pub(crate) fn snapshot(
    engine: &mut Engine,
    now: Instant,
    accuracy: &Accuracy,
    hosts: &[HostCounters],
) -> Snapshot {
    let duration = now.saturating_since(Instant::ZERO);
    // A worker's replica of a pipe it does not own may hold counts: the exits it handled as a
    // packet's home (payloads cached), or, after a repartitioning, those of the worker that
    // handed the replica over in exchange for the pipe. `Snapshot::merge` adds them up.
    let pipes = (0..engine.topology().pipes.len() as PipeId)
        .map(|p| {
            let counted = *engine.pipe(p).counters() != PipeCounters::default();
            (engine.owns_pipe(p) || counted).then(|| {
                let report = PipeReport::of(engine, p, duration);
                let (queue_packets, queue_bytes) = engine.queue_len(p, engine.now());
                PipeState {
                    report,
                    queue_packets,
                    queue_bytes,
                    params: Some(LinkParams::from(engine.pipe(p).config())),
                }
            })
        })
        .collect();
    let counters = engine.counters();
    let mut handoffs = vec![(0, 0); engine.worker() + 1];
    handoffs[engine.worker()] = (counters.cross_core_hops, counters.cross_core_bytes);
    Snapshot {
        at: now,
        in_flight: engine.in_flight() as u64,
        accuracy: accuracy.clone(),
        hosts: hosts.to_vec(),
        pipes,
        cross_core_hops: counters.cross_core_hops,
        cross_core_bytes: counters.cross_core_bytes,
        handoffs,
    }
}
