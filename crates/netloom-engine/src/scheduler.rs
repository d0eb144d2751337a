//! The event queue: a hierarchical timing wheel. Events fire in total order of
//! `(time to the nanosecond, rank, insertion order)`, so runs are deterministic. The rank is the
//! event's own (see `Rank`): simultaneous events of different kinds or pipes fire in an order that
//! does not depend on which worker scheduled them first, which is what lets a partitioned run
//! reproduce a single worker's exactly.
//!
//! Level 0 has 256 slots of 2^grain ns; each level above has 256 slots, each as wide as the
//! whole level below. The grain is 1024 ns unless `adapt_grain` lets the wheel choose it by the
//! events it fires (see `Scheduler::retune`). An event lives at the lowest level whose aligned
//! window around the wheel's position contains it. Occupancy bitmaps find the next non-empty
//! slot with one `trailing_zeros` per 64 slots. A slot of a higher level is cascaded (its events
//! re-filed lower down) only when the caller's time reaches the slot's start, so a later push
//! never lands behind the wheel.
//! Because windows are aligned, every slot holds its events in insertion order, and a stable sort
//! by (time, rank) of a level-0 slot when it fires gives `(time, rank, insertion order)`.

use netloom_time::Instant;

const BITS: u32 = 8;
const SLOTS: usize = 1 << BITS;
const WORDS: usize = SLOTS / 64;
/// Width of a level-0 slot, as a power of two, unless adapted: 1024 ns. Wide enough that typical
/// delays cascade only once or twice, narrow enough that sorting a fired slot is cheap.
const GRAIN_BITS: u32 = 10;
/// The narrowest and widest grains `retune` chooses: 256 ns (below it the levels would not
/// cover the u64 range) to 65 µs.
const GRAIN_RANGE: std::ops::RangeInclusive<u32> = 8..=16;
/// Level-0 slots fired, or events they held, between looks at how full they were: a few
/// milliseconds of a dense run.
const RETUNE_SLOTS: u32 = 4096;
const RETUNE_EVENTS: u64 = 1 << 16;
/// Events per fired slot below which `retune` doubles the grain, and above which it halves it.
/// Doubling from just below the first stays below the second, so the grain does not swing.
const FEW_EVENTS: u64 = 8;
const MANY_EVENTS: u64 = 24;
/// Most events a drained slot's vector may keep room for.
const RETAIN: usize = 256;
/// Enough levels to cover the whole u64 nanosecond range: 8 + 7 × 8 = 64 bits at the finest
/// grain.
const LEVELS: usize = 7;

/// What orders simultaneous events before insertion order does.
pub trait Rank {
    /// Below 2^`RANK_BITS`.
    fn rank(&self) -> u64;
}

/// Bits of a rank.
pub const RANK_BITS: u32 = 34;
/// Bits of an event's position in a level-0 slot of 2^`grain` ns in the key `sort_slot` sorts by.
fn position_bits(grain: u32) -> u32 {
    64 - grain - RANK_BITS
}

/// Slots of at most this many events are sorted by counting, for each event, the events with a
/// smaller key (`sort_slot`).
const SMALL_SLOT: usize = 32;

/// An event's key in the level-0 slot of 2^`grain` ns that starts at `start`: its offset in the
/// slot above its rank above its position `i`, so that (time, rank, insertion order) is one
/// integer comparison instead of two ranks computed and two pairs compared.
fn slot_key<E: Rank>(at: u64, event: &E, i: usize, start: u64, grain: u32) -> u64 {
    let rank = event.rank();
    debug_assert!(rank < 1 << RANK_BITS && at - start < 1 << grain);
    let position = position_bits(grain);
    (at - start) << (RANK_BITS + position) | rank << position | i as u64
}

