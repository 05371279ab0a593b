//! DMA of one rank (`tcaDescSet`, `tcaStartDMADesc`, `tcaWaitDMAC`, `tcaWaitDMARecvDesc`): a
//! chain set on one of four channels is run by the process's DMA engine thread, or by the
//! caller itself when the chain is short and the thread sleeps. In chaining mode the 32-byte
//! hardware descriptors are written into a table in this rank's segment, which the executor
//! fetches entry by entry while it runs the chain.

use crate::fabric::{lock, Inner};
use crate::replay::Claim;
use crate::ring::{encode_notify, Ring, RING_SLOTS};
use crate::segment::Segment;
use crate::wait::{WaitFor, Watch};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use tca_proto::descriptor::DESCRIPTOR_BYTES;
use tca_proto::engine::NOTIFY_SLOTS;
use tca_proto::{Desc, DescEntry, DmaMode, Engine, Handle, TcaError, TcaResult, WaitStatus};

/// Largest chain \[bytes\] the caller of `tcaStartDMADesc` carries out itself when the engine
/// thread sleeps (waking the thread would cost more than the copies).
pub const INLINE_BYTES: u64 = 64 * 1024;

impl Inner {
    /// Every handle of the entries is live in its owner's table and inside its heap.
    fn check_entries(&self, entries: &[DescEntry]) -> TcaResult<()> {
        for e in entries {
            for h in [&e.dst, &e.src] {
                if h.node >= self.cfg.size {
                    return Err(TcaError::InvalidNode);
                }
                self.live_ptr(h)?;
            }
        }
        Ok(())
    }

    /// Registers a descriptor chain on a channel (`tcaDescSet`). While the channel's previous
    /// run is in flight it first waits for the run to end, as `tcaWaitDMAC` does (programs of
    /// the published API set a new chain right after a start and expect success).
    ///
    /// # Errors
    /// What [`tca_proto::Engine::set_chain`] rejects; [`TcaError::InvalidHandle`] when a
    /// handle is not live or not inside its node's heap; [`TcaError::OutOfMemory`] when the
    /// descriptor table does not fit; [`TcaError::Timeout`] when the run does not end in time.
    pub(crate) fn desc_set(&self, channel: u8, desc: &Desc) -> TcaResult<()> {
        self.check_live()?;
        desc.check_runnable()?;
        self.check_entries(desc.entries())?;
        let table = if desc.mode() == DmaMode::Chaining {
            let bytes = (desc.len() * DESCRIPTOR_BYTES) as u64;
            Some((self.alloc(bytes)?, desc.len()))
        } else {
            None
        };
        loop {
            let mut tables = lock(&self.tables);
            let result = self.try_set(&mut lock(&self.engine), channel, desc);
            if result == Err(TcaError::ChannelBusy) {
                drop(tables);
                // Another kick may come between the wait and the next try: wait again then.
                if let Err(e) = self.wait_channel_free(channel) {
                    if let Some((off, _)) = table {
                        self.release(&mut lock(&self.heap), off);
                    }
                    return Err(e);
                }
                continue;
            }
            if let Err(e) = result {
                if let Some((off, _)) = table {
                    self.release(&mut lock(&self.heap), off);
                }
                return Err(e);
            }
            let bytes = desc.entries().iter().map(DescEntry::bytes).sum::<u64>();
            self.chain_bytes[channel as usize].store(bytes, Ordering::Relaxed);
            if let Some((old, _)) = std::mem::replace(&mut tables[channel as usize], table) {
                self.release(&mut lock(&self.heap), old);
            }
            if let Some((off, _)) = table {
                let base = self.own().base().wrapping_add(off as usize);
                for (i, d) in desc.hardware_descriptors().enumerate() {
                    let mut buf = [0u8; DESCRIPTOR_BYTES];
                    d.encode(&mut buf);
                    // SAFETY: the table block holds len * 32 bytes of this segment.
                    unsafe {
                        std::ptr::copy_nonoverlapping(buf.as_ptr(), base.add(i * DESCRIPTOR_BYTES), DESCRIPTOR_BYTES)
                    };
                }
            }
            return Ok(());
        }
    }

