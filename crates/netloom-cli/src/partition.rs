//! `netloom partition FILE --cores K --method M`: assigns pipes to cores and prints the cut, the
//! balance, the predicted efficiency and each core's load; `--model` prints the capacity the
//! §5.1 model predicts per core count, `--placement` the CPU each core should run on here (MX).
//! Also what `sim` and `run` share of it: reading `--assignment`, `--payload`, and printing a
//! measured partition.

use crate::input::number_in;
use anyhow::{bail, Context, Result};
use clap::Args;
use netloom_engine::traffic::{self, parse_spec};
use netloom_os::format_cpu_list;
use netloom_partition::{
    Assignment, Capacity, CapacityModel, CoreLoad, Evaluation, FlowGraph, Measurement, Method,
    Observation, Options, Placement,
};
use netloom_route::Routes;
use netloom_topo::read::{read_text, SIDE_JSON};
use netloom_topo::units::Range;
use netloom_topo::Topology;
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct PartitionArgs {
    /// Topology file (.toml or .json, or a format docs/import.md lists).
    file: PathBuf,
    #[command(flatten)]
    input: crate::input::InputArgs,
    /// Number of cores to split the pipes between.
    #[arg(long)]
    cores: u32,
    /// Partitioner: random, kcluster or metis.
    #[arg(long, default_value = "metis")]
    method: Method,
    /// Flow graph weights: static (the paper's conservative all-to-all), uniform,
    /// observed:FILE (counts written by `sim --observe FILE`) or traffic:SPEC (a --traffic spec).
    #[arg(long, default_value = "static")]
    weights: String,
    /// Seed of the partitioner (and of a traffic:SPEC pattern).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// METIS: the most loaded core may carry this many times the mean load (1 to 100).
    #[arg(long, default_value_t = 1.03, value_parser = number_in(Range::closed(1.0, 100.0)))]
    imbalance: f64,
    /// Write the assignment (docs/partition.md) to this file.
    #[arg(short = 'o', long)]
    output: Option<PathBuf>,
    /// Also measure the partition against counts written by `sim --observe FILE`.
    #[arg(long)]
    measure: Option<PathBuf>,
    /// Print the §5.1 capacity model for 1 to --cores cores instead of per-core loads.
    #[arg(long)]
    model: bool,
    /// Model: CPU time to emulate one hop.
    #[arg(long, default_value = "0.5us")]
    hop_cost: String,
    /// Model: CPU time for a packet to enter a core (from an edge or from another core).
    #[arg(long, default_value = "8us")]
    entry_cost: String,
    /// Also suggest a CPU of this machine for each core: cores that exchange the most traffic
    /// on CPUs that share a cache (MX).
    #[arg(long)]
    placement: bool,
    /// Print the result as JSON (schema in docs/partition.md).
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct PartitionReport<'a> {
    topology: &'a str,
    pipes: usize,
    cores: u32,
    method: &'static str,
    weights: &'a str,
    seed: u64,
    /// Flow between cores under the weights, and as a share of all flow.
    cut: f64,
    cut_fraction: f64,
    imbalance: f64,
    efficiency: Option<f64>,
    per_core: &'a [CoreLoad],
    #[serde(skip_serializing_if = "Option::is_none")]
    measured: Option<Measurement>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<Vec<Capacity>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    placement: Option<Placement>,
}