/// Sorts the events of the level-0 slot of 2^`grain` ns that starts at `start` by (time, rank,
/// insertion order), with `scratch` (left holding a copy) as room. A small slot, the usual one
/// (8 to 24 events where the grain adapts, in no order), puts each event at the number of keys
/// smaller than its own: n² comparisons without a branch, where an insertion sort's comparisons
/// mispredicted one after another (7 % of inet's time). A larger one has its times replaced
/// meanwhile by the keys and is sorted on them; one too large for the position's bits takes the
/// stable sort on the pairs.
fn sort_slot<E: Rank + Copy>(
    events: &mut [(u64, E)],
    start: u64,
    grain: u32,
    scratch: &mut Vec<(u64, E)>,
) {
    let n = events.len();
    if n <= SMALL_SLOT {
        let mut keys = [0u64; SMALL_SLOT];
        for (i, (at, e)) in events.iter().enumerate() {
            keys[i] = slot_key(*at, e, i, start, grain);
        }
        let keys = &keys[..n];
        scratch.clear();
        scratch.extend_from_slice(events);
        for (&key, &event) in keys.iter().zip(scratch.iter()) {
            let smaller: usize = keys.iter().map(|&k| usize::from(k < key)).sum();
            events[smaller] = event;
        }
        return;
    }
    if n >= 1 << position_bits(grain) {
        events.sort_by_key(|(at, e)| (*at, e.rank()));
        return;
    }
    for (i, (at, e)) in events.iter_mut().enumerate() {
        *at = slot_key(*at, e, i, start, grain);
    }
    events.sort_unstable_by_key(|&(key, _)| key);
    for (at, _) in events.iter_mut() {
        *at = start + (*at >> (RANK_BITS + position_bits(grain)));
    }
}

struct Level<E> {
    /// Bit `i` set when slot `i` holds events.
    occupied: [u64; WORDS],
    slots: Vec<Vec<(u64, E)>>,
}

impl<E> Level<E> {
    fn new() -> Self {
        Level {
            occupied: [0; WORDS],
            slots: (0..SLOTS).map(|_| Vec::new()).collect(),
        }
    }
}

/// A priority queue of timed events for a clock that never goes backwards.
pub struct Scheduler<E> {
    /// The wheel's position: no event is earlier, and every push is at or after it.
    pos: u64,
    levels: Vec<Level<E>>,
    /// Events of the level-0 slot being fired, sorted by (time, rank, insertion order); those
    /// before `fired` have fired. The slot's own vector, moved here rather than copied.
    ready: Vec<(u64, E)>,
    fired: usize,
    /// The end (exclusive) of the level-0 slot in `ready`; pushes before it join `ready`.
    ready_end: u64,
    /// A level-0 slot is 2^grain ns wide.
    grain: u32,
    /// Whether `retune` may change the grain (`adapt_grain`).
    adapts: bool,
    /// Level-0 slots fired, and the events they held, since `retune` last looked.
    slots_fired: u32,
    events_fired: u64,
    /// Events fired since `retune` last filed every event anew.
    fired_since_refile: u64,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Scheduler {
            pos: 0,
            levels: (0..LEVELS).map(|_| Level::new()).collect(),
            ready: Vec::new(),
            fired: 0,
            ready_end: 0,
            grain: GRAIN_BITS,
            adapts: false,
            slots_fired: 0,
            events_fired: 0,
            fired_since_refile: 0,
        }
    }
}

/// The level an event at `at` belongs to when the wheel stands at `pos` (`at ≥ pos`).
fn level_of(pos: u64, at: u64, grain: u32) -> usize {
    let diff = (pos ^ at) >> grain;
    if diff == 0 {
        0
    } else {
        ((63 - diff.leading_zeros()) / BITS) as usize
    }
}

/// Bits of time below the slots of `level`.
fn shift_of(level: usize, grain: u32) -> u32 {
    grain + BITS * level as u32
}

fn slot_of(at: u64, level: usize, grain: u32) -> usize {
    ((at >> shift_of(level, grain)) & (SLOTS as u64 - 1)) as usize
}

impl<E: Rank + Copy> Scheduler<E> {
    /// Lets the wheel choose its slots' width by how many events the slots it fires hold, from
    /// 256 ns to 65 µs: a fired slot is a batch (`warm` loads what its events touch in one pass,
    /// where the cache misses overlap), and a wheel holding few events per slot, such as a
    /// worker's of a partitioned run with half the events, fires batches too small to overlap
    /// much. The order events fire in does not change. A real-time driver leaves this off: a
    /// change of grain files every pending event anew at once, a pause it cannot afford.
    pub fn adapt_grain(&mut self) {
        self.adapts = true;
    }

