//! `sim --mpi`: every rank `mpirun` started runs this command; rank 0 plans, runs worker 0 and
//! reports, the others serve their part (netloom-procs' `mpi`). Without the `mpi` feature the
//! flag is refused, saying how to build it in.

use super::SimArgs;
use anyhow::Result;

/// Runs the sim as this process's rank.
#[cfg(not(feature = "mpi"))]
pub(super) fn run(_: SimArgs) -> Result<()> {
    anyhow::bail!("--mpi: this netloom was built without MPI; build with --features mpi")
}

/// Runs the sim as this process's rank. Any rank's error ends the whole job (MPI_Abort): the
/// other ranks wait in MPI calls nothing else would end.
#[cfg(feature = "mpi")]
pub(super) fn run(mut args: SimArgs) -> Result<()> {
    use anyhow::{bail, Context};
    use netloom_procs::mpi::Mpi;
    let mpi = std::rc::Rc::new(Mpi::init()?);
    let ranks = mpi.size();
    if ranks < 2 {
        bail!("--mpi needs 2 or more ranks: start it as mpirun -np 2 netloom sim ... --mpi");
    }
    if args.workers != 1 && args.workers as usize != ranks {
        bail!(
            "--workers {} under {ranks} MPI ranks: the workers are the ranks; drop --workers",
            args.workers
        );
    }
    args.workers = ranks as u32;
    let rank = mpi.rank();
    let result = super::options(&args).and_then(|options| match rank {
        0 => super::coordinate(args, options, Some(netloom_sim::Launch::Mpi(mpi.clone()))),
        _ => {
            let spec = netloom_engine::traffic::parse_spec(&args.traffic).context("--traffic")?;
            Ok(netloom_sim::serve_rank(&mpi, &spec, &options)?)
        }
    });
    if let Err(e) = result {
        eprintln!("netloom: rank {rank}: {e:#}");
        mpi.abort(2);
    }
    Ok(())
}
