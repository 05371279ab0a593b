//! How a rank waits: the policy decided at init, the spin-then-sleep loop every wait runs, and
//! the liveness of the peers a wait depends on.
//!
//! A wait busy-polls for the spin time, then polls with `sched_yield` for the yield time, then
//! sleeps on this rank's application doorbell (a futex word in its segment) in slices,
//! checking between slices that the peers it waits for are alive and that its deadline has not
//! passed. Everything a waiter may wait for rings the doorbell (a notification, a finished
//! channel, a collective's progress, a finished peer); PIO stores ring it too when the ranks
//! outnumber the CPUs, because then no wait spins.
//!
//! When the ranks outnumber the CPUs a spinning wait takes the CPU from the rank that is about
//! to answer, so there is no spin; a short yield phase remains: a yield hands the CPU to any
//! runnable thread at once and costs nothing when none is, and it catches answers that come
//! within microseconds without the cost of a sleep and a wake-up (16 ranks on 2 CPUs: an
//! all-to-all takes about a quarter of the time it takes with sleeping at once).

use crate::config::{Config, DEFAULT_SPIN};
use crate::fabric::{lock, Inner};
use crate::segment::{state, Header, Segment};
use crate::shared_copy::Helping;
use crate::sys;
use std::hint::spin_loop;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tca_proto::{TcaError, TcaResult};

/// Longest single futex sleep of a wait: how often a sleeping waiter re-checks its peers'
/// liveness and its deadline.
const SLEEP_SLICE: Duration = Duration::from_millis(2);

/// The yield phase of a wait when ranks outnumber CPUs.
pub const OVERSUBSCRIBED_YIELD: Duration = Duration::from_micros(30);

/// How the waits of one rank behave, decided at init ([`WaitPolicy::decide`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitPolicy {
    /// Busy-poll time before a wait sleeps; never longer than the timeout.
    pub spin: Duration,
    /// Longest time a wait blocks before it fails with [`TcaError::Timeout`].
    pub timeout: Duration,
    /// CPUs the job's ranks may run on, all ranks together.
    pub cpus: u32,
    /// The ranks outnumber those CPUs: spinning would take the CPU from the rank that is
    /// about to answer, so waits sleep at once (unless `TCA_SPIN_US` says otherwise) and PIO
    /// stores wake a sleeping receiver.
    pub oversubscribed: bool,
    /// After the spin, how long a wait polls with `sched_yield` before it sleeps
    /// ([`OVERSUBSCRIBED_YIELD`] when oversubscribed, else none).
    pub yield_for: Duration,
}

impl WaitPolicy {
    /// The policy of a rank of the job whose segments are `segs`: oversubscribed when the
    /// union of every rank's CPU affinity (published in the segment headers) has fewer CPUs
    /// than the job has ranks. Every rank reads the same headers, so all decide alike.
    pub fn decide(cfg: &Config, segs: &[Segment]) -> WaitPolicy {
        let mut union = [0u64; sys::CPU_WORDS];
        for s in segs {
            for (u, w) in union.iter_mut().zip(&s.header().cpus) {
                *u |= w.load(Ordering::Relaxed);
            }
        }
        let cpus: u32 = union.iter().map(|w| w.count_ones()).sum();
        WaitPolicy::new(cfg, cpus)
    }

    /// The policy for `cpus` CPUs shared by the job's ranks.
    pub fn new(cfg: &Config, cpus: u32) -> WaitPolicy {
        let oversubscribed = u32::from(cfg.size) > cpus;
        let default = if oversubscribed { Duration::ZERO } else { DEFAULT_SPIN };
        // The timeout wins over any spin.
        let spin = cfg.spin.unwrap_or(default).min(cfg.timeout);
        let yield_for = if oversubscribed { OVERSUBSCRIBED_YIELD.min(cfg.timeout - spin) } else { Duration::ZERO };
        WaitPolicy { spin, timeout: cfg.timeout, cpus, oversubscribed, yield_for }
    }

