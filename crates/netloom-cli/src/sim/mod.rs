//! `netloom sim FILE --traffic SPEC --duration D`: flags into `netloom_sim::Options`, the run
//! (netloom-sim plans and runs it), and its report printed as tables or as the JSON schema of
//! docs/json.md.

use anyhow::{bail, Context, Result};
use clap::Args;
use netloom_engine::sim::Progress;
use netloom_engine::traffic::parse_spec;
use netloom_sim::{Capture, Launch, Options, PlanError, Processes, SimError, SimPlan};
use netloom_time::Duration;
use netloom_topo::Topology;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

mod mpi;
mod text;

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
    /// Run workers 1 to N-1 of --workers N as processes of their own, in lock-step over TCP
    /// (hand-offs as GENEVE batches, docs/wire.md). The results are the same as with threads.
    #[arg(long)]
    processes: bool,
    /// Be worker K of a coordinator's run over processes (set by the coordinator).
    #[arg(long, hide = true)]
    process_worker: Option<u16>,
    /// Be one rank of `mpirun -np N netloom sim ...`: the workers are the N ranks (rank 0
    /// reports), in lock-step over MPI. Needs a netloom built with --features mpi.
    #[arg(long, conflicts_with_all = ["processes", "pin", "series", "capture", "repartition"])]
    mpi: bool,
    /// Run over the machines of this cluster file (docs/cluster.md): --workers --processes
    /// with a worker on each machine (started through its launcher), this process being the
    /// worker of the machine it runs on. The results are the same as with one engine. `slurm`:
    /// the nodes of the Slurm job this runs in, workers started with srun.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["workers", "cores", "assignment", "method", "pin", "processes", "mpi", "series", "capture", "repartition"])]
    cluster: Option<PathBuf>,
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

pub fn run(args: SimArgs) -> Result<()> {
    if args.mpi {
        return mpi::run(args);
    }
    let options = options(&args)?;
    // A worker process takes the topology from the coordinator: no file of its own.
    if let Some(me) = args.process_worker {
        let spec = parse_spec(&args.traffic).context("--traffic")?;
        return netloom_sim::serve_worker(me, &spec, &options)
            .with_context(|| format!("worker {me}"));
    }
    coordinate(args, options, None)
}

/// The run's options from the flags.
fn options(args: &SimArgs) -> Result<Options> {
    let duration = positive(&args.duration, "--duration", "simulates nothing", "30s")?;
    let series = args
        .series
        .as_deref()
        .map(|text| positive(text, "--series", "is no interval", "1s"))
        .transpose()?;
    let repartition = args
        .repartition
        .as_deref()
        .map(|text| positive(text, "--repartition", "is no epoch", "30s"))
        .transpose()?;
    Ok(Options {
        wall_clock: !args.no_wall_clock,
        series,
        imbalance: args.imbalance,
        method: args.method,
        cores: args.cores,
        workers: args.workers,
        payload: args.payload.into(),
        pin: args.pin,
        observe: args.observe.is_some(),
        repartition,
        ..Options::new(duration, args.seed)
    })
}

/// Plans and runs the sim, this process being the coordinator (worker 0 when processes run
/// the workers, started by `launch`, or here if none is given), and prints the report.
fn coordinate(args: SimArgs, mut options: Options, launch: Option<Launch>) -> Result<()> {
    let cluster = match &args.cluster {
        Some(path) => {
            let cluster = crate::cluster::read(path)?;
            Some(netloom_sim::this_machine_first(cluster).map_err(|e| flag_error(e, &args.file))?)
        }
        None => None,
    };
    let processes = args.processes || cluster.is_some() || launch.is_some();
    let (topo, bundle) = match processes {
        true => {
            let (topo, bundle) = args.input.load_bundled(&args.file)?;
            (topo, Some(bundle))
        }
        false => (args.input.load(&args.file)?, None),
    };
    options.captures = args
        .capture
        .iter()
        .map(|c| capture_target(&topo, c))
        .collect::<Result<Vec<_>>>()?;
    let spec = parse_spec(&args.traffic).context("--traffic")?;
    options.assignment = match &args.assignment {
        Some(path) => Some(crate::partition::read_assignment(&topo, path)?),
        None => None,
    };
    if let Some(topology) = bundle {
        let launch = match launch {
            Some(launch) => launch,
            None => Launch::Spawn(worker_command(&cluster)?),
        };
        options.processes = Some(Processes {
            launch,
            topology,
            cluster,
        });
    }
    let plan = SimPlan::new(topo, &spec, options).map_err(|e| flag_error(e, &args.file))?;
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
    let observer: Option<netloom_sim::Observer<'_>> = match show_progress {
        true => Some(&mut progress),
        false => None,
    };
    let report = plan
        .run(observer, std::time::Duration::from_millis(250))
        .map_err(|e| flag_error(e, &args.file))?;
    if show_progress {
        eprint!("\r{:90}\r", "");
    }
    if let Some(path) = &args.observe {
        let text = report.observation.to_json() + "\n";
        netloom_os::write_output(path, text.as_bytes()).context("--observe")?;
    }
    match args.json {
        true => crate::stdout::write(&(serde_json::to_string_pretty(&report)? + "\n"))?,
        false => text::print(&report, args.top)?,
    }
    Ok(())
}

