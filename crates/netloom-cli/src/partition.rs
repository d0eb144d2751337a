//! `netloom partition FILE --cores K --method M`: assigns pipes to cores and prints the cut, the
//! balance, the predicted efficiency and each core's load; `--model` prints the capacity the
//! §5.1 model predicts per core count, `--placement` the CPU each core should run on here (MX).
//! Also the glue `sim` uses to measure an assignment.

use crate::input::number_in;
use anyhow::{bail, Context, Result};
use clap::Args;
use netloom_engine::traffic::{self, parse_spec, FlowSpec, SourceKind, HEADER_BYTES};
use netloom_engine::Engine;
use netloom_os::format_cpu_list;
use netloom_partition::{
    cross_core_traffic, partition, place, Assignment, CacheTopology, Capacity, CapacityModel,
    CoreLoad, Demand, Evaluation, FlowGraph, Measurement, Method, Observation, Options,
    SharedCache,
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

/// `--placement`: the CPU suggested for each core on this machine, and what it is based on.
#[derive(Serialize)]
struct Placement {
    /// The CPUs this process may run on and the caches two or more of them share.
    machine: CacheTopology,
    /// `cpu[c]`: the CPU for core c.
    cpu: Vec<usize>,
    /// More cores than CPUs, so some CPUs run more than one core.
    shared_cpus: bool,
    /// `traffic[i][j]`: flow from core i's pipes into core j's, under the weights.
    traffic: Vec<Vec<f64>>,
}

impl Placement {
    fn of(graph: &FlowGraph, assignment: &Assignment, machine: CacheTopology) -> Placement {
        let cores = assignment.cores as usize;
        let traffic = cross_core_traffic(graph, assignment);
        Placement {
            cpu: place(cores, &traffic, &machine),
            shared_cpus: cores > machine.cpus.len(),
            machine,
            traffic,
        }
    }
}

pub fn run(args: PartitionArgs) -> Result<()> {
    let topo = args.input.load(&args.file)?;
    let graph = weigh(&topo, &args.weights, args.seed)
        .with_context(|| format!("{}: --weights {}", args.file.display(), args.weights))?;
    let options = |cores| Options {
        imbalance: args.imbalance,
        ..Options::new(args.method, cores, args.seed)
    };
    let assignment = assign(&topo, &graph, &options(args.cores))?;
    let eval = Evaluation::of(&graph, &assignment);
    if let Some(path) = &args.output {
        std::fs::write(path, assignment.to_json() + "\n")
            .with_context(|| format!("-o {}", path.display()))?;
    }
    let measured = match &args.measure {
        Some(path) => Some(measure(&topo, &read_observation(path)?, &assignment)?),
        None => None,
    };
    let model = if args.model {
        let costs = CapacityModel {
            hop_cost_s: seconds(&args.hop_cost).context("--hop-cost")?,
            entry_cost_s: seconds(&args.entry_cost).context("--entry-cost")?,
        };
        let mut rows = Vec::new();
        for cores in 1..=args.cores {
            let a = assign(&topo, &graph, &options(cores))?;
            rows.extend(costs.predict(&Evaluation::of(&graph, &a)));
        }
        Some(rows)
    } else {
        None
    };
    let placement = args
        .placement
        .then(|| Placement::of(&graph, &assignment, machine()));
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
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
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
            traffic_graph(topo, &Routes::try_compute(topo)?, &flows)
        }
        _ => bail!("{weights:?}: expected static, uniform, observed:FILE or traffic:SPEC"),
    })
}

/// The flow graph of synthetic `flows` on `topo`, each at its max-min fair share
/// (`FlowGraph::from_demands`): `--weights traffic:SPEC`, and what `sim --workers` partitions.
pub fn traffic_graph(topo: &Topology, routes: &Routes, flows: &[FlowSpec]) -> FlowGraph {
    let demands: Vec<Demand> = flows.iter().map(demand).collect();
    FlowGraph::from_demands(topo, routes, &demands)
}

/// The size of the packets a source sends, bytes (an AIMD flow's: full segments).
pub fn packet_bytes(kind: SourceKind) -> u32 {
    match kind {
        SourceKind::Cbr { size, .. }
        | SourceKind::Poisson { size, .. }
        | SourceKind::OnOff { size, .. } => size,
        SourceKind::Aimd { mss } => mss + HEADER_BYTES,
    }
}

