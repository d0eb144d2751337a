//! `netloom run FILE`: turns the flags into a plan, starts it as a `netloom_live::Experiment`
//! (one network namespace and TUN device per host, the engine in real time) or, with
//! `--cluster`, as a `ClusterRun` over several machines, and hands either to the one lifecycle
//! (`lifecycle`: wait for Ctrl-C, SIGTERM, `netloom stop` or `--duration`, stop, print the
//! report); with `--detach`, starts itself in the background and returns once every host is
//! up. Glue only: the run is netloom-live's.

mod args;
mod lifecycle;

use crate::stdout::say;
use anyhow::{bail, Context, Result};
use args::{default_name, options};
pub use args::{std_duration, RunArgs};
use lifecycle::{Life, Terminal};
use netloom_live::cluster::Setup;
use netloom_live::{Experiment, Plan, RouterControl};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Runs the topology `args` names live until it is stopped, and prints its report.
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
        // Bound before anything is started: an address in use is refused with nothing to undo.
        let listeners = crate::web::bind(args.metrics.as_deref(), args.web.as_deref())?;
        let cluster = crate::cluster::read(cluster)?;
        let signal = netloom_os::install_stop_handler()?;
        let started = std::time::Instant::now();
        let setup = Setup {
            cluster,
            topology: topo,
            bundle: bundle.expect("loaded bundled for --cluster"),
            options,
        };
        let run = crate::cluster::start(setup, args.strict)?;
        let life = life(
            &args,
            (name, stop_after),
            (signal, started),
            listeners,
            Vec::new(),
        );
        return lifecycle::drive(Box::new(run), life, &mut Terminal);
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
    let worker_cpus = plan.worker_cpus();
    let experiment = Experiment::start_with(plan, routing)?;
    let life = life(
        &args,
        (name, stop_after),
        (signal, started),
        listeners,
        worker_cpus,
    );
    lifecycle::drive(Box::new(experiment), life, &mut Terminal)
}

/// The lifecycle's part of the flags (the name and `--duration` as read), with the signal flag
/// and the instant the start began.
fn life<'a>(
    args: &'a RunArgs,
    (name, stop_after): (String, Option<Duration>),
    (signal, started): (&'a AtomicBool, std::time::Instant),
    listeners: Vec<crate::web::Listener>,
    worker_cpus: Vec<usize>,
) -> Life<'a> {
    Life {
        name,
        signal,
        started,
        listeners,
        worker_cpus,
        ready_file: args.ready_file.as_deref(),
        stop_after,
        json: args.json,
        top: args.top,
        strict: args.strict,
    }
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
