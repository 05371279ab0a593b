//! One rank's shared segment: its layout, header and notification rings.
//!
//! Every rank owns one POSIX shared-memory object, `/dev/shm/tca-<job>-<rank>`, that all its
//! peers map. Node `n`'s byte at segment offset `o` has the global address `n << NODE_SHIFT | o`
//! (the shm stand-in for the PEACH2 address window divided among the nodes, seed 000 §3.4).
//!
//! ```text
//! offset 0        header (one page): magic, state, pid, sizes, doorbells, bootstrap counters
//! offset RINGS    MAX_NODES notification rings; ring s holds notifications from node s
//! offset BOOT     BOOT_BYTES bootstrap buffer (allgather of handles without MPI)
//! offset MSGS     MAX_NODES message rings; ring s holds proxy-read messages from node s
//! offset HEAP     heap: tcaMalloc memory and chaining-mode descriptor tables, to the end
//! ```
//!
//! A notification ring has one producer (the DMA engine thread of the sending process) and one
//! consumer at a time (a waiter of the owning process, under its engine lock), so head and
//! tail are plain atomics: the producer writes the entry, then publishes `head` with release
//! ordering; the data the notification announces was written before that.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use tca_proto::MAX_NODES;

/// Global address bits for the offset inside a node's segment: 1 TiB per node.
pub const NODE_SHIFT: u32 = 40;
/// Header size \[bytes\].
pub const HEADER_BYTES: usize = 4096;
/// Entries of one notification ring.
pub const RING_SLOTS: usize = 1024;
/// Offset of the first notification ring.
pub const RINGS: usize = HEADER_BYTES;
/// Offset of the bootstrap buffer.
pub const BOOT: usize = 256 * 1024;
/// Bootstrap buffer size \[bytes\]: the most one rank contributes to an allgather.
pub const BOOT_BYTES: usize = 64 * 1024;
/// Offset of the first message ring.
pub const MSGS: usize = 512 * 1024;
/// Entries of one message ring.
pub const MSG_SLOTS: usize = 64;
/// Bytes of one message.
pub const MSG_BYTES: usize = 128;
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
    /// Length of the owner's current bootstrap contribution \[bytes\].
    pub boot_len: Line<AtomicU64>,
}

/// A single-producer, single-consumer ring of notifications.
#[repr(C)]
#[derive(Debug)]
pub struct Ring {
    /// Next entry the producer writes (counts up, wraps at `u32`).
    pub head: Line<AtomicU32>,
    /// Next entry the consumer reads.
    pub tail: Line<AtomicU32>,
    /// Entries: `slot << 32 | tag`.
    pub slots: [AtomicU64; RING_SLOTS],
}

const _: () = assert!(std::mem::size_of::<Header>() <= HEADER_BYTES);
const _: () = assert!(RINGS + MAX_NODES as usize * std::mem::size_of::<Ring>() <= BOOT);
const _: () = assert!(BOOT + BOOT_BYTES <= MSGS);
const _: () = assert!(MSGS + MAX_NODES as usize * std::mem::size_of::<MsgRing>() <= HEAP);

/// A single-producer, single-consumer ring of [`MSG_BYTES`]-byte messages (the proxy-read
/// traffic of seed 000 §3.5: requests, interrupts, answers).
#[repr(C)]
#[derive(Debug)]
pub struct MsgRing {
    /// Next entry the producer writes.
    pub head: Line<AtomicU32>,
    /// Next entry the consumer reads.
    pub tail: Line<AtomicU32>,
    /// Entries, as 64-bit words.
    pub slots: [[AtomicU64; MSG_BYTES / 8]; MSG_SLOTS],
}

