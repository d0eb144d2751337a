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
use index::Index;
use netloom_time::Instant;

mod index;

/// At most this many packets go in one overflow drop, as Linux's `drop_batch_size` default.
const DROP_BATCH: usize = 64;

/// No packet, no queue: the end of a chain.
const NONE: u32 = u32::MAX;

/// A queue's `next_listed` when it is on neither list (no queue has this index: it would need
/// 2^32 − 1 queues of 64 bytes).
const UNLISTED: u32 = u32::MAX - 1;

/// A packet waiting in a flow queue: the caller's handle and what the scheduler needs, and the
/// next packet of its queue. Every queue of a pipe keeps its packets in one store (`Store`)
/// rather than a `VecDeque` each: a packet then reuses the slot the last one left, whose line
/// is likely in cache, where each queue's own buffer was one more miss per packet.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    arrival: Instant,
    handle: u32,
    bytes: u32,
    next: u32,
    ecn: Ecn,
}

/// The packets of every queue of a pipe, in slots chained per queue, with a chain of free ones.
#[derive(Debug)]
struct Store {
    slots: Vec<Waiting>,
    free: u32,
}

impl Default for Store {
    fn default() -> Store {
        Store {
            slots: Vec::new(),
            free: NONE,
        }
    }
}

impl Store {
    /// Puts `w` in a slot (the one freed last, if any) and returns it.
    #[inline]
    fn put(&mut self, w: Waiting) -> u32 {
        match self.free {
            NONE => {
                self.slots.push(w);
                self.slots.len() as u32 - 1
            }
            slot => {
                self.free = self.slots[slot as usize].next;
                self.slots[slot as usize] = w;
                slot
            }
        }
    }

    /// Takes the packet out of `slot`, which becomes free.
    #[inline]
    fn take(&mut self, slot: u32) -> Waiting {
        let w = self.slots[slot as usize];
        self.slots[slot as usize].next = self.free;
        self.free = slot;
        w
    }

    fn clear(&mut self) {
        self.slots.clear();
        self.free = NONE;
    }
}

/// One flow queue: what every packet reads and writes first (in its first 32 bytes), then its
/// CoDel state, which the scheduler reads: one cache line. At 80 bytes (a `listed` flag and an
/// `Option` in the CoDel state) every queue straddled two lines, and the scheduler missed the
/// second one when the queues of a topology outgrow the cache.
#[derive(Debug)]
#[repr(C, align(64))]
struct FlowQueue {
    /// The oldest and newest packets (slots of the `Store`), `NONE` when empty.
    head: u32,
    tail: u32,
    /// Which of the `flows` queues this is (the flow number reduced modulo `flows`).
    bucket: u32,
    /// The next queue on the list this one is on (`List`), `NONE` at its end; `UNLISTED` when on
    /// neither (an empty queue may stay listed until the scheduler passes).
    next_listed: u32,
    bytes: u64,
    /// Bytes the queue may still send in this round (DRR's deficit, in bytes; may go negative).
    deficit: i64,
    codel: Codel,
}

/// A list of queues (RFC 8290's new and old lists), chained through `FlowQueue::next_listed`:
/// a queue is on at most one list, so the lists need no buffers of their own.
#[derive(Clone, Copy, Debug)]
struct List {
    head: u32,
    tail: u32,
}

impl Default for List {
    fn default() -> List {
        List {
            head: NONE,
            tail: NONE,
        }
    }
}

impl List {
    fn is_empty(&self) -> bool {
        self.head == NONE
    }

    #[inline]
    fn push_back(&mut self, queues: &mut [FlowQueue], i: u32) {
        queues[i as usize].next_listed = NONE;
        match self.tail {
            NONE => self.head = i,
            tail => queues[tail as usize].next_listed = i,
        }
        self.tail = i;
    }

    #[inline]
    fn pop_front(&mut self, queues: &[FlowQueue]) {
        self.head = queues[self.head as usize].next_listed;
        if self.head == NONE {
            self.tail = NONE;
        }
    }

