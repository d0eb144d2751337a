//! The virtual-time driver: jumps the engine from one deadline to the next, as fast as it can.

use crate::engine::Engine;
use crate::report::Report;
use crate::series::Recorder;
use crate::tap::Tapped;
use netloom_time::{Duration, Instant};

/// How far a virtual-time run has got, for progress display.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Virtual time reached: the instant being processed (in a partitioned run, the end of the
    /// window just done).
    pub sim_time: Instant,
    /// Virtual time at which the run stops: zero plus `SimOptions::duration`.
    pub end: Instant,
    /// Pipe traversals completed so far, all workers together.
    pub packet_hops: u64,
    /// Wall-clock time since the run's loop started.
    pub wall: std::time::Duration,
}

/// Options of a virtual-time run.
pub struct SimOptions<'a> {
    /// Virtual time to simulate: the run covers [0, duration).
    pub duration: Duration,
    /// The seed to record in the report. It seeds nothing: the engine and its flows drew their
    /// seeds when they were built, so pass the one they were built with.
    pub seed: u64,
    /// Measure wall-clock time into the report (off for byte-identical output).
    pub wall_clock: bool,
    /// Called about every `progress_every` of wall time.
    pub progress: Option<&'a mut dyn FnMut(Progress)>,
    /// Least wall time between two `progress` calls. The clock is read only every 4096
    /// events (64 windows in a partitioned run), so calls can come further apart.
    pub progress_every: std::time::Duration,
    /// Record per-interval figures of this length (not zero) into the report's `series`.
    pub series: Option<Duration>,
    /// Given what tapped pipes saw (`Engine::set_tap`) after every step, in order.
    pub tapped: Option<&'a mut dyn FnMut(&Tapped)>,
}

impl SimOptions<'_> {
    /// A run of `duration` recorded with `seed` that reads no wall clock (its report is the same
    /// byte for byte every time), calls nothing back and records no series.
    pub fn new(duration: Duration, seed: u64) -> Self {
        SimOptions {
            duration,
            seed,
            wall_clock: false,
            progress: None,
            progress_every: std::time::Duration::from_secs(1),
            series: None,
            tapped: None,
        }
    }
}

/// How many events to process between looks at the wall clock (and at the taps).
const EVENTS_PER_STEP: u64 = 4096;

/// Runs `engine` in virtual time over [0, duration) and reports. Events due exactly at the end
/// belong to the next interval and are not processed.
pub fn run(engine: &mut Engine, mut opts: SimOptions<'_>) -> Report {
    let end = Instant::ZERO + opts.duration;
    engine.adapt_wheel();
    let started = std::time::Instant::now();
    let mut last_progress = started;
    let mut recorder = opts.series.map(|interval| Recorder::new(engine, interval));
    // Without series, never due: the loop pays one comparison per timestamp.
    let mut series_due = recorder.as_ref().map_or(Instant::MAX, Recorder::due);
    while let Some(t) = engine.poll_at() {
        if t >= end {
            break;
        }
        if t >= series_due {
            if let Some(r) = recorder.as_mut() {
                series_due = r.close(engine, t, end);
            }
        }
        // Events up to the next interval's start or the end, a step of them at a time: one
        // call for thousands of events, where a call per instant cost a look at the next event
        // before and after each (7 % of inet's instructions; docs/performance.md).
        let until = Instant(series_due.min(end).0 - 1);
        engine.advance_by(until, EVENTS_PER_STEP);
        if let Some(tapped) = opts.tapped.as_mut() {
            for t in engine.drain_tapped() {
                tapped(&t);
            }
        }
        if let Some(cb) = opts.progress.as_mut() {
            let now = std::time::Instant::now();
            if now - last_progress >= opts.progress_every {
                last_progress = now;
                cb(Progress {
                    sim_time: engine.now(),
                    end,
                    packet_hops: engine.counters().packet_hops,
                    wall: now - started,
                });
            }
        }
    }
    let wall = opts.wall_clock.then(|| started.elapsed());
    let series = recorder.map(|mut r| {
        r.close(engine, end, end);
        r.finish()
    });
    Report {
        series,
        ..Report::build(engine, opts.seed, end, wall)
    }
}
