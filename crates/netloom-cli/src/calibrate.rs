//! `netloom calibrate [-o FILE]`: measures this machine (netloom_live::calibration) and writes
//! the calibration file; and the capacity prediction that `check --capacity` and `run` print
//! from one (netloom_partition::WorkerCosts, docs/calibrate.md).

use crate::partition::weigh;
use anyhow::{Context, Result};
use clap::Args;
use netloom_engine::traffic::parse_spec;
use netloom_live::calibration::{self, Calibration, Identity};
use netloom_partition::{
    Assignment, FlowGraph, Method, Options, Prediction, TimerLateness, WorkerCosts,
};
use netloom_sim::split::{assign, packet_bytes};
use netloom_topo::Topology;
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct CalibrateArgs {
    /// Where to write the calibration (JSON; default /var/lib/netloom/calibration.json, where
    /// `run` finds it).
    #[arg(short = 'o', long)]
    output: Option<PathBuf>,
    /// Print the calibration as JSON instead of the summary.
    #[arg(long)]
    json: bool,
}

pub fn run(args: CalibrateArgs) -> Result<()> {
    let output = args
        .output
        .unwrap_or_else(|| PathBuf::from(calibration::DEFAULT_PATH));
    // Signals first: a Ctrl-C during the TUN step ends it and removes the scratch hosts.
    let stop = netloom_os::install_stop_handler()?;
    let started = std::time::Instant::now();
    let name = format!("calibrate-{}", std::process::id());
    eprintln!("netloom calibrate: measuring this machine (about 20 s)");
    let c = calibration::measure(&name, stop, &mut |line| {
        eprintln!("[{:5.1} s] {line}", started.elapsed().as_secs_f64())
    })?;
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("-o {}", output.display()))?;
    }
    netloom_os::write_output(&output, c.to_json().as_bytes()).context("-o")?;
    if args.json {
        out!("{}", c.to_json())?;
    } else {
        out!("{}", c.summary())?;
        outln!("written to {}", output.display())?;
    }
    Ok(())
}

/// The capacity prediction's flags (`check --capacity`).
#[derive(Args, Clone)]
pub struct CapacityArgs {
    /// Predict whether the topology's load fits this machine, from a calibration file.
    #[arg(long)]
    pub(crate) capacity: bool,
    /// The calibration file (default /var/lib/netloom/calibration.json).
    #[arg(long, value_name = "FILE")]
    pub(crate) calibration: Option<PathBuf>,
    /// The offered load, as a traffic spec (sim's --traffic, docs/traffic.md); default: every
    /// host sends to every other at its path's bottleneck rate in 1500-byte packets (the links'
    /// capacity, an upper bound).
    #[arg(long, value_name = "SPEC")]
    pub(crate) load: Option<String>,
    /// Workers of the run to predict (as `run --workers`), 1 to 256: each is partitioned and
    /// predicted, one to as many as asked.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=netloom_engine::MAX_WORKERS as i64))]
    pub(crate) workers: u32,
    /// The run's precision mode, whose timer lateness the prediction starts from.
    #[arg(long, default_value = "hybrid", value_parser = ["busy", "hybrid", "sleep"])]
    pub(crate) precision: String,
    /// Use a calibration measured on another machine or by another netloom version.
    #[arg(long)]
    pub(crate) force: bool,
    /// Seed of the partitioner and of a --load pattern.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
}

/// The packet size the default load assumes: the default MTU.
const DEFAULT_PACKET_BYTES: f64 = 1500.0;

/// What `check --capacity --json` prints (docs/calibrate.md).
#[derive(Serialize)]
pub struct CapacityReport {
    calibration: PathBuf,
    load: String,
    precision: String,
    /// The run asked for (`--workers`).
    prediction: Prediction,
    /// One to `max(--workers, CPUs)` workers: the most each carries of this traffic.
    scaling: Vec<Scaling>,
    /// The fewest workers under which it fits, if any does.
    needs_workers: Option<u32>,
    sentence: String,
}

impl CapacityReport {
    /// The plain sentence.
    pub fn sentence(&self) -> &str {
        &self.sentence
    }
}

/// The most `workers` carry of the load's traffic mix.
#[derive(Serialize)]
struct Scaling {
    workers: u32,
    fits: bool,
    max_edge_packets_per_second: f64,
}

