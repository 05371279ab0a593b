//! Memory handles: a region of CPU or GPU memory on one node, named by its global PCIe address.
//!
//! All nodes of a sub-cluster share one PCIe address map: a window divided among the nodes, and
//! each node's part among its host memory and GPUs (seed 000 §3.4). A [`Handle`] names a region
//! in that window, so any node can use another node's handle as a DMA destination. Ranks exchange
//! handles as raw bytes (an `MPI_Allgather` of `sizeof(tcaHandle)`, SYSTEMS.md §1), so a handle
//! has a fixed 32-byte little-endian wire form, validated on decode:
//!
//! ```text
//! offset  0: magic     [u8; 4]  b"TCAh"
//! offset  4: node      u16      owning node, < 16
//! offset  6: mem       u8       0 = CPU (host memory), 1 = GPU
//! offset  7: reserved  u8       0
//! offset  8: addr      u64      global PCIe address of the first byte
//! offset 16: size      u64      bytes, > 0; addr + size does not overflow
//! offset 24: id        u32      owner-assigned id, > 0: bits 0-11 the handle's slot in the
//!                              owner's table, bits 12-31 the slot's generation (>= 1)
//! offset 28: reserved  u32      0
//! ```
//!
//! The id names a slot of the owner's [`HandleTable`] and how many times that slot was used:
//! a fabric that publishes, per slot, the id of the handle live in it lets any node tell a
//! live handle from a destroyed one with one lookup (the shm fabric checks every write so).

use crate::error::{TcaError, TcaResult};
use crate::wire::{get_bytes, get_u16, get_u32, get_u64, get_u8, put_bytes, put_u16, put_u32, put_u64, put_u8};
use std::collections::BTreeSet;

/// Size of a handle's wire form \[bytes\] (`sizeof(tcaHandle)`).
pub const HANDLE_BYTES: usize = 32;

/// Most nodes in one sub-cluster (seed 000 §2.2: 8 to 16 nodes by PCIe cable length; SYSTEMS.md
/// §1 constraint "at most 16 nodes").
pub const MAX_NODES: u16 = 16;

/// Most live handles one node registers at a time (tca's limit; the seeds state none).
pub const MAX_HANDLES: usize = 1 << SLOT_BITS;

/// Low bits of a handle id that name its slot in the owner's table.
pub const SLOT_BITS: u32 = 12;

/// Largest generation of a slot; a slot that reached it is not used again.
const MAX_GENERATION: u32 = u32::MAX >> SLOT_BITS;

/// The magic bytes at offset 0 of a handle's wire form.
pub const HANDLE_MAGIC: [u8; 4] = *b"TCAh";

const L: usize = HANDLE_BYTES;
const OFF_MAGIC: usize = 0;
const OFF_NODE: usize = 4;
const OFF_MEM: usize = 6;
const OFF_RESERVED8: usize = 7;
const OFF_ADDR: usize = 8;
const OFF_SIZE: usize = 16;
const OFF_ID: usize = 24;
const OFF_RESERVED32: usize = 28;

/// Where a handle's memory lives (`tcaMemoryCPU` / `tcaMemoryGPU`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryType {
    /// Host memory behind the CPU's root complex.
    Cpu,
    /// GPU memory pinned into PCIe space by GPUDirect RDMA (seed 000 §3.2, §4.1.2).
    Gpu,
}

