//! Memory and handles of one rank (`tcaMalloc`, `tcaFree`, `tcaCreateHandle`,
//! `tcaDestroyHandle`), and the check every write makes before it touches a peer's memory.
//!
//! A handle is live while its slot of the owner's handle table in shared memory holds it
//! ([`crate::segment::HandleSlot`]): the owner publishes it on create and clears it on destroy,
//! and clears every handle of a block when the block is freed. A writer looks the handle up
//! before each DMA kick and each PIO store, so a write through a destroyed or freed handle
//! fails on the writer's side with [`TcaError::InvalidHandle`] instead of landing in whatever
//! the owner allocated there next.

use crate::fabric::{lock, Inner};
use crate::segment;
use tca_proto::fabric::{MemorySpace, PointerInfo};
use tca_proto::handle::MAX_HANDLES;
use tca_proto::heap::Heap;
use tca_proto::{Handle, MemoryType, TcaError, TcaResult};

impl Inner {
    pub(crate) fn malloc(&self, size: u64, mem: MemoryType) -> TcaResult<u64> {
        self.check_live()?;
        if size == 0 {
            return Err(TcaError::ZeroSize);
        }
        let off = self.alloc(size)?;
        if mem == MemoryType::Gpu {
            lock(&self.gpu_blocks).insert(off);
        }
        Ok(self.own().base() as u64 + off)
    }

    pub(crate) fn free(&self, addr: u64) -> TcaResult<()> {
        self.check_live()?;
        let off = self.own_offset(addr).ok_or(TcaError::InvalidHandle)?;
        let mut heap = lock(&self.heap);
        let len = heap.block_at(off).ok_or(TcaError::InvalidHandle)?;
        // Handles of the block stop working before its memory can be handed out again.
        self.drop_handles_in(off, len);
        self.release(&mut heap, off);
        lock(&self.gpu_blocks).remove(&off);
        Ok(())
    }

    /// Gives the block at segment offset `off` back to `heap` (this rank's, locked), zeroed
    /// first: a block handed out again reads as zero, as the segment's fresh memory does
    /// (`cudaMalloc`, `cudaMallocHost` promise it, docs/cuda.md).
    pub(crate) fn release(&self, heap: &mut Heap, off: u64) {
        if let Some(len) = heap.block_at(off) {
            self.own().clear(off, len);
            heap.free(off);
        }
    }

    /// Which memory `ptr` points into: a block of this rank's heap (allocated as GPU memory or
    /// not), or memory of the process the fabric did not allocate.
    ///
    /// # Errors
    /// [`TcaError::InvalidHandle`] for a pointer into this rank's segment outside every live
    /// block (a freed one, or past a block's end), as on the simulator.
    pub(crate) fn pointer_info(&self, ptr: u64) -> TcaResult<PointerInfo> {
        self.check_live()?;
        let Some(at) = self.own_offset(ptr) else {
            return Ok(PointerInfo::pageable(ptr));
        };
        // Inside this rank's segment but in no live block: freed, or past a block's end.
        let (off, len) = lock(&self.heap).block_of(at, 1).ok_or(TcaError::InvalidHandle)?;
        let space = if lock(&self.gpu_blocks).contains(&off) { MemorySpace::Device(0) } else { MemorySpace::Pinned };
        Ok(PointerInfo { space, base: self.own().base() as u64 + off, size: len })
    }

    pub(crate) fn create_handle(&self, addr: u64, size: u64, mem: MemoryType) -> TcaResult<Handle> {
        self.check_live()?;
        if size == 0 {
            return Err(TcaError::ZeroSize);
        }
        let off = self.own_offset(addr).ok_or(TcaError::InvalidHandle)?;
        // The heap lock is held until the handle is published: a concurrent free of the block
        // either comes first (no block) or finds the handle.
        let heap = lock(&self.heap);
        heap.block_of(off, size).ok_or(TcaError::InvalidHandle)?;
        let h = lock(&self.engine).create_handle(segment::global(self.cfg.rank, off), size, mem)?;
        self.own().handle_slot(h.slot()).publish(&h);
        Ok(h)
    }

