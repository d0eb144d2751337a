//! `netloom sim FILE --traffic SPEC --duration D`: a virtual-time run with synthetic traffic,
//! on one engine or partitioned over `--workers` threads, printed as tables or as the JSON
//! schema of docs/json.md.

use anyhow::{bail, Context, Result};
use clap::Args;
use netloom_engine::sim::{self, Progress, SimOptions};
use netloom_engine::traffic::{self, parse_spec, FlowSpec};
use netloom_engine::workers::{self, ParallelReport};
use netloom_engine::{Engine, HopCounting, Ownership, OwnershipError, Report};
use netloom_live::SimCapture;
use netloom_partition::{Assignment, FlowGraph};
use netloom_route::Routes;
use netloom_time::Duration;
use netloom_topo::Topology;
use serde::Serialize;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

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
    /// The partitioner for --cores or --workers: random, kcluster or metis (default).
    #[arg(long)]
    method: Option<netloom_partition::Method>,
    /// METIS: the most loaded core may carry this many times the mean load (1 to 100), for
    /// --cores, --workers and --repartition.
    #[arg(long, default_value_t = 1.03, value_parser = crate::input::number_in(netloom_topo::units::Range::closed(1.0, 100.0)))]
    imbalance: f64,
    /// Run the engine partitioned over this many worker threads, each owning the pipes of one
    /// core of the assignment (--assignment, or --method over this many cores, weighed by the
    /// run's own traffic; with --cores, by the static weights). The results are the same as
    /// with one worker.
    #[arg(long, default_value_t = 1)]
    workers: u32,
    /// What crosses between workers: the descriptor only (cache: the payload stays with the
    /// source host's worker) or the whole packet (ship). Changes the cross-core counts only.
    #[arg(long, value_enum, default_value = "cache")]
    payload: crate::partition::PayloadArg,
    /// Pin each worker to a CPU, communicating workers on CPUs that share a cache (MX).
    #[arg(long, conflicts_with = "processes")]
    pin: bool,
    /// Run workers 1 to N-1 of --workers N as processes of their own, in lock-step over UDP
    /// (hand-offs as GENEVE batches, docs/wire.md). The results are the same as with threads.
    #[arg(long)]
    processes: bool,
    /// Be worker K of a coordinator's run over processes (set by the coordinator).
    #[arg(long, hide = true)]
    process_worker: Option<u16>,
    /// Run over the machines of this cluster file (docs/cluster.md): --workers --processes
    /// with a worker on each machine (started through its launcher), this process being the
    /// worker of the machine it runs on. The results are the same as with one engine.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["workers", "cores", "assignment", "method", "pin", "processes", "series", "capture", "repartition"])]
    cluster: Option<PathBuf>,
    /// The machines of --cluster, read: worker K runs on machine K, this one first.
    #[arg(skip)]
    machines: Vec<netloom_live::cluster::Machine>,
    /// The topology as the worker processes load it, with --processes.
    #[arg(skip)]
    bundle: Option<netloom_topo::Bundle>,
    /// Add per-interval series of this length to the JSON report (flow throughput, pipe
    /// utilization, drops and queue length; docs/json.md), e.g. 1s or 100ms. One worker only.
    #[arg(long, requires = "json")]
    series: Option<String>,
    /// Write the packets of a link as pcapng: `A:B=FILE` (both directions of the link between
    /// A and B) or `A=FILE` (every link of node A). Repeatable. One worker only.
    #[arg(long, value_name = "LINK=FILE")]
    capture: Vec<String>,
    /// Write the packet counts per pipe and per pair of consecutive pipes to FILE, for
    /// `partition --weights observed:FILE` and `--measure FILE`.
    #[arg(long)]
    observe: Option<PathBuf>,
    /// Repartition every EPOCH (e.g. 30s) on the traffic observed in the last one (--method,
    /// METIS by default), each new part on the core holding most of its pipes, and report the
    /// efficiency of the static and the dynamic partition per epoch (docs/partition.md).
    /// Needs --cores or --assignment.
    #[arg(long, value_name = "EPOCH")]
    repartition: Option<String>,
}

