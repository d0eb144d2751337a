//! `netloom demo`: brings a bundled topology up live, runs real programs between two hosts
//! (ping, then iperf3 TCP), prints what they measured beside what the topology configures, and
//! tears everything down. Needs root. Glue: the run is a `netloom_live::Experiment`.

use anyhow::{bail, Context, Result};
use clap::Args;
use netloom_live::{Ending, Experiment, Options, Plan};
use netloom_route::Routes;
use netloom_time::{Duration as NsDuration, Rate};
use netloom_topo::{NodeId, Topology};
use std::path::PathBuf;
use std::process::{Child, Output, Stdio};
use std::time::Duration;

/// Prints a line to stdout, ignoring a reader that went away (`netloom demo | head -1`): the
/// demo must go on to its teardown and say nothing more, not panic.
macro_rules! say {
    ($($line:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($line)*);
    }};
}

#[derive(Args)]
pub struct DemoArgs {
    /// Topology to bring up.
    #[arg(default_value = "examples/dumbbell.toml")]
    file: PathBuf,
    /// The host that pings and sends (default: the first host).
    #[arg(long)]
    from: Option<String>,
    /// The host that answers and receives (default: the last host).
    #[arg(long)]
    to: Option<String>,
    /// Seconds of iperf3 TCP (1 to 3600).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=3600))]
    seconds: u32,
}

/// An ICMP echo of ping's default 56-byte payload over IPv4, on the wire (IP + ICMP headers):
/// the demo pings with `-4`, so this is the size on every pipe.
const PING_BYTES: u64 = 84;

/// What the topology says a path should give.
struct Expected {
    rtt: NsDuration,
    bottleneck: Rate,
}

/// Round trip of a ping-sized packet (propagation and serialization both ways, empty queues) and
/// the slowest rate on the way out.
fn expected(topo: &Topology, routes: &Routes, from: NodeId, to: NodeId) -> Result<Expected> {
    let there = routes
        .path(topo, from, to)
        .context("no route between the demo's hosts")?;
    let back = routes.path(topo, to, from).context("no route back")?;
    let mut rtt = NsDuration::ZERO;
    for &p in there.iter().chain(&back) {
        let c = &topo.pipes[p as usize].config;
        rtt += c.delay + c.rate.tx_time(PING_BYTES);
    }
    let bottleneck = there
        .iter()
        .map(|&p| topo.pipes[p as usize].config.rate)
        .min()
        .expect("a route between two hosts has a pipe");
    Ok(Expected { rtt, bottleneck })
}

fn host(topo: &Topology, name: Option<&str>, default: NodeId) -> Result<NodeId> {
    match name {
        None => Ok(default),
        Some(n) => match topo.node_id(n) {
            Some(id) if topo.hosts.contains(&id) => Ok(id),
            _ => {
                let hosts: Vec<&str> = topo
                    .hosts
                    .iter()
                    .map(|&h| topo.node(h).name.as_str())
                    .collect();
                let hint = netloom_topo::did_you_mean(n, &hosts);
                bail!("{n:?} is not a host of this topology{hint}")
            }
        },
    }
}