    /// The width of a level-0 slot, ns.
    #[cfg(test)]
    fn grain_ns(&self) -> u64 {
        1 << self.grain
    }

    /// Schedules `event` at `at`. Times before the last instant handed to `pop_due` are fired
    /// as if due then (the clock never goes backwards).
    // Inlined: it runs once per packet-hop, and the calls of the per-hop path (saving and
    // restoring registers, results through memory) were ~110 of its ~1,000 instructions.
    #[inline(always)]
    pub fn push(&mut self, at: Instant, event: E) {
        let at = at.0.max(self.pos);
        if at < self.ready_end {
            // Inside the slot being fired: keep `ready` sorted, after equal keys already there.
            let key = (at, event.rank());
            let i = self.fired
                + self.ready[self.fired..].partition_point(|(t, e)| (*t, e.rank()) <= key);
            self.ready.insert(i, (at, event));
        } else {
            self.file(at, event);
        }
    }

    // Inlined: it runs once per packet-hop, and the calls of the per-hop path (saving and
    // restoring registers, results through memory) were ~110 of its ~1,000 instructions.
    #[inline(always)]
    fn file(&mut self, at: u64, event: E) {
        let level = level_of(self.pos, at, self.grain);
        let slot = slot_of(at, level, self.grain);
        let l = &mut self.levels[level];
        l.occupied[slot / 64] |= 1 << (slot % 64);
        l.slots[slot].push((at, event));
    }

    /// A time no later than the earliest event: exact when that event is in level 0 (within
    /// 256 slots of the wheel's position), otherwise the start of the higher slot that holds it.
    /// `None` if empty. Advancing to this time and calling `pop_due` may find nothing due yet;
    /// ask again.
    pub fn peek_time(&self) -> Option<Instant> {
        if let Some((at, _)) = self.ready.get(self.fired) {
            return Some(Instant(*at));
        }
        let (level, slot) = self.next_slot()?;
        if level == 0 {
            // A few events, read again when the slot fires: cheaper than the wasted pass of a
            // driver that advanced to the slot's start, and a worker's window starts no earlier
            // than it must.
            return self.levels[0].slots[slot]
                .iter()
                .map(|&(at, _)| Instant(at))
                .min();
        }
        Some(Instant(self.slot_start(level, slot)))
    }

    /// The lowest non-empty level and its first occupied slot.
    fn next_slot(&self) -> Option<(usize, usize)> {
        self.levels.iter().enumerate().find_map(|(i, l)| {
            let (w, bits) = l.occupied.iter().enumerate().find(|(_, b)| **b != 0)?;
            Some((i, w * 64 + bits.trailing_zeros() as usize))
        })
    }

    /// The first instant covered by `slot` of `level` in the wheel's current window.
    fn slot_start(&self, level: usize, slot: usize) -> u64 {
        let shift = shift_of(level + 1, self.grain);
        let window = if shift >= 64 {
            0
        } else {
            self.pos >> shift << shift
        };
        window | ((slot as u64) << shift_of(level, self.grain))
    }