impl MemoryType {
    /// The memory types by the lower-case name tca's command line and Python use.
    pub const NAMES: [(&'static str, MemoryType); 2] = [("cpu", MemoryType::Cpu), ("gpu", MemoryType::Gpu)];

    /// The memory type called `name` ("cpu" or "gpu").
    pub fn from_name(name: &str) -> Option<MemoryType> {
        Self::NAMES.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    }

    /// The wire value (offset 6).
    #[inline]
    pub fn to_byte(self) -> u8 {
        match self {
            MemoryType::Cpu => 0,
            MemoryType::Gpu => 1,
        }
    }

    /// The memory type of a wire value.
    ///
    /// # Errors
    /// [`TcaError::InvalidHandle`] for values other than 0 and 1.
    #[inline]
    pub fn from_byte(b: u8) -> TcaResult<Self> {
        match b {
            0 => Ok(MemoryType::Cpu),
            1 => Ok(MemoryType::Gpu),
            _ => Err(TcaError::InvalidHandle),
        }
    }
}

/// A registered memory region on one node (`tcaHandle`). Plain data: copy it, send its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handle {
    /// The owning node.
    pub node: u16,
    /// Global PCIe address of the first byte, in the sub-cluster's window (seed 000 §3.4).
    pub addr: u64,
    /// Length of the region \[bytes\].
    pub size: u64,
    /// CPU or GPU memory.
    pub mem: MemoryType,
    /// Id assigned by the owner's [`HandleTable`]; tells a live handle from a destroyed one.
    pub id: u32,
}

impl Handle {
    /// Checks what every handle must satisfy, wherever it came from.
    ///
    /// # Errors
    /// [`TcaError::TooManyNodes`] for a node id of 16 or more; [`TcaError::InvalidHandle`] for
    /// a zero size, a zero id or a region that wraps past the end of the address space.
    #[inline]
    pub fn validate(&self) -> TcaResult<()> {
        if self.node >= MAX_NODES {
            return Err(TcaError::TooManyNodes);
        }
        if self.size == 0 || self.id == 0 || self.addr.checked_add(self.size).is_none() {
            return Err(TcaError::InvalidHandle);
        }
        Ok(())
    }

    /// The 32-byte wire form (layout in the module doc).
    pub fn to_bytes(&self) -> [u8; HANDLE_BYTES] {
        let mut b = [0u8; HANDLE_BYTES];
        put_bytes::<OFF_MAGIC, 4, L>(&mut b, &HANDLE_MAGIC);
        put_u16::<OFF_NODE, L>(&mut b, self.node);
        put_u8::<OFF_MEM, L>(&mut b, self.mem.to_byte());
        put_u64::<OFF_ADDR, L>(&mut b, self.addr);
        put_u64::<OFF_SIZE, L>(&mut b, self.size);
        put_u32::<OFF_ID, L>(&mut b, self.id);
        b
    }

    /// Decodes and validates the wire form.
    ///
    /// # Errors
    /// [`TcaError::InvalidHandle`] for a wrong length, wrong magic, unknown memory type or
    /// non-zero reserved bytes, and whatever [`Handle::validate`] rejects.
    #[inline]
    pub fn from_bytes(bytes: &[u8]) -> TcaResult<Self> {
        let b: &[u8; HANDLE_BYTES] = bytes.try_into().map_err(|_| TcaError::InvalidHandle)?;
        if get_bytes::<OFF_MAGIC, 4, L>(b) != HANDLE_MAGIC {
            return Err(TcaError::InvalidHandle);
        }
        Handle::from_fields(b)
    }

    /// Decodes and validates every field after the magic, which the caller checked (a PIO
    /// window embeds a handle under another magic, [`crate::fabric::PioRegion::from_bytes`]).
    #[inline]
    pub(crate) fn from_fields(b: &[u8; HANDLE_BYTES]) -> TcaResult<Self> {
        if get_u8::<OFF_RESERVED8, L>(b) != 0 || get_u32::<OFF_RESERVED32, L>(b) != 0 {
            return Err(TcaError::InvalidHandle);
        }
        let h = Handle {
            node: get_u16::<OFF_NODE, L>(b),
            addr: get_u64::<OFF_ADDR, L>(b),
            size: get_u64::<OFF_SIZE, L>(b),
            mem: MemoryType::from_byte(get_u8::<OFF_MEM, L>(b))?,
            id: get_u32::<OFF_ID, L>(b),
        };
        h.validate()?;
        Ok(h)
    }

    /// The handle's slot in its owner's [`HandleTable`] (`< MAX_HANDLES`).
    #[inline]
    pub fn slot(&self) -> usize {
        (self.id & (MAX_HANDLES as u32 - 1)) as usize
    }

    /// Whether `len` bytes at `offset` lie inside the region.
    #[inline]
    pub fn contains(&self, offset: u64, len: u64) -> bool {
        offset.checked_add(len).is_some_and(|end| end <= self.size)
    }

