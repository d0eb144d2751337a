//! `netloom run FILE`: turns the flags into a plan, starts it as a `netloom_live::Experiment`
//! (one network namespace and TUN device per host, the engine in real time), waits for Ctrl-C,
//! SIGTERM, `netloom stop` or `--duration`, stops it and prints its report; with `--detach`,
//! starts itself in the background and returns once every host is up. Glue only: the run is
//! netloom-live's.

use crate::input::number_in;
use crate::stdout::say;
use anyhow::{bail, Context, Result};
use clap::Args;
use netloom_live::{
    Experiment, Hybrid, Options, Placement, Plan, Precision, RouterControl, Split, Thresholds,
};
use netloom_topo::units::Range;
use netloom_topo::Topology;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

#[derive(Args)]
pub struct RunArgs {
    /// Topology file (.toml or .json, or a format docs/import.md lists).
    file: PathBuf,
    #[command(flatten)]
    input: crate::input::InputArgs,
    /// Experiment name (default: the file name without extension); names the hosts' namespaces.
    #[arg(long)]
    name: Option<String>,
    /// Return once every host is up; the emulator keeps running in the background until
    /// `netloom stop`.
    #[arg(long)]
    detach: bool,
    /// How the engine waits between deadlines: busy (a core spins, microsecond accuracy),
    /// hybrid (sleeps, spinning before deadlines and after packets) or sleep (least CPU, timer
    /// lateness).
    #[arg(long, default_value = "hybrid", value_parser = ["busy", "hybrid", "sleep"])]
    precision: String,
    /// With --precision hybrid: how long before a deadline to stop sleeping and spin; auto
    /// learns it from how late this machine's timed wake-ups are.
    #[arg(long, default_value = "auto")]
    spin: String,
    /// With --precision hybrid: how long to keep spinning after a packet before sleeping, so
    /// the reply of an exchange finds the engine awake (default 500us; docs/live.md).
    #[arg(long)]
    linger: Option<String>,
    /// Stop by itself after this long (for scripts and tests).
    #[arg(long)]
    duration: Option<String>,
    /// MTU of every host's interface, 1280 to 65535 (default: each host's from its links'
    /// `mtu` in the topology file, 1500 unless set; docs/live.md).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1280..=65535))]
    mtu: Option<u32>,
    /// TCP congestion control every host starts with (net.ipv4.tcp_congestion_control in its
    /// namespace); one of the machine's tcp_available_congestion_control.
    #[arg(long, value_name = "NAME", default_value = netloom_os::DEFAULT_CONGESTION_CONTROL)]
    tcp_cc: String,
    /// A packet released later than this after its scheduled time counts as late.
    #[arg(long, default_value = "100us")]
    late_threshold: String,
    /// The run is marked inaccurate when more than this fraction of packets is late (0 to 1).
    #[arg(long, default_value_t = 0.001, value_parser = number_in(Range::closed(0.0, 1.0)))]
    max_late_fraction: f64,
    /// Seed of the pipes' random choices (loss, jitter).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Pin the engine to this CPU (with one worker).
    #[arg(long, conflicts_with = "pin")]
    cpu: Option<usize>,
    /// Partition the emulation over this many driver threads: each reads the hosts of its part,
    /// owns its pipes and writes out the packets it read (docs/live.md, "Several workers").
    #[arg(long, default_value_t = 1)]
    workers: u32,
    /// With --workers: the pipe → core assignment to run (from `netloom partition`).
    #[arg(long)]
    assignment: Option<PathBuf>,
    /// With --workers and no --assignment: the partitioner, over static weights (default metis).
    #[arg(long)]
    method: Option<netloom_partition::Method>,
    /// With --workers: pin each worker to a CPU, communicating workers on CPUs sharing a cache.
    #[arg(long)]
    pin: bool,
    /// With --workers: what crosses between workers. cache: only a descriptor, the payload
    /// stays with the worker that read it, which writes it out; ship: the payload travels with
    /// the packet, copied at every crossing, and the destination's worker writes it out.
    #[arg(long, value_enum, default_value = "cache")]
    payload: crate::partition::PayloadArg,
    /// With --workers or --cluster: every EPOCH (100ms or more), repartition on the traffic
    /// observed and move pipes (and, with --workers, hosts) between the workers while the run
    /// goes on (docs/live.md, "Dynamic repartitioning").
    #[arg(long, value_name = "EPOCH")]
    repartition: Option<String>,
    /// Keep every other CPU from halting while the run lasts (a SCHED_IDLE spinning thread on
    /// each), so programs waiting for packets wake in microseconds, not tens (docs/live.md).
    #[arg(long, requires = "cpu")]
    keep_cpus_awake: bool,
    /// Keep the engine at normal priority. By default, with hybrid and sleep precision, it runs
    /// at real-time priority (SCHED_FIFO 40) so the programs under test cannot delay its
    /// wake-ups; busy precision never does (the kernel throttles spinning real-time threads).
    #[arg(long)]
    no_realtime: bool,
    /// Turn GSO off: the hosts' kernels cut TCP into MTU-size packets before netloom reads them,
    /// instead of handing over 64 KB super-packets that netloom times and writes segment by
    /// segment (docs/live.md).
    #[arg(long)]
    no_gso: bool,
    /// Deliver packets whose source address is not their sending host's own (a host sending as
    /// another, or as an address no host has). By default they are dropped; either way each
    /// host's `spoofed` counter counts them (docs/live.md).
    #[arg(long)]
    allow_spoofing: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics while the run lasts (HOST:PORT, or a
    /// port alone for localhost; docs/web.md).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// Serve the live web view at http://ADDR/ while the run lasts; changes from the page need
    /// the token printed at start (docs/web.md).
    #[arg(long, value_name = "ADDR")]
    web: Option<String>,
    /// Before starting, predict from this calibration (`netloom calibrate`) whether the load
    /// fits this machine, and say so; default: /var/lib/netloom/calibration.json if it exists
    /// (docs/calibrate.md).
    #[arg(long, value_name = "FILE")]
    calibration: Option<PathBuf>,
    /// With a calibration: the load to predict, a traffic spec (docs/traffic.md); default: the
    /// links' capacity.
    #[arg(long, value_name = "SPEC")]
    load: Option<String>,
    /// Use a --calibration measured on another machine or by another netloom version.
    #[arg(long)]
    force_calibration: bool,
    /// Print the final report as JSON (docs/live.md).
    #[arg(long)]
    json: bool,
    /// How many pipes the final table shows (busiest first); 0 for all.
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Copy each kernel router's daemon logs (and configuration) to DIR/<router>/ when the run
    /// ends; while it runs they are in /run/netloom/<name>/routers/<router>/ (docs/routing.md).
    #[arg(long, value_name = "DIR")]
    router_logs: Option<PathBuf>,
    /// Run over the machines of this cluster file: a worker on each (started over SSH), each
    /// machine emulating its part (docs/cluster.md).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["workers", "assignment", "method", "pin", "cpu", "payload", "keep_cpus_awake", "router_logs"])]
    cluster: Option<PathBuf>,
    /// With --cluster: refuse the run (exit 2, every machine stopped) when the least delay of
    /// a pipe between machines is less than the one-way delay measured between them or than
    /// what is known of their clocks, and exit 2 after the report when a clock moved more,
    /// instead of warning.
    #[arg(long, requires = "cluster")]
    strict: bool,
    /// Internal: the background process of --detach writes this file once every host is up.
    #[arg(long, hide = true)]
    ready_file: Option<PathBuf>,
}

pub fn run(args: RunArgs) -> Result<()> {
    let name = match &args.name {
        Some(n) => n.clone(),
        None => default_name(&args.file)?,
    };
    // The name becomes paths (the registry, the log): checked before any file is touched.
    netloom_os::check_experiment_name(&name)?;
    // A run over several machines sends the topology to each, with its data files.
    let (topo, bundle) = match args.cluster {
        Some(_) => {
            let (topo, bundle) = args.input.load_bundled(&args.file)?;
            (topo, Some(bundle))
        }
        None => (args.input.load(&args.file)?, None),
    };
    let stop_after = args
        .duration
        .as_deref()
        .map(std_duration)
        .transpose()
        .context("--duration")?;
    let options = options(&args, &topo, name.clone())?;
    if let Some(cluster) = &args.cluster {
        if args.detach {
            return detach(&name, args.name.is_none());
        }
        return crate::cluster::run(crate::cluster::Coordinate {
            cluster,
            topology: topo,
            bundle: bundle.expect("loaded bundled for --cluster"),
            options,
            stop_after,
            json: args.json,
            top: args.top,
            ready_file: args.ready_file.as_ref(),
            listeners: crate::web::bind(args.metrics.as_deref(), args.web.as_deref())?,
            strict: args.strict,
        });
    }
    predict(&args, &topo)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let plan = Plan::new(topo, options, cpus).with_context(|| args.file.display().to_string())?;
    // Kernel routers' daemons are checked before anything starts, detached or not: a suite
    // that is not installed, a configuration it refuses.
    let routing =
        netloom_routing::RoutingControl::new(plan.topology(), &plan.kernel_routers(), &name)?;
    // Opened now, held for the run and written below without following a link: a user's
    // directory swapped for a symbolic link is refused before anything starts.
    let router_logs = args
        .router_logs
        .as_deref()
        .map(netloom_os::OutputDir::open)
        .transpose()
        .context("--router-logs")?;
    if args.detach {
        return detach(&name, args.name.is_none());
    }
    let routing = routing.map(|control| {
        let control = match router_logs {
            Some(dir) => control.keep_logs(dir),
            None => control,
        };
        Box::new(control) as Box<dyn RouterControl>
    });
    for warning in plan.warnings() {
        say(format_args!("netloom: warning: {warning}"));
    }
    // Bound before anything is brought up: an address in use is refused with nothing to undo.
    let listeners = crate::web::bind(args.metrics.as_deref(), args.web.as_deref())?;
    // Signals first, so a Ctrl-C during setup still tears down what was made.
    let signal = netloom_os::install_stop_handler()?;
    let started = std::time::Instant::now();
    let hosts = plan.topology().hosts.len();
    let precision = plan.precision_name();
    let worker_cpus = plan.worker_cpus();
    let experiment = Experiment::start_with(plan, routing)?;
    let priority = experiment.info().priority.as_ref();
    if let Some(refused) = priority.and_then(|p| p.refused.as_ref()) {
        say(format_args!(
            "netloom: warning: {refused}; the workers run at normal priority instead, where the programs under test can delay them by whole time slices (docs/live.md)"
        ));
    }
    say(format_args!(
        "netloom: experiment {name} is up: {hosts} hosts in {:.2} s ({precision} precision); Ctrl-C or `netloom stop --name {name}` ends it",
        started.elapsed().as_secs_f64(),
    ));
    let servers = crate::web::serve(listeners, Arc::new(experiment.handle()), &worker_cpus)?;
    // Up means answering: the control socket listens and the workers run.
    if let Some(ready) = &args.ready_file {
        std::fs::write(ready, b"up\n").with_context(|| format!("writing {}", ready.display()))?;
    }
    let ending = experiment.wait(signal, stop_after.map(|d| std::time::Instant::now() + d));
    crate::web::stop(servers);
    let report = experiment.stop(&ending)?;
    let text = match args.json {
        true => serde_json::to_string_pretty(&report)? + "\n",
        false => crate::live::format_report(&report, true, args.top),
    };
    // Nobody may be reading any more (`netloom run ... | head -1`): the run is over either way.
    let _ = std::io::stdout().write_all(text.as_bytes());
    Ok(())
}

/// The capacity prediction before a start: from `--calibration` (refused if foreign, unless
/// `--force-calibration`), or from the default file when there is one (a foreign one is then
/// noted and ignored). Says the prediction's sentence; never stops the run.
fn predict(args: &RunArgs, topo: &netloom_topo::Topology) -> Result<()> {
    let default = PathBuf::from(netloom_live::calibration::DEFAULT_PATH);
    let path = match &args.calibration {
        Some(path) => path.clone(),
        None if default.exists() => default,
        None => return Ok(()),
    };
    let calibration = match crate::calibrate::read_calibration(&path, args.force_calibration) {
        Ok(c) => c,
        Err(e) if args.calibration.is_some() => return Err(e),
        Err(e) => {
            say(format_args!("netloom: note: no capacity prediction: {e:#}"));
            return Ok(());
        }
    };
    let capacity = crate::calibrate::CapacityArgs {
        capacity: true,
        calibration: Some(path.clone()),
        load: args.load.clone(),
        workers: args.workers,
        precision: args.precision.clone(),
        force: args.force_calibration,
        seed: args.seed,
    };
    let report = crate::calibrate::predict(topo, &capacity, &calibration, &path)?;
    say(format_args!("netloom: capacity: {}", report.sentence()));
    Ok(())
}

/// The run's options from the flags: how many workers and how they split and run, the
/// precision, the thresholds.
fn options(args: &RunArgs, topo: &Topology, name: String) -> Result<Options> {
    let split = match (&args.assignment, args.method) {
        (Some(path), _) => Some(Split::Assignment(crate::partition::read_assignment(
            topo, path,
        )?)),
        (None, Some(method)) => Some(Split::Method(method)),
        (None, None) => None,
    };
    let placement = match (args.cpu, args.pin) {
        (Some(cpu), _) => Placement::Cpu(cpu),
        (None, true) => Placement::ByCache(netloom_live::this_machine()),
        (None, false) => Placement::Anywhere,
    };
    Ok(Options {
        workers: args.workers as usize,
        split,
        payload: args.payload.into(),
        placement,
        precision: precision(&args.precision, &args.spin, args.linger.as_deref())?,
        thresholds: Thresholds {
            late: std_duration(&args.late_threshold).context("--late-threshold")?,
            max_late_fraction: args.max_late_fraction,
        },
        seed: args.seed,
        mtu: args.mtu,
        gso: !args.no_gso,
        congestion_control: args.tcp_cc.clone(),
        realtime: !args.no_realtime,
        keep_cpus_awake: args.keep_cpus_awake,
        allow_spoofing: args.allow_spoofing,
        repartition: args
            .repartition
            .as_deref()
            .map(|text| netloom_topo::units::parse_duration(text).context("--repartition"))
            .transpose()?,
        ..Options::new(name)
    })
}

/// Starts this same command in the background and returns once it reports every host up (or
/// fails, showing its log and removing it). The log is new (a running experiment's is never
/// touched) and the background process inherits no descriptor of this one but its output.
fn detach(name: &str, add_name: bool) -> Result<()> {
    let (log_path, log) = netloom_os::create_log(name)?;
    let ready = netloom_os::registry_dir().join(format!("{name}.ready"));
    let _ = std::fs::remove_file(&ready);
    let mut argv: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--detach")
        .collect();
    // The name defaulted from the file name is passed on, so both processes agree on it.
    if add_name {
        argv.extend(["--name".into(), name.into()]);
    }
    argv.extend(["--ready-file".into(), ready.display().to_string()]);
    let forget_log = || {
        let _ = std::fs::remove_file(&log_path);
    };
    let mut command = std::process::Command::new(std::env::current_exe()?);
    command
        .args(&argv)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // Its own process group: a Ctrl-C at this terminal is not for it.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    netloom_os::close_inherited_fds(&mut command);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            forget_log();
            return Err(err).context("starting the background emulator");
        }
    };
    let give_up = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        if ready.exists() {
            let _ = std::fs::remove_file(&ready);
            outln!(
                "netloom: experiment {name} is up (pid {}); log in {}; `netloom stop --name {name}` tears it down",
                child.id(),
                log_path.display()
            )
            // It runs either way: the error says so, lest a script take it for a failed start.
            .with_context(|| format!("experiment {name} is up (pid {}), but", child.id()))?;
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            forget_log();
            bail!("the background emulator exited ({status}) before it was up:\n{log}");
        }
        if std::time::Instant::now() > give_up {
            // SIGTERM, not SIGKILL: it tears down whatever it had made.
            netloom_os::terminate(child.id())?;
            bail!(
                "the background emulator was not up after 120 s; see {}",
                log_path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn default_name(file: &Path) -> Result<String> {
    let stem = file
        .file_stem()
        .and_then(|s| s.to_str())
        .context("the file name gives no experiment name; pass --name")?;
    Ok(stem.to_string())
}

/// `--precision` with, for hybrid, `--spin` (a duration, or `auto` to learn it) and `--linger`.
fn precision(mode: &str, spin: &str, linger: Option<&str>) -> Result<Precision> {
    let ns = |text: &str| netloom_topo::units::parse_duration(text);
    Ok(match mode {
        "busy" => Precision::Busy,
        "sleep" => Precision::Sleep,
        _ => Precision::Hybrid(Hybrid {
            spin: match spin {
                "auto" => None,
                text => Some(ns(text).context("--spin (a duration, or auto)")?),
            },
            linger: match linger {
                Some(text) => ns(text).context("--linger")?,
                None => Hybrid::default().linger,
            },
        }),
    })
}

pub fn std_duration(text: &str) -> Result<Duration> {
    let d = netloom_topo::units::parse_duration(text)?;
    Ok(Duration::from_nanos(d.as_nanos()))
}
