//! Packets' bytes while their descriptors cross the emulated network, and the protocol that keeps
//! them in one place across workers. The engine carries only a token (`token`): the home worker
//! that read the packet, the pool buffer there, the segment. Cached payloads stay home: when a
//! pipe elsewhere duplicates or drops a copy, its home is told (`Hold`, `Release`), and the
//! packet is handed back home to be written. Shipped payloads travel with each hand-off and are
//! taken into the receiver's pool, which then is their home.

use crate::mailbox::{Message, Post};
use crate::pool::{Pool, Size};
use netloom_engine::{Engine, Handoff, Refusal};
use netloom_packet::segment::MAX_HEAD;
use netloom_topo::NodeId;

/// Bits of an engine token that number the segment; the pool buffer's index is above them,
/// and the home worker (whose pool holds the buffer) above that.
const SEGMENT_BITS: u32 = 16;
const HOME_SHIFT: u32 = SEGMENT_BITS + 32;

/// The token of segment `segment` of the frame in buffer `id` of worker `home`'s pool.
pub(crate) fn token(home: u16, id: u32, segment: u16) -> u64 {
    u64::from(home) << HOME_SHIFT | u64::from(id) << SEGMENT_BITS | u64::from(segment)
}

/// The home worker, buffer and segment of a token.
pub(crate) fn untoken(token: u64) -> (u16, u32, u16) {
    (
        (token >> HOME_SHIFT) as u16,
        (token >> SEGMENT_BITS) as u32,
        token as u16,
    )
}

/// One worker's payloads: its pool, and where to post news of payloads that live elsewhere.
pub(crate) struct Payloads {
    pool: Pool,
    /// This worker: the home of the payloads it reads.
    me: u16,
    /// Where to post to each worker, by worker; empty until the driver is connected.
    posts: Vec<Post>,
    /// Hand-offs on their way out, when their payloads are shipped along.
    shipping: Vec<Handoff>,
    /// Where a shipped segment's headers are rebuilt.
    head: [u8; MAX_HEAD],
}

impl Payloads {
    /// The payloads of worker `me`, held in `pool`.
    pub fn new(pool: Pool, me: u16) -> Payloads {
        Payloads {
            pool,
            me,
            posts: Vec::new(),
            shipping: Vec::new(),
            head: [0; MAX_HEAD],
        }
    }

    /// Posts to worker k go to `posts[k]` from now on.
    pub fn connect(&mut self, posts: Vec<Post>) {
        self.posts = posts;
    }

    /// This worker.
    pub fn me(&self) -> u16 {
        self.me
    }

    /// The pool of this worker's payloads.
    pub fn pool(&mut self) -> &mut Pool {
        &mut self.pool
    }

    /// The pool, to read.
    pub fn pool_ref(&self) -> &Pool {
        &self.pool
    }

    /// A hand-off that carries its packet's bytes: they go into this worker's pool, which is
    /// their home from now on. `None` when no buffer is left: the packet is lost outside the
    /// model, and the caller counts it.
    pub fn take_shipped(&mut self, mut handoff: Handoff, bytes: &[u8]) -> Option<Handoff> {
        let id = self.pool.take(Size::Small)?;
        if bytes.len() > self.pool.bytes(Size::Small) {
            self.pool.put_back(id);
            return None;
        }
        self.pool.space(id)[..bytes.len()].copy_from_slice(bytes);
        self.pool.fill(id, bytes.len(), None, 1);
        handoff.rehome(token(self.me, id, 0), self.me);
        Some(handoff)
    }

    /// A token's buffer here got one more copy in flight (`Hold`) or one fewer (`Release`).
    pub fn settle_here(&mut self, token: u64, hold: bool) {
        let id = untoken(token).1;
        match hold {
            true => self.pool.hold(id),
            false => self.pool.release(id),
        }
    }

    /// One more copy (`hold`) or one fewer of the segment `token` names: in this worker's pool,
    /// or as news posted to the worker whose pool holds it.
    pub fn settle(&mut self, token: u64, hold: bool) {
        let home = untoken(token).0;
        if home == self.me {
            return self.settle_here(token, hold);
        }
        let message = match hold {
            true => Message::Hold(token),
            false => Message::Release(token),
        };
        self.posts[usize::from(home)].send(message);
    }

    /// Posts `message` to worker `to`; false when it is gone.
    pub fn post(&self, to: u16, message: Message) -> bool {
        self.posts[usize::from(to)].send(message)
    }

    /// Tells the home of the payload of segment `token`, another worker, that router `node`
    /// refused it (`Output::Refused`), for the home to answer: call before settling the dropped
    /// copy, so this reaches the home before its `Release`.
    pub fn refer_home(&mut self, token: u64, node: NodeId, why: Refusal, ttl: u8) {
        let home = untoken(token).0;
        debug_assert_ne!(home, self.me, "a refusal at home is answered there");
        let message = Message::Refused {
            token,
            node,
            why,
            ttl,
        };
        self.posts[usize::from(home)].send(message);
    }