    /// The first sleep slice: short while a spinning peer may answer any moment, the whole
    /// slice when every event rings the doorbell anyway (oversubscribed).
    fn first_sleep(&self) -> Duration {
        if self.oversubscribed {
            SLEEP_SLICE
        } else {
            Backoff::FIRST_SLEEP
        }
    }
}

/// Which peers a wait watches for death.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Watch {
    Nobody,
    Peer(u16),
    Everyone,
}

/// What a wait checks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WaitFor {
    pub watch: Watch,
    /// `ready` is cheap (it polls memory first): call it on every spin, and once more after
    /// announcing a sleep (a store that did not see the announcement rang no bell). Otherwise
    /// `ready` is called only when the doorbell moved. Either way the first `true` ends the
    /// wait (`ready` may consume what it waited for).
    pub cheap: bool,
    /// `ready` asks the engine, which turns a dead peer into the right error itself (so the
    /// death of a rank the wait does not depend on does not end it).
    pub engine_reports: bool,
}

impl Inner {
    /// Waits until `ready` returns true, or fails with its error, [`TcaError::PeerDead`] or
    /// [`TcaError::Timeout`] (see the module documentation).
    pub(crate) fn wait(&self, what: WaitFor, ready: impl FnMut(&Inner) -> TcaResult<bool>) -> TcaResult<()> {
        self.wait_helping(what, None, ready)
    }

    /// As [`Inner::wait`]; while it spins, the wait copies what the peer of `helping` offers
    /// of its large writes ([`crate::shared_copy`]), and it withdraws the offer to help when
    /// it sleeps.
    pub(crate) fn wait_helping(
        &self,
        what: WaitFor,
        mut helping: Option<Helping<'_>>,
        mut ready: impl FnMut(&Inner) -> TcaResult<bool>,
    ) -> TcaResult<()> {
        let h = self.own().header();
        let mut bell = h.app_bell.0.load(Ordering::Acquire);
        if ready(self)? {
            return Ok(());
        }
        let mut backoff = Backoff::new(&self.policy);
        loop {
            let done = match backoff.snooze() {
                None => {
                    if let Some(help) = &helping {
                        help.poll();
                    }
                    self.spin_step(h, what, &mut bell, &mut ready)?
                }
                Some(sleep) => {
                    helping = None;
                    self.sleep_step(h, what, &mut bell, sleep, &backoff, &mut ready)?
                }
            };
            if done {
                return Ok(());
            }
        }
    }

    /// One poll of the spin phase.
    fn spin_step(
        &self,
        h: &Header,
        what: WaitFor,
        bell: &mut u32,
        ready: &mut impl FnMut(&Inner) -> TcaResult<bool>,
    ) -> TcaResult<bool> {
        if self.executing.load(Ordering::Relaxed) != 0 {
            std::thread::yield_now();
        }
        let now = h.app_bell.0.load(Ordering::Acquire);
        if what.cheap || now != *bell {
            *bell = now;
            return ready(self);
        }
        Ok(false)
    }

    /// One slice of the sleep phase: liveness, deadline, then sleep until the doorbell moves.
    fn sleep_step(
        &self,
        h: &Header,
        what: WaitFor,
        bell: &mut u32,
        sleep: Duration,
        backoff: &Backoff,
        ready: &mut impl FnMut(&Inner) -> TcaResult<bool>,
    ) -> TcaResult<bool> {
        if let Some(dead) = self.dead_peer(what.watch) {
            // The engine fails what involved the dead rank; a wait the engine does not judge
            // (PIO, collectives) fails here.
            self.mark_dead(dead);
            match ready(self)? {
                true => return Ok(true),
                false if !what.engine_reports => return Err(TcaError::PeerDead),
                false => {}
            }
        }
        if backoff.elapsed() > self.policy.timeout {
            return Err(TcaError::Timeout);
        }
        h.app_waiters.0.fetch_add(1, Ordering::SeqCst);
        // A cheap `ready` may consume what it waited for (a notification): its answer stands.
        let early = if what.cheap { ready(self) } else { Ok(false) };
        if early != Ok(false) {
            h.app_waiters.0.fetch_sub(1, Ordering::SeqCst);
            return early;
        }
        if h.app_bell.0.load(Ordering::SeqCst) == *bell {
            sys::futex_wait(&h.app_bell.0, *bell, sleep);
        }
        h.app_waiters.0.fetch_sub(1, Ordering::SeqCst);
        *bell = h.app_bell.0.load(Ordering::Acquire);
        ready(self)
    }