pub fn run(args: PartitionArgs) -> Result<()> {
    let topo = args.input.load(&args.file)?;
    let graph = weigh(&topo, &args.weights, args.seed)
        .with_context(|| format!("{}: --weights {}", args.file.display(), args.weights))?;
    let options = |cores| Options {
        imbalance: args.imbalance,
        ..Options::new(args.method, cores, args.seed)
    };
    let assignment = netloom_sim::split::assign(&topo, &graph, &options(args.cores))?;
    let eval = Evaluation::of(&graph, &assignment);
    if let Some(path) = &args.output {
        netloom_os::write_output(path, (assignment.to_json() + "\n").as_bytes()).context("-o")?;
    }
    let measured = match &args.measure {
        Some(path) => Some(netloom_sim::split::measure(
            &topo,
            &read_observation(path)?,
            &assignment,
        )?),
        None => None,
    };
    let model = if args.model {
        let costs = CapacityModel {
            hop_cost_s: seconds(&args.hop_cost).context("--hop-cost")?,
            entry_cost_s: seconds(&args.entry_cost).context("--entry-cost")?,
        };
        let mut rows = Vec::new();
        for cores in 1..=args.cores {
            let a = netloom_sim::split::assign(&topo, &graph, &options(cores))?;
            rows.extend(costs.predict(&Evaluation::of(&graph, &a)));
        }
        Some(rows)
    } else {
        None
    };
    let placement = args
        .placement
        .then(|| Placement::of(&graph, &assignment, netloom_live::this_machine()));
    let report = PartitionReport {
        topology: &topo.name,
        pipes: topo.pipes.len(),
        cores: args.cores,
        method: args.method.name(),
        weights: &args.weights,
        seed: args.seed,
        cut: eval.cut,
        cut_fraction: if eval.total_flow > 0.0 {
            eval.cut / eval.total_flow
        } else {
            0.0
        },
        imbalance: eval.imbalance,
        efficiency: eval.efficiency,
        per_core: &eval.cores,
        measured,
        model,
        placement,
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        print_report(&report)?;
    }
    Ok(())
}

fn seconds(text: &str) -> Result<f64> {
    Ok(netloom_topo::units::parse_duration(text)?.as_secs_f64())
}

/// The flow graph of `topo` under a `--weights` value.
pub fn weigh(topo: &Topology, weights: &str, seed: u64) -> Result<FlowGraph> {
    FlowGraph::check_size(topo, weights == "static")?;
    Ok(match weights.split_once(':') {
        None if weights == "static" => FlowGraph::conservative(topo, &Routes::try_compute(topo)?),
        None if weights == "uniform" => FlowGraph::uniform(topo),
        Some(("observed", file)) => FlowGraph::observed(topo, &read_observation(Path::new(file))?)?,
        Some(("traffic", spec)) => {
            let spec = parse_spec(spec)?;
            let flows = traffic::expand(&spec.pattern, spec.kind, spec.cap, topo, seed)?;
            netloom_sim::split::traffic_graph(topo, &Routes::try_compute(topo)?, &flows)
        }
        _ => bail!("{weights:?}: expected static, uniform, observed:FILE or traffic:SPEC"),
    })
}

fn read_observation(path: &Path) -> Result<Observation> {
    let text = read_text(path, SIDE_JSON).with_context(|| path.display().to_string())?;
    Observation::from_json(&text).with_context(|| path.display().to_string())
}

/// The assignment `--assignment FILE` names.
pub fn read_assignment(topo: &Topology, path: &Path) -> Result<Assignment> {
    let text =
        read_text(path, SIDE_JSON).with_context(|| format!("--assignment {}", path.display()))?;
    Assignment::from_json(&text, topo).with_context(|| format!("--assignment {}", path.display()))
}

/// What crosses between workers, as `sim` and `run` take it (`--payload`).
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum PayloadArg {
    Cache,
    Ship,
}

impl From<PayloadArg> for netloom_engine::Payload {
    fn from(arg: PayloadArg) -> Self {
        match arg {
            PayloadArg::Cache => netloom_engine::Payload::Cache,
            PayloadArg::Ship => netloom_engine::Payload::Ship,
        }
    }
}

/// The text lines `sim` prints for a measured partition.
pub fn print_measurement(m: &Measurement) -> anyhow::Result<()> {
    match m.efficiency {
        Some(e) => out!("efficiency {:.4}", e)?,
        None => out!("efficiency -")?,
    }
    outln!(
        " over {} cores: {} edge packets, {} packets processed, {} cross-core hops",
        m.cores.len(),
        m.edge_packets,
        m.packets,
        m.cross_core_hops
    )?;
    outln!(
        "{:>6} {:>8} {:>14} {:>14} {:>14}",
        "core",
        "pipes",
        "hops",
        "edge packets",
        "packets"
    )?;
    for c in &m.cores {
        outln!(
            "{:>6} {:>8} {:>14} {:>14} {:>14}",
            c.core,
            c.pipes,
            c.hops,
            c.edge_packets,
            c.packets
        )?;
    }
    Ok(())
}

