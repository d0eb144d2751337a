//! `netloom`: the command line. Glue only: parses arguments, calls the library crates, prints,
//! and maps every error to exit code 2 (bad input or usage, as clap does; docs/cli.md); `exec`
//! and `shell` exit with the code of the program they ran.

// `print!` panics when standard output cannot be written: every command prints with `out!` and
// `outln!` (first: they are for every module below), and clippy refuses a `print!` that slips in.
#![deny(clippy::print_stdout)]
#[macro_use]
mod stdout;
mod calibrate;
mod capture;
mod check;
mod cluster;
mod clusterfile;
mod convert;
mod demo;
mod gen;
mod input;
mod live;
mod partition;
mod run;
mod shape;
mod sim;
mod table;
mod web;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "netloom", version, about = "A user-space network emulator", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate a topology file and print a summary; with --capacity, whether its load fits
    /// this machine.
    Check(check::CheckArgs),
    /// Measure what this machine costs a live run (timers, TUN, engine, hand-offs) into a
    /// calibration file. Needs root.
    Calibrate(calibrate::CalibrateArgs),
    /// Convert a topology (Topology Zoo GraphML, GML, ModelNet, Inet, native) to the native
    /// format, Graphviz DOT or GraphML.
    Convert(convert::ConvertArgs),
    /// Generate a topology file (chain, star, ring, mesh, dumbbell, fishbone, tree-mesh, inet).
    Gen(gen::GenArgs),
    /// Run a topology with synthetic traffic in virtual time and report.
    Sim(sim::SimArgs),
    /// Assign pipes to cores (random, kcluster, metis) and print cut, balance and efficiency.
    Partition(partition::PartitionArgs),
    /// Bring a bundled topology up live, run ping and iperf3 between two hosts, and print what
    /// they measured beside what the topology configures. Needs root.
    Demo(demo::DemoArgs),
    // Boxed: its flags make it several times larger than any other command.
    /// Bring a topology up live: a network namespace and TUN device per host, the engine in
    /// real time. Needs root.
    Run(Box<run::RunArgs>),
    /// One machine's worker of a run over several machines: started by `run --cluster` through
    /// the machine's launcher (SSH), it speaks to the coordinator on its standard input and
    /// output (docs/cluster.md). Needs root.
    Worker(cluster::WorkerArgs),
    /// Write cluster files for `run --cluster` and `sim --cluster`: `cluster from-pods` makes
    /// one of the pods of netloom's Kubernetes DaemonSet (docs/cluster.md).
    Cluster(clusterfile::ClusterArgs),
    /// Stop a running (detached) experiment and tear it down.
    Stop(live::StopArgs),
    /// Remove what a crashed or killed experiment left behind.
    Clean(live::CleanArgs),
    /// Run a program inside a host of a running experiment; passes its exit code through.
    Exec(live::ExecArgs),
    /// Open a shell inside a host of a running experiment.
    Shell(live::ShellArgs),
    /// Show a running experiment's figures: accuracy, packets per host, pipes with their queues.
    Stats(live::StatsArgs),
    /// Change a running experiment's link: `link set A B delay=5ms`, `link down A B`, `link up A B`.
    Link(live::LinkArgs),
    /// Serve the web view of a running experiment (through its control socket), or of a
    /// `netloom sim --json` report with --report.
    Web(web::WebArgs),
    /// Print a running experiment's events as JSON lines as they happen (link changes, routes
    /// recomputed, accuracy alarms, start and stop) until it stops.
    Events(live::EventsArgs),
    /// Capture a running experiment's packets on a link (or every link of a host) as pcapng:
    /// `capture r1 r2 -w r1r2.pcapng`, `capture h1 -w - | tshark -r -`.
    Capture(capture::CaptureArgs),
    /// Shape this machine's own traffic by rules (Dummynet's netconfig): `shape client
    /// 443@10.0.0.0/8 IN delay=40ms OUT delay=40ms`, `shape show`, `shape delete ...`,
    /// `shape stop`, `shape --netns NAME ...`. Root, or any user through a running
    /// `shape daemon` (their own traffic only).
    Shape(shape::ShapeArgs),
}

fn main() -> ExitCode {
    netloom_os::restore_default_sigpipe();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => check::run(args),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Convert(args) => convert::run(args),
        Command::Gen(args) => gen::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Partition(args) => partition::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Run(args) => run::run(*args),
        Command::Worker(args) => cluster::worker(args),
        Command::Cluster(args) => clusterfile::run(args),
        Command::Stop(args) => live::stop(args),
        Command::Clean(args) => live::clean(args),
        Command::Exec(args) => live::exec(args).map(|code| std::process::exit(code.into())),
        Command::Shell(args) => live::shell(args).map(|code| std::process::exit(code.into())),
        Command::Stats(args) => live::stats(args),
        Command::Link(args) => live::link(args),
        Command::Web(args) => web::run(args),
        Command::Events(args) => live::events(args),
        Command::Capture(args) => capture::run(args),
        Command::Shape(args) => shape::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("netloom: {err:#}");
            ExitCode::from(2)
        }
    }
}
