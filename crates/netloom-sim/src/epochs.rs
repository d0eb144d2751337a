//! The runner of one engine in epochs: each epoch's traffic measures the static partition and
//! the dynamic one, which is then remade from it (repartitioning, docs/partition.md).

use crate::error::SimError;
use crate::plan::SimPlan;
use crate::report::EpochRow;
use netloom_engine::epoch::EpochCounts;
use netloom_engine::{Engine, Report};
use netloom_partition::{Assignment, Observation, PartitionError, Repartitioning};
use netloom_time::{Duration, Instant};
use netloom_topo::Topology;

/// Runs `plan` on one engine in epochs of `epoch`, starting from `initial`.
pub(crate) fn run(
    plan: &SimPlan,
    initial: &Assignment,
    epoch: Duration,
) -> Result<(Engine, Report, Vec<EpochRow>), SimError> {
    let seed = plan.options.seed;
    let mut engine = Engine::with_routes(plan.topo.clone(), plan.routes.clone(), seed);
    for flow in &plan.flows {
        engine.add_flow(Instant::ZERO, *flow, seed)?;
    }
    let mut dynamic = Repartitioning::new(initial.clone(), plan.partitioner(initial.cores));
    let mut rows = Vec::new();
    let mut failed = None;
    let report = netloom_engine::epoch::run(
        &mut engine,
        plan.options.duration,
        epoch,
        seed,
        plan.options.wall_clock,
        &mut |counts| match close_epoch(&mut dynamic, &plan.topo, counts) {
            Ok(row) => rows.push(row),
            Err(e) => {
                failed.get_or_insert(e);
            }
        },
    );
    if let Some(e) = failed {
        return Err(SimError::Repartition(e.into()));
    }
    Ok((engine, report, rows))
}

/// Measures both partitions on an epoch's counts and makes the next dynamic one.
pub(crate) fn close_epoch(
    dynamic: &mut Repartitioning,
    topo: &Topology,
    counts: EpochCounts,
) -> Result<EpochRow, PartitionError> {
    let observed = Observation {
        topology: topo.name.clone(),
        packets: counts.packets,
        transitions: counts.transitions,
    };
    Ok(EpochRow {
        start_ns: counts.start.as_nanos(),
        end_ns: counts.end.as_nanos(),
        epoch: dynamic.epoch(topo, &observed)?,
    })
}