pub fn run(args: DemoArgs) -> Result<()> {
    for tool in ["ping", "iperf3"] {
        let found = std::process::Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            bail!("the demo runs {tool}; install it (Debian: apt-get install iputils-ping iperf3)");
        }
    }
    let topo = netloom_topo::load_path(&args.file)?;
    let (first, last) = match topo.hosts.as_slice() {
        [first, .., last] => (*first, *last),
        _ => bail!("the demo needs a topology with at least two hosts"),
    };
    let from = host(&topo, args.from.as_deref(), first)?;
    let to = host(&topo, args.to.as_deref(), last)?;
    if from == to {
        bail!("--from and --to name the same host; the demo measures between two hosts");
    }
    let (from_name, to_name) = (topo.node(from).name.clone(), topo.node(to).name.clone());
    let (hosts, links) = (topo.hosts.len(), topo.links.len());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let plan = Plan::new(
        topo,
        Options::new(format!("demo{}", std::process::id())),
        cpus,
    )?;
    let want = expected(plan.topology(), plan.routes(), from, to)?;
    // A Ctrl-C must not kill the demo before it tears down: it ends the programs under test
    // (they share the terminal's process group), and the demo stops on its own.
    let signal = netloom_os::install_stop_handler()?;
    let experiment = Experiment::start(plan)?;
    if signal.load(std::sync::atomic::Ordering::SeqCst) {
        experiment.stop(&Ending::Signal)?;
        bail!("interrupted while bringing the hosts up; everything is torn down");
    }
    say!(
        "netloom demo: {} is up live ({hosts} hosts, {links} links), each host a network namespace",
        args.file.display(),
    );
    let measured = measure(&experiment, &from_name, &to_name, args.seconds);
    let accuracy = experiment.stop(&Ending::Done)?.accuracy;
    let (rtt, tcp) = measured?;
    // Torn down: from here the results go out by the one rule (stdout.rs), a full disk an error.
    outln!()?;
    outln!("{:<34} {:>16} {:>16}", "", "configured", "measured")?;
    outln!(
        "{:<34} {:>16} {:>16}",
        format!("ping -4 RTT {from_name} -> {to_name} (mean)"),
        format!("{:.3} ms", want.rtt.as_nanos() as f64 / 1e6),
        format!("{rtt:.3} ms")
    )?;
    outln!(
        "{:<34} {:>16} {:>16}",
        format!("TCP throughput {from_name} -> {to_name}"),
        format!("{:.2} Mbit/s", want.bottleneck.as_bps() as f64 / 1e6),
        format!("{:.2} Mbit/s", tcp / 1e6)
    )?;
    outln!()?;
    outln!(
        "configured RTT: propagation plus serialization of an 84-byte IPv4 echo both ways, empty\n\
         queues; configured throughput: the slowest link on the way (TCP goodput stays a little\n\
         below it)."
    )?;
    outln!(
        "engine accuracy: {} ({} packets; lateness p50 {:.1} us, p99 {:.1} us, max {:.1} us; {} later than {:.0} us; {})",
        if accuracy.accurate { "ACCURATE" } else { "INACCURATE" },
        accuracy.released,
        accuracy.lateness_ns_p50 as f64 / 1e3,
        accuracy.lateness_ns_p99 as f64 / 1e3,
        accuracy.lateness_ns_max as f64 / 1e3,
        accuracy.late,
        accuracy.late_threshold_ns as f64 / 1e3,
        crate::live::physical_drops(&accuracy)
    )?;
    if !accuracy.accurate {
        outln!(
            "INACCURATE: more packets than the run allows left later than {:.0} us after their time,\n\
             or were lost outside the model. The engine shares this machine's CPUs with iperf3 and,\n\
             on a VM, with the hypervisor, which takes a vCPU away for up to milliseconds now and\n\
             then (docs/performance.md, \"The demo's lateness\"); the figures above include it.",
            accuracy.late_threshold_ns as f64 / 1e3,
        )?;
    }
    outln!("torn down: no namespace, device or process left")?;
    Ok(())
}

/// Runs ping and iperf3 between the two hosts: mean RTT in ms, TCP goodput in bit/s.
fn measure(exp: &Experiment, from: &str, to: &str, seconds: u32) -> Result<(f64, f64)> {
    let run = |host: &str, argv: &[&str]| -> Result<Output> {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        Ok(exp.command(host, &argv)?.output()?)
    };
    say!("running: ping -4 -c 10 {to} (in {from})");
    let ping = run(from, &["ping", "-4", "-c", "10", "-i", "0.2", to])?;
    // ping's summary line carries microseconds ("rtt min/avg/max/mdev = 20.043/20.221/..."),
    // where each reply's "time=" has only three significant digits.
    let text = String::from_utf8_lossy(&ping.stdout);
    let rtt = text
        .lines()
        .find_map(|l| {
            l.split(" = ")
                .nth(1)?
                .split('/')
                .nth(1)?
                .parse::<f64>()
                .ok()
        })
        .with_context(|| format!("ping got no reply: {text}"))?;
    say!("running: iperf3 -c {to} -t {seconds} (in {from}), iperf3 -s (in {to})");
    let argv: Vec<String> = ["iperf3", "-s", "-1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut server: Child = exp
        .command(to, &argv)?
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    std::thread::sleep(Duration::from_millis(300));
    let secs = seconds.to_string();
    let client = run(from, &["iperf3", "-c", to, "-t", &secs, "-J"]);
    let _ = server.kill();
    let _ = server.wait();
    let client = client?;
    let json: serde_json::Value =
        serde_json::from_slice(&client.stdout).context("iperf3 printed no JSON report")?;
    let tcp = json["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .context("iperf3's report has no received throughput")?;
    Ok((rtt, tcp))
}
