//! Virtual-time tests of queue management seen end to end: CoDel keeps a bulk flow's queue short
//! where drop-tail lets it fill, with `ecn` AIMD flows back off at marks instead of losses, and
//! FQ-CoDel serves a sparse flow beside a bulk one with almost no queueing.

use netloom_engine::sim::{self, SimOptions};
use netloom_engine::traffic::{FlowSpec, SourceKind};
use netloom_engine::{Engine, Report};
use netloom_time::{Duration, Instant, Rate};
use netloom_topo::{load_str, Format};

const AIMD: SourceKind = SourceKind::Aimd { mss: 1460 };

/// Two AIMD flows from h1 and h2 to h3 over a 10 Mbit/s, 10 ms bottleneck r1-r2 with a deep
/// queue (1000 packets, 1.2 s at the bottleneck's rate), managed by `aqm`.
fn run(aqm: &str) -> Report {
    run_flows(aqm, [AIMD, AIMD])
}

/// Flows of `kinds` from h1 and from h2 to h3 over the bottleneck of `run`.
fn run_flows(aqm: &str, kinds: [SourceKind; 2]) -> Report {
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
    for (i, (src, kind)) in [h1, h2].into_iter().zip(kinds).enumerate() {
        let spec = FlowSpec {
            src,
            dst: h3,
            kind,
            cap: None,
            start: Instant(i as u64 * 1_000_000),
            stop: None,
        };
        e.add_flow(Instant::ZERO, spec, 5).unwrap();
    }
    sim::run(&mut e, SimOptions::new(Duration::from_secs(20), 5))
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

#[test]
fn fq_codel_keeps_a_sparse_flow_beside_a_bulk_one_near_the_path_delay() {
    // A bulk AIMD flow from h1 and a sparse one from h2: 100 kbit/s of 200-byte packets (one
    // every 16 ms). The one-way path delay is 12 ms plus serializations (0.16 ms for 200 bytes
    // at 10 Mbit/s).
    let sparse = SourceKind::Cbr {
        rate: Rate::bps(100_000),
        size: 200,
    };
    let p99 = |aqm: &str| {
        let r = run_flows(aqm, [AIMD, sparse]);
        let f = &r.flows[1];
        assert!(f.delivered > 1000, "{aqm}: {f:?}");
        (f.latency_ns.p99 as f64 / 1e6, r)
    };
    let (tail, _) = p99("");
    let (codel, _) = p99(r#"aqm = "codel""#);
    let (fq, r) = p99(r#"aqm = "fq_codel""#);
    eprintln!(
        "sparse flow p99 one-way: drop-tail {tail:.2} ms, CoDel {codel:.2}, FQ-CoDel {fq:.2}"
    );
    // FQ-CoDel: at most one bulk packet (1.2 ms) ahead of each sparse packet, none lost.
    assert!(fq < 12.0 + 0.2 + 1.3, "FQ-CoDel p99 {fq} ms");
    assert_eq!(r.flows[1].lost, 0);
    // Drop-tail lets the bulk flow's queue grow to hundreds of ms; CoDel alone keeps it near
    // its target, still more than FQ-CoDel.
    assert!(tail > 100.0, "drop-tail p99 {tail} ms");
    assert!(codel > fq + 2.0, "CoDel p99 {codel} ms, FQ-CoDel {fq} ms");
    // The bulk flow still fills the rest of the link.
    assert!(
        r.flows[0].throughput_bps as f64 > 0.85 * 10e6,
        "{:?}",
        r.flows[0]
    );
}