    pub(crate) fn destroy_handle(&self, h: &Handle) -> TcaResult<()> {
        self.check_live()?;
        let mut e = lock(&self.engine);
        if !e.is_live(h) {
            return Err(TcaError::InvalidHandle);
        }
        self.own().handle_slot(h.slot()).clear();
        e.destroy_handle(h)
    }

    /// Destroys every handle inside `len` bytes at segment offset `off` (a block being freed).
    fn drop_handles_in(&self, off: u64, len: u64) {
        let me = self.cfg.rank;
        let (start, end) = (segment::global(me, off), segment::global(me, off + len));
        let own = self.own();
        let mut e = lock(&self.engine);
        for slot in 0..MAX_HANDLES {
            let s = own.handle_slot(slot);
            if let Some(h) = s.live(me).filter(|h| h.addr >= start && h.addr < end) {
                s.clear();
                let _ = e.destroy_handle(&h);
            }
        }
    }

    /// Local pointer to the first byte of `h`'s region, when `h` is live in its owner's table
    /// (any node) and inside the owner's heap.
    ///
    /// # Errors
    /// What [`Handle::validate`] rejects; [`TcaError::InvalidNode`] for a node outside the
    /// job; [`TcaError::InvalidHandle`] for a handle not live.
    #[inline]
    pub(crate) fn live_ptr(&self, h: &Handle) -> TcaResult<*mut u8> {
        h.validate()?;
        let seg = self.segs.get(h.node as usize).ok_or(TcaError::InvalidNode)?;
        if !seg.is_live(h) {
            return Err(TcaError::InvalidHandle);
        }
        self.ptr(h.node, h.addr, h.size).ok_or(TcaError::InvalidHandle)
    }

    /// Local pointer to `len` bytes at `offset` of this rank's live handle `h`.
    fn own_range(&self, h: &Handle, offset: u64, len: u64) -> TcaResult<*mut u8> {
        self.check_live()?;
        if h.node != self.cfg.rank {
            return Err(TcaError::InvalidHandle);
        }
        let base = self.live_ptr(h)?;
        if !h.contains(offset, len) {
            return Err(TcaError::OutOfBounds);
        }
        Ok(base.wrapping_add(offset as usize))
    }

    pub(crate) fn write(&self, h: &Handle, offset: u64, data: &[u8]) -> TcaResult<()> {
        let dst = self.own_range(h, offset, data.len() as u64)?;
        // SAFETY: dst..dst+len lies inside the handle's block of this segment (own_range).
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        Ok(())
    }

    pub(crate) fn read(&self, h: &Handle, offset: u64, out: &mut [u8]) -> TcaResult<()> {
        let src = self.own_range(h, offset, out.len() as u64)?;
        // SAFETY: as in `write`; peers may be writing concurrently, as on the hardware.
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Allocates heap bytes and backs them with memory, so that a full `/dev/shm` is
    /// [`TcaError::OutOfMemory`] here, not a SIGBUS later.
    pub(crate) fn alloc(&self, size: u64) -> TcaResult<u64> {
        let mut heap = lock(&self.heap);
        let off = heap.alloc(size).ok_or(TcaError::OutOfMemory)?;
        if self.own().reserve(off, size).is_err() {
            // Nothing was written to it.
            heap.free(off);
            return Err(TcaError::OutOfMemory);
        }
        Ok(off)
    }

    /// Segment offset of an address (a pointer of this process) inside this rank's heap.
    fn own_offset(&self, addr: u64) -> Option<u64> {
        let base = self.own().base() as u64;
        (addr >= base + segment::HEAP as u64 && addr < base + self.own().len() as u64).then(|| addr - base)
    }

    /// Local pointer to `len` bytes at global address `addr`, which must be on `node` and
    /// inside its heap.
    #[inline]
    pub(crate) fn ptr(&self, node: u16, addr: u64, len: u64) -> Option<*mut u8> {
        let (n, off) = segment::split(addr);
        if n != u64::from(node) {
            return None;
        }
        self.segs.get(node as usize)?.heap_ptr(off, len)
    }
}
