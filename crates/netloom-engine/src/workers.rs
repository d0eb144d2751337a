//! The partitioned virtual-time driver: one thread per worker engine, all advancing in lock-step
//! windows as wide as the partition's lookahead (conservative, YAWNS-style). A packet handed to
//! another worker always exits at least a lookahead after the window's earliest event, so it
//! lands in a later window, and every worker sees all its events in the same order a single
//! engine would: the result does not depend on the partition.

use crate::barrier::{Aborted, SpinBarrier};
use crate::engine::{Engine, EngineError, HopCounting};
use crate::ownership::Ownership;
use crate::packet::Handoff;
use crate::repartition::{lock, Chooser, Decide, Epochs};
use crate::report::Report;
use crate::sim::{Progress, SimOptions};
use crate::traffic::FlowSpec;
use netloom_route::Routes;
use netloom_time::{Duration, Instant};
use netloom_topo::Topology;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// How the work was shared, for the report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct WorkerReport {
    /// Pipe traversals this worker completed.
    pub packet_hops: u64,
    /// Wall time spent waiting for the others at window ends.
    pub wait_seconds: Option<f64>,
}

/// Figures of a partitioned run beyond the single-engine report: part of the `workers` object of
/// `netloom sim --json` (docs/partition.md).
#[derive(Clone, Debug, serde::Serialize)]
pub struct ParallelReport {
    /// Worker threads, one engine each.
    pub workers: usize,
    /// The lookahead the run was given, in ns: how far workers may run apart, the least delay of
    /// a pipe whose exit another worker handles (`Ownership::lookahead`), the least of every
    /// partition the run ran with when it repartitioned; `None` (`null` in JSON) when no pipe
    /// crosses workers, so they never wait for each other.
    pub lookahead_ns: Option<u64>,
    /// Lock-step windows the run took.
    pub windows: u64,
    /// One entry per worker, worker 0 first.
    pub per_worker: Vec<WorkerReport>,
}

/// Windows between looks at the wall clock for progress: a window is a whole lookahead of
/// work, so far fewer than the single driver's events.
const PROGRESS_CHECK_EVERY: u64 = 64;

/// What the threads share.
///
/// One barrier ends each window. Before it, each worker puts its hand-offs in the mail and
/// publishes the earliest time of anything it holds, hand-offs included
/// (`Engine::next_with_handoffs`); after it, each takes its mail and starts the next window at
/// the least of those times. Both are kept twice, by the window's parity: a worker that
/// finishes the next window early writes the other copy, never the one a slower worker is
/// still reading. (Publishing each worker's `poll_at` only after it had taken its mail cost a
/// second barrier per window.)
struct Shared {
    barrier: SpinBarrier,
    /// `mail[parity][from * workers + to]`: what worker `from` handed worker `to` in a window
    /// of that parity, taken by `to` after the barrier that ends it (the lock is never
    /// contended). Each buffer keeps its capacity from window to window, where a fresh batch
    /// sent over a channel cost an allocation, a copy and a free on the other core each time.
    mail: [Vec<Mutex<Vec<Handoff>>>; 2],
    /// `next[parity][k]`: the earliest time of anything worker k holds at the start of the
    /// next window of that parity (a lower bound).
    next: [Vec<AtomicU64>; 2],
    /// Each worker's packet-hops so far, for progress.
    hops: Vec<AtomicU64>,
    end: Instant,
    /// How far workers may run apart; changes only at a repartitioning.
    lookahead: AtomicU64,
    /// Epoch boundaries, when the run repartitions (`run_repartitioned`).
    epochs: Option<Epochs>,
}

/// Calls the run off if a worker's thread unwinds, so the others stop waiting for it.
struct AbortOnPanic<'a>(&'a SpinBarrier);

impl Drop for AbortOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.abort();
        }
    }
}

/// One engine per worker of `ownership`, routed by `routes` (computed once for `topo`), each
/// with all of `flows` (a worker drives those whose source host it owns) and counting hops as
/// `counting` says, for the partition's efficiency: pairs for a run that repartitions or is
/// observed, crossings otherwise.
pub fn engines(
    topo: &Topology,
    routes: &Routes,
    seed: u64,
    ownership: &Arc<Ownership>,
    flows: &[FlowSpec],
    counting: HopCounting,
) -> Result<Vec<Engine>, EngineError> {
    Engine::partitioned_all(topo, routes, seed, ownership)
        .into_iter()
        .map(|engine| with_flows(engine, seed, flows, counting))
        .collect()
}

/// Worker `me`'s engine alone, as `engines` makes it, for a run whose other workers are
/// elsewhere (processes).
pub fn engine(
    topo: &Topology,
    routes: &Routes,
    seed: u64,
    ownership: &Arc<Ownership>,
    flows: &[FlowSpec],
    me: usize,
    counting: HopCounting,
) -> Result<Engine, EngineError> {
    with_flows(
        Engine::partitioned_with_routes(topo, routes, seed, ownership, me),
        seed,
        flows,
        counting,
    )
}

