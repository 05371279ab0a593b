//! The simulated PCIe window (seed 000 §3.4: 512 GiB shared by the nodes) mapped whole in this
//! process, so that the buffers of every node and GPU lie at `base + (address - window start)`.
//!
//! A pointer into the window is then always simulated memory: one outside any live buffer (past
//! a buffer's end, or into a freed one) is known as such and refused, as CUDA refuses a device
//! pointer outside an allocation, instead of being taken for the program's own (pageable)
//! memory. The bytes around a buffer are the window's, never the allocator's: a program that
//! writes past the end of its buffer cannot break the memory of the process.
//!
//! The mapping reserves no memory (`MAP_NORESERVE`); pages are backed as they are written and
//! given back when their buffer is freed. Where the kernel refuses a mapping this large (strict
//! overcommit), [`crate::memory::Memory`] backs each buffer on its own, as before.

use std::ptr::NonNull;

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct Arena {
    base: NonNull<u8>,
    start: u64,
    len: u64,
}

const PAGE: u64 = 4096;

impl Arena {
    /// Maps the window `[start, start + len)`; `None` when the kernel refuses.
    pub(crate) fn map(start: u64, len: u64) -> Option<Arena> {
        let bytes = usize::try_from(len).ok().filter(|&b| b > 0)?;
        start.checked_add(len)?;
        Some(Arena { base: map_zeroed(bytes)?, start, len })
    }

    /// Where `[addr, addr + len)` of the window lies in this process, if inside the window.
    pub(crate) fn ptr(&self, addr: u64, len: u64) -> Option<NonNull<u8>> {
        let off = addr.checked_sub(self.start)?;
        (off.checked_add(len)? <= self.len).then(|| {
            // SAFETY: `off` is inside the mapping.
            unsafe { self.base.add(off as usize) }
        })
    }

    /// Whether pointer `ptr` of this process points into the window.
    pub(crate) fn holds(&self, ptr: u64) -> bool {
        ptr.checked_sub(self.base.as_ptr() as u64).is_some_and(|off| off < self.len)
    }

    /// Zeroes the `len` bytes at `p` (a buffer of [`Arena::ptr`]) for the next buffer there,
    /// giving the whole pages among them back to the kernel (they read as zero again).
    pub(crate) fn clear(&self, p: NonNull<u8>, len: usize) {
        let (from, to) = (p.as_ptr() as u64, p.as_ptr() as u64 + len as u64);
        if !self.holds(from) || !self.holds(to - 1) {
            return;
        }
        let (first, last) = (from.next_multiple_of(PAGE), to / PAGE * PAGE);
        // SAFETY: every range below lies inside `[from, to)`, inside the mapping.
        unsafe {
            if first < last {
                std::ptr::write_bytes(from as *mut u8, 0, (first - from) as usize);
                libc::madvise(first as *mut libc::c_void, (last - first) as usize, libc::MADV_DONTNEED);
                std::ptr::write_bytes(last as *mut u8, 0, (to - last) as usize);
            } else {
                std::ptr::write_bytes(from as *mut u8, 0, len);
            }
        }
    }
}

/// `bytes` (> 0) of new zero pages, backed as they are written (`MAP_NORESERVE`); `None` when
/// the kernel refuses.
pub(crate) fn map_zeroed(bytes: usize) -> Option<NonNull<u8>> {
    // SAFETY: an anonymous private mapping of a new range; no existing memory is touched.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    NonNull::new(p.cast())
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: the whole mapping made in `map`; no buffer outlives the arena (its Memory).
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len as usize) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_maps_whole_and_clears_what_a_buffer_held() {
        let a = Arena::map(1 << 40, 512 << 30).expect("512 GiB without reserving memory");
        assert!(a.ptr((1 << 40) - 1, 1).is_none() && a.ptr((1 << 40) + (512 << 30), 1).is_none());
        let p = a.ptr((1 << 40) + 100, 3 * PAGE).unwrap().as_ptr();
        assert!(a.holds(p as u64) && !a.holds(p as u64 - 101));
        // SAFETY: 3 pages from p lie in the mapping.
        unsafe { std::ptr::write_bytes(p, 0xab, 3 * PAGE as usize) };
        a.clear(NonNull::new(p).unwrap(), 3 * PAGE as usize);
        // SAFETY: as above.
        assert!(unsafe { std::slice::from_raw_parts(p, 3 * PAGE as usize) }.iter().all(|&b| b == 0));
    }
}
