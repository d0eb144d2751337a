//! The runner of one engine: the whole topology in this thread, with its captures written as
//! the engine's taps see packets.

use crate::capture::SimCapture;
use crate::error::SimError;
use crate::plan::{Observer, SimPlan};
use crate::report::Ran;
use netloom_engine::sim;
use netloom_engine::tap::Tapped;
use netloom_engine::Engine;
use netloom_time::Instant;
use std::io::BufWriter;

/// Runs `plan` on one engine.
pub(crate) fn run(
    plan: &SimPlan,
    progress: Option<Observer<'_>>,
    every: std::time::Duration,
) -> Result<Ran, SimError> {
    let seed = plan.options.seed;
    let mut engine = Engine::with_routes(plan.topo.clone(), plan.routes.clone(), seed);
    if plan.counting() {
        engine.enable_transition_counts();
    }
    for flow in &plan.flows {
        engine.add_flow(Instant::ZERO, *flow, seed)?;
    }
    let mut files = Vec::with_capacity(plan.options.captures.len());
    for capture in &plan.options.captures {
        let failed = |error| SimError::Capture {
            path: capture.path.clone(),
            error,
        };
        let out = netloom_os::open_output(&capture.path)?.begin()?;
        let file = SimCapture::new(BufWriter::new(out), &mut engine, capture.pipes.clone())
            .map_err(failed)?;
        files.push((file, &capture.path));
    }
    let mut failed: Option<SimError> = None;
    let mut record = |t: &Tapped| {
        for (file, path) in &mut files {
            if let Err(error) = file.record(t) {
                failed.get_or_insert_with(|| SimError::Capture {
                    path: path.to_path_buf(),
                    error,
                });
            }
        }
    };
    // The progress observer, reborrowed for as long as the captures' recorder lives.
    let progress = progress.map(|p| p as &mut dyn FnMut(netloom_engine::sim::Progress));
    let mut options = plan.engine_options(progress, every);
    if !plan.options.captures.is_empty() {
        options.tapped = Some(&mut record);
    }
    let report = sim::run(&mut engine, options);
    if let Some(e) = failed {
        return Err(e);
    }
    for (file, path) in files {
        file.finish().into_inner().map_err(|e| SimError::Capture {
            path: path.to_path_buf(),
            error: e.into_error(),
        })?;
    }
    Ok(Ran {
        engine,
        report,
        workers: None,
        assignment: plan.assignment.clone(),
        repartition: None,
    })
}
