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

use crate::registry;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use tca_proto::PioRegion;

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

/// The process's shm fabric joined the job: windows opened from now on may be stored inline.
pub(crate) fn open() {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let epoch = (nanos ^ u64::from(std::process::id()) << 40) | 1;
    tca_pio_epoch.store(epoch, Ordering::Release);
}

/// The process's shm fabric leaves the job: every store goes to the library, which refuses it.
pub(crate) fn close() {
    tca_pio_epoch.store(0, Ordering::Release);
}
