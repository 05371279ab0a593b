//! Carrying the engine's actions out with real memory: copies for writes, descriptor reads for
//! fetches, ring entries for notifications and proxy-read messages; then reporting the
//! completions back to the engine. Done by the DMA engine thread, and by callers waiting for
//! DMA, so that a waiting caller runs its own chain instead of waiting for the thread to be
//! scheduled.

use crate::fabric::{lock, Inner};
use crate::ring::{encode_notify, Producer, MSG_BYTES};
use crate::segment::Segment;
use crate::sys;
use crate::wait::Backoff;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tca_proto::descriptor::{Descriptor, DESCRIPTOR_BYTES};
use tca_proto::ProxyMsg;
use tca_proto::{Action, DescriptorSource, Engine, ProxyDone, TcaError, TcaResult, Token, Write, CHANNELS};

/// Buffers of one executor of engine actions (the engine thread, or a waiting caller), kept
/// between rounds so that a round allocates nothing once they have grown.
#[derive(Default)]
pub(crate) struct Work {
    pub(crate) batch: Vec<Action>,
    /// Writes done, to report.
    done: Vec<Token>,
    /// Writes that failed, to report with their error.
    failed: Vec<(Token, TcaError)>,
    /// Notifications to this rank: (source node, slot, tag).
    local: Vec<(u16, u16, u32)>,
    /// Messages to send: (destination node, message).
    msgs: Vec<(u16, ProxyMsg)>,
    /// Messages to this rank, applied to its engine directly.
    to_self: Vec<ProxyMsg>,
    /// Answers to requests the engine could not register.
    refusals: Vec<(u16, ProxyMsg)>,
}

impl Work {
    /// Completions to report to the engine.
    fn has_reports(&self) -> bool {
        !(self.done.is_empty() && self.failed.is_empty() && self.local.is_empty() && self.to_self.is_empty())
    }
}

impl Inner {
    /// Carries out every action the engine has queued, round after round, until there is
    /// none; false when there was nothing to do.
    pub(crate) fn progress(&self, work: &mut Work) -> bool {
        self.progress_with(work, |_| ()).1
    }

    /// [`Inner::progress`], with `f` run on the engine in the first round's hold of the engine
    /// lock, before the actions are taken (a kick, a look at what a waiter waits for): one
    /// hold instead of two. Returns what `f` returned and whether there was anything to do.
    pub(crate) fn progress_with<R>(&self, work: &mut Work, f: impl FnOnce(&mut Engine) -> R) -> (R, bool) {
        let r = {
            let mut e = lock(&self.engine);
            let r = f(&mut e);
            self.take_actions(&mut e, work);
            r
        };
        (r, self.carry_taken(work))
    }

    /// Carries out the actions taken into `work.batch` (perhaps none), then those that follow,
    /// round after round; false when there was nothing to do.
    pub(crate) fn carry_taken(&self, work: &mut Work) -> bool {
        self.send_refusals(work);
        if work.batch.is_empty() {
            return false;
        }
        self.executing.fetch_add(1, Ordering::Relaxed);
        // A round that reported nothing back (no write done, no notification to this rank,
        // no message to itself) gave the engine nothing to answer: the next take would find
        // no action of this executor's, and actions kicked meanwhile by other threads are
        // carried out by them or by the engine thread (they ring its doorbell).
        loop {
            self.carry_round(work);
            if !work.has_reports() {
                break;
            }
            self.take_actions(&mut lock(&self.engine), work);
            self.send_refusals(work);
            if work.batch.is_empty() {
                break;
            }
        }
        self.executing.fetch_sub(1, Ordering::Relaxed);
        true
    }