/// `engine` counting hops as `counting` says, with `flows` added.
fn with_flows(
    mut engine: Engine,
    seed: u64,
    flows: &[FlowSpec],
    counting: HopCounting,
) -> Result<Engine, EngineError> {
    engine.count_hops(counting);
    for flow in flows {
        engine.add_flow(Instant::ZERO, *flow, seed)?;
    }
    Ok(engine)
}

/// Runs the workers' engines (`engines[k]` is worker k of one partitioned run, each with the
/// same flows added) over [0, duration) and reports the whole run from the merged engine,
/// which it returns. `lookahead` is the partition's (`Ownership::lookahead`). `on_start(k)` runs
/// first on worker k's thread (to pin it to a CPU). Worker 0 runs on the calling thread, which
/// also calls `opts.progress`. Per-interval series (`opts.series`) are not recorded here: each
/// worker holds only part of the counters between windows; ask for them of one engine.
pub fn run(
    engines: Vec<Engine>,
    lookahead: Duration,
    opts: SimOptions<'_>,
    on_start: &(dyn Fn(usize) + Sync),
) -> (Engine, Report, ParallelReport) {
    run_epochs(engines, lookahead, opts, on_start, None)
}

/// As `run`, repartitioning every `epoch`: at each epoch's end `decide` is given the epoch's
/// counts (all workers' together) and may name a new ownership (the same workers), to which the
/// workers then move pipes, packets in flight and hosts (`Engine::migrate_out`) before going
/// on. The run's flows and pipes end as with one engine. `decide` is called on the calling
/// thread, for the last epoch too, with the merged engine's counts.
pub fn run_repartitioned(
    engines: Vec<Engine>,
    lookahead: Duration,
    opts: SimOptions<'_>,
    on_start: &(dyn Fn(usize) + Sync),
    epoch: Duration,
    decide: &mut Decide<'_>,
) -> (Engine, Report, ParallelReport) {
    let chooser = Chooser {
        counter: Default::default(),
        since: Instant::ZERO,
        decide,
        least_lookahead: lookahead.as_nanos(),
    };
    run_epochs(engines, lookahead, opts, on_start, Some((epoch, chooser)))
}

