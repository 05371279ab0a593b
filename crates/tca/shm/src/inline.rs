//! The caller's fast path for a DMA run it carries out alone: one write from this rank's
//! memory and at most one notification to another rank (a chain of one entry).
//!
//! On x86 a locked instruction (a mutex's take or release, an atomic counter, a fence) waits
//! until every earlier store of the thread is visible; after stores into a peer's segment that
//! means until the peer's cache has given those lines back, a transfer between cores. The
//! general path ([`crate::executor`]) reports the write under the engine lock after the copy,
//! so the notification left only after the payload had reached the peer, and the caller paid
//! more such waits after it. Here everything that needs a lock is done before the copy, in
//! the same hold of the engine lock as the kick: the write is reported done at once, the
//! engine's answer (the notification, the end of the run) taken, the channel marked as carried
//! (the claim kept); then, still before the copy, the descriptor is read from its table
//! in chaining mode and the producer lock of the destination's ring taken. A run of one write
//! with at most a notification to another rank is taken whole by the protocol core
//! ([`Engine::start_posted`]: none of its actions goes through the engine's queue); the first
//! entry of a longer chain, or a run that also notifies this rank, is taken from the queue
//! ([`Inner::take_alone`]). Then the payload and the notification are plain stores, the
//! notification a release store after the data, and nothing after them is a read-modify-write:
//! the claim and the producer lock are given back with plain stores.
//!
//! What the engine cannot know, the channel's claim covers ([`crate::replay::Claim`], taken
//! by the kick and kept until the run is written): a `tcaWaitDMAC` of another thread that
//! finds the run done waits for the claim to be given back, and a kick or `tcaDescSet` of the
//! channel is refused as busy while it is held. A run taken whole is kept with the channel,
//! and the next kicks repeat it without the engine lock ([`crate::replay`]).
//!
//! The look at the destination's sleeping waiters after the notification is not fenced (a
//! fence would wait for the stores); the next DMA call of this process looks again behind a
//! fence ([`Inner::settle_notify`]), and a sleeper missed by both wakes at the end of its
//! sleep slice.

use crate::fabric::{lock, Inner};
use crate::replay::{Claim, Replay};
use crate::segment::Segment;
use std::sync::atomic::{fence, Ordering};
use tca_proto::{Action, DescriptorSource, Engine, PostedRun, TcaError, TcaResult, Write};

/// A run taken whole, to carry out with plain stores.
pub(crate) struct Alone {
    channel: u8,
    /// The kick of the run ([`Inner::kicks`]).
    kick: u32,
    /// The descriptor is read from the channel's table in host memory first (chaining mode).
    fetch: bool,
    write: Write,
    /// The run ended with the write (a waiter of this process for the channel may wake).
    done: bool,
    /// (destination, slot, tag) of the notification to another rank.
    notify: Option<(u16, u16, u32)>,
    /// A repeat ([`crate::replay`]): the engine saw no kick, so no waiter of this process
    /// sleeps on a change it made.
    repeat: bool,
}

impl Alone {
    /// A repeat of a run kept for it, as kick `kick` of `channel` ([`crate::replay`]).
    pub(crate) fn repeat(channel: u8, kick: u32, r: Replay) -> Alone {
        Alone { channel, kick, fetch: r.fetch, write: r.write, done: true, notify: r.notify, repeat: true }
    }
}

impl Inner {
    /// `tcaStartDMADesc` carried out by the caller: alone when the run allows it, else by the
    /// general path on the actions taken.
    pub(crate) fn start_by_caller(&self, channel: u8) -> TcaResult<()> {
        self.with_caller_work(|work| {
            let (r, alone) = {
                let mut e = lock(&self.engine);
                // The previous round's completions first, as they may end a run before it.
                // Messages from peers wait for the next progress (their sender rang the
                // engine thread).
                self.report(&mut e, work);
                match self.kick_with(&mut e, channel, Engine::start_posted) {
                    Ok((Some(run), mut claim)) => {
                        let a = self.take_posted(channel, run);
                        let entry = e.chain(channel).ok().flatten().and_then(|c| c.entries().first().copied());
                        if let Some(entry) = entry {
                            let (write, notify, fetch) = (a.write, a.notify, a.fetch);
                            self.keep(&mut claim, Replay { write, notify, handles: [entry.dst, entry.src], fetch });
                        }
                        (Ok(()), Some((a, Some(claim))))
                    }
                    Ok((None, claim)) => {
                        self.take_actions(&mut e, work);
                        let alone = self.take_alone(&mut e, channel, &mut work.batch);
                        // The claim stays with a run carried out to its end.
                        let claim = Some(claim).filter(|_| alone.as_ref().is_some_and(|a| a.done));
                        (Ok(()), alone.map(|a| (a, claim)))
                    }
                    Err(err) => {
                        self.take_actions(&mut e, work);
                        (Err(err), None)
                    }
                }
            };
            if let Some((a, claim)) = alone {
                self.send_refusals(work);
                self.carry_alone(&a, claim);
            }
            // What the run did not allow, or what else was taken, goes the general way.
            self.carry_taken(work);
            r
        })
    }

    /// The run [`Engine::start_posted`] took whole.
    fn take_posted(&self, channel: u8, run: PostedRun) -> Alone {
        let kick = self.kicks[channel as usize].load(Ordering::Relaxed);
        let notify = run.notify.map(|n| (n.dst_node, n.slot, n.tag));
        let fetch = run.source == DescriptorSource::HostMemory;
        Alone { channel, kick, fetch, write: run.write, done: true, notify, repeat: false }
    }