    /// Every `RETUNE_SLOTS` fired slots or `RETUNE_EVENTS` events, doubles the grain if the
    /// slots held fewer than `FEW_EVENTS` events on average or halves it if more than
    /// `MANY_EVENTS`, and files every pending event anew — unless fewer events fired since the
    /// last time than are pending, so that re-filing never costs more than firing did, however
    /// the load swings. Called between slots, when `ready` is spent.
    fn retune(&mut self) {
        let mean = self.events_fired / u64::from(self.slots_fired.max(1));
        (self.slots_fired, self.events_fired) = (0, 0);
        let grain = match mean {
            m if m < FEW_EVENTS => self.grain + 1,
            m if m > MANY_EVENTS => self.grain - 1,
            _ => return,
        };
        if !GRAIN_RANGE.contains(&grain) {
            return;
        }
        let held: usize = self
            .levels
            .iter()
            .flat_map(|l| &l.slots)
            .map(Vec::len)
            .sum();
        if self.fired_since_refile < held as u64 {
            return;
        }
        self.fired_since_refile = 0;
        // Stable by (time, rank): the events of one instant share a slot in insertion order,
        // so they keep it.
        let mut pending = Vec::new();
        for level in &mut self.levels {
            level.occupied = [0; WORDS];
            for slot in &mut level.slots {
                pending.append(slot);
            }
        }
        pending.sort_by_key(|(at, e)| (*at, e.rank()));
        self.grain = grain;
        // The wheel's position aligned to the new slots: still no later than any event.
        self.pos = self.pos >> grain << grain;
        self.ready.clear();
        (self.fired, self.ready_end) = (0, 0);
        for (at, event) in pending {
            self.file(at, event);
        }
    }

    /// Gives a drained slot its vector back so its capacity is reused, unless it grew beyond
    /// `RETAIN`: every slot keeping its peak would hold memory for all events in flight once per
    /// slot (hundreds of MB on large runs), where a fresh vector costs only a few reallocations.
    fn recycle(&mut self, level: usize, slot: usize, events: Vec<(u64, E)>) {
        if events.capacity() <= RETAIN {
            self.levels[level].slots[slot] = events;
        }
    }

    /// Removes the events `take` picks and returns them in firing order, (time, rank,
    /// insertion order); the others stay as they were. Events of one instant always share a
    /// slot (windows are aligned), so sorting what was taken by (time, rank), stably, restores
    /// that order.
    pub fn extract(&mut self, mut take: impl FnMut(&E) -> bool) -> Vec<(Instant, E)> {
        let mut taken = Vec::new();
        // Only the slot's events not fired yet are pending; those before `fired` are dropped.
        let pending = self.ready.split_off(self.fired);
        self.ready.clear();
        self.fired = 0;
        for (at, event) in pending {
            if take(&event) {
                taken.push((at, event));
            } else {
                self.ready.push((at, event));
            }
        }
        for level in &mut self.levels {
            for (slot, events) in level.slots.iter_mut().enumerate() {
                if events.is_empty() {
                    continue;
                }
                let (out, stay): (Vec<_>, Vec<_>) = events.drain(..).partition(|(_, e)| take(e));
                *events = stay;
                if events.is_empty() {
                    level.occupied[slot / 64] &= !(1 << (slot % 64));
                }
                taken.extend(out);
            }
        }
        taken.sort_by_key(|(at, e)| (*at, e.rank()));
        taken.into_iter().map(|(at, e)| (Instant(at), e)).collect()
    }

    /// Removes and returns the earliest event if it is due at or before `now`. `now` must not be
    /// earlier than any `now` given before. Each time a level-0 slot starts to fire, `warm` is
    /// given its events in firing order before the first of them is returned, so that the
    /// caller can load what they will touch in one pass, where the cache misses overlap instead
    /// of stalling one event after another.
    // Inlined: it runs once per event. Only its first lines do (the next event of the slot
    // being fired); the rest, once per slot, is `fire_slot`. Left to the compiler, the whole
    // call stayed out of line in some builds: 24 more instructions per packet-hop.
    #[inline(always)]
    pub fn pop_due(
        &mut self,
        now: Instant,
        mut warm: impl FnMut(&[(u64, E)]),
    ) -> Option<(Instant, E)> {
        loop {
            if let Some(&(at, event)) = self.ready.get(self.fired) {
                if at > now.0 {
                    return None;
                }
                self.fired += 1;
                return Some((Instant(at), event));
            }
            if !self.fire_slot(now, &mut warm) {
                return None;
            }
        }
    }

