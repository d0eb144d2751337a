//! The runner of worker threads: one engine per core of the partition, in lock-step windows of
//! the lookahead, repartitioned every epoch if asked; worker processes branch off here.

use crate::epochs::close_epoch;
use crate::error::SimError;
use crate::plan::SimPlan;
use crate::report::Ran;
use crate::report::WorkersReport;
use netloom_engine::sim::SimOptions;
use netloom_engine::workers::{self, ParallelReport};
use netloom_engine::{Engine, Ownership, OwnershipError};
use netloom_partition::{Assignment, Repartitioning};
use std::sync::Arc;

/// Runs `plan` over its workers, each engine owning the pipes of one core of `assignment`
/// (with every flow: a worker drives only those whose source host it owns).
pub(crate) fn run(
    plan: &SimPlan,
    assignment: &Assignment,
    options: SimOptions<'_>,
) -> Result<Ran, SimError> {
    let n = plan.workers as usize;
    let seed = plan.options.seed;
    let ownership = Arc::new(Ownership::new(
        &plan.topo,
        &assignment.pipes,
        n,
        plan.options.payload,
    )?);
    // Measured as it runs: host pipes moved to their host's worker.
    let run_assignment = Assignment {
        pipes: ownership.assignment(),
        ..assignment.clone()
    };
    if plan.options.processes.is_some() {
        let (engine, report, parallel) =
            crate::processes::run(plan, assignment, &ownership, options)?;
        return Ok(Ran {
            workers: Some(workers_report(&engine, &ownership, parallel, None)),
            engine,
            report,
            assignment: Some(run_assignment),
            repartition: None,
        });
    }
    let cpus = plan.options.pin.then(|| {
        let placement = crate::split::worker_placement(plan.graph(), &run_assignment);
        if placement.shared_cpus {
            eprintln!(
                "netloom: {} workers on {} CPUs: some CPUs run two",
                run_assignment.cores,
                placement.machine.cpus.len()
            );
        }
        placement.cpu
    });
    let engines = workers::engines(
        &plan.topo,
        &plan.routes,
        seed,
        &ownership,
        &plan.flows,
        plan.options.hop_counting(),
    )?;
    let pin = |k: usize| {
        if let Some(cpus) = &cpus {
            // A worker that cannot be pinned still runs correctly; say so once per worker.
            if let Err(e) = netloom_os::pin_current_thread(cpus[k]) {
                eprintln!("netloom: worker {k}: {e}");
            }
        }
    };
    let mut repartition = None;
    let (engine, report, parallel) = match plan.options.repartition {
        None => workers::run(engines, ownership.lookahead(), options, &pin),
        Some(epoch) => {
            let partitioner = plan.partitioner(assignment.cores);
            let mut dynamic = Repartitioning::new(run_assignment.clone(), partitioner);
            let (mut epochs, mut failed) = (Vec::new(), None);
            let mut running = run_assignment.pipes.clone();
            let mut decide = |counts| {
                let row = match close_epoch(&mut dynamic, &plan.topo, counts) {
                    Ok(row) => row,
                    Err(e) => {
                        failed.get_or_insert(SimError::Repartition(e.into()));
                        return None;
                    }
                };
                epochs.push(row);
                let next = Ownership::new(
                    &plan.topo,
                    &dynamic.current().pipes,
                    n,
                    plan.options.payload,
                );
                match next {
                    Ok(next) => {
                        // Measure what runs: host pipes kept with their host.
                        running = next.assignment();
                        dynamic.set_current(running.clone());
                        Some(Arc::new(next))
                    }
                    // A partition that crosses a pipe of no delay cannot run in windows: the
                    // workers keep the one they have.
                    Err(OwnershipError::NoLookahead { .. }) => {
                        dynamic.set_current(running.clone());
                        None
                    }
                    Err(e) => {
                        failed.get_or_insert(SimError::Repartition(e.into()));
                        None
                    }
                }
            };
            let run = workers::run_repartitioned(
                engines,
                ownership.lookahead(),
                options,
                &pin,
                epoch,
                &mut decide,
            );
            if let Some(e) = failed {
                return Err(e);
            }
            repartition = Some(plan.repartition_report(assignment.cores, epoch, epochs));
            run
        }
    };
    Ok(Ran {
        workers: Some(workers_report(&engine, &ownership, parallel, cpus)),
        engine,
        report,
        assignment: Some(run_assignment),
        repartition,
    })
}

/// The `workers` section of a run over workers, from its merged engine.
fn workers_report(
    merged: &Engine,
    ownership: &Ownership,
    parallel: ParallelReport,
    cpus: Option<Vec<usize>>,
) -> WorkersReport {
    let c = merged.counters();
    WorkersReport {
        parallel,
        payload: ownership.payload().name(),
        cross_core_hops: c.cross_core_hops,
        cross_core_bytes: c.cross_core_bytes,
        moved_pipes: ownership.moved(),
        cpus,
    }
}