impl MsgRing {
    /// Appends a message; `false` when the ring is full.
    pub fn push(&self, msg: &[u8; MSG_BYTES]) -> bool {
        let head = self.head.0.load(Ordering::Relaxed);
        let tail = self.tail.0.load(Ordering::Acquire);
        if head.wrapping_sub(tail) as usize >= MSG_SLOTS {
            return false;
        }
        let slot = &self.slots[head as usize % MSG_SLOTS];
        for (w, chunk) in slot.iter().zip(msg.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            w.store(u64::from_le_bytes(b), Ordering::Relaxed);
        }
        self.head.0.store(head.wrapping_add(1), Ordering::Release);
        true
    }

    /// Takes every message, oldest first.
    pub fn drain(&self, mut f: impl FnMut(&[u8; MSG_BYTES])) {
        let head = self.head.0.load(Ordering::Acquire);
        let mut tail = self.tail.0.load(Ordering::Relaxed);
        if head == tail {
            return;
        }
        let mut msg = [0u8; MSG_BYTES];
        while tail != head {
            let slot = &self.slots[tail as usize % MSG_SLOTS];
            for (w, chunk) in slot.iter().zip(msg.chunks_exact_mut(8)) {
                chunk.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
            }
            f(&msg);
            tail = tail.wrapping_add(1);
        }
        self.tail.0.store(tail, Ordering::Release);
    }
}

/// Encodes a notification as a ring entry.
pub fn encode_notify(slot: u16, tag: u32) -> u64 {
    (u64::from(slot) << 32) | u64::from(tag)
}

/// Decodes a ring entry into (slot, tag).
pub fn decode_notify(v: u64) -> (u16, u32) {
    ((v >> 32) as u16, v as u32)
}

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

    /// Backs `len` bytes at `off` of this rank's own segment with memory now.
    ///
    /// # Errors
    /// The `fallocate` error (`ENOSPC` when `/dev/shm` is full).
    pub fn reserve(&self, off: u64, len: u64) -> std::io::Result<()> {
        self.map.reserve(off as usize, len as usize)
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
    pub fn heap_ptr(&self, off: u64, len: u64) -> Option<*mut u8> {
        let end = off.checked_add(len)?;
        if off < HEAP as u64 || end > self.map.len() as u64 {
            return None;
        }
        // SAFETY: in bounds, checked above.
        Some(unsafe { self.map.ptr().add(off as usize) })
    }

    /// Pushes a notification into `ring` (this process is its only producer). `false` when
    /// the ring is full.
    pub fn push(ring: &Ring, value: u64) -> bool {
        let head = ring.head.0.load(Ordering::Relaxed);
        let tail = ring.tail.0.load(Ordering::Acquire);
        if head.wrapping_sub(tail) as usize >= RING_SLOTS {
            return false;
        }
        ring.slots[head as usize % RING_SLOTS].store(value, Ordering::Relaxed);
        ring.head.0.store(head.wrapping_add(1), Ordering::Release);
        true
    }

    /// Takes every entry of `ring` (the caller is its only consumer), oldest first.
    pub fn drain(ring: &Ring, mut f: impl FnMut(u64)) {
        let head = ring.head.0.load(Ordering::Acquire);
        let mut tail = ring.tail.0.load(Ordering::Relaxed);
        if head == tail {
            return;
        }
        while tail != head {
            f(ring.slots[tail as usize % RING_SLOTS].load(Ordering::Relaxed));
            tail = tail.wrapping_add(1);
        }
        ring.tail.0.store(tail, Ordering::Release);
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
pub fn split(addr: u64) -> (u64, u64) {
    (addr >> NODE_SHIFT, addr & ((1u64 << NODE_SHIFT) - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notify_entries_round_trip() {
        for (slot, tag) in [(0u16, 0u32), (63, u32::MAX), (7, 0x1234_5678)] {
            assert_eq!(decode_notify(encode_notify(slot, tag)), (slot, tag));
        }
    }

    #[test]
    fn addresses_split_into_node_and_offset() {
        let a = global(5, HEAP as u64 + 12);
        assert_eq!(split(a), (5, HEAP as u64 + 12));
        assert_eq!(split(global(15, (1 << NODE_SHIFT) - 1)).0, 15);
    }
}
