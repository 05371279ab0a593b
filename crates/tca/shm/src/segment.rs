//! One rank's shared segment: its layout, header and notification rings.
//!
//! Every rank owns one POSIX shared-memory object, `/dev/shm/tca-<job>-<rank>`, that all its
//! peers map. Node `n`'s byte at segment offset `o` has the global address `n << NODE_SHIFT | o`
//! (the shm stand-in for the PEACH2 address window divided among the nodes, seed 000 §3.4).
//!
//! ```text
//! offset 0        header (one page): magic, state, pid, sizes, doorbells, bootstrap counters,
//!                  the owner's CPU affinity
//! offset RINGS    MAX_NODES notification rings; ring s holds notifications from node s
//! offset BOOT     BOOT_BYTES bootstrap buffer (allgather of handles without MPI)
//! offset HANDLES  MAX_HANDLES handle slots: the owner's live handles, which writers check
//! offset MSGS     MAX_NODES message rings; ring s holds proxy-read messages from node s
//! offset HEAP     heap: tcaMalloc memory and chaining-mode descriptor tables, to the end
//! ```
//!
//! The rings are in [`crate::ring`].

use crate::ring::{MsgRing, Ring};
use crate::shared_copy::CopyShare;
use crate::sys::CPU_WORDS;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use tca_proto::handle::MAX_HANDLES;
use tca_proto::{Handle, MAX_NODES};

/// Global address bits for the offset inside a node's segment: 1 TiB per node.
pub const NODE_SHIFT: u32 = 40;
/// Header size \[bytes\].
pub const HEADER_BYTES: usize = 4096;
/// Offset of the first notification ring.
pub const RINGS: usize = HEADER_BYTES;
/// Offset of the bootstrap buffer.
pub const BOOT: usize = 256 * 1024;
/// Bootstrap buffer size \[bytes\]: the most one rank contributes to an allgather.
pub const BOOT_BYTES: usize = 64 * 1024;
/// Offset of the handle table.
pub const HANDLES: usize = 320 * 1024;
/// Offset of the first message ring.
pub const MSGS: usize = 512 * 1024;
/// Offset of the heap.
pub const HEAP: usize = 1024 * 1024;
/// Magic value of a ready header ("TCAshm01").
pub const MAGIC: u64 = u64::from_le_bytes(*b"TCAshm01");

/// Segment states, in the order a rank goes through them.
pub mod state {
    /// Created, header not yet valid.
    pub const CREATING: u32 = 0;
    /// Header valid; peers may map the segment.
    pub const READY: u32 = 1;
    /// This rank has mapped every peer's segment.
    pub const MAPPED: u32 = 2;
    /// This rank called finalize; it writes nothing more.
    pub const FINISHED: u32 = 3;
}

/// A word on its own cache line, so that two writers never share a line.
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub struct Line<T>(pub T);

/// The segment header. Every field is atomic: peers read it concurrently.
#[repr(C)]
#[derive(Debug)]
pub struct Header {
    /// [`MAGIC`] once the header is valid.
    pub magic: AtomicU64,
    /// One of [`state`].
    pub state: AtomicU32,
    /// Owning process.
    pub pid: AtomicU32,
    /// Owning node (rank).
    pub node: AtomicU32,
    /// Nodes in the job.
    pub nodes: AtomicU32,
    /// Segment length \[bytes\].
    pub bytes: AtomicU64,
    /// Bumped whenever something a waiter of the owner may be waiting for happened (a
    /// notification pushed, a channel finished); futex word.
    pub app_bell: Line<AtomicU32>,
    /// Threads of the owner sleeping on `app_bell`.
    pub app_waiters: Line<AtomicU32>,
    /// Bumped when the owner's DMA engine thread has work (a channel kicked); futex word.
    pub engine_bell: Line<AtomicU32>,
    /// 1 while the engine thread sleeps on `engine_bell`.
    pub engine_waiters: Line<AtomicU32>,
    /// Bootstrap progress counter (allgather / barrier phases completed by the owner).
    pub boot_seq: Line<AtomicU64>,
    /// Length of the owner's current bootstrap contribution \[bytes\]
    /// ([`BOOT_TOO_LARGE`] for more than [`BOOT_BYTES`]).
    pub boot_len: Line<AtomicU64>,
    /// CPUs the owner may run on ([`crate::sys::affinity`]), written before `state` is
    /// [`state::READY`].
    pub cpus: [AtomicU64; CPU_WORDS],
    /// 1 + the node a spinning waiter of the owner waits for (0: none): that node may offer
    /// it a share of a large write's copy ([`crate::shared_copy`]).
    pub helper: Line<AtomicU32>,
    /// Share `s`: the part of a write from node `s` that the owner's waiter may copy.
    pub shares: [CopyShare; MAX_NODES as usize],
}