    /// The checks of a wait for `len` bytes at `offset` of this handle to hold a value
    /// (`tcaWaitPIO`), which compares aligned 32-bit words, in the order every fabric and the
    /// header's inline wait make them.
    ///
    /// # Errors
    /// [`TcaError::ZeroSize`]; [`TcaError::SizeNotMultipleOf4`]; [`TcaError::OutOfBounds`];
    /// [`TcaError::AlignmentMismatch`] for an address (the handle's plus `offset`) not a
    /// multiple of 4.
    pub fn check_word_wait(&self, offset: u64, len: u64) -> TcaResult<()> {
        if len == 0 {
            return Err(TcaError::ZeroSize);
        }
        if !len.is_multiple_of(4) {
            return Err(TcaError::SizeNotMultipleOf4);
        }
        if !self.contains(offset, len) {
            return Err(TcaError::OutOfBounds);
        }
        if !self.addr.wrapping_add(offset).is_multiple_of(4) {
            return Err(TcaError::AlignmentMismatch);
        }
        Ok(())
    }
}

/// The handles one node has created and not yet destroyed (`tcaCreateHandle` /
/// `tcaDestroyHandle`), in at most [`MAX_HANDLES`] slots. A new handle takes the lowest
/// released slot (or a new one) and that slot's next generation; its id is
/// `generation << SLOT_BITS | slot`. Ids are never reused (a slot whose generation is exhausted
/// is retired), so a destroyed handle stays invalid even when its memory is registered again.
#[derive(Debug, Clone)]
pub struct HandleTable {
    node: u16,
    /// The live handle of each slot, to compare whole handles: a copy with a forged size is
    /// not live.
    slots: Vec<Option<Handle>>,
    /// Last generation used by each slot (0: never used).
    generations: Vec<u32>,
    /// Released slots that have generations left (slots past `slots.len()` are unused).
    free: BTreeSet<u16>,
    live: usize,
}

impl HandleTable {
    /// An empty table for `node`.
    pub fn new(node: u16) -> Self {
        Self { node, slots: Vec::new(), generations: Vec::new(), free: BTreeSet::new(), live: 0 }
    }

    /// Registers `size` bytes at global address `addr` of this node.
    ///
    /// # Errors
    /// [`TcaError::OutOfMemory`] when no slot is free (all [`MAX_HANDLES`] live, or retired),
    /// and what [`Handle::validate`] rejects.
    pub fn create(&mut self, addr: u64, size: u64, mem: MemoryType) -> TcaResult<Handle> {
        let slot = match self.free.first() {
            Some(&s) => s as usize,
            None if self.slots.len() < MAX_HANDLES => self.slots.len(),
            None => return Err(TcaError::OutOfMemory),
        };
        let generation = self.generations.get(slot).map_or(1, |g| g + 1);
        let h = Handle { node: self.node, addr, size, mem, id: generation << SLOT_BITS | slot as u32 };
        h.validate()?;
        if slot == self.slots.len() {
            self.slots.push(None);
            self.generations.push(0);
        }
        self.free.remove(&(slot as u16));
        self.generations[slot] = generation;
        self.slots[slot] = Some(h);
        self.live += 1;
        Ok(h)
    }

    /// Unregisters `h`.
    ///
    /// # Errors
    /// [`TcaError::InvalidHandle`] when `h` is not a live handle of this node.
    pub fn destroy(&mut self, h: &Handle) -> TcaResult<()> {
        if !self.is_live(h) {
            return Err(TcaError::InvalidHandle);
        }
        let slot = h.slot();
        self.slots[slot] = None;
        self.live -= 1;
        if self.generations[slot] < MAX_GENERATION {
            self.free.insert(slot as u16);
        }
        Ok(())
    }

    /// Unregisters every live handle whose region starts in `[start, end)` (a buffer being
    /// freed); returns how many.
    pub fn destroy_in(&mut self, start: u64, end: u64) -> usize {
        let inside: Vec<Handle> =
            self.slots.iter().flatten().filter(|h| h.addr >= start && h.addr < end).copied().collect();
        for h in &inside {
            let _ = self.destroy(h);
        }
        inside.len()
    }

    /// Whether `h` is, field for field, a live handle of this node.
    pub fn is_live(&self, h: &Handle) -> bool {
        h.node == self.node && self.slots.get(h.slot()).is_some_and(|s| *s == Some(*h))
    }

