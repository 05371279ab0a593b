//! PIO of one rank (`tcaSetPIORegion`, `tcaSendPIO`, `tcaSendPIOCommit`, `tcaWaitPIO`): CPU
//! stores straight into the destination's mapping (seed 000 §3.5.1), a store fence, and a
//! receiver that polls its own memory (seed 000 §4.2.1 (3)).
//!
//! Every store looks its handle up in the owner's handle table first (one cache line the owner
//! rarely writes), so a store through a destroyed or freed handle fails here.

use crate::fabric::Inner;
use crate::segment::{self, HandleSlot, Segment};
use crate::wait::{WaitFor, Watch};
use std::sync::atomic::{AtomicU32, Ordering};
use tca_proto::handle::MAX_HANDLES;
use tca_proto::{Handle, PioRegion, TcaError, TcaResult};

impl Inner {
    /// Opens `len` bytes at `offset` of any rank's live handle for PIO.
    ///
    /// # Errors
    /// What [`Handle::validate`] rejects; [`TcaError::InvalidNode`]; what [`PioRegion::new`]
    /// rejects ([`TcaError::ZeroSize`], [`TcaError::OutOfBounds`]); [`TcaError::InvalidHandle`]
    /// when the handle is not live or not inside its node's heap.
    pub(crate) fn set_pio_region(&self, h: &Handle, offset: u64, len: u64) -> TcaResult<PioRegion> {
        self.check_live()?;
        h.validate()?;
        if h.node >= self.cfg.size {
            return Err(TcaError::InvalidNode);
        }
        let region = PioRegion::new(*h, offset, len)?;
        self.live_ptr(h)?;
        Ok(region)
    }

    /// Stores `data` at `offset` of a PIO window. Visible to the destination in order with
    /// later PIO after [`Inner::send_pio_commit`].
    ///
    /// # Errors
    /// [`TcaError::NotInitialized`] after finalize; [`TcaError::SizeNotMultipleOf4`];
    /// [`TcaError::OutOfBounds`]; [`TcaError::InvalidNode`]; [`TcaError::InvalidHandle`] when
    /// the window's handle was destroyed or freed.
    #[inline]
    pub(crate) fn send_pio(&self, r: &PioRegion, offset: u64, data: &[u8]) -> TcaResult<()> {
        self.check_live()?;
        let len = data.len() as u64;
        if !len.is_multiple_of(4) {
            return Err(TcaError::SizeNotMultipleOf4);
        }
        let h = &r.handle;
        // Inside the window, and the window inside its handle (a region may be forged).
        let at = offset.checked_add(r.offset).ok_or(TcaError::OutOfBounds)?;
        if offset.checked_add(len).is_none_or(|end| end > r.len) || !h.contains(at, len) {
            return Err(TcaError::OutOfBounds);
        }
        let seg = self.segs.get(h.node as usize).ok_or(TcaError::InvalidNode)?;
        if !seg.is_live(h) {
            return Err(TcaError::InvalidHandle);
        }
        // A live handle's address is on its node (the owner published it so).
        let dst = seg.heap_ptr(segment::split(h.addr).1 + at, len).ok_or(TcaError::InvalidHandle)?;
        // SAFETY: dst..dst+len lies inside the destination's heap (checked above); data is a
        // separate slice of the caller.
        unsafe { store(data, dst) };
        if data.len() >= STREAMED_FROM {
            // memcpy may have made this copy with streaming stores, which x86-64 does not keep
            // in order with later stores: fence them now, so that a commit needs no fence.
            store_fence();
        }
        if self.policy.oversubscribed {
            // The receiver does not spin: wake it if it sleeps. The fence orders the stores
            // before the look at its waiter count (it announces itself, then re-checks).
            std::sync::atomic::fence(Ordering::SeqCst);
            let hd = seg.header();
            if hd.app_waiters.0.load(Ordering::Relaxed) != 0 {
                Segment::ring_bell(&hd.app_bell.0, &hd.app_waiters.0);
            }
        }
        Ok(())
    }

