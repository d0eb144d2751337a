//! FQ-CoDel's queues (RFC 8290): packets held per flow queue, served by deficit round robin
//! from the new-flow list before the old one, each queue under its own CoDel.
//!
//! A queue is made when its first packet comes, not for every one of `flows` up front: a link
//! carries a few flows, and a topology has thousands of links. Once made it stays, because its
//! CoDel state outlives its packets (the RFC's queues all exist from the start; an unmade one
//! is one whose state is still the initial one).

use crate::codel::{Codel, Verdict};
use crate::config::{FqCodelParams, DEFAULT_PACKET_BYTES};
use crate::pipe::Ecn;
use netloom_time::Instant;
use std::collections::{HashMap, VecDeque};

/// At most this many packets go in one overflow drop, as Linux's `drop_batch_size` default.
const DROP_BATCH: usize = 64;

/// A packet waiting in a flow queue: the caller's handle and what the scheduler needs.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    handle: u32,
    bytes: u32,
    arrival: Instant,
    ecn: Ecn,
}

/// One flow queue.
#[derive(Debug)]
struct FlowQueue {
    /// Which of the `flows` queues this is (the flow number reduced modulo `flows`).
    bucket: u32,
    packets: VecDeque<Waiting>,
    bytes: u64,
    /// Bytes the queue may still send in this round (DRR's deficit, in bytes; may go negative).
    deficit: i64,
    codel: Codel,
    /// On the new or the old list (an empty queue may stay listed until the scheduler passes).
    listed: bool,
}

/// What the head of the queues gives when the serializer asks for a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Served {
    /// Send this packet (`marked`: CoDel marked it CE).
    Send {
        handle: u32,
        bytes: u32,
        marked: bool,
    },
    /// CoDel dropped this packet at the head; ask again at the same instant.
    Dropped(u32),
    /// Nothing is waiting.
    Empty,
}

impl FlowQueue {
    fn new(bucket: u32) -> FlowQueue {
        FlowQueue {
            bucket,
            packets: VecDeque::new(),
            bytes: 0,
            deficit: 0,
            codel: Codel::default(),
            listed: false,
        }
    }
}

/// All the flow queues of one pipe and the two DRR lists.
#[derive(Debug, Default)]
pub(crate) struct FqQueues {
    /// The queues made so far, in the order of their first packet.
    queues: Vec<FlowQueue>,
    /// Where each made queue is in `queues`, by bucket.
    slots: HashMap<u32, u32>,
    /// The `flows` the queues were made for.
    flows: u32,
    /// Indices in `queues`, as `old_flows`; together they hold every queue with packets.
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    packets: u64,
    bytes: u64,
}

impl FqQueues {
    /// Packets and bytes waiting, over all queues.
    pub(crate) fn len(&self) -> (u64, u64) {
        (self.packets, self.bytes)
    }

    /// How many flow queues are made (those that ever had a packet since the last reset).
    pub(crate) fn made(&self) -> usize {
        self.queues.len()
    }

    /// Adds a packet of flow `flow` (any number: it is reduced to one of `params.flows` queues).
    /// A queue that was idle joins the new-flow list with a full quantum.
    pub(crate) fn push(
        &mut self,
        params: &FqCodelParams,
        flow: u32,
        handle: u32,
        bytes: u32,
        arrival: Instant,
        ecn: Ecn,
    ) {
        if self.flows != params.flows && self.packets == 0 {
            // The first packet, or the number of queues changed: start afresh. (A change while
            // packets wait takes effect once they have drained.)
            self.queues.clear();
            self.slots.clear();
            self.flows = params.flows;
            self.new_flows.clear();
            self.old_flows.clear();
        }
        let bucket = flow % self.flows;
        let queues = &mut self.queues;
        let i = *self.slots.entry(bucket).or_insert_with(|| {
            queues.push(FlowQueue::new(bucket));
            queues.len() as u32 - 1
        });
        let q = &mut self.queues[i as usize];
        q.packets.push_back(Waiting {
            handle,
            bytes,
            arrival,
            ecn,
        });
        q.bytes += u64::from(bytes);
        self.packets += 1;
        self.bytes += u64::from(bytes);
        if !q.listed {
            q.listed = true;
            q.deficit = i64::from(params.quantum);
            self.new_flows.push_back(i);
        }
    }

