//! `netloom run FILE`: brings a topology up live (one network namespace and TUN device per host)
//! and drives the engine in real time until Ctrl-C, SIGTERM, `netloom stop` or `--duration`;
//! with `--detach`, returns once every host is up. With `--workers N` the pipes and hosts are
//! partitioned over N driver threads. Tears everything down on the way out and prints accuracy,
//! per-host and per-pipe figures.

use anyhow::{bail, Context, Result};
use clap::Args;
use netloom_engine::{Engine, Ownership, Report};
use netloom_live::mailbox::mailboxes;
use netloom_live::{
    control, AccuracyReport, Clock, Driver, HostCounters, Precision, Thresholds, TunIo,
};
use netloom_os::{address_plan, Experiment, ExperimentSpec, HostSpec};
use netloom_topo::Topology;
use serde::Serialize;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
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
    /// hybrid (sleep, then spin for the last --spin) or sleep (least CPU, timer slack).
    #[arg(long, default_value = "hybrid", value_parser = ["busy", "hybrid", "sleep"])]
    precision: String,
    /// With --precision hybrid: how long before a deadline to stop sleeping and spin.
    #[arg(long, default_value = "60us")]
    spin: String,
    /// Stop by itself after this long (for scripts and tests).
    #[arg(long)]
    duration: Option<String>,
    /// MTU of every host's interface (jumbo frames up to 65535 allowed).
    #[arg(long, default_value_t = 1500)]
    mtu: u32,
    /// A packet released later than this after its scheduled time counts as late.
    #[arg(long, default_value = "100us")]
    late_threshold: String,
    /// The run is marked inaccurate when more than this fraction of packets is late.
    #[arg(long, default_value_t = 0.001)]
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
    /// Print the final report as JSON (docs/live.md).
    #[arg(long)]
    json: bool,
    /// How many pipes the final table shows (busiest first); 0 for all.
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Internal: the background process of --detach writes this file once every host is up.
    #[arg(long, hide = true)]
    ready_file: Option<PathBuf>,
}

/// SCHED_FIFO priority of a sleeping driver: above every normal process, below the kernel's
/// own real-time threads (which use 50 and up only for interrupts on some kernels).
pub const REALTIME_PRIORITY: u8 = 40;

/// Most packets held inside the emulated network at once; more are dropped and counted as
/// physical drops (the run is then marked inaccurate).
const MAX_IN_FLIGHT: usize = 65_536;

#[derive(Serialize)]
struct HostReport {
    name: String,
    ipv4: IpAddr,
    ipv6: IpAddr,
    #[serde(flatten)]
    counters: HostCounters,
}

#[derive(Serialize)]
struct RunReport {
    experiment: String,
    precision: String,
    wall_seconds: f64,
    accuracy: AccuracyReport,
    hosts: Vec<HostReport>,
    pipes: Vec<netloom_engine::report::PipeReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    workers: Option<WorkersReport>,
}

/// How a run of several workers was split (docs/live.md).
#[derive(Serialize)]
struct WorkersReport {
    workers: usize,
    /// The least time a packet spends in a pipe before another worker takes it over: how far
    /// ahead hand-offs travel (0: some cross at once, and arrive late by the hand-off; null:
    /// nothing can cross).
    lookahead_ns: Option<u64>,
    /// Hosts each worker reads and writes for.
    hosts: Vec<usize>,
    /// Pipes each worker owns.
    pipes: Vec<usize>,
    /// What crosses: `cache` (a descriptor) or `ship` (the payload too).
    payload: &'static str,
    /// Packets handed from one worker to another, and the bytes those hand-offs moved (64 per
    /// descriptor, plus the packet when shipped).
    cross_core_hops: u64,
    cross_core_bytes: u64,
}

