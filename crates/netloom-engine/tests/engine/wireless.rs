//! Wireless, time-varying and trace-driven links in the engine, in virtual time: the paper's
//! Table 4 trend, scheduled changes applied without flushing, a Markov link that repeats per
//! seed, and a trace link that carries exactly its opportunities.

use netloom_engine::sim::{self, SimOptions};
use netloom_engine::traffic::{FlowSpec, SourceKind};
use netloom_engine::{Engine, Report};
use netloom_link::Trace;
use netloom_time::{Duration, Instant, Rate};
use netloom_topo::{load_str, Format, Topology};

fn run(engine: &mut Engine, duration: Duration, seed: u64) -> Report {
    sim::run(engine, SimOptions::new(duration, seed))
}

fn topology(text: &str) -> Topology {
    load_str(text, Format::Toml, "wireless.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn flow(t: &Topology, src: &str, dst: &str, kind: SourceKind) -> FlowSpec {
    FlowSpec {
        src: t.node_id(src).unwrap(),
        dst: t.node_id(dst).unwrap(),
        kind,
        cap: None,
        start: Instant::ZERO,
        stop: None,
    }
}

/// A server behind an access point, and a station on an 11 Mbit/s 802.11b channel: data and
/// TCP ACKs share the air (one shared pipe), as in the paper's Figure 14.
fn access_point(collision: f64) -> Topology {
    topology(&format!(
        r#"
hosts = ["server", "sta"]
routers = ["ap"]

[[link]]
a = "server"
b = "ap"
bw = "100Mbit"
delay = "1ms"

[[link]]
a = "ap"
b = "sta"
shared = true
bw = "11Mbit"
delay = "100us"
queue = 100
wireless = "802.11b"
netload = "1%"
collision = {collision}
"#
    ))
}

/// Paper Table 4: one TCP flow over 11 Mbit/s with collision 0, 0.04, 0.06, 0.07 and 0.08:
/// throughput falls as the collision probability rises (paper: 6266, 5936, 5733, 5657, 5546
/// kbit/s emulated).
#[test]
fn table4_tcp_throughput_falls_with_collisions() {
    let paper = [6266.0, 5936.0, 5733.0, 5657.0, 5546.0];
    let mut last = f64::INFINITY;
    for (collision, paper) in [0.0, 0.04, 0.06, 0.07, 0.08].into_iter().zip(paper) {
        let t = access_point(collision);
        let spec = flow(&t, "server", "sta", SourceKind::Aimd { mss: 1460 });
        let mut e = Engine::new(t, 1);
        e.add_flow(Instant::ZERO, spec, 1).unwrap();
        let r = run(&mut e, Duration::from_secs(20), 1);
        let kbps = r.flows[0].throughput_bps as f64 / 1e3;
        println!(
            "collision {collision}: {kbps:.0} kbit/s (paper {paper}, {:+.1}%)",
            (kbps / paper - 1.0) * 100.0
        );
        assert!(
            kbps < last,
            "collision {collision}: {kbps:.0} not below {last:.0}"
        );
        last = kbps;
    }
}

/// "down from 2s to 3s": a CBR flow loses exactly the packets sent while the link is down (the
/// ones in flight at 2 s included), and a delay change at 4 s shows in the latency.
#[test]
fn a_schedule_takes_the_link_down_and_changes_its_delay() {
    let t = topology(
        r#"
hosts = ["h1", "h2"]

[[link]]
a = "h1"
b = "h2"
bw = "10Mbit"
delay = "10ms"
schedule = { events = [
    { from = "2s", to = "3s", set = { up = false } },
    { at = "4s", set = { delay = "50ms" } },
] }
"#,
    );
    // 100 packets/s of 1000 bytes, at 0, 10 ms, 20 ms, ...
    let kind = SourceKind::Cbr {
        rate: Rate::bps(800_000),
        size: 1000,
    };
    let spec = flow(&t, "h1", "h2", kind);
    let mut e = Engine::new(t, 1);
    e.add_flow(Instant::ZERO, spec, 1).unwrap();
    let r = run(&mut e, Duration::from_secs(6), 1);
    // Sent from 1.99 s (in flight at 2 s: 0.8 ms on the wire + 10 ms) up to 2.99 s: 101 packets.
    // The one in flight is dropped by the pipe; the others find no route while it is down.
    assert_eq!(r.flows[0].lost, 101, "{:?}", r.flows[0]);
    assert_eq!(r.pipes[0].drops_by_cause.link_down, 1);
    assert_eq!(r.totals.unroutable, 100);
    // After 4 s the one-way latency is 50.8 ms instead of 10.8 ms.
    assert!(
        r.flows[0].latency_ns.max >= 50_800_000,
        "{:?}",
        r.flows[0].latency_ns
    );
}

/// A Markov link: the same seed gives the same report; another seed other state changes.
#[test]
fn a_markov_link_repeats_per_seed() {
    let text = r#"
hosts = ["sta", "server"]

[[link]]
a = "sta"
b = "server"
shared = true
bw = "54Mbit"
delay = "1ms"
wireless = "802.11g"

[link.markov]
start = "near"
states.near = { dwell = [[0, "100ms"], [1, "300ms"]], next = { far = 1 }, set = { snr = "30dB" } }
states.far = { dwell = [[0, "50ms"], [1, "150ms"]], next = { near = "60%", gone = "40%" }, set = { snr = "17dB", bw = "24Mbit" } }
states.gone = { dwell = "100ms", next = { near = 1 }, set = { up = false } }
"#;
    let json = |seed| {
        let t = topology(text);
        let kind = SourceKind::Aimd { mss: 1460 };
        let spec = flow(&t, "server", "sta", kind);
        let mut e = Engine::new(t, seed);
        e.add_flow(Instant::ZERO, spec, seed).unwrap();
        serde_json::to_string(&run(&mut e, Duration::from_secs(5), seed)).unwrap()
    };
    assert_eq!(json(3), json(3));
    assert_ne!(json(3), json(4));
}

/// A trace link carries exactly one 1500-byte packet per opportunity under saturation.
#[test]
fn a_trace_link_delivers_its_opportunities() {
    let dir = std::env::temp_dir().join(format!("netloom-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // 4 opportunities every 4 ms: 12 Mbit/s.
    std::fs::write(dir.join("up.trace"), "1\n2\n2\n4\n").unwrap();
    let topo_path = dir.join("cell.toml");
    std::fs::write(
        &topo_path,
        r#"
hosts = ["phone", "server"]

[[link]]
a = "phone"
b = "server"
delay = "20ms"
queue = 1000
a_to_b = { trace = "up.trace" }
b_to_a = { bw = "100Mbit" }
"#,
    )
    .unwrap();
    let t = netloom_topo::load_path(&topo_path).unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_dir_all(&dir).unwrap();
    let kind = SourceKind::Cbr {
        rate: Rate::bps(20_000_000),
        size: 1500,
    };
    let spec = flow(&t, "phone", "server", kind);
    let mut e = Engine::new(t, 1);
    e.add_flow(Instant::ZERO, spec, 1).unwrap();
    let end = Duration::from_millis(1000);
    let r = run(&mut e, end, 1);
    // Every opportunity carries one packet, which arrives 20 ms later; arrivals at or after
    // the end are not counted.
    let trace = Trace::parse("1\n2\n2\n4\n").unwrap();
    let last_in_time = Instant::ZERO + end;
    let expected = (0..)
        .take_while(|&k| trace.time_of(k) + Duration::from_millis(20) < last_in_time)
        .count() as u64;
    assert_eq!(expected, 979);
    assert_eq!(r.flows[0].delivered, expected);
}
