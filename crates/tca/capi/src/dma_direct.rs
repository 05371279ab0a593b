//! Waits for a DMA notification without a library call: what `tca-api.h`'s inline
//! `tcaWaitDMARecvDesc` reads.
//!
//! On the shm fabric a notification is one entry of a ring in the receiver's segment, one ring
//! per sending node (`tca_shm::ring`), as on PEACH2 it is a status word written into the
//! receiver's memory when a DMA completes (seed 000 §4.2.2). A library call costs more than
//! the look at that entry, so `tcaInit` also publishes where this rank's rings lie
//! ([`tca_dma_wait_view`]), under the same epoch as the PIO views ([`crate::pio_direct`]).
//! The header's inline wait takes the notification itself when:
//! - the view was set under the current epoch (not when waits do not spin: ranks
//!   outnumbering CPUs, `TCA_SPIN_US=0`);
//! - the handle's wire form is one the library accepts, of another rank of the job, and the
//!   slot is in range;
//! - the engine holds no notification that arrived earlier (a wait of another thread may have
//!   moved some from the rings into it);
//! - the entry at the front of the sender's ring is the one waited for: it takes it with a
//!   compare-and-swap on the ring's position, as the library does.
//!
//! It announces a spinning waiter for the sender first, as the library's wait does, so that
//! the sender offers it a share of a large write (`tca_shm::shared_copy`), and calls the
//! library as soon as a share is offered. Every other case, and a notification that has not
//! come within `TCA_PIO_WAIT_POLLS` polls, calls the library, which checks everything and waits
//! with the timeout and the watch on the sender.

use std::sync::atomic::{AtomicPtr, AtomicU16, AtomicU32, AtomicU64, Ordering};
use tca_shm::dma::NotifyView;

/// This rank's notification rings as the header reads them (`tcaDMAWaitView`): a copy of
/// [`NotifyView`], valid while `epoch` equals [`crate::pio_direct::tca_pio_epoch`]. Written
/// once, before the epoch is published.
#[repr(C)]
#[derive(Debug)]
pub struct DmaWaitView {
    /// The epoch the view was set under; 0 when it never was.
    pub epoch: AtomicU64,
    /// The ring from node 0.
    pub rings: AtomicPtr<u8>,
    /// Bytes from one ring to the next.
    pub ring_bytes: AtomicU64,
    /// Entries of a ring (a power of two).
    pub ring_slots: AtomicU32,
    /// Bytes from a ring's start (its position, a `u32`) to its first entry.
    pub entries: AtomicU32,
    /// Non-zero while the engine holds notifications.
    pub held: AtomicPtr<AtomicU32>,
    /// Where a spinning waiter announces its sender (`node + 1`).
    pub helper: AtomicPtr<AtomicU32>,
    /// The share slot of node 0 (its state a `u32`, 1 for an offer).
    pub shares: AtomicPtr<u8>,
    /// Bytes from one share slot to the next.
    pub share_bytes: AtomicU64,
    /// This rank.
    pub node: AtomicU16,
    /// Ranks of the job.
    pub nodes: AtomicU16,
}

/// The view of this process's rank; `epoch` 0 (never inline) until `tcaInit` on the shm
/// fabric, and where waits do not spin.
#[no_mangle]
pub static tca_dma_wait_view: DmaWaitView = DmaWaitView {
    epoch: AtomicU64::new(0),
    rings: AtomicPtr::new(std::ptr::null_mut()),
    ring_bytes: AtomicU64::new(0),
    ring_slots: AtomicU32::new(0),
    entries: AtomicU32::new(0),
    held: AtomicPtr::new(std::ptr::null_mut()),
    helper: AtomicPtr::new(std::ptr::null_mut()),
    shares: AtomicPtr::new(std::ptr::null_mut()),
    share_bytes: AtomicU64::new(0),
    node: AtomicU16::new(0),
    nodes: AtomicU16::new(0),
};

/// Fills the view from `v` under `epoch` (before the epoch is published).
pub(crate) fn fill(v: &NotifyView, epoch: u64) {
    let w = &tca_dma_wait_view;
    w.rings.store(v.rings, Ordering::Relaxed);
    w.ring_bytes.store(v.ring_bytes, Ordering::Relaxed);
    w.ring_slots.store(v.ring_slots, Ordering::Relaxed);
    w.entries.store(v.entries, Ordering::Relaxed);
    w.held.store(v.held.cast_mut(), Ordering::Relaxed);
    w.helper.store(v.helper.cast_mut(), Ordering::Relaxed);
    w.shares.store(v.shares.cast_mut(), Ordering::Relaxed);
    w.share_bytes.store(v.share_bytes, Ordering::Relaxed);
    w.node.store(v.node, Ordering::Relaxed);
    w.nodes.store(v.nodes, Ordering::Relaxed);
    w.epoch.store(epoch, Ordering::Relaxed);
}