/// `boot_len` of a rank that passed more than [`BOOT_BYTES`] to a collective: it takes part
/// without data, so that every rank fails the same round.
pub const BOOT_TOO_LARGE: u64 = u64::MAX;

/// One entry of the handle table: the handle live in a slot of the owner's
/// [`tca_proto::HandleTable`], published by the owner and read by every writer.
#[repr(C)]
#[derive(Debug)]
pub struct HandleSlot {
    /// Id of the live handle; 0 when none (ids are never 0). Stored last on create (release)
    /// and first on destroy.
    pub id: AtomicU32,
    /// Its memory type (wire value).
    pub mem: AtomicU32,
    /// Its global address.
    pub addr: AtomicU64,
    /// Its size \[bytes\].
    pub size: AtomicU64,
    reserved: AtomicU64,
}

impl HandleSlot {
    /// Publishes `h` as live (the owner only).
    pub fn publish(&self, h: &Handle) {
        self.mem.store(u32::from(h.mem.to_byte()), Ordering::Relaxed);
        self.addr.store(h.addr, Ordering::Relaxed);
        self.size.store(h.size, Ordering::Relaxed);
        self.id.store(h.id, Ordering::Release);
    }

    /// Marks the slot empty (the owner only).
    pub fn clear(&self) {
        self.id.store(0, Ordering::Release);
    }

    /// Whether `h` is, field for field, the handle live in this slot.
    #[inline(always)]
    pub fn holds(&self, h: &Handle) -> bool {
        self.id.load(Ordering::Acquire) == h.id
            && self.addr.load(Ordering::Relaxed) == h.addr
            && self.size.load(Ordering::Relaxed) == h.size
            && self.mem.load(Ordering::Relaxed) == u32::from(h.mem.to_byte())
    }

    /// The live handle of this slot of `node`, if any.
    pub fn live(&self, node: u16) -> Option<Handle> {
        let id = self.id.load(Ordering::Acquire);
        if id == 0 {
            return None;
        }
        let mem = tca_proto::MemoryType::from_byte(self.mem.load(Ordering::Relaxed) as u8).ok()?;
        let h =
            Handle { node, addr: self.addr.load(Ordering::Relaxed), size: self.size.load(Ordering::Relaxed), mem, id };
        (self.id.load(Ordering::Acquire) == id).then_some(h)
    }
}

const _: () = assert!(std::mem::size_of::<Header>() <= HEADER_BYTES);
const _: () = assert!(RINGS + MAX_NODES as usize * std::mem::size_of::<Ring>() <= BOOT);
const _: () = assert!(BOOT + BOOT_BYTES <= HANDLES);
const _: () = assert!(std::mem::size_of::<HandleSlot>() == 32);
const _: () = assert!(HANDLES + MAX_HANDLES * std::mem::size_of::<HandleSlot>() <= MSGS);
const _: () = assert!(MSGS + MAX_NODES as usize * std::mem::size_of::<MsgRing>() <= HEAP);

/// Typed views into a mapped segment.
#[derive(Debug)]
pub struct Segment {
    map: crate::sys::Mapping,
}

impl Segment {
    /// Wraps a mapping of at least [`HEAP`] bytes.
    pub fn new(map: crate::sys::Mapping) -> Self {
        debug_assert!(map.len() >= HEAP);
        Self { map }
    }

    /// The header of a mapping that is not (yet) wrapped in a segment.
    pub fn new_ref(map: &crate::sys::Mapping) -> &Header {
        assert!(map.len() >= HEADER_BYTES);
        // SAFETY: as in `header`.
        unsafe { &*map.ptr().cast::<Header>() }
    }