/// What the partitioner needs to know of a synthetic flow: its rate limit and packet sizes.
fn demand(flow: &FlowSpec) -> Demand {
    let (rate, acked) = match flow.kind {
        SourceKind::Cbr { rate, .. } | SourceKind::Poisson { rate, .. } => {
            (Some(rate.as_bps() as f64), false)
        }
        SourceKind::OnOff { rate, on, off, .. } => {
            let duty = on.as_secs_f64() / (on.as_secs_f64() + off.as_secs_f64()).max(1e-12);
            (Some(rate.as_bps() as f64 * duty), false)
        }
        SourceKind::Aimd { .. } => (None, true),
    };
    let cap = flow.cap.map(|c| c.as_bps() as f64);
    Demand {
        src: flow.src,
        dst: flow.dst,
        max_bps: match (rate, cap) {
            (Some(r), Some(c)) => Some(r.min(c)),
            (r, c) => r.or(c),
        },
        packet_bytes: packet_bytes(flow.kind),
        acked,
    }
}

/// Partitions `graph` and names the topology in the assignment.
pub fn assign(topo: &Topology, graph: &FlowGraph, options: &Options) -> Result<Assignment> {
    let mut a = partition(graph, options)?;
    a.topology = Some(topo.name.clone());
    Ok(a)
}

fn read_observation(path: &Path) -> Result<Observation> {
    let text = read_text(path, SIDE_JSON).with_context(|| path.display().to_string())?;
    Observation::from_json(&text).with_context(|| path.display().to_string())
}

/// This machine's CPUs and the caches they share, read through netloom-os, as placement takes
/// them.
pub fn machine() -> CacheTopology {
    let (cpus, caches) = netloom_os::machine_cpus();
    let shared = caches.into_iter().map(|c| SharedCache {
        level: c.level,
        cpus: c.cpus,
    });
    CacheTopology::new(cpus, shared)
}

/// The assignment `--assignment FILE` names.
pub fn read_assignment(topo: &Topology, path: &Path) -> Result<Assignment> {
    let text =
        read_text(path, SIDE_JSON).with_context(|| format!("--assignment {}", path.display()))?;
    Assignment::from_json(&text, topo).with_context(|| format!("--assignment {}", path.display()))
}

