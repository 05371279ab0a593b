//! Contents of simulated memory: the buffers `tcaMalloc` (and `cudaMalloc`) handed out on each
//! node, found by global (window) address, the address the model routes.
//!
//! Every buffer is a real allocation of this process, so that a program gets a pointer it can
//! use (a C program reads and writes its buffers between calls, as on the hardware) and the
//! bytes the model moves are the bytes the program sees. The buffers are only ever touched
//! through raw pointers, never through a Rust reference that would outlive one copy: the
//! program writes them between calls, the model reads and writes them while every rank waits
//! in a call (the job's rule), so the two never run at once.
//!
//! The model's copies bypass the cache where they can (streaming stores): the bytes a job
//! moves (gigabytes in a sweep) would otherwise evict the model's own state from it, and the
//! 16-rank allgather of docs/sim-c.md ran 1.18x slower. [`Memory::publish`] makes them visible
//! to other threads before a rank runs again.

use crate::arena::Arena;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::BTreeMap;
use std::ptr::NonNull;

/// Alignment of every buffer in this process: a page, as the model's addresses are, so that
/// the low address bits the API checks are the same in both.
pub(crate) const ALIGN: usize = 4096;

/// Buffers from this size up are mapped from the kernel, whose pages are zero until written:
/// a zeroed allocation aligned to a page from the Rust allocator writes every byte (a 256 MiB
/// `cudaMalloc` cost a quarter of a second of wall time).
const MAPPED_FROM: usize = 1 << 20;

/// One allocation: its own, or a part of the window's mapping ([`Arena`]).
#[derive(Debug)]
struct Buffer {
    ptr: NonNull<u8>,
    len: usize,
    own: bool,
}

impl Buffer {
    fn layout(len: usize) -> Option<Layout> {
        Layout::from_size_align(len, ALIGN).ok()
    }

    /// A zeroed allocation of `len` (> 0) bytes aligned to [`ALIGN`].
    fn zeroed(len: usize) -> Option<Buffer> {
        let ptr = if len >= MAPPED_FROM {
            crate::arena::map_zeroed(len)?.as_ptr()
        } else {
            // SAFETY: the layout has a non-zero size.
            unsafe { alloc_zeroed(Buffer::layout(len)?) }
        };
        Some(Buffer { ptr: NonNull::new(ptr)?, len, own: true })
    }

    /// Gives the memory back.
    ///
    /// # Safety
    /// `self` came from [`Buffer::zeroed`] and nothing uses its memory any more.
    unsafe fn release(self) {
        if self.len >= MAPPED_FROM {
            // SAFETY: the caller's: the whole mapping made in `zeroed`.
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
        } else {
            let layout = Buffer::layout(self.len).expect("the layout it was allocated with");
            // SAFETY: the caller's: allocated in `zeroed` with this layout.
            unsafe { dealloc(self.ptr.as_ptr(), layout) };
        }
    }
}

/// Buffers of the whole cluster, keyed by their global start address, and the global address
/// of each by its pointer.
#[derive(Debug, Default)]
pub struct Memory {
    buffers: BTreeMap<u64, Buffer>,
    by_ptr: BTreeMap<usize, u64>,
    /// A copy since the last [`Memory::publish`] used streaming stores.
    streamed: bool,
    /// The window mapped whole, where the kernel allowed it: buffers inside it lie there.
    arena: Option<Arena>,
    /// The buffers of the last two copies (global start, length, pointer): a DMA copies into
    /// and out of the same buffers TLP after TLP. Emptied when a buffer is added or removed.
    recent: [(u64, u64, usize); 2],
}

// SAFETY: the buffers are owned by the map (allocated in `add`, freed in `remove` or drop);
// the raw pointers are not shared with another owner inside Rust.
unsafe impl Send for Memory {}

