//! Virtual-time tests of queue management seen end to end: CoDel keeps a bulk flow's queue short
//! where drop-tail lets it fill, and with `ecn` AIMD flows back off at marks instead of losses.

use netloom_engine::sim::{self, SimOptions};
use netloom_engine::traffic::{FlowSpec, SourceKind};
use netloom_engine::{Engine, Report};
use netloom_time::{Duration, Instant};
use netloom_topo::{load_str, Format};

/// Two AIMD flows from h1 and h2 to h3 over a 10 Mbit/s, 10 ms bottleneck r1-r2 with a deep
/// queue (1000 packets, 1.2 s at the bottleneck's rate), managed by `aqm`.
fn run(aqm: &str) -> Report {
    let file = format!(
        r#"
hosts = ["h1", "h2", "h3"]
routers = ["r1", "r2"]

[defaults]
bw = "1Gbit"
delay = "1ms"

[[link]]
a = "h1"
b = "r1"
[[link]]
a = "h2"
b = "r1"
[[link]]
a = "r1"
b = "r2"
bw = "10Mbit"
delay = "10ms"
queue = 1000
{aqm}
[[link]]
a = "r2"
b = "h3"
"#
    );
    let topo = load_str(&file, Format::Toml, "aqm.toml").unwrap();
    let node = |name| topo.node_id(name).unwrap();
    let (h1, h2, h3) = (node("h1"), node("h2"), node("h3"));
    let mut e = Engine::new(topo, 5);
    for (i, src) in [h1, h2].into_iter().enumerate() {
        let spec = FlowSpec {
            src,
            dst: h3,
            kind: SourceKind::Aimd { mss: 1460 },
            cap: None,
            start: Instant(i as u64 * 1_000_000),
        };
        e.add_flow(spec, 5).unwrap();
    }
    sim::run(
        &mut e,
        SimOptions {
            duration: Duration::from_secs(20),
            seed: 5,
            wall_clock: false,
            progress: None,
            progress_every: std::time::Duration::from_secs(1),
        },
    )
}

/// The bottleneck's r1 → r2 pipe.
fn bottleneck(r: &Report) -> &netloom_engine::report::PipeReport {
    r.pipes
        .iter()
        .find(|p| p.from == "r1" && p.to == "r2")
        .unwrap()
}

fn median_latency_ms(r: &Report) -> f64 {
    let sum: u64 = r.flows.iter().map(|f| f.latency_ns.p50).sum();
    sum as f64 / r.flows.len() as f64 / 1e6
}

#[test]
fn codel_keeps_the_queue_short_where_drop_tail_fills_it() {
    let tail = run("");
    let codel = run(r#"aqm = "codel""#);
    let (t, c) = (bottleneck(&tail), bottleneck(&codel));
    // Drop-tail: the flows fill the 1000-packet queue before losing anything.
    assert!(t.drops_by_cause.queue > 0 && t.queue_hwm_packets >= 999);
    // CoDel drops at the head long before, and the queue stays far below the limit.
    assert!(c.drops_by_cause.codel > 0 && c.drops_by_cause.queue == 0);
    assert!(c.queue_hwm_packets < t.queue_hwm_packets / 2);
    // One-way latency: 12 ms of path; drop-tail adds up to 1.2 s of queue, CoDel about its
    // 5 ms target.
    let (lt, lc) = (median_latency_ms(&tail), median_latency_ms(&codel));
    assert!(
        lc < 40.0 && lt > 5.0 * lc,
        "median {lt} ms drop-tail, {lc} ms CoDel"
    );
    // Both still fill the link.
    for r in [&tail, &codel] {
        let sum: u64 = r.flows.iter().map(|f| f.throughput_bps).sum();
        assert!(sum as f64 > 0.85 * 10e6, "aggregate {sum}");
    }
}

#[test]
fn with_ecn_aimd_flows_are_marked_instead_of_dropped_and_retransmit_nothing() {
    for aqm in [
        "aqm = \"codel\"",
        "aqm = \"red\"\nred = { min_th = 20, max_th = 200 }",
    ] {
        let drops = run(aqm);
        let marks = run(&format!("{aqm}\necn = true"));
        let (d, m) = (bottleneck(&drops), bottleneck(&marks));
        let early =
            |p: &netloom_engine::report::PipeReport| p.drops_by_cause.codel + p.drops_by_cause.red;
        assert!(early(d) > 0 && d.marks == 0, "{aqm}: {d:?}");
        assert!(m.marks > 0 && m.drops == 0, "{aqm}: {m:?}");
        // The flows slowed down at the marks: no loss, so nothing sent twice.
        let retransmits: u64 = marks.flows.iter().map(|f| f.retransmits).sum();
        assert_eq!(retransmits, 0, "{aqm}");
        assert!(drops.flows.iter().map(|f| f.retransmits).sum::<u64>() > 0);
        let sum: u64 = marks.flows.iter().map(|f| f.throughput_bps).sum();
        assert!(sum as f64 > 0.85 * 10e6, "{aqm}: aggregate {sum}");
        // And the queue stayed as short as with drops.
        assert!(
            m.queue_hwm_packets < 2 * d.queue_hwm_packets.max(50),
            "{aqm}"
        );
    }
}