/// The duration `text` of `flag`, which must not be zero (`zero` says why, `example` what to
/// give instead).
fn positive(text: &str, flag: &str, zero: &str, example: &str) -> Result<Duration> {
    let d = netloom_topo::units::parse_duration(text).context(flag.to_string())?;
    if d.as_nanos() == 0 {
        bail!("{flag}: {text:?} {zero}; give a positive duration such as {example}");
    }
    Ok(d)
}

/// How a worker process is started: this program again with the same arguments and
/// `--process-worker K`, on machine K of `cluster` through its launcher, or here.
fn worker_command(
    cluster: &Option<netloom_live::cluster::Cluster>,
) -> Result<Box<dyn Fn(usize) -> std::process::Command>> {
    let program = std::env::current_exe().context("--processes: finding this program")?;
    let argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let machines = cluster
        .as_ref()
        .map(|c| c.machines.clone())
        .unwrap_or_default();
    Ok(Box::new(move |k| {
        let mut argv = argv.clone();
        argv.extend(["--process-worker".into(), k.to_string().into()]);
        match machines.get(k) {
            Some(machine) => machine.netloom_command(&argv),
            None => {
                let mut c = std::process::Command::new(&program);
                c.args(&argv);
                c
            }
        }
    }))
}

/// A run's error in the words of `sim`'s flags (the library names options, not flags).
fn flag_error(e: SimError, file: &Path) -> anyhow::Error {
    let flags = |text: String| anyhow::anyhow!(text);
    match e {
        SimError::Plan(e) => flags(match e {
            PlanError::NoWorkers => "--workers 0: give at least 1".into(),
            PlanError::SeriesNeedOneWorker { workers } => {
                format!("--series needs one worker: drop --workers {workers}")
            }
            PlanError::CapturesNeedOneWorker { workers } => {
                format!("--capture needs one worker: drop --workers {workers}")
            }
            PlanError::MethodWithoutCores => "--method needs --cores or --workers".into(),
            PlanError::CoresAndWorkers { cores, workers } => {
                format!("--cores {cores} and --workers {workers}: give one, or the same number")
            }
            PlanError::ProcessesNeedWorkers => "--processes needs --workers 2 or more".into(),
            PlanError::RepartitionWithoutPartition => "--repartition needs a partition to start \
                from: give --cores K or --assignment FILE"
                .into(),
            PlanError::RepartitionWithSeriesOrCaptures => {
                "--repartition runs in epochs: drop --series and --capture".into()
            }
            PlanError::RepartitionWithProcesses => {
                "--repartition moves pipes between threads only; drop --processes".into()
            }
            PlanError::AssignmentCores { cores, workers } => format!(
                "the assignment has {cores} cores and --workers is {workers}: they must be equal"
            ),
            PlanError::ImmovablePipe { pipe } => format!(
                "--repartition with --workers: pipe {pipe} holds its packets in flow queues \
                 (fq_codel), which cannot move between workers yet; drop --workers or use \
                 another aqm"
            ),
        }),
        SimError::Topology(e) => anyhow::anyhow!(e).context(file.display().to_string()),
        SimError::Traffic(e) => anyhow::Error::new(e).context("--traffic"),
        SimError::Repartition(e) => anyhow::anyhow!(e).context("--repartition"),
        SimError::Capture { path, error } => {
            anyhow::Error::new(error).context(format!("--capture {}", path.display()))
        }
        SimError::CaptureFile(e) => anyhow::Error::new(e).context("--capture"),
        e => e.into(),
    }
}

/// The pipes and the file of `--capture LINK=FILE`: `A:B` is the link between A and B, both
/// directions; `A` every link of node A.
fn capture_target(topo: &Topology, text: &str) -> Result<Capture> {
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
    Ok(Capture {
        pipes,
        path: PathBuf::from(file),
    })
}