/// The report with the optional `partition` (docs/partition.md) and `workers` sections after
/// its own fields.
#[derive(Serialize)]
struct FullReport<'a> {
    #[serde(flatten)]
    report: &'a Report,
    #[serde(skip_serializing_if = "Option::is_none")]
    partition: Option<&'a netloom_partition::Measurement>,
    #[serde(skip_serializing_if = "Option::is_none")]
    workers: Option<&'a WorkersReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repartition: Option<&'a RepartitionReport>,
}

/// Static against dynamic partition, epoch by epoch (`--repartition`).
#[derive(Serialize)]
struct RepartitionReport {
    epoch_ns: u64,
    method: &'static str,
    imbalance: f64,
    epochs: Vec<EpochRow>,
}

/// One epoch of `--repartition`.
#[derive(Serialize)]
struct EpochRow {
    start_ns: u64,
    end_ns: u64,
    #[serde(flatten)]
    epoch: netloom_partition::Epoch,
}

/// How a partitioned run went.
#[derive(Serialize)]
struct WorkersReport {
    #[serde(flatten)]
    parallel: ParallelReport,
    payload: &'static str,
    cross_core_hops: u64,
    cross_core_bytes: u64,
    /// Pipes moved to the worker of the host that sends into them.
    moved_pipes: usize,
    /// The CPU of each worker, with --pin.
    cpus: Option<Vec<usize>>,
}

