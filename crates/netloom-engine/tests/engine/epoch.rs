//! A run cut into epochs (`epoch::run`) reports exactly what one uninterrupted run reports, its
//! epochs' counts add up to the run's, and a flow with a stop sends nothing after it (the
//! switching workload of dynamic repartitioning is made of such flows).

use netloom_engine::sim::{self, SimOptions};
use netloom_engine::traffic::{self, FlowSpec, SourceKind};
use netloom_engine::{epoch, Engine};
use netloom_link::PipeConfig;
use netloom_time::{Duration, Instant, Rate};
use netloom_topo::gen::{generate, GenKind, TreeMeshParams};
use netloom_topo::{NodeKind, RoutingMetric, Topology};

const SEED: u64 = 5;

/// A small h2: four trees of height 2, two hosts per leaf.
fn h2() -> Topology {
    let kind = GenKind::TreeMesh(TreeMeshParams {
        height: 2,
        hosts_per_leaf: 2,
        ..TreeMeshParams::default()
    });
    netloom_topo::resolve(&generate(&kind).unwrap(), "h2").unwrap()
}

/// An engine with the switching workload over 2 s.
fn switching_engine(topo: &Topology) -> Engine {
    let spec = traffic::parse_spec("pattern=switching within=2s source=aimd cap=2Mbit").unwrap();
    let flows = traffic::expand(&spec.pattern, spec.kind, spec.cap, topo, SEED).unwrap();
    let mut engine = Engine::new(topo.clone(), SEED);
    for flow in flows {
        engine.add_flow(Instant::ZERO, flow, SEED).unwrap();
    }
    engine
}

#[test]
fn epochs_change_nothing_in_the_run_and_add_up_to_it() {
    let topo = h2();
    let duration = Duration::from_millis(2500);
    let mut whole = switching_engine(&topo);
    whole.enable_transition_counts();
    let expected = sim::run(&mut whole, SimOptions::new(duration, SEED));
    let mut cut = switching_engine(&topo);
    let mut epochs = Vec::new();
    let report = epoch::run(
        &mut cut,
        duration,
        Duration::from_secs(1),
        SEED,
        false,
        &mut |e| epochs.push(e),
    );
    assert_eq!(
        serde_json::to_string(&report).unwrap(),
        serde_json::to_string(&expected).unwrap()
    );
    let spans: Vec<_> = epochs
        .iter()
        .map(|e| (e.start.as_nanos(), e.end.as_nanos()))
        .collect();
    assert_eq!(
        spans,
        [
            (0, 1_000_000_000),
            (1_000_000_000, 2_000_000_000),
            (2_000_000_000, 2_500_000_000)
        ]
    );
    let (packets, transitions) = whole.hop_counts();
    let mut summed = vec![0; packets.len()];
    let mut hops = std::collections::BTreeMap::new();
    for e in &epochs {
        assert!(
            e.packets.iter().sum::<u64>() > 0,
            "every epoch carries traffic"
        );
        for (s, n) in summed.iter_mut().zip(&e.packets) {
            *s += n;
        }
        for &(p, q, n) in &e.transitions {
            assert!(n > 0);
            *hops.entry((p, q)).or_insert(0) += n;
        }
    }
    assert_eq!(summed, packets);
    let hops: Vec<_> = hops.into_iter().map(|((p, q), n)| (p, q, n)).collect();
    assert_eq!(hops, transitions);
}

#[test]
fn a_flow_sends_nothing_from_its_stop_on() {
    let mut t = Topology::new("pair", RoutingMetric::Delay);
    let a = t.add_node("a", NodeKind::Host, None);
    let b = t.add_node("b", NodeKind::Host, None);
    let link = PipeConfig::new(Rate::bps(100_000_000), Duration::from_millis(1));
    t.add_link(a, b, None, link, Some(link));
    let mut engine = Engine::new(t, SEED);
    // 1000 packets per second, stopped at 1.5 s.
    engine
        .add_flow(
            Instant::ZERO,
            FlowSpec {
                src: a,
                dst: b,
                kind: SourceKind::Cbr {
                    rate: Rate::bps(12_000_000),
                    size: 1500,
                },
                cap: None,
                start: Instant::ZERO,
                stop: Some(Instant::ZERO + Duration::from_millis(1500)),
            },
            SEED,
        )
        .unwrap();
    let mut sent = Vec::new();
    epoch::run(
        &mut engine,
        Duration::from_secs(3),
        Duration::from_secs(1),
        SEED,
        false,
        &mut |e| sent.push(e.packets[0]),
    );
    assert_eq!(sent, [1000, 500, 0]);
}
