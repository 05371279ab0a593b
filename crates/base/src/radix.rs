//! A monotone priority queue for events far ahead of the clock.

use std::collections::VecDeque;

/// A priority queue of items ordered by (time [ps], insertion order), *monotone*, as a
/// discrete-event simulation is: nothing may be pushed earlier than the last popped time.
///
/// It is a radix heap: an event is kept in the bucket of the highest
/// bit in which its time differs from the last popped time. Events at exactly that time wait in
/// bucket 0, a FIFO (so in sequence order). A pop takes bucket 0 or, when it is empty, the first
/// non-empty bucket, whose earliest time becomes the new reference; its events move to lower
/// buckets, those at the new time into bucket 0 sorted by sequence. Each event moves only a few
/// times, sequentially in memory, so push and pop stay cheap whether 1e3 or 1e6 events are
/// pending.
pub(crate) struct RadixHeap<E> {
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

impl<E> RadixHeap<E> {
    /// An empty queue at time zero.
    pub(crate) fn new() -> Self {
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

    /// Adds `event` at `time`, not earlier than the last popped time.
    pub(crate) fn push(&mut self, time: u64, event: E) {
        debug_assert!(time >= self.last, "event pushed before the last popped time");
        let seq = self.next_seq;
        self.next_seq += 1;
        self.len += 1;
        self.place(time, seq, event);
    }

    /// Removes and returns the earliest event (the first pushed among equal times).
    pub(crate) fn pop(&mut self) -> Option<(u64, E)> {
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
                return Some((time, event));
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
        Some((self.last, event))
    }

    /// The time of the earliest pending event.
    pub(crate) fn peek_time(&self) -> Option<u64> {
        if !self.now.is_empty() {
            return Some(self.last);
        }
        if self.occupied == 0 {
            return None;
        }
        Some(self.mins[self.occupied.trailing_zeros() as usize + 1])
    }
}
