//! netloom-bench: measures the engine's speed, its memory, and load-and-route time, and prints a
//! Markdown report (or JSON) headed by the machine and the exact command.

mod alloc;
mod load;
mod machine;
mod memory;
mod report;
mod sim;
mod workers;

use anyhow::Result;
use clap::{Parser, Subcommand};
use serde::Serialize;

#[global_allocator]
static HEAP: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

#[derive(Parser)]
#[command(
    name = "netloom-bench",
    about = "netloom's benchmarks, as a Markdown report"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Runs of each timed measurement (sim, load); the report gives median, min and max.
    #[arg(long, global = true, default_value_t = 3,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    repeat: usize,
    /// Print the report as JSON instead of Markdown.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Packet-hops per second of the sim engine on one core (tree-mesh h5, inet, dumbbell).
    Sim(sim::SimArgs),
    /// Heap bytes per pipe, per routing-table entry and per packet in flight.
    Memory,
    /// Time to generate, write, load and route a ~100,000-link inet.
    Load(load::LoadArgs),
    /// Packet-hops per second of the partitioned engine, 1 worker against N, per partitioner.
    Workers(workers::WorkersArgs),
    /// All of the above in one report.
    All {
        #[command(flatten)]
        sim: sim::SimArgs,
        #[command(flatten)]
        load: load::LoadArgs,
    },
}

#[derive(Serialize)]
struct Report {
    machine: machine::Machine,
    command: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    sim: Option<Vec<sim::SimRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory: Option<memory::MemoryReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    load: Option<load::LoadReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    workers: Option<Vec<workers::WorkersRow>>,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let command = std::iter::once("netloom-bench".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ");
    let (sim_args, memory, load_args, workers_args) = match cli.command {
        Command::Sim(s) => (Some(s), false, None, None),
        Command::Memory => (None, true, None, None),
        Command::Load(l) => (None, false, Some(l), None),
        Command::Workers(w) => (None, false, None, Some(w)),
        Command::All { sim, load } => (Some(sim), true, Some(load), None),
    };
    let report = Report {
        machine: machine::detect(),
        command,
        sim: sim_args.map(|a| sim::run(a, cli.repeat)).transpose()?,
        memory: memory.then(memory::run).transpose()?,
        load: load_args.map(|a| load::run(a, cli.repeat)).transpose()?,
        workers: workers_args
            .map(|a| workers::run(a, cli.repeat))
            .transpose()?,
    };
    if cli.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!("# netloom benchmark report\n");
    println!("{}", report.machine.markdown(&report.command));
    if let Some(rows) = &report.sim {
        println!("{}", sim::markdown(rows, cli.repeat));
    }
    if let Some(m) = &report.memory {
        println!("{}", memory::markdown(m));
    }
    if let Some(l) = &report.load {
        println!("{}", load::markdown(l, cli.repeat));
    }
    if let (Some(rows), Some(args)) = (&report.workers, workers_args) {
        println!("{}", workers::markdown(rows, args, cli.repeat));
    }
    Ok(())
}
