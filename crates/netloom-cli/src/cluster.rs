//! `netloom run FILE --cluster CLUSTER`'s start, the coordinator of a run over several machines
//! (what follows is `run`'s one lifecycle), and `netloom worker`, what it starts on each machine
//! (docs/cluster.md). Glue only: the run is netloom-live's `cluster`.

use crate::stdout::say;
use anyhow::{bail, Context, Result};
use clap::Args;
use netloom_live::cluster::{slurm, Cluster, ClusterRun, Setup};
use netloom_live::Ending;
use std::path::Path;

#[derive(Args)]
pub struct WorkerArgs {}

/// Serves the coordinator on standard input and output until it stops the run.
pub fn worker(_args: WorkerArgs) -> Result<()> {
    let signal = netloom_os::install_stop_handler()?;
    let input = std::io::BufReader::new(std::io::stdin());
    netloom_live::cluster::serve_worker(input, std::io::stdout(), signal)
        .context("the control channel to the coordinator")
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

/// Starts the run on every machine; with `strict`, a run whose timing cannot be trusted (the
/// lookahead against the way between machines or their clocks) is stopped and refused. The
/// rest of its life is `run`'s, as for a run on one machine.
pub fn start(setup: Setup, strict: bool) -> Result<ClusterRun> {
    let run = ClusterRun::start(setup)?;
    if strict && !run.timing_warnings().is_empty() {
        let refused = run.timing_warnings().join("; ");
        run.stop(&Ending::Requested)?;
        bail!("--strict: refused, every machine stopped: {refused}");
    }
    Ok(run)
}