/// `run`, with epochs if given.
fn run_epochs(
    mut engines: Vec<Engine>,
    lookahead: Duration,
    mut opts: SimOptions<'_>,
    on_start: &(dyn Fn(usize) + Sync),
    epochs: Option<(Duration, Chooser<'_, '_>)>,
) -> (Engine, Report, ParallelReport) {
    assert!(!engines.is_empty(), "a run needs at least one worker");
    assert!(
        lookahead.as_nanos() > 0,
        "workers need a positive lookahead"
    );
    let n = engines.len();
    let shared = Shared {
        barrier: SpinBarrier::new(n),
        mail: [0, 1].map(|_| (0..n * n).map(|_| Mutex::new(Vec::new())).collect()),
        next: [0, 1].map(|_| (0..n).map(|_| AtomicU64::new(0)).collect()),
        hops: (0..n).map(|_| AtomicU64::new(0)).collect(),
        end: Instant::ZERO + opts.duration,
        lookahead: AtomicU64::new(lookahead.as_nanos()),
        epochs: epochs.as_ref().map(|(epoch, _)| Epochs::new(*epoch, n)),
    };
    let mut chooser = epochs.map(|(_, chooser)| chooser);
    let started = std::time::Instant::now();
    let wall_clock = opts.wall_clock;
    let first = engines.remove(0);
    let results = std::thread::scope(|s| {
        let others: Vec<_> = engines
            .into_iter()
            .enumerate()
            .map(|(i, engine)| {
                let shared = &shared;
                s.spawn(move || {
                    on_start(i + 1);
                    work(i + 1, engine, shared, wall_clock, &mut |_, _| {}, None)
                })
            })
            .collect();
        on_start(0);
        let mut last_progress = started;
        let mut report_progress = |sim_time: Instant, shared: &Shared| {
            let Some(cb) = opts.progress.as_mut() else {
                return;
            };
            let now = std::time::Instant::now();
            if now - last_progress >= opts.progress_every {
                last_progress = now;
                cb(Progress {
                    sim_time,
                    end: shared.end,
                    packet_hops: shared.hops.iter().map(|h| h.load(Ordering::Relaxed)).sum(),
                    wall: now - started,
                });
            }
        };
        let mine = work(
            0,
            first,
            &shared,
            wall_clock,
            &mut report_progress,
            chooser.as_mut(),
        );
        let mut results = vec![mine];
        for t in others {
            // A worker's panic is the run's: re-raise it here with its own message.
            results.push(t.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        results
    });
    // The loop's time, like a single run's: merging and reporting come after.
    let wall = wall_clock.then(|| started.elapsed());
    let windows = results[0].windows;
    let per_worker = results
        .iter()
        .map(|r| WorkerReport {
            packet_hops: r.engine.counters().packet_hops,
            wait_seconds: r.waited.map(|w| w.as_secs_f64()),
        })
        .collect();
    let mut results = results.into_iter();
    let mut merged = results.next().expect("worker 0").engine;
    for r in results {
        merged.absorb(r.engine);
    }
    // The partition decided on after the last epoch never runs.
    let least_lookahead = chooser
        .as_ref()
        .map_or(lookahead.as_nanos(), |c| c.least_lookahead);
    if let Some(chooser) = chooser.as_mut() {
        // The last epoch, from the last boundary to the end (the workers stop early, skipping
        // boundaries, only when nothing is left to do).
        let counts = chooser.counter.close(&merged, chooser.since, shared.end);
        (chooser.decide)(counts);
    }
    let report = Report::build(&merged, opts.seed, shared.end, wall);
    let parallel = ParallelReport {
        workers: n,
        lookahead_ns: Some(least_lookahead).filter(|&ns| ns != u64::MAX),
        windows,
        per_worker,
    };
    (merged, report, parallel)
}

/// One worker's share of the run.
struct WorkResult {
    engine: Engine,
    windows: u64,
    waited: Option<std::time::Duration>,
}

/// The window loop of worker `me`: take what others handed over, agree on the window, advance
/// to its end, hand over what crosses.
fn work(
    me: usize,
    mut engine: Engine,
    shared: &Shared,
    timed: bool,
    progress: &mut dyn FnMut(Instant, &Shared),
    mut chooser: Option<&mut Chooser<'_, '_>>,
) -> WorkResult {
    let _guard = AbortOnPanic(&shared.barrier);
    engine.adapt_wheel();
    let n = shared.hops.len();
    let mut windows = 0u64;
    let mut waited = std::time::Duration::ZERO;
    let mut wait = |shared: &Shared| -> Result<(), Aborted> {
        if !timed {
            return shared.barrier.wait();
        }
        let t = std::time::Instant::now();
        let r = shared.barrier.wait();
        waited += t.elapsed();
        r
    };
    let epoch = shared.epochs.as_ref().map_or(u64::MAX, |e| e.epoch);
    // The next epoch boundary, and whether the last window ended there.
    let (mut boundary, mut reached) = (epoch, false);
    let outcome = (|| -> Result<(), Aborted> {
        // The first window's start: nothing is handed over yet.
        shared.next[0][me].store(engine.next_with_handoffs(), Ordering::Relaxed);
        wait(shared)?;
        let mut parity = 0;
        loop {
            // The hand-offs of the window that just ended, to each its time.
            for from in 0..n {
                for handoff in lock(&shared.mail[1 - parity][from * n + me]).drain(..) {
                    engine.accept(handoff);
                }
            }
            if let (true, Some(epochs)) = (reached, &shared.epochs) {
                let span = (
                    Instant::from_nanos(boundary - epoch),
                    Instant::from_nanos(boundary),
                );
                let lookahead = &shared.lookahead;
                let chooser = chooser.as_deref_mut();
                // Moving pipes and packets between workers changes where events are, not the
                // earliest of them all, so the window's start published before stands.
                epochs.boundary(me, &mut engine, span, chooser, lookahead, &mut || {
                    wait(shared)
                })?;
                (boundary, reached) = (boundary.saturating_add(epoch), false);
            }
            let earliest = shared.next[parity]
                .iter()
                .map(|n| n.load(Ordering::Relaxed))
                .min()
                .expect("at least one worker");
            if earliest >= shared.end.as_nanos() {
                return Ok(());
            }
            // Every event before the horizon is final: nothing another worker does in this
            // window can reach back before it.
            let horizon = earliest
                .saturating_add(shared.lookahead.load(Ordering::Relaxed))
                .min(shared.end.as_nanos())
                .min(boundary);
            engine.advance(Instant::from_nanos(horizon - 1));
            // The run's end is no boundary: the caller closes the last epoch.
            reached = horizon == boundary && boundary < shared.end.as_nanos();
            shared.next[1 - parity][me].store(engine.next_with_handoffs(), Ordering::Relaxed);
            for to in 0..n {
                lock(&shared.mail[parity][me * n + to]).extend(engine.take_handoffs(to));
            }
            windows += 1;
            shared.hops[me].store(engine.counters().packet_hops, Ordering::Relaxed);
            if windows.is_multiple_of(PROGRESS_CHECK_EVERY) {
                progress(Instant::from_nanos(horizon), shared);
            }
            wait(shared)?;
            parity = 1 - parity;
        }
    })();
    // On `Err` another worker panicked: this one just stops, and joining that one re-raises it.
    let _ = outcome;
    WorkResult {
        engine,
        windows,
        waited: timed.then_some(waited),
    }
}
