//! Owns one worker's side of a live move to another ownership (`Order::Move`): up to the move's
//! instant the worker runs under the old ownership, then hands each other worker what it
//! handles from now on, takes in their transfers, and answers the order once all are in. The
//! driver polls it; the figures it answers with are `moved`'s.

use crate::accuracy::Accuracy;
use crate::io::PacketIo;
use crate::mailbox::Message;
use crate::message::Answer;
use crate::moved::Transfer;
use crate::moved::{MovePhases, Moved, Stamps};
use crate::payload::Payloads;
use crate::ration::Ration;
use netloom_engine::{Engine, Handoff, Ownership};
use netloom_time::{Clock, Instant};
use std::io;
use std::sync::mpsc::Sender;
use std::sync::Arc;

/// A move to another ownership under way on one worker.
pub(crate) struct Move {
    next: Arc<Ownership>,
    /// The instant of the move: the engine processes everything before it under the old
    /// ownership, then hands over.
    pub(crate) at: Instant,
    reply: Sender<Answer>,
    /// Whether this worker has handed over; it then waits for the others' transfers.
    pub(crate) handed: bool,
    /// Transfers still to come.
    expected: usize,
    /// Hand-offs taken during the move that another worker handles: passed on after it.
    pub(crate) held: Vec<Handoff>,
    moved: Moved,
    /// When the order reached this worker.
    ordered: Instant,
    /// The last transfer taken in: its stamps, and when it was installed.
    last: Option<(Stamps, Instant)>,
}

/// The parts of a driver that a move changes, borrowed for one call.
pub(crate) struct Parts<'a, I: PacketIo> {
    pub engine: &'a mut Engine,
    pub payloads: &'a mut Payloads,
    pub accuracy: &'a mut Accuracy,
    pub io: &'a mut I,
    /// Whether the driver reads host h.
    pub reads: &'a mut [bool],
    pub ration: &'a mut Ration,
}

impl Move {
    /// The move to `next` at `at`, ordered at `now`, answered on `reply`.
    pub(crate) fn new(
        next: Arc<Ownership>,
        at: Instant,
        reply: Sender<Answer>,
        now: Instant,
    ) -> Move {
        Move {
            expected: next.workers() - 1,
            next,
            at,
            reply,
            handed: false,
            held: Vec::new(),
            moved: Moved::default(),
            ordered: now,
            last: None,
        }
    }

    /// Whether every transfer is in, this worker's own included.
    pub(crate) fn is_complete(&self) -> bool {
        self.handed && self.expected == 0
    }

    /// At the move's instant, with everything before it processed and every hand-off of the
    /// old ownership posted: takes on the new ownership, and posts each other worker what it
    /// handles from now on (pipes, pending exits, hosts with their buckets), empty or not, so
    /// that each knows when it has everything. Stops reading the hosts that moved; their
    /// packets not read yet wait in their TUN queues for their new reader.
    pub(crate) fn hand_over<I: PacketIo>(
        &mut self,
        p: Parts<I>,
        clock: &impl Clock,
    ) -> io::Result<()> {
        let paused = clock.now().as_nanos();
        let out = p.engine.migrate_out(self.next.clone());
        let mut hosts: Vec<Vec<_>> = vec![Vec::new(); out.len()];
        for h in 0..p.reads.len() as u32 {
            if p.reads[h as usize] && !p.engine.owns_host(h) {
                p.reads[h as usize] = false;
                p.io.read_host(h, false)?;
                hosts[usize::from(self.next.host_owner(h))].push((h, p.ration.bucket(h)));
            }
        }
        let (me, ship) = (p.engine.worker(), p.engine.ships_payloads());
        for ((to, mut migration), hosts) in out.into_iter().enumerate().zip(hosts) {
            if to != me {
                self.moved.packets += migration.counts().1 as u64;
                let payloads = match ship {
                    true => p.payloads.pack(migration.packets_mut()),
                    false => Vec::new(),
                };
                let stamps = Stamps {
                    paused,
                    extracted: clock.now().as_nanos(),
                    ..Stamps::default()
                };
                let transfer = Box::new(Transfer {
                    migration,
                    hosts,
                    payloads,
                    stamps,
                });
                p.payloads.post(to as u16, Message::Transfer(transfer));
            }
        }
        self.handed = true;
        Ok(())
    }

    /// Takes in another worker's transfer, after this worker handed over its own, at `now`.
    /// Shipped packets come into this worker's pool (one that finds no room is lost outside
    /// the model, as a shipped hand-off would be).
    pub(crate) fn take_in<I: PacketIo>(
        &mut self,
        p: Parts<I>,
        transfer: Transfer,
        now: Instant,
    ) -> io::Result<()> {
        self.expected -= 1;
        let Transfer {
            mut migration,
            hosts,
            payloads,
            stamps,
        } = transfer;
        if !payloads.is_empty() {
            let packets = migration.packets_mut();
            let arrived = std::mem::take(packets);
            for (handoff, bytes) in arrived.into_iter().zip(payloads) {
                match p.payloads.take_shipped(handoff, &bytes) {
                    Some(handoff) => packets.push(handoff),
                    None => p.accuracy.record_physical_drop(),
                }
            }
        }
        p.engine.migrate_in(migration);
        for (h, bucket) in hosts {
            p.reads[h as usize] = true;
            p.ration.set_bucket(h, bucket);
            p.io.read_host(h, true)?;
        }
        self.last = Some((stamps, now));
        Ok(())
    }

    /// Every transfer is in, at `now`: answers the order with what changed hands and where the
    /// stall went, and returns the hand-offs held for other workers, to pass on.
    pub(crate) fn finish(self, now: Instant) -> Vec<Handoff> {
        let phases = self.last.map(|(stamps, installed)| {
            MovePhases::of(self.at, self.ordered, &stamps, [installed, now])
        });
        let moved = Moved {
            stall_ns: now.saturating_since(self.at).as_nanos(),
            phases,
            ..self.moved
        };
        let _ = self.reply.send(Answer::Moved(moved));
        self.held
    }
}