    /// The header.
    #[inline]
    pub fn header(&self) -> &Header {
        // SAFETY: the mapping is page-aligned, at least HEADER_BYTES long, and Header is made
        // of atomics, valid for any bit pattern (zero-filled at creation).
        unsafe { &*self.map.ptr().cast::<Header>() }
    }

    /// The ring that holds notifications from node `src`.
    pub fn ring(&self, src: u16) -> &Ring {
        let off = RINGS + src as usize * std::mem::size_of::<Ring>();
        // SAFETY: in bounds by the layout assertions; atomics only; 64-byte aligned offset.
        unsafe { &*self.map.ptr().add(off).cast::<Ring>() }
    }

    /// The ring that holds messages from node `src`.
    pub fn msg_ring(&self, src: u16) -> &MsgRing {
        let off = MSGS + src as usize * std::mem::size_of::<MsgRing>();
        // SAFETY: in bounds by the layout assertions; atomics only; 64-byte aligned offset.
        unsafe { &*self.map.ptr().add(off).cast::<MsgRing>() }
    }

    /// Slot `slot % MAX_HANDLES` of the handle table.
    #[inline]
    pub fn handle_slot(&self, slot: usize) -> &HandleSlot {
        let off = HANDLES + (slot % MAX_HANDLES) * std::mem::size_of::<HandleSlot>();
        // SAFETY: in bounds by the layout assertions; atomics only; 32-byte aligned offset.
        unsafe { &*self.map.ptr().add(off).cast::<HandleSlot>() }
    }

    /// Whether `h` (a handle of this segment's owner) is live: one lookup in the table, on
    /// the path of every PIO store.
    #[inline(always)]
    pub fn is_live(&self, h: &Handle) -> bool {
        self.handle_slot(h.slot()).holds(h)
    }

    /// Backs `len` bytes at `off` of this rank's own segment with memory now.
    ///
    /// # Errors
    /// The `fallocate` error (`ENOSPC` when `/dev/shm` is full).
    pub fn reserve(&self, off: u64, len: u64) -> std::io::Result<()> {
        self.map.reserve(off as usize, len as usize)
    }

    /// Zeroes `len` bytes at `off` of this rank's own segment ([`crate::sys::Mapping::clear`]).
    pub fn clear(&self, off: u64, len: u64) {
        self.map.clear(off as usize, len as usize);
    }

    /// First byte of the segment.
    pub fn base(&self) -> *mut u8 {
        self.map.ptr()
    }

    /// Segment length \[bytes\].
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the segment has no heap.
    pub fn is_empty(&self) -> bool {
        self.map.len() <= HEAP
    }

    /// Pointer to `len` bytes at segment offset `off`, if they lie inside the heap.
    #[inline(always)]
    pub fn heap_ptr(&self, off: u64, len: u64) -> Option<*mut u8> {
        let end = off.checked_add(len)?;
        if off < HEAP as u64 || end > self.map.len() as u64 {
            return None;
        }
        // SAFETY: in bounds, checked above.
        Some(unsafe { self.map.ptr().add(off as usize) })
    }

    /// Rings a doorbell: bump the word, wake sleepers if there are any.
    pub fn ring_bell(bell: &AtomicU32, waiters: &AtomicU32) {
        bell.fetch_add(1, Ordering::SeqCst);
        if waiters.load(Ordering::SeqCst) != 0 {
            crate::sys::futex_wake_all(bell);
        }
    }
}

/// The global address of segment offset `off` of `node`.
pub fn global(node: u16, off: u64) -> u64 {
    (u64::from(node) << NODE_SHIFT) | off
}

/// Splits a global address into (node, segment offset).
#[inline(always)]
pub fn split(addr: u64) -> (u64, u64) {
    (addr >> NODE_SHIFT, addr & ((1u64 << NODE_SHIFT) - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_split_into_node_and_offset() {
        let a = global(5, HEAP as u64 + 12);
        assert_eq!(split(a), (5, HEAP as u64 + 12));
        assert_eq!(split(global(15, (1 << NODE_SHIFT) - 1)).0, 15);
    }
}
