//! A radix heap: the monotone priority queue for Dijkstra's integer keys, with buckets by the
//! highest bit in which a key differs from the last one popped. Cheaper than a binary heap
//! because an entry moves down at most once per bit and a pop never sifts.

use netloom_topo::NodeId;

/// A distance packed into one unsigned integer: (delay sum) × scale + hops, so integer order
/// is (delay, hops) order.
pub(crate) trait Key: Copy + Ord + std::fmt::Debug + Send + Sync {
    const ZERO: Self;
    const MAX: Self;
    /// Buckets needed: one per bit plus one for keys equal to the last popped.
    const BUCKETS: usize;

    /// The packed cost of crossing one pipe of `delay` (0 under the hop metric) in a graph of
    /// `nodes` nodes.
    fn step(delay: u64, nodes: usize) -> Self;

    /// The sum; the packing is chosen (`fits_u64`, or 128 bits) so that it cannot overflow.
    fn plus(self, step: Self) -> Self;

    /// 0 if equal to `last`, else 1 + the index of the highest bit where they differ.
    fn bucket(self, last: Self) -> usize;
}

impl Key for u64 {
    const ZERO: u64 = 0;
    const MAX: u64 = u64::MAX;
    const BUCKETS: usize = 65;

    /// Hops are below `nodes + 1`, so they never carry into the delay part.
    #[inline]
    fn step(delay: u64, nodes: usize) -> u64 {
        delay * (nodes as u64 + 1) + 1
    }

    #[inline]
    fn plus(self, step: u64) -> u64 {
        self + step
    }

    #[inline]
    fn bucket(self, last: u64) -> usize {
        (64 - (self ^ last).leading_zeros()) as usize
    }
}

impl Key for u128 {
    const ZERO: u128 = 0;
    const MAX: u128 = u128::MAX;
    const BUCKETS: usize = 129;

    /// Hops in the low 32 bits; a path's delay sum (< 2^64 × 2^32) fits in the other 96.
    #[inline]
    fn step(delay: u64, _nodes: usize) -> u128 {
        ((delay as u128) << 32) + 1
    }

    #[inline]
    fn plus(self, step: u128) -> u128 {
        self + step
    }

    #[inline]
    fn bucket(self, last: u128) -> usize {
        (128 - (self ^ last).leading_zeros()) as usize
    }
}

/// Does every (delay sum, hops) of a simple path fit the `u64` packing, given the largest pipe
/// delay? A path has at most `nodes − 1` pipes, a candidate one more.
pub(crate) fn fits_u64(max_delay: u64, nodes: usize) -> bool {
    let n = nodes as u128 + 1;
    (max_delay as u128)
        .checked_mul(n * n)
        .and_then(|k| k.checked_add(n))
        .is_some_and(|k| k <= u64::MAX as u128)
}

/// Min-queue of (key, node) for keys that never go below the last popped one.
pub(crate) struct RadixHeap<K: Key> {
    last: K,
    buckets: Vec<Vec<(K, NodeId)>>,
}

impl<K: Key> RadixHeap<K> {
    pub fn new() -> Self {
        RadixHeap {
            last: K::ZERO,
            buckets: (0..K::BUCKETS).map(|_| Vec::new()).collect(),
        }
    }

    /// Empties the heap, keeping the buckets' memory.
    pub fn clear(&mut self) {
        self.last = K::ZERO;
        self.buckets.iter_mut().for_each(Vec::clear);
    }

    /// Adds `node` at `key`, which must not be below the last popped key.
    #[inline]
    pub fn push(&mut self, key: K, node: NodeId) {
        debug_assert!(key >= self.last, "radix heap keys must be monotone");
        self.buckets[key.bucket(self.last)].push((key, node));
    }

    /// Removes an entry with the smallest key (any of them among equals).
    pub fn pop(&mut self) -> Option<(K, NodeId)> {
        if self.buckets[0].is_empty() {
            let i = self.buckets.iter().position(|b| !b.is_empty())?;
            // Every entry of bucket i shares the bits above its own highest differing bit with
            // `last`; the new minimum splits them over strictly lower buckets.
            let mut moving = std::mem::take(&mut self.buckets[i]);
            self.last = moving
                .iter()
                .map(|e| e.0)
                .min()
                .expect("bucket is not empty");
            for &(key, node) in &moving {
                self.buckets[key.bucket(self.last)].push((key, node));
            }
            moving.clear();
            self.buckets[i] = moving;
        }
        self.buckets[0].pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_key_order_with_interleaved_pushes() {
        let mut heap = RadixHeap::<u64>::new();
        let mut reference = std::collections::BTreeSet::new();
        let mut x = 12345u64;
        let mut last = 0;
        for round in 0..2000u32 {
            // Pseudo-random keys at or above the last popped one, many of them equal.
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let key = last + (x >> 33) % 50;
            heap.push(key, round);
            reference.insert((key, round));
            if round % 3 == 0 {
                let (k, n) = heap.pop().unwrap();
                assert_eq!(k, reference.first().unwrap().0);
                assert!(reference.remove(&(k, n)));
                last = k;
            }
        }
        while let Some((k, n)) = heap.pop() {
            assert_eq!(k, reference.first().unwrap().0);
            assert!(reference.remove(&(k, n)));
        }
        assert!(reference.is_empty());
    }

    #[test]
    fn packings_order_like_delay_then_hops() {
        let nodes = 1000;
        let key64 = |delay: u64, hops: u64| delay * (nodes as u64 + 1) + hops;
        assert!(key64(5, 999) < key64(6, 0));
        assert_eq!(key64(5, 3).plus(u64::step(2, nodes)), key64(7, 4));
        let key128 = |delay: u64, hops: u128| ((delay as u128) << 32) + hops;
        assert_eq!(key128(5, 3).plus(u128::step(2, nodes)), key128(7, 4));
        assert!(fits_u64(10_000_000, 100_000));
        assert!(!fits_u64(u64::MAX / 2, 10));
    }
}
