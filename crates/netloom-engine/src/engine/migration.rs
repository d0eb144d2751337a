//! Moving pipes and hosts between the workers of a running partitioned engine when ownership
//! changes (dynamic repartitioning, ModelNet §5.4), at an instant when every worker has
//! processed everything before it and nothing after: the state moves whole, so no pipe is ever
//! emulated in two places and no packet is lost or reordered.
//!
//! What moves, from the worker that had it to the one that has it now:
//! - a pipe's state (queue, serializer, AQM, loss and jitter generators, counters: a
//!   `PipeState`), swapped with the new owner's replica so that every count stays counted once;
//! - every pending event whose handler changed, with its packet: the exits of packets inside
//!   any pipe whose next pipe (or destination host) changed owner, keeping their exit times and
//!   tickets, and packets waiting to enter a pipe that moved;
//! - a host's flows: the sender (its window, timers, pending wake-up) where the host is the
//!   source, the receiver (its reassembly state, latency histogram) where it is the destination.

use super::flows::{ReceiverPart, SenderPart};
use super::worker::Worker;
use super::{Engine, Event};
use crate::ownership::Ownership;
use crate::packet::Handoff;
use netloom_link::PipeState;
use netloom_topo::PipeId;
use serde::{Deserialize, Serialize, Serializer};
use std::sync::Arc;

/// What one worker hands another when ownership changes. It has a serialized form (serde), for
/// workers in other processes or on other machines, as long as it carries no flows.
#[derive(Default, Serialize, Deserialize)]
pub struct Migration {
    /// Pipes changing hands between the two, each with the sender's copy: the owner's state for
    /// a pipe the receiver now owns, the receiver's former replica for one it gave up.
    pipes: Vec<(PipeId, PipeState)>,
    /// Pending exits and entries the receiver handles now, in firing order.
    packets: Vec<Handoff>,
    /// Senders of flows whose source host the receiver now owns.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "in_process_only",
        skip_deserializing
    )]
    senders: Vec<(u32, SenderPart)>,
    /// Receivers of flows whose destination host the receiver now owns.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "in_process_only",
        skip_deserializing
    )]
    receivers: Vec<(u32, ReceiverPart)>,
}

/// Refuses to serialize a flow's part: synthetic flows (`sim`) keep their senders and
/// receivers in one process, and a live run, the one that moves between processes, has none.
fn in_process_only<S: Serializer, T>(parts: &[T], _: S) -> Result<S::Ok, S::Error> {
    Err(serde::ser::Error::custom(format!(
        "a transfer carrying {} synthetic flows' parts cannot leave its process",
        parts.len()
    )))
}

impl Migration {
    /// Whether there is nothing to hand over.
    pub fn is_empty(&self) -> bool {
        self.pipes.is_empty()
            && self.packets.is_empty()
            && self.senders.is_empty()
            && self.receivers.is_empty()
    }

    /// Pipes and pending packets it carries, for the report.
    pub fn counts(&self) -> (usize, usize) {
        (self.pipes.len(), self.packets.len())
    }

    /// The pending packets it carries, in firing order: a caller that ships payloads sends
    /// each one's bytes along, and the receiver gives each its new token (`Handoff::rehome`)
    /// or takes out one it has no room for.
    pub fn packets_mut(&mut self) -> &mut Vec<Handoff> {
        &mut self.packets
    }
}

