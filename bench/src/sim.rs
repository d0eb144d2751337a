//! `sim`: packet-hops per second of the virtual-time engine on one core, per workload, over repeats.

use crate::report::{table, Spread};
use anyhow::Result;
use clap::Args;
use netloom_engine::sim;
use netloom_engine::workload::{cases, timed, Case, SEED};
use serde::Serialize;

#[derive(Args, Clone, Copy, Debug)]
pub struct SimArgs {
    /// Virtual seconds each sim run covers.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
}

/// One workload's figures; counts are per run (the same in every repeat), rates over repeats.
#[derive(Debug, Serialize)]
pub struct SimRow {
    pub workload: String,
    pub traffic: String,
    pub hosts: usize,
    pub links: usize,
    pub flows: usize,
    pub virtual_seconds: u64,
    pub packet_hops: u64,
    pub events: u64,
    pub max_in_flight: u64,
    pub wall_seconds: Spread,
    pub packet_hops_per_second: Spread,
    pub events_per_second: Spread,
    /// Virtual seconds simulated per wall-clock second.
    pub virtual_per_wall: Spread,
}

/// Runs every workload `repeat` times.
pub fn run(args: SimArgs, repeat: usize) -> Result<Vec<SimRow>> {
    cases()?
        .iter()
        .map(|case| measure(case, args.seconds, repeat))
        .collect()
}

fn measure(case: &Case, seconds: u64, repeat: usize) -> Result<SimRow> {
    let mut walls = Vec::new();
    let mut last = None;
    for i in 0..repeat {
        let mut engine = case.engine()?;
        let report = sim::run(&mut engine, timed(seconds));
        let wall = report.totals.wall_seconds.unwrap_or(f64::NAN).max(1e-9);
        eprintln!(
            "sim {} run {}/{}: {:.2} M packet-hops/s",
            case.name,
            i + 1,
            repeat,
            report.totals.packet_hops as f64 / wall / 1e6
        );
        walls.push(wall);
        last = Some((report, engine.flows().count()));
    }
    let (report, flows) = last.expect("at least one run");
    let t = &report.totals;
    let per_wall = |x: f64| Spread::of(&walls.iter().map(|w| x / w).collect::<Vec<_>>());
    Ok(SimRow {
        workload: case.name.to_string(),
        traffic: case.traffic.to_string(),
        hosts: case.topo.hosts.len(),
        links: case.topo.links.len(),
        flows,
        virtual_seconds: seconds,
        packet_hops: t.packet_hops,
        events: t.events,
        max_in_flight: t.max_in_flight,
        wall_seconds: Spread::of(&walls),
        packet_hops_per_second: per_wall(t.packet_hops as f64),
        events_per_second: per_wall(t.events as f64),
        virtual_per_wall: per_wall(seconds as f64),
    })
}

/// The rows as a Markdown table: rates as median (min–max) over the repeats.
pub fn markdown(rows: &[SimRow], repeat: usize) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.workload.clone(),
                format!("`{}`", r.traffic),
                format!("{} / {} / {}", r.hosts, r.links, r.flows),
                r.packet_hops.to_string(),
                r.packet_hops_per_second.show(1e6, 2),
                r.events_per_second.show(1e6, 2),
                r.max_in_flight.to_string(),
                r.virtual_per_wall.show(1.0, 2),
                r.wall_seconds.show(1.0, 3),
            ]
        })
        .collect();
    let seconds = rows.first().map_or(0, |r| r.virtual_seconds);
    format!(
        "## sim: engine speed, one core\n\n{seconds} s of virtual time per run, {repeat} runs per \
         workload, seed {SEED}; rates are median (min–max).\n\n{}",
        table(
            &[
                "workload",
                "traffic",
                "hosts / links / flows",
                "packet-hops per run",
                "M packet-hops/s",
                "M events/s",
                "max in flight",
                "virtual : wall",
                "wall s",
            ],
            &body,
        )
    )
}