impl Memory {
    /// Memory whose buffers of the window `[start, start + len)` lie in one mapping of it
    /// ([`Arena`]), or each on its own where the kernel refuses that mapping.
    pub fn with_window(start: u64, len: u64) -> Memory {
        let mut m = Memory::default();
        m.arena = Arena::map(start, len);
        m
    }

    /// Whether `ptr` points into the window's mapping: simulated memory, whether a live
    /// buffer holds it or not (false where each buffer is backed on its own).
    pub fn in_window(&self, ptr: u64) -> bool {
        self.arena.as_ref().is_some_and(|a| a.holds(ptr))
    }

    /// Adds a zeroed buffer of `len` bytes (at least one) at global address `addr`; returns
    /// its pointer, or `None` when the process has no memory for it.
    pub fn add(&mut self, addr: u64, len: u64) -> Option<u64> {
        let len = usize::try_from(len).ok().filter(|&l| l > 0)?;
        let in_arena = self.arena.as_ref().and_then(|a| a.ptr(addr, len as u64));
        let buffer = match in_arena {
            // Zero: never written, or cleared when its last buffer was removed.
            Some(ptr) => Buffer { ptr, len, own: false },
            None => Buffer::zeroed(len)?,
        };
        let ptr = buffer.ptr;
        self.recent = Default::default();
        if let Some(old) = self.buffers.insert(addr, buffer) {
            // The model handed out an address twice: keep the new buffer, free the old one
            // (first: in the window both have the same pointer).
            self.release(old);
        }
        self.by_ptr.insert(ptr.as_ptr() as usize, addr);
        Some(ptr.as_ptr() as u64)
    }

    fn release(&mut self, b: Buffer) {
        self.by_ptr.remove(&(b.ptr.as_ptr() as usize));
        if !b.own {
            if let Some(a) = &self.arena {
                a.clear(b.ptr, b.len);
            }
            return;
        }
        // SAFETY: allocated in `add` and removed from the maps.
        unsafe { b.release() };
    }

    /// Removes the buffer starting at `addr`.
    pub fn remove(&mut self, addr: u64) -> bool {
        match self.buffers.remove(&addr) {
            Some(mut b) => {
                self.recent = Default::default();
                if !b.own {
                    // Bytes of the window outside live buffers are zero: the pages a buffer
                    // shares with no other one are given back whole, even where it ends inside
                    // one (a page-aligned 64-byte block), instead of being zeroed, which backs
                    // a page that was never written.
                    let page = ALIGN as u64;
                    let end = addr + b.len as u64;
                    let after = self.buffers.range(addr..).next().map_or(u64::MAX, |(a, _)| *a);
                    if addr.is_multiple_of(page) && after >= end.next_multiple_of(page) {
                        b.len = b.len.next_multiple_of(ALIGN);
                    }
                }
                self.release(b);
                true
            }
            None => false,
        }
    }

    /// The buffer holding `[addr, addr + len)` and the offset of `addr` in it.
    fn locate(&self, addr: u64, len: u64) -> Option<(&Buffer, usize)> {
        let (&start, buf) = self.buffers.range(..=addr).next_back()?;
        let off = addr - start;
        (off.checked_add(len)? <= buf.len as u64).then_some((buf, off as usize))
    }

    /// Raw pointer to `len` bytes at global `addr`, if they lie in one buffer.
    fn raw(&self, addr: u64, len: u64) -> Option<*mut u8> {
        let (buf, off) = self.locate(addr, len)?;
        Some(buf.ptr.as_ptr().wrapping_add(off))
    }

    /// As [`Self::raw`], looking first at the buffer remembered in `recent[slot]`.
    fn raw_recent(&mut self, addr: u64, len: u64, slot: usize) -> Option<*mut u8> {
        let (start, size, ptr) = self.recent[slot];
        let off = addr.wrapping_sub(start);
        if off < size && len <= size - off {
            return Some((ptr as *mut u8).wrapping_add(off as usize));
        }
        let (buf, off) = self.locate(addr, len)?;
        let ptr = buf.ptr.as_ptr();
        self.recent[slot] = (addr - off as u64, buf.len as u64, ptr as usize);
        Some(ptr.wrapping_add(off))
    }