/// How the run is split: the ownership of a run of several workers, `None` for one.
struct Split {
    ownership: Option<Arc<Ownership>>,
    /// The hosts each worker reads (by position in `Topology::hosts`), by worker.
    hosts: Vec<Vec<u32>>,
    /// CPU of each worker, if pinned.
    cpus: Vec<Option<usize>>,
}

impl Split {
    fn workers(&self) -> usize {
        self.hosts.len()
    }
}

pub fn run(args: RunArgs) -> Result<()> {
    let topo = args.input.load(&args.file)?;
    let name = match &args.name {
        Some(n) => n.clone(),
        None => default_name(&args.file)?,
    };
    let precision = precision(&args)?;
    let thresholds = Thresholds {
        late: std_duration(&args.late_threshold).context("--late-threshold")?,
        max_late_fraction: args.max_late_fraction,
    };
    let stop_after = args
        .duration
        .as_deref()
        .map(std_duration)
        .transpose()
        .context("--duration")?;
    if args.detach {
        return detach(&name, args.name.is_none());
    }
    let split = split(&args, &topo)?;
    let (spec, addresses) = plan(&topo, &name, args.mtu);
    // Signals first, so a Ctrl-C during setup still tears down what was made.
    let stop = netloom_os::install_stop_handler()?;
    let started = std::time::Instant::now();
    let mut experiment = Experiment::create(&spec)?;
    eprintln!(
        "netloom: experiment {name} is up: {} hosts in {:.2} s ({} precision); Ctrl-C or `netloom stop --name {name}` ends it",
        spec.hosts.len(),
        started.elapsed().as_secs_f64(),
        args.precision
    );
    // Before pinning: the CPUs to keep awake come from this thread's CPU mask.
    let _awake = match args.cpu.filter(|_| args.keep_cpus_awake) {
        Some(cpu) => Some(netloom_os::KeepAwake::start(
            &netloom_os::KeepAwake::cpus_except(cpu),
        )?),
        None => None,
    };
    let (inboxes, posts) = mailboxes(split.workers()).context("creating the workers' mailboxes")?;
    let socket = control::socket_path(&netloom_os::registry_dir(), &name);
    control::serve(&socket, posts.clone())
        .with_context(|| format!("listening on {}", socket.display()))?;
    let clock = Clock::start();
    let engines = match &split.ownership {
        None => vec![Engine::new(topo.clone(), args.seed)],
        Some(o) => Engine::partitioned_all(&topo, args.seed, o),
    };
    let mut drivers = Vec::with_capacity(split.workers());
    for ((inbox, engine), reads) in inboxes.into_iter().zip(engines).zip(&split.hosts) {
        let waker = inbox.waker().context("creating a mailbox waker")?;
        let mut io = TunIo::new(experiment.tuns(), reads.clone(), Some(waker))?;
        if args.no_gso {
            io.set_gso(false)?;
        }
        let mut driver = Driver::new(
            engine,
            io,
            &addresses,
            args.mtu as usize,
            MAX_IN_FLIGHT,
            precision,
            thresholds,
        );
        driver.connect(inbox, posts.clone(), clock);
        drivers.push(driver);
    }
    drop(posts);
    // Up means answering: the control socket listens and the workers are about to run.
    if let Some(ready) = &args.ready_file {
        std::fs::write(ready, b"up\n").with_context(|| format!("writing {}", ready.display()))?;
    }
    let run_started = std::time::Instant::now();
    let realtime = !args.no_realtime && precision != Precision::Busy;
    let (driver, result) = drive_all(drivers, &split.cpus, realtime, stop, stop_after);
    let wall = run_started.elapsed();
    let mut report = final_report(&driver, &spec, &name, &args.precision, wall);
    report.workers = split.ownership.as_ref().map(|o| WorkersReport {
        workers: split.workers(),
        lookahead_ns: Some(o.lookahead().as_nanos()).filter(|&ns| ns != u64::MAX),
        hosts: split.hosts.iter().map(Vec::len).collect(),
        pipes: o
            .assignment()
            .iter()
            .fold(vec![0; split.workers()], |mut n, &w| {
                n[w as usize] += 1;
                n
            }),
        payload: o.payload().name(),
        cross_core_hops: driver.engine().counters().cross_core_hops,
        cross_core_bytes: driver.engine().counters().cross_core_bytes,
    });
    drop(driver);
    let teardown = experiment.teardown();
    result?;
    teardown?;
    print_report(&report, args.json, args.top)
}