    /// Runs `f` with this thread's cached buffers (empty between calls: every call reports
    /// and sends all it took), or fresh ones when they are in use (a nested call).
    pub(crate) fn with_caller_work<R>(&self, f: impl FnOnce(&mut Work) -> R) -> R {
        thread_local! {
            static WORK: std::cell::RefCell<Work> = std::cell::RefCell::new(Work::default());
        }
        WORK.with(|w| match w.try_borrow_mut() {
            Ok(mut w) => f(&mut w),
            Err(_) => f(&mut Work::default()),
        })
    }

    /// Carries out the actions taken (`work.batch`, not empty) and sends the messages.
    fn carry_round(&self, work: &mut Work) {
        let wake_app = self.carry_out(work);
        self.send_messages(work);
        if wake_app {
            let h = self.own().header();
            Segment::ring_bell(&h.app_bell.0, &h.app_waiters.0);
        }
    }

    /// Reports the completions of the previous round, applies the messages that arrived from
    /// peers, then moves the engine's actions into `work.batch` (the engine lock held).
    pub(crate) fn take_actions(&self, e: &mut Engine, work: &mut Work) {
        self.report(e, work);
        let own = self.own();
        for src in 0..self.cfg.size {
            let ring = own.msg_ring(src);
            if ring.is_empty() {
                continue;
            }
            ring.drain(|b| {
                // Only a corrupted peer writes a message that does not decode: drop it.
                if let Some(m) = ProxyMsg::decode(b) {
                    self.apply_msg(e, m, &mut work.refusals);
                }
            });
        }
        while let Some(a) = e.poll_action() {
            work.batch.push(a);
        }
    }

    pub(crate) fn send_refusals(&self, work: &mut Work) {
        for (node, m) in work.refusals.drain(..) {
            if !self.push_msg(node, &m) {
                self.mark_dead(node);
            }
        }
    }

    /// Carries out `work.batch`; true when a waiter of this rank may have something new (a
    /// channel finished or failed).
    fn carry_out(&self, work: &mut Work) -> bool {
        let me = self.cfg.rank;
        let mut wake_app = false;
        for a in work.batch.drain(..) {
            match a {
                Action::Write(w) => match self.copy(&w) {
                    Ok(()) => work.done.push(w.token),
                    Err(e) => {
                        if e == TcaError::PeerDead {
                            self.mark_dead(w.dst_node);
                        }
                        work.failed.push((w.token, e));
                    }
                },
                Action::Descriptor { channel, entry, source: DescriptorSource::HostMemory } => {
                    self.fetch_descriptor(channel, entry)
                }
                // Registers, internal memory and kicks cost nothing here.
                Action::Kick { .. } | Action::Descriptor { .. } => {}
                // Its waiters are woken once it is reported ([`Inner::report`]).
                Action::Notify(n) if n.dst_node == me => work.local.push((n.src_node, n.slot, n.tag)),
                Action::Notify(n) => {
                    if let Err(e) = self.push_notify(n.channel, n.dst_node, n.slot, n.tag) {
                        self.notify_failed(n.channel, n.dst_node, e);
                    }
                }
                Action::ChannelDone { .. } | Action::ChannelFailed { .. } => wake_app = true,
                Action::RegisterProxy { node, request } => work.msgs.push((node, ProxyMsg::Request(*request))),
                Action::Interrupt { node } => work.msgs.push((node, ProxyMsg::Interrupt)),
                Action::ProxyDone { node, done } => work.msgs.push((node, ProxyMsg::Done(done))),
            }
        }
        wake_app
    }

    /// The bytes of one write, from one mapped heap to another; the error when a receiver's
    /// waiter that took a share of it, or of an earlier write to that rank, has not finished
    /// copying ([`crate::shared_copy`]).
    pub(crate) fn copy(&self, w: &Write) -> TcaResult<()> {
        let src = self.ptr(w.src_node, w.src_addr, w.len);
        let dst = self.ptr(w.dst_node, w.dst_addr, w.len);
        if let (Some(s), Some(d)) = (src, dst) {
            self.settle_abandoned(w.dst_node)?;
            if let Some(copied) = self.copy_shared(w, s, d) {
                return copied;
            }
            // SAFETY: both ranges lie inside mapped heaps (desc_set and start_dma checked every
            // handle; the engine checked offsets against the handles).
            unsafe { std::ptr::copy(s, d, w.len as usize) };
        }
        Ok(())
    }

