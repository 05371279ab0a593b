//! PIO stores without a library call: what `tca-api.h`'s inline `tcaSendPIO` and
//! `tcaSendPIOCommit` read.
//!
//! On the shm fabric a PIO store is a CPU store into the peer's segment, mapped in this
//! process, as on PEACH2 it is a store into the mapped window (seed 000 §3.5.1). A call of the
//! library costs more than that store. So `tcaSetPIORegion` checks the window once and writes,
//! after its wire form, where the window lies in this process and which word of the owner's
//! handle table says the handle is still live ([`DirectPio`]). The header's inline
//! `tcaSendPIO` then stores directly when:
//! - [`tca_pio_epoch`] is not 0: a process's shm fabric is initialised and not finalized;
//! - the window's `check` matches the epoch and its fields (a copy made in another process, by
//!   another fabric or before a finalize does not match, nor does a corrupted one);
//! - the live word still holds the handle's id (a destroyed or freed handle fails here, as in
//!   the library, with [`tca_proto::TcaError::InvalidHandle`]);
//! - the size is a non-zero multiple of 4, at most [`INLINE_MAX`], within the window.
//!
//! Every other store goes to the library's `tcaSendPIO`, which checks everything and returns
//! the error. `tcaSendPIOCommit` is a release fence while the epoch is set (a store below
//! `INLINE_MAX` bytes is never a streaming store, so x86-64 keeps it in order).
//!
//! The receiving side, `tcaWaitPIO`, polls a word of this rank's own memory. `tcaInit` also
//! publishes where that memory lies ([`tca_pio_wait_view`]: the segment, where the global
//! addresses of this rank's handles point in it, its handle table). The header's inline
//! `tcaWaitPIO` decodes the handle's wire form, finds its slot in the table, and polls the word
//! itself while the slot holds the same handle, the offset is within it and aligned, the peer
//! is a rank of the job, and the view was set under the current epoch (not when waits do not
//! spin: ranks outnumbering CPUs, `TCA_SPIN_US=0`). The value seen within
//! `TCA_PIO_WAIT_POLLS` polls returns success; every other case, and a value that does not
//! come within them, calls the library, which checks everything again and waits with the
//! timeout and the watch on the peer. The checks come before the word arrives, so they cost
//! a ping-pong nothing; the return from the library's wait did.

use crate::registry;
use std::sync::atomic::{AtomicPtr, AtomicU16, AtomicU32, AtomicU64, Ordering};
use tca_proto::PioRegion;
use tca_shm::segment::HandleSlot;

/// Non-zero while this process's shm fabric is initialised and not finalized: a value of its
/// own each time, so that a window filled under an earlier one does not match.
#[no_mangle]
pub static tca_pio_epoch: AtomicU64 = AtomicU64::new(0);

/// The largest store the header makes inline (`TCA_PIO_INLINE_MAX`): below the size from
/// which glibc's memcpy may use streaming stores, which would need a fence.
pub const INLINE_MAX: usize = 16384;
const _: () = assert!(INLINE_MAX < tca_shm::pio::STREAMED_FROM);

/// The part of `tcaPIOHandle` after the window's wire form (`direct` in the header).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DirectPio {
    base: *mut u8,
    live: *const AtomicU32,
    len: u64,
    id: u32,
    reserved: u32,
    check: u64,
}

impl DirectPio {
    /// What makes every store go to the library.
    pub const NONE: DirectPio =
        DirectPio { base: std::ptr::null_mut(), live: std::ptr::null(), len: 0, id: 0, reserved: 0, check: 0 };

    /// For window `r`, checked by the fabric: where its stores go, or [`DirectPio::NONE`].
    pub(crate) fn of(r: &PioRegion) -> DirectPio {
        let epoch = tca_pio_epoch.load(Ordering::Acquire);
        let Some(fabric) = registry::process_fabric().filter(|_| epoch != 0) else {
            return DirectPio::NONE;
        };
        let Some(d) = fabric.pio_direct(r) else {
            return DirectPio::NONE;
        };
        let mut out = DirectPio { base: d.base, live: d.live, len: r.len, id: d.id, reserved: 0, check: 0 };
        out.check = out.expected_check(epoch);
        out
    }

    /// The header's formula: the epoch and every field, XORed.
    fn expected_check(&self, epoch: u64) -> u64 {
        epoch ^ self.base as u64 ^ self.live as u64 ^ self.len ^ (u64::from(self.id) << 32)
    }
}

/// This rank's memory as the header's inline `tcaWaitPIO` reads it (`tcaPIOWaitView`): a copy
/// of [`tca_shm::pio::WaitView`], valid while `epoch` equals [`tca_pio_epoch`]. Written once,
/// before the epoch is published.
#[repr(C)]
#[derive(Debug)]
pub struct WaitView {
    /// The [`tca_pio_epoch`] the view was set under; 0 when it never was.
    pub epoch: AtomicU64,
    /// This rank's segment in this process.
    pub base: AtomicPtr<u8>,
    /// The global address of `base`.
    pub origin: AtomicU64,
    /// Bytes of the segment before its heap.
    pub heap: AtomicU64,
    /// Bytes of the segment.
    pub len: AtomicU64,
    /// The segment's handle table.
    pub slots: AtomicPtr<HandleSlot>,
    /// Slots of the table, less one.
    pub slot_mask: AtomicU32,
    /// This rank.
    pub node: AtomicU16,
    /// Ranks of the job.
    pub nodes: AtomicU16,
}

/// The view of this process's rank; `epoch` 0 (never inline) until `tcaInit` on the shm
/// fabric, and where waits do not spin.
#[no_mangle]
pub static tca_pio_wait_view: WaitView = WaitView {
    epoch: AtomicU64::new(0),
    base: AtomicPtr::new(std::ptr::null_mut()),
    origin: AtomicU64::new(0),
    heap: AtomicU64::new(0),
    len: AtomicU64::new(0),
    slots: AtomicPtr::new(std::ptr::null_mut()),
    slot_mask: AtomicU32::new(0),
    node: AtomicU16::new(0),
    nodes: AtomicU16::new(0),
};

/// The process's shm fabric joined the job: windows opened from now on may be stored inline,
/// waits on this rank's memory and its notifications may poll inline, and channels may be
/// started and waited for inline.
pub(crate) fn open() {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let epoch = (nanos ^ u64::from(std::process::id()) << 40) | 1;
    if let Some(v) = registry::process_fabric().and_then(|f| f.notify_view()) {
        crate::dma_direct::fill(&v, epoch);
    }
    if let Some(v) = registry::process_fabric().and_then(|f| f.start_view()) {
        crate::dma_direct::fill_start(&v, epoch);
    }
    if let Some(v) = registry::process_fabric().and_then(|f| f.wait_view()) {
        let w = &tca_pio_wait_view;
        w.base.store(v.base, Ordering::Relaxed);
        w.origin.store(v.origin, Ordering::Relaxed);
        w.heap.store(v.heap, Ordering::Relaxed);
        w.len.store(v.len, Ordering::Relaxed);
        w.slots.store(v.slots.cast_mut(), Ordering::Relaxed);
        w.slot_mask.store(v.slot_mask, Ordering::Relaxed);
        w.node.store(v.node, Ordering::Relaxed);
        w.nodes.store(v.nodes, Ordering::Relaxed);
        w.epoch.store(epoch, Ordering::Relaxed);
    }
    tca_pio_epoch.store(epoch, Ordering::Release);
}

/// The process's shm fabric leaves the job: every store goes to the library, which refuses it.
pub(crate) fn close() {
    tca_pio_epoch.store(0, Ordering::Release);
}
