//! DMA without a library call: what `tca-api.h`'s inline `tcaWaitDMARecvDesc`,
//! `tcaStartDMADesc` and `tcaWaitDMAC` read.
//!
//! ## Waiting for a notification
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
//!
//! ## Starting a channel, and waiting for its run
//!
//! A chain of one write, kicked again unchanged, is repeated by the library without the engine
//! (`tca_shm::replay`). Its record has a part the header reads ([`tca_dma_start_view`]): where
//! the bytes go in this process, the words that say both handles are live, and the
//! destination's ring. The header's inline `tcaStartDMADesc` takes the channel's claim with a
//! compare-and-swap and repeats the run itself when the record allows it (register mode, at
//! most `tca_shm::replay::HEADER_MAX` bytes, no thread of this process carrying out actions,
//! the destination not marked dead, both handles live, room in the ring): the copy, the
//! notification as a release store after it, the kick counted done, as the library's repeat
//! does. `tcaWaitDMAC` returns inline when the channel's last run was finished that way and
//! no claim is held, after the fenced look at a notified rank's sleeping waiters that every
//! DMA call makes. Everything else calls the library.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU16, AtomicU32, AtomicU64, Ordering};
use tca_proto::MAX_NODES;
use tca_shm::dma::NotifyView;
use tca_shm::replay::{Repeat, StartView};

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

/// This process's channels as the header reads them (`tcaDMAStartView`): a copy of
/// [`StartView`], valid while `epoch` equals [`crate::pio_direct::tca_pio_epoch`].
#[repr(C)]
#[derive(Debug)]
pub struct DmaStartView {
    /// The epoch the view was set under; 0 when it never was.
    pub epoch: AtomicU64,
    /// The channels' records (`tcaDMARepeat`).
    pub repeats: AtomicPtr<Repeat>,
    /// The channels' claims, one byte each.
    pub claims: AtomicPtr<AtomicBool>,
    /// The channels' kicks.
    pub kicks: AtomicPtr<AtomicU32>,
    /// The kicks whose runs a caller finished alone.
    pub finished: AtomicPtr<AtomicU32>,
    /// Threads carrying out actions.
    pub executing: AtomicPtr<AtomicU32>,
    /// Nodes marked dead, a bit each.
    pub dead: AtomicPtr<AtomicU32>,
    /// 1 + the node last notified without a fenced look at its waiters.
    pub unfenced: AtomicPtr<AtomicU32>,
    /// The producer side of the ring of node 0 (`tcaRingProducer`).
    pub producers: AtomicPtr<u8>,
    /// Bytes from one producer to the next.
    pub producer_bytes: AtomicU64,
    /// Entries of a ring.
    pub ring_slots: AtomicU32,
    /// Bytes from a ring's start to its first entry.
    pub entries: AtomicU32,
    /// Each node's count of sleeping waiters.
    pub waiters: [AtomicPtr<AtomicU32>; MAX_NODES as usize],
}

/// The view of this process's channels; `epoch` 0 (every start a library call) until `tcaInit`
/// on the shm fabric, and where the ranks outnumber the CPUs.
#[no_mangle]
pub static tca_dma_start_view: DmaStartView = DmaStartView {
    epoch: AtomicU64::new(0),
    repeats: AtomicPtr::new(std::ptr::null_mut()),
    claims: AtomicPtr::new(std::ptr::null_mut()),
    kicks: AtomicPtr::new(std::ptr::null_mut()),
    finished: AtomicPtr::new(std::ptr::null_mut()),
    executing: AtomicPtr::new(std::ptr::null_mut()),
    dead: AtomicPtr::new(std::ptr::null_mut()),
    unfenced: AtomicPtr::new(std::ptr::null_mut()),
    producers: AtomicPtr::new(std::ptr::null_mut()),
    producer_bytes: AtomicU64::new(0),
    ring_slots: AtomicU32::new(0),
    entries: AtomicU32::new(0),
    waiters: [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_NODES as usize],
};

/// Fills the start view from `v` under `epoch` (before the epoch is published).
pub(crate) fn fill_start(v: &StartView, epoch: u64) {
    let w = &tca_dma_start_view;
    w.repeats.store(v.repeats.cast_mut(), Ordering::Relaxed);
    w.claims.store(v.claims.cast_mut(), Ordering::Relaxed);
    w.kicks.store(v.kicks.cast_mut(), Ordering::Relaxed);
    w.finished.store(v.finished.cast_mut(), Ordering::Relaxed);
    w.executing.store(v.executing.cast_mut(), Ordering::Relaxed);
    w.dead.store(v.dead.cast_mut(), Ordering::Relaxed);
    w.unfenced.store(v.unfenced.cast_mut(), Ordering::Relaxed);
    w.producers.store(v.producers.cast_mut(), Ordering::Relaxed);
    w.producer_bytes.store(v.producer_bytes, Ordering::Relaxed);
    w.ring_slots.store(v.ring_slots, Ordering::Relaxed);
    w.entries.store(v.entries, Ordering::Relaxed);
    for (to, from) in w.waiters.iter().zip(v.waiters) {
        to.store(from.cast_mut(), Ordering::Relaxed);
    }
    w.epoch.store(epoch, Ordering::Relaxed);
}

/// Drops the run kept for `channel` of this process: its next start asks the library. Called
/// where the library answers starts with an error the header's inline start does not know
/// of: a channel whose chain was emptied ([`crate::desc_table`]), or taken by the collective
/// library ([`crate::coll_guard`]).
pub(crate) fn forget_kept_run(channel: usize) {
    if let (Some(f), Ok(channel)) = (crate::registry::process_fabric(), u8::try_from(channel)) {
        f.forget_repeat(channel);
    }
}

/// Wakes the sleeping waiters of `node`: the header's inline start notified it and saw one
/// (not part of the published API).
#[no_mangle]
pub extern "C-unwind" fn tca_dma_wake(node: std::ffi::c_int) {
    if let (Some(f), Ok(node)) = (crate::registry::process_fabric(), u16::try_from(node)) {
        f.wake(node);
    }
}