/// Reads the calibration `path` and refuses it if foreign (unless `force`, which warns).
pub fn read_calibration(path: &Path, force: bool) -> Result<Calibration> {
    let c = Calibration::read(path)?;
    if let Err(foreign) = c.check(&Identity::here(), path) {
        if !force {
            return Err(foreign.into());
        }
        eprintln!("netloom: warning (--force): {foreign}");
    }
    Ok(c)
}

/// What one TUN read and one write cost for packets of `bytes`: a fixed cost per call plus one
/// per byte, the line through the two measured points (MTU-bound packets without GSO, and
/// GSO super-packets). The per-byte cost is never taken below zero; without a GSO point, the
/// packets cost what MTU-bound ones did.
fn tun_costs(c: &Calibration, bytes: f64) -> Result<(f64, f64)> {
    let small = c
        .tun(false)
        .context("the calibration has no TUN rates without GSO")?;
    let at = |small_ns: f64, large_ns: Option<(f64, f64)>| match large_ns {
        Some((large_bytes, large_ns)) if large_bytes > small.mean_packet_bytes => {
            let per_byte =
                ((large_ns - small_ns) / (large_bytes - small.mean_packet_bytes)).max(0.0);
            (small_ns + per_byte * (bytes - small.mean_packet_bytes)).max(0.0)
        }
        _ => small_ns,
    };
    let large = c.tun(true);
    Ok((
        at(
            small.read.ns_per_packet,
            large.map(|l| (l.mean_packet_bytes, l.read.ns_per_packet)),
        ),
        at(
            small.write.ns_per_packet,
            large.map(|l| (l.mean_packet_bytes, l.write.ns_per_packet)),
        ),
    ))
}

/// The measured costs the model takes, for packets of `bytes` (each packet a read and a
/// write; a wake-up as the precision mode's timer measurement paid, none for busy).
fn costs(c: &Calibration, precision: &str, bytes: f64) -> Result<(WorkerCosts, TimerLateness)> {
    let (tun_read_ns, tun_write_ns) = tun_costs(c, bytes)?;
    let timer = c
        .timer(precision)
        .with_context(|| format!("the calibration has no timer lateness for {precision}"))?;
    Ok((
        WorkerCosts {
            hop_ns: c.engine.ns_per_packet_hop,
            tun_read_ns,
            tun_write_ns,
            handoff_ns: c.handoff.ns_per_handoff,
            wake_up_ns: timer.wake_up_ns.unwrap_or(0.0),
        },
        TimerLateness {
            p50_ns: timer.p50_ns as f64,
            p99_ns: timer.p99_ns as f64,
        },
    ))
}

/// The assignment `run --workers N` makes: metis over the static weights (all on one worker
/// for one).
fn run_assignment(
    topo: &Topology,
    fixed: &FlowGraph,
    workers: u32,
    seed: u64,
) -> Result<Assignment> {
    if workers == 1 {
        return Ok(Assignment {
            cores: 1,
            pipes: vec![0; topo.pipes.len()],
            topology: None,
            method: None,
        });
    }
    Ok(assign(
        topo,
        fixed,
        &Options::new(Method::Metis, workers, seed),
    )?)
}

/// Predicts `topo` under the flags, from the calibration `c` read from `path`.
pub fn predict(
    topo: &Topology,
    args: &CapacityArgs,
    c: &Calibration,
    path: &Path,
) -> Result<CapacityReport> {
    let bytes = match &args.load {
        Some(spec) => f64::from(packet_bytes(parse_spec(spec).context("--load")?.kind)),
        None => DEFAULT_PACKET_BYTES,
    };
    let (costs, timer) = costs(c, &args.precision, bytes)?;
    let timed = timed_pipes(topo, bytes, costs.tun_read_ns + costs.tun_write_ns);
    let (graph, load) = match &args.load {
        Some(spec) => (
            weigh(topo, &format!("traffic:{spec}"), args.seed).context("--load")?,
            spec.clone(),
        ),
        None => {
            let mut g = weigh(topo, "static", args.seed)?;
            g.scale(1.0 / (8.0 * DEFAULT_PACKET_BYTES));
            (
                g,
                "the links' capacity (every host to every other, 1500-byte packets)".into(),
            )
        }
    };
    let fixed = weigh(topo, "static", args.seed)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let most = args.workers.max(cpus);
    let mut scaling = Vec::new();
    let mut asked = None;
    for w in 1..=most {
        let a = run_assignment(topo, &fixed, w, args.seed)?;
        let p = costs
            .predict(&graph, &a, &timed, timer)
            .context("no packet enters the emulation under this load")?;
        scaling.push(Scaling {
            workers: w,
            fits: p.fits,
            max_edge_packets_per_second: p.max_edge_packets_per_second,
        });
        if w == args.workers {
            asked = Some(p);
        }
    }
    let prediction = asked.expect("--workers is within 1..=most");
    let needs_workers = scaling.iter().find(|s| s.fits).map(|s| s.workers);
    let sentence = sentence(&prediction, &scaling, needs_workers, cpus);
    Ok(CapacityReport {
        calibration: path.to_path_buf(),
        load,
        precision: args.precision.clone(),
        prediction,
        scaling,
        needs_workers,
        sentence,
    })
}

