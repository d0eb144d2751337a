//! `netloom run`'s flags (`RunArgs`) and what they become: the run's `Options` (workers, split,
//! precision, thresholds), its default name, and durations as the flags write them.

use crate::input::number_in;
use anyhow::{Context, Result};
use clap::Args;
use netloom_live::{Hybrid, Options, Placement, Precision, Split, Thresholds};
use netloom_topo::units::Range;
use netloom_topo::Topology;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args)]
pub struct RunArgs {
    /// Topology file (.toml or .json, or a format docs/import.md lists).
    pub(super) file: PathBuf,
    #[command(flatten)]
    pub(super) input: crate::input::InputArgs,
    /// Experiment name (default: the file name without extension); names the hosts' namespaces.
    #[arg(long)]
    pub(super) name: Option<String>,
    /// Return once every host is up; the emulator keeps running in the background until
    /// `netloom stop`.
    #[arg(long)]
    pub(super) detach: bool,
    /// How the engine waits between deadlines: busy (a core spins, microsecond accuracy),
    /// hybrid (sleeps, spinning before deadlines and after packets) or sleep (least CPU, timer
    /// lateness).
    #[arg(long, default_value = "hybrid", value_parser = ["busy", "hybrid", "sleep"])]
    pub(super) precision: String,
    /// With --precision hybrid: how long before a deadline to stop sleeping and spin; auto
    /// learns it from how late this machine's timed wake-ups are.
    #[arg(long, default_value = "auto")]
    pub(super) spin: String,
    /// With --precision hybrid: the longest spin after a packet before sleeping, so the reply
    /// of an exchange finds the engine awake; each host's is learned within it from how soon
    /// its next packets came (default 500us; docs/live.md).
    #[arg(long)]
    pub(super) linger: Option<String>,
    /// Stop by itself after this long (for scripts and tests).
    #[arg(long)]
    pub(super) duration: Option<String>,
    /// MTU of every host's interface, 1280 to 65535 (default: each host's from its links'
    /// `mtu` in the topology file, 1500 unless set; docs/live.md).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1280..=65535))]
    pub(super) mtu: Option<u32>,
    /// TCP congestion control every host starts with (net.ipv4.tcp_congestion_control in its
    /// namespace); one of the machine's tcp_available_congestion_control.
    #[arg(long, value_name = "NAME", default_value = netloom_os::DEFAULT_CONGESTION_CONTROL)]
    pub(super) tcp_cc: String,
    /// A packet released later than this after its scheduled time counts as late.
    #[arg(long, default_value = "100us")]
    pub(super) late_threshold: String,
    /// The run is marked inaccurate when more than this fraction of packets is late (0 to 1).
    #[arg(long, default_value_t = 0.001, value_parser = number_in(Range::closed(0.0, 1.0)))]
    pub(super) max_late_fraction: f64,
    /// Seed of the pipes' random choices (loss, jitter).
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Pin the engine to this CPU (with one worker).
    #[arg(long, conflicts_with = "pin")]
    pub(super) cpu: Option<usize>,
    /// Partition the emulation over this many driver threads: each reads the hosts of its part,
    /// owns its pipes and writes out the packets it read (docs/live.md, "Several workers").
    #[arg(long, default_value_t = 1)]
    pub(super) workers: u32,
    /// With --workers: the pipe → core assignment to run (from `netloom partition`).
    #[arg(long)]
    pub(super) assignment: Option<PathBuf>,
    /// With --workers and no --assignment: the partitioner, over static weights (default metis).
    #[arg(long)]
    pub(super) method: Option<netloom_partition::Method>,
    /// With --workers: pin each worker to a CPU, communicating workers on CPUs sharing a cache.
    #[arg(long)]
    pub(super) pin: bool,
    /// With --workers: what crosses between workers. cache: only a descriptor, the payload
    /// stays with the worker that read it, which writes it out; ship: the payload travels with
    /// the packet, copied at every crossing, and the destination's worker writes it out.
    #[arg(long, value_enum, default_value = "cache")]
    pub(super) payload: crate::partition::PayloadArg,
    /// With --workers or --cluster: every EPOCH (100ms or more), repartition on the traffic
    /// observed and move pipes (and, with --workers, hosts) between the workers while the run
    /// goes on (docs/live.md, "Dynamic repartitioning").
    #[arg(long, value_name = "EPOCH")]
    pub(super) repartition: Option<String>,
    /// Keep every other CPU from halting while the run lasts (a SCHED_IDLE spinning thread on
    /// each), so programs waiting for packets wake in microseconds, not tens (docs/live.md).
    #[arg(long, requires = "cpu")]
    pub(super) keep_cpus_awake: bool,
    /// Keep the engine at normal priority. By default, with hybrid and sleep precision, it runs
    /// at real-time priority (SCHED_FIFO 40) so the programs under test cannot delay its
    /// wake-ups; busy precision never does (the kernel throttles spinning real-time threads).
    #[arg(long)]
    pub(super) no_realtime: bool,
    /// Turn GSO off: the hosts' kernels cut TCP into MTU-size packets before netloom reads them,
    /// instead of handing over 64 KB super-packets that netloom times and writes segment by
    /// segment (docs/live.md).
    #[arg(long)]
    pub(super) no_gso: bool,
    /// Deliver packets whose source address is not their sending host's own (a host sending as
    /// another, or as an address no host has). By default they are dropped; either way each
    /// host's `spoofed` counter counts them (docs/live.md).
    #[arg(long)]
    pub(super) allow_spoofing: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics while the run lasts (HOST:PORT, or a
    /// port alone for localhost; docs/web.md).
    #[arg(long, value_name = "ADDR")]
    pub(super) metrics: Option<String>,
    /// Serve the live web view at http://ADDR/ while the run lasts; changes from the page need
    /// the token printed at start (docs/web.md).
    #[arg(long, value_name = "ADDR")]
    pub(super) web: Option<String>,
    /// Before starting, predict from this calibration (`netloom calibrate`) whether the load
    /// fits this machine, and say so; default: /var/lib/netloom/calibration.json if it exists
    /// (docs/calibrate.md).
    #[arg(long, value_name = "FILE")]
    pub(super) calibration: Option<PathBuf>,
    /// With a calibration: the load to predict, a traffic spec (docs/traffic.md); default: the
    /// links' capacity.
    #[arg(long, value_name = "SPEC")]
    pub(super) load: Option<String>,
    /// Use a --calibration measured on another machine or by another netloom version.
    #[arg(long)]
    pub(super) force_calibration: bool,
    /// Print the final report as JSON (docs/live.md).
    #[arg(long)]
    pub(super) json: bool,
    /// How many pipes the final table shows (busiest first); 0 for all.
    #[arg(long, default_value_t = 20)]
    pub(super) top: usize,
    /// Copy each kernel router's daemon logs (and configuration) to DIR/<router>/ when the run
    /// ends; while it runs they are in /run/netloom/<name>/routers/<router>/ (docs/routing.md).
    #[arg(long, value_name = "DIR")]
    pub(super) router_logs: Option<PathBuf>,
    /// Run over the machines of this cluster file: a worker on each (started over SSH), each
    /// machine emulating its part (docs/cluster.md). `slurm`: the nodes of the Slurm job this
    /// runs in (salloc, sbatch), workers started with srun.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["workers", "assignment", "method", "pin", "cpu", "payload", "keep_cpus_awake", "router_logs"])]
    pub(super) cluster: Option<PathBuf>,
    /// With --cluster: refuse the run (exit 2, every machine stopped) when the least delay of
    /// a pipe between machines is less than the one-way delay measured between them or than
    /// what is known of their clocks, and exit 2 after the report when a clock moved more,
    /// instead of warning.
    #[arg(long, requires = "cluster")]
    pub(super) strict: bool,
    /// Internal: the background process of --detach writes this file once every host is up.
    #[arg(long, hide = true)]
    pub(super) ready_file: Option<PathBuf>,
}

/// The run's options from the flags: how many workers and how they split and run, the
/// precision, the thresholds.
pub(super) fn options(args: &RunArgs, topo: &Topology, name: String) -> Result<Options> {
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

pub(super) fn default_name(file: &Path) -> Result<String> {
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