pub fn run(mut args: SimArgs) -> Result<()> {
    let duration = netloom_topo::units::parse_duration(&args.duration).context("--duration")?;
    if duration.as_nanos() == 0 {
        anyhow::bail!(
            "--duration: {:?} simulates nothing; give a positive duration such as 30s",
            args.duration
        );
    }
    let series = match &args.series {
        None => None,
        Some(text) => {
            let interval = netloom_topo::units::parse_duration(text).context("--series")?;
            if interval.as_nanos() == 0 {
                bail!("--series: {text:?} is no interval; give a positive duration such as 1s");
            }
            if args.workers > 1 {
                bail!("--series needs one worker: drop --workers {}", args.workers);
            }
            Some(interval)
        }
    };
    if !args.capture.is_empty() && args.workers > 1 {
        bail!(
            "--capture needs one worker: drop --workers {}",
            args.workers
        );
    }
    // A worker process takes the topology from the coordinator: no file of its own.
    if let Some(me) = args.process_worker {
        return serve_worker(&args, me, duration);
    }
    let cluster = match &args.cluster {
        Some(path) => Some(on_this_machine(netloom_live::cluster::Cluster::read(
            path,
        )?)?),
        None => None,
    };
    if let Some(cluster) = &cluster {
        // Worker k is machine k: a run over processes, one worker per machine.
        args.workers = cluster.machines.len() as u32;
        args.processes = true;
        args.machines = cluster.machines.clone();
    }
    let topo = match args.processes {
        true => {
            let (topo, bundle) = args.input.load_bundled(&args.file)?;
            args.bundle = Some(bundle);
            topo
        }
        false => args.input.load(&args.file)?,
    };
    let captures = args
        .capture
        .iter()
        .map(|c| capture_target(&topo, c))
        .collect::<Result<Vec<_>>>()?;
    let spec = parse_spec(&args.traffic).context("--traffic")?;
    let flows = traffic::expand(&spec.pattern, spec.kind, spec.cap, &topo, args.seed)
        .context("--traffic")?;
    if args.workers == 0 {
        bail!("--workers 0: give at least 1");
    }
    if args.method.is_some() && args.cores.is_none() && args.workers == 1 {
        bail!("--method needs --cores or --workers");
    }
    let partitioned = args.workers > 1;
    let cores = match (args.cores, partitioned) {
        (Some(c), true) if c != args.workers => {
            bail!(
                "--cores {c} and --workers {}: give one, or the same number",
                args.workers
            )
        }
        (None, true) if args.assignment.is_none() => Some(args.workers),
        (cores, _) => cores,
    };
    // Routes and the flow graph, each computed once, when something needs them: to partition
    // (--cores, --workers without --assignment, --cluster) or to place workers. --cores
    // measures the partition ModelNet made, on its static weights (every pair of hosts); the
    // workers run on a partition of the traffic they run (each flow at its max-min fair share),
    // which crosses workers about a quarter less often on inet (docs/partition.md).
    let by_traffic = args.cores.is_none();
    let splits = cluster.as_ref().is_some_and(|c| !c.placed());
    if partitioned || splits || (cores.is_some() && args.assignment.is_none()) {
        FlowGraph::check_size(&topo, !by_traffic)
            .with_context(|| args.file.display().to_string())?;
    }
    let routes = Routes::try_compute(&topo).with_context(|| args.file.display().to_string())?;
    if args.processes && !partitioned {
        bail!("--processes needs --workers 2 or more");
    }
    let graph_cell = std::cell::OnceCell::new();
    let graph = || {
        graph_cell.get_or_init(|| match by_traffic {
            true => crate::partition::traffic_graph(&topo, &routes, &flows),
            false => FlowGraph::conservative(&topo, &routes),
        })
    };
    // The partitioner's options, for --cores and for each repartitioning.
    let partitioner = |cores| netloom_partition::Options {
        imbalance: args.imbalance,
        ..netloom_partition::Options::new(
            args.method.unwrap_or(netloom_partition::Method::Metis),
            cores,
            args.seed,
        )
    };
    let assignment = match cluster {
        None => crate::partition::sim_assignment(
            &topo,
            &graph,
            args.assignment.as_deref(),
            cores.map(partitioner),
        )?,
        // The file's placement, or METIS with the machines' CPUs as shares over the traffic
        // (`run`, which does not know its traffic, over the static weights).
        Some(cluster) => {
            let cpus: Vec<u32> = cluster
                .machines
                .iter()
                .map(|m| m.cpus.unwrap_or(1))
                .collect();
            let split =
                netloom_live::cluster::split(&cluster, &topo, &cpus, args.seed, splits.then(graph))
                    .map_err(|e| anyhow::anyhow!("{}: {e}", cluster.file))?;
            Some(split)
        }
    };
    let epoch = match &args.repartition {
        None => None,
        Some(text) => {
            let epoch = netloom_topo::units::parse_duration(text).context("--repartition")?;
            if epoch.as_nanos() == 0 {
                bail!("--repartition: {text:?} is no epoch; give a positive duration such as 30s");
            }
            if assignment.is_none() {
                bail!("--repartition needs a partition to start from: give --cores K or --assignment FILE");
            }
            if series.is_some() || !captures.is_empty() {
                bail!("--repartition runs in epochs: drop --series and --capture");
            }
            if args.processes {
                bail!("--repartition moves pipes between threads only; drop --processes");
            }
            Some(epoch)
        }
    };
    let counting = assignment.is_some() || args.observe.is_some();
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
    let options = SimOptions {
        duration,
        seed: args.seed,
        wall_clock: !args.no_wall_clock,
        progress: if show_progress {
            Some(&mut progress)
        } else {
            None
        },
        progress_every: std::time::Duration::from_millis(250),
        series,
        tapped: None,
    };
    let mut repartition = None;
    let (engine, report, workers, assignment) = match assignment {
        Some(a) if epoch.is_some() && !partitioned => {
            let epoch = epoch.expect("matched");
            let partitioner = partitioner(a.cores);
            let (engine, report, rows) =
                run_epochs(&args, topo, routes, flows, &a, partitioner, duration, epoch)?;
            repartition = Some(RepartitionReport {
                epoch_ns: epoch.as_nanos(),
                method: partitioner.method.name(),
                imbalance: partitioner.imbalance,
                epochs: rows,
            });
            (engine, report, None, Some(a))
        }
        Some(a) if partitioned => {
            let cpus = |run: &Assignment| crate::partition::worker_cpus(graph(), run);
            let dynamic = epoch.map(|epoch| (epoch, partitioner(a.cores)));
            let run = run_workers(&args, (&topo, &routes), &flows, &a, &cpus, options, dynamic)?;
            if let (Some((epoch, partitioner)), Some(rows)) = (dynamic, run.4) {
                repartition = Some(RepartitionReport {
                    epoch_ns: epoch.as_nanos(),
                    method: partitioner.method.name(),
                    imbalance: partitioner.imbalance,
                    epochs: rows,
                });
            }
            (run.0, run.1, Some(run.2), Some(run.3))
        }
        a => {
            let mut engine = Engine::with_routes(topo, routes, args.seed);
            if counting {
                engine.enable_transition_counts();
            }
            for flow in flows {
                engine.add_flow(flow, args.seed)?;
            }
            let mut files = Vec::with_capacity(captures.len());
            for (pipes, path) in captures {
                let out = std::fs::File::create(&path)
                    .with_context(|| format!("--capture {}", path.display()))?;
                let file = SimCapture::new(std::io::BufWriter::new(out), &mut engine, pipes)
                    .with_context(|| format!("--capture {}", path.display()))?;
                files.push(file);
            }
            let capturing = !files.is_empty();
            let mut failed: Option<std::io::Error> = None;
            let mut record = |t: &netloom_engine::tap::Tapped| {
                for file in &mut files {
                    if let Err(e) = file.record(t) {
                        failed.get_or_insert(e);
                    }
                }
            };
            let mut options = options;
            if capturing {
                options.tapped = Some(&mut record);
            }
            let report = sim::run(&mut engine, options);
            if let Some(e) = failed {
                bail!("--capture: {e}");
            }
            for file in files {
                file.finish()
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .context("--capture")?;
            }
            (engine, report, None, a)
        }
    };
    if show_progress {
        eprint!("\r{:90}\r", "");
    }
    let observation = crate::partition::observation(&engine);
    if let Some(path) = &args.observe {
        std::fs::write(path, observation.to_json() + "\n")
            .with_context(|| format!("--observe {}", path.display()))?;
    }
    let measured = match (&assignment, engine.crossings()) {
        (Some(a), Some(crossings)) => Some(crate::partition::measure_crossings(a, crossings)),
        (Some(a), None) => Some(crate::partition::measure(
            engine.topology(),
            &observation,
            a,
        )?),
        (None, _) => None,
    };
    if args.json {
        let full = FullReport {
            report: &report,
            partition: measured.as_ref(),
            workers: workers.as_ref(),
            repartition: repartition.as_ref(),
        };
        println!("{}", serde_json::to_string_pretty(&full)?);
    } else {
        print_tables(&report, args.top);
        if let Some(m) = &measured {
            println!();
            crate::partition::print_measurement(m);
        }
        if let Some(w) = &workers {
            print_workers(w);
        }
        if let Some(r) = &repartition {
            print_repartition(r);
        }
    }
    Ok(())
}