    /// Whether `node` is in the job: its process lives and has not finalized.
    pub(crate) fn peer_alive(&self, node: u16) -> bool {
        let h: &Header = self.segs[node as usize].header();
        h.state.load(Ordering::Acquire) != state::FINISHED && sys::process_alive(h.pid.load(Ordering::Relaxed))
    }

    fn dead_peer(&self, watch: Watch) -> Option<u16> {
        match watch {
            Watch::Nobody => None,
            Watch::Peer(p) => (!self.peer_alive(p)).then_some(p),
            // A rank already marked dead was told to the engine: what it fails has failed.
            Watch::Everyone => (0..self.cfg.size)
                .filter(|&r| r != self.cfg.rank && !self.marked_dead(r))
                .find(|&r| !self.peer_alive(r)),
        }
    }

    /// Whether `node` was marked dead ([`Inner::mark_dead`]).
    fn marked_dead(&self, node: u16) -> bool {
        self.dead.load(Ordering::Acquire) & 1 << node.min(31) != 0
    }

    /// Tells the engine a peer is gone: its runs fail, waits for it fail. Once: marking it
    /// again would wake every waiter of the process for nothing, and a wait watching every
    /// rank that found it again would never sleep.
    pub(crate) fn mark_dead(&self, node: u16) {
        let mut e = lock(&self.engine);
        if self.dead.fetch_or(1 << node.min(31), Ordering::AcqRel) & 1 << node.min(31) != 0 {
            return;
        }
        let _ = e.handle_peer_dead(node);
        drop(e);
        let h = self.own().header();
        Segment::ring_bell(&h.engine_bell.0, &h.engine_waiters.0);
        Segment::ring_bell(&h.app_bell.0, &h.app_waiters.0);
    }
}

/// Spin, yield, then sleep for growing slices: the waiting policy of every wait (and of the
/// engine thread when idle).
pub(crate) struct Backoff {
    /// First read of the clock, [`Self::CLOCK_EVERY`] calls in (a wait that ends sooner never
    /// reads it), or at once when there is no spin.
    start: Option<Instant>,
    spin: Duration,
    yield_for: Duration,
    phase: Phase,
    first_sleep: Duration,
    calls: u32,
    sleeps: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Spin,
    Yield,
    Sleep,
}

impl Backoff {
    /// Calls between two reads of the clock while spinning.
    const CLOCK_EVERY: u32 = 256;
    const FIRST_SLEEP: Duration = Duration::from_micros(20);

    pub(crate) fn new(policy: &WaitPolicy) -> Self {
        Self {
            start: None,
            spin: policy.spin,
            yield_for: policy.yield_for,
            phase: Phase::Spin,
            first_sleep: policy.first_sleep(),
            calls: 0,
            sleeps: 0,
        }
    }

    /// The policy of the idle DMA engine thread: no yield phase, so that it sleeps soon and
    /// callers carry short chains out themselves instead of waiting for it to be scheduled;
    /// no spin either unless `spin` (a spinning thread would take the CPU of the caller).
    pub(crate) fn for_engine(policy: &WaitPolicy, spin: bool) -> Self {
        let spin = if spin { policy.spin } else { Duration::ZERO };
        Self { yield_for: Duration::ZERO, spin, ..Self::new(policy) }
    }

    /// Time since the first read of the clock.
    pub(crate) fn elapsed(&self) -> Duration {
        self.start.map_or(Duration::ZERO, |s| s.elapsed())
    }