    /// RFC 8290's overflow, batched as Linux's `fq_codel_drop`: from the head of the queue
    /// holding the most bytes (the highest bucket among equals), drops packets until half its
    /// bytes are gone or `DROP_BATCH` packets, at least one, handing each handle to `dropped`.
    /// Only listed queues can hold packets, so only they are searched.
    pub(crate) fn drop_from_fattest(&mut self, mut dropped: impl FnMut(u32)) {
        let queues = &self.queues;
        let Some(&i) = self
            .new_flows
            .iter()
            .chain(&self.old_flows)
            .max_by_key(|&&i| (queues[i as usize].bytes, queues[i as usize].bucket))
        else {
            return;
        };
        let q = &mut self.queues[i as usize];
        let threshold = q.bytes / 2;
        let mut gone = 0;
        for _ in 0..DROP_BATCH {
            let Some(w) = q.packets.pop_front() else {
                break;
            };
            q.bytes -= u64::from(w.bytes);
            self.packets -= 1;
            self.bytes -= u64::from(w.bytes);
            gone += u64::from(w.bytes);
            dropped(w.handle);
            if gone >= threshold {
                break;
            }
        }
    }

    /// Removes every waiting packet (the link went down), handing each handle to `dropped`.
    pub(crate) fn clear(&mut self, mut dropped: impl FnMut(u32)) {
        for q in &mut self.queues {
            for w in q.packets.drain(..) {
                dropped(w.handle);
            }
        }
        self.queues.clear();
        self.slots.clear();
        self.new_flows.clear();
        self.old_flows.clear();
        self.packets = 0;
        self.bytes = 0;
    }

    /// The next decision of the scheduler at `now`: RFC 8290's dequeue, one packet at a time.
    /// `ecn`: the pipe marks instead of dropping.
    pub(crate) fn serve(&mut self, params: &FqCodelParams, now: Instant, ecn: bool) -> Served {
        loop {
            let (i, from_new) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (i, true),
                (None, Some(&i)) => (i, false),
                (None, None) => return Served::Empty,
            };
            let q = &mut self.queues[i as usize];
            if q.deficit <= 0 {
                // Its round is spent: a new quantum, and to the back of the old list.
                q.deficit += i64::from(params.quantum);
                self.pop_list(from_new);
                self.old_flows.push_back(i);
                continue;
            }
            let Some(w) = q.packets.pop_front() else {
                // Empty: a new queue goes to the old list once (so it cannot stay "new" by
                // emptying and refilling), an old one leaves the lists.
                q.codel.idle();
                self.pop_list(from_new);
                if from_new && !self.old_flows.is_empty() {
                    self.old_flows.push_back(i);
                } else {
                    self.queues[i as usize].listed = false;
                }
                continue;
            };
            q.bytes -= u64::from(w.bytes);
            self.packets -= 1;
            self.bytes -= u64::from(w.bytes);
            let short_queue = q.bytes <= DEFAULT_PACKET_BYTES;
            let sojourn = now.saturating_since(w.arrival);
            let markable = ecn && w.ecn.is_capable();
            match q
                .codel
                .dequeue(&params.codel, now, sojourn, short_queue, markable)
            {
                Verdict::Drop => return Served::Dropped(w.handle),
                verdict => {
                    q.deficit -= i64::from(w.bytes);
                    return Served::Send {
                        handle: w.handle,
                        bytes: w.bytes,
                        marked: verdict == Verdict::Mark,
                    };
                }
            }
        }
    }

    fn pop_list(&mut self, from_new: bool) {
        match from_new {
            true => self.new_flows.pop_front(),
            false => self.old_flows.pop_front(),
        };
    }
}