    /// Number of live handles.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no handle is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn wire_form_is_byte_exact() {
        let h = Handle { node: 3, addr: 0x0000_0080_1234_5670, size: 0x1000, mem: MemoryType::Gpu, id: 0x0102_0304 };
        #[rustfmt::skip]
        let expected: [u8; 32] = [
            b'T', b'C', b'A', b'h',
            3, 0,
            1,
            0,
            0x70, 0x56, 0x34, 0x12, 0x80, 0, 0, 0,
            0x00, 0x10, 0, 0, 0, 0, 0, 0,
            0x04, 0x03, 0x02, 0x01,
            0, 0, 0, 0,
        ];
        assert_eq!(h.to_bytes(), expected);
        assert_eq!(Handle::from_bytes(&expected), Ok(h));
    }

    #[test]
    fn a_word_wait_is_checked_in_one_order() {
        let h = Handle { node: 1, addr: 4096, size: 64, mem: MemoryType::Cpu, id: 9 };
        assert_eq!(h.check_word_wait(60, 4), Ok(()));
        assert_eq!(h.check_word_wait(2, 0), Err(TcaError::ZeroSize));
        assert_eq!(h.check_word_wait(2, 6), Err(TcaError::SizeNotMultipleOf4));
        assert_eq!(h.check_word_wait(62, 4), Err(TcaError::OutOfBounds));
        assert_eq!(h.check_word_wait(u64::MAX - 3, 4), Err(TcaError::OutOfBounds));
        assert_eq!(h.check_word_wait(2, 4), Err(TcaError::AlignmentMismatch));
        // A handle registered at an odd address: the word's address counts, not the offset.
        let odd = Handle { addr: 4099, ..h };
        assert_eq!(odd.check_word_wait(0, 4), Err(TcaError::AlignmentMismatch));
        assert_eq!(odd.check_word_wait(1, 4), Ok(()));
    }