    /// Spins (one pause) during the spin time and yields the CPU during the yield time,
    /// returning `None`; afterwards returns how long to sleep next. While spinning, the clock
    /// is read once every [`Self::CLOCK_EVERY`] calls.
    #[inline]
    pub(crate) fn snooze(&mut self) -> Option<Duration> {
        self.calls = self.calls.wrapping_add(1);
        if self.phase == Phase::Spin {
            if !self.spin.is_zero() && !self.calls.is_multiple_of(Self::CLOCK_EVERY) {
                spin_loop();
                return None;
            }
            let start = *self.start.get_or_insert_with(Instant::now);
            if start.elapsed() < self.spin {
                spin_loop();
                return None;
            }
            self.phase = Phase::Yield;
        }
        if self.phase == Phase::Yield {
            if self.elapsed() < self.spin + self.yield_for {
                std::thread::yield_now();
                return None;
            }
            self.phase = Phase::Sleep;
        }
        let d = (self.first_sleep * (1 << self.sleeps.min(7))).min(SLEEP_SLICE);
        self.sleeps += 1;
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(size: u16, spin: Option<Duration>, timeout: Duration) -> Config {
        Config { rank: 0, size, job: "t".into(), heap_bytes: 4096, timeout, spin }
    }

    #[test]
    fn ranks_outnumbering_cpus_do_not_spin() {
        let p = WaitPolicy::new(&cfg(16, None, Duration::from_secs(10)), 2);
        assert!(p.oversubscribed);
        assert_eq!(p.spin, Duration::ZERO);
        let p = WaitPolicy::new(&cfg(2, None, Duration::from_secs(10)), 2);
        assert!(!p.oversubscribed);
        assert_eq!(p.spin, DEFAULT_SPIN);
        // An explicit TCA_SPIN_US is kept.
        let p = WaitPolicy::new(&cfg(16, Some(Duration::from_micros(5)), Duration::from_secs(10)), 2);
        assert_eq!((p.oversubscribed, p.spin), (true, Duration::from_micros(5)));
    }

    #[test]
    fn without_spin_a_wait_yields_then_sleeps() {
        let p = WaitPolicy::new(&cfg(16, None, Duration::from_secs(10)), 2);
        assert_eq!(p.yield_for, OVERSUBSCRIBED_YIELD);
        let mut b = Backoff::new(&p);
        let t = Instant::now();
        let mut yields = 0;
        while b.snooze().is_none() {
            yields += 1;
        }
        assert!(yields > 0 && t.elapsed() >= OVERSUBSCRIBED_YIELD, "{yields} yields in {:?}", t.elapsed());
        assert_eq!(b.snooze(), Some(SLEEP_SLICE));
        // The engine thread sleeps at once.
        let mut e = Backoff::for_engine(&p, true);
        assert_eq!(e.snooze(), Some(SLEEP_SLICE));
        // Not oversubscribed: no yield phase.
        assert_eq!(WaitPolicy::new(&cfg(2, None, Duration::from_secs(10)), 2).yield_for, Duration::ZERO);
    }

    #[test]
    fn the_timeout_bounds_the_spin() {
        // A policy built past Config's check: the spin still ends at the timeout.
        let p = WaitPolicy::new(&cfg(2, Some(Duration::from_secs(30)), Duration::from_millis(30)), 2);
        assert_eq!(p.spin, Duration::from_millis(30));
        let mut b = Backoff::new(&p);
        let t = Instant::now();
        while b.snooze().is_none() {}
        let spun = t.elapsed();
        assert!(spun >= Duration::from_millis(29) && spun < Duration::from_secs(2), "{spun:?}");
    }

    #[test]
    fn sleeps_grow_to_the_slice() {
        let p = WaitPolicy::new(&cfg(2, Some(Duration::ZERO), Duration::from_secs(1)), 2);
        let mut b = Backoff::new(&p);
        let slices: Vec<_> = (0..10).map(|_| b.snooze().unwrap()).collect();
        assert_eq!(slices[0], Backoff::FIRST_SLEEP);
        assert_eq!(slices[1], Backoff::FIRST_SLEEP * 2);
        assert_eq!(*slices.last().unwrap(), SLEEP_SLICE);
    }
}
