//! A channel's claim, and the repeat of its last run without the engine.
//!
//! Programs of seed 000 §4.2.2 set a chain once (register mode: the descriptor stays in the
//! controller's registers) and kick it again and again. When the protocol core took such a
//! run whole ([`Engine::start_posted`]: one write from this rank's memory, at most one
//! notification to another rank), every later kick of the unchanged chain would take the same
//! run from it. So the run is kept with the channel ([`Replay`]), and a kick carries it out
//! again without the engine lock or the core, while nothing it depends on has changed:
//! - the chain: every `tcaDescSet` of the channel, and every kick that goes through the engine,
//!   drops the record;
//! - the two handles: both still live in their owners' tables, checked at every repeat as the
//!   engine's start checks them;
//! - the destination: not marked dead;
//! - this process: no thread carrying out actions (a thread's completions are all reported
//!   when its call returns, so none waits behind a repeat).
//!
//! The core is not told of the repeats. Its channel stays done after the first run, which is
//! the state a repeat would leave it in; what differs is only the run's token, which no one
//! outside the core sees.
//!
//! The claim ([`Inner::carrying`]) is what makes the record safe without the engine lock:
//! whoever starts the channel, sets its chain or carries its run out alone holds it, taken by
//! one compare-and-swap, so the record is only read or written by its holder.
//!
//! A repeat of a write of at most [`HEADER_MAX`] bytes, its descriptor in registers or in
//! internal memory, is also made by the C header's inline `tcaStartDMADesc`, which reads the record's [`Repeat`] part (pointers
//! resolved, liveness words, the notification's ring) under the same claim and carries it out
//! as [`Inner::carry_alone`] does; docs/shm-fabric.md.

use crate::fabric::Inner;
use crate::ring::{encode_notify, Ring};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use tca_proto::{Handle, TcaError, TcaResult, Write, CHANNELS};

/// The largest write the C header repeats: below the size from which glibc's memcpy may use
/// streaming stores, which would need a fence before the notification.
pub const HEADER_MAX: u64 = 16384;
const _: () = assert!((HEADER_MAX as usize) < crate::pio::STREAMED_FROM);

/// A run taken whole, to carry out again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Replay {
    pub write: Write,
    /// (destination, slot, tag) of the notification to another rank.
    pub notify: Option<(u16, u16, u32)>,
    /// The chain's destination and source handles.
    pub handles: [Handle; 2],
    /// The descriptor is read from the channel's table first (chaining mode).
    pub fetch: bool,
}

/// The part of a kept run the C header reads (`tcaDMARepeat`), with everything resolved:
/// where the bytes go in this process, the words that say both handles are live, and the
/// destination's ring.
#[repr(C)]
#[derive(Debug)]
pub struct Repeat {
    /// 1 when the header may repeat the run; 0 when it must call the library.
    pub inline: u32,
    /// The node written to.
    pub dst_node: u32,
    /// The first byte written, in this process.
    pub dst: *mut u8,
    /// The first byte read.
    pub src: *const u8,
    /// Bytes.
    pub len: u64,
    /// The id words of the destination's and the source's handle slots.
    pub live: [*const AtomicU32; 2],
    /// The ids those words hold while the handles live.
    pub id: [u32; 2],
    /// The destination's ring for this rank's notifications; null for none.
    pub ring: *mut u8,
    /// The notification's ring entry (below its lap).
    pub notify: u64,
    /// The destination's count of sleeping waiters.
    pub waiters: *const AtomicU32,
}

impl Repeat {
    const NONE: Repeat = Repeat {
        inline: 0,
        dst_node: 0,
        dst: std::ptr::null_mut(),
        src: std::ptr::null(),
        len: 0,
        live: [std::ptr::null(); 2],
        id: [0; 2],
        ring: std::ptr::null_mut(),
        notify: 0,
        waiters: std::ptr::null(),
    };
}

/// The record of each channel; read and written only under the channel's claim.
pub struct Replays {
    runs: [UnsafeCell<Option<Replay>>; CHANNELS],
    repeats: [UnsafeCell<Repeat>; CHANNELS],
}

