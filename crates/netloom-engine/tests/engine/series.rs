//! Per-interval series of a virtual-time run against what the bottleneck allows: a CBR flow
//! above a 10 Mbit/s link gets 10 Mbit/s in every interval after the first, the link is full,
//! its queue stays full and the drops add up to the report's; a shorter last interval is rated
//! over its own length; the same seed gives the same series; without the option there is none.

use netloom_engine::sim::{self, SimOptions};
use netloom_engine::traffic::{FlowSpec, SourceKind};
use netloom_engine::{Engine, Report};
use netloom_link::{PipeConfig, QueueLimit};
use netloom_time::{Duration, Instant, Rate};
use netloom_topo::{NodeKind, RoutingMetric, Topology};

const BOTTLENECK_BPS: u64 = 10_000_000;
const QUEUE: u64 = 20;

/// h1 -1G- r1 -10M, 5 ms- h2, a CBR flow of 15 Mbit/s from h1 to h2, run for 3.5 s.
fn run(series: Option<Duration>) -> Report {
    let mut t = Topology::new("bottleneck", RoutingMetric::Delay);
    let h1 = t.add_node("h1", NodeKind::Host, None);
    let r1 = t.add_node("r1", NodeKind::Router, None);
    let h2 = t.add_node("h2", NodeKind::Host, None);
    let mut fast = PipeConfig::new(Rate::bps(1_000_000_000), Duration::from_micros(100));
    let mut slow = PipeConfig::new(Rate::bps(BOTTLENECK_BPS), Duration::from_millis(5));
    fast.queue = QueueLimit::Packets(QUEUE as u32);
    slow.queue = QueueLimit::Packets(QUEUE as u32);
    t.add_link(h1, r1, None, fast, Some(fast));
    t.add_link(r1, h2, None, slow, Some(slow));
    let mut e = Engine::new(t, 3);
    let kind = SourceKind::Cbr {
        rate: Rate::bps(15_000_000),
        size: 1250,
    };
    let flow = FlowSpec {
        src: h1,
        dst: h2,
        kind,
        cap: None,
        start: Instant::ZERO,
        stop: None,
    };
    e.add_flow(Instant::ZERO, flow, 3).unwrap();
    sim::run(
        &mut e,
        SimOptions {
            series,
            ..SimOptions::new(Duration::from_millis(3500), 3)
        },
    )
}

#[test]
fn each_interval_shows_the_bottleneck_full_and_its_drops() {
    let report = run(Some(Duration::from_secs(1)));
    let s = report.series.as_ref().expect("asked for");
    assert_eq!(s.interval_ns, 1_000_000_000);
    assert_eq!((s.flows.len(), s.pipes.len()), (1, 4));
    let throughput = &s.flows[0].throughput_bps;
    assert_eq!(throughput.len(), 4, "3 whole seconds and a half");
    // Every interval but the first (which the queue fills in) delivers the bottleneck's rate;
    // the half second at the end is rated over its own length.
    for &bps in &throughput[1..] {
        let off = bps.abs_diff(BOTTLENECK_BPS) as f64 / BOTTLENECK_BPS as f64;
        assert!(off < 0.005, "{throughput:?}");
    }
    // The intervals add up to what was delivered, to a bit per interval.
    let lengths = [1.0, 1.0, 1.0, 0.5];
    let bits: f64 = throughput
        .iter()
        .zip(lengths)
        .map(|(&b, l)| b as f64 * l)
        .sum();
    let delivered = (report.flows[0].delivered * 1250 * 8) as f64;
    assert!((bits - delivered).abs() <= 4.0, "{bits} bits, {delivered}");

    // Pipe 2 is r1 -> h2, the bottleneck; pipe 3 its reverse, idle.
    let neck = &s.pipes[2];
    for u in &neck.utilization[1..] {
        assert!(*u > 0.99 && *u <= 1.0, "{:?}", neck.utilization);
    }
    assert!(
        neck.queue_packets.iter().all(|&q| q >= QUEUE - 1),
        "{neck:?}"
    );
    assert_eq!(neck.drops.iter().sum::<u64>(), report.pipes[2].drops);
    assert!(neck.drops[1] > 0);
    assert!(s.pipes[3].utilization.iter().all(|&u| u == 0.0));
    let feed = &s.pipes[0];
    assert!(
        feed.utilization[1] > 0.014 && feed.utilization[1] < 0.016,
        "{feed:?}"
    );
}

#[test]
fn the_same_seed_gives_the_same_series_and_none_is_taken_unasked() {
    let one = run(Some(Duration::from_millis(250)));
    let two = run(Some(Duration::from_millis(250)));
    assert_eq!(one.series, two.series);
    assert_eq!(
        one.series.as_ref().unwrap().flows[0].throughput_bps.len(),
        14
    );
    let none = run(None);
    assert!(none.series.is_none());
    let json = serde_json::to_value(&none).unwrap();
    assert!(json.get("series").is_none(), "absent from the JSON");
    // Recording changes nothing else.
    let with = serde_json::to_value(&one).unwrap();
    assert_eq!(with["flows"], json["flows"]);
    assert_eq!(with["pipes"], json["pipes"]);
}
