//! The commands around a running experiment: `stop`, `clean`, `exec`, `shell`, and `stats`,
//! `link` and `events`, which speak its control protocol; and the printing of a live run's report, shared
//! with `run`. Each finds the experiment on its own when only one is running, or takes `--name`.

use anyhow::{Context, Result};
use clap::Args;
use netloom_live::protocol::{call, open, socket_path};
use netloom_live::{AccuracyReport, Direction, LinkChange, Report, Request};
use std::fmt::Write;
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
    let log = netloom_os::log_path(&record.name)?;
    if let Ok(text) = std::fs::read_to_string(&log) {
        let _ = std::fs::remove_file(&log);
        out!("{text}")?;
    }
    outln!("netloom: stopped experiment {}", record.name)?;
    Ok(())
}

pub fn clean(args: CleanArgs) -> Result<()> {
    // The shaping process counts as the experiment named "shape".
    if args.name.as_deref().is_none_or(|n| n == "shape") {
        for removed in netloom_shape::daemon::clean() {
            outln!("removed {removed}")?;
        }
        if args.name.is_some() {
            return Ok(());
        }
    }
    let report = netloom_os::clean(args.name.as_deref())?;
    outln!("{report}")?;
    // The logs of detached runs that no running experiment owns: those of the experiments just
    // cleaned, and those of runs that ended without `netloom stop` to print and remove them (a
    // `stop` request of the control protocol, a crash).
    let running: Vec<String> = netloom_os::running()?
        .into_iter()
        .filter(|r| r.alive)
        .map(|r| r.name)
        .collect();
    let dir = netloom_os::registry_dir();
    let logs = std::fs::read_dir(&dir).into_iter().flatten().flatten();
    for entry in logs {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|f| f.to_str()).and_then(|f| {
            f.strip_suffix(".log")
                .or_else(|| f.strip_suffix(".cluster.json"))
        }) else {
            continue;
        };
        let wanted = args.name.as_deref().is_none_or(|n| n == name);
        if wanted && !running.iter().any(|r| r == name) && std::fs::remove_file(&path).is_ok() {
            outln!("removed {}", path.display())?;
        }
    }
    Ok(())
}

/// Runs the command in the host and returns its exit code, for `main` to pass through.
pub fn exec(args: ExecArgs) -> Result<u8> {
    in_node(args.name.as_deref(), &args.host, &args.command)
}

pub fn shell(args: ShellArgs) -> Result<u8> {
    let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
    in_node(args.name.as_deref(), &args.host, &[shell])
}

