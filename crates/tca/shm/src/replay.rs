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
//! - this process: no other thread carrying out actions, and no completion of this thread
//!   waiting to be reported to the engine (the repeat would hold it back).
//!
//! The core is not told of the repeats. Its channel stays done after the first run, which is
//! the state a repeat would leave it in; what differs is only the run's token, which no one
//! outside the core sees.
//!
//! The claim ([`Inner::carrying`]) is what makes the record safe without the engine lock:
//! whoever starts the channel, sets its chain or carries its run out alone holds it, taken by
//! one compare-and-swap, so the record is only read or written by its holder.

use crate::fabric::Inner;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
use tca_proto::{Handle, TcaError, TcaResult, Write, CHANNELS};

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

/// The record of each channel; read and written only under the channel's claim.
#[derive(Default)]
pub(crate) struct Replays([UnsafeCell<Option<Replay>>; CHANNELS]);

// SAFETY: a record is reached only through a `Claim` of its channel, and one exists at a time.
unsafe impl Sync for Replays {}

/// The claim of one channel, given back (a release store) when dropped.
pub(crate) struct Claim<'a> {
    mark: Option<&'a AtomicBool>,
    channel: usize,
    replays: &'a Replays,
}

impl Claim<'_> {
    /// The channel's record.
    pub fn replay(&mut self) -> &mut Option<Replay> {
        // SAFETY: this claim is the only one of its channel (`Inner::claim`); a channel
        // without a mark (out of range) has no record to reach.
        let cell = &self.replays.0[self.channel % CHANNELS];
        unsafe { &mut *cell.get() }
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if let Some(m) = self.mark {
            m.store(false, Ordering::Release);
        }
    }
}

impl Inner {
    /// Takes the claim of `channel`. [`TcaError::ChannelBusy`] while another thread holds it.
    /// A channel out of range gets an empty claim: the engine rejects it.
    pub(crate) fn claim(&self, channel: u8) -> TcaResult<Claim<'_>> {
        let mark = self.carrying.get(channel as usize);
        if let Some(m) = mark {
            if m.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
                return Err(TcaError::ChannelBusy);
            }
        }
        Ok(Claim { mark, channel: channel as usize, replays: &self.replays })
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
            || self.with_caller_work(|w| w.has_reports())
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