fn print_report(r: &PartitionReport) -> anyhow::Result<()> {
    outln!(
        "{}: {} pipes over {} cores by {} ({} weights, seed {})",
        r.topology,
        r.pipes,
        r.cores,
        r.method,
        r.weights,
        r.seed
    )?;
    outln!(
        "cut {:.6e} ({:.2}% of all flow), imbalance {:.3} (max/mean load), predicted efficiency {}",
        r.cut,
        r.cut_fraction * 100.0,
        r.imbalance,
        r.efficiency.map_or("-".to_string(), |e| format!("{e:.4}"))
    )?;
    if let Some(rows) = &r.model {
        outln!()?;
        outln!(
            "{:>6} {:>10} {:>10} {:>10} {:>14} {:>16}",
            "cores",
            "path len",
            "crossings",
            "efficiency",
            "balanced pps",
            "busiest-core pps"
        )?;
        for c in rows {
            outln!(
                "{:>6} {:>10.2} {:>10.3} {:>10.4} {:>14.0} {:>16.0}",
                c.cores,
                c.path_length,
                c.crossings,
                c.efficiency,
                c.balanced_pps,
                c.busiest_core_pps
            )?;
        }
    } else {
        outln!()?;
        outln!(
            "{:>6} {:>8} {:>14} {:>8} {:>14} {:>14}",
            "core",
            "pipes",
            "load",
            "load %",
            "edge",
            "processed"
        )?;
        let total: f64 = r
            .per_core
            .iter()
            .map(|c| c.load)
            .sum::<f64>()
            .max(f64::MIN_POSITIVE);
        for c in r.per_core {
            outln!(
                "{:>6} {:>8} {:>14.6e} {:>8.2} {:>14.6e} {:>14.6e}",
                c.core,
                c.pipes,
                c.load,
                c.load * 100.0 / total,
                c.edge_packets,
                c.packets
            )?;
        }
    }
    if let Some(p) = &r.placement {
        outln!()?;
        print_placement(p)?;
    }
    if let Some(m) = &r.measured {
        outln!()?;
        out!("measured: ")?;
        print_measurement(m)?;
    }
    Ok(())
}

/// The CPU per core, with each core's busiest partner and the cache their CPUs share.
fn print_placement(p: &Placement) -> anyhow::Result<()> {
    let caches: Vec<String> = p
        .machine
        .shared
        .iter()
        .map(|c| format!("L{} {}", c.level, format_cpu_list(&c.cpus)))
        .collect();
    let cpus = |n: usize| format!("{n} CPU{}", if n == 1 { "" } else { "s" });
    outln!(
        "placement on {} ({}); shared caches: {}",
        cpus(p.machine.cpus.len()),
        format_cpu_list(&p.machine.cpus),
        if caches.is_empty() {
            "none known".to_string()
        } else {
            caches.join(", ")
        }
    )?;
    if p.shared_cpus {
        outln!(
            "note: {} cores on {}: some CPUs run more than one core",
            p.cpu.len(),
            cpus(p.machine.cpus.len())
        )?;
    }
    outln!(
        "{:>6} {:>6} {:>16} {:>14} {:>8}",
        "core",
        "cpu",
        "busiest partner",
        "traffic",
        "cache"
    )?;
    for (c, &cpu) in p.cpu.iter().enumerate() {
        let exchange = |k: usize| p.traffic[c][k] + p.traffic[k][c];
        let partner = (0..p.cpu.len())
            .filter(|&k| k != c && exchange(k) > 0.0)
            .max_by(|&a, &b| exchange(a).total_cmp(&exchange(b)).then(b.cmp(&a)));
        match partner {
            Some(k) => {
                let cache = match p.machine.shared_level(cpu, p.cpu[k]) {
                    _ if cpu == p.cpu[k] => "same CPU".to_string(),
                    Some(level) => format!("L{level}"),
                    None => "none".to_string(),
                };
                outln!("{c:>6} {cpu:>6} {k:>16} {:>14.6e} {cache:>8}", exchange(k))?;
            }
            None => outln!("{c:>6} {cpu:>6} {:>16} {:>14} {:>8}", "-", "-", "-")?,
        }
    }
    Ok(())
}