impl Engine {
    /// Takes on `next` (the same workers, other owners) after processing everything before
    /// the instant of the change, and returns what each worker must be given (`migrate_in`,
    /// before anyone advances): `out[k]` for worker k, empty for this one.
    ///
    /// Panics on a pipe that holds packets in flow queues (FQ-CoDel) and changes owner: its
    /// queues refer to this engine's packets (`movable` says which topologies can repartition).
    pub fn migrate_out(&mut self, next: Arc<Ownership>) -> Vec<Migration> {
        let w = self.net.worker.as_ref().expect("only a worker migrates");
        let (me, old) = (w.me, w.ownership.clone());
        assert_eq!(
            next.workers(),
            old.workers(),
            "repartitioning keeps the workers"
        );
        let mut out: Vec<Migration> = (0..old.workers()).map(|_| Migration::default()).collect();
        for p in 0..self.net.pipes.len() as PipeId {
            let (was, now) = (old.pipe_owner(p), next.pipe_owner(p));
            // The owner sends its state to the new one, which sends back its replica.
            let to = match (was == me, now == me) {
                (true, false) => now,
                (false, true) if was != now => was,
                _ => continue,
            };
            let pipe = &mut self.net.pipes[p as usize];
            assert!(
                !(pipe.is_deferred() && was == me),
                "pipe {p} holds its packets in flow queues and cannot move"
            );
            out[usize::from(to)].pipes.push((p, pipe.take_state()));
        }
        let ends: Vec<(u32, u32)> = self.flows.ends().collect();
        for (f, (src, dst)) in (0..).zip(ends) {
            if old.host_owner(src) == me && next.host_owner(src) != me {
                let part = self.flows.take_sender(f);
                out[usize::from(next.host_owner(src))]
                    .senders
                    .push((f, part));
            }
            if old.host_owner(dst) == me && next.host_owner(dst) != me {
                let part = self.flows.take_receiver(f);
                out[usize::from(next.host_owner(dst))]
                    .receivers
                    .push((f, part));
            }
        }
        let w = Worker::new(me, next);
        let handler = |engine: &Engine, event: &Event| -> Option<u16> {
            let owner = match *event {
                Event::Exit { pkt, .. } => w.exit_handler(engine.net.packets.get(pkt)),
                Event::Enter { pipe, .. } => w.ownership.pipe_owner(pipe),
                Event::Wake { flow } => w.ownership.host_owner(engine.flows.src_host(flow)),
                Event::Reconfigure { .. } | Event::Dequeue { .. } => me,
            };
            (owner != me).then_some(owner)
        };
        let mut sched = std::mem::take(&mut self.net.sched);
        let leaving = sched.extract(|event| handler(self, event).is_some());
        for (at, event) in leaving {
            let to = usize::from(handler(self, &event).expect("extracted for leaving"));
            match event {
                Event::Exit { pkt, pipe, ticket } => out[to].packets.push(Handoff {
                    at,
                    exit: Some((pipe, ticket)),
                    packet: self.net.packets.remove(pkt),
                }),
                Event::Enter { pkt, .. } => out[to].packets.push(Handoff {
                    at,
                    exit: None,
                    packet: self.net.packets.remove(pkt),
                }),
                // The flow's pending wake-up travels with its sender (`SenderPart::wake`).
                Event::Wake { .. } => {}
                Event::Reconfigure { .. } | Event::Dequeue { .. } => {
                    unreachable!("replicated and owner-bound events stay")
                }
            }
        }
        self.net.sched = sched;
        self.net.worker = Some(w);
        out
    }

    /// The worker that handles `handoff` under the ownership in force now. A real-time run
    /// repartitions without stopping every worker at once, so a hand-off posted under the last
    /// ownership may arrive after the change, for a pipe or host another worker has now: the
    /// driver passes it on there instead of taking it in (`accept`).
    pub fn handler_of(&self, handoff: &Handoff) -> u16 {
        let w = self
            .net
            .worker
            .as_ref()
            .expect("only a worker takes hand-offs");
        match handoff.exit {
            Some(_) => w.exit_handler(&handoff.packet),
            None => w.ownership.pipe_owner(handoff.packet.next),
        }
    }

    /// Takes in what another worker handed over at an ownership change (`migrate_out`).
    pub fn migrate_in(&mut self, m: Migration) {
        for (p, state) in m.pipes {
            self.net.pipes[p as usize].resume(state);
        }
        for handoff in m.packets {
            self.accept(handoff);
        }
        for (f, part) in m.senders {
            if let Some(at) = self.flows.put_sender(f, part) {
                self.net.wake(at, f);
            }
        }
        for (f, part) in m.receivers {
            self.flows.put_receiver(f, part);
        }
    }
}
