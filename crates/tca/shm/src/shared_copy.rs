//! A large write copied by two CPUs: the writer's, and that of a thread of the destination rank
//! spinning in a wait for the writer.
//!
//! A single thread copies at most at one core's bandwidth, and a waiting receiver's CPU only
//! polls. So when the destination announces a spinning waiter for this rank
//! ([`crate::segment::Header::helper`]) and the write is at least [`SHARE_MIN`] bytes, the
//! writer offers the tail in the destination's share slot for this rank ([`CopyShare`], in the
//! destination's header), copies the head, then either takes the offer back (nobody took it)
//! and copies the tail too, or waits until the waiter has copied it. The write is reported, and
//! its notification written, only after both parts: a receiver still sees the notification
//! after all the data. The split starts at half and follows how late the waiter starts
//! ([`Split`]); the parts are nearly the same bytes of the buffer each time, so in a ping-pong
//! each CPU keeps writing the cache lines it wrote the time before.
//!
//! The waiter takes an offer with one compare-and-swap, checks that both ranges lie inside the
//! heaps (a peer's slot is not trusted) and refuses it otherwise; the writer then copies the
//! tail itself. A write is never reported while a waiter may still copy into its destination:
//! a writer whose waiter dies mid-copy fails the write with `PeerDead`, and one whose waiter
//! does not finish within the timeout (a stopped or starved process) fails it with `Timeout`,
//! without a notification. The share stays taken and is marked abandoned; every later write of
//! this rank to that peer first waits for it to end, and fails the same way while it has not,
//! so that the late copy cannot overwrite a write reported since.

use crate::fabric::Inner;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};
use tca_proto::{TcaError, TcaResult, Write};

/// Smallest write \[bytes\] whose copy is shared with a waiting receiver: below it the offer
/// and the wait for the other half cost more than half the copy.
pub const SHARE_MIN: u64 = 32 * 1024;

/// Where a shared write is split, per size class of a destination: the writer copies the
/// first `part / 64` of it. It starts at half and moves by 1/64 after each write offered
/// toward the point where both copies end together: up when the waiter was still copying as
/// the writer finished its part (or had not taken the offer), down when it had finished first;
/// a share that fails or is refused leaves it. A receiver sees the offer some time
/// after it is made, so an even split leaves the writer waiting; moving the boundary a line at
/// a time keeps nearly every cache line with the CPU that wrote it the time before.
#[derive(Debug)]
pub struct Split([AtomicU8; SPLIT_CLASSES]);

/// Size classes of [`Split`]: 32-64 KiB, 64-128 KiB, ..., and 4 MiB up.
const SPLIT_CLASSES: usize = 8;

/// Writes from this size on stay split in halves. The waiter's late start is small against
/// their copy, so the split would only wander around half, and each step away from it leaves
/// one CPU copying longer than the other. With the split moving there, runs O-S of
/// docs/shm-fabric.md missed the 4 MiB goal twice in five; runs G-L and N before it met it.
const HALVES_FROM: u64 = 1 << 20;

impl Default for Split {
    fn default() -> Self {
        Split(std::array::from_fn(|_| AtomicU8::new(32)))
    }
}

impl Split {
    fn class(&self, len: u64) -> &AtomicU8 {
        let class = (63 - len.leading_zeros() as usize).saturating_sub(15).min(SPLIT_CLASSES - 1);
        &self.0[class]
    }

    /// Bytes of the head of a `len`-byte write the writer copies, a multiple of 64.
    fn head(&self, len: u64) -> u64 {
        (len * u64::from(self.class(len).load(Ordering::Relaxed)) / 64) & !63
    }

    /// After a write of `len` bytes: a step toward the writer (the waiter was still copying
    /// when the writer finished its part, or did not take the offer in that time), else toward
    /// the waiter (it had finished first).
    fn adjust(&self, len: u64, toward_writer: bool) {
        if len >= HALVES_FROM {
            return;
        }
        let part = self.class(len);
        let p = part.load(Ordering::Relaxed);
        part.store(if toward_writer { (p + 1).min(56) } else { p.saturating_sub(1).max(8) }, Ordering::Relaxed);
    }
}

/// States of a [`CopyShare`].
mod state {
    /// No offer.
    pub const IDLE: u32 = 0;
    /// The writer offers the range; a waiter may take it.
    pub const OFFERED: u32 = 1;
    /// A waiter copies the range.
    pub const TAKEN: u32 = 2;
    /// The waiter has copied the range.
    pub const COPIED: u32 = 3;
    /// The waiter found the range outside the heaps and copied nothing.
    pub const REFUSED: u32 = 4;
}

/// The part of a write from one node that the destination's waiter may copy: global
/// addresses of the source (on the writer's node) and of the destination (on the owner's).
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub struct CopyShare {
    state: AtomicU32,
    src: AtomicU64,
    dst: AtomicU64,
    len: AtomicU64,
}

