//! A first-in first-out resource: one item served at a time, in arrival order.
//!
//! Callers present items in non-decreasing arrival time (the event kernel guarantees it when
//! each arrival is an event), so the queue need not be stored: the time the resource becomes free
//! is enough.

use base::SimTime;

/// A FIFO server: tracks when it becomes free and how long it has been busy.
#[derive(Debug, Clone, Default)]
pub struct Fifo {
    free_at: SimTime,
    busy: SimTime,
    served: u64,
}

impl Fifo {
    /// An idle resource.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves an item arriving at `now` that needs `service`; returns (start, end).
    pub fn serve(&mut self, now: SimTime, service: SimTime) -> (SimTime, SimTime) {
        let start = now.max(self.free_at);
        self.free_at = start + service;
        self.busy += service;
        self.served += 1;
        (start, self.free_at)
    }

    /// When the last accepted item finishes.
    pub fn free_at(&self) -> SimTime {
        self.free_at
    }

    /// Total service time given so far.
    pub fn busy(&self) -> SimTime {
        self.busy
    }

    /// Items served so far.
    pub fn served(&self) -> u64 {
        self.served
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_wait_behind_earlier_ones() {
        let mut f = Fifo::new();
        assert_eq!(f.serve(SimTime::from_ns(10), SimTime::from_ns(5)), (SimTime::from_ns(10), SimTime::from_ns(15)));
        // Arrives while the first is served: starts when it ends.
        assert_eq!(f.serve(SimTime::from_ns(12), SimTime::from_ns(5)), (SimTime::from_ns(15), SimTime::from_ns(20)));
        // Arrives after an idle gap: starts at once.
        assert_eq!(f.serve(SimTime::from_ns(30), SimTime::from_ns(1)), (SimTime::from_ns(30), SimTime::from_ns(31)));
        assert_eq!(f.busy(), SimTime::from_ns(11));
        assert_eq!(f.served(), 3);
    }
}
