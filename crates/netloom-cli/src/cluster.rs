//! `netloom run FILE --cluster CLUSTER`, the coordinator of a run over several machines, and
//! `netloom worker`, what it starts on each machine (docs/cluster.md). Glue only: the run is
//! netloom-live's `cluster`.

use crate::stdout::say;
use anyhow::{bail, Context, Result};
use clap::Args;
use netloom_live::cluster::{slurm, Cluster, ClusterRun, Setup};
use netloom_live::protocol::socket_path;
use netloom_live::{Ending, Options};
use netloom_topo::{Bundle, Topology};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Args)]
pub struct WorkerArgs {}

/// Serves the coordinator on standard input and output until it stops the run.
pub fn worker(_args: WorkerArgs) -> Result<()> {
    let signal = netloom_os::install_stop_handler()?;
    let input = std::io::BufReader::new(std::io::stdin());
    netloom_live::cluster::serve_worker(input, std::io::stdout(), signal)
        .context("the control channel to the coordinator")
}

/// What `run` passes on to a run over several machines.
pub struct Coordinate<'a> {
    pub cluster: &'a Path,
    pub topology: Topology,
    pub bundle: Bundle,
    pub options: Options,
    pub stop_after: Option<std::time::Duration>,
    pub json: bool,
    pub top: usize,
    pub ready_file: Option<&'a PathBuf>,
    /// `--metrics` and `--web`, bound: served from the coordinator's control socket.
    pub listeners: Vec<crate::web::Listener>,
    /// `--strict`: the lookahead's and clocks' warnings are errors.
    pub strict: bool,
}

/// The cluster `--cluster` names: the word `slurm`, the Slurm job this runs in (its nodes
/// listed on stderr, so that what was made can be seen and written as a file), else a file.
pub fn read(arg: &Path) -> Result<Cluster> {
    if arg != Path::new(slurm::SLURM) {
        return Ok(Cluster::read(arg)?);
    }
    // Workers run the program this is, by its path: the same on every node (a shared file
    // system, or the same installation), as a Slurm job's programs usually are.
    let netloom = std::env::current_exe().context("--cluster slurm: finding this program")?;
    let cluster = slurm::this_job(&netloom.to_string_lossy())?;
    say(format_args!("netloom: {}", slurm::summary(&cluster)));
    Ok(cluster)
}

/// Starts the run on every machine, waits for its end, stops it everywhere and prints the
/// merged report.
pub fn run(c: Coordinate) -> Result<()> {
    let cluster = read(c.cluster)?;
    let name = c.options.name.clone();
    let signal = netloom_os::install_stop_handler()?;
    let started = std::time::Instant::now();
    let run = ClusterRun::start(Setup {
        cluster,
        topology: c.topology,
        bundle: c.bundle,
        options: c.options,
    })?;
    if c.strict && !run.timing_warnings().is_empty() {
        let refused = run.timing_warnings().join("; ");
        run.stop(&Ending::Requested)?;
        bail!("--strict: refused, every machine stopped: {refused}");
    }
    for warning in run.warnings() {
        say(format_args!("netloom: warning: {warning}"));
    }
    crate::run::warn_of_priority(run.info());
    let machines = run.clocks();
    say(format_args!(
        "netloom: experiment {name} is up: {} hosts on {} machines in {:.2} s; Ctrl-C or `netloom stop --name {name}` ends it",
        run.info().hosts.len(),
        machines.len(),
        started.elapsed().as_secs_f64(),
    ));
    let socket = socket_path(&netloom_os::registry_dir(), &name);
    // The workers are processes of their own (`netloom worker`), placed by their machines.
    let servers = crate::web::serve(c.listeners, Arc::new(netloom_web::Socket::new(socket)), &[])?;
    if let Some(ready) = c.ready_file {
        netloom_os::write_output(ready, b"up\n").context("--ready-file")?;
    }
    let ending = run.wait(signal, c.stop_after.map(|d| std::time::Instant::now() + d));
    let clocks = run.clocks();
    let drifted = run.drift_warnings();
    crate::web::stop(servers);
    let report = run.stop(&ending)?;
    for clock in &clocks {
        say(format_args!(
            "netloom: machine {}: clock offset {:+.1} us at the start, {:+.1} us at the end (round trip {:.1} us)",
            clock.machine,
            clock.start.offset_ns as f64 / 1e3,
            clock.last.offset_ns as f64 / 1e3,
            clock.last.round_trip_ns as f64 / 1e3,
        ));
    }
    if !c.strict {
        for warning in &drifted {
            say(format_args!("netloom: warning: {warning}"));
        }
    }
    let text = match c.json {
        true => serde_json::to_string_pretty(&report)? + "\n",
        false => crate::live::format_report(&report, true, c.top),
    };
    let _ = std::io::stdout().write_all(text.as_bytes());
    if c.strict && !drifted.is_empty() {
        bail!("--strict: {}", drifted.join("; "));
    }
    Ok(())
}