    /// Whether `[addr, addr + len)` lies inside one buffer.
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        self.locate(addr, len).is_some()
    }

    /// The global address of pointer `ptr` and the buffer holding it (its global start and
    /// length); `None` for a pointer into no buffer.
    pub fn global_of(&self, ptr: u64) -> Option<(u64, u64, u64)> {
        let p = usize::try_from(ptr).ok()?;
        let (&start, &addr) = self.by_ptr.range(..=p).next_back()?;
        let buf = &self.buffers[&addr];
        let off = p - start;
        (off < buf.len).then_some((addr + off as u64, addr, buf.len as u64))
    }

    /// Copies `len` bytes at `addr` out; `None` if they are not inside one buffer.
    pub fn read(&self, addr: u64, len: u64) -> Option<Vec<u8>> {
        let src = self.raw(addr, len)?;
        let mut out = vec![0; len as usize];
        // SAFETY: `src` has `len` bytes inside a live buffer; `out` is a fresh vector.
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
        Some(out)
    }

    /// Writes `bytes` at `addr`; `false` if they do not fit in one buffer. Visible to this
    /// thread at once, to others after [`Memory::publish`].
    pub fn write(&mut self, addr: u64, bytes: &[u8]) -> bool {
        let Some(dst) = self.raw_recent(addr, bytes.len() as u64, 1) else {
            return false;
        };
        // SAFETY: `dst` has `bytes.len()` bytes inside a live buffer, which `bytes` (a Rust
        // slice the caller owns) is not part of.
        self.streamed |= unsafe { copy_streaming(bytes.as_ptr(), dst, bytes.len()) };
        true
    }

    /// Copies `len` bytes from `src` to `dst` (both global); `false` if either is not mapped.
    /// Visible to this thread at once, to others after [`Memory::publish`].
    pub fn copy(&mut self, src: u64, dst: u64, len: u64) -> bool {
        let (Some(s), Some(d)) = (self.raw_recent(src, len, 0), self.raw_recent(dst, len, 1)) else {
            return false;
        };
        // SAFETY: both ranges lie inside live buffers; they may overlap (one buffer).
        self.streamed |= unsafe { copy_streaming(s, d, len as usize) };
        true
    }

    /// Orders the streaming stores of earlier copies before this thread's later stores, so
    /// that another thread told of the copy afterwards sees its bytes (a store fence, only
    /// when a copy used them). Call before a rank runs its program again.
    pub fn publish(&mut self) {
        if std::mem::take(&mut self.streamed) {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: sfence has no preconditions.
            unsafe {
                std::arch::x86_64::_mm_sfence()
            };
        }
    }
}

/// Copies `len` bytes from `s` to `d`, with streaming stores (which do not bring `d` into the
/// cache) when the ranges do not overlap and `d` and `len` are multiples of 16 from 64 bytes
/// up; returns whether it streamed. A fence after each copy would wait for the stores to
/// reach memory and cost what they save, so [`Memory::publish`] fences once.
///
/// # Safety
/// `s..s+len` is readable and `d..d+len` writable.
unsafe fn copy_streaming(s: *const u8, d: *mut u8, len: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_loadu_si128, _mm_stream_si128};
        let apart = (s as usize).abs_diff(d as usize) >= len;
        if len >= 64 && apart && (d as usize).is_multiple_of(16) && len.is_multiple_of(16) {
            for i in (0..len).step_by(16) {
                // SAFETY: i + 16 <= len; `d + i` is 16-byte aligned; SSE2 is part of x86-64.
                unsafe { _mm_stream_si128(d.add(i).cast(), _mm_loadu_si128(s.add(i).cast())) };
            }
            return true;
        }
    }
    // SAFETY: the caller's ranges; `copy` allows overlap.
    unsafe { std::ptr::copy(s, d, len) };
    false
}

