//! Receive buffers named by id (the pre-mapped skbufs of seed 004 §3.2, passed to the protocol
//! core by id): the slots of every socket's receive ring, and a few spare buffers.
//!
//! A slot of link `i` has id `(i << 16 | slot) + 1`: the node holds the slot itself, the
//! application reads the packet in place, and the slot goes back to the kernel when the node is
//! done with it. Spare buffers (ids from `1 << 31`) take the second copy of a frame that fault
//! injection hands over twice, since one slot cannot be held twice; they are allocated once and
//! recycled through a free list.

use hxb_proto::BufferId;

const SPARE: u32 = 1 << 31;

/// Where the bytes of a buffer id are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Buffer {
    /// Slot `.1` of the ring of link `.0`.
    Slot(usize, u32),
    /// A spare buffer.
    Spare(BufferId),
}

/// The spare buffers and the id scheme.
#[derive(Debug)]
pub(crate) struct Buffers {
    bufs: Vec<Vec<u8>>,
    lens: Vec<usize>,
    free: Vec<u32>,
    drops: u64,
}

impl Buffers {
    /// `spares` spare buffers of `size` bytes, allocated now.
    pub(crate) fn new(spares: u32, size: usize) -> Buffers {
        Buffers {
            bufs: (0..spares).map(|_| vec![0u8; size]).collect(),
            lens: vec![0; spares as usize],
            free: (0..spares).rev().collect(),
            drops: 0,
        }
    }

    /// The id of slot `slot` of link `link`.
    pub(crate) fn slot_id(link: usize, slot: u32) -> BufferId {
        debug_assert!(link < 1 << 15 && slot < 1 << 16);
        BufferId::new(((link as u32) << 16 | slot) + 1).expect("non-zero")
    }

    pub(crate) fn locate(&self, id: BufferId) -> Buffer {
        let v = id.get();
        if v >= SPARE {
            Buffer::Spare(id)
        } else {
            Buffer::Slot(((v - 1) >> 16) as usize, (v - 1) & 0xffff)
        }
    }

    /// Copies `bytes` into a free spare buffer; `None` (counted) when all are held.
    pub(crate) fn store_spare(&mut self, bytes: &[u8]) -> Option<BufferId> {
        let Some(i) = self.free.pop() else {
            self.drops += 1;
            return None;
        };
        let i = i as usize;
        self.bufs[i][..bytes.len()].copy_from_slice(bytes);
        self.lens[i] = bytes.len();
        BufferId::new(SPARE + i as u32)
    }

    /// The bytes of spare buffer `id`.
    pub(crate) fn spare(&self, id: BufferId) -> &[u8] {
        let i = (id.get() - SPARE) as usize;
        &self.bufs[i][..self.lens[i]]
    }

    pub(crate) fn release_spare(&mut self, id: BufferId) {
        let i = id.get() - SPARE;
        debug_assert!(!self.free.contains(&i), "spare buffer {i} released twice");
        self.free.push(i);
    }

    /// Copies that found no spare buffer.
    pub(crate) fn drops(&self) -> u64 {
        self.drops
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_slots_and_spares_apart() {
        let mut b = Buffers::new(1, 8);
        assert_eq!(b.locate(Buffers::slot_id(0, 0)), Buffer::Slot(0, 0));
        assert_eq!(b.locate(Buffers::slot_id(5, 65535)), Buffer::Slot(5, 65535));
        let s = b.store_spare(b"abc").unwrap();
        assert_eq!((b.locate(s), b.spare(s)), (Buffer::Spare(s), &b"abc"[..]));
        assert_eq!(b.store_spare(b"x"), None, "the only spare is held");
        assert_eq!(b.drops(), 1);
        b.release_spare(s);
        let again = b.store_spare(b"xy").unwrap();
        assert_eq!(b.spare(again), b"xy");
    }
}
