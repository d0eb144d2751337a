//! `workers`: packet-hops per second of the partitioned engine, 1 worker against N, for each
//! partitioner, with the efficiency and the cross-core traffic each partition gives.

use crate::report::{table, Spread};
use anyhow::Result;
use clap::Args;
use netloom_engine::sim;
use netloom_engine::traffic::{expand, parse_spec};
use netloom_engine::workload::{cases, timed, Case, SEED};
use netloom_engine::{workers, HopCounting, Ownership, Payload};
use netloom_partition::{partition, Evaluation, FlowGraph, Method, Options};
use netloom_route::Routes;
use netloom_time::Duration;
use serde::Serialize;
use std::sync::Arc;

#[derive(Args, Clone, Copy, Debug)]
pub struct WorkersArgs {
    /// Virtual seconds each run covers.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Workers of the partitioned runs.
    #[arg(long, default_value_t = 2)]
    pub workers: usize,
}

/// One (workload, partitioner) pair against one worker on the same workload.
#[derive(Debug, Serialize)]
pub struct WorkersRow {
    pub workload: String,
    pub method: String,
    pub workers: usize,
    pub packet_hops: u64,
    /// One worker, measured alternately with the partitioned runs.
    pub single_packet_hops_per_second: Spread,
    pub packet_hops_per_second: Spread,
    /// Median partitioned rate over median single rate.
    pub speedup: f64,
    /// Of the run's own hop counts under the assignment run (paper §3).
    pub efficiency: Option<f64>,
    pub cross_core_hops: u64,
    pub lookahead_ns: Option<u64>,
    pub windows: u64,
    /// Median over runs of the workers' mean share of wall time spent waiting at window ends.
    pub wait_fraction: f64,
}

pub fn run(args: WorkersArgs, repeat: usize) -> Result<Vec<WorkersRow>> {
    let mut rows = Vec::new();
    for case in cases()?.iter().filter(|c| c.name != "dumbbell") {
        for method in [Method::Random, Method::KCluster, Method::Metis] {
            rows.push(measure(case, method, args, repeat)?);
        }
    }
    Ok(rows)
}

fn measure(case: &Case, method: Method, args: WorkersArgs, repeat: usize) -> Result<WorkersRow> {
    let routes = Routes::compute(&case.topo);
    let graph = FlowGraph::conservative(&case.topo, &routes);
    let assignment = partition(&graph, &Options::new(method, args.workers as u32, SEED))?;
    let ownership = Arc::new(Ownership::new(
        &case.topo,
        &assignment.pipes,
        args.workers,
        Payload::Cache,
    )?);
    let spec = parse_spec(case.traffic)?;
    let flows = expand(&spec.pattern, spec.kind, spec.cap, &case.topo, SEED)?;
    let (mut single, mut split, mut waits) = (Vec::new(), Vec::new(), Vec::new());
    let mut last = None;
    // Alternate the two so that drift in the machine's speed hits both alike.
    for i in 0..repeat {
        let mut engine = case.engine()?;
        let report = sim::run(&mut engine, timed(args.seconds));
        single.push(report.totals.packet_hops_per_second.unwrap_or(f64::NAN));
        // As `sim --workers` counts: what measures the run's partition, no pairs.
        let engines = workers::engines(
            &case.topo,
            &routes,
            SEED,
            &ownership,
            &flows,
            HopCounting::Crossings,
        )?;
        let (merged, report, parallel) =
            workers::run(engines, ownership.lookahead(), timed(args.seconds), &|_| {});
        let wall = report.totals.wall_seconds.unwrap_or(f64::NAN);
        let rate = report.totals.packet_hops_per_second.unwrap_or(f64::NAN);
        split.push(rate);
        let waited: f64 = parallel
            .per_worker
            .iter()
            .map(|w| w.wait_seconds.unwrap_or(0.0))
            .sum();
        waits.push(waited / args.workers as f64 / wall);
        eprintln!(
            "workers {} {} run {}/{repeat}: 1 worker {:.2}, {} workers {:.2} M packet-hops/s",
            case.name,
            method.name(),
            i + 1,
            single[i] / 1e6,
            args.workers,
            rate / 1e6
        );
        last = Some((merged, parallel));
    }
    let (merged, parallel) = last.expect("at least one run");
    let (packets, arrived, crossed) = merged.crossings().expect("the workers counted crossings");
    let run_assignment = netloom_partition::Assignment {
        pipes: ownership.assignment(),
        ..assignment
    };
    let evaluation = Evaluation::of_crossings(&run_assignment, &packets, &arrived, &crossed);
    let measured = netloom_partition::Measurement::of(&evaluation);
    let (single, split) = (Spread::of(&single), Spread::of(&split));
    Ok(WorkersRow {
        workload: case.name.to_string(),
        method: method.name().to_string(),
        workers: args.workers,
        packet_hops: merged.counters().packet_hops,
        speedup: split.median / single.median,
        single_packet_hops_per_second: single,
        packet_hops_per_second: split,
        efficiency: measured.efficiency,
        cross_core_hops: merged.counters().cross_core_hops,
        lookahead_ns: parallel.lookahead_ns,
        windows: parallel.windows,
        wait_fraction: Spread::of(&waits).median,
    })
}

pub fn markdown(rows: &[WorkersRow], args: WorkersArgs, repeat: usize) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.workload.clone(),
                r.method.clone(),
                r.efficiency.map_or("-".into(), |e| format!("{e:.3}")),
                r.cross_core_hops.to_string(),
                format!(
                    "{} / {}",
                    r.lookahead_ns
                        .map_or("none".into(), |ns| Duration(ns).to_string()),
                    r.windows
                ),
                r.single_packet_hops_per_second.show(1e6, 2),
                r.packet_hops_per_second.show(1e6, 2),
                format!("{:.2}", r.speedup),
                format!("{:.0} %", r.wait_fraction * 100.0),
            ]
        })
        .collect();
    format!(
        "## workers: the partitioned engine, 1 worker against {}\n\n{} s of virtual time per run, \
         {repeat} runs of each, alternating; the paper's workload; seed {SEED}; rates are median \
         (min–max). Every partitioned run gives the single engine's per-flow results.\n\n{}",
        args.workers,
        args.seconds,
        table(
            &[
                "workload",
                "partitioner",
                "efficiency",
                "cross-core hops",
                "lookahead / windows",
                "1 worker, M packet-hops/s",
                &format!("{} workers, M packet-hops/s", args.workers),
                "speedup",
                "waiting",
            ],
            &body,
        )
    )
}
