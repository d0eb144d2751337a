//! `netloom demo`: brings a bundled topology up live, runs real programs between two hosts
//! (ping, then iperf3 TCP), prints what they measured beside what the topology configures, and
//! tears everything down. Needs root.

use anyhow::{bail, Context, Result};
use clap::Args;
use netloom_engine::Engine;
use netloom_live::{Driver, Precision, Thresholds, TunIo};
use netloom_os::Experiment;
use netloom_route::Routes;
use netloom_time::{Duration as NsDuration, Rate};
use netloom_topo::{NodeId, Topology};
use std::path::PathBuf;
use std::process::{Child, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

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
    /// Seconds of iperf3 TCP.
    #[arg(long, default_value_t = 5)]
    seconds: u32,
}

/// An ICMP echo of ping's default 56-byte payload, on the wire (IPv4 + ICMP headers).
const PING_BYTES: u64 = 84;

/// What the topology says a path should give.
struct Expected {
    rtt: NsDuration,
    bottleneck: Rate,
}

/// Round trip of a ping-sized packet (propagation and serialization both ways, empty queues) and
/// the slowest rate on the way out.
fn expected(topo: &Topology, from: NodeId, to: NodeId) -> Result<Expected> {
    let routes = Routes::compute(topo);
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
            _ => bail!("{n:?} is not a host of this topology"),
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
    let want = expected(&topo, from, to)?;
    let (from_name, to_name) = (topo.node(from).name.clone(), topo.node(to).name.clone());
    let name = format!("demo{}", std::process::id());
    let (spec, addresses) = crate::run::plan(&topo, &name, netloom_os::DEFAULT_MTU);
    let stop = netloom_os::install_stop_handler()?;
    let mut experiment = Experiment::create(&spec)?;
    println!(
        "netloom demo: {} is up live ({} hosts, {} links), each host a network namespace",
        args.file.display(),
        topo.hosts.len(),
        topo.links.len()
    );
    let finished = AtomicBool::new(false);
    let outcome = std::thread::scope(|s| {
        let driver = s.spawn(|| -> Result<_> {
            netloom_os::set_timer_slack_ns(1);
            netloom_os::set_realtime_priority(crate::run::REALTIME_PRIORITY)?;
            let hosts = (0..experiment.tuns().len() as u32).collect();
            let io = TunIo::new(experiment.tuns(), hosts, None)?;
            let engine = Engine::new(topo.clone(), 1);
            let precision = Precision::Hybrid {
                spin: Duration::from_micros(60),
            };
            let mut d = Driver::new(
                engine,
                io,
                &addresses,
                1500,
                65_536,
                precision,
                Thresholds::default(),
            );
            while !finished.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
                d.step()?;
            }
            Ok(d.accuracy())
        });
        let measured = measure(&experiment, &from_name, &to_name, args.seconds);
        finished.store(true, Ordering::Relaxed);
        let accuracy = driver.join().expect("the driver thread does not panic");
        (measured, accuracy)
    });
    experiment.teardown()?;
    let (measured, accuracy) = outcome;
    let (rtt, tcp) = measured?;
    let accuracy = accuracy?;
    println!();
    println!("{:<34} {:>16} {:>16}", "", "configured", "measured");
    println!(
        "{:<34} {:>16} {:>16}",
        format!("ping RTT {from_name} -> {to_name} (mean)"),
        format!("{:.3} ms", want.rtt.as_nanos() as f64 / 1e6),
        format!("{rtt:.3} ms")
    );
    println!(
        "{:<34} {:>16} {:>16}",
        format!("TCP throughput {from_name} -> {to_name}"),
        format!("{:.2} Mbit/s", want.bottleneck.as_bps() as f64 / 1e6),
        format!("{:.2} Mbit/s", tcp / 1e6)
    );
    println!();
    println!(
        "configured RTT: propagation plus serialization of an 84-byte echo both ways, empty queues;\n\
         configured throughput: the slowest link on the way (TCP goodput stays a little below it)."
    );
    println!(
        "engine accuracy: {} ({} packets; lateness p50 {:.1} us, p99 {:.1} us, max {:.1} us; {} later than {:.0} us; {} physical drops)",
        if accuracy.accurate { "ACCURATE" } else { "INACCURATE" },
        accuracy.released,
        accuracy.lateness_ns_p50 as f64 / 1e3,
        accuracy.lateness_ns_p99 as f64 / 1e3,
        accuracy.lateness_ns_max as f64 / 1e3,
        accuracy.late,
        accuracy.late_threshold_ns as f64 / 1e3,
        accuracy.physical_drops
    );
    println!("torn down: no namespace, device or process left");
    Ok(())
}

/// Runs ping and iperf3 between the two hosts: mean RTT in ms, TCP goodput in bit/s.
fn measure(exp: &Experiment, from: &str, to: &str, seconds: u32) -> Result<(f64, f64)> {
    // Both hosts were checked against the topology the experiment was made from.
    let ns = |host: &str| {
        let hosts = &exp.spec().hosts;
        exp.namespace(
            hosts
                .iter()
                .position(|h| h.name == host)
                .expect("a demo host"),
        )
    };
    let (from_ns, to_ns) = (ns(from), ns(to));
    let run = |ns: &str, argv: &[&str]| -> Result<Output> {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        Ok(netloom_os::command(ns, &argv)?.output()?)
    };
    println!("running: ping -c 10 {to} (in {from})");
    let ping = run(&from_ns, &["ping", "-c", "10", "-i", "0.2", to])?;
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
    println!("running: iperf3 -c {to} -t {seconds} (in {from}), iperf3 -s (in {to})");
    let argv: Vec<String> = ["iperf3", "-s", "-1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut server: Child = netloom_os::command(&to_ns, &argv)?
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    std::thread::sleep(Duration::from_millis(300));
    let secs = seconds.to_string();
    let client = run(&from_ns, &["iperf3", "-c", to, "-t", &secs, "-J"]);
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
