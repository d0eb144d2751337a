//! The cost of a hand-off between two workers: one thread streams a real hand-off (made by a
//! two-worker engine) into the other's mailbox, which takes each one and gives it to its
//! engine, as the drivers of a partitioned live run do; both spin, on two CPUs when there are.

use super::{CalibrationError, HandoffCost};
use crate::mailbox::{mailboxes, Message};
use netloom_engine::{Engine, Handoff, Injected, Ownership, Payload};
use netloom_link::{PacketMeta, PipeConfig};
use netloom_time::{Duration, Instant, Rate};
use netloom_topo::{NodeKind, RoutingMetric, Topology};
use std::sync::Arc;

/// Hand-offs streamed: enough for a few tens of milliseconds.
const HANDOFFS: u64 = 200_000;

/// Two hosts joined by one link whose h0 side worker 0 owns and h1 side worker 1.
fn two_workers(payload: Payload) -> (Topology, Arc<Ownership>) {
    let mut t = Topology::new("t", RoutingMetric::Delay);
    let h0 = t.add_node("h0", NodeKind::Host, None);
    let h1 = t.add_node("h1", NodeKind::Host, None);
    let c = PipeConfig::new(Rate::bps(1_000_000), Duration::from_millis(1));
    t.add_link(h0, h1, None, c, Some(c));
    let o = Arc::new(Ownership::live(&t, &[0, 1], 2, payload).expect("two pipes, two workers"));
    (t, o)
}

/// The hand-off worker 0 makes of a packet from h0 to h1 (`token` names its payload), and the
/// topology and ownership of the run it belongs to.
pub(crate) fn handoff(payload: Payload, token: u64) -> (Handoff, Topology, Arc<Ownership>) {
    let (t, o) = two_workers(payload);
    let mut e = Engine::partitioned(t.clone(), 1, o.clone(), 0);
    let injected = Injected {
        bytes: 100,
        token,
        meta: PacketMeta::default(),
        ttl: netloom_engine::DEFAULT_TTL,
    };
    assert!(e.inject(Instant(0), 0, 1, injected), "h0 has a route to h1");
    let handoff = e.take_handoffs(1).next().expect("h1's side is worker 1's");
    (handoff, t, o)
}

/// Streams `HANDOFFS` hand-offs from one thread to another and times them.
pub(super) fn cost() -> Result<HandoffCost, CalibrationError> {
    // Shipped payloads make the two-host run hand its packet over for delivery; the message
    // posted is the descriptor alone, as with cached payloads (no bytes copied).
    let (handoff, topo, ownership) = handoff(Payload::Ship, 0);
    let (mut inboxes, posts) = mailboxes(2).map_err(CalibrationError::io("make mailboxes"))?;
    let mut inbox = inboxes.pop().expect("worker 1's inbox");
    let post = posts[1].clone();
    let started = std::time::Instant::now();
    let sender = std::thread::Builder::new()
        .name("netloom-calibrate-handoff".into())
        .spawn(move || {
            for _ in 0..HANDOFFS {
                post.send(Message::Handoff(handoff));
            }
        })
        .map_err(CalibrationError::io("start the hand-off sender"))?;
    let mut engine = Engine::partitioned(topo, 1, ownership, 1);
    let mut taken = 0;
    while taken < HANDOFFS {
        match inbox.take() {
            Some(Message::Handoff(h)) => {
                engine.accept(h);
                taken += 1;
            }
            Some(_) => unreachable!("only hand-offs are posted"),
            None => std::hint::spin_loop(),
        }
    }
    let wall = started.elapsed();
    sender
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    Ok(HandoffCost {
        handoffs: HANDOFFS,
        ns_per_handoff: wall.as_nanos() as f64 / HANDOFFS as f64,
    })
}