    /// When `batch` (just taken after the kick of `channel`) is one write from this rank plus
    /// kicks and register reads of that channel: reports the write done, takes the engine's
    /// answer, marks the channel as carried, and returns the run. Actions of the answer other
    /// than one notification to another rank and the end of the run stay in `batch`.
    fn take_alone(&self, e: &mut Engine, channel: u8, batch: &mut Vec<Action>) -> Option<Alone> {
        let me = self.cfg.rank;
        let mut write = None;
        for a in batch.iter() {
            match a {
                Action::Write(w) if w.channel == channel && w.src_node == me && write.is_none() => write = Some(*w),
                Action::Kick { channel: c } if *c == channel => {}
                Action::Descriptor { channel: c, source, .. }
                    if *c == channel && *source != DescriptorSource::HostMemory => {}
                _ => return None,
            }
        }
        let write = write?;
        batch.clear();
        // A report the engine refuses cannot happen for a token it just issued; were it to,
        // the run stays running and fails or times out as on the general path.
        let _ = e.handle_write_done(write.token);
        let mut notify = None;
        let mut done = false;
        while let Some(a) = e.poll_action() {
            match a {
                Action::Notify(n) if n.dst_node != me && notify.is_none() => notify = Some((n.dst_node, n.slot, n.tag)),
                Action::ChannelDone { channel: c } if c == channel => done = true,
                other => batch.push(other),
            }
        }
        let kick = self.kicks[channel as usize].load(Ordering::Relaxed);
        Some(Alone { channel, kick, fetch: false, write, done, notify, repeat: false })
    }

    /// The copy and the notification of a run taken whole; nothing after the first store into
    /// the peer's segment is a read-modify-write, unless a waiter of the peer sleeps. `claim`
    /// is the channel's, held for a run carried out to its end, given back last.
    pub(crate) fn carry_alone(&self, a: &Alone, claim: Option<Claim<'_>>) {
        if a.fetch {
            self.fetch_descriptor(a.channel, 0);
        }
        let mut producer = a.notify.map(|(dst, ..)| self.producers[dst as usize].lock());
        // A waiter of this process for the channel (another thread), woken by the engine's
        // change, finds the claim held and waits for it to be given back.
        if a.done && !a.repeat {
            let h = self.own().header();
            Segment::ring_bell(&h.app_bell.0, &h.app_waiters.0);
        }
        // A write that failed (a receiver's waiter still copies a share of it) sends no
        // notification: the receiver's wait fails rather than find bytes that may still change.
        let copied = self.copy(&a.write);
        let mut dead = (copied == Err(TcaError::PeerDead)).then_some(a.write.dst_node);
        let mut result = copied;
        if let (Some((dst, slot, tag)), Some(p), Ok(())) = (a.notify, producer.as_mut(), copied) {
            result = self.push_notify_held(p, a.channel, dst, slot, tag);
            match result {
                Ok(()) => {
                    let peer = self.segs[dst as usize].header();
                    if peer.app_waiters.0.load(Ordering::Relaxed) != 0 {
                        Segment::ring_bell(&peer.app_bell.0, &peer.app_waiters.0);
                    } else {
                        self.unfenced.store(u32::from(dst) + 1, Ordering::Relaxed);
                    }
                }
                Err(TcaError::PeerDead) => dead = Some(dst),
                // A live receiver whose ring stayed full: it is not dead.
                Err(_) => {}
            }
        }
        // The engine counted the run done before the copy: a failed copy or notification is
        // kept for the channel's next tcaWaitDMAC, which is not answered without the library
        // meanwhile.
        let failed = &self.failed_alone[a.channel as usize];
        if let Err(e) = result {
            failed.store(e.code(), Ordering::Release);
        }
        if a.done && failed.load(Ordering::Acquire) == 0 {
            self.finished_alone[a.channel as usize].store(a.kick, Ordering::Release);
        }
        let mut claim = claim;
        if let (Some(c), true) = (claim.as_mut(), result.is_err()) {
            c.forget();
        }
        drop(claim);
        drop(producer);
        if let Some(dst) = dead {
            self.mark_dead(dst);
        }
    }

    /// The fenced look at the sleeping waiters of the node a notification was last pushed to
    /// without one ([`Inner::unfenced`]). Two threads may race on the record: a look lost
    /// costs a sleeper at most its sleep slice.
    pub(crate) fn settle_notify(&self) {
        let d = self.unfenced.load(Ordering::Relaxed);
        if d == 0 {
            return;
        }
        self.unfenced.store(0, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if let Some(seg) = self.segs.get(d as usize - 1) {
            let h = seg.header();
            if h.app_waiters.0.load(Ordering::Relaxed) != 0 {
                Segment::ring_bell(&h.app_bell.0, &h.app_waiters.0);
            }
        }
    }

    /// The last run started on `channel` was finished by a caller alone (so it is over, and
    /// succeeded): `tcaWaitDMAC` is ready without asking the engine. A kick racing with this
    /// look is one the wait may or may not include, as with the engine.
    pub(crate) fn finished_alone_last(&self, channel: u8) -> bool {
        let c = channel as usize;
        match (self.kicks.get(c), self.finished_alone.get(c)) {
            (Some(k), Some(f)) => {
                let k = k.load(Ordering::Acquire);
                k != 0 && f.load(Ordering::Acquire) == k && !self.carrying[c].load(Ordering::Acquire)
            }
            _ => false,
        }
    }

    /// Waits while another thread holds the claim of `channel`: a caller carrying out its run
    /// alone (microseconds: a copy of at most [`crate::dma::INLINE_BYTES`], or a push into a
    /// full ring, bounded by the timeout), or a kick or `tcaDescSet` in progress.
    pub(crate) fn wait_carried(&self, channel: u8) {
        let mark = &self.carrying[channel as usize % self.carrying.len()];
        while mark.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
    }
}