    /// `pop_due` once the slot being fired is done: fires the next slot that starts by `now`, a
    /// level-0 slot's events into `ready` (sorted and given to `warm`), a higher slot's re-filed
    /// lower down; `false` if none starts by then.
    #[inline(never)]
    fn fire_slot(&mut self, now: Instant, warm: &mut impl FnMut(&[(u64, E)])) -> bool {
        if self.adapts && (self.slots_fired >= RETUNE_SLOTS || self.events_fired >= RETUNE_EVENTS) {
            self.retune();
        }
        let Some((level, slot)) = self.next_slot() else {
            return false;
        };
        let start = self.slot_start(level, slot);
        if start > now.0 {
            return false;
        }
        self.pos = start;
        let l = &mut self.levels[level];
        l.occupied[slot / 64] &= !(1 << (slot % 64));
        let mut events = std::mem::take(&mut l.slots[slot]);
        if level == 0 {
            let mut done = std::mem::take(&mut self.ready);
            sort_slot(&mut events, start, self.grain, &mut done);
            warm(&events);
            self.slots_fired += 1;
            self.events_fired += events.len() as u64;
            self.fired_since_refile += events.len() as u64;
            self.ready = events;
            self.fired = 0;
            self.ready_end = start + (1 << self.grain);
            done.clear();
            self.recycle(0, slot, done);
        } else {
            // Cascade: re-file one level or more down, keeping the slot's order.
            for (at, event) in events.drain(..) {
                self.file(at, event);
            }
            self.recycle(level, slot, events);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::binary_heap::PeekMut;

    /// Test events rank by their value's tens, so ones with equal tens are peers.
    impl Rank for u32 {
        fn rank(&self) -> u64 {
            u64::from(*self / 10)
        }
    }

    fn drain(s: &mut Scheduler<u32>) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        while let Some(t) = s.peek_time() {
            while let Some((at, e)) = s.pop_due(t, |_| ()) {
                out.push((at.0, e));
            }
        }
        out
    }

    /// An event ranked by its first field; the second tells equal ones apart.
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Ranked(u64, u32);

    impl Rank for Ranked {
        fn rank(&self) -> u64 {
            self.0
        }
    }

    /// The packed keys sort a slot as (time, rank, insertion order) does, with the slot's
    /// first and last nanoseconds and the smallest and largest ranks among them.
    #[test]
    fn a_slot_sorts_by_time_rank_and_insertion_order() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        let start = 77 << GRAIN_BITS;
        let mut events: Vec<(u64, Ranked)> = (0..2000u32)
            .map(|i| {
                let at = start + [0, (1 << GRAIN_BITS) - 1, rng.gen_range(0..4)][i as usize % 3];
                let rank = [0, (1 << RANK_BITS) - 1, rng.gen_range(0..3)][rng.gen_range(0..3)];
                (at, Ranked(rank, i))
            })
            .collect();
        let mut expected = events.clone();
        expected.sort_by_key(|(at, e)| (*at, e.rank()));
        sort_slot(&mut events, start, GRAIN_BITS, &mut Vec::new());
        assert_eq!(events, expected);
    }

