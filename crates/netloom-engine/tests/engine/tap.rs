//! Taps report what a tapped pipe does with each packet at the emulated instant: entry, exit a
//! delay and a serialization later, a queue drop with its cause; untapped pipes report nothing.

use netloom_engine::tap::{Carried, Seen, Tapped};
use netloom_engine::{Engine, Injected};
use netloom_link::{Aqm, DropCause, FqCodelParams, PipeConfig, QueueLimit};
use netloom_time::{Duration, Instant, Rate};
use netloom_topo::{NodeId, NodeKind, RoutingMetric, Topology};

/// h1 – h2 at 8 Mbit/s (1000 bytes take 1 ms to serialize), 5 ms of delay, room for 2 packets,
/// under `aqm`; the engine and the two hosts, pipe 0 (h1 to h2) tapped.
fn tapped_link(aqm: Aqm) -> (Engine, NodeId, NodeId) {
    let mut t = Topology::new("tap", RoutingMetric::Delay);
    let h1 = t.add_node("h1", NodeKind::Host, None);
    let h2 = t.add_node("h2", NodeKind::Host, None);
    let mut c = PipeConfig::new(Rate::bps(8_000_000), Duration::from_millis(5));
    c.queue = QueueLimit::Packets(2);
    c.aqm = aqm;
    t.add_link(h1, h2, None, c, Some(c));
    let mut e = Engine::new(t, 1);
    e.set_tap(0, true);
    (e, h1, h2)
}

#[test]
fn a_tapped_pipe_reports_entries_exits_and_drops_at_their_instants() {
    let (mut e, h1, h2) = tapped_link(Aqm::DropTail);
    let at = Instant(1_000_000);
    for token in 0..3 {
        assert!(e.inject(at, h1, h2, Injected::plain(1000, token)));
    }
    assert!(
        e.inject(at, h2, h1, Injected::plain(1000, 9)),
        "the other direction, untapped"
    );
    while let Some(t) = e.poll_at() {
        e.advance(t);
    }
    let seen: Vec<Tapped> = e.drain_tapped().collect();
    let ext = |token| Carried::External { token };
    let tapped = |token, at: u64, seen| Tapped {
        pipe: 0,
        at: Instant(at),
        seen,
        carried: ext(token),
        bytes: 1000,
    };
    assert_eq!(
        seen,
        [
            tapped(0, 1_000_000, Seen::Entered),
            tapped(1, 1_000_000, Seen::Entered),
            tapped(2, 1_000_000, Seen::Dropped(DropCause::Queue)),
            tapped(0, 7_000_000, Seen::Left),
            tapped(1, 8_000_000, Seen::Left),
        ]
    );
    e.set_tap(0, false);
    assert!(e.inject(Instant(20_000_000), h1, h2, Injected::plain(1000, 4)));
    while let Some(t) = e.poll_at() {
        e.advance(t);
    }
    assert_eq!(e.drain_tapped().count(), 0, "untapped again");
}

#[test]
fn an_idle_fq_codel_pipe_sends_a_bursts_first_packet_at_once_and_drops_from_the_waiting() {
    // The link of the test above under FQ-CoDel, four packets of one flow at one instant. The
    // first finds the pipe idle and starts at once, as Linux's qdisc sends at enqueue when the
    // link can; over the limit (which counts the packet being sent), FQ-CoDel drops from the
    // head of the longest flow queue: of the packets waiting, not the one on the wire.
    let (mut e, h1, h2) = tapped_link(Aqm::FqCodel(FqCodelParams::default()));
    let at = Instant(1_000_000);
    for token in 0..4 {
        assert!(e.inject(at, h1, h2, Injected::plain(1000, token)));
    }
    while let Some(t) = e.poll_at() {
        e.advance(t);
    }
    let seen: Vec<(u64, u64, Seen)> = e
        .drain_tapped()
        .map(|t| match t.carried {
            Carried::External { token } => (token, t.at.0, t.seen),
            other => panic!("an injected packet, not {other:?}"),
        })
        .collect();
    let queue = Seen::Dropped(DropCause::Queue);
    assert_eq!(
        seen,
        [
            (0, 1_000_000, Seen::Entered),
            (1, 1_000_000, Seen::Entered),
            (2, 1_000_000, Seen::Entered),
            (1, 1_000_000, queue),
            (3, 1_000_000, Seen::Entered),
            (2, 1_000_000, queue),
            (0, 7_000_000, Seen::Left),
            (3, 8_000_000, Seen::Left),
        ]
    );
}