    /// The controller reads the 32-byte descriptor of `entry` from the channel's table in
    /// memory (chaining mode).
    pub(crate) fn fetch_descriptor(&self, channel: u8, entry: u32) {
        let Some((off, n)) = lock(&self.tables)[channel as usize % CHANNELS] else {
            return;
        };
        if entry as usize >= n {
            return;
        }
        let at = off + u64::from(entry) * DESCRIPTOR_BYTES as u64;
        if let Some(p) = self.own().heap_ptr(at, DESCRIPTOR_BYTES as u64) {
            let mut buf = [0u8; DESCRIPTOR_BYTES];
            // SAFETY: inside the table block of this segment.
            unsafe { std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), DESCRIPTOR_BYTES) };
            std::hint::black_box(Descriptor::decode(&buf).ok());
        }
    }

    /// Sends the messages of the round to other ranks, in order; keeps those to this rank.
    fn send_messages(&self, work: &mut Work) {
        let me = self.cfg.rank;
        for (node, m) in work.msgs.drain(..) {
            if node == me {
                work.to_self.push(m);
            } else if !self.push_msg(node, &m) {
                self.mark_dead(node);
            }
        }
    }

    /// Reports a round's completions to the engine (the engine lock held).
    pub(crate) fn report(&self, e: &mut Engine, work: &mut Work) {
        if !work.has_reports() {
            return;
        }
        for t in work.done.drain(..) {
            let _ = e.handle_write_done(t);
        }
        for (t, error) in work.failed.drain(..) {
            let _ = e.handle_write_refused(t, error);
        }
        if !work.local.is_empty() {
            for (src, slot, tag) in work.local.drain(..) {
                let _ = e.handle_notify_arrived(src, slot, tag);
            }
            self.note_held(e);
            // Only now: a waiter woken before would find the engine without the notification,
            // take that look as its last, and sleep until it times out.
            let h = self.own().header();
            Segment::ring_bell(&h.app_bell.0, &h.app_waiters.0);
        }
        for m in work.to_self.drain(..) {
            self.apply_msg(e, m, &mut work.refusals);
        }
    }

    /// Applies one proxy-read message to this rank's engine. A request the engine cannot
    /// register (table full) is answered with the error, so the requester's run fails
    /// instead of waiting.
    fn apply_msg(&self, e: &mut Engine, m: ProxyMsg, refusals: &mut Vec<(u16, ProxyMsg)>) {
        match m {
            ProxyMsg::Request(r) => {
                if let Err(err) = e.handle_proxy_request(r) {
                    let done = ProxyDone { responder: self.cfg.rank, token: r.token, result: Err(err) };
                    refusals.push((r.requester, ProxyMsg::Done(done)));
                }
            }
            ProxyMsg::Interrupt => e.handle_interrupt(),
            ProxyMsg::Done(d) => {
                let _ = e.handle_proxy_done(d);
            }
        }
    }

    /// Moves every notification from the rings of this rank's segment into its engine.
    pub(crate) fn drain_notifications(&self, e: &mut Engine) {
        let own = self.own();
        let mut took = false;
        for src in 0..self.cfg.size {
            own.ring(src).drain(|v| {
                let (slot, tag) = crate::ring::decode_notify(v);
                took = true;
                // A malformed entry can only come from a corrupted peer: drop it.
                let _ = e.handle_notify_arrived(src, slot, tag);
            });
        }
        if took {
            self.note_held(e);
            // Only holders of the engine lock write it: no read-modify-write needed.
            self.drained.store(self.drained.load(Ordering::Relaxed).wrapping_add(1), Ordering::Release);
            // A thread of this process asleep for one of them would find it only when its
            // sleep slice ends (2 ms). One that announces itself after this look looks at the
            // engine again before it sleeps.
            let h = own.header();
            if h.app_waiters.0.load(Ordering::SeqCst) != 0 {
                Segment::ring_bell(&h.app_bell.0, &h.app_waiters.0);
            }
        }
    }

    /// Mirrors whether the engine holds notifications ([`Inner::held`]); the engine lock held.
    #[inline]
    pub(crate) fn note_held(&self, e: &Engine) {
        self.held.store(u32::from(e.holds_notifications()), Ordering::Release);
    }

    /// Pushes a notification into `dst`'s ring for this rank; waits while the ring is full.
    /// A waiter for a notification polls the ring itself while it spins, so the doorbell is
    /// rung only for a sleeping one (it announces itself, then looks at the ring once more:
    /// the fence orders the push before the look at its count).
    ///
    /// # Errors
    /// As [`Inner::push_notify_held`].
    fn push_notify(&self, channel: u8, dst: u16, slot: u16, tag: u32) -> TcaResult<()> {
        let mut producer = self.producers[dst as usize].lock();
        self.push_notify_held(&mut producer, channel, dst, slot, tag)?;
        std::sync::atomic::fence(Ordering::SeqCst);
        let h = self.segs[dst as usize].header();
        if h.app_waiters.0.load(Ordering::Relaxed) != 0 {
            Segment::ring_bell(&h.app_bell.0, &h.app_waiters.0);
        }
        Ok(())
    }

    /// The push of [`Inner::push_notify`], the producer lock of `dst` held; no fence, no
    /// doorbell.
    ///
    /// # Errors
    /// [`TcaError::PeerDead`] when `dst` died or finalized while its ring was full;
    /// [`TcaError::Timeout`] when `dst` is alive but took no entry for the whole timeout (its
    /// program is busy elsewhere, in a barrier say), or at once when a notification of
    /// `channel` timed out so already and its `tcaWaitDMAC` has not been told yet: a chain of
    /// many notifications to a receiver busy elsewhere waits one timeout, not one each. Either
    /// way nothing was written.
    pub(crate) fn push_notify_held(
        &self,
        producer: &mut Producer,
        channel: u8,
        dst: u16,
        slot: u16,
        tag: u32,
    ) -> TcaResult<()> {
        let ring = self.segs[dst as usize].ring(self.cfg.rank);
        let v = encode_notify(slot, tag);
        let gave_up = self
            .failed_alone
            .get(channel as usize)
            .is_some_and(|f| f.load(Ordering::Acquire) == TcaError::Timeout.code());
        // The clock is read only once the ring is full.
        let mut start = None;
        while !ring.push(producer, v) {
            if gave_up {
                return Err(TcaError::Timeout);
            }
            let since = *start.get_or_insert_with(Instant::now);
            if !self.peer_alive(dst) {
                return Err(TcaError::PeerDead);
            }
            if since.elapsed() > self.cfg.timeout {
                return Err(TcaError::Timeout);
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        Ok(())
    }

    /// A notification of `channel` to `dst` could not be written ([`Inner::push_notify_held`]):
    /// the engine counted its run done already, so the error is kept for the channel's next
    /// `tcaWaitDMAC`; a dead `dst` is also marked dead.
    pub(crate) fn notify_failed(&self, channel: u8, dst: u16, e: TcaError) {
        if let Some(failed) = self.failed_alone.get(channel as usize) {
            failed.store(e.code(), Ordering::Release);
        }
        if e == TcaError::PeerDead {
            self.mark_dead(dst);
        }
    }

    /// Sends a proxy-read message to `dst`: into `dst`'s message ring for this rank, waking
    /// `dst`'s engine thread. A message that finds the ring full (its owner alive but not
    /// draining it: stopped in a debugger, or without a CPU for a while) waits in this rank's
    /// outbox for `dst`, behind which every later message to `dst` waits too, and the engine
    /// thread sends it once there is room ([`Inner::send_outboxes`]). Nothing waits here, and
    /// a live rank is not taken for dead; whoever waits for the answer has its own timeout.
    /// `false` when `dst` is dead (what waited for it is dropped).
    fn push_msg(&self, dst: u16, m: &ProxyMsg) -> bool {
        let mut outbox = lock(&self.outbox[dst as usize]);
        outbox.push_back(m.encode());
        self.send_outbox(dst, &mut outbox)
    }

    /// Moves what `outbox` (`dst`'s, locked) holds into `dst`'s ring, in order, as far as
    /// there is room; `false` when `dst` is dead.
    fn send_outbox(&self, dst: u16, outbox: &mut VecDeque<[u8; MSG_BYTES]>) -> bool {
        let seg = &self.segs[dst as usize];
        let ring = seg.msg_ring(self.cfg.rank);
        let mut sent = false;
        while let Some(entry) = outbox.front() {
            if !ring.push(entry) {
                break;
            }
            outbox.pop_front();
            sent = true;
        }
        if sent {
            let h = seg.header();
            Segment::ring_bell(&h.engine_bell.0, &h.engine_waiters.0);
        }
        let bit = 1 << dst.min(31);
        if outbox.is_empty() {
            self.outbox_waiting.fetch_and(!bit, Ordering::AcqRel);
            return true;
        }
        if !self.peer_alive(dst) {
            outbox.clear();
            self.outbox_waiting.fetch_and(!bit, Ordering::AcqRel);
            return false;
        }
        if self.outbox_waiting.fetch_or(bit, Ordering::AcqRel) & bit == 0 {
            // This rank's engine thread sends it: wake it, as it naps for long when idle.
            let h = self.own().header();
            Segment::ring_bell(&h.engine_bell.0, &h.engine_waiters.0);
        }
        true
    }

    /// Sends what waits in the outboxes (the engine thread, at every turn); true while some
    /// of it still finds no room.
    fn send_outboxes(&self) -> bool {
        let mut waiting = self.outbox_waiting.load(Ordering::Acquire);
        while waiting != 0 {
            let dst = waiting.trailing_zeros() as u16;
            waiting &= waiting - 1;
            let alive = self.send_outbox(dst, &mut lock(&self.outbox[dst as usize]));
            if !alive {
                self.mark_dead(dst);
            }
        }
        self.outbox_waiting.load(Ordering::Acquire) != 0
    }

    /// The DMA engine thread: carries out the engine's actions as they come, sleeping on the
    /// engine doorbell when there are none, until shutdown. When ranks outnumber CPUs it does
    /// not spin either.
    pub(crate) fn engine_thread(&self) {
        let h = self.own().header();
        let mut work = Work::default();
        let mut idle: Option<Backoff> = None;
        loop {
            let bell = h.engine_bell.0.load(Ordering::Acquire);
            let outbox_waits = self.send_outboxes();
            if self.progress(&mut work) {
                idle = None;
                continue;
            }
            if self.shutdown.load(Ordering::Acquire) {
                return;
            }
            let backoff = idle.get_or_insert_with(|| Backoff::for_engine(&self.policy, !self.no_free_cpu));
            if backoff.snooze().is_none() {
                continue;
            }
            h.engine_waiters.0.store(1, Ordering::SeqCst);
            if h.engine_bell.0.load(Ordering::SeqCst) == bell {
                // Nobody rings when a peer's ring gets room: look again soon.
                let nap = if outbox_waits { Duration::from_millis(1) } else { Duration::from_millis(50) };
                sys::futex_wait(&h.engine_bell.0, bell, nap);
            }
            h.engine_waiters.0.store(0, Ordering::SeqCst);
        }
    }
}