/// The run's split over `--workers`: the assignment (from a file or a partitioner), the
/// ownership it gives live, and each worker's CPU.
fn split(args: &RunArgs, topo: &Topology) -> Result<Split> {
    let workers = args.workers as usize;
    if workers == 0 {
        bail!("--workers 0: give at least 1");
    }
    if workers == 1 {
        if args.assignment.is_some() || args.method.is_some() || args.pin {
            bail!("--assignment, --method and --pin need --workers 2 or more");
        }
        if matches!(args.payload, crate::partition::PayloadArg::Ship) {
            bail!("--payload ship needs --workers 2 or more");
        }
        return Ok(Split {
            ownership: None,
            hosts: vec![(0..topo.hosts.len() as u32).collect()],
            cpus: vec![args.cpu],
        });
    }
    if args.cpu.is_some() {
        bail!("--cpu pins a single worker; with --workers, --pin places them");
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if args.precision == "busy" && workers >= cpus {
        eprintln!(
            "netloom: warning: {workers} busy workers spin on all {cpus} CPUs: the programs under \
             test will take CPUs from them for whole time slices; use --precision hybrid"
        );
    }
    let assignment = crate::partition::sim_assignment(
        topo,
        args.assignment.as_deref(),
        Some(args.workers),
        args.method,
        args.seed,
    )?
    .expect("a core count is given");
    crate::partition::check_workers(&assignment, workers)?;
    let ownership = Ownership::live(topo, &assignment.pipes, workers, args.payload.into())?;
    if let Some(pipe) = ownership.instant_crossing() {
        eprintln!(
            "netloom: warning: pipe {pipe} joins two workers with no delay: packets crossing it \
             reach the next worker late by the hand-off (a few microseconds, measured as \
             late hand-offs); give it a delay or keep its ends on one worker"
        );
    }
    let pinned = match args.pin {
        true => {
            let run = netloom_partition::Assignment {
                pipes: ownership.assignment(),
                ..assignment
            };
            crate::partition::worker_cpus(topo, &run)
                .into_iter()
                .map(Some)
                .collect()
        }
        false => vec![None; workers],
    };
    let mut hosts = vec![Vec::new(); workers];
    for h in 0..topo.hosts.len() as u32 {
        hosts[usize::from(ownership.host_owner(h))].push(h);
    }
    Ok(Split {
        ownership: Some(Arc::new(ownership)),
        hosts,
        cpus: pinned,
    })
}

/// Runs every worker's driver on a thread of its own (worker 0 on this one) until asked to
/// stop, `stop_after` passes, or one fails (the others then stop too); returns worker 0's
/// driver with the others absorbed, and the first failure.
fn drive_all<'t>(
    drivers: Vec<Driver<TunIo<'t>>>,
    cpus: &[Option<usize>],
    realtime: bool,
    stop: &AtomicBool,
    stop_after: Option<Duration>,
) -> (Driver<TunIo<'t>>, Result<()>) {
    let halt = AtomicBool::new(false);
    let work = |k: usize, mut driver: Driver<TunIo<'t>>| {
        let result = prepare_thread(cpus[k], realtime)
            .and_then(|()| drive(&mut driver, stop, &halt, stop_after))
            .with_context(|| format!("worker {k}"));
        halt.store(true, Ordering::Relaxed);
        (driver, result)
    };
    let mut drivers = drivers.into_iter();
    let first = drivers.next().expect("at least one worker");
    std::thread::scope(|s| {
        let work = &work;
        let others: Vec<_> = drivers
            .enumerate()
            .map(|(i, d)| {
                std::thread::Builder::new()
                    .name(format!("netloom-worker-{}", i + 1))
                    .spawn_scoped(s, move || work(i + 1, d))
                    .expect("starting a worker thread")
            })
            .collect();
        let (mut merged, mut result) = work(0, first);
        for t in others {
            let (driver, r) = t.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
            result = result.and(r);
            merged.absorb(driver);
        }
        (merged, result)
    })
}