    /// Sets the chain unless the channel runs (in the engine, or carried out by a caller), and
    /// drops the run kept for repeats ([`crate::replay`]).
    fn try_set(&self, e: &mut Engine, channel: u8, desc: &Desc) -> TcaResult<()> {
        let mut claim = self.claim(channel)?;
        claim.forget();
        e.set_chain(channel, desc)
    }

    /// Waits until `channel` has no run in flight: done, failed (the new chain replaces it;
    /// `tcaWaitDMAC` reports the failure until the next start) or never started.
    ///
    /// # Errors
    /// [`TcaError::Timeout`] as for `tcaWaitDMAC`.
    fn wait_channel_free(&self, channel: u8) -> TcaResult<()> {
        let running = |e: &mut Engine| matches!(e.wait_dma_channel(channel), Ok(WaitStatus::Pending));
        let what = WaitFor { watch: Watch::Everyone, cheap: false, engine_reports: true };
        self.with_caller_work(|work| {
            self.wait(what, |inner| {
                let (busy, any) = inner.progress_with(work, running);
                Ok(!busy || (any && !running(&mut lock(&inner.engine))))
            })
        })?;
        self.wait_carried(channel);
        Ok(())
    }

    /// Kicks a channel (`tcaStartDMADesc`) after checking that every handle of its chain is
    /// still live: an owner may have destroyed or freed one since `tcaDescSet`. A run still in
    /// flight is waited for first.
    ///
    /// # Errors
    /// [`TcaError::InvalidHandle`] for a handle destroyed or freed since; [`TcaError::Timeout`]
    /// as for `tcaWaitDMAC`; what [`tca_proto::Engine::handle_start`] rejects.
    pub(crate) fn start_dma(&self, channel: u8) -> TcaResult<()> {
        self.check_live()?;
        self.settle_notify();
        if self.replay(channel) {
            return Ok(());
        }
        // A start while the previous run is still in flight (no tcaWaitDMAC between them: the
        // engine thread carries it out, or it waits for a peer's driver) waits for that run,
        // as tcaDescSet does and as the simulator does.
        match self.start_now(channel) {
            Err(TcaError::ChannelBusy) => {
                self.wait_channel_free(channel)?;
                self.start_now(channel)
            }
            started => started,
        }
    }

    /// [`Inner::start_dma`] without the wait for a run in flight.
    fn start_now(&self, channel: u8) -> TcaResult<()> {
        let bytes = self.chain_bytes.get(channel as usize).map_or(0, |b| b.load(Ordering::Relaxed));
        // The caller carries the chain out itself when no other thread is carrying actions
        // out: always for a short chain (a hand-off costs more than the copies), and for any
        // chain when the engine thread has no CPU of its own. The kick and the taking of its
        // first actions are one hold of the engine lock. Otherwise the engine thread does.
        if (bytes <= INLINE_BYTES || self.no_free_cpu) && self.executing.load(Ordering::Relaxed) == 0 {
            return self.start_by_caller(channel);
        }
        self.kick(&mut lock(&self.engine), channel)?;
        let h = self.own().header();
        Segment::ring_bell(&h.engine_bell.0, &h.engine_waiters.0);
        Ok(())
    }

    /// The kick itself, after checking that every handle of the chain is still live: an owner
    /// may have destroyed or freed one since `tcaDescSet`.
    pub(crate) fn kick(&self, e: &mut Engine, channel: u8) -> TcaResult<()> {
        self.kick_with(e, channel, Engine::handle_start).map(|_| ())
    }