/// The assignment `sim` measures: read from `--assignment FILE`, or made with `options`
/// (`--method` over `--cores`) on the static weights of `graph`.
pub fn sim_assignment<'g>(
    topo: &Topology,
    graph: &dyn Fn() -> &'g FlowGraph,
    file: Option<&Path>,
    options: Option<Options>,
) -> Result<Option<Assignment>> {
    if let Some(path) = file {
        return read_assignment(topo, path).map(Some);
    }
    let Some(options) = options else {
        return Ok(None);
    };
    Ok(Some(assign(topo, graph(), &options)?))
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

/// A run of `workers` workers needs an assignment of as many cores.
pub fn check_workers(assignment: &Assignment, workers: usize) -> Result<()> {
    if assignment.cores as usize != workers {
        bail!(
            "the assignment has {} cores and --workers is {workers}: they must be equal",
            assignment.cores
        );
    }
    Ok(())
}

/// The CPU for each worker of a partitioned run on this machine: workers that exchange the most
/// traffic (under the static weights, `graph`) on CPUs that share a cache. A note goes to
/// stderr when there are more workers than CPUs.
pub fn worker_cpus(graph: &FlowGraph, assignment: &Assignment) -> Vec<usize> {
    let placement = Placement::of(graph, assignment, machine());
    if placement.shared_cpus {
        eprintln!(
            "netloom: {} workers on {} CPUs: some CPUs run two",
            assignment.cores,
            placement.machine.cpus.len()
        );
    }
    placement.cpu
}

/// The packet counts of a run whose engine counted transitions.
pub fn observation(engine: &Engine) -> Observation {
    let (packets, transitions) = engine.hop_counts();
    Observation {
        topology: engine.topology().name.clone(),
        packets,
        transitions,
    }
}

/// Efficiency, cross-core hops and per-core packets of `assignment` in an observed run.
pub fn measure(topo: &Topology, obs: &Observation, assignment: &Assignment) -> Result<Measurement> {
    let graph = FlowGraph::observed(topo, obs)?;
    Ok(Measurement::of(&Evaluation::of(&graph, assignment)))
}

/// `measure` for the assignment a partitioned run ran with, from its workers' crossing counts
/// (`Engine::crossings`: packets offered to each pipe, hops into each, hops each core took in).
pub fn measure_crossings(
    assignment: &Assignment,
    (packets, arrived, crossed): (Vec<u64>, Vec<u64>, Vec<u64>),
) -> Measurement {
    Measurement::of(&Evaluation::of_crossings(
        assignment, &packets, &arrived, &crossed,
    ))
}

/// The text lines `sim` prints for a measured partition.
pub fn print_measurement(m: &Measurement) {
    match m.efficiency {
        Some(e) => print!("efficiency {:.4}", e),
        None => print!("efficiency -"),
    }
    println!(
        " over {} cores: {} edge packets, {} packets processed, {} cross-core hops",
        m.cores.len(),
        m.edge_packets,
        m.packets,
        m.cross_core_hops
    );
    println!(
        "{:>6} {:>8} {:>14} {:>14} {:>14}",
        "core", "pipes", "hops", "edge packets", "packets"
    );
    for c in &m.cores {
        println!(
            "{:>6} {:>8} {:>14} {:>14} {:>14}",
            c.core, c.pipes, c.hops, c.edge_packets, c.packets
        );
    }
}

fn print_report(r: &PartitionReport) {
    println!(
        "{}: {} pipes over {} cores by {} ({} weights, seed {})",
        r.topology, r.pipes, r.cores, r.method, r.weights, r.seed
    );
    println!(
        "cut {:.6e} ({:.2}% of all flow), imbalance {:.3} (max/mean load), predicted efficiency {}",
        r.cut,
        r.cut_fraction * 100.0,
        r.imbalance,
        r.efficiency.map_or("-".to_string(), |e| format!("{e:.4}"))
    );
    if let Some(rows) = &r.model {
        println!();
        println!(
            "{:>6} {:>10} {:>10} {:>10} {:>14} {:>16}",
            "cores", "path len", "crossings", "efficiency", "balanced pps", "busiest-core pps"
        );
        for c in rows {
            println!(
                "{:>6} {:>10.2} {:>10.3} {:>10.4} {:>14.0} {:>16.0}",
                c.cores,
                c.path_length,
                c.crossings,
                c.efficiency,
                c.balanced_pps,
                c.busiest_core_pps
            );
        }
    } else {
        println!();
        println!(
            "{:>6} {:>8} {:>14} {:>8} {:>14} {:>14}",
            "core", "pipes", "load", "load %", "edge", "processed"
        );
        let total: f64 = r
            .per_core
            .iter()
            .map(|c| c.load)
            .sum::<f64>()
            .max(f64::MIN_POSITIVE);
        for c in r.per_core {
            println!(
                "{:>6} {:>8} {:>14.6e} {:>8.2} {:>14.6e} {:>14.6e}",
                c.core,
                c.pipes,
                c.load,
                c.load * 100.0 / total,
                c.edge_packets,
                c.packets
            );
        }
    }
    if let Some(p) = &r.placement {
        println!();
        print_placement(p);
    }
    if let Some(m) = &r.measured {
        println!();
        print!("measured: ");
        print_measurement(m);
    }
}

/// The CPU per core, with each core's busiest partner and the cache their CPUs share.
fn print_placement(p: &Placement) {
    let caches: Vec<String> = p
        .machine
        .shared
        .iter()
        .map(|c| format!("L{} {}", c.level, format_cpu_list(&c.cpus)))
        .collect();
    let cpus = |n: usize| format!("{n} CPU{}", if n == 1 { "" } else { "s" });
    println!(
        "placement on {} ({}); shared caches: {}",
        cpus(p.machine.cpus.len()),
        format_cpu_list(&p.machine.cpus),
        if caches.is_empty() {
            "none known".to_string()
        } else {
            caches.join(", ")
        }
    );
    if p.shared_cpus {
        println!(
            "note: {} cores on {}: some CPUs run more than one core",
            p.cpu.len(),
            cpus(p.machine.cpus.len())
        );
    }
    println!(
        "{:>6} {:>6} {:>16} {:>14} {:>8}",
        "core", "cpu", "busiest partner", "traffic", "cache"
    );
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
                println!("{c:>6} {cpu:>6} {k:>16} {:>14.6e} {cache:>8}", exchange(k));
            }
            None => println!("{c:>6} {cpu:>6} {:>16} {:>14} {:>8}", "-", "-", "-"),
        }
    }
}