/// Gets the calling thread ready to drive: pinned if asked, fine-grained timers, and real-time
/// priority when it sleeps between deadlines.
fn prepare_thread(cpu: Option<usize>, realtime: bool) -> Result<()> {
    if let Some(cpu) = cpu {
        netloom_os::pin_current_thread(cpu)?;
    }
    netloom_os::set_timer_slack_ns(1);
    if realtime {
        netloom_os::set_realtime_priority(REALTIME_PRIORITY)?;
    }
    Ok(())
}

/// The experiment for `topo`: its hosts in topology order with the documented addresses, and
/// each host's addresses as the driver routes them.
pub fn plan(topo: &Topology, name: &str, mtu: u32) -> (ExperimentSpec, Vec<Vec<IpAddr>>) {
    let spec = ExperimentSpec {
        name: name.to_string(),
        hosts: topo
            .hosts
            .iter()
            .enumerate()
            .map(|(i, &node)| {
                let (ipv4, ipv6) = address_plan(i);
                HostSpec {
                    name: topo.node(node).name.clone(),
                    ipv4,
                    ipv6,
                }
            })
            .collect(),
        mtu,
    };
    let addresses = spec
        .hosts
        .iter()
        .map(|h| vec![IpAddr::V4(h.ipv4), IpAddr::V6(h.ipv6)])
        .collect();
    (spec, addresses)
}

/// Steps the driver until asked to stop (`stop`, or `halt` by another worker) or until
/// `stop_after` has passed.
fn drive(
    driver: &mut Driver<TunIo<'_>>,
    stop: &AtomicBool,
    halt: &AtomicBool,
    stop_after: Option<Duration>,
) -> Result<()> {
    let deadline = stop_after.map(|d| std::time::Instant::now() + d);
    while !stop.load(Ordering::Relaxed) && !halt.load(Ordering::Relaxed) {
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            break;
        }
        driver.step().context("moving packets")?;
    }
    Ok(())
}

fn final_report(
    driver: &Driver<TunIo<'_>>,
    spec: &ExperimentSpec,
    name: &str,
    precision: &str,
    wall: Duration,
) -> RunReport {
    let end = driver.now();
    let sim = Report::build(driver.engine(), 0, end, Some(wall));
    RunReport {
        experiment: name.to_string(),
        precision: precision.to_string(),
        wall_seconds: wall.as_secs_f64(),
        accuracy: driver.accuracy(),
        hosts: spec
            .hosts
            .iter()
            .zip(driver.host_counters())
            .map(|(h, c)| HostReport {
                name: h.name.clone(),
                ipv4: IpAddr::V4(h.ipv4),
                ipv6: IpAddr::V6(h.ipv6),
                counters: *c,
            })
            .collect(),
        pipes: sim.pipes,
        workers: None,
    }
}