impl Drop for Memory {
    fn drop(&mut self) {
        for (_, b) in std::mem::take(&mut self.buffers) {
            self.release(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the page of the window holding `addr` is backed by memory.
    fn resident(m: &Memory, addr: u64) -> bool {
        let p = m.arena.as_ref().unwrap().ptr(addr / 4096 * 4096, 4096).unwrap();
        let mut vec = 0u8;
        // SAFETY: one page of the mapping, one byte of output.
        assert_eq!(unsafe { libc::mincore(p.as_ptr().cast(), 4096, &raw mut vec) }, 0);
        vec & 1 == 1
    }

    /// A small buffer that owns its page gives the page back when removed, written or not; one
    /// that shares its page keeps its neighbour's bytes.
    #[test]
    fn a_removed_small_buffer_backs_no_page() {
        let base = 1u64 << 40;
        let mut m = Memory::with_window(base, 1 << 30);
        m.add(base, 64).unwrap();
        m.remove(base);
        assert!(!resident(&m, base), "clearing the 64 bytes backed the page");
        m.add(base + 4096, 64).unwrap();
        assert!(m.write(base + 4096, &[7; 64]));
        m.remove(base + 4096);
        assert!(!resident(&m, base + 4096));
        assert_eq!(m.add(base + 4096, 64).and_then(|_| m.read(base + 4096, 64)), Some(vec![0; 64]));
        m.add(base + 8192, 64).unwrap();
        m.add(base + 8192 + 64, 64).unwrap();
        assert!(m.write(base + 8192, &[1; 64]) && m.write(base + 8192 + 64, &[1; 64]));
        m.remove(base + 8192);
        assert_eq!(m.read(base + 8192 + 64, 64), Some(vec![1; 64]), "the neighbour's bytes stay");
        assert_eq!(m.add(base + 8192, 64).and_then(|_| m.read(base + 8192, 64)), Some(vec![0; 64]));
    }

    #[test]
    fn reads_writes_and_copies_inside_buffers_only() {
        let mut m = Memory::default();
        m.add(1000, 16).unwrap();
        m.add(2000, 16).unwrap();
        assert!(m.write(1004, &[1, 2, 3, 4]));
        assert!(m.copy(1004, 2012, 4));
        assert_eq!(m.read(2012, 4), Some(vec![1, 2, 3, 4]));
        assert!(!m.write(1014, &[0; 4]), "crosses the end of the buffer");
        assert_eq!(m.read(1500, 1), None);
        assert!(m.copy(1004, 1006, 4), "overlapping inside one buffer");
        assert_eq!(m.read(1004, 6), Some(vec![1, 2, 1, 2, 3, 4]));
        assert!(m.remove(1000));
        assert_eq!(m.read(1004, 1), None);
        assert!(!m.remove(1000));
    }

    /// Copies go to the buffer that holds the address now: one removed, or replaced at the
    /// same address, is never written through a pointer remembered from an earlier copy.
    #[test]
    fn copies_follow_buffers_that_are_removed_or_replaced() {
        let mut m = Memory::default();
        m.add(0x1000, 256).unwrap();
        m.add(0x2000, 256).unwrap();
        m.write(0x1000, &[9; 256]);
        assert!(m.copy(0x1000, 0x2000, 256));
        assert!(m.copy(0x1000, 0x2080, 128), "the same buffers again");
        assert!(!m.copy(0x1000, 0x2080, 256), "past the end of the remembered buffer");
        assert!(m.remove(0x2000));
        assert!(!m.copy(0x1000, 0x2000, 256), "into a removed buffer");
        assert!(!m.write(0x2000, &[1]));
        let second = m.add(0x2000, 512).unwrap();
        assert!(m.copy(0x1000, 0x2100, 256), "the new buffer is longer");
        assert_eq!(m.read(0x2000, 512).unwrap(), [vec![0; 256], vec![9; 256]].concat());
        // SAFETY: `second` has 512 bytes.
        assert_eq!(unsafe { *((second + 256) as usize as *const u8) }, 9);
    }

    /// Copies the size of a TLP: streamed between buffers and within one, with the stores
    /// visible at once to this thread; overlapping or unaligned ones as memmove does.
    #[test]
    fn large_copies_land_whole_however_they_are_made() {
        let mut m = Memory::default();
        m.add(0x10000, 1024).unwrap();
        m.add(0x20000, 1024).unwrap();
        let pattern: Vec<u8> = (0..1024).map(|i| (i * 7 % 251) as u8).collect();
        assert!(m.write(0x10000, &pattern));
        let cases = [
            (0x10000, 0x20000, 256), // apart, aligned: streamed
            (0x10000, 0x10200, 256), // apart, in one buffer: streamed
            (0x10000, 0x10080, 256), // overlapping
            (0x10001, 0x20101, 100), // unaligned, not a multiple of 16
        ];
        for (src, dst, len) in cases {
            let expected = m.read(src, len).unwrap();
            assert!(m.copy(src, dst, len));
            assert_eq!(m.read(dst, len), Some(expected), "copy {src:#x} -> {dst:#x}, {len} B");
        }
        m.publish();
        assert!(!m.copy(0x10000, 0x20380, 256), "crosses the end of the buffer");
    }

    #[test]
    fn buffers_are_real_memory_found_by_pointer() {
        let mut m = Memory::default();
        let p = m.add(1 << 40, 8192).unwrap();
        assert_eq!(p % ALIGN as u64, 0);
        // What the program stores through its pointer is what the model reads, and back.
        // SAFETY: p has 8192 bytes.
        unsafe { *((p + 100) as usize as *mut u8) = 42 };
        assert_eq!(m.read((1 << 40) + 100, 1), Some(vec![42]));
        assert!(m.write((1 << 40) + 8191, &[7]));
        // SAFETY: as above.
        assert_eq!(unsafe { *((p + 8191) as usize as *const u8) }, 7);
        assert_eq!(m.global_of(p + 100), Some(((1 << 40) + 100, 1 << 40, 8192)));
        assert_eq!(m.global_of(p + 8192), None, "one past the end");
        assert_eq!(m.global_of(p.wrapping_sub(1)), None);
        assert!(m.remove(1 << 40));
        assert_eq!(m.global_of(p), None);
        assert_eq!(m.add(5, 0), None, "no empty buffers");
    }

    /// In the window's mapping: buffers lie at their address in it, a pointer past one or into
    /// a freed one is in the window but in no buffer, memory handed out again is zero, and an
    /// address handed out twice keeps the new buffer findable by its pointer.
    #[test]
    fn buffers_in_the_window_lie_at_their_address() {
        const BASE: u64 = 1 << 40;
        let mut m = Memory::with_window(BASE, 1 << 30);
        let p = m.add(BASE + 8192, 4096).unwrap();
        let q = m.add(BASE + 16384, 4096).unwrap();
        assert_eq!(q - p, 8192, "the window's layout");
        assert!(m.write(BASE + 8192, &[9; 16]));
        assert_eq!(m.global_of(p + 4096), None);
        assert!(m.in_window(p + 4096), "past the end: simulated memory all the same");
        assert!(!m.in_window(&m as *const Memory as u64), "the program's own memory");
        assert!(m.remove(BASE + 8192));
        assert!(m.in_window(p) && m.global_of(p).is_none());
        assert_eq!(m.add(BASE + 8192, 4096), Some(p));
        assert_eq!(m.read(BASE + 8192, 16), Some(vec![0; 16]), "zero when handed out again");
        assert_eq!(m.add(BASE + 8192, 4096), Some(p), "twice");
        assert_eq!(m.global_of(p + 1), Some((BASE + 8193, BASE + 8192, 4096)));
    }
}
