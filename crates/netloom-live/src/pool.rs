//! Payload buffers of packets in flight. The engine carries only a token (the buffer's index);
//! the payload stays here from the read until the last copy is written or dropped. Buffers are
//! reference-counted because a pipe may duplicate a packet, and reused so the steady state never
//! allocates.

/// One payload and how many copies of it are still inside the network.
struct Buffer {
    data: Box<[u8]>,
    len: usize,
    refs: u32,
}

pub(crate) struct Pool {
    buffers: Vec<Buffer>,
    free: Vec<u32>,
    buffer_size: usize,
    max_buffers: usize,
}

impl Pool {
    /// Buffers of `buffer_size` bytes (the largest packet a host can send), at most `max_buffers`
    /// of them: the most packets that may be in flight at once.
    pub(crate) fn new(buffer_size: usize, max_buffers: usize) -> Pool {
        Pool {
            buffers: Vec::new(),
            free: Vec::new(),
            buffer_size,
            max_buffers,
        }
    }

    /// A buffer to read into, not yet referenced; `None` when every buffer is in flight.
    pub(crate) fn take(&mut self) -> Option<u32> {
        if let Some(id) = self.free.pop() {
            return Some(id);
        }
        if self.buffers.len() >= self.max_buffers {
            return None;
        }
        self.buffers.push(Buffer {
            data: vec![0; self.buffer_size].into_boxed_slice(),
            len: 0,
            refs: 0,
        });
        Some((self.buffers.len() - 1) as u32)
    }

    /// Returns a buffer from `take` that was not used.
    pub(crate) fn put_back(&mut self, id: u32) {
        debug_assert_eq!(self.buffers[id as usize].refs, 0);
        self.free.push(id);
    }

    pub(crate) fn space(&mut self, id: u32) -> &mut [u8] {
        &mut self.buffers[id as usize].data
    }

    /// Marks `len` bytes of the buffer as a packet with one copy in flight.
    pub(crate) fn fill(&mut self, id: u32, len: usize) {
        let b = &mut self.buffers[id as usize];
        b.len = len;
        b.refs = 1;
    }

    pub(crate) fn packet(&self, id: u32) -> &[u8] {
        let b = &self.buffers[id as usize];
        &b.data[..b.len]
    }

    /// One more copy of the packet is in flight.
    pub(crate) fn hold(&mut self, id: u32) {
        self.buffers[id as usize].refs += 1;
    }

    /// One copy left the network; the buffer is free again after the last.
    pub(crate) fn release(&mut self, id: u32) {
        let b = &mut self.buffers[id as usize];
        debug_assert!(b.refs > 0, "released a buffer with no copy in flight");
        b.refs -= 1;
        if b.refs == 0 {
            self.free.push(id);
        }
    }

    /// Buffers holding packets in flight.
    pub(crate) fn in_use(&self) -> usize {
        self.buffers.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_after_the_last_copy_and_bounded() {
        let mut p = Pool::new(16, 2);
        let a = p.take().unwrap();
        p.space(a)[..3].copy_from_slice(b"abc");
        p.fill(a, 3);
        p.hold(a);
        let b = p.take().unwrap();
        p.fill(b, 0);
        assert_eq!(p.take(), None, "bounded at 2");
        assert_eq!(p.packet(a), b"abc");
        p.release(a);
        assert_eq!(p.in_use(), 2, "one copy of a still in flight");
        p.release(a);
        assert_eq!(p.take(), Some(a));
    }
}