/// Runs `argv` in a host's or kernel router's namespace; on a router with routing daemons, its
/// daemons' directory is at /run/frr (or /run/bird) for the program, so a plain `vtysh` or
/// `birdc` talks to that router's daemons.
fn in_node(experiment: Option<&str>, node: &str, argv: &[String]) -> Result<u8> {
    // A run over several machines: the command runs on the host's machine.
    let run = match experiment {
        Some(name) => Some(name.to_string()),
        None => target(None).ok().map(|r| r.name),
    };
    if let Some(map) = run
        .as_deref()
        .and_then(netloom_live::cluster::Forwarding::read)
    {
        let child = map
            .command(node, argv)?
            .spawn()
            .context("running the command on the host's machine")?;
        let status = netloom_os::wait_in_foreground(child, &format!("{:?} in {node}", argv[0]))?;
        return Ok(exit_code(status));
    }
    let (record, found) = netloom_os::find_host(experiment, node)?;
    let daemons = netloom_routing::router_dir(&record.name, &found.name);
    let status = match netloom_routing::socket_mount(&daemons) {
        Some((source, target)) => netloom_os::exec_with_bind(&found.ns, argv, &source, target)?,
        None => netloom_os::exec(&found.ns, argv)?,
    };
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
pub struct EventsArgs {
    /// The experiment (needed only when several are running).
    #[arg(long)]
    name: Option<String>,
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
        #[arg(long, default_value = "both", value_parser = parse_direction)]
        direction: Direction,
        /// key=value parameters, the keys of a link in the topology file (bw, delay, jitter,
        /// loss, queue, aqm, red.min_th, duplicate, reorder, up, ...; docs/topology.md).
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

pub(crate) fn parse_direction(text: &str) -> Result<Direction, String> {
    serde_json::from_value(serde_json::Value::String(text.into()))
        .map_err(|_| format!("{text:?}: write both, a-b or b-a"))
}

/// The running experiment to talk to: the named one, or the only one.
pub fn target(name: Option<&str>) -> Result<netloom_os::Record> {
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

/// How long a client waits for the experiment's reply: its own wait for the workers, and more.
pub(crate) const REPLY_WAIT: Duration = Duration::from_secs(10);

/// The experiment's control socket, and how to name it in an error.
pub(crate) fn socket(name: Option<&str>) -> Result<(std::path::PathBuf, String)> {
    let record = target(name)?;
    let socket = socket_path(&netloom_os::registry_dir(), &record.name);
    let label = format!("experiment {} ({})", record.name, socket.display());
    Ok((socket, label))
}

/// Sends `request` to the experiment and returns the reply's body, timing the round trip.
fn ask(name: Option<&str>, request: &Request) -> Result<(serde_json::Value, Duration)> {
    let (socket, label) = socket(name)?;
    let sent = std::time::Instant::now();
    let body = call(&socket, request, REPLY_WAIT).context(label)?;
    Ok((body, sent.elapsed()))
}

/// Copies the experiment's event lines to stdout as they come, until the run stops.
pub fn events(args: EventsArgs) -> Result<()> {
    use std::io::BufRead;
    let (socket, label) = socket(args.name.as_deref())?;
    let (_, reader) = open(&socket, &Request::Events, REPLY_WAIT).context(label.clone())?;
    for line in reader.lines() {
        let line = line.with_context(|| format!("{label}: reading its events"))?;
        // Each line as it happens (written and flushed), not when a buffer fills: a reader may
        // be `jq` or a person.
        outln!("{line}")?;
    }
    Ok(())
}

pub fn stats(args: StatsArgs) -> Result<()> {
    let (body, _) = ask(args.name.as_deref(), &Request::Stats)?;
    if args.json {
        return crate::stdout::write(&(serde_json::to_string_pretty(&body)? + "\n"));
    }
    let report: Report = serde_json::from_value(body).context("the experiment's report")?;
    crate::stdout::write(&format_report(&report, false, args.top))
}

/// A live run's report as text: its accuracy, hosts and busiest pipes; `last` for the final
/// report of a run that stopped (otherwise it is still running).
pub fn format_report(r: &Report, last: bool, top: usize) -> String {
    let mut out = String::new();
    let a = &r.accuracy;
    let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
    let verdict = match (a.accurate, last) {
        (true, true) => "ACCURATE",
        (true, false) => "ACCURATE so far",
        (false, _) => "INACCURATE",
    };
    let inside = match last {
        true => format!("{} packets dropped inside at the stop", r.in_flight),
        false => format!("{} packets inside", r.in_flight),
    };
    let _ = writeln!(
        out,
        "{}: {:.1} s live, {} precision, {inside}: {verdict}",
        r.experiment,
        r.uptime_ns as f64 / 1e9,
        r.precision,
    );
    if let Some(refused) = r.priority.as_ref().and_then(|p| p.refused.as_ref()) {
        let _ = writeln!(out, "  normal priority: {refused}");
    }
    let _ = writeln!(out,
        "  lateness of {} released packets: p50 {} us, p99 {} us, p99.9 {} us, max {} us; {} later than {} us; {}",
        a.released,
        us(a.lateness_ns_p50),
        us(a.lateness_ns_p99),
        us(a.lateness_ns_p999),
        us(a.lateness_ns_max),
        a.late,
        us(a.late_threshold_ns),
        physical_drops(a)
    );
    if a.skipped_changes > 0 {
        let _ = writeln!(
            out,
            "  {} scheduled link changes skipped: the schedule is finer than the driver's turns",
            a.skipped_changes
        );
    }
    if let Some(w) = &r.workers {
        let s = &w.split;
        let _ = writeln!(out,
            "  {} workers (hosts {:?}, pipes {:?}), payload {}, lookahead {}: {} hand-offs ({} bytes), {} later than {} us, latest {} us",
            s.workers,
            s.hosts,
            s.pipes,
            s.payload,
            s.lookahead_ns
                .map_or("none (nothing crosses)".into(), |ns| format!("{} us", us(ns))),
            a.handoffs,
            w.cross_core_bytes,
            a.late_handoffs,
            us(a.late_threshold_ns),
            us(a.handoff_lateness_ns_max)
        );
    }
    if let Some(rp) = &r.repartition {
        let worst = |moved| {
            rp.worst_p99_ns(moved)
                .map_or("-".into(), |ns| format!("{} us", us(ns)))
        };
        let _ = writeln!(
            out,
            "  repartitioned every {}: {} moves ({} pipes, {} hosts, {} packets in flight moved), \
             longest stall {} us; lateness p99 {} in epochs with a move, {} without",
            netloom_time::Duration(rp.epoch_ns),
            rp.moves,
            rp.moved.pipes,
            rp.moved.hosts,
            rp.moved.packets,
            us(rp.moved.stall_ns),
            worst(true),
            worst(false)
        );
        for m in &rp.each_move {
            let _ = writeln!(out, "    {}", move_line(m));
        }
        let _ = writeln!(
            out,
            "  {} hand-offs reached their pipe's old owner after a move and were passed on, {} of them already later than {} us",
            a.forwarded_handoffs,
            a.late_forwarded_handoffs,
            us(a.late_threshold_ns)
        );
        if let Some(why) = &rp.stopped {
            let _ = writeln!(out, "  repartitioning stopped: {why}");
        }
    }
    if !r.lost_handoffs.is_empty() {
        let pairs: Vec<String> = r
            .lost_handoffs
            .iter()
            .map(|l| match l.in_flight {
                Some(flying) => format!("{} to {} {} ({flying} in flight)", l.from, l.to, l.lost),
                None => format!("{} to {} {}", l.from, l.to, l.lost),
            })
            .collect();
        let _ = writeln!(
            out,
            "  hand-offs lost between machines (physical drops): {}",
            pairs.join(", ")
        );
    }
    let refused = &r.refused_handoffs;
    if !refused.is_none() {
        let _ = writeln!(
            out,
            "  datagrams and transfer frames refused at the machines' hand-off ports (none the run's): {} unauthentic, {} from strangers, {} malformed, {} out of bounds, {} replayed",
            refused.unauthentic, refused.strangers, refused.malformed, refused.out_of_bounds, refused.replayed
        );
    }
    for c in &r.captures {
        let _ = writeln!(
            out,
            "  capture of {}: {} packets captured, {} lost by the capture (its writer fell behind)",
            c.target, c.captured, c.dropped
        );
    }
    if !a.accurate {
        let _ = writeln!(out,
            "  WARNING: this run missed its deadlines or lost packets outside the model; its results do not describe the emulated network"
        );
    }
    out.push('\n');
    out += &crate::table::format_hosts(&r.hosts);
    out.push('\n');
    let pipes: Vec<_> = r.pipes.iter().map(|p| p.report.clone()).collect();
    let queued: Vec<u64> = r.pipes.iter().map(|p| p.queue_packets).collect();
    out + &crate::table::format_pipes(&pipes, (!last).then_some(&queued[..]), top)
}

/// One move's line: its instant, stall, and where the stall's time went (µs after the
/// instant; the way between machines only when there is one).
fn move_line(m: &netloom_live::MoveReport) -> String {
    let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
    let mut line = format!(
        "move at {:.3} s: {} pipes, stall {} us",
        m.at_ns as f64 / 1e9,
        m.moved.pipes,
        us(m.moved.stall_ns)
    );
    if let Some(p) = &m.moved.phases {
        let steps = [
            ("paused", Some(p.paused_ns)),
            ("extracted", Some(p.extracted_ns)),
            ("sent", p.sent_ns),
            ("read", p.read_ns),
            ("parsed", p.parsed_ns),
            ("installed", Some(p.installed_ns)),
        ];
        let steps: Vec<String> = steps
            .iter()
            .filter_map(|(name, ns)| ns.map(|ns| format!("{name} {}", us(ns))))
            .collect();
        line += &format!(
            " (ordered {} ahead; us after the instant: {})",
            us(p.ordered_ahead_ns),
            steps.join(", ")
        );
    }
    line
}

/// "N physical drops", and how many of them hosts' TUN queues dropped when any did.
pub fn physical_drops(a: &AccuracyReport) -> String {
    match a.tun_queue_drops {
        0 => format!("{} physical drops", a.physical_drops),
        tun => format!(
            "{} physical drops ({tun} in hosts' TUN queues: the engine did not read them in time)",
            a.physical_drops
        ),
    }
}

pub fn link(args: LinkArgs) -> Result<()> {
    let (name, request) = match args.action {
        LinkAction::Set {
            name,
            a,
            b,
            direction,
            params,
        } => {
            let set = netloom_topo::LinkPatch::table_from_words(&params)
                .with_context(|| format!("link {a}-{b}"))?;
            (
                name,
                Request::LinkSet {
                    a,
                    b,
                    direction,
                    set,
                },
            )
        }
        LinkAction::Down { name, a, b } => (name, Request::LinkState { a, b, up: false }),
        LinkAction::Up { name, a, b } => (name, Request::LinkState { a, b, up: true }),
    };
    let (body, took) = ask(name.as_deref(), &request)?;
    let change: LinkChange = serde_json::from_value(body).context("the experiment's reply")?;
    let what = match change.up {
        Some(true) => "up".to_string(),
        Some(false) => "down".to_string(),
        None => format!(
            "{} ({})",
            change
                .set
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().map_or(v.to_string(), str::to_string)))
                .collect::<Vec<_>>()
                .join(" "),
            change.direction.name()
        ),
    };
    outln!(
        "netloom: link {} {what}, applied at {:.6} s (reply in {} us)",
        change.link,
        change.at_ns as f64 / 1e9,
        took.as_micros()
    )?;
    Ok(())
}
