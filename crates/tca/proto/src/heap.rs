//! First-fit allocator over a range of offsets (`tcaMalloc` / `tcaFree`, `cudaMalloc` /
//! `cudaFree`): the heap of a rank's segment on the shm fabric, a node's host memory and each of
//! its GPUs' memory on the simulator. Bookkeeping only: the fabric backs the blocks.

use std::collections::BTreeMap;

/// Free and used blocks of one heap, as offsets.
#[derive(Debug)]
pub struct Heap {
    /// Free blocks: offset -> length, never adjacent (merged on free).
    free: BTreeMap<u64, u64>,
    /// Used blocks: offset -> length.
    used: BTreeMap<u64, u64>,
    /// Every block's offset and length are multiples of it (a power of two).
    align: u64,
}

impl Heap {
    /// A heap of `len` bytes starting at offset `start` (both multiples of `align`, a power of
    /// two) whose blocks are aligned to `align`.
    ///
    /// # Panics
    /// If `align` is not a power of two.
    pub fn new(start: u64, len: u64, align: u64) -> Self {
        assert!(align.is_power_of_two(), "a heap's alignment is a power of two");
        let mut free = BTreeMap::new();
        if len > 0 {
            free.insert(start, len);
        }
        Self { free, used: BTreeMap::new(), align }
    }

    /// Allocates `size` bytes (rounded up to the alignment); `None` when no free block is
    /// large enough or `size` is 0.
    pub fn alloc(&mut self, size: u64) -> Option<u64> {
        if size == 0 {
            return None;
        }
        let size = size.checked_add(self.align - 1)? & !(self.align - 1);
        let (&off, &len) = self.free.iter().find(|(_, &len)| len >= size)?;
        self.free.remove(&off);
        if len > size {
            self.free.insert(off + size, len - size);
        }
        self.used.insert(off, size);
        Some(off)
    }

    /// Frees the block at `off`; `false` when no block starts there.
    pub fn free(&mut self, off: u64) -> bool {
        let Some(block) = self.used.remove(&off) else {
            return false;
        };
        let (mut start, mut len) = (off, block);
        if let Some(next) = self.free.remove(&(off + block)) {
            len += next;
        }
        if let Some((&p, &plen)) = self.free.range(..off).next_back() {
            if p + plen == off {
                self.free.remove(&p);
                start = p;
                len += plen;
            }
        }
        self.free.insert(start, len);
        true
    }

    /// Length of the used block that starts at `off`.
    pub fn block_at(&self, off: u64) -> Option<u64> {
        self.used.get(&off).copied()
    }

    /// The used block that contains `[off, off + len)`, as (block offset, block length).
    pub fn block_of(&self, off: u64, len: u64) -> Option<(u64, u64)> {
        let (&b, &blen) = self.used.range(..=off).next_back()?;
        (off.checked_add(len)? <= b + blen).then_some((b, blen))
    }

    /// Bytes in used blocks.
    pub fn used_bytes(&self) -> u64 {
        self.used.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_free_merge() {
        let mut h = Heap::new(4096, 4096, 64);
        let a = h.alloc(1).unwrap();
        let b = h.alloc(100).unwrap();
        let c = h.alloc(64).unwrap();
        assert_eq!((a, b, c), (4096, 4160, 4288));
        assert_eq!(h.block_of(4160, 128), Some((4160, 128)));
        assert_eq!(h.block_of(4160, 129), None);
        assert_eq!((h.block_at(4160), h.block_at(4224)), (Some(128), None));
        assert!(h.free(b));
        assert!(!h.free(b));
        assert!(h.free(a));
        assert!(h.free(c));
        // Everything merged back into one block.
        assert_eq!(h.alloc(4096), Some(4096));
        assert_eq!(h.alloc(64), None);
        assert_eq!(h.alloc(0), None);
    }

    #[test]
    fn first_fit_reuses_holes() {
        let mut h = Heap::new(0, 1024, 64);
        let a = h.alloc(256).unwrap();
        let _b = h.alloc(256).unwrap();
        h.free(a);
        assert_eq!(h.alloc(128), Some(0));
        assert_eq!(h.alloc(128), Some(128));
        assert_eq!(h.used_bytes(), 512);
    }
}