    /// Posts the engine's hand-offs to the workers that take them over; when payloads are
    /// shipped, each with a copy of its packet as one frame of the hosts' I/O (a segment of a
    /// super-packet rebuilt as the packet it stands for), releasing this worker's copy. Call
    /// after the holds and releases of the same turn: a hold posted to a payload's home must
    /// reach it before any release that a hand-off posted now could cause at another worker.
    /// `seen` is shown every hand-off before it goes.
    pub fn post_handoffs(&mut self, engine: &mut Engine, mut seen: impl FnMut(&Handoff)) {
        let (ship, me) = (engine.ships_payloads(), usize::from(self.me));
        for to in (0..self.posts.len()).filter(|&k| k != me) {
            if !ship {
                for handoff in engine.take_handoffs(to) {
                    seen(&handoff);
                    self.posts[to].send(Message::Handoff(handoff));
                }
                continue;
            }
            let mut shipping = std::mem::take(&mut self.shipping);
            shipping.extend(engine.take_handoffs(to));
            for handoff in shipping.drain(..) {
                seen(&handoff);
                let bytes = self.ship_out(&handoff);
                self.posts[to].send(Message::Shipped(handoff, bytes));
            }
            self.shipping = shipping;
        }
    }

    /// Passes `handoff`, taken here but handled by worker `to` since a move, on there: with a
    /// copy of its packet when payloads are shipped (`ship`), releasing this worker's.
    pub fn pass_on(&mut self, to: u16, handoff: Handoff, ship: bool) {
        let message = match ship {
            true => Message::Shipped(handoff, self.ship_out(&handoff)),
            false => Message::Handoff(handoff),
        };
        self.post(to, message);
    }

    /// Copies of the packets of `handoffs`, which a move hands to another worker when payloads
    /// are shipped, in their order, releasing this worker's.
    pub fn pack(&mut self, handoffs: &[Handoff]) -> Vec<Box<[u8]>> {
        handoffs.iter().map(|h| self.ship_out(h)).collect()
    }

    /// A copy of the packet `handoff` carries, to ship, releasing this worker's.
    fn ship_out(&mut self, handoff: &Handoff) -> Box<[u8]> {
        let token = handoff.token().expect("live packets come from outside");
        let bytes = self.wire_packet(token);
        self.pool.release(untoken(token).1);
        bytes
    }

    /// A copy of the packet `token` names, as one frame of the hosts' I/O.
    fn wire_packet(&mut self, token: u64) -> Box<[u8]> {
        let (_, id, segment) = untoken(token);
        let frame = self.pool.frame(id);
        match self.pool.gso(id) {
            None => frame.into(),
            Some(g) => {
                let (head, payload) = g.build(frame, segment..segment + 1, &mut self.head);
                [&self.head[..head], &frame[payload]].concat().into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_carry_the_home_the_buffer_and_the_segment() {
        for (home, id, k) in [(0, 0, 0), (1, 7, 44), (u16::MAX, u32::MAX, u16::MAX)] {
            assert_eq!(untoken(token(home, id, k)), (home, id, k));
        }
        assert_eq!(token(0, 1, 0), token(0, 0, u16::MAX) + 1);
    }

    #[test]
    fn a_shipped_payload_is_rehomed_here_or_refused_when_it_does_not_fit() {
        let mut p = Payloads::new(Pool::new(64, 1, 0, 0), 3);
        assert!(p.take_shipped(dummy_handoff(), &[0; 65]).is_none());
        assert_eq!(p.pool_ref().in_use(), 0, "a refused buffer goes back");
        let h = p.take_shipped(dummy_handoff(), &[7; 20]).unwrap();
        let (home, id, segment) = untoken(h.token().unwrap());
        assert_eq!((home, segment), (3, 0));
        assert_eq!(p.pool_ref().frame(id), &[7; 20]);
        assert!(p.take_shipped(dummy_handoff(), &[1]).is_none(), "pool full");
        p.settle(h.token().unwrap(), false);
        assert_eq!(p.pool_ref().in_use(), 0);
    }

    #[test]
    fn a_refusal_elsewhere_reaches_the_payloads_home_before_its_release() {
        let (mut inboxes, posts) = crate::mailbox::mailboxes(2).unwrap();
        let mut p = Payloads::new(Pool::new(64, 1, 0, 0), 1);
        p.connect(posts);
        let t = token(0, 5, 0);
        p.refer_home(t, 3, Refusal::TimeExceeded, 1);
        p.settle(t, false);
        let home = &mut inboxes[0];
        assert!(matches!(
            home.take(),
            Some(Message::Refused { token, node: 3, why: Refusal::TimeExceeded, ttl: 1 }) if token == t
        ));
        assert!(matches!(home.take(), Some(Message::Release(r)) if r == t));
        assert!(
            inboxes[1].take().is_none(),
            "nothing for the refusing worker"
        );
    }

    /// A hand-off of one packet from outside, as an engine of a two-worker run makes it.
    fn dummy_handoff() -> Handoff {
        crate::calibration::handoff(netloom_engine::Payload::Ship, token(0, 0, 0)).0
    }
}