    /// Where the stores into window `r` go in this process, for a caller that stores without a
    /// call (the C header's inline `tcaSendPIO`): the window's first byte, and the id word of
    /// its handle's slot in the owner's table, which holds the handle's id while it is live.
    /// `None` when the ranks outnumber the CPUs (a store must then wake a sleeping receiver),
    /// after finalize, and for a window [`Inner::send_pio`] would refuse.
    pub(crate) fn pio_direct(&self, r: &PioRegion) -> Option<PioDirect> {
        if self.policy.oversubscribed || self.check_live().is_err() {
            return None;
        }
        let h = &r.handle;
        let seg = self.segs.get(h.node as usize)?;
        if !h.contains(r.offset, r.len) || !seg.is_live(h) {
            return None;
        }
        let base = seg.heap_ptr(segment::split(h.addr).1 + r.offset, r.len)?;
        Some(PioDirect { base, live: &seg.handle_slot(h.slot()).id, id: h.id })
    }

    /// This rank's memory as a caller that waits without a call reads it (the C header's inline
    /// `tcaWaitPIO`): the segment, where the global addresses of its handles point in it, and
    /// its handle table. `None` when waits do not spin (the ranks outnumber the CPUs, or
    /// `TCA_SPIN_US=0`: a waiter then sleeps at once) and after finalize.
    pub(crate) fn wait_view(&self) -> Option<WaitView> {
        if self.policy.oversubscribed || self.policy.spin.is_zero() || self.check_live().is_err() {
            return None;
        }
        let me = self.cfg.rank;
        let seg = self.segs.get(me as usize)?;
        Some(WaitView {
            base: seg.base(),
            origin: segment::global(me, 0),
            heap: segment::HEAP as u64,
            len: seg.len() as u64,
            slots: seg.handle_slot(0),
            slot_mask: MAX_HANDLES as u32 - 1,
            node: me,
            nodes: self.cfg.size,
        })
    }

    /// Orders every earlier PIO store before every later one. x86-64 keeps ordinary stores
    /// (and the stores of a string instruction, as a whole) in order (TSO), and a store that
    /// may have streamed was fenced in [`Inner::send_pio`]: the compiler fence is what is left
    /// to do. Elsewhere a release fence.
    #[inline]
    pub(crate) fn send_pio_commit(&self) -> TcaResult<()> {
        self.check_live()?;
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        #[cfg(not(target_arch = "x86_64"))]
        std::sync::atomic::fence(Ordering::Release);
        Ok(())
    }

