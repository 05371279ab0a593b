use crate::SimTime;
use std::collections::VecDeque;

/// A priority queue of events ordered by (time, insertion sequence).
///
/// The sequence number makes the order total and deterministic: two events at the same time are
/// delivered in the order they were pushed, whatever the internal layout.
///
/// The queue is *monotone*, as a discrete-event simulation is: nothing may be pushed earlier than
/// the last popped time. That allows a radix heap: an event is kept in the bucket of the highest
/// bit in which its time differs from the last popped time. Events at exactly that time wait in
/// bucket 0, a FIFO (so in sequence order). A pop takes bucket 0 or, when it is empty, the first
/// non-empty bucket, whose earliest time becomes the new reference; its events move to lower
/// buckets, those at the new time into bucket 0 sorted by sequence. Each event moves only a few
/// times, sequentially in memory, so push and pop stay cheap whether 1e3 or 1e6 events are
/// pending.
pub struct EventQueue<E> {
    /// Events at exactly `last`, in sequence order.
    now: VecDeque<(u64, E)>,
    /// Bucket `b` (1..=64) holds events whose time differs from `last` first in bit `b - 1`.
    buckets: Vec<Vec<(u64, u64, E)>>,
    /// Bit `b - 1` is set when bucket `b` holds events.
    occupied: u64,
    /// The last popped time [ps].
    last: u64,
    len: usize,
    next_seq: u64,
    /// The earliest time in each bucket (`u64::MAX` when empty), so that neither a peek nor a
    /// pop scans a bucket for it.
    mins: [u64; 65],
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue at time zero.
    pub fn new() -> Self {
        Self {
            now: VecDeque::new(),
            buckets: (0..65).map(|_| Vec::new()).collect(),
            occupied: 0,
            last: 0,
            len: 0,
            next_seq: 0,
            mins: [u64::MAX; 65],
        }
    }

    /// An empty queue; the hint is accepted for API symmetry, buckets grow as needed.
    pub fn with_capacity(_capacity: usize) -> Self {
        Self::new()
    }

    fn bucket(&self, time: u64) -> usize {
        (64 - (time ^ self.last).leading_zeros()) as usize
    }

    fn place(&mut self, time: u64, seq: u64, event: E) {
        match self.bucket(time) {
            0 => self.now.push_back((seq, event)),
            b => {
                self.buckets[b].push((time, seq, event));
                self.occupied |= 1 << (b - 1);
                self.mins[b] = self.mins[b].min(time);
            }
        }
    }

    /// Adds `event` at time `at`.
    ///
    /// # Panics
    /// If `at` is earlier than the time of the last popped event.
    pub fn push(&mut self, at: SimTime, event: E) {
        let time = at.as_ps();
        assert!(time >= self.last, "event pushed before the last popped time");
        let seq = self.next_seq;
        self.next_seq += 1;
        self.len += 1;
        self.place(time, seq, event);
    }

    /// Removes and returns the earliest event (the first pushed among equal times).
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        if self.len == 0 {
            return None;
        }
        if self.now.is_empty() {
            let i = self.occupied.trailing_zeros() as usize + 1;
            self.occupied &= !(1 << (i - 1));
            let lowest = std::mem::replace(&mut self.mins[i], u64::MAX);
            if self.buckets[i].len() == 1 {
                // A lone event in the lowest bucket is the earliest: no redistribution. Higher
                // buckets stay valid, as the new reference shares their prefix.
                let (time, _, event) = self.buckets[i].pop().expect("one event");
                self.last = time;
                self.len -= 1;
                return Some((SimTime::from_ps(time), event));
            }
            let mut moving = std::mem::take(&mut self.buckets[i]);
            self.last = lowest;
            let first_now = self.now.len();
            for (time, seq, event) in moving.drain(..) {
                self.place(time, seq, event);
            }
            // Events that reach bucket 0 together came from one bucket in no particular order.
            if self.now.len() - first_now > 1 {
                self.now.make_contiguous()[first_now..].sort_by_key(|e| e.0);
            }
            self.buckets[i] = moving; // keep the allocation
        }
        let (_, event) = self.now.pop_front().expect("the earliest events are in bucket 0");
        self.len -= 1;
        Some((SimTime::from_ps(self.last), event))
    }

    /// The time of the earliest pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        if !self.now.is_empty() {
            return Some(SimTime::from_ps(self.last));
        }
        if self.occupied == 0 {
            return None;
        }
        Some(SimTime::from_ps(self.mins[self.occupied.trailing_zeros() as usize + 1]))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No event is pending.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Interleaved pushes (never before the last pop) and pops agree with a sorted list:
        /// pushes at nearly the same time, a few ns ahead, some us ahead and far beyond.
        #[test]
        fn interleaved_operations_match_a_sorted_model(ops in proptest::collection::vec(
            (0u64..5, prop_oneof![0u64..40, 0u64..5_000, 0u64..8_000_000, 0u64..1 << 40]), 1..300)) {
            let mut q = EventQueue::new();
            let mut model: Vec<(u64, u64)> = Vec::new();
            let (mut now, mut seq) = (0u64, 0u64);
            for (kind, delta) in ops {
                if kind == 0 && !model.is_empty() {
                    model.sort();
                    let (t, s) = model.remove(0);
                    prop_assert_eq!(q.pop(), Some((SimTime::from_ps(t), s)));
                    now = t;
                } else {
                    q.push(SimTime::from_ps(now + delta), seq);
                    model.push((now + delta, seq));
                    seq += 1;
                }
                prop_assert_eq!(q.len(), model.len());
                model.sort();
                prop_assert_eq!(q.peek_time(), model.first().map(|m| SimTime::from_ps(m.0)));
            }
        }

        /// Popping yields events sorted by time, and by push order among equal times.
        #[test]
        fn pops_in_time_then_sequence_order(times in proptest::collection::vec(0u64..20, 0..200)) {
            let mut q = EventQueue::new();
            for (i, t) in times.iter().enumerate() {
                q.push(SimTime::from_ps(*t), i);
            }
            let mut expected: Vec<(u64, usize)> = times.iter().copied().zip(0..).collect();
            expected.sort();
            let mut got = vec![];
            while let Some((t, i)) = q.pop() {
                got.push((t.as_ps(), i));
            }
            prop_assert_eq!(got, expected);
        }
    }
}
