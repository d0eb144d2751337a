//! Taps report what a tapped pipe does with each packet at the emulated instant: entry, exit a
//! delay and a serialization later, a queue drop with its cause; untapped pipes report nothing.

use netloom_engine::tap::{Carried, Seen, Tapped};
use netloom_engine::{Engine, Injected};
use netloom_link::{DropCause, PipeConfig, QueueLimit};
use netloom_time::{Duration, Instant, Rate};
use netloom_topo::{NodeKind, RoutingMetric, Topology};

#[test]
fn a_tapped_pipe_reports_entries_exits_and_drops_at_their_instants() {
    let mut t = Topology::new("tap", RoutingMetric::Delay);
    let h1 = t.add_node("h1", NodeKind::Host, None);
    let h2 = t.add_node("h2", NodeKind::Host, None);
    // 8 Mbit/s: 1000 bytes take 1 ms to serialize; 5 ms of delay; room for 2 packets.
    let mut c = PipeConfig::new(Rate::bps(8_000_000), Duration::from_millis(5));
    c.queue = QueueLimit::Packets(2);
    t.add_link(h1, h2, None, c, Some(c));
    let mut e = Engine::new(t, 1);
    e.set_tap(0, true);
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