    /// Waits until the bytes at `offset` of this rank's live handle `h` equal `expected`,
    /// compared as 32-bit words; `peer`, when given, is the rank expected to write them, and
    /// the wait fails when it dies.
    ///
    /// # Errors
    /// [`TcaError::InvalidNode`] for a peer outside the job; what
    /// [`Handle::check_word_wait`] rejects; [`TcaError::InvalidHandle`] for a handle not live
    /// on this rank; [`TcaError::PeerDead`]; [`TcaError::Timeout`].
    #[inline]
    pub(crate) fn wait_pio(&self, h: &Handle, offset: u64, expected: &[u8], peer: Option<u16>) -> TcaResult<()> {
        self.check_live()?;
        if peer.is_some_and(|p| p >= self.cfg.size) {
            return Err(TcaError::InvalidNode);
        }
        h.check_word_wait(offset, expected.len() as u64)?;
        if h.node != self.cfg.rank {
            return Err(TcaError::InvalidHandle);
        }
        let base = self.live_ptr(h)?.wrapping_add(offset as usize);
        if !(base as usize).is_multiple_of(4) {
            // Not reached while the mapping keeps the handle address's alignment (checked).
            return Err(TcaError::AlignmentMismatch);
        }
        // SAFETY: 4-byte aligned (checked), inside this rank's live handle; read as atomics
        // because peers store there.
        let words = unsafe { std::slice::from_raw_parts(base.cast::<AtomicU32>(), expected.len() / 4) };
        let arrived = || {
            words
                .iter()
                .zip(expected.chunks_exact(4))
                .all(|(w, e)| w.load(Ordering::Acquire) == u32::from_le_bytes([e[0], e[1], e[2], e[3]]))
        };
        // A PIO answer usually comes within a microsecond: poll the words alone first, so that
        // the answer is seen as soon as a plain loop would see it (the general wait also looks
        // at the engine and the doorbell between two polls).
        let polls = if self.policy.spin.is_zero() { 1 } else { FIRST_POLLS };
        for _ in 1..polls {
            if arrived() {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        if arrived() {
            return Ok(());
        }
        let watch = match peer {
            Some(p) if p != self.cfg.rank => Watch::Peer(p),
            _ => Watch::Nobody,
        };
        self.wait(WaitFor { watch, cheap: true, engine_reports: false }, |_| Ok(arrived()))
    }
}

/// A PIO window as this process maps it ([`Inner::pio_direct`]). A store of `len` bytes at
/// `offset` of the window goes to `base + offset` while `*live == id`, `offset + len` is
/// within the window, `len` is a multiple of 4 and below [`STREAMED_FROM`] (so that it needs
/// no fence), and the ranks do not outnumber the CPUs.
#[derive(Debug, Clone, Copy)]
pub struct PioDirect {
    /// The window's first byte.
    pub base: *mut u8,
    /// The id word of the handle's slot in its owner's table: 0 or another id once the
    /// handle is destroyed or freed.
    pub live: *const AtomicU32,
    /// The handle's id.
    pub id: u32,
}

/// This rank's memory for a wait without a call ([`Inner::wait_view`]). A word at `offset` of
/// a handle of this rank is at `base + (addr - origin) + offset` while the handle's slot
/// (`slots[id & slot_mask]`) holds its id, address, size and memory type, and
/// `origin + heap <= addr`, `addr + size <= origin + len`.
#[derive(Debug, Clone, Copy)]
pub struct WaitView {
    /// The segment's first byte.
    pub base: *mut u8,
    /// The global address of `base`.
    pub origin: u64,
    /// Bytes of the segment before its heap, where no handle lies.
    pub heap: u64,
    /// Bytes of the segment.
    pub len: u64,
    /// The first slot of the segment's handle table.
    pub slots: *const HandleSlot,
    /// Slots of the table, less one.
    pub slot_mask: u32,
    /// This rank.
    pub node: u16,
    /// Ranks of the job.
    pub nodes: u16,
}

/// Polls of a PIO wait's words before the general wait ([`Inner::wait`]) when waits spin:
/// a few microseconds.
const FIRST_POLLS: u32 = 256;

/// The smallest copy glibc's memcpy may make with streaming stores: its non-temporal threshold
/// (tunable `glibc.cpu.x86_non_temporal_threshold`) is at least 0x4040 bytes.
pub const STREAMED_FROM: usize = 0x4040;

/// Orders this thread's streaming stores before its later stores.
#[inline]
fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no preconditions.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

/// Copies `data` to `dst` as the CPU would store it. A flag word or a short payload is one
/// store, not a call of `memcpy` (a PIO ping-pong's latency is mostly such calls).
///
/// # Safety
/// `dst..dst + data.len()` is writable and does not overlap `data`.
#[inline(always)]
unsafe fn store(data: &[u8], dst: *mut u8) {
    let src = data.as_ptr();
    match data.len() {
        4 => dst.cast::<u32>().write_unaligned(src.cast::<u32>().read_unaligned()),
        8 => dst.cast::<u64>().write_unaligned(src.cast::<u64>().read_unaligned()),
        len => std::ptr::copy_nonoverlapping(src, dst, len),
    }
}