    /// [`Inner::kick`] by `start` ([`Engine::handle_start`] or [`Engine::start_posted`]),
    /// under the channel's claim, which it returns; the run kept for repeats is dropped.
    #[inline]
    pub(crate) fn kick_with<T>(
        &self,
        e: &mut Engine,
        channel: u8,
        start: impl FnOnce(&mut Engine, u8) -> TcaResult<T>,
    ) -> TcaResult<(T, Claim<'_>)> {
        let mut claim = self.claim(channel)?;
        claim.forget();
        if let Some(chain) = e.chain(channel)? {
            for h in chain.entries().iter().flat_map(|x| [&x.dst, &x.src]) {
                self.check_still_live(h)?;
            }
        }
        let started = start(e, channel)?;
        let kicks = &self.kicks[channel as usize];
        kicks.store(kicks.load(Ordering::Relaxed).wrapping_add(1), Ordering::Release);
        Ok((started, claim))
    }

    /// A handle that passed [`Inner::desc_set`]'s checks is still live in its owner's table.
    fn check_still_live(&self, h: &Handle) -> TcaResult<()> {
        match self.segs.get(h.node as usize) {
            Some(seg) if seg.is_live(h) => Ok(()),
            _ => Err(TcaError::InvalidHandle),
        }
    }

    /// Waits until a channel's run is over (`tcaWaitDMAC`).
    ///
    /// # Errors
    /// [`TcaError::InvalidChannel`]; the run's error ([`TcaError::PeerDead`], a proxy
    /// read's refusal); [`TcaError::Timeout`].
    pub(crate) fn wait_dmac(&self, channel: u8) -> TcaResult<()> {
        self.check_live()?;
        self.settle_notify();
        // An invalid channel is the engine's error below.
        let none = AtomicI32::new(0);
        let failed = self.failed_alone.get(channel as usize).unwrap_or(&none);
        if self.finished_alone_last(channel) && failed.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        // A chain may read from or write to any rank (proxy reads wait for the source).
        let what = WaitFor { watch: Watch::Everyone, cheap: false, engine_reports: true };
        let r = self.with_caller_work(|work| {
            self.wait(what, |inner| {
                // Asked before and, when there was something to carry out, after this round.
                let (status, any) = inner.progress_with(work, |e| e.wait_dma_channel(channel));
                if status? == WaitStatus::Ready {
                    return Ok(true);
                }
                Ok(any && lock(&inner.engine).wait_dma_channel(channel)? == WaitStatus::Ready)
            })
        });
        // The engine counts a run done before a caller carrying it out alone has written it.
        if r.is_ok() {
            self.wait_carried(channel);
        }
        // A failure kept for this wait ends with it, as the wait's error: it tells of an earlier
        // run whose bytes were not all written, which an error of the wait itself would hide.
        let kept = match failed.load(Ordering::Acquire) {
            0 => None,
            _ => TcaError::from_code(failed.swap(0, Ordering::AcqRel)),
        };
        kept.map_or(r, Err)
    }

