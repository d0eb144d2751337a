//! `netloom sim FILE --traffic SPEC --duration D`: a virtual-time run with synthetic traffic,
//! printed as tables or as the JSON schema of docs/json.md.

use anyhow::{Context, Result};
use clap::Args;
use netloom_engine::sim::{self, Progress, SimOptions};
use netloom_engine::traffic::{self, parse_spec};
use netloom_engine::{Engine, Report};
use netloom_time::Duration;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

#[derive(Args)]
pub struct SimArgs {
    /// Topology file (.toml or .json, or a format docs/import.md lists).
    file: PathBuf,
    #[command(flatten)]
    input: crate::input::InputArgs,
    /// Traffic, as space-separated key=value words (see docs/traffic.md), e.g.
    /// "pattern=random-k k=4 source=aimd cap=3Mbit".
    #[arg(long)]
    traffic: String,
    /// Virtual time to simulate, e.g. 30s or 500ms.
    #[arg(long, default_value = "30s")]
    duration: String,
    /// Seed for every random choice (loss, jitter, traffic); the same seed gives the same run.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the report as JSON (schema in docs/json.md).
    #[arg(long)]
    json: bool,
    /// Leave wall-clock figures out of the report (null in JSON), so that runs with the same seed
    /// print byte-identical output.
    #[arg(long)]
    no_wall_clock: bool,
    /// How many pipes the tables show (busiest first); 0 for all.
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Measure efficiency for this pipe → core assignment (docs/partition.md).
    #[arg(long, conflicts_with = "cores")]
    assignment: Option<PathBuf>,
    /// Partition the pipes over this many cores (static weights) and measure efficiency.
    #[arg(long)]
    cores: Option<u32>,
    /// The partitioner for --cores: random, kcluster or metis (default).
    #[arg(long, requires = "cores")]
    method: Option<netloom_partition::Method>,
    /// Write the packet counts per pipe and per pair of consecutive pipes to FILE, for
    /// `partition --weights observed:FILE` and `--measure FILE`.
    #[arg(long)]
    observe: Option<PathBuf>,
}

/// The report with the optional `partition` section (docs/partition.md) after its own fields.
#[derive(serde::Serialize)]
struct ReportWithPartition<'a> {
    #[serde(flatten)]
    report: &'a Report,
    partition: &'a netloom_partition::Measurement,
}

pub fn run(args: SimArgs) -> Result<()> {
    let duration = netloom_topo::units::parse_duration(&args.duration).context("--duration")?;
    if duration.as_nanos() == 0 {
        anyhow::bail!(
            "--duration: {:?} simulates nothing; give a positive duration such as 30s",
            args.duration
        );
    }
    let topo = args.input.load(&args.file)?;
    let spec = parse_spec(&args.traffic).context("--traffic")?;
    let flows = traffic::expand(&spec.pattern, spec.kind, spec.cap, &topo, args.seed)
        .context("--traffic")?;
    let assignment = crate::partition::sim_assignment(
        &topo,
        args.assignment.as_deref(),
        args.cores,
        args.method,
        args.seed,
    )?;
    let mut engine = Engine::new(topo, args.seed);
    if assignment.is_some() || args.observe.is_some() {
        engine.enable_transition_counts();
    }
    for flow in flows {
        engine.add_flow(flow, args.seed)?;
    }
    let show_progress = !args.json && std::io::stderr().is_terminal();
    let mut progress = |p: Progress| {
        let done = p.sim_time.as_nanos() as f64 / p.end.as_nanos().max(1) as f64;
        let wall = p.wall.as_secs_f64().max(1e-9);
        let eta = wall * (1.0 - done) / done.max(1e-9);
        eprint!(
            "\r  simulated {} of {} ({:.0}%), {:.1} M packet-hops/s, about {:.0}s left   ",
            Duration(p.sim_time.as_nanos()),
            Duration(p.end.as_nanos()),
            done * 100.0,
            p.packet_hops as f64 / wall / 1e6,
            eta.ceil()
        );
        let _ = std::io::stderr().flush();
    };
    let report = sim::run(
        &mut engine,
        SimOptions {
            duration,
            seed: args.seed,
            wall_clock: !args.no_wall_clock,
            progress: if show_progress {
                Some(&mut progress)
            } else {
                None
            },
            progress_every: std::time::Duration::from_millis(250),
        },
    );
    if show_progress {
        eprint!("\r{:90}\r", "");
    }
    let observation = crate::partition::observation(&engine);
    if let Some(path) = &args.observe {
        std::fs::write(path, observation.to_json() + "\n")
            .with_context(|| format!("--observe {}", path.display()))?;
    }
    let measured = match &assignment {
        Some(a) => Some(crate::partition::measure(
            engine.topology(),
            &observation,
            a,
        )?),
        None => None,
    };
    match (args.json, &measured) {
        (true, None) => println!("{}", serde_json::to_string_pretty(&report)?),
        (true, Some(partition)) => println!(
            "{}",
            serde_json::to_string_pretty(&ReportWithPartition {
                report: &report,
                partition
            })?
        ),
        (false, _) => {
            print_tables(&report, args.top);
            if let Some(m) = &measured {
                println!();
                crate::partition::print_measurement(m);
            }
        }
    }
    Ok(())
}

fn mbit(bps: u64) -> String {
    format!("{:.3}", bps as f64 / 1e6)
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

fn print_tables(r: &Report, top: usize) {
    println!(
        "{}: {} of virtual time, seed {}",
        r.topology,
        Duration(r.duration_ns),
        r.seed
    );
    println!();
    println!(
        "{:<10} {:<10} {:<7} {:>12} {:>10} {:>10} {:>10} {:>10} {:>8}",
        "flow src", "dst", "kind", "Mbit/s", "p50 ms", "p99 ms", "sent", "lost", "loss %"
    );
    for f in &r.flows {
        let loss = if f.sent > 0 {
            f.lost as f64 * 100.0 / f.sent as f64
        } else {
            0.0
        };
        println!(
            "{:<10} {:<10} {:<7} {:>12} {:>10} {:>10} {:>10} {:>10} {:>8.3}",
            f.src,
            f.dst,
            f.kind,
            mbit(f.throughput_bps),
            ms(f.latency_ns.p50),
            ms(f.latency_ns.p99),
            f.sent,
            f.lost,
            loss
        );
    }
    println!();
    crate::table::print_pipes(&r.pipes, None, top);
    println!();
    let t = &r.totals;
    print!("{} packet-hops, {} events", t.packet_hops, t.events);
    if let (Some(w), Some(rate)) = (t.wall_seconds, t.packet_hops_per_second) {
        print!(", {w:.3} s wall, {:.2} M packet-hops/s", rate / 1e6);
    }
    println!();
    if t.unroutable > 0 {
        println!("{} packets had no route", t.unroutable);
    }
}