    #[test]
    fn bad_bytes_are_rejected() {
        let h = Handle { node: 1, addr: 4096, size: 64, mem: MemoryType::Cpu, id: 9 };
        let good = h.to_bytes();
        assert_eq!(Handle::from_bytes(&good[..31]), Err(TcaError::InvalidHandle));
        let mut b = good;
        b[0] = b'X';
        assert_eq!(Handle::from_bytes(&b), Err(TcaError::InvalidHandle));
        let mut b = good;
        b[OFF_MEM] = 2;
        assert_eq!(Handle::from_bytes(&b), Err(TcaError::InvalidHandle));
        let mut b = good;
        b[OFF_RESERVED8] = 1;
        assert_eq!(Handle::from_bytes(&b), Err(TcaError::InvalidHandle));
        let mut b = good;
        b[31] = 1;
        assert_eq!(Handle::from_bytes(&b), Err(TcaError::InvalidHandle));
        let mut b = good;
        b[OFF_NODE] = 16;
        assert_eq!(Handle::from_bytes(&b), Err(TcaError::TooManyNodes));
        let mut b = good;
        b[OFF_SIZE..OFF_SIZE + 8].copy_from_slice(&0u64.to_le_bytes());
        assert_eq!(Handle::from_bytes(&b), Err(TcaError::InvalidHandle));
        let mut b = good;
        b[OFF_ID..OFF_ID + 4].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(Handle::from_bytes(&b), Err(TcaError::InvalidHandle));
        let mut b = good;
        b[OFF_ADDR..OFF_ADDR + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(Handle::from_bytes(&b), Err(TcaError::InvalidHandle));
    }

    #[test]
    fn table_tells_live_from_destroyed() {
        let mut t = HandleTable::new(2);
        let a = t.create(0x1000, 256, MemoryType::Cpu).unwrap();
        let b = t.create(0x2000, 256, MemoryType::Gpu).unwrap();
        assert_ne!(a.id, b.id);
        assert!(t.is_live(&a) && t.is_live(&b));
        t.destroy(&a).unwrap();
        assert!(!t.is_live(&a));
        assert_eq!(t.destroy(&a), Err(TcaError::InvalidHandle));
        // Same memory registered again gets a new id; the old handle stays dead.
        let c = t.create(0x1000, 256, MemoryType::Cpu).unwrap();
        assert!(!t.is_live(&a) && t.is_live(&c));
        let foreign = Handle { node: 1, ..c };
        assert_eq!(t.destroy(&foreign), Err(TcaError::InvalidHandle));
        let forged = Handle { size: 1 << 20, ..c };
        assert!(!t.is_live(&forged));
        assert_eq!(t.destroy(&forged), Err(TcaError::InvalidHandle));
        assert_eq!(t.create(0, 0, MemoryType::Cpu), Err(TcaError::InvalidHandle));
        assert_eq!(HandleTable::new(16).create(0, 4, MemoryType::Cpu), Err(TcaError::TooManyNodes));
    }

    #[test]
    fn freeing_a_buffer_destroys_the_handles_inside_it() {
        let mut t = HandleTable::new(0);
        let before = t.create(0x0f00, 0x100, MemoryType::Cpu).unwrap();
        let whole = t.create(0x1000, 0x1000, MemoryType::Cpu).unwrap();
        let inner = t.create(0x1800, 0x10, MemoryType::Cpu).unwrap();
        let after = t.create(0x2000, 0x100, MemoryType::Cpu).unwrap();
        assert_eq!(t.destroy_in(0x1000, 0x2000), 2);
        assert!(!t.is_live(&whole) && !t.is_live(&inner));
        assert!(t.is_live(&before) && t.is_live(&after));
        assert_eq!(t.destroy_in(0x1000, 0x2000), 0);
    }

    #[test]
    fn a_slot_is_reused_with_a_new_generation() {
        let mut t = HandleTable::new(1);
        let a = t.create(0x1000, 64, MemoryType::Cpu).unwrap();
        let b = t.create(0x2000, 64, MemoryType::Cpu).unwrap();
        assert_eq!((a.slot(), b.slot()), (0, 1));
        t.destroy(&a).unwrap();
        let c = t.create(0x1000, 64, MemoryType::Cpu).unwrap();
        assert_eq!(c.slot(), 0);
        assert_ne!(c.id, a.id);
        assert!(!t.is_live(&a) && t.is_live(&c) && t.is_live(&b));
        assert_eq!(t.len(), 2);
        // A retired slot (generation exhausted) is never handed out again.
        let more: Vec<_> = (2..6).map(|i| t.create(i << 12, 64, MemoryType::Cpu).unwrap()).collect();
        assert_eq!(more.last().unwrap().slot(), 5);
        t.destroy(&more[3]).unwrap();
        t.generations[5] = MAX_GENERATION - 1;
        let d = t.create(0x3000, 64, MemoryType::Cpu).unwrap();
        assert_eq!((d.slot(), d.id >> SLOT_BITS), (5, MAX_GENERATION));
        t.destroy(&d).unwrap();
        assert_eq!(t.create(0x3000, 64, MemoryType::Cpu).unwrap().slot(), 6);
    }

    #[test]
    fn table_is_bounded() {
        let mut t = HandleTable::new(0);
        for i in 0..MAX_HANDLES as u64 {
            t.create(i * 64, 64, MemoryType::Cpu).unwrap();
        }
        assert_eq!(t.create(0, 64, MemoryType::Cpu), Err(TcaError::OutOfMemory));
        assert_eq!(t.len(), MAX_HANDLES);
    }

    proptest! {
        #[test]
        fn any_valid_handle_round_trips(
            node in 0u16..MAX_NODES, addr in 0u64..(1 << 48), size in 1u64..(1 << 40),
            gpu: bool, id in 1u32..,
        ) {
            let mem = if gpu { MemoryType::Gpu } else { MemoryType::Cpu };
            let h = Handle { node, addr, size, mem, id };
            prop_assert_eq!(Handle::from_bytes(&h.to_bytes()), Ok(h));
        }

        /// Garbage of any length never panics; what decodes is valid and re-encodes to the
        /// same bytes.
        #[test]
        fn garbage_bytes_decode_to_valid_handles_or_errors(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(h) = Handle::from_bytes(&bytes) {
                prop_assert!(h.validate().is_ok());
                prop_assert_eq!(&h.to_bytes()[..], &bytes[..]);
            }
        }

        /// A valid wire form with one byte changed decodes to an error or to another valid
        /// handle, never to a panic.
        #[test]
        fn mutated_handles_stay_valid_or_fail(
            id in 1u32.., pos in 0usize..HANDLE_BYTES, byte: u8,
        ) {
            let h = Handle { node: 2, addr: 1 << 40, size: 4096, mem: MemoryType::Cpu, id };
            let mut b = h.to_bytes();
            b[pos] = byte;
            if let Ok(g) = Handle::from_bytes(&b) {
                prop_assert!(g.validate().is_ok());
                prop_assert_eq!(g.to_bytes(), b);
            }
        }
    }
}