    /// Waits for and consumes one notification (slot, tag) from `h.node`
    /// (`tcaWaitDMARecvDesc`). Only the node of `h` matters: its owner may have destroyed it.
    ///
    /// # Errors
    /// What [`tca_proto::Engine::wait_dma_recv`] rejects; [`TcaError::PeerDead`] when the
    /// sender died (or finished) without sending it; [`TcaError::Timeout`].
    pub(crate) fn wait_dma_recv(&self, h: &Handle, slot: u32, tag: u32) -> TcaResult<()> {
        self.check_live()?;
        h.validate()?;
        if h.node >= self.cfg.size {
            return Err(TcaError::InvalidNode);
        }
        // Announced first: the sender may be about to copy a large write to this rank, which
        // a spinning wait shares (crate::shared_copy).
        let helping = if self.policy.spin.is_zero() { None } else { self.help(h.node) };
        self.settle_notify();
        let watch = if h.node == self.cfg.rank { Watch::Nobody } else { Watch::Peer(h.node) };
        // While spinning, only two lines of this process are polled: the ring from h.node
        // (the sender does not ring the doorbell of a spinning waiter) and the doorbell (for
        // everything else: a notification to self, a failed channel). `drained` catches a
        // notification another thread of this process moved into the engine.
        let own = self.own();
        let ring = own.ring(h.node);
        let bell = &own.header().app_bell.0;
        let mut seen = None;
        // The notification waited for, as its ring entry (an invalid slot takes the engine's
        // path, which rejects it).
        let wanted = u16::try_from(slot).ok().filter(|s| *s < NOTIFY_SLOTS).map(|s| encode_notify(s, tag));
        self.with_caller_work(|work| {
            self.wait_helping(WaitFor { watch, cheap: true, engine_reports: true }, helping, |inner| {
                // At the front of its ring, it is taken there: counting it into the engine's
                // table of arrivals and out again would answer the same.
                if wanted.is_some_and(|v| ring.take_front_if(v)) {
                    return Ok(true);
                }
                let now = (bell.load(Ordering::Acquire), inner.drained.load(Ordering::Acquire));
                if ring.is_empty() && seen == Some(now) {
                    return Ok(false);
                }
                seen = Some(now);
                let (status, _) = inner.progress_with(work, |e| {
                    inner.drain_notifications(e);
                    let status = e.wait_dma_recv(h, slot, tag);
                    inner.note_held(e);
                    status
                });
                Ok(status? == WaitStatus::Ready)
            })
        })
    }
}

/// This rank's notification rings as a caller that waits without a call reads them (the C
/// header's inline `tcaWaitDMARecvDesc`), with what a spinning waiter announces
/// ([`crate::shared_copy`]). The ring from node `n` starts `n * ring_bytes` after `rings`: its
/// consumer position (`u32`, [`crate::ring::Ring::tail`]) first, its entries `entries` bytes in.
#[derive(Debug, Clone, Copy)]
pub struct NotifyView {
    /// The ring from node 0.
    pub rings: *mut u8,
    /// Bytes from one ring to the next.
    pub ring_bytes: u64,
    /// Entries of a ring ([`crate::ring::RING_SLOTS`]).
    pub ring_slots: u32,
    /// Bytes from a ring's start to its first entry.
    pub entries: u32,
    /// The engine holds notifications ([`Inner::held`]): the wait must ask it.
    pub held: *const AtomicU32,
    /// Where a waiter announces the node it spins for (`node + 1`).
    pub helper: *const AtomicU32,
    /// The share slot of node `n` starts `n * share_bytes` after `shares`; its state (`u32`)
    /// first, 1 while `n` offers a share of a large write ([`crate::shared_copy::CopyShare`]).
    pub shares: *const u8,
    /// Bytes from one share slot to the next.
    pub share_bytes: u64,
    /// This rank.
    pub node: u16,
    /// Ranks of the job.
    pub nodes: u16,
}

impl Inner {
    /// Where a waiter without a call finds this rank's notification rings; `None` as for
    /// [`Inner::wait_view`].
    pub(crate) fn notify_view(&self) -> Option<NotifyView> {
        if self.policy.oversubscribed || self.policy.spin.is_zero() || self.check_live().is_err() {
            return None;
        }
        let own = self.own();
        let ring0: *const Ring = own.ring(0);
        let h = own.header();
        Some(NotifyView {
            rings: ring0.cast_mut().cast(),
            ring_bytes: std::mem::size_of::<Ring>() as u64,
            ring_slots: RING_SLOTS as u32,
            entries: std::mem::offset_of!(Ring, slots) as u32,
            held: &self.held,
            helper: &h.helper.0,
            shares: (&raw const h.shares).cast(),
            share_bytes: std::mem::size_of::<crate::shared_copy::CopyShare>() as u64,
            node: self.cfg.rank,
            nodes: self.cfg.size,
        })
    }
}