// A waiter without a call (the C header's inline `tcaWaitDMARecvDesc`) reads the state as the
// first `u32` of a share slot, and 1 as an offer (crate::dma::NotifyView).
const _: () = assert!(std::mem::offset_of!(CopyShare, state) == 0 && state::OFFERED == 1);

/// Clears the waiter's announcement when its wait ends, however it ends.
pub(crate) struct Helping<'a> {
    inner: &'a Inner,
    peer: u16,
}

impl Helping<'_> {
    /// Copies the share `peer` offers, if any.
    pub(crate) fn poll(&self) {
        self.inner.take_share(self.peer);
    }
}

impl Drop for Helping<'_> {
    fn drop(&mut self) {
        self.inner.own().header().helper.0.store(0, Ordering::Relaxed);
    }
}

impl Inner {
    /// Announces a waiter spinning for `peer` (another rank): it may offer a share of its
    /// large writes to this rank until the returned guard is dropped. A plain store: with
    /// several waiting threads the last announcement stands, which only decides who is offered.
    pub(crate) fn help(&self, peer: u16) -> Option<Helping<'_>> {
        if peer == self.cfg.rank || peer >= self.cfg.size {
            return None;
        }
        self.own().header().helper.0.store(u32::from(peer) + 1, Ordering::Relaxed);
        Some(Helping { inner: self, peer })
    }

    /// Copies the range `peer` offers in this rank's share slot, if it offers one.
    fn take_share(&self, peer: u16) {
        let share = &self.own().header().shares[peer as usize];
        if share.state.load(Ordering::Relaxed) != state::OFFERED
            || share.state.compare_exchange(state::OFFERED, state::TAKEN, Ordering::Acquire, Ordering::Relaxed).is_err()
        {
            return;
        }
        let len = share.len.load(Ordering::Relaxed);
        let src = self.ptr(peer, share.src.load(Ordering::Relaxed), len);
        let dst = self.ptr(self.cfg.rank, share.dst.load(Ordering::Relaxed), len);
        let done = match (src, dst) {
            (Some(s), Some(d)) => {
                // SAFETY: both ranges lie inside mapped heaps (checked by `ptr`); the writer
                // copies only the other part while the share is taken.
                unsafe { std::ptr::copy(s, d, len as usize) };
                state::COPIED
            }
            _ => state::REFUSED,
        };
        // The writer waits for this store: count the share only after it.
        share.state.store(done, Ordering::Release);
        if done == state::COPIED {
            self.shares_copied.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Before a write of this rank to `peer`: waits for a share `peer`'s waiter took and this
    /// rank gave up on ([`Inner::abandoned`]) to end; the error of the wait while it has not.
    /// One process-local load when there is none.
    pub(crate) fn settle_abandoned(&self, peer: u16) -> TcaResult<()> {
        let Some(flag) = self.abandoned.get(peer as usize).filter(|f| f.load(Ordering::Acquire)) else {
            return Ok(());
        };
        let share = &self.segs[peer as usize].header().shares[self.cfg.rank as usize];
        match self.wait_share(share, peer) {
            ShareEnd::Copied | ShareEnd::Refused => {
                share.state.store(state::IDLE, Ordering::Relaxed);
                flag.store(false, Ordering::Release);
                Ok(())
            }
            ShareEnd::TimedOut => Err(TcaError::Timeout),
            ShareEnd::PeerDead => Err(TcaError::PeerDead),
        }
    }

    /// Copies `w` (from `src` to `dst`, both checked) sharing it with the destination's
    /// waiting thread when there is one; `None` when the write is not shared (the caller copies
    /// it all), else whether it was copied whole.
    pub(crate) fn copy_shared(&self, w: &Write, src: *const u8, dst: *mut u8) -> Option<TcaResult<()>> {
        let (me, peer) = (self.cfg.rank, w.dst_node);
        if w.len < SHARE_MIN || w.src_node != me || peer == me {
            return None;
        }
        let seg = self.segs.get(peer as usize)?;
        let header = seg.header();
        if header.helper.0.load(Ordering::Relaxed) != u32::from(me) + 1 {
            return None;
        }
        // One offer at a time per destination: another thread of this process copies alone.
        let offering = &self.offering[peer as usize];
        if offering.swap(true, Ordering::Acquire) {
            return None;
        }
        let share = &header.shares[me as usize];
        match share.state.load(Ordering::Acquire) {
            state::IDLE => {}
            // Left by a waiter that finished after this writer had given up on it.
            state::COPIED | state::REFUSED => share.state.store(state::IDLE, Ordering::Relaxed),
            // A waiter still copies an earlier share: this write is copied alone.
            _ => {
                offering.store(false, Ordering::Release);
                return None;
            }
        }
        let split = &self.splits[peer as usize];
        let head = split.head(w.len);
        let tail = w.len - head;
        share.src.store(w.src_addr + head, Ordering::Relaxed);
        share.dst.store(w.dst_addr + head, Ordering::Relaxed);
        share.len.store(tail, Ordering::Relaxed);
        share.state.store(state::OFFERED, Ordering::Release);
        // SAFETY: src and dst hold w.len bytes each (the caller checked them).
        unsafe { std::ptr::copy(src, dst, head as usize) };
        // SAFETY: as above; the waiter has not taken the tail, or has refused it.
        let copy_tail = || unsafe { std::ptr::copy(src.add(head as usize), dst.add(head as usize), tail as usize) };
        let copied =
            match share.state.compare_exchange(state::OFFERED, state::IDLE, Ordering::Acquire, Ordering::Acquire) {
                Ok(_) => {
                    // Nobody took it while the head was copied: a longer head leaves a late
                    // waiter more time next time.
                    split.adjust(w.len, true);
                    copy_tail();
                    Ok(())
                }
                Err(taken) => {
                    match self.wait_share(share, peer) {
                        ShareEnd::Copied => {
                            split.adjust(w.len, taken == state::TAKEN);
                            share.state.store(state::IDLE, Ordering::Relaxed);
                            Ok(())
                        }
                        ShareEnd::Refused => {
                            copy_tail();
                            share.state.store(state::IDLE, Ordering::Relaxed);
                            Ok(())
                        }
                        // The state stays TAKEN: the waiter may still copy into the destination,
                        // so the write fails, and later writes to this peer wait for the share
                        // first.
                        end @ (ShareEnd::TimedOut | ShareEnd::PeerDead) => {
                            self.abandoned[peer as usize].store(true, Ordering::Release);
                            self.forget_idle_repeats();
                            Err(if matches!(end, ShareEnd::TimedOut) { TcaError::Timeout } else { TcaError::PeerDead })
                        }
                    }
                }
            };
        offering.store(false, Ordering::Release);
        Some(copied)
    }

    /// Drops the runs kept for repeats on every channel no thread has claimed now: a repeat of
    /// the C header writes without [`Inner::settle_abandoned`], the library's does not. (The
    /// caller's own channel, claimed for the run that failed, drops its record itself; another
    /// thread's claim at this moment keeps its record, a race that costs at most one repeat.)
    fn forget_idle_repeats(&self) {
        for channel in 0..self.carrying.len() as u8 {
            if let Ok(mut c) = self.claim(channel) {
                c.forget();
            }
        }
    }

    /// Waits until the waiter that took `share` is done with it.
    fn wait_share(&self, share: &CopyShare, peer: u16) -> ShareEnd {
        let mut start: Option<Instant> = None;
        let mut spins = 0u32;
        loop {
            match share.state.load(Ordering::Acquire) {
                state::COPIED => return ShareEnd::Copied,
                state::REFUSED => return ShareEnd::Refused,
                _ => {}
            }
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(4096) {
                if !self.peer_alive(peer) {
                    return ShareEnd::PeerDead;
                }
                let t = start.get_or_insert_with(Instant::now);
                if t.elapsed() > self.policy.timeout.max(Duration::from_millis(1)) {
                    return ShareEnd::TimedOut;
                }
            }
            std::hint::spin_loop();
        }
    }
}

/// How the waiter's half of a shared copy ended.
enum ShareEnd {
    Copied,
    Refused,
    TimedOut,
    PeerDead,
}

#[cfg(test)]
mod tests {
    use super::Split;

    /// The writer's part starts at half, grows while the waiter is still copying when the
    /// writer is done, shrinks while it is not, stays within 8/64-56/64, is a whole number of
    /// cache lines, and is kept per size class.
    #[test]
    fn the_split_follows_the_waiter_within_bounds() {
        let s = Split::default();
        const K64: u64 = 64 << 10;
        assert_eq!(s.head(K64), K64 / 2);
        s.adjust(K64, true);
        assert_eq!(s.head(K64), K64 * 33 / 64);
        for _ in 0..100 {
            s.adjust(K64, true);
        }
        assert_eq!(s.head(K64), K64 * 56 / 64);
        assert_eq!(s.head(2 * K64), K64, "another size class is untouched");
        assert_eq!(s.head(K64 + 4096), ((K64 + 4096) * 56 / 64) & !63, "the same class up to 128 KiB");
        for _ in 0..100 {
            s.adjust(K64, false);
        }
        assert_eq!(s.head(K64), K64 * 8 / 64);
        assert_eq!(s.head((32 << 10) + 100) % 64, 0);
        assert_eq!(s.head(64 << 20), 32 << 20, "4 MiB and up share the last class");
        for _ in 0..10 {
            s.adjust(1 << 20, true);
        }
        assert_eq!(s.head(1 << 20), 1 << 19, "halves from 1 MiB up");
    }
}
