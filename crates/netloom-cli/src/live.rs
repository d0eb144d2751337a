//! The commands around a running experiment: `stop`, `clean`, `exec` and `shell`. Each finds
//! the experiment on its own when only one is running, or takes `--name`.

use anyhow::{Context, Result};
use clap::Args;
use netloom_engine::report::PipeReport;
use netloom_live::control;
use std::time::Duration;

#[derive(Args)]
pub struct StopArgs {
    /// The experiment to stop (needed only when several are running).
    #[arg(long)]
    name: Option<String>,
}

#[derive(Args)]
pub struct CleanArgs {
    /// Clean only this experiment's leftovers (default: every experiment whose process is gone).
    #[arg(long)]
    name: Option<String>,
}

#[derive(Args)]
pub struct ExecArgs {
    /// The experiment (needed only when several are running).
    #[arg(long)]
    name: Option<String>,
    /// The host to run in.
    host: String,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

#[derive(Args)]
pub struct ShellArgs {
    /// The experiment (needed only when several are running).
    #[arg(long)]
    name: Option<String>,
    /// The host to open a shell in.
    host: String,
}

/// How long `stop` waits for the emulator to tear down before removing what is left itself.
const STOP_WAIT: Duration = Duration::from_secs(20);

pub fn stop(args: StopArgs) -> Result<()> {
    let record = netloom_os::stop(args.name.as_deref(), STOP_WAIT)?;
    // A detached run wrote its output, the final report included, to its log: show it, then
    // remove the log so nothing is left behind.
    let log = crate::run::log_path(&record.name);
    if let Ok(text) = std::fs::read_to_string(&log) {
        let _ = std::fs::remove_file(&log);
        print!("{text}");
    }
    println!("netloom: stopped experiment {}", record.name);
    Ok(())
}

pub fn clean(args: CleanArgs) -> Result<()> {
    let report = netloom_os::clean(args.name.as_deref())?;
    println!("{report}");
    for name in &report.experiments {
        let log = crate::run::log_path(name);
        if std::fs::remove_file(&log).is_ok() {
            println!("removed {}", log.display());
        }
    }
    Ok(())
}

/// Runs the command in the host and returns its exit code, for `main` to pass through.
pub fn exec(args: ExecArgs) -> Result<u8> {
    let (_, host) = netloom_os::find_host(args.name.as_deref(), &args.host)?;
    let status = netloom_os::exec(&host.ns, &args.command)?;
    Ok(exit_code(status))
}

pub fn shell(args: ShellArgs) -> Result<u8> {
    let (_, host) = netloom_os::find_host(args.name.as_deref(), &args.host)?;
    let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
    let status = netloom_os::exec(&host.ns, &[shell])?;
    Ok(exit_code(status))
}

/// A child's exit code, or 128 + signal as shells report a child killed by a signal.
fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => (128 + signal) as u8,
        (None, None) => 1,
    }
}

#[derive(Args)]
pub struct StatsArgs {
    /// The experiment (needed only when several are running).
    #[arg(long)]
    name: Option<String>,
    /// Print the figures as JSON (docs/live.md).
    #[arg(long)]
    json: bool,
    /// How many pipes the table shows (busiest first); 0 for all.
    #[arg(long, default_value_t = 20)]
    top: usize,
}

#[derive(Args)]
pub struct LinkArgs {
    #[command(subcommand)]
    action: LinkAction,
}

#[derive(clap::Subcommand)]
enum LinkAction {
    /// Change a link's parameters now, without flushing its queues:
    /// `netloom link set A B delay=5ms bw=10Mbit loss=1%`.
    Set {
        /// The experiment (needed only when several are running).
        #[arg(long)]
        name: Option<String>,
        /// One end of the link.
        a: String,
        /// The other end.
        b: String,
        /// Which direction: both, a-b (from A to B) or b-a.
        #[arg(long, default_value = "both")]
        direction: String,
        /// key=value parameters: bw, delay, jitter, loss, queue, duplicate, reorder.
        #[arg(required = true)]
        params: Vec<String>,
    },
    /// Take a link down (both directions); routes are recomputed around it.
    Down {
        /// The experiment (needed only when several are running).
        #[arg(long)]
        name: Option<String>,
        a: String,
        b: String,
    },
    /// Bring a link back up; routes are recomputed.
    Up {
        /// The experiment (needed only when several are running).
        #[arg(long)]
        name: Option<String>,
        a: String,
        b: String,
    },
}