/// One engine run in epochs of `epoch`: each epoch's traffic measures the static partition
/// `initial` and the dynamic one, which is then remade from it (`--repartition`).
#[allow(clippy::too_many_arguments)]
fn run_epochs(
    args: &SimArgs,
    topo: Topology,
    routes: Routes,
    flows: Vec<FlowSpec>,
    initial: &Assignment,
    options: netloom_partition::Options,
    duration: Duration,
    epoch: Duration,
) -> Result<(Engine, Report, Vec<EpochRow>)> {
    let mut engine = Engine::with_routes(topo.clone(), routes, args.seed);
    for flow in flows {
        engine.add_flow(flow, args.seed)?;
    }
    let mut dynamic = netloom_partition::Repartitioning::new(initial.clone(), options);
    let mut rows = Vec::new();
    let mut failed = None;
    let report = netloom_engine::epoch::run(
        &mut engine,
        duration,
        epoch,
        args.seed,
        !args.no_wall_clock,
        &mut |counts| match close_epoch(&mut dynamic, &topo, counts) {
            Ok(row) => rows.push(row),
            Err(e) => {
                failed.get_or_insert(e);
            }
        },
    );
    if let Some(e) = failed {
        return Err(e).context("--repartition");
    }
    Ok((engine, report, rows))
}