    /// Small slots, sorted by counting smaller keys, come out as the stable sort by (time,
    /// rank) has them, at every size up to `SMALL_SLOT` and past it, with ties of time and rank.
    #[test]
    fn a_small_slot_sorts_by_time_rank_and_insertion_order() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(4);
        let start = 5 << GRAIN_BITS;
        let mut scratch = Vec::new();
        for n in 0..=SMALL_SLOT + 1 {
            for _ in 0..50 {
                let mut events: Vec<(u64, Ranked)> = (0..n as u32)
                    .map(|i| (start + rng.gen_range(0..3), Ranked(rng.gen_range(0..3), i)))
                    .collect();
                let mut expected = events.clone();
                expected.sort_by_key(|(at, e)| (*at, e.rank()));
                sort_slot(&mut events, start, GRAIN_BITS, &mut scratch);
                assert_eq!(events, expected, "{n} events");
            }
        }
    }

    #[test]
    fn extracted_events_come_out_in_firing_order_and_the_rest_stay() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(9);
        let mut s = Scheduler::default();
        let mut reference = Scheduler::default();
        // Near and far events, some at one instant, the wheel already moved on a little.
        s.push(Instant(5), 1000);
        assert_eq!(s.pop_due(Instant(5), |_| ()), Some((Instant(5), 1000)));
        for i in 0..2000u32 {
            let at = Instant(10 + rng.gen_range(0..50_000_000) / 7 * 7);
            s.push(at, i);
            reference.push(at, i);
        }
        let taken = s.extract(|e| e % 3 == 0);
        let all = drain(&mut reference);
        let expected: Vec<(u64, u32)> = all.iter().copied().filter(|(_, e)| e % 3 == 0).collect();
        let taken: Vec<(u64, u32)> = taken.into_iter().map(|(at, e)| (at.0, e)).collect();
        assert_eq!(taken, expected);
        let rest: Vec<(u64, u32)> = all.into_iter().filter(|(_, e)| e % 3 != 0).collect();
        assert_eq!(drain(&mut s), rest);
    }

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut s = Scheduler::default();
        s.push(Instant(20), 3);
        s.push(Instant(10), 1);
        s.push(Instant(20), 4);
        s.push(Instant(10), 2);
        assert_eq!(s.pop_due(Instant(5), |_| ()), None);
        assert_eq!(drain(&mut s), [(10, 1), (10, 2), (20, 3), (20, 4)]);
        assert_eq!(s.peek_time(), None);
    }

    #[test]
    fn simultaneous_events_fire_by_rank_whatever_the_insertion_order() {
        let mut s = Scheduler::default();
        s.push(Instant(20), 31);
        s.push(Instant(20), 12);
        s.push(Instant(20), 35);
        s.push(Instant(20), 11);
        assert_eq!(drain(&mut s), [(20, 12), (20, 11), (20, 31), (20, 35)]);
        // The same while the slot fires: a push at the current instant goes by rank too.
        s.push(Instant(40), 30);
        assert_eq!(s.pop_due(Instant(40), |_| ()), Some((Instant(40), 30)));
        s.push(Instant(40), 50);
        s.push(Instant(40), 20);
        assert_eq!(drain(&mut s), [(40, 20), (40, 50)]);
    }

    #[test]
    fn peek_is_a_lower_bound_and_nothing_fires_early() {
        let mut s = Scheduler::default();
        s.push(Instant(1_000_000), 1);
        let t = s.peek_time().unwrap();
        assert!(t.0 <= 1_000_000);
        assert_eq!(s.pop_due(Instant(999_999), |_| ()), None);
        assert_eq!(
            s.pop_due(Instant(1_000_000), |_| ()),
            Some((Instant(1_000_000), 1))
        );
    }

    /// Each slot's events reach `warm` once, in firing order, before the first of them fires.
    #[test]
    fn warm_sees_a_slot_before_it_fires() {
        let mut s = Scheduler::default();
        for (at, e) in [
            (5_000, 7),
            (2_100, 31),
            (2_050, 40),
            (2_050, 12),
            (9_000_000, 5),
        ] {
            s.push(Instant(at), e);
        }
        let mut warmed = Vec::new();
        let mut fired = Vec::new();
        while let Some(t) = s.peek_time() {
            while let Some((at, e)) = s.pop_due(t, |events| {
                warmed.push(events.iter().map(|&(_, e)| e).collect::<Vec<_>>());
            }) {
                fired.push((warmed.len(), at.0, e));
            }
        }
        assert_eq!(warmed, [vec![12, 40, 31], vec![7], vec![5]]);
        let first_of_slot: Vec<_> = fired.iter().map(|&(w, _, e)| (w, e)).collect();
        assert_eq!(first_of_slot, [(1, 12), (1, 40), (1, 31), (2, 7), (3, 5)]);
    }

    /// Pushes `round`'s events and pops what is due after `step(round)` ns more, for `rounds`
    /// rounds, checking every pop against a sorted reference: random times up to each of
    /// `scales` ns ahead, pushes interleaved with pops, pushes at the current instant while it
    /// fires, and equal times. Calls `seen` with the grain after each round.
    fn against_a_sorted_reference(
        s: &mut Scheduler<u32>,
        scales: &[u64],
        rounds: u32,
        pushes: impl Fn(u32) -> std::ops::Range<u32>,
        step: impl Fn(u32) -> u64,
        mut seen: impl FnMut(u64),
    ) {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        // (time, rank, seq, id), earliest first.
        let mut reference = std::collections::BinaryHeap::new();
        let mut seq = 0u64;
        let mut now = 0u64;
        let (mut fired, mut expected) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            fired.clear();
            expected.clear();
            for _ in 0..rng.gen_range(pushes(round)) {
                let scale = scales[rng.gen_range(0..scales.len())];
                let at = now + rng.gen_range(0..scale);
                s.push(Instant(at), round);
                reference.push(std::cmp::Reverse((at, round.rank(), seq, round)));
                seq += 1;
            }
            now += rng.gen_range(0..step(round));
            while let Some((at, e)) = s.pop_due(Instant(now), |_| ()) {
                fired.push((at.0, e));
            }
            while let Some(std::cmp::Reverse((t, _, _, e))) = reference
                .peek_mut()
                .filter(|r| r.0 .0 <= now)
                .map(PeekMut::pop)
            {
                expected.push((t, e));
            }
            assert_eq!(fired, expected, "diverged at round {round}");
            seen(s.grain_ns());
        }
    }

    #[test]
    fn matches_a_sorted_reference() {
        let mut s = Scheduler::default();
        against_a_sorted_reference(
            &mut s,
            &[1, 100, 10_000, 1_000_000, 1 << 40],
            20_000,
            |_| 0..4,
            |_| 20_000,
            |grain| {
                assert_eq!(
                    grain,
                    1 << GRAIN_BITS,
                    "only `adapt_grain` changes the grain"
                );
            },
        );
    }

    /// A wheel that adapts fires in the same order while its grain widens through a sparse
    /// phase, narrows through a dense one, and widens again. (No events a lifetime ahead here:
    /// piling up pending, they would hold every re-file back, as they should.)
    #[test]
    fn an_adapting_wheel_matches_a_sorted_reference_as_its_grain_moves() {
        let mut s = Scheduler::default();
        s.adapt_grain();
        let dense = |round: u32| (30_000..45_000).contains(&round);
        let mut grains = Vec::new();
        against_a_sorted_reference(
            &mut s,
            &[1, 100, 10_000, 1_000_000],
            100_000,
            |round| if dense(round) { 20..60 } else { 0..4 },
            |round| if dense(round) { 300 } else { 20_000 },
            |grain| {
                if grains.last() != Some(&grain) {
                    grains.push(grain);
                }
            },
        );
        // Up from 1024 ns, down, and up again, one step at a time.
        assert_eq!(grains[0], 1 << GRAIN_BITS);
        let turns: Vec<bool> = grains.windows(2).map(|w| w[1] > w[0]).collect();
        assert!(
            grains
                .windows(2)
                .all(|w| w[1] == 2 * w[0] || w[0] == 2 * w[1]),
            "{grains:?}"
        );
        let down = turns
            .iter()
            .position(|up| !up)
            .expect("narrowed when dense");
        assert!(down > 0 && turns[down..].contains(&true), "{grains:?}");
    }

    /// A wheel holding many more events than it fires keeps its grain until it has fired as
    /// many as it would re-file.
    #[test]
    fn a_wheel_refiles_no_more_events_than_it_fired_since_it_last_did() {
        let mut s = Scheduler::default();
        s.adapt_grain();
        for i in 0..100_000 {
            s.push(Instant(1 << 40), i);
        }
        // One event every 2 µs: every fired slot holds one, so the grain would widen.
        let mut now = 0;
        let mut fire = |s: &mut Scheduler<u32>, events: u32| {
            for i in 0..events {
                now += 2_000;
                s.push(Instant(now), i);
                while s.pop_due(Instant(now), |_| ()).is_some() {}
            }
        };
        fire(&mut s, 90_000);
        assert_eq!(
            s.grain_ns(),
            1 << GRAIN_BITS,
            "90,000 fired, 100,000 pending"
        );
        fire(&mut s, 20_000);
        assert_eq!(s.grain_ns(), 2 << GRAIN_BITS, "110,000 fired: one re-file");
    }
}