/// The running experiment to talk to: the named one, or the only one.
fn target(name: Option<&str>) -> Result<netloom_os::Record> {
    let alive: Vec<_> = netloom_os::running()?
        .into_iter()
        .filter(|r| r.alive && name.is_none_or(|n| n == r.name))
        .collect();
    match alive.len() {
        1 => Ok(alive.into_iter().next().expect("one")),
        0 => match name {
            Some(n) => anyhow::bail!("no experiment named {n} is running"),
            None => anyhow::bail!("no experiment is running"),
        },
        _ => anyhow::bail!(
            "several experiments are running ({}); say which with --name",
            alive
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Sends `request` to the experiment and returns the reply's body, timing the round trip.
fn ask(name: Option<&str>, request: &control::Request) -> Result<(serde_json::Value, Duration)> {
    let record = target(name)?;
    let socket = control::socket_path(&netloom_os::registry_dir(), &record.name);
    let sent = std::time::Instant::now();
    let reply = control::request(&socket, request).with_context(|| {
        format!(
            "talking to experiment {} ({})",
            record.name,
            socket.display()
        )
    })?;
    let took = sent.elapsed();
    if !reply.ok {
        anyhow::bail!("{}", reply.error.unwrap_or_default());
    }
    Ok((reply.body.unwrap_or_default(), took))
}

pub fn stats(args: StatsArgs) -> Result<()> {
    let (body, _) = ask(args.name.as_deref(), &control::Request::Stats)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&body)?);
        return Ok(());
    }
    let a = &body["accuracy"];
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let us = |v: &serde_json::Value| format!("{:.1}", n(v) as f64 / 1e3);
    println!(
        "up {:.1} s, {} packets inside: {}",
        n(&body["uptime_ns"]) as f64 / 1e9,
        n(&body["in_flight"]),
        if a["accurate"] == true {
            "ACCURATE so far"
        } else {
            "INACCURATE"
        }
    );
    println!(
        "  lateness of {} released packets: p50 {} us, p99 {} us, p99.9 {} us, max {} us; {} late; {} physical drops",
        n(&a["released"]),
        us(&a["lateness_ns_p50"]),
        us(&a["lateness_ns_p99"]),
        us(&a["lateness_ns_p999"]),
        us(&a["lateness_ns_max"]),
        n(&a["late"]),
        n(&a["physical_drops"])
    );
    if n(&a["handoffs"]) > 0 {
        println!(
            "  {} hand-offs between workers: {} late, latest {} us",
            n(&a["handoffs"]),
            n(&a["late_handoffs"]),
            us(&a["handoff_lateness_ns_max"])
        );
    }
    println!();
    println!(
        "{:<12} {:>10} {:>10} {:>10} {:>10}",
        "host", "pkts in", "pkts out", "malformed", "unknown"
    );
    for h in body["hosts"].as_array().into_iter().flatten() {
        let c = &h["counters"];
        println!(
            "{:<12} {:>10} {:>10} {:>10} {:>10}",
            h["name"].as_str().unwrap_or(""),
            n(&c["packets_in"]),
            n(&c["packets_out"]),
            n(&c["malformed"]),
            n(&c["unknown_destination"])
        );
    }
    println!();
    let pipes: Vec<PipeReport> =
        serde_json::from_value(body["pipes"].clone()).context("the experiment's pipe figures")?;
    let queued: Vec<u64> = body["pipes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| n(&p["queue_packets"]))
        .collect();
    crate::table::print_pipes(&pipes, Some(&queued), args.top);
    Ok(())
}

pub fn link(args: LinkArgs) -> Result<()> {
    let (name, request) = match args.action {
        LinkAction::Set {
            name,
            a,
            b,
            direction,
            params,
        } => (
            name,
            control::Request::LinkSet {
                a,
                b,
                direction: Some(direction),
                params,
            },
        ),
        LinkAction::Down { name, a, b } => (name, control::Request::LinkState { a, b, up: false }),
        LinkAction::Up { name, a, b } => (name, control::Request::LinkState { a, b, up: true }),
    };
    let (body, took) = ask(name.as_deref(), &request)?;
    println!(
        "netloom: {body} (applied; {} us round trip)",
        took.as_micros()
    );
    Ok(())
}
