//! The runner of worker processes: this process is worker 0 and the coordinator; workers 1 to
//! N-1 are processes of their own (`serve_worker`), on this machine over the loopback or on a
//! cluster's machines, in lock-step over TCP (hand-offs as sealed GENEVE batches, docs/wire.md).

use crate::error::SimError;
use crate::options::{Launch, Options};
use crate::plan::SimPlan;
use netloom_engine::sim::SimOptions;
use netloom_engine::traffic::{self, TrafficSpec};
use netloom_engine::workers::{self, ParallelReport};
use netloom_engine::{Engine, Ownership, Report};
use netloom_live::cluster::Cluster;
use netloom_partition::Assignment;
use netloom_procs::ProcError;
use netloom_route::Routes;
use std::sync::Arc;

/// Runs `plan` over worker processes. Returns the merged engine, the report (the same as with
/// threads) and the workers' figures.
pub(crate) fn run(
    plan: &SimPlan,
    assignment: &Assignment,
    ownership: &Arc<Ownership>,
    options: SimOptions<'_>,
) -> Result<(Engine, Report, ParallelReport), SimError> {
    let processes = plan
        .options
        .processes
        .as_ref()
        .expect("the plan runs processes");
    let n = plan.workers as usize;
    let seed = plan.options.seed;
    let end = netloom_time::Instant::ZERO + options.duration;
    let mut engine = workers::engine(
        &plan.topo,
        &plan.routes,
        seed,
        ownership,
        &plan.flows,
        0,
        plan.options.hop_counting(),
    )?;
    let machines = plan.options.cluster().map(|c| &c.machines);
    let addresses = match machines {
        None => vec![std::net::Ipv4Addr::LOCALHOST.into(); n],
        Some(machines) => machines.iter().map(|m| m.address).collect(),
    };
    let setup = netloom_procs::Setup {
        workers: n,
        assignment: assignment.pipes.clone(),
        vni: std::process::id() & netloom_wire::MAX_VNI,
        key: netloom_wire::Key::random().to_hex(),
        addresses,
        topology: processes.topology.clone(),
    };
    let (lookahead, started) = (ownership.lookahead(), std::time::Instant::now());
    let outcome = match &processes.launch {
        Launch::Spawn(command) => netloom_procs::Processes::spawn(n, command)
            .and_then(|workers| workers.run(&mut engine, &setup, end, lookahead)),
        #[cfg(feature = "mpi")]
        Launch::Mpi(mpi) => mpi.run(&mut engine, &setup, end, lookahead),
    };
    let outcome = outcome.map_err(|e| match (e, machines) {
        (ProcError::Version { worker, version }, Some(machines)) => SimError::Version {
            machine: machines[worker].name.clone(),
            version,
        },
        (e, _) => e.into(),
    })?;
    let wall = options.wall_clock.then(|| started.elapsed());
    let (report, remains) = netloom_procs::merge(&mut engine, outcome.remains, seed, end, wall);
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

/// Worker `me` of a run over processes, in its own process: its engine, built as the
/// coordinator built its own from the topology and assignment it sends, with `traffic` and
/// the `options` the coordinator was given, run in lock-step with the others. Nothing is
/// printed on stdout but what the coordinator reads.
pub fn serve_worker(me: u16, traffic: &TrafficSpec, options: &Options) -> Result<(), ProcError> {
    let end = netloom_time::Instant::ZERO + options.duration;
    netloom_procs::serve(me, end, builder(me, traffic, options))
}

/// A rank other than 0 of a run under `mpirun` (`sim --mpi`): as `serve_worker`, the set-up
/// coming from rank 0 over MPI.
#[cfg(feature = "mpi")]
pub fn serve_rank(
    mpi: &netloom_procs::mpi::Mpi,
    traffic: &TrafficSpec,
    options: &Options,
) -> Result<(), ProcError> {
    let end = netloom_time::Instant::ZERO + options.duration;
    mpi.serve(end, builder(mpi.rank(), traffic, options))
}

/// How worker `me` builds its engine from the coordinator's set-up: the topology and
/// assignment it sends, with `traffic` and `options` (the command's own).
fn builder<'a>(
    me: u16,
    traffic: &'a TrafficSpec,
    options: &'a Options,
) -> impl FnOnce(&netloom_procs::Setup) -> Result<(Engine, netloom_time::Duration), String> + 'a {
    let seed = options.seed;
    move |setup| {
        let topo = setup.topology.load().map_err(|e| e.to_string())?;
        let flows = traffic::expand(&traffic.pattern, traffic.kind, traffic.cap, &topo, seed)
            .map_err(|e| format!("the traffic: {e}"))?;
        let routes = Routes::try_compute(&topo).map_err(|e| e.to_string())?;
        let ownership = Arc::new(
            Ownership::new(&topo, &setup.assignment, setup.workers, options.payload)
                .map_err(|e| e.to_string())?,
        );
        let engine = workers::engine(
            &topo,
            &routes,
            seed,
            &ownership,
            &flows,
            usize::from(me),
            options.hop_counting(),
        )
        .map_err(|e| e.to_string())?;
        Ok((engine, ownership.lookahead()))
    }
}

/// `cluster` with the machine this process runs on first (the first of the file's machines
/// whose address it can bind): it is worker 0, whose engine runs here.
pub fn this_machine_first(mut cluster: Cluster) -> Result<Cluster, SimError> {
    let here = cluster
        .machines
        .iter()
        .position(|m| std::net::TcpListener::bind((m.address, 0)).is_ok());
    let Some(here) = here else {
        let addresses: Vec<String> = cluster
            .machines
            .iter()
            .map(|m| format!("{} ({})", m.address, m.name))
            .collect();
        return Err(SimError::Cluster {
            reason: format!(
                "no machine of the file is this one (none of {} is an address here): a run \
                 over a cluster's machines has its first worker on the machine it runs on: run \
                 the command on one of them",
                addresses.join(", ")
            ),
            file: cluster.file,
        });
    };
    let machine = cluster.machines.remove(here);
    cluster.machines.insert(0, machine);
    Ok(cluster)
}
