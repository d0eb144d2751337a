//! Where each made flow queue is, by bucket: a small open-addressing table of one pipe's queues.
//!
//! FQ-CoDel looks a packet's queue up once per packet, at random among a pipe's queues, and a
//! topology has thousands of pipes: a std `HashMap` cost a SipHash and two cache lines (its
//! control bytes and its bucket) per lookup, this table one line, holding only the queues made
//! (docs/performance.md, "CoDel, FQ-CoDel and ECN").

/// A slot without a queue.
const EMPTY: u32 = u32::MAX;

/// Fewest slots: a pipe's first queues fit without a resize.
const MIN_SLOTS: usize = 8;

/// Bucket → index of its queue, by linear probing, at most half full.
#[derive(Debug, Default)]
pub(super) struct Index {
    /// `(bucket, queue)` pairs; `queue == EMPTY` marks a free slot. A power of two long.
    slots: Vec<(u32, u32)>,
    /// Queues held.
    len: usize,
}

impl Index {
    /// The slot to start probing at for `bucket`: Fibonacci hashing, as buckets are usually
    /// small consecutive numbers (a flow number modulo the queue count).
    #[inline]
    fn home(&self, bucket: u32) -> usize {
        ((u64::from(bucket.wrapping_mul(0x9E37_79B9)) * self.slots.len() as u64) >> 32) as usize
    }

    /// The queue of `bucket`, if made.
    #[inline]
    pub(super) fn get(&self, bucket: u32) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(bucket);
        loop {
            let (b, q) = self.slots[at];
            if q == EMPTY {
                return None;
            }
            if b == bucket {
                return Some(q);
            }
            at = (at + 1) & mask;
        }
    }

    /// Records that `bucket`'s queue is `queue` (the bucket has none yet).
    pub(super) fn insert(&mut self, bucket: u32, queue: u32) {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        self.place(bucket, queue);
        self.len += 1;
    }

    /// Forgets every queue.
    pub(super) fn clear(&mut self) {
        self.slots.clear();
        self.len = 0;
    }

    fn place(&mut self, bucket: u32, queue: u32) {
        let mask = self.slots.len() - 1;
        let mut at = self.home(bucket);
        while self.slots[at].1 != EMPTY {
            at = (at + 1) & mask;
        }
        self.slots[at] = (bucket, queue);
    }

    /// Doubles the slots and places every queue anew.
    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(MIN_SLOTS);
        let old = std::mem::replace(&mut self.slots, vec![(0, EMPTY); size]);
        for (bucket, queue) in old.into_iter().filter(|&(_, q)| q != EMPTY) {
            self.place(bucket, queue);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_queue_inserted_through_growth_and_nothing_else() {
        let mut index = Index::default();
        assert_eq!(index.get(3), None);
        // Buckets that collide on purpose (multiples of a power of two) and consecutive ones.
        let buckets: Vec<u32> = (0..300)
            .map(|i| if i % 2 == 0 { i * 1024 } else { i })
            .collect();
        for (q, &b) in buckets.iter().enumerate() {
            index.insert(b, q as u32);
            for (r, &c) in buckets[..=q].iter().enumerate() {
                assert_eq!(index.get(c), Some(r as u32));
            }
        }
        assert_eq!(index.get(2), None);
        assert_eq!(index.get(1023), None);
        assert_eq!(index.get(u32::MAX - 1), None);
        index.clear();
        assert_eq!(index.get(0), None);
    }
}
