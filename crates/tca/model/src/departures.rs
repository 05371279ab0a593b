//! TLPs leaving a FIFO, in the order they leave it, with one event for all of them.
//!
//! Every resource of the model is a FIFO: TLPs leave it in the order they entered, at times that
//! never decrease. Only the first departure needs a place in the event queue; when it fires, the
//! next is scheduled. The queue then holds about one event per busy resource instead of one per
//! TLP in flight: a channel's 8 read tags of 4 KiB put 128 completions on its GPU's link at once,
//! and 16 nodes kept some 17,000 events pending, each moved about 6 times by the queue.

use base::SimTime;
use std::collections::VecDeque;

/// The TLPs leaving one FIFO, with the times they leave.
#[derive(Default)]
pub(crate) struct Departures {
    items: VecDeque<(SimTime, usize)>,
}

impl Departures {
    /// TLP `id` leaves at `at`, after those added before; true when it is the first, so the
    /// caller schedules an event at `at`.
    pub(crate) fn push(&mut self, at: SimTime, id: usize) -> bool {
        debug_assert!(self.items.back().is_none_or(|last| last.0 <= at), "a FIFO's departures never go back in time");
        self.items.push_back((at, id));
        self.items.len() == 1
    }

    /// Takes the first departure (its event fired); returns it and the time of the next one, which
    /// needs an event.
    pub(crate) fn pop(&mut self) -> (usize, Option<SimTime>) {
        let (_, id) = self.items.pop_front().expect("an event per departure");
        (id, self.items.front().map(|next| next.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_departure_asks_for_an_event() {
        let mut d = Departures::default();
        assert!(d.push(SimTime::from_ps(5), 1));
        assert!(!d.push(SimTime::from_ps(5), 2));
        assert!(!d.push(SimTime::from_ps(9), 3));
        assert_eq!(d.pop(), (1, Some(SimTime::from_ps(5))));
        assert_eq!(d.pop(), (2, Some(SimTime::from_ps(9))));
        assert_eq!(d.pop(), (3, None));
        assert!(d.push(SimTime::from_ps(12), 4));
    }
}