/// Whether each pipe holds a packet of `bytes` (serialization and propagation delay) longer
/// than `turn_ns`, about what the turn that read it takes: a packet held longer leaves at a
/// deadline the driver must come back for; one held less is released within that turn.
fn timed_pipes(topo: &Topology, bytes: f64, turn_ns: f64) -> Vec<bool> {
    topo.pipes
        .iter()
        .map(|p| {
            let held = p.config.delay + p.config.rate.tx_time(bytes as u64);
            held.as_nanos() as f64 > turn_ns
        })
        .collect()
}

fn workers(n: u32) -> String {
    match n {
        1 => "one worker".to_string(),
        n => format!("{n} workers"),
    }
}

fn kpps(pps: f64) -> String {
    if pps >= 10_000.0 {
        format!("{:.0} kpps", pps / 1e3)
    } else {
        format!("{:.1} kpps", pps / 1e3)
    }
}

/// The plain sentence: the load, whether it fits, what it needs.
fn sentence(p: &Prediction, scaling: &[Scaling], needs: Option<u32>, cpus: u32) -> String {
    let busiest = &p.per_worker[p.bottleneck_worker as usize];
    let head = format!(
        "about {} through {:.1} hops per packet",
        kpps(p.edge_packets_per_second),
        p.path_length
    );
    let verdict = if p.fits {
        format!(
            "fits in {} (worker {} busiest, {:.0} % of a CPU, mostly {})",
            workers(p.workers),
            busiest.worker,
            busiest.utilization * 100.0,
            busiest.busiest_work.name()
        )
    } else {
        let need = match needs {
            Some(n) => format!("; it needs {}", workers(n)),
            None => format!(
                "; no run of up to {} ({} CPUs here) carries it",
                workers(scaling.len() as u32),
                cpus
            ),
        };
        format!(
            "does not fit in {}: worker {} would need {:.0} % of a CPU, mostly its {}{need}",
            workers(p.workers),
            busiest.worker,
            busiest.utilization * 100.0,
            busiest.busiest_work.name()
        )
    };
    let limits: Vec<String> = scaling
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                workers(s.workers),
                kpps(s.max_edge_packets_per_second)
            )
        })
        .collect();
    format!(
        "{head} {verdict}. The most this traffic mix can be: {}.",
        limits.join(", ")
    )
}

/// Prints a capacity report for people.
pub fn print(r: &CapacityReport) -> anyhow::Result<()> {
    let p = &r.prediction;
    outln!(
        "capacity  {}, {} precision, load: {} (calibration {})",
        workers(p.workers),
        r.precision,
        r.load,
        r.calibration.display()
    )?;
    outln!(
        "load      {:.0} packets/s enter, {:.2} hops each: {:.0} packet-hops/s, {:.0} hand-offs/s",
        p.edge_packets_per_second,
        p.path_length,
        p.packet_hops_per_second,
        p.handoffs_per_second
    )?;
    for w in &p.per_worker {
        let late = |ns: Option<f64>| {
            ns.map_or("unbounded".to_string(), |ns| format!("{:.1} us", ns / 1e3))
        };
        outln!(
            "worker {}  {:>5.1} % CPU ({}): {:.0} packet-hops/s, {:.0} TUN reads/s, {:.0} TUN writes/s, {:.0} hand-offs in/s, {:.0} deadlines/s, {:.0} wake-ups/s; lateness p50 {} p99 {}",
            w.worker,
            w.utilization * 100.0,
            if w.utilization > 0.0 { w.busiest_work.name() } else { "idle" },
            w.packet_hops_per_second,
            w.tun_reads_per_second,
            w.tun_writes_per_second,
            w.handoffs_per_second,
            w.deadlines_per_second,
            w.wake_ups_per_second,
            late(w.lateness_p50_ns),
            late(w.lateness_p99_ns)
        )?;
    }
    outln!("{}", r.sentence)?;
    Ok(())
}
