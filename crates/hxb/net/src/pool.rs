//! Receive buffers named by id (the pre-mapped skbufs of seed 004 §3.2, passed to the protocol
//! core by id): a fixed set allocated once, recycled through a free list, never returned to the
//! allocator while the endpoint lives.

use hxb_proto::BufferId;

/// `count` buffers of `size` bytes, ids 1..=count (0 marks an empty receive-array entry).
#[derive(Debug)]
pub struct Pool {
    bufs: Vec<Vec<u8>>,
    lens: Vec<usize>,
    free: Vec<u32>,
}

impl Pool {
    /// Allocates every buffer now.
    pub fn new(count: u32, size: usize) -> Pool {
        Pool {
            bufs: (0..count).map(|_| vec![0u8; size]).collect(),
            lens: vec![0; count as usize],
            free: (1..=count).rev().collect(),
        }
    }

    /// Number of buffers.
    pub fn capacity(&self) -> usize {
        self.bufs.len()
    }

    /// Buffers not held by anyone.
    pub fn available(&self) -> usize {
        self.free.len()
    }

    /// Takes a free buffer and fills it with `bytes`; `None` when all are held or `bytes` does
    /// not fit.
    pub fn store(&mut self, bytes: &[u8]) -> Option<BufferId> {
        let i = self.free.last().map(|&id| id as usize - 1)?;
        if bytes.len() > self.bufs[i].len() {
            return None;
        }
        let id = self.free.pop().expect("checked above");
        self.bufs[i][..bytes.len()].copy_from_slice(bytes);
        self.lens[i] = bytes.len();
        BufferId::new(id)
    }

    /// The bytes held in buffer `id`.
    pub fn get(&self, id: BufferId) -> &[u8] {
        let i = id.get() as usize - 1;
        &self.bufs[i][..self.lens[i]]
    }

    /// Gives buffer `id` back.
    pub fn release(&mut self, id: BufferId) {
        debug_assert!(!self.free.contains(&id.get()), "buffer {id} released twice");
        self.free.push(id.get());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_recycled_by_id() {
        let mut p = Pool::new(2, 8);
        let a = p.store(b"abc").unwrap();
        let b = p.store(b"defgh").unwrap();
        assert_ne!(a, b);
        assert_eq!(p.store(b"x"), None, "all held");
        assert_eq!((p.get(a), p.get(b)), (&b"abc"[..], &b"defgh"[..]));
        p.release(a);
        assert_eq!(p.available(), 1);
        assert_eq!(p.store(b"123456789"), None, "too long for a buffer");
        let c = p.store(b"z").unwrap();
        assert_eq!((c, p.get(c)), (a, &b"z"[..]));
        assert_eq!(p.capacity(), 2);
    }
}