impl Default for Replays {
    fn default() -> Self {
        Replays { runs: Default::default(), repeats: std::array::from_fn(|_| UnsafeCell::new(Repeat::NONE)) }
    }
}

impl Replays {
    /// The channels' [`Repeat`] parts, one after the other (for the C header).
    pub fn repeats(&self) -> *const Repeat {
        self.repeats[0].get()
    }
}

// SAFETY: a record is reached only through a `Claim` of its channel, and one exists at a time;
// its pointers are into the segments, mapped as long as the fabric lives.
unsafe impl Sync for Replays {}
unsafe impl Send for Replays {}

/// The claim of one channel, given back (a release store) when dropped.
pub(crate) struct Claim<'a> {
    mark: &'a AtomicBool,
    channel: usize,
    replays: &'a Replays,
}

impl Claim<'_> {
    /// The channel's record.
    pub fn replay(&mut self) -> &mut Option<Replay> {
        // SAFETY: this claim is the only one of its channel (`Inner::claim`).
        unsafe { &mut *self.replays.runs[self.channel].get() }
    }

    /// Drops the channel's record.
    pub fn forget(&mut self) {
        *self.replay() = None;
        // SAFETY: as for `replay`.
        unsafe { (*self.replays.repeats[self.channel].get()).inline = 0 };
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.mark.store(false, Ordering::Release);
    }
}

impl Inner {
    /// Takes the claim of `channel`. [`TcaError::ChannelBusy`] while another thread holds it;
    /// [`TcaError::InvalidChannel`] (as the engine answers) for a channel out of range.
    pub(crate) fn claim(&self, channel: u8) -> TcaResult<Claim<'_>> {
        let mark = self.carrying.get(channel as usize).ok_or(TcaError::InvalidChannel)?;
        if mark.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return Err(TcaError::ChannelBusy);
        }
        Ok(Claim { mark, channel: channel as usize, replays: &self.replays })
    }

    /// Keeps `r` as the run the next kicks of the claimed channel repeat.
    pub(crate) fn keep(&self, claim: &mut Claim<'_>, r: Replay) {
        let w = &r.write;
        let resolved = (self.ptr(w.dst_node, w.dst_addr, w.len), self.ptr(w.src_node, w.src_addr, w.len));
        let slot = |h: &Handle| -> *const AtomicU32 { &self.segs[h.node as usize].handle_slot(h.slot()).id };
        let mut repeat = Repeat::NONE;
        if let (Some(dst), Some(src)) = resolved {
            let notify = r.notify.filter(|n| n.0 == w.dst_node);
            // Not while a failure of the channel waits for its tcaWaitDMAC: the header would
            // answer that wait itself.
            let failed = self.failed_alone[claim.channel].load(Ordering::Acquire) != 0;
            let header = !r.fetch && w.len <= HEADER_MAX && notify.is_some() == r.notify.is_some() && !failed;
            repeat = Repeat {
                inline: u32::from(header),
                dst_node: u32::from(w.dst_node),
                dst,
                src,
                len: w.len,
                live: [slot(&r.handles[0]), slot(&r.handles[1])],
                id: [r.handles[0].id, r.handles[1].id],
                ring: notify.map_or(std::ptr::null_mut(), |(d, ..)| {
                    let ring: *const Ring = self.segs[d as usize].ring(self.cfg.rank);
                    ring.cast_mut().cast()
                }),
                notify: notify.map_or(0, |(_, slot, tag)| encode_notify(slot, tag)),
                waiters: &self.segs[w.dst_node as usize].header().app_waiters.0,
            };
        }
        *claim.replay() = Some(r);
        // SAFETY: the claim is held.
        unsafe { *self.replays.repeats[claim.channel].get() = repeat };
    }

    /// Carries out the last run of `channel` again when its record allows
    /// (see the module); false when the kick must go the engine's way.
    pub(crate) fn replay(&self, channel: u8) -> bool {
        let Ok(mut claim) = self.claim(channel) else {
            return false;
        };
        let Some(r) = *claim.replay() else {
            return false;
        };
        let dst = r.write.dst_node;
        if self.executing.load(Ordering::Relaxed) != 0
            || self.dead.load(Ordering::Acquire) & (1 << dst.min(31)) != 0
            || !r.handles.iter().all(|h| self.segs[h.node as usize].is_live(h))
        {
            return false;
        }
        let kicks = &self.kicks[channel as usize];
        let kick = kicks.load(Ordering::Relaxed).wrapping_add(1);
        kicks.store(kick, Ordering::Release);
        self.carry_alone(&crate::inline::Alone::repeat(channel, kick, r), Some(claim));
        true
    }
}