/// Measures both partitions on an epoch's counts and makes the next dynamic one.
fn close_epoch(
    dynamic: &mut netloom_partition::Repartitioning,
    topo: &Topology,
    counts: netloom_engine::epoch::EpochCounts,
) -> Result<EpochRow, netloom_partition::PartitionError> {
    let observed = netloom_partition::Observation {
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

fn print_repartition(r: &RepartitionReport) {
    println!();
    println!(
        "repartitioned every {} by {} (imbalance {}) on the last epoch's traffic:",
        Duration(r.epoch_ns),
        r.method,
        r.imbalance
    );
    println!(
        "{:>10} {:>10} {:>10} {:>10} {:>12} {:>12} {:>12}",
        "from s", "to s", "static", "dynamic", "static imb.", "dynamic imb.", "moved pipes"
    );
    let e = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.4}"));
    for row in &r.epochs {
        println!(
            "{:>10.1} {:>10.1} {:>10} {:>10} {:>12.3} {:>12.3} {:>12}",
            row.start_ns as f64 / 1e9,
            row.end_ns as f64 / 1e9,
            e(row.epoch.static_efficiency),
            e(row.epoch.dynamic_efficiency),
            row.epoch.static_imbalance,
            row.epoch.dynamic_imbalance,
            row.epoch.moved_pipes
        );
    }
}

/// The pipes and the file of `--capture LINK=FILE`: `A:B` is the link between A and B, both
/// directions; `A` every link of node A.
fn capture_target(
    topo: &Topology,
    text: &str,
) -> Result<(
    Vec<(netloom_topo::PipeId, netloom_live::pcapng::Interface)>,
    PathBuf,
)> {
    let Some((link, file)) = text.split_once('=') else {
        bail!("--capture {text:?}: write LINK=FILE, e.g. r1:r2=r1r2.pcapng or h1=h1.pcapng");
    };
    let (a, b) = match link.split_once(':') {
        Some((a, b)) => (a, Some(b)),
        None => (link, None),
    };
    let pipes = netloom_live::capture_pipes(topo, a, b, netloom_live::Direction::Both)
        .with_context(|| format!("--capture {text}"))?;
    if pipes.is_empty() {
        bail!("--capture {text}: node {a} has no links");
    }
    Ok((pipes, PathBuf::from(file)))
}

/// A partitioned run: one engine per worker, each with all the flows (a worker drives only
/// those whose source host it owns), repartitioned every epoch with `dynamic` (epoch,
/// partitioner) if given. Returns the merged engine, the report, the workers' figures, the
/// assignment run first (after host pipes moved) and the epochs' rows.
#[allow(clippy::type_complexity)]
fn run_workers(
    args: &SimArgs,
    (topo, routes): (&Topology, &Routes),
    flows: &[FlowSpec],
    assignment: &Assignment,
    worker_cpus: &dyn Fn(&Assignment) -> Vec<usize>,
    options: SimOptions<'_>,
    dynamic: Option<(Duration, netloom_partition::Options)>,
) -> Result<(
    Engine,
    Report,
    WorkersReport,
    Assignment,
    Option<Vec<EpochRow>>,
)> {
    let n = args.workers as usize;
    crate::partition::check_workers(assignment, n)?;
    if let Some(pipe) = dynamic.and(netloom_engine::repartition::immovable_pipe(topo)) {
        bail!(
            "--repartition with --workers: pipe {pipe} holds its packets in flow queues \
             (fq_codel), which cannot move between workers yet; drop --workers or use another aqm"
        );
    }
    let ownership = Arc::new(Ownership::new(
        topo,
        &assignment.pipes,
        n,
        args.payload.into(),
    )?);
    let run_assignment = Assignment {
        pipes: ownership.assignment(),
        ..assignment.clone()
    };
    if args.processes {
        let (engine, report, parallel) =
            run_processes(args, (topo, routes), flows, assignment, &ownership, options)?;
        let workers = workers_report(&engine, &ownership, parallel, None);
        return Ok((engine, report, workers, run_assignment, None));
    }
    let cpus = args.pin.then(|| worker_cpus(&run_assignment));
    let engines = workers::engines(
        topo,
        routes,
        args.seed,
        &ownership,
        flows,
        hop_counting(args),
    )?;
    let pin = |k: usize| {
        if let Some(cpus) = &cpus {
            // A worker that cannot be pinned still runs correctly; say so once per worker.
            if let Err(e) = netloom_os::pin_current_thread(cpus[k]) {
                eprintln!("netloom: worker {k}: {e}");
            }
        }
    };
    let mut rows = None;
    let (engine, report, parallel) = match dynamic {
        None => workers::run(engines, ownership.lookahead(), options, &pin),
        Some((epoch, partitioner)) => {
            let mut dynamic =
                netloom_partition::Repartitioning::new(run_assignment.clone(), partitioner);
            let (mut epochs, mut failed) = (Vec::new(), None);
            let mut running = run_assignment.pipes.clone();
            let mut decide = |counts| {
                let row = match close_epoch(&mut dynamic, topo, counts) {
                    Ok(row) => row,
                    Err(e) => {
                        failed.get_or_insert(anyhow::Error::from(e));
                        return None;
                    }
                };
                epochs.push(row);
                let next = Ownership::new(topo, &dynamic.current().pipes, n, args.payload.into());
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
                        failed.get_or_insert(e.into());
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
                return Err(e).context("--repartition");
            }
            rows = Some(epochs);
            run
        }
    };
    let workers = workers_report(&engine, &ownership, parallel, cpus);
    Ok((engine, report, workers, run_assignment, rows))
}

/// How the workers of a partitioned run count their hops: per pair of pipes when the pairs are
/// written out (`--observe`) or weigh the next partition (`--repartition`); otherwise only what
/// measures the run's own partition (its `partition` section), which costs nothing per hop.
fn hop_counting(args: &SimArgs) -> HopCounting {
    match args.observe.is_some() || args.repartition.is_some() {
        true => HopCounting::Pairs,
        false => HopCounting::Crossings,
    }
}

/// The `workers` section of a partitioned run's report, from its merged engine.
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

/// A partitioned run over processes: this one is worker 0 and the coordinator; workers 1 to
/// N-1 are this program again (`--process-worker K`, the same arguments otherwise), which load
/// the same files and take the assignment from here. Returns the merged engine, the report
/// (the same as with threads) and the workers' figures.
fn run_processes(
    args: &SimArgs,
    (topo, routes): (&Topology, &Routes),
    flows: &[FlowSpec],
    assignment: &Assignment,
    ownership: &Arc<Ownership>,
    options: SimOptions<'_>,
) -> Result<(Engine, Report, ParallelReport)> {
    let n = args.workers as usize;
    let end = netloom_time::Instant::ZERO + options.duration;
    let mut engine = workers::engine(
        topo,
        routes,
        args.seed,
        ownership,
        flows,
        0,
        hop_counting(args),
    )?;
    let (addresses, max_datagram) = match args.machines.is_empty() {
        true => (
            vec![std::net::Ipv4Addr::LOCALHOST.into(); n],
            netloom_procs::LOOPBACK_DATAGRAM,
        ),
        false => (
            args.machines.iter().map(|m| m.address).collect(),
            netloom_procs::NETWORK_DATAGRAM,
        ),
    };
    let setup = netloom_procs::Setup {
        workers: n,
        assignment: assignment.pipes.clone(),
        vni: std::process::id() & netloom_wire::MAX_VNI,
        max_datagram,
        addresses,
        topology: args.bundle.clone().expect("loaded bundled for processes"),
    };
    let program = std::env::current_exe().context("--processes: finding this program")?;
    let argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let processes = netloom_procs::Workers::spawn(n, |k| {
        let mut argv = argv.clone();
        argv.extend(["--process-worker".into(), k.to_string().into()]);
        // Over a cluster, the same arguments on machine k (the topology comes with the set-up).
        match args.machines.get(k) {
            Some(machine) => machine.netloom_command(&argv),
            None => {
                let mut c = std::process::Command::new(&program);
                c.args(&argv);
                c
            }
        }
    })?;
    let started = std::time::Instant::now();
    let outcome = processes
        .run(&mut engine, &setup, end, ownership.lookahead())
        .map_err(|e| match (&e, args.machines.is_empty()) {
            (netloom_procs::ProcError::Version { worker, version }, false) => anyhow::anyhow!(
                "machine {} runs netloom {version}; this is netloom {}: install the same version on every machine",
                args.machines[*worker].name,
                env!("CARGO_PKG_VERSION")
            ),
            _ => e.into(),
        })?;
    let wall = options.wall_clock.then(|| started.elapsed());
    let (report, remains) =
        netloom_procs::merge(&mut engine, outcome.remains, args.seed, end, wall);
    let parallel = ParallelReport {
        workers: n,
        lookahead_ns: Some(ownership.lookahead().as_nanos()).filter(|&ns| ns != u64::MAX),
        windows: outcome.windows,
        per_worker: remains
            .iter()
            .zip(&outcome.waited)
            .map(|(r, waited)| workers::WorkerReport {
                packet_hops: r.packet_hops(),
                wait_seconds: options.wall_clock.then_some(waited.as_secs_f64()),
            })
            .collect(),
    };
    Ok((engine, report, parallel))
}

/// The cluster with the machine this process runs on first (the first of the file's machines
/// whose address it can bind): it is worker 0, whose engine runs here.
fn on_this_machine(
    mut cluster: netloom_live::cluster::Cluster,
) -> Result<netloom_live::cluster::Cluster> {
    let here = cluster
        .machines
        .iter()
        .position(|m| std::net::UdpSocket::bind((m.address, 0)).is_ok());
    let Some(here) = here else {
        let addresses: Vec<String> = cluster
            .machines
            .iter()
            .map(|m| format!("{} ({})", m.address, m.name))
            .collect();
        bail!(
            "{}: no machine of the file is this one (none of {} is an address here): \
             with --cluster, this process is the worker of the machine it runs on: run the \
             command on one of them",
            cluster.file,
            addresses.join(", ")
        );
    };
    let machine = cluster.machines.remove(here);
    cluster.machines.insert(0, machine);
    Ok(cluster)
}

/// Worker `me` of a run over processes, in its own process: its engine, built as the
/// coordinator built its own from the topology and assignment it sends, run in lock-step
/// with the others; nothing is printed on stdout but what the coordinator reads.
fn serve_worker(args: &SimArgs, me: u16, duration: Duration) -> Result<()> {
    let end = netloom_time::Instant::ZERO + duration;
    let spec = parse_spec(&args.traffic).context("--traffic")?;
    netloom_procs::serve(me, end, |setup| {
        let topo = setup.topology.load().map_err(|e| e.to_string())?;
        let flows = traffic::expand(&spec.pattern, spec.kind, spec.cap, &topo, args.seed)
            .map_err(|e| format!("--traffic: {e}"))?;
        let routes = Routes::try_compute(&topo).map_err(|e| e.to_string())?;
        let ownership = Arc::new(
            Ownership::new(&topo, &setup.assignment, setup.workers, args.payload.into())
                .map_err(|e| e.to_string())?,
        );
        let engine = workers::engine(
            &topo,
            &routes,
            args.seed,
            &ownership,
            &flows,
            usize::from(me),
            hop_counting(args),
        )
        .map_err(|e| e.to_string())?;
        Ok((engine, ownership.lookahead()))
    })
    .with_context(|| format!("worker {me}"))
}

fn print_workers(w: &WorkersReport) {
    let p = &w.parallel;
    println!(
        "{} workers, lookahead {}, {} windows; payload {}: {} cross-core hops, {} bytes",
        p.workers,
        p.lookahead_ns
            .map_or("none (nothing crosses)".to_string(), |ns| Duration(ns)
                .to_string()),
        p.windows,
        w.payload,
        w.cross_core_hops,
        w.cross_core_bytes
    );
    for (k, worker) in p.per_worker.iter().enumerate() {
        print!("  worker {k}: {} packet-hops", worker.packet_hops);
        if let Some(s) = worker.wait_seconds {
            print!(", {s:.3} s waiting for the others");
        }
        if let Some(cpus) = &w.cpus {
            print!(", CPU {}", cpus[k]);
        }
        println!();
    }
    if w.moved_pipes > 0 {
        println!(
            "  {} pipes moved to the worker of the host that sends into them",
            w.moved_pipes
        );
    }
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
    print!("{}", crate::table::format_pipes(&r.pipes, None, top));
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
