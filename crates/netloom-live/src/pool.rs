//! Payload buffers of packets in flight. The engine carries only a token (the buffer's index and
//! a segment number); the frame stays here from the read until the last copy of its last segment
//! is written or dropped. Buffers are reference-counted, one reference per segment copy inside
//! the network (a super-packet has one per segment, and a pipe may duplicate any), and reused so
//! the steady state never allocates. Two sizes: small ones hold a packet of the MTU, large ones a
//! 64 KB super-packet, so that small packets do not pin 64 KB each.

use netloom_packet::segment::Gso;

/// Which kind of buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Size {
    Small = 0,
    Large = 1,
}

/// One frame, what it splits into, and how many segment copies of it are still in the network.
struct Buffer {
    data: Box<[u8]>,
    size: Size,
    len: usize,
    gso: Option<Gso>,
    refs: u32,
}

pub(crate) struct Pool {
    buffers: Vec<Buffer>,
    /// Free buffers, by `Size`.
    free: [Vec<u32>; 2],
    /// Buffers allocated, bytes per buffer and most buffers, by `Size`.
    made: [usize; 2],
    bytes: [usize; 2],
    max: [usize; 2],
}

impl Pool {
    /// At most `max_small` buffers of `small` bytes and `max_large` of `large` bytes (0 when no
    /// frame is larger than `small`), allocated as needed.
    pub(crate) fn new(small: usize, max_small: usize, large: usize, max_large: usize) -> Pool {
        Pool {
            buffers: Vec::new(),
            free: [Vec::new(), Vec::new()],
            made: [0, 0],
            bytes: [small, large],
            max: [max_small, max_large],
        }
    }

    /// Bytes of a buffer of `size`.
    pub(crate) fn bytes(&self, size: Size) -> usize {
        self.bytes[size as usize]
    }

    /// A buffer to read into, not yet referenced; `None` when every one of that size is in
    /// flight.
    pub(crate) fn take(&mut self, size: Size) -> Option<u32> {
        let s = size as usize;
        if let Some(id) = self.free[s].pop() {
            return Some(id);
        }
        if self.made[s] >= self.max[s] {
            return None;
        }
        self.made[s] += 1;
        self.buffers.push(Buffer {
            data: vec![0; self.bytes[s]].into_boxed_slice(),
            size,
            len: 0,
            gso: None,
            refs: 0,
        });
        Some((self.buffers.len() - 1) as u32)
    }

    /// Returns a buffer from `take` that was not used.
    pub(crate) fn put_back(&mut self, id: u32) {
        let b = &self.buffers[id as usize];
        debug_assert_eq!(b.refs, 0);
        self.free[b.size as usize].push(id);
    }

    pub(crate) fn space(&mut self, id: u32) -> &mut [u8] {
        &mut self.buffers[id as usize].data
    }

    /// Marks `len` bytes of the buffer as a frame split as `gso` says (or not at all), with
    /// `refs` segment copies in flight.
    pub(crate) fn fill(&mut self, id: u32, len: usize, gso: Option<Gso>, refs: u32) {
        let b = &mut self.buffers[id as usize];
        b.len = len;
        b.gso = gso;
        b.refs = refs;
    }

    /// Copies the first `len` bytes of buffer `from` into buffer `to`.
    pub(crate) fn copy(&mut self, from: u32, to: u32, len: usize) {
        let data = std::mem::take(&mut self.buffers[from as usize].data);
        self.buffers[to as usize].data[..len].copy_from_slice(&data[..len]);
        self.buffers[from as usize].data = data;
    }

    pub(crate) fn frame(&self, id: u32) -> &[u8] {
        let b = &self.buffers[id as usize];
        &b.data[..b.len]
    }

    pub(crate) fn gso(&self, id: u32) -> Option<Gso> {
        self.buffers[id as usize].gso
    }

    /// One more copy of a segment is in flight.
    pub(crate) fn hold(&mut self, id: u32) {
        self.buffers[id as usize].refs += 1;
    }

    /// One copy of a segment left the network; the buffer is free again after the last.
    pub(crate) fn release(&mut self, id: u32) {
        let b = &mut self.buffers[id as usize];
        debug_assert!(b.refs > 0, "released a buffer with no copy in flight");
        b.refs -= 1;
        if b.refs == 0 {
            self.free[b.size as usize].push(id);
        }
    }

    /// Buffers holding frames in flight.
    pub(crate) fn in_use(&self) -> usize {
        self.buffers.len() - self.free[0].len() - self.free[1].len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_after_the_last_copy_and_bounded() {
        let mut p = Pool::new(16, 2, 0, 0);
        let a = p.take(Size::Small).unwrap();
        p.space(a)[..3].copy_from_slice(b"abc");
        p.fill(a, 3, None, 1);
        p.hold(a);
        let b = p.take(Size::Small).unwrap();
        p.fill(b, 0, None, 1);
        assert_eq!(p.take(Size::Small), None, "bounded at 2");
        assert_eq!(p.take(Size::Large), None, "no large buffers");
        assert_eq!(p.frame(a), b"abc");
        p.release(a);
        assert_eq!(p.in_use(), 2, "one copy of a still in flight");
        p.release(a);
        assert_eq!(p.take(Size::Small), Some(a));
    }

    #[test]
    fn sizes_are_bounded_and_reused_apart() {
        let mut p = Pool::new(16, 1, 64, 1);
        let small = p.take(Size::Small).unwrap();
        let large = p.take(Size::Large).unwrap();
        assert_eq!(p.space(large).len(), 64);
        assert_eq!(p.take(Size::Large), None);
        // A frame of three segments is free after three releases.
        p.fill(large, 64, None, 3);
        p.put_back(small);
        for _ in 0..2 {
            p.release(large);
        }
        assert_eq!(p.take(Size::Large), None);
        p.release(large);
        assert_eq!(p.in_use(), 0);
        assert_eq!(p.take(Size::Small), Some(small));
        assert_eq!(p.take(Size::Large), Some(large));
    }
}