/// What the C header's inline `tcaStartDMADesc` and `tcaWaitDMAC` read of this process: the
/// channels' records, claims and kick counts, and what a repeat checks and writes besides.
#[derive(Debug, Clone, Copy)]
pub struct StartView {
    /// The channels' [`Repeat`] parts.
    pub repeats: *const Repeat,
    /// The channels' claims ([`Inner::carrying`], one byte each).
    pub claims: *const AtomicBool,
    /// The channels' kicks and the kicks whose runs a caller finished alone.
    pub kicks: *const AtomicU32,
    /// See `kicks`.
    pub finished: *const AtomicU32,
    /// Threads carrying out actions ([`Inner::executing`]).
    pub executing: *const AtomicU32,
    /// Nodes marked dead ([`Inner::dead`]).
    pub dead: *const AtomicU32,
    /// 1 + the node last notified without a fenced look at its waiters ([`Inner::unfenced`]).
    pub unfenced: *const AtomicU32,
    /// The producer lock and position of the ring of node `n` lie `n * producer_bytes` after
    /// `producers` (`crate::store_lock::StoreLock<crate::ring::Producer>`).
    pub producers: *const u8,
    /// See `producers`.
    pub producer_bytes: u64,
    /// Entries of a ring ([`crate::ring::RING_SLOTS`]), and bytes from a ring's start to its
    /// first entry.
    pub ring_slots: u32,
    /// See `ring_slots`.
    pub entries: u32,
    /// Each node's count of sleeping waiters (null beyond the job).
    pub waiters: [*const AtomicU32; tca_proto::MAX_NODES as usize],
}

impl Inner {
    /// Where the header's inline starts find this process's channels; `None` after finalize
    /// and when the ranks outnumber the CPUs (a notification must then wake a sleeper, which
    /// the library does).
    pub(crate) fn start_view(&self) -> Option<StartView> {
        if self.policy.oversubscribed || self.check_live().is_err() {
            return None;
        }
        let mut waiters = [std::ptr::null(); tca_proto::MAX_NODES as usize];
        for (w, seg) in waiters.iter_mut().zip(&self.segs) {
            *w = &seg.header().app_waiters.0;
        }
        Some(StartView {
            repeats: self.replays.repeats(),
            claims: self.carrying.as_ptr(),
            kicks: self.kicks.as_ptr(),
            finished: self.finished_alone.as_ptr(),
            executing: &self.executing,
            dead: &self.dead,
            unfenced: &self.unfenced,
            producers: self.producers.as_ptr().cast(),
            producer_bytes: std::mem::size_of::<crate::store_lock::StoreLock<crate::ring::Producer>>() as u64,
            ring_slots: crate::ring::RING_SLOTS as u32,
            entries: std::mem::offset_of!(Ring, slots) as u32,
            waiters,
        })
    }

    /// Drops the run kept for `channel` (the C ABI's table of the chain was destroyed:
    /// starts must ask the library), waiting while another thread holds the claim.
    pub(crate) fn forget_repeat(&self, channel: u8) {
        loop {
            match self.claim(channel) {
                Ok(mut c) => return c.forget(),
                Err(TcaError::ChannelBusy) => std::thread::yield_now(),
                Err(_) => return,
            }
        }
    }
}
