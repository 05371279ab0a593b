//! TLPs leaving a FIFO, in the order they leave it, with one event for all of them.
//!
//! Every resource of the model is a FIFO: TLPs leave it in the order they entered, at times that
//! never decrease. Only the first departure needs a place in the event queue; when it fires, the
//! next is scheduled. The queue then holds about one event per busy resource instead of one per
//! TLP in flight: a channel's 8 read tags of 4 KiB put 128 completions on its GPU's link at once,
//! and 16 nodes kept some 17,000 events pending, each moved about 6 times by the queue.
//!
//! The TLPs wait here by value, in the order they will be taken: a busy cable holds thousands of
//! writes, and reading them one after the other costs far less than fetching each from a table
//! of every TLP in flight.

use crate::cluster::{Ev, Fifo};
use base::{Context, SimTime};
use std::collections::VecDeque;

/// What leaves one FIFO, with the times it leaves; the FIFO's event fires for the first.
pub(crate) struct Departures<T> {
    items: VecDeque<(SimTime, T)>,
    fifo: Fifo,
    /// The event of the first departure is in the queue (false only between
    /// [`Departures::take_fired`] and [`Departures::rearm`]).
    armed: bool,
}

impl<T> Departures<T> {
    /// An empty FIFO, named by the event its departures fire.
    pub(crate) fn new(fifo: Fifo) -> Self {
        Departures { items: VecDeque::new(), fifo, armed: false }
    }

    /// `item` leaves at `at`, after those added before (never earlier than they).
    pub(crate) fn push(&mut self, ctx: &mut Context<'_, Ev>, at: SimTime, item: T) {
        debug_assert!(self.items.back().is_none_or(|last| last.0 <= at), "a FIFO's departures never go back in time");
        self.items.push_back((at, item));
        self.rearm(ctx);
        // The slot after this one, where the FIFO's next TLP will be written (a bad address
        // when the ring wraps there, which a prefetch ignores).
        if let Some(last) = self.items.back() {
            prefetch((last as *const (SimTime, T)).wrapping_add(1));
        }
    }

    /// Takes the first departure, whose event fired, and schedules the event of the next.
    pub(crate) fn pop(&mut self, ctx: &mut Context<'_, Ev>) -> T {
        let item = self.take_fired();
        self.rearm(ctx);
        item
    }

    /// Takes the first departure, whose event fired; no event is pending until
    /// [`Departures::rearm`] (or a push).
    pub(crate) fn take_fired(&mut self) -> T {
        let (_, item) = self.items.pop_front().expect("an event per departure");
        self.armed = false;
        if let Some(next) = self.items.front() {
            prefetch(next as *const (SimTime, T));
        }
        item
    }

    /// The time of the first departure, if any.
    pub(crate) fn head_time(&self) -> Option<SimTime> {
        self.items.front().map(|(at, _)| *at)
    }

    /// Takes the first departure with its time if it leaves before `bound` and no event is
    /// pending for it (after [`Departures::take_fired`]).
    pub(crate) fn take_before(&mut self, bound: SimTime) -> Option<(SimTime, T)> {
        if self.armed || self.head_time()? >= bound {
            return None;
        }
        let first = self.items.pop_front();
        if let Some(next) = self.items.front() {
            prefetch(next as *const (SimTime, T));
        }
        first
    }

    /// Schedules the event of the first departure, unless one is pending.
    pub(crate) fn rearm(&mut self, ctx: &mut Context<'_, Ev>) {
        if let (false, Some(at)) = (self.armed, self.head_time()) {
            ctx.schedule_at(at, Ev::Departure(self.fifo));
            self.armed = true;
        }
    }
}

/// Asks the cache for the lines of the item at `item` (a TLP waiting in a FIFO spans two): a
/// busy cable's backlog is larger than the cache, and an item is read or written long after
/// its neighbours were.
#[inline]
fn prefetch<T>(item: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = item.cast::<i8>();
        // SAFETY: prefetching is a hint; it never faults, whatever the address.
        unsafe {
            _mm_prefetch(p, _MM_HINT_T0);
            _mm_prefetch(p.wrapping_add(size_of::<T>() - 1), _MM_HINT_T0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base::{Model, Simulation};

    /// Departures from two FIFOs come out in time order, each FIFO in its own order, with one
    /// event pending per FIFO.
    #[test]
    fn departures_leave_in_order_with_one_event_each() {
        struct Two {
            fifos: [Departures<u32>; 2],
            left: Vec<(u64, u32)>,
        }
        impl Model for Two {
            type Event = Ev;
            fn handle(&mut self, ctx: &mut Context<'_, Ev>, event: Ev) {
                let Ev::Departure(Fifo::Leave(f)) = event else { unreachable!() };
                let item = self.fifos[f].pop(ctx);
                self.left.push((ctx.now().as_ps(), item));
            }
        }
        let mut two = Two { fifos: [Departures::new(Fifo::Leave(0)), Departures::new(Fifo::Leave(1))], left: vec![] };
        let mut sim = Simulation::new();
        sim.schedule_at(SimTime::ZERO, Ev::Timer { id: 0 });
        struct Start<'a>(&'a mut Two);
        impl Model for Start<'_> {
            type Event = Ev;
            fn handle(&mut self, ctx: &mut Context<'_, Ev>, _: Ev) {
                for (f, at, item) in [(0, 5, 1), (1, 3, 10), (0, 5, 2), (0, 9, 3), (1, 12, 11)] {
                    self.0.fifos[f].push(ctx, SimTime::from_ps(at), item);
                }
            }
        }
        sim.step(&mut Start(&mut two), None);
        assert_eq!(sim.next_time(), Some(SimTime::from_ps(3)));
        sim.run(&mut two, None);
        assert_eq!(two.left, vec![(3, 10), (5, 1), (5, 2), (9, 3), (12, 11)]);
    }
}