    /// The queues on the list, front first.
    fn iter<'a>(&self, queues: &'a [FlowQueue]) -> impl Iterator<Item = u32> + 'a {
        std::iter::successors(Some(self.head).filter(|&i| i != NONE), move |&i| {
            Some(queues[i as usize].next_listed).filter(|&n| n != NONE)
        })
    }
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
            head: NONE,
            tail: NONE,
            bucket,
            next_listed: UNLISTED,
            bytes: 0,
            deficit: 0,
            codel: Codel::default(),
        }
    }
}

/// All the flow queues of one pipe and the two DRR lists.
#[derive(Debug, Default)]
pub(crate) struct FqQueues {
    /// The queues made so far, in the order of their first packet.
    queues: Vec<FlowQueue>,
    /// Where each made queue is in `queues`, by bucket.
    index: Index,
    /// The waiting packets of every queue.
    store: Store,
    /// Together they hold every queue with packets.
    new_flows: List,
    old_flows: List,
    packets: u64,
    bytes: u64,
    /// The `flows` the queues were made for.
    flows: u32,
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
            self.reset();
            self.flows = params.flows;
        }
        let bucket = flow % self.flows;
        let i = match self.index.get(bucket) {
            Some(i) => i,
            None => {
                self.queues.push(FlowQueue::new(bucket));
                let i = self.queues.len() as u32 - 1;
                self.index.insert(bucket, i);
                i
            }
        };
        let slot = self.store.put(Waiting {
            arrival,
            handle,
            bytes,
            next: NONE,
            ecn,
        });
        let q = &mut self.queues[i as usize];
        match q.tail {
            NONE => q.head = slot,
            tail => self.store.slots[tail as usize].next = slot,
        }
        q.tail = slot;
        q.bytes += u64::from(bytes);
        self.packets += 1;
        self.bytes += u64::from(bytes);
        if q.next_listed == UNLISTED {
            q.deficit = i64::from(params.quantum);
            self.new_flows.push_back(&mut self.queues, i);
        }
    }

    /// A word of each cache line `push` of a packet of `flow` reads first (the index's slot,
    /// the queue, its newest packet's slot, and the queue at the back of the new-flow list,
    /// which a queue joining that list writes to), for a caller that loads them ahead
    /// (`Pipe::touch`): its value means nothing.
    #[inline]
    pub(crate) fn touch_push(&self, flow: u32) -> u64 {
        let Some(i) = flow.checked_rem(self.flows).and_then(|b| self.index.get(b)) else {
            return 0;
        };
        let q = &self.queues[i as usize];
        let tail = self.store.slots.get(q.tail as usize).map_or(0, |w| w.next);
        q.bytes ^ u64::from(tail) ^ self.touch_queue(self.new_flows.tail)
    }

    /// As `touch_push`, for what `serve` reads first: the queue at the front of the lists and
    /// its oldest packet's slot, and, as a queue whose round is spent (with packets of about a
    /// quantum, every other time) goes to the back of the old list and the next one is served,
    /// that list's last queue and the queue after the front.
    #[inline]
    pub(crate) fn touch_serve(&self) -> u64 {
        let front = match self.new_flows.head {
            NONE => self.old_flows.head,
            i => i,
        };
        let Some(q) = self.queues.get(front as usize) else {
            return 0;
        };
        let head = self
            .store
            .slots
            .get(q.head as usize)
            .map_or(0, |w| w.arrival.0);
        q.bytes ^ head ^ self.touch_queue(self.old_flows.tail) ^ self.touch_queue(q.next_listed)
    }

    /// A word of queue `i`'s line, 0 when `i` is no queue (`NONE`).
    #[inline]
    fn touch_queue(&self, i: u32) -> u64 {
        self.queues.get(i as usize).map_or(0, |q| q.bytes)
    }

    /// Takes the packet at the head of queue `i`, if any.
    #[inline]
    fn pop_packet(&mut self, i: u32) -> Option<Waiting> {
        let q = &mut self.queues[i as usize];
        if q.head == NONE {
            return None;
        }
        let w = self.store.take(q.head);
        q.head = w.next;
        if q.head == NONE {
            q.tail = NONE;
        }
        q.bytes -= u64::from(w.bytes);
        self.packets -= 1;
        self.bytes -= u64::from(w.bytes);
        Some(w)
    }

    /// RFC 8290's overflow, batched as Linux's `fq_codel_drop`: from the head of the queue
    /// holding the most bytes (the highest bucket among equals), drops packets until half its
    /// bytes are gone or `DROP_BATCH` packets, at least one, handing each handle to `dropped`.
    /// Only listed queues can hold packets, so only they are searched.
    pub(crate) fn drop_from_fattest(&mut self, mut dropped: impl FnMut(u32)) {
        let queues = &self.queues;
        let Some(i) = self
            .new_flows
            .iter(queues)
            .chain(self.old_flows.iter(queues))
            .max_by_key(|&i| (queues[i as usize].bytes, queues[i as usize].bucket))
        else {
            return;
        };
        let threshold = self.queues[i as usize].bytes / 2;
        let mut gone = 0;
        for _ in 0..DROP_BATCH {
            let Some(w) = self.pop_packet(i) else {
                break;
            };
            gone += u64::from(w.bytes);
            dropped(w.handle);
            if gone >= threshold {
                break;
            }
        }
    }

    /// Removes every waiting packet (the link went down), handing each handle to `dropped`.
    pub(crate) fn clear(&mut self, mut dropped: impl FnMut(u32)) {
        for q in &self.queues {
            let mut slot = q.head;
            while slot != NONE {
                let w = &self.store.slots[slot as usize];
                dropped(w.handle);
                slot = w.next;
            }
        }
        self.reset();
    }

    /// No queue made, nothing waiting; `flows` stays.
    fn reset(&mut self) {
        self.queues.clear();
        self.index.clear();
        self.store.clear();
        self.new_flows = List::default();
        self.old_flows = List::default();
        self.packets = 0;
        self.bytes = 0;
    }

    /// The next decision of the scheduler at `now`: RFC 8290's dequeue, one packet at a time.
    /// `ecn`: the pipe marks instead of dropping.
    pub(crate) fn serve(&mut self, params: &FqCodelParams, now: Instant, ecn: bool) -> Served {
        loop {
            let (i, from_new) = match (self.new_flows.head, self.old_flows.head) {
                (NONE, NONE) => return Served::Empty,
                (NONE, i) => (i, false),
                (i, _) => (i, true),
            };
            let q = &mut self.queues[i as usize];
            if q.deficit <= 0 {
                // Its round is spent: a new quantum, and to the back of the old list.
                q.deficit += i64::from(params.quantum);
                self.pop_list(from_new);
                self.old_flows.push_back(&mut self.queues, i);
                continue;
            }
            let Some(w) = self.pop_packet(i) else {
                // Empty: a new queue goes to the old list once (so it cannot stay "new" by
                // emptying and refilling), an old one leaves the lists.
                self.queues[i as usize].codel.idle();
                self.pop_list(from_new);
                if from_new && !self.old_flows.is_empty() {
                    self.old_flows.push_back(&mut self.queues, i);
                } else {
                    self.queues[i as usize].next_listed = UNLISTED;
                }
                continue;
            };
            let q = &mut self.queues[i as usize];
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
            true => self.new_flows.pop_front(&self.queues),
            false => self.old_flows.pop_front(&self.queues),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flow queue is one cache line, aligned to one: the scheduler reads its CoDel state
    /// after its head and deficit, and a queue over two lines missed twice (80 bytes before).
    #[test]
    fn a_flow_queue_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<FlowQueue>(), 64);
        assert_eq!(std::mem::align_of::<FlowQueue>(), 64);
    }
}