fn print_report(r: &RunReport, json: bool, top: usize) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(r)?);
        return Ok(());
    }
    let a = &r.accuracy;
    let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
    println!(
        "{}: {:.1} s live, {} precision: {}",
        r.experiment,
        r.wall_seconds,
        r.precision,
        if a.accurate { "ACCURATE" } else { "INACCURATE" }
    );
    println!(
        "  lateness of {} released packets: p50 {} us, p99 {} us, p99.9 {} us, max {} us; {} later than {} us; {} physical drops",
        a.released,
        us(a.lateness_ns_p50),
        us(a.lateness_ns_p99),
        us(a.lateness_ns_p999),
        us(a.lateness_ns_max),
        a.late,
        us(a.late_threshold_ns),
        a.physical_drops
    );
    if let Some(w) = &r.workers {
        println!(
            "  {} workers (hosts {:?}, pipes {:?}), payload {}, lookahead {}: {} hand-offs ({} bytes), {} later than {} us, latest {} us",
            w.workers,
            w.hosts,
            w.pipes,
            w.payload,
            w.lookahead_ns
                .map_or("none (nothing crosses)".into(), |ns| format!("{} us", us(ns))),
            a.handoffs,
            w.cross_core_bytes,
            a.late_handoffs,
            us(a.late_threshold_ns),
            us(a.handoff_lateness_ns_max)
        );
    }
    if !a.accurate {
        println!(
            "  WARNING: this run missed its deadlines or lost packets outside the model; its results do not describe the emulated network"
        );
    }
    println!();
    println!(
        "{:<12} {:<16} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "host", "address", "pkts in", "pkts out", "malformed", "unknown", "MB in"
    );
    for h in &r.hosts {
        let c = &h.counters;
        println!(
            "{:<12} {:<16} {:>10} {:>10} {:>10} {:>10} {:>10.3}",
            h.name,
            h.ipv4.to_string(),
            c.packets_in,
            c.packets_out,
            c.malformed,
            c.unknown_destination,
            c.bytes_in as f64 / 1e6
        );
    }
    println!();
    crate::table::print_pipes(&r.pipes, None, top);
    Ok(())
}

/// Starts this same command in the background and returns once it reports every host up (or
/// fails, showing its log).
fn detach(name: &str, add_name: bool) -> Result<()> {
    let dir = netloom_os::registry_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let ready = dir.join(format!("{name}.ready"));
    let log_path = log_path(name);
    let _ = std::fs::remove_file(&ready);
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    let mut argv: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--detach")
        .collect();
    // The name defaulted from the file name is passed on, so both processes agree on it.
    if add_name {
        argv.extend(["--name".into(), name.into()]);
    }
    argv.extend(["--ready-file".into(), ready.display().to_string()]);
    let mut child = {
        use std::os::unix::process::CommandExt;
        std::process::Command::new(std::env::current_exe()?)
            .args(&argv)
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own process group: a Ctrl-C at this terminal is not for it.
            .process_group(0)
            .spawn()
            .context("starting the background emulator")?
    };
    let give_up = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        if ready.exists() {
            let _ = std::fs::remove_file(&ready);
            println!(
                "netloom: experiment {name} is up (pid {}); log in {}; `netloom stop --name {name}` tears it down",
                child.id(),
                log_path.display()
            );
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            bail!("the background emulator exited ({status}) before it was up:\n{log}");
        }
        if std::time::Instant::now() > give_up {
            let _ = child.kill();
            bail!(
                "the background emulator was not up after 120 s; see {}",
                log_path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Where a detached run's output goes: `netloom stop` prints and removes it.
pub fn log_path(name: &str) -> PathBuf {
    netloom_os::registry_dir().join(format!("{name}.log"))
}

fn default_name(file: &Path) -> Result<String> {
    let stem = file
        .file_stem()
        .and_then(|s| s.to_str())
        .context("the file name gives no experiment name; pass --name")?;
    Ok(stem.to_string())
}

fn precision(args: &RunArgs) -> Result<Precision> {
    Ok(match args.precision.as_str() {
        "busy" => Precision::Busy,
        "sleep" => Precision::Sleep,
        _ => Precision::Hybrid {
            spin: std_duration(&args.spin).context("--spin")?,
        },
    })
}

pub fn std_duration(text: &str) -> Result<Duration> {
    let d = netloom_topo::units::parse_duration(text)?;
    Ok(Duration::from_nanos(d.as_nanos()))
}
